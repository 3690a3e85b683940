/**
 * A native gRPC (HTTP/2) front for the licensing service (CONTRACT section 4). Workers cannot send HTTP/2 trailers,
 * so the Worker speaks gRPC-Web; this gateway accepts plain gRPC on port 5005 (SPEC "separate HTTP/2 endpoint for
 * gRPC"), forwards each unary call to the Worker as gRPC-Web, and turns the answer's trailer frame back into real
 * HTTP/2 trailers. What it guards (issue "Trust at the edges"):
 * - Only the service's own methods pass (`/licensing.v1.<Service>/<Method>` of the generated descriptors), each to
 *   the configured upstream origin joined with that method's path: the client's `:path` is looked up, never resolved
 *   as a URL, so `//other-host/...` reaches nothing. Any other path answers UNIMPLEMENTED.
 * - A request message is read up to the Worker's own limit (MAX_MESSAGE_BYTES, one gRPC frame) and refused with
 *   RESOURCE_EXHAUSTED past it, before the rest is read; at most `maxCalls` calls are in progress in the whole
 *   gateway and `maxStreams` per connection (HTTP/2 SETTINGS), each within `callTimeoutMs`. Memory is bounded by
 *   maxCalls x (message + answer).
 * - Metadata passes through unchanged, except the headers that claim a client address (`cf-connecting-ip`,
 *   `x-forwarded-*`, `forwarded`, `x-real-ip`, `true-client-ip`, `x-licensing-gateway-client`): dropped. With the
 *   secret (the Worker's IpFiltering:GatewaySecret) the gateway signs the address of the client it served in
 *   `x-licensing-gateway-client` (src/protection/client-ip.ts): its TCP peer, or, when that peer is one of the
 *   configured trusted proxies, the right-most address of `X-Forwarded-For` that is not a trusted proxy. The signature
 *   also lets the call through when the Worker has gRPC-Web off for browsers (SPEC: the two are independent).
 * - With a certificate and key it serves TLS itself; without, plain HTTP/2 (h2c), which main.ts says aloud.
 *
 * Run: `npm run grpc-gateway -- --upstream https://licensing.example.com` with the secret in
 * IpFiltering__GatewaySecret (main.ts lists every option).
 */
import { createHmac } from "node:crypto";
import http2 from "node:http2";
import { BlockList, isIP } from "node:net";
import { Authentication } from "../../src/gen/licensing/v1/authentication_pb.ts";
import { LicenseServer } from "../../src/gen/licensing/v1/license_server_pb.ts";
import { ReportServer } from "../../src/gen/licensing/v1/report_server_pb.ts";

export interface GatewayOptions {
  /** The Worker's origin, e.g. https://licensing.example.com (scheme, host and port only). */
  upstream: string;
  port?: number;
  host?: string;
  /** Fetch used to reach the Worker. */
  fetch?: typeof fetch;
  /** The Worker's IpFiltering:GatewaySecret: signs the client address passed on; without it none is passed. */
  secret?: string;
  /** Proxies (addresses or CIDR ranges) whose X-Forwarded-For is believed; none by default. */
  trustedProxies?: readonly string[];
  /** PEM certificate (chain) and key: the gateway serves TLS (h2) itself; without, plain HTTP/2 (h2c). */
  tls?: { cert: string | Buffer; key: string | Buffer };
  /** Largest request message, in bytes (the Worker's own limit by default). */
  maxMessageBytes?: number;
  /** Concurrent streams one connection may open (HTTP/2 SETTINGS_MAX_CONCURRENT_STREAMS). */
  maxStreams?: number;
  /** Calls in progress in the whole gateway; more answer RESOURCE_EXHAUSTED at once. */
  maxCalls?: number;
  /** How long a call may take, its request's upload included (ms); longer answers DEADLINE_EXCEEDED. */
  callTimeoutMs?: number;
  /**
   * Lets the gateway call an `http:` upstream that is not on this machine: every call's credential (API keys, bearer
   * tokens, passwords) and the signed client address would cross the network in clear. Off by default.
   */
  allowInsecureUpstream?: boolean;
}

/** The header of the signed client address (src/protection/client-ip.ts reads it). */
export const GATEWAY_CLIENT_HEADER = "x-licensing-gateway-client";

