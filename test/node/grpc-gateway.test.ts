/**
 * Native gRPC (HTTP/2, real trailers) through tools/grpc-gateway to the bundled Worker: a connect-node gRPC client
 * authenticates, validates a license and receives licensing errors as gRPC statuses; raw node:http2 clients probe
 * what the gateway refuses (foreign paths, oversized messages, too many calls, slow uploads), where it believes a
 * forwarded address, its TLS, its command line, and that it still works when the Worker has gRPC-Web off.
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import http from "node:http";
import http2 from "node:http2";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { toBinary, create } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Authentication } from "../../src/gen/licensing/v1/authentication_pb";
import {
  LicenseServer,
  LicenseStatus,
  ValidateLicenseRequestSchema,
} from "../../src/gen/licensing/v1/license_server_pb";
import {
  GATEWAY_CLIENT_HEADER,
  MAX_MESSAGE_BYTES,
  type GatewayOptions,
  signClientAddress,
  splitGrpcWebBody,
  startGateway,
} from "../../tools/grpc-gateway/gateway.ts";
// @ts-expect-error: a plain JavaScript module shared with the benchmark
import { bundleWorker, root, startLocalWorker } from "../../scripts/local-worker.mjs";
import type { JsonBody } from "../json-body.ts";

type Server = Awaited<ReturnType<typeof startGateway>>;
type Worker = { url: URL; dispose(): Promise<void> };

const KEY = "api_GatewayAdminKey00000000000000000";
const GATEWAY_SECRET = "gateway-test-shared-secret-0123456789abcdef";
const BLOCKED = "203.0.113.66";
const LOGIN_LIMIT = 3;
const VALIDATE = "/licensing.v1.LicenseServer/ValidateLicense";
const bindings = {
  Application__JwtSecret: "gateway-test-jwt-secret-0123456789abcdef",
  Application__EncryptionKey: "gateway-test-encryption-key",
  Application__AdminUsername: "admin",
  Application__AdminPassword: "Gateway-12345",
  Application__AdminApiKey: KEY,
  // A client claiming this address through headers would be refused: the gateway must not pass the claim on.
  IpFiltering__Blacklist: BLOCKED,
  IpFiltering__GatewaySecret: GATEWAY_SECRET,
};
let bundle: string;
let worker: Worker;
/** gRPC-Web off for browsers, few logins per address: the gateway must still work, and still be limited. */
let closedWorker: Worker;
let gateway: Server;
let baseUrl: string;
/** A gateway without the secret: it passes no address of its own, so a client's claim would be all the Worker sees. */
let unsigned: Server;
let unsignedUrl: string;
const servers: (Server | http.Server)[] = [];
/** Gateways started from the command line, stopped after the file even when a test failed. */
const children = new Set<ChildProcess>();

/** Closes a server and every connection still open to it (a client's idle keep-alive would hold it open). */
async function shut(server: Server | http.Server): Promise<void> {
  const closed = new Promise((resolve) => server.close(() => resolve(undefined)));
  if (server instanceof http.Server) server.closeAllConnections();
  else for (const session of sessionsOf.get(server) ?? []) session.destroy();
  await closed;
}
const sessionsOf = new WeakMap<Server, Set<http2.ServerHttp2Session>>();
function tracked(server: Server): Server {
  const sessions = new Set<http2.ServerHttp2Session>();
  sessionsOf.set(server, sessions);
  server.on("session", (session: http2.ServerHttp2Session) => {
    sessions.add(session);
    session.once("close", () => sessions.delete(session));
  });
  servers.push(server);
  return server;
}
const temp = mkdtempSync(join(tmpdir(), "grpc-gateway-test-"));

