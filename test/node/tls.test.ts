/**
 * TLS failures name their cause and fix, in the publish CLI and in the client: the bundled Worker behind local HTTPS
 * servers with certificates made for the run (self-signed, from a private authority, for another name, expired).
 * Without trust the CLI says "self-signed certificate: pass --ca FILE or set NODE_EXTRA_CA_CERTS" (not `fetch
 * failed`) and does not retry; with --ca FILE (or NODE_EXTRA_CA_CERTS) it publishes. The client says the same with its
 * own fix, and `trustingFetch({ ca })` from `@licensing/client/node` reaches the service.
 */
import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LicensingClient, NetworkError } from "../../client/src/index.ts";
import { grpcWeb } from "../../client/src/grpc-web.ts";
import { trustingFetch } from "../../client/src/node.ts";
import LicensingPublisher from "../../tools/publish/electron-builder.ts";
import { type Certificates, type LocalServer, forward, httpServer, httpsServer, makeCertificates } from "./tls-kit.ts";
// @ts-expect-error: a plain JavaScript module shared with the benchmark
import { root, startLocalWorker } from "../../scripts/local-worker.mjs";

const KEY = "api_TlsAdminKey000000000000000000000";
const run = promisify(execFile);
let worker: { url: URL; dispose(): Promise<void> };
let certs: Certificates;
let dir: string;
/** HTTPS in front of the Worker, one per certificate. */
const servers: Record<"selfSigned" | "issued" | "chain" | "otherName" | "expired", LocalServer> = {} as never;
/** A port nothing listens on. */
let closedPort: number;

/** Runs the CLI against `url` with the test folder; exit code and output. */
async function cli(
  url: string,
  extra: string[] = [],
  env: Record<string, string> = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  const args = ["tools/publish/main.ts", "--url", url, "--product", "studio", "--version", "1.0.0", "--dir", dir];
  try {
    const { stdout, stderr } = await run(process.execPath, [...args, ...extra], {
      cwd: root,
      env: {
        ...process.env,
        LICENSING_API_KEY: KEY,
        LICENSING_PUBLISH_RETRY_MS: "10",
        NODE_EXTRA_CA_CERTS: "",
        ...env,
      },
    });
    return { code: 0, stdout, stderr };
  } catch (e) {
    const failure = e as { code: number; stdout: string; stderr: string };
    return { code: failure.code, stdout: failure.stdout, stderr: failure.stderr };
  }
}

beforeAll(async () => {
  certs = makeCertificates();
  worker = await startLocalWorker({
    bindings: {
      Application__JwtSecret: "tls-test-jwt-secret-0123456789abcdef0123",
      Application__EncryptionKey: "tls-test-encryption-key",
      Application__AdminUsername: "admin",
      Application__AdminPassword: "Tls-12345678",
      Application__AdminApiKey: KEY,
    },
  });
  const res = await fetch(new URL("/v1/products", worker.url), {
    method: "POST",
    headers: { "x-api-key": KEY, "content-type": "application/json" },
    body: JSON.stringify({ product: { code: "studio", name: "Studio", isApplication: true } }),
  });
  expect(res.ok).toBe(true);
  dir = mkdtempSync(join(tmpdir(), "tls-dist-"));
  writeFileSync(join(dir, "Studio Setup 1.0.0.exe"), randomBytes(20_000));
  const toWorker = (req: Parameters<typeof forward>[0], res: Parameters<typeof forward>[1]) =>
    forward(req, res, worker.url);
  servers.selfSigned = await httpsServer(certs.selfSigned, toWorker);
  servers.issued = await httpsServer(certs.issued, toWorker);
  // The leaf followed by its (self-signed) authority: the chain a server sends when it is set up with a full chain.
  servers.chain = await httpsServer(
    { key: certs.issued.key, cert: certs.issued.cert + certs.authority.cert },
    toWorker,
  );
  servers.otherName = await httpsServer(certs.otherName, toWorker);
  servers.expired = await httpsServer(certs.expired, toWorker);
  const closed = await httpServer(() => undefined);
  closedPort = closed.port;
  await closed.close();
}, 180_000);