/**
 * The Worker's largest gRPC message (src/routes/rpc/router.ts MAX_MESSAGE_BYTES: a 4 MiB report plus 64 KiB of the
 * rest). The gateway runs apart from the Worker's modules, so the number is repeated here; the gateway test checks
 * that a message one byte over is refused by both, and one at the limit passes the gateway.
 */
export const MAX_MESSAGE_BYTES = 4 * 1024 * 1024 + 64 * 1024;
export const DEFAULT_MAX_STREAMS = 32;
export const DEFAULT_MAX_CALLS = 64;
export const DEFAULT_CALL_TIMEOUT_MS = 30_000;

/** The only paths forwarded: `/<package.Service>/<Method>` of the service's own gRPC methods. */
export const METHOD_PATHS: ReadonlySet<string> = new Set(
  [Authentication, LicenseServer, ReportServer].flatMap((service) =>
    service.methods.map((method) => `/${service.typeName}/${method.name}`),
  ),
);

/** Headers a client could use to claim another address: never forwarded. */
const CLAIMS_ADDRESS =
  /^(cf-connecting-ip|x-forwarded-.*|forwarded|x-real-ip|true-client-ip|x-licensing-gateway-client)$/i;

/** `<ip>;<unix seconds>;<hex HMAC-SHA256(secret, "<ip>;<unix seconds>")>`. */
export function signClientAddress(secret: string, ip: string, nowSeconds = Math.floor(Date.now() / 1000)): string {
  const signed = `${ip};${nowSeconds}`;
  return `${signed};${createHmac("sha256", secret).update(signed).digest("hex")}`;
}

const HOP_BY_HOP = new Set([
  "connection",
  "keep-alive",
  "te",
  "transfer-encoding",
  "upgrade",
  "host",
  "content-length",
  "content-type",
  "grpc-accept-encoding",
  "accept-encoding",
]);

/** Splits a gRPC-Web body into its message frames and the trailer frame's key/values. */
export function splitGrpcWebBody(body: Uint8Array): { messages: Uint8Array; trailers: Record<string, string> } {
  const messages: Uint8Array[] = [];
  const trailers: Record<string, string> = {};
  let at = 0;
  while (at + 5 <= body.byteLength) {
    const flags = body[at]!;
    const length = new DataView(body.buffer, body.byteOffset + at + 1, 4).getUint32(0);
    const frame = body.subarray(at, at + 5 + length);
    if (flags & 0x80) {
      for (const line of new TextDecoder().decode(frame.subarray(5)).split("\r\n")) {
        const colon = line.indexOf(":");
        if (colon > 0) trailers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
      }
    } else {
      messages.push(frame);
    }
    at += 5 + length;
  }
  return { messages: Buffer.concat(messages), trailers };
}

/** An address as the lists compare it: no brackets, port or zone, IPv4-mapped IPv6 as IPv4; "" when not one. */
function plainAddress(text: string): string {
  let value = text.trim();
  const bracketed = /^\[([^\]]+)\](?::\d+)?$/.exec(value);
  if (bracketed?.[1]) value = bracketed[1];
  else if (/^\d{1,3}(\.\d{1,3}){3}:\d+$/.test(value)) value = value.slice(0, value.lastIndexOf(":"));
  value = value.replace(/%.*$/, "").replace(/^::ffff:(?=\d{1,3}(\.\d{1,3}){3}$)/i, "");
  return isIP(value) ? value : "";
}

/** The trusted proxies as a BlockList; throws naming the first entry that is neither an address nor a CIDR range. */
export function trustedProxyList(entries: readonly string[]): BlockList {
  const list = new BlockList();
  for (const entry of entries.flatMap((e) => e.split(",")).map((e) => e.trim())) {
    if (!entry) continue;
    const [address = "", bits] = entry.split("/");
    const plain = plainAddress(address);
    const type = isIP(plain) === 6 ? "ipv6" : "ipv4";
    const prefix = bits === undefined ? undefined : Number(bits);
    if (
      !plain ||
      (prefix !== undefined && !(Number.isInteger(prefix) && prefix >= 0 && prefix <= (type === "ipv6" ? 128 : 32)))
    )
      throw new Error(`trusted proxy "${entry}" is neither an IP address nor a CIDR range`);
    if (prefix === undefined) list.addAddress(plain, type);
    else list.addSubnet(plain, prefix, type);
  }
  return list;
}

function trusted(list: BlockList, address: string): boolean {
  return list.check(address, isIP(address) === 6 ? "ipv6" : "ipv4");
}