function urlOf(server: { address(): string | AddressInfo | null }, scheme = "http"): string {
  return `${scheme}://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** A gateway for one test, closed after the file. */
async function gatewayTo(target: Worker, options: Partial<GatewayOptions> = {}): Promise<string> {
  const server = tracked(
    await startGateway({ upstream: target.url.origin, port: 0, secret: GATEWAY_SECRET, ...options }),
  );
  return urlOf(server, options.tls ? "https" : "http");
}

beforeAll(async () => {
  bundle = bundleWorker();
  [worker, closedWorker] = await Promise.all([
    startLocalWorker({ script: bundle, bindings }),
    startLocalWorker({
      script: bundle,
      bindings: {
        ...bindings,
        Application__EnableGrpcWeb: "false",
        IpFiltering__AuthenticationProtection__MaxLoginRequestsPerTimeFrame: String(LOGIN_LIMIT),
      },
    }),
  ]);
  gateway = tracked(await startGateway({ upstream: worker.url.origin, port: 0, secret: GATEWAY_SECRET }));
  baseUrl = urlOf(gateway);
  unsigned = tracked(await startGateway({ upstream: worker.url.origin, port: 0 }));
  unsignedUrl = urlOf(unsigned);
}, 180_000);
afterAll(async () => {
  await Promise.all(servers.map(shut));
  for (const child of children) child.kill();
  await worker?.dispose();
  await closedWorker?.dispose();
  rmSync(dirname(bundle), { recursive: true, force: true });
  rmSync(temp, { recursive: true, force: true });
});

async function rest(method: string, path: string, body?: unknown): Promise<JsonBody> {
  const res = await fetch(new URL(path, worker.url), {
    method,
    headers: { "x-api-key": KEY, "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return (await res.json()) as JsonBody;
}

/** One gRPC frame around `message`. */
function frame(message: Uint8Array, declaredLength = message.byteLength): Buffer {
  const header = Buffer.alloc(5);
  header.writeUInt32BE(declaredLength, 1);
  return Buffer.concat([header, message]);
}

const EMPTY_VALIDATE = frame(toBinary(ValidateLicenseRequestSchema, create(ValidateLicenseRequestSchema, {})));

interface Answer {
  httpStatus?: number;
  grpcStatus?: string;
  grpcMessage?: string;
  /** The RST_STREAM code the stream closed with (0: none, or NO_ERROR). */
  rstCode?: number;
}

/** A raw gRPC call on `session`: the stream and its answer (resolved when the stream closes). */
function call(
  session: http2.ClientHttp2Session,
  path: string,
  headers: http2.OutgoingHttpHeaders = {},
): { stream: http2.ClientHttp2Stream; answer: Promise<Answer> } {
  const stream = session.request({
    ":method": "POST",
    ":path": path,
    "content-type": "application/grpc",
    te: "trailers",
    ...headers,
  });
  const answer: Answer = {};
  stream.on("response", (h) => {
    answer.httpStatus = Number(h[":status"]);
    if (h["grpc-status"] !== undefined) answer.grpcStatus = String(h["grpc-status"]);
    if (h["grpc-message"] !== undefined) answer.grpcMessage = decodeURIComponent(String(h["grpc-message"]));
  });
  stream.on("trailers", (t) => {
    if (t["grpc-status"] !== undefined) answer.grpcStatus = String(t["grpc-status"]);
    if (t["grpc-message"] !== undefined) answer.grpcMessage = decodeURIComponent(String(t["grpc-message"]));
  });
  stream.on("data", () => {});
  stream.on("error", () => {});
  const closed = new Promise<Answer>((resolve) =>
    stream.once("close", () => resolve({ ...answer, rstCode: stream.rstCode ?? 0 })),
  );
  return { stream, answer: closed };
}

/** A complete call (`body` sent whole) on a connection of its own. */
async function callOnce(
  url: string,
  path: string,
  body: Uint8Array,
  headers: http2.OutgoingHttpHeaders = {},
): Promise<Answer> {
  const session = http2.connect(url);
  try {
    const { stream, answer } = call(session, path, headers);
    stream.end(body);
    return await answer;
  } finally {
    session.close();
  }
}

function within<T>(ms: number, promise: Promise<T>, what: string): Promise<T> {
  return Promise.race([
    promise,
    new Promise<T>((_, reject) => setTimeout(() => reject(new Error(`${what}: no answer within ${ms} ms`)), ms)),
  ]);
}

describe("the native gRPC gateway", () => {
  it("carries calls, metadata and statuses between a gRPC client and the Worker", async () => {
    const transport = createGrpcTransport({ baseUrl });
    const auth = createClient(Authentication, transport);
    const signedIn = await auth.authenticate({ username: "admin", password: "Gateway-12345" });
    expect(signedIn.roles).toEqual(["Administrator"]);
    const refused = await auth.authenticate({ username: "admin", password: "nope" }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(ConnectError);
    expect((refused as ConnectError).code).toBe(Code.Unauthenticated);
    expect((refused as ConnectError).rawMessage).toBe("Invalid username or password.");

    const product = await rest("POST", "/v1/products", { product: { code: "gw", name: "Gateway" } });
    const created = await rest("POST", "/v1/licenses", {
      license: { productId: product["productId"], licensingMode: "Activation", maxClients: 1 },
    });
    const { licenses } = await rest(
      "GET",
      `/v1/licenses?filter=${encodeURIComponent(`id == ${created["id"]}`)}&select=userKey`,
    );
    const userKey = licenses[0].userKey as string;

    const server = createClient(LicenseServer, transport);
    const metadata = { headers: { authorization: `Bearer ${signedIn.token}` } };
    const activated = await server.activateLicense({ userKey, machineId: "PC-1" }, metadata);
    expect(activated.activeClientCount).toBe(1);
    const valid = await server.validateLicense({ userKey, machineId: "PC-1" }, { headers: { "x-api-key": KEY } });
    expect(valid.status).toBe(LicenseStatus.ACTIVATED);
    const exhausted = await server.activateLicense({ userKey, machineId: "PC-2" }, metadata).catch((e: unknown) => e);
    expect((exhausted as ConnectError).code).toBe(Code.AlreadyExists);
    expect((exhausted as ConnectError).rawMessage).toBe("The license has already been activated");
    expect((exhausted as ConnectError).metadata.get("licensing-reason")).toBe("alreadyActivated");
    const anonymous = await server.validateLicense({ userKey }).catch((e: unknown) => e);
    expect((anonymous as ConnectError).code).toBe(Code.Unauthenticated);
  });

  it("drops the address headers a client sends, so a client cannot choose the address it is limited by", async () => {
    const server = createClient(LicenseServer, createGrpcTransport({ baseUrl: unsignedUrl }));
    const claim = BLOCKED;
    const signed = signClientAddress("not-the-gateway-secret-0123456789abcdef", claim);
    for (const headers of [
      { "cf-connecting-ip": claim },
      { "x-forwarded-for": claim },
      { "x-real-ip": claim },
      { [GATEWAY_CLIENT_HEADER]: signed },
    ] as Record<string, string>[]) {
      // Unauthenticated (no credential), not PermissionDenied (the blacklist's 403): the claim never arrived.
      const answer = await server.validateLicense({ userKey: "X" }, { headers }).catch((e: unknown) => e);
      expect((answer as ConnectError).code, JSON.stringify(headers)).toBe(Code.Unauthenticated);
    }
    // The claim sent straight to the Worker is believed (no gateway in between, CF-Connecting-IP as Cloudflare sets it).
    const direct = await fetch(new URL("/v1/extensions/keys", worker.url), { headers: { "cf-connecting-ip": claim } });
    expect(direct.status).toBe(403);
  });
});

describe("what the gateway forwards", () => {
  it("sends only the service's own methods, to the configured origin: never where a client's path points", async () => {
    const hits: string[] = [];
    const catcher = http.createServer((req, res) => {
      hits.push(`${req.method} ${req.url}`);
      res.writeHead(200, { "content-type": "application/grpc-web+proto", "grpc-status": "0" }).end();
    });
    await new Promise<void>((resolve) => catcher.listen(0, "127.0.0.1", resolve));
    servers.push(catcher);
    const catcherPort = (catcher.address() as AddressInfo).port;
    for (const path of [
      `//127.0.0.1:${catcherPort}/x`,
      `//127.0.0.1:${catcherPort}${VALIDATE}`,
      `http://127.0.0.1:${catcherPort}/x`,
      "/licensing.v1.LicenseServer/Nothing",
      "/licensing.v1.Other/ValidateLicense",
      `${VALIDATE}/../../x`,
      `${VALIDATE}?x=1`,
      "/v1/products",
    ]) {
      const answer = await callOnce(baseUrl, path, EMPTY_VALIDATE);
      if (path.startsWith("http:")) {
        // Not even a path (RFC 9113 8.3.1): HTTP/2 itself resets the stream before the gateway sees it.
        expect(answer.rstCode, path).toBe(http2.constants.NGHTTP2_PROTOCOL_ERROR);
        continue;
      }
      expect(answer.grpcStatus, path).toBe(String(Code.Unimplemented));
      expect(answer.grpcMessage, path).toMatch(/not a method of the licensing service/);
    }
    expect(hits).toEqual([]);
    // A method of the service reaches the configured origin at that method's path, nothing else.
    const toCatcher = await gatewayTo({ url: new URL(`http://127.0.0.1:${catcherPort}`) } as Worker);
    expect((await callOnce(toCatcher, VALIDATE, EMPTY_VALIDATE)).grpcStatus).toBe("0");
    expect(hits).toEqual([`POST ${VALIDATE}`]);
    // The upstream is an origin: a path or credentials in it are refused at start.
    await expect(startGateway({ upstream: `http://127.0.0.1:${catcherPort}/base`, port: 0 })).rejects.toThrow(
      /must be an origin/,
    );
  });

  it("refuses a message over the Worker's own limit before reading it, and passes one at the limit", async () => {
    // Declared too large: refused on the headers, before a byte of the body is sent.
    const declaring = http2.connect(baseUrl);
    const declared = await within(
      5000,
      call(declaring, "/licensing.v1.ReportServer/SendReport", { "content-length": String(MAX_MESSAGE_BYTES + 6) })
        .answer,
      "a declared length over the limit",
    );
    declaring.close();
    expect(declared.grpcStatus).toBe(String(Code.ResourceExhausted));
    expect(declared.grpcMessage).toBe(`the request message is larger than ${MAX_MESSAGE_BYTES} bytes`);

    // Streamed without a length: refused once the limit is passed, long before the 64 MiB are all sent.
    const total = 64 * 1024 * 1024;
    const session = http2.connect(baseUrl);
    const { stream, answer } = call(session, "/licensing.v1.ReportServer/SendReport");
    let answered = false;
    void answer.then(() => {
      answered = true;
    });
    let written = 0;
    const chunk = Buffer.alloc(1024 * 1024);
    stream.write(frame(new Uint8Array(), total));
    while (!answered && written < total && !stream.destroyed) {
      if (!stream.write(chunk)) await Promise.race([once(stream, "drain"), answer]);
      written += chunk.byteLength;
    }
    const streamed = await answer;
    session.close();
    expect(streamed.grpcStatus).toBe(String(Code.ResourceExhausted));
    expect(streamed.grpcMessage).toBe(`the request message is larger than ${MAX_MESSAGE_BYTES} bytes`);
    expect(written).toBeLessThan(12 * 1024 * 1024);

    // The limit is the Worker's own: a message of exactly MAX_MESSAGE_BYTES passes the gateway (the Worker reads it
    // and finds it is no message), one byte more is refused by the gateway and, sent straight, by the Worker.
    const atLimit = frame(new Uint8Array(MAX_MESSAGE_BYTES).fill(0xff));
    const passed = await callOnce(baseUrl, VALIDATE, atLimit);
    expect(passed.grpcStatus).toBe(String(Code.InvalidArgument));
    const over = frame(new Uint8Array(MAX_MESSAGE_BYTES + 1).fill(0xff));
    const refused = await callOnce(baseUrl, VALIDATE, over);
    expect(refused.grpcMessage).toBe(`the request message is larger than ${MAX_MESSAGE_BYTES} bytes`);
    const direct = await fetch(new URL(VALIDATE, worker.url), {
      method: "POST",
      headers: { "content-type": "application/grpc-web+proto" },
      body: over,
    });
    expect(direct.headers.get("grpc-status")).toBe(String(Code.ResourceExhausted));
  });

  it("bounds the calls in progress, per connection and in the whole gateway, and the time a call may take", async () => {
    const url = await gatewayTo(worker, { maxCalls: 2, maxStreams: 3 });
    const session = http2.connect(url);
    await once(session, "remoteSettings");
    expect(session.remoteSettings.maxConcurrentStreams).toBe(3);
    // Two calls whose upload never ends hold the gateway's two places.
    const first = call(session, VALIDATE);
    const second = call(session, VALIDATE);
    first.stream.write(frame(new Uint8Array(), 10));
    second.stream.write(frame(new Uint8Array(), 10));
    await new Promise((resolve) => setTimeout(resolve, 200));
    const third = await within(5000, callOnce(url, VALIDATE, EMPTY_VALIDATE), "a third call");
    expect(third.grpcStatus).toBe(String(Code.ResourceExhausted));
    expect(third.grpcMessage).toMatch(/limit of 2 calls/);
    // A call that ends frees its place.
    first.stream.close(http2.constants.NGHTTP2_CANCEL);
    await first.answer;
    let after: Answer = {};
    for (let i = 0; i < 20; i++) {
      after = await within(5000, callOnce(url, VALIDATE, EMPTY_VALIDATE), "a call after one ended");
      if (after.grpcStatus !== String(Code.ResourceExhausted)) break;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(after.grpcStatus).toBe(String(Code.Unauthenticated));
    second.stream.close(http2.constants.NGHTTP2_CANCEL);
    session.close();

    // An upload that never ends is cut at the call timeout.
    const slowUrl = await gatewayTo(worker, { callTimeoutMs: 500 });
    const slowSession = http2.connect(slowUrl);
    const slow = call(slowSession, VALIDATE);
    slow.stream.write(frame(new Uint8Array(), 10));
    const cut = await within(5000, slow.answer, "a slow upload");
    slowSession.close();
    expect(cut.grpcStatus).toBe(String(Code.DeadlineExceeded));
  });
});

