/**
 * What the Node-side TLS and redirect tests share: certificates made with the openssl command for the test run, and
 * local servers (HTTP or HTTPS, on 127.0.0.1) that pass requests on to the bundled Worker. Nothing listens beyond
 * this machine's loopback.
 */
import { execFileSync } from "node:child_process";
import http from "node:http";
import https from "node:https";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** A key and its certificate (PEM), and where they are on disk. */
export interface KeyPair {
  key: string;
  cert: string;
  keyFile: string;
  certFile: string;
}

/** The certificates of a run: a self-signed one, a private authority and two certificates it issued, an expired one. */
export interface Certificates {
  dir: string;
  /** Self-signed, for 127.0.0.1 and localhost. */
  selfSigned: KeyPair;
  /** A private certificate authority (self-signed, CA:true). */
  authority: KeyPair;
  /** Issued by `authority` for 127.0.0.1. */
  issued: KeyPair;
  /** Issued by `authority` for other.test only: the wrong name for 127.0.0.1. */
  otherName: KeyPair;
  /** Self-signed for 127.0.0.1, valid during 1 January 2020 only. */
  expired: KeyPair;
  dispose(): void;
}

function openssl(args: string[], cwd: string): void {
  execFileSync("openssl", args, { cwd, stdio: ["ignore", "ignore", "pipe"] });
}

function pair(dir: string, name: string): KeyPair {
  const keyFile = join(dir, `${name}.key`);
  const certFile = join(dir, `${name}.pem`);
  return { key: readFileSync(keyFile, "utf8"), cert: readFileSync(certFile, "utf8"), keyFile, certFile };
}

const EC = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"];

/** Makes the run's certificates with openssl (the ca-certificates package depends on it, so it is on every machine). */
export function makeCertificates(): Certificates {
  const dir = mkdtempSync(join(tmpdir(), "tls-kit-"));
  openssl(
    ["req", "-x509", ...EC, "-keyout", "self.key", "-out", "self.pem", "-days", "2", "-subj", "/CN=127.0.0.1"].concat([
      "-addext",
      "subjectAltName=IP:127.0.0.1,DNS:localhost",
    ]),
    dir,
  );
  openssl(
    [
      "req",
      "-x509",
      ...EC,
      "-keyout",
      "authority.key",
      "-out",
      "authority.pem",
      "-days",
      "2",
      "-subj",
      "/CN=Test CA",
    ].concat(["-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign"]),
    dir,
  );
  for (const [name, san] of [
    ["issued", "IP:127.0.0.1"],
    ["other", "DNS:other.test"],
  ] as const) {
    openssl(["req", "-new", ...EC, "-keyout", `${name}.key`, "-out", `${name}.csr`, "-subj", `/CN=${name}`], dir);
    writeFileSync(join(dir, `${name}.ext`), `subjectAltName=${san}\nbasicConstraints=CA:FALSE\n`);
    openssl(
      [
        "x509",
        "-req",
        "-in",
        `${name}.csr`,
        "-CA",
        "authority.pem",
        "-CAkey",
        "authority.key",
        "-CAcreateserial",
      ].concat(["-out", `${name}.pem`, "-days", "2", "-extfile", `${name}.ext`]),
      dir,
    );
  }
  // `openssl x509` cannot date a certificate in the past; `openssl ca` can, with a minimal configuration.
  writeFileSync(join(dir, "index.txt"), "");
  writeFileSync(join(dir, "serial"), "01\n");
  writeFileSync(
    join(dir, "ca.cnf"),
    "[ca]\ndefault_ca=d\n[d]\ndatabase=index.txt\nnew_certs_dir=.\nserial=serial\ndefault_md=sha256\npolicy=p\ncopy_extensions=copy\nunique_subject=no\n[p]\ncommonName=supplied\n",
  );
  openssl(
    ["req", "-new", ...EC, "-keyout", "expired.key", "-out", "expired.csr", "-subj", "/CN=127.0.0.1"].concat([
      "-addext",
      "subjectAltName=IP:127.0.0.1",
    ]),
    dir,
  );
  openssl(
    ["ca", "-batch", "-config", "ca.cnf", "-selfsign", "-keyfile", "expired.key", "-in", "expired.csr"].concat([
      "-out",
      "expired.pem",
      "-startdate",
      "20200101000000Z",
      "-enddate",
      "20200102000000Z",
    ]),
    dir,
  );
  // `openssl ca` writes a text dump before the PEM block: keep the PEM only.
  const expiredPem = readFileSync(join(dir, "expired.pem"), "utf8");
  writeFileSync(join(dir, "expired.pem"), expiredPem.slice(expiredPem.indexOf("-----BEGIN CERTIFICATE-----")));
  return {
    dir,
    selfSigned: pair(dir, "self"),
    authority: pair(dir, "authority"),
    issued: pair(dir, "issued"),
    otherName: pair(dir, "other"),
    expired: pair(dir, "expired"),
    dispose: () => rmSync(dir, { recursive: true, force: true }),
  };
}

/** A request as a recording server saw it. */
export interface Seen {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
}

/** Passes a request on to `target` (the bundled Worker) and its answer back. */
export async function forward(
  req: http.IncomingMessage,
  res: http.ServerResponse,
  target: URL,
  path = req.url ?? "/",
): Promise<void> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const headers = Object.fromEntries(
    Object.entries(req.headers).filter(([k]) => k !== "host" && k !== "content-length" && k !== "connection"),
  ) as Record<string, string>;
  const answer = await fetch(new URL(path, target), {
    method: req.method ?? "GET",
    headers,
    redirect: "manual",
    ...(chunks.length ? { body: Buffer.concat(chunks) } : {}),
  });
  const back = Object.fromEntries(
    [...answer.headers].filter(
      ([k]) => !["content-encoding", "content-length", "transfer-encoding", "connection"].includes(k),
    ),
  );
  res.writeHead(answer.status, back).end(Buffer.from(await answer.arrayBuffer()));
}

/** A local server and its address; `seen` lists the requests it received. */
export interface LocalServer {
  url: string;
  port: number;
  seen: Seen[];
  close(): Promise<void>;
}

type Handler = (req: http.IncomingMessage, res: http.ServerResponse) => void | Promise<void>;

async function listen(server: http.Server | https.Server, scheme: "http" | "https"): Promise<LocalServer> {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `${scheme}://127.0.0.1:${port}`,
    port,
    seen: [],
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

function recording(handler: Handler): { handle: Handler; bind(server: LocalServer): void } {
  let target: LocalServer | undefined;
  return {
    handle: async (req, res) => {
      target?.seen.push({ method: req.method ?? "", url: req.url ?? "", headers: req.headers });
      try {
        await handler(req, res);
      } catch (e) {
        if (!res.headersSent) res.writeHead(502).end(String(e));
      }
    },
    bind: (server) => {
      target = server;
    },
  };
}

/** A plain HTTP server on 127.0.0.1 that records each request and answers with `handler`. */
export async function httpServer(handler: Handler): Promise<LocalServer> {
  const r = recording(handler);
  const server = await listen(http.createServer(r.handle), "http");
  r.bind(server);
  return server;
}

/** An HTTPS server on 127.0.0.1 with the given key and certificate chain, recording and answering with `handler`. */
export async function httpsServer(tls: { key: string; cert: string }, handler: Handler): Promise<LocalServer> {
  const r = recording(handler);
  const server = await listen(https.createServer({ key: tls.key, cert: tls.cert }, r.handle), "https");
  r.bind(server);
  return server;
}