/**
 * The address of the client a call came from: the TCP peer, unless the peer is a trusted proxy; then the right-most
 * X-Forwarded-For entry that is not itself a trusted proxy (entries to its left were written by the client and prove
 * nothing). A malformed entry ends the walk at the hop that wrote it; a chain of trusted proxies only, at its
 * left-most entry.
 */
export function clientOf(peer: string, forwardedFor: string | string[] | undefined, proxies: BlockList): string {
  let client = plainAddress(peer) || peer;
  if (!isIP(client) || !trusted(proxies, client)) return client;
  const hops = (Array.isArray(forwardedFor) ? forwardedFor.join(",") : (forwardedFor ?? "")).split(",");
  for (let i = hops.length - 1; i >= 0; i--) {
    const hop = hops[i]!.trim();
    if (!hop) continue;
    const address = plainAddress(hop);
    if (!address) return client;
    client = address;
    if (!trusted(proxies, address)) return address;
  }
  return client;
}

/** Whether a URL's host is this machine (loopback): the one place a plain-HTTP upstream keeps calls off the network. */
function isLoopback(url: URL): boolean {
  const host = url.hostname.replace(/^\[|\]$/g, "");
  return host === "localhost" || host === "::1" || /^127(?:\.\d{1,3}){3}$/.test(host);
}

/**
 * The upstream origin: an http(s) URL with nothing after the host and port. A plain-HTTP upstream off this machine is
 * refused unless `allowInsecure`: the gateway would send every credential over the network in clear.
 */
export function upstreamOrigin(upstream: string, allowInsecure = false): string {
  let url: URL;
  try {
    url = new URL(upstream);
  } catch {
    throw new Error(`upstream "${upstream}" is not a URL`);
  }
  if (
    (url.protocol !== "https:" && url.protocol !== "http:") ||
    url.username ||
    url.password ||
    url.pathname !== "/" ||
    url.search ||
    url.hash
  )
    throw new Error(`upstream "${upstream}" must be an origin such as https://licensing.example.com (no path)`);
  if (url.protocol === "http:" && !isLoopback(url) && !allowInsecure)
    throw new Error(
      `upstream "${upstream}" is plain HTTP off this machine: every API key, token and password would cross the network in clear; use https, or pass --allow-insecure-upstream (GATEWAY_ALLOW_INSECURE_UPSTREAM=1) to accept it`,
    );
  return url.origin;
}

/** A call the gateway answers itself, with a gRPC status. */
class Refusal extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
  }
}

const Status = {
  DEADLINE_EXCEEDED: 4,
  RESOURCE_EXHAUSTED: 8,
  UNIMPLEMENTED: 12,
  INTERNAL: 13,
  UNAVAILABLE: 14,
} as const;

/** The gRPC status of an upstream answer that carried none (a 404 when the Worker refuses, a 5xx). */
function statusForHttp(status: number): string {
  if (status === 404) return "12"; // UNIMPLEMENTED
  if (status === 401) return "16"; // UNAUTHENTICATED
  if (status === 403) return "7"; // PERMISSION_DENIED
  if (status === 413 || status === 429) return "8"; // RESOURCE_EXHAUSTED, as the Worker's own gRPC answers them
  if (status >= 500) return "14"; // UNAVAILABLE
  return "2"; // UNKNOWN
}

/** The `message` of the Worker's JSON error envelope (`{success: false, code, message}`), if the body is one. */
function envelopeMessage(body: Uint8Array): string | undefined {
  try {
    const parsed: unknown = JSON.parse(new TextDecoder().decode(body));
    const message = (parsed as { message?: unknown } | null)?.message;
    return typeof message === "string" ? message.slice(0, 1024) : undefined;
  } catch {
    return undefined;
  }
}

/** Answers a call trailers-only and resets the stream (NO_ERROR), so the rest of the request is never read. */
function refuse(stream: http2.ServerHttp2Stream, code: number, message: string): void {
  if (stream.destroyed || stream.closed) return;
  if (!stream.headersSent)
    stream.respond(
      {
        ":status": 200,
        "content-type": "application/grpc+proto",
        "grpc-status": String(code),
        "grpc-message": encodeURIComponent(message),
      },
      { endStream: true },
    );
  stream.close(http2.constants.NGHTTP2_NO_ERROR);
}