describe("gRPC-Web off (Application:EnableGrpcWeb=false)", () => {
  it("still serves native gRPC through the gateway, and refuses gRPC-Web calls the gateway did not sign", async () => {
    const auth = createClient(Authentication, createGrpcTransport({ baseUrl: await gatewayTo(closedWorker) }));
    const signedIn = await auth.authenticate({ username: "admin", password: "Gateway-12345" });
    expect(signedIn.roles).toEqual(["Administrator"]);
    const direct = (headers: Record<string, string>) =>
      fetch(new URL(VALIDATE, closedWorker.url), {
        method: "POST",
        headers: { "content-type": "application/grpc-web+proto", ...headers },
        body: EMPTY_VALIDATE,
      });
    expect((await direct({})).status).toBe(404);
    const forged = signClientAddress("not-the-gateway-secret-0123456789abcdef", "198.51.100.9");
    expect((await direct({ [GATEWAY_CLIENT_HEADER]: forged })).status).toBe(404);
    const signed = await direct({ [GATEWAY_CLIENT_HEADER]: signClientAddress(GATEWAY_SECRET, "198.51.100.9") });
    expect(signed.status).toBe(200);
    const { trailers } = splitGrpcWebBody(new Uint8Array(await signed.arrayBuffer()));
    expect(trailers["grpc-status"] ?? signed.headers.get("grpc-status")).toBe(String(Code.Unauthenticated));
    // A gateway without the secret is the gRPC-Web the Worker has switched off.
    const withoutSecret = await gatewayTo(closedWorker, { secret: undefined });
    expect((await callOnce(withoutSecret, VALIDATE, EMPTY_VALIDATE)).grpcStatus).toBe(String(Code.Unimplemented));
  });
});