afterAll(async () => {
  for (const server of Object.values(servers)) await server?.close();
  await worker?.dispose();
  certs?.dispose();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe("licensing-publish over TLS", () => {
  it("names a self-signed certificate and its fix instead of `fetch failed`, and does not retry it", async () => {
    const out = await cli(servers.selfSigned.url);
    expect(out.code, out.stderr).toBe(1);
    expect(out.stderr).toContain(
      `could not reach ${servers.selfSigned.url}: self-signed certificate: pass --ca FILE or set NODE_EXTRA_CA_CERTS`,
    );
    // Retries are logged on stdout (stderr with --json).
    expect(out.stdout + out.stderr).not.toMatch(/trying again/);
    expect(out.stderr).not.toMatch(/\n\s+at /);
    // The handshake failed: no request reached the service.
    expect(servers.selfSigned.seen).toEqual([]);
  });

  it("publishes through the self-signed certificate with --ca FILE, and with NODE_EXTRA_CA_CERTS", async () => {
    const out = await cli(servers.selfSigned.url, ["--ca", certs.selfSigned.certFile]);
    expect(out.code, out.stderr).toBe(0);
    expect(out.stdout).toContain("release 1 created");
    expect(out.stdout).toContain("done: 1 uploaded, 0 replaced, 0 unchanged");
    const again = await cli(servers.selfSigned.url, [], { NODE_EXTRA_CA_CERTS: certs.selfSigned.certFile });
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toContain("done: 0 uploaded, 0 replaced, 1 unchanged");
  });

  it("names a private authority, a chain ending in one, a wrong host name and a refused connection", async () => {
    const unknown = await cli(servers.issued.url);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain(
      "certificate signed by an authority this process does not trust (or the server leaves out its intermediate certificates): pass --ca FILE or set NODE_EXTRA_CA_CERTS",
    );
    const chain = await cli(servers.chain.url);
    expect(chain.stderr).toContain(
      "self-signed certificate in the chain (a private certificate authority): pass --ca FILE or set NODE_EXTRA_CA_CERTS",
    );
    // The authority's certificate makes both trusted: the service answers (all is uploaded already).
    for (const server of [servers.issued, servers.chain]) {
      const trusted = await cli(server.url, ["--ca", certs.authority.certFile]);
      expect(trusted.code, trusted.stderr).toBe(0);
      expect(trusted.stdout).toContain("1 unchanged");
    }
    // Trusted, but issued for other.test: the name check still holds.
    const wrongName = await cli(servers.otherName.url, ["--ca", certs.authority.certFile]);
    expect(wrongName.code).toBe(1);
    expect(wrongName.stderr).toMatch(
      /the certificate was issued for another host name \(IP: 127\.0\.0\.1 is not in the cert's list: \): use the host name the certificate names in the URL/,
    );
    // Nothing listening: retried (the service may be restarting), then named.
    const refused = await cli(`https://127.0.0.1:${closedPort}`);
    expect(refused.code).toBe(1);
    expect(refused.stdout).toMatch(/connection refused.*; trying again in/);
    expect(refused.stderr).toContain(
      "connection refused: nothing listens at that address: check the URL's host and port, and that the service runs there",
    );
  });

  it("the electron-builder publisher: names the certificate, and publishes with publish.ca", async () => {
    const saved = process.env["LICENSING_API_KEY"];
    process.env["LICENSING_API_KEY"] = KEY;
    try {
      const config = { provider: "licensing", url: servers.selfSigned.url, product: "studio", version: "1.0.0" };
      const file = join(dir, "Studio Setup 1.0.0.exe");
      const untrusted = new LicensingPublisher({}, config);
      await expect(untrusted.upload({ file })).rejects.toThrow(
        "self-signed certificate: set publish.ca to the certificate file (PEM) or set NODE_EXTRA_CA_CERTS",
      );
      const trusted = new LicensingPublisher({}, { ...config, ca: certs.selfSigned.certFile });
      expect(await trusted.upload({ file })).toMatchObject({ unchanged: ["Studio Setup 1.0.0.exe"] });
      expect(() => new LicensingPublisher({}, { ...config, url: "http://0.0.0.0:1" })).toThrow(
        "refusing to send the API key over plain http:// to 0.0.0.0:1: use https://, or set publish.insecure: true",
      );
    } finally {
      if (saved === undefined) delete process.env["LICENSING_API_KEY"];
      else process.env["LICENSING_API_KEY"] = saved;
    }
  });

  it("refuses a --ca that cannot be read or holds no certificate, as a usage error", async () => {
    const missing = await cli(servers.selfSigned.url, ["--ca", join(certs.dir, "nope.pem")]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/--ca .*nope\.pem: ENOENT/);
    const key = await cli(servers.selfSigned.url, ["--ca", certs.selfSigned.keyFile]);
    expect(key.code).toBe(2);
    expect(key.stderr).toContain("holds no PEM certificate");
  });
});

describe("@licensing/client over TLS", () => {
  it("raises a NetworkError naming the self-signed certificate and the fix, over REST and gRPC-Web", async () => {
    for (const transport of ["http", grpcWeb] as const) {
      const client = new LicensingClient({ baseUrl: servers.selfSigned.url, transport, apiKey: KEY });
      const error = await client.validate({ userKey: "ANY" }).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(NetworkError);
      expect((error as NetworkError).code).toBe("DEPTH_ZERO_SELF_SIGNED_CERT");
      expect((error as NetworkError).message).toBe(
        `Could not reach ${servers.selfSigned.url}${transport === "http" ? "/v1/license/validate" : ""}: self-signed certificate: pass fetch: trustingFetch({ ca }) from @licensing/client/node or set NODE_EXTRA_CA_CERTS (Electron's net.fetch trusts the operating system's store)`,
      );
    }
  });

  it("reaches the service through trustingFetch({ ca }), still checking expiry and names", async () => {
    const trusted = trustingFetch({ ca: certs.selfSigned.cert });
    try {
      const client = new LicensingClient({ baseUrl: servers.selfSigned.url, fetch: trusted });
      const { keys } = await client.getSigningKeys();
      expect(keys.length).toBeGreaterThan(0);
      const grpc = new LicensingClient({ baseUrl: servers.selfSigned.url, transport: grpcWeb, fetch: trusted });
      // The service answers: a licensing refusal, not a network failure.
      await expect(grpc.validate({ userKey: "NOT-A-KEY" })).rejects.toMatchObject({ grpcCode: 16 });
    } finally {
      await trusted.close();
    }

    const expired = trustingFetch({ ca: certs.expired.cert });
    const authority = trustingFetch({ ca: [certs.authority.cert] });
    try {
      const old = new LicensingClient({ baseUrl: servers.expired.url, fetch: expired });
      await expect(old.getSigningKeys()).rejects.toMatchObject({
        name: "NetworkError",
        code: "CERT_HAS_EXPIRED",
        message: expect.stringContaining(
          "the service's certificate has expired: renew the service's certificate (or correct this machine's clock)",
        ),
      });
      const wrongName = new LicensingClient({ baseUrl: servers.otherName.url, fetch: authority });
      await expect(wrongName.getSigningKeys()).rejects.toMatchObject({ code: "ERR_TLS_CERT_ALTNAME_INVALID" });
      const issued = new LicensingClient({ baseUrl: servers.issued.url, fetch: authority });
      expect((await issued.getSigningKeys()).keys.length).toBeGreaterThan(0);
    } finally {
      await expired.close();
      await authority.close();
    }
    expect(() => trustingFetch({ ca: certs.selfSigned.key })).toThrow(/PEM certificates/);
  });
});

describe("@licensing/client with Electron's net.fetch", () => {
  it("names the causes Electron reports as net::ERR_… messages (no Electron here: a fetch that fails as net.fetch does)", async () => {
    const cases: [string, string, string][] = [
      [
        "net::ERR_CERT_AUTHORITY_INVALID",
        "ERR_CERT_AUTHORITY_INVALID",
        "certificate signed by an authority this process does not trust: pass fetch: trustingFetch({ ca })",
      ],
      [
        "net::ERR_CERT_DATE_INVALID",
        "ERR_CERT_DATE_INVALID",
        "the service's certificate has expired or is not valid yet: renew",
      ],
      ["net::ERR_NAME_NOT_RESOLVED", "ERR_NAME_NOT_RESOLVED", "host name not found: check the URL's host and port"],
    ];
    for (const [thrown, code, words] of cases) {
      const netFetch = () => Promise.reject(new Error(thrown));
      const client = new LicensingClient({ baseUrl: "https://licensing.example.com", fetch: netFetch });
      await expect(client.getSigningKeys()).rejects.toMatchObject({
        name: "NetworkError",
        code,
        message: expect.stringContaining(`https://licensing.example.com/v1/extensions/keys: ${words}`),
      });
    }
  });
});

describe("one explanation table", () => {
  it("is the same file in the client and the publish CLI (two packages, installed apart)", () => {
    expect(readFileSync(join(root, "tools/publish/network.ts"), "utf8")).toBe(
      readFileSync(join(root, "client/src/network.ts"), "utf8"),
    );
  });
});