/** The request body, refused past `max` bytes (by its declared length, else as it arrives) or when `signal` aborts. */
function readBody(
  stream: http2.ServerHttp2Stream,
  declaredLength: number,
  max: number,
  signal: AbortSignal,
): Promise<Buffer> {
  const tooLarge = () => new Refusal(Status.RESOURCE_EXHAUSTED, `the request message is larger than ${max - 5} bytes`);
  if (declaredLength > max) return Promise.reject(tooLarge());
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const done = (error?: unknown) => {
      stream.off("data", onData);
      stream.off("end", onEnd);
      stream.off("close", onClose);
      signal.removeEventListener("abort", onAbort);
      if (error === undefined) resolve(Buffer.concat(chunks, size));
      else {
        stream.pause();
        reject(error);
      }
    };
    const onData = (chunk: Buffer) => {
      size += chunk.byteLength;
      if (size > max) done(tooLarge());
      else chunks.push(chunk);
    };
    const onEnd = () => done();
    const onClose = () => done(new Refusal(Status.UNAVAILABLE, "the client closed the call"));
    const onAbort = () => done(signal.reason);
    stream.on("data", onData);
    stream.once("end", onEnd);
    stream.once("close", onClose);
    signal.addEventListener("abort", onAbort, { once: true });
  });
}

/** The upstream answer's body, at most `max` bytes. */
async function readAnswer(res: Response, max: number): Promise<Uint8Array> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  if (res.body) {
    for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
      size += chunk.byteLength;
      if (size > max) throw new Refusal(Status.INTERNAL, "the upstream answer is larger than the gateway accepts");
      chunks.push(chunk);
    }
  }
  return Buffer.concat(chunks, size);
}

interface Settings {
  origin: string;
  fetch: typeof fetch;
  secret: string | undefined;
  proxies: BlockList;
  maxBody: number;
  callTimeoutMs: number;
  /** Whether the ignored X-Forwarded-For was reported (once: a log line per peer would grow without bound). */
  warned: boolean;
}

async function forward(
  settings: Settings,
  stream: http2.ServerHttp2Stream,
  headers: http2.IncomingHttpHeaders,
  path: string,
  signal: AbortSignal,
): Promise<void> {
  const forwarded = new Headers({ "content-type": "application/grpc-web+proto", "x-grpc-web": "1" });
  for (const [name, value] of Object.entries(headers)) {
    if (name.startsWith(":") || HOP_BY_HOP.has(name) || CLAIMS_ADDRESS.test(name) || value === undefined) continue;
    forwarded.set(name, Array.isArray(value) ? value.join(", ") : value);
  }
  const peer = stream.session?.socket?.remoteAddress ?? "";
  const client = clientOf(peer, headers["x-forwarded-for"], settings.proxies);
  const direct = plainAddress(peer);
  const proxied = direct !== "" && trusted(settings.proxies, direct);
  if (!proxied && headers["x-forwarded-for"] !== undefined && !settings.warned) {
    settings.warned = true;
    console.warn(
      `grpc-gateway: ignored X-Forwarded-For from ${peer}: not a trusted proxy (--trusted-proxy), so every client behind it counts as ${peer}`,
    );
  }
  if (settings.secret && client) forwarded.set(GATEWAY_CLIENT_HEADER, signClientAddress(settings.secret, client));
  const body = await readBody(stream, Number(headers["content-length"] ?? 0), settings.maxBody, signal);
  let trailers: Record<string, string>;
  let messages: Uint8Array = new Uint8Array();
  try {
    // The method's own path on the configured origin: nothing of the client's path beyond the looked-up name.
    const res = await settings.fetch(`${settings.origin}${path}`, {
      method: "POST",
      headers: forwarded,
      body,
      redirect: "manual",
      signal,
    });
    const answer = await readAnswer(res, settings.maxBody + 64 * 1024);
    // An answer that is not gRPC-Web (a refusal of the Worker's middleware: the blacklist's 403, a login limit's
    // 429) carries no frames; its status comes from HTTP, its message from the error envelope.
    const grpcWeb = /^application\/grpc-web/i.test(res.headers.get("content-type") ?? "");
    const split = grpcWeb ? splitGrpcWebBody(answer) : { messages: new Uint8Array(), trailers: {} };
    messages = split.messages;
    // A trailers-only answer (an error before any message) carries its status in the headers.
    const status =
      split.trailers["grpc-status"] ??
      res.headers.get("grpc-status") ??
      (res.ok && grpcWeb ? "0" : statusForHttp(res.status));
    const message =
      split.trailers["grpc-message"] ??
      res.headers.get("grpc-message") ??
      (res.ok && grpcWeb ? "" : encodeURIComponent(envelopeMessage(answer) ?? `upstream answered HTTP ${res.status}`));
    // The trailer frame's metadata (licensing-reason) passes on as trailers, beside the status.
    const metadata = Object.entries(split.trailers).filter(
      ([name]) => /^[a-z0-9][a-z0-9._-]*$/.test(name) && !HOP_BY_HOP.has(name) && !name.startsWith("grpc-"),
    );
    trailers = {
      ...Object.fromEntries(metadata),
      "grpc-status": status,
      ...(message ? { "grpc-message": message } : {}),
    };
  } catch (e) {
    if (e instanceof Refusal || signal.aborted) throw signal.aborted ? signal.reason : e;
    trailers = {
      "grpc-status": String(Status.UNAVAILABLE),
      "grpc-message": encodeURIComponent(`upstream unreachable: ${(e as Error).message}`),
    };
  }
  if (stream.destroyed || stream.closed) return;
  stream.respond({ ":status": 200, "content-type": "application/grpc+proto" }, { waitForTrailers: true });
  stream.on("wantTrailers", () => stream.sendTrailers(trailers));
  stream.end(messages);
}