describe("the client address the gateway passes on", () => {
  it("believes X-Forwarded-For only from a trusted proxy, and then its right-most untrusted address", async () => {
    const behindProxy = await gatewayTo(worker, { trustedProxies: ["127.0.0.1", "10.0.0.0/8"] });
    const codeFor = async (url: string, forwardedFor: string) =>
      (await callOnce(url, VALIDATE, EMPTY_VALIDATE, { "x-forwarded-for": forwardedFor })).grpcStatus;
    // The blacklisted address as the proxy saw it: refused (the Worker's 403).
    expect(await codeFor(behindProxy, BLOCKED)).toBe(String(Code.PermissionDenied));
    expect(await codeFor(behindProxy, `198.51.100.7, ${BLOCKED}, 10.1.2.3`)).toBe(String(Code.PermissionDenied));
    // A client's own entry left of the proxy's proves nothing: the proxy saw 198.51.100.7.
    expect(await codeFor(behindProxy, `${BLOCKED}, 198.51.100.7`)).toBe(String(Code.Unauthenticated));
    // From a peer that is not a trusted proxy the header is ignored.
    expect(await codeFor(baseUrl, BLOCKED)).toBe(String(Code.Unauthenticated));
    const notTrusted = await gatewayTo(worker, { trustedProxies: ["10.0.0.0/8"] });
    expect(await codeFor(notTrusted, BLOCKED)).toBe(String(Code.Unauthenticated));
    await expect(gatewayTo(worker, { trustedProxies: ["proxy.example.com"] })).rejects.toThrow(
      /neither an IP address nor a CIDR range/,
    );
  });

  it("never lets a loopback peer make its clients whitelisted: a same-host proxy's clients stay limited", async () => {
    // The Worker whitelists 127.0.0.1 (the default); the gateway's peer is 127.0.0.1 here, as behind a proxy on the
    // same host that the gateway was not told to trust. Its logins are counted all the same.
    const auth = createClient(Authentication, createGrpcTransport({ baseUrl: await gatewayTo(closedWorker) }));
    const codes: Code[] = [];
    for (let i = 0; i <= LOGIN_LIMIT + 1; i++) {
      const answer = await auth.authenticate({ username: "admin", password: "wrong" }).catch((e: unknown) => e);
      codes.push((answer as ConnectError).code);
    }
    expect(codes).toContain(Code.ResourceExhausted);
  });
});

describe("TLS and the command line", () => {
  const cert = join(temp, "cert.pem");
  const key = join(temp, "key.pem");
  beforeAll(() => {
    execFileSync(
      "openssl",
      [
        ...["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"],
        ...["-keyout", key, "-out", cert, "-days", "1", "-subj", "/CN=localhost"],
        ...["-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"],
      ],
      { stdio: "ignore" },
    );
  });

  it("serves TLS with a certificate and key, checked by the client", async () => {
    const url = await gatewayTo(worker, { tls: { cert: readFileSync(cert), key: readFileSync(key) } });
    expect(url.startsWith("https://")).toBe(true);
    const auth = createClient(
      Authentication,
      createGrpcTransport({ baseUrl: url, nodeOptions: { ca: readFileSync(cert) } }),
    );
    expect((await auth.authenticate({ username: "admin", password: "Gateway-12345" })).roles).toEqual([
      "Administrator",
    ]);
    // A client that does not trust the certificate is refused by its own check; a plain HTTP/2 client gets nothing.
    const untrusting = createClient(Authentication, createGrpcTransport({ baseUrl: url }));
    const refused = await untrusting.authenticate({ username: "admin", password: "x" }).catch((e: unknown) => e);
    expect(String((refused as ConnectError).message)).toMatch(/self[- ]signed|certificate/i);
    const plain = createClient(Authentication, createGrpcTransport({ baseUrl: url.replace("https:", "http:") }));
    const noTls = await within(
      10_000,
      plain.authenticate({ username: "admin", password: "x" }).catch((e) => e),
      "h2c",
    );
    expect(noTls).toBeInstanceOf(ConnectError);
  });

  /** `npm run grpc-gateway` as package.json has it, on the project's Node, until it listens or exits. */
  async function runGateway(args: string[], env: Record<string, string | undefined>) {
    const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as { scripts: Record<string, string> };
    const [, ...nodeArgs] = pkg.scripts["grpc-gateway"]!.split(" ");
    const child = spawn(join(root, "node_modules/.bin/node"), [...nodeArgs, ...args], {
      cwd: root,
      env: { PATH: process.env.PATH, ...env },
    });
    children.add(child);
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d) => {
      stdout += d;
    });
    child.stderr.on("data", (d) => {
      stderr += d;
    });
    const exited = once(child, "exit").then(([code]) => {
      children.delete(child);
      return code as number;
    });
    const listening = await within(
      20_000,
      Promise.race([
        exited.then(() => undefined),
        new Promise<string>((resolve) => {
          const check = () => {
            const match = /gRPC gateway on (https?:\/\/[\d.]+:\d+)/.exec(stdout);
            if (match?.[1]) resolve(match[1]);
            else setTimeout(check, 50);
          };
          check();
        }),
      ]),
      "the gateway's command line",
    );
    return {
      listening,
      exited,
      output: () => ({ stdout, stderr }),
      stop: async () => {
        if (child.exitCode === null) {
          child.kill();
          await exited;
        }
      },
    };
  }

  /** The child's stderr once it matches `pattern`, or as it is after 5 s. */
  async function stderrOnceMatching(child: { output(): { stderr: string } }, pattern: RegExp): Promise<string> {
    for (let waited = 0; waited < 5_000 && !pattern.test(child.output().stderr); waited += 50)
      await new Promise((resolve) => setTimeout(resolve, 50));
    return child.output().stderr;
  }

  it("needs the secret, says when it runs without TLS, and serves TLS from --tls-cert and --tls-key", async () => {
    const upstream = ["--upstream", worker.url.origin, "--port", "0"];
    const noSecret = await runGateway(upstream, {});
    expect(await within(20_000, noSecret.exited, "the gateway without a secret")).toBe(2);
    expect(noSecret.output().stderr).toMatch(/IpFiltering__GatewaySecret is not set/);

    const secret = { IpFiltering__GatewaySecret: GATEWAY_SECRET };
    const halfTls = await runGateway([...upstream, "--tls-cert", cert], secret);
    expect(await within(20_000, halfTls.exited, "the gateway with half a TLS setting")).toBe(2);
    expect(halfTls.output().stderr).toMatch(/--tls-cert and --tls-key go together/);

    const plain = await runGateway(upstream, secret);
    try {
      expect(plain.listening).toMatch(/^http:\/\//);
      // The warning goes to stderr and the address to stdout: two pipes, read in whatever order they arrive.
      expect(await stderrOnceMatching(plain, /WITHOUT TLS/)).toMatch(/WITHOUT TLS/);
      const auth = createClient(Authentication, createGrpcTransport({ baseUrl: plain.listening! }));
      expect((await auth.authenticate({ username: "admin", password: "Gateway-12345" })).roles).toEqual([
        "Administrator",
      ]);
    } finally {
      await plain.stop();
    }

    const secure = await runGateway([...upstream, "--tls-cert", cert, "--tls-key", key], secret);
    try {
      expect(secure.listening).toMatch(/^https:\/\//);
      expect(secure.output().stderr).not.toMatch(/WITHOUT TLS/);
      const transport = createGrpcTransport({ baseUrl: secure.listening!, nodeOptions: { ca: readFileSync(cert) } });
      const auth = createClient(Authentication, transport);
      expect((await auth.authenticate({ username: "admin", password: "Gateway-12345" })).roles).toEqual([
        "Administrator",
      ]);
    } finally {
      await secure.stop();
    }
  });

  it("refuses a plain-HTTP upstream off this machine unless --allow-insecure-upstream (issue 36)", async () => {
    const secret = { IpFiltering__GatewaySecret: GATEWAY_SECRET };
    const remote = ["--upstream", "http://licensing.example.com", "--port", "0"];
    const refused = await runGateway(remote, secret);
    expect(await within(20_000, refused.exited, "the gateway with a remote plain-HTTP upstream")).toBe(2);
    expect(refused.output().stderr).toMatch(/plain HTTP off this machine/);
    const allowed = await runGateway([...remote, "--allow-insecure-upstream"], secret);
    try {
      expect(allowed.listening).toMatch(/^http:\/\//);
    } finally {
      await allowed.stop();
    }
    const byEnv = await runGateway(remote, { ...secret, GATEWAY_ALLOW_INSECURE_UPSTREAM: "1" });
    try {
      expect(byEnv.listening).toMatch(/^http:\/\//);
    } finally {
      await byEnv.stop();
    }
  });
});