/** Starts the gateway; resolves with the server once it listens, rejects on a bad upstream or trusted proxy. */
export async function startGateway(options: GatewayOptions): Promise<http2.Http2Server | http2.Http2SecureServer> {
  const settings: Settings = {
    origin: upstreamOrigin(options.upstream, options.allowInsecureUpstream),
    fetch: options.fetch ?? fetch,
    secret: options.secret || undefined,
    proxies: trustedProxyList(options.trustedProxies ?? []),
    maxBody: 5 + (options.maxMessageBytes ?? MAX_MESSAGE_BYTES),
    callTimeoutMs: options.callTimeoutMs ?? DEFAULT_CALL_TIMEOUT_MS,
    warned: false,
  };
  const maxCalls = options.maxCalls ?? DEFAULT_MAX_CALLS;
  const serverOptions: http2.ServerOptions = {
    settings: { maxConcurrentStreams: options.maxStreams ?? DEFAULT_MAX_STREAMS },
    // Bounds what one connection may hold in nghttp2's buffers (MB).
    maxSessionMemory: 10,
  };
  const server = options.tls
    ? http2.createSecureServer({
        ...serverOptions,
        cert: options.tls.cert,
        key: options.tls.key,
        minVersion: "TLSv1.2",
      })
    : http2.createServer(serverOptions);
  let inProgress = 0;
  server.on("stream", (stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders) => {
    stream.on("error", () => {}); // a client's reset: nothing to answer
    const path = String(headers[":path"] ?? "");
    if (headers[":method"] !== "POST" || !METHOD_PATHS.has(path)) {
      refuse(stream, Status.UNIMPLEMENTED, "not a method of the licensing service (/licensing.v1.<Service>/<Method>)");
      return;
    }
    if (!/^application\/grpc(\+proto)?(;|$)/i.test(String(headers["content-type"] ?? ""))) {
      if (!stream.headersSent) stream.respond({ ":status": 415 }, { endStream: true });
      stream.close(http2.constants.NGHTTP2_NO_ERROR);
      return;
    }
    if (inProgress >= maxCalls) {
      refuse(stream, Status.RESOURCE_EXHAUSTED, `the gateway is serving its limit of ${maxCalls} calls; retry later`);
      return;
    }
    inProgress++;
    const call = new AbortController();
    const timer = setTimeout(
      () =>
        call.abort(
          new Refusal(Status.DEADLINE_EXCEEDED, `the call took longer than ${settings.callTimeoutMs / 1000} s`),
        ),
      settings.callTimeoutMs,
    );
    stream.once("close", () => {
      inProgress--;
      clearTimeout(timer);
      if (!call.signal.aborted) call.abort(new Refusal(Status.UNAVAILABLE, "the client closed the call"));
    });
    forward(settings, stream, headers, path, call.signal).catch((e: unknown) => {
      if (e instanceof Refusal) return refuse(stream, e.code, e.message);
      console.error("grpc-gateway:", e);
      refuse(stream, Status.INTERNAL, "gateway error");
    });
  });
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port ?? 5005, options.host ?? "127.0.0.1", () => {
      server.off("error", reject);
      resolve(server);
    });
  });
}
