/**
 * A native gRPC (HTTP/2) front for the licensing service (CONTRACT section 4). Workers cannot send HTTP/2 trailers,
 * so the Worker speaks gRPC-Web; this gateway accepts plain gRPC on port 5005 (SPEC "separate HTTP/2 endpoint for
 * gRPC"), forwards each unary call to the Worker as gRPC-Web, and turns the answer's trailer frame back into real
 * HTTP/2 trailers. Metadata (authorization, the API key header, custom metadata) passes through unchanged, except
 * the headers that claim a client address: a client's `cf-connecting-ip`, `x-forwarded-*`, `forwarded`,
 * `x-real-ip` and `x-licensing-gateway-client` are dropped. With a secret (the Worker's IpFiltering:GatewaySecret)
 * the gateway passes its peer's address in `x-licensing-gateway-client`, signed (src/protection/client-ip.ts), so
 * the Worker limits each gRPC client by its own address rather than all of them by the gateway's.
 *
 * Run: `npm run grpc-gateway -- --upstream https://licensing.example.com --port 5005` with the secret in
 * IpFiltering__GatewaySecret (Node 22+; no build step).
 */
import { createHmac } from "node:crypto";
import http2 from "node:http2";

export interface GatewayOptions {
  /** The Worker's base URL, e.g. http://127.0.0.1:5000. */
  upstream: string;
  port?: number;
  host?: string;
  /** Fetch used to reach the Worker (tests inject one). */
  fetch?: typeof fetch;
  /** The Worker's IpFiltering:GatewaySecret: signs the client address passed on; without it none is passed. */
  secret?: string;
}

/** The header of the signed client address (src/protection/client-ip.ts reads it). */
export const GATEWAY_CLIENT_HEADER = "x-licensing-gateway-client";

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
  const joined = new Uint8Array(messages.reduce((n, m) => n + m.byteLength, 0));
  let offset = 0;
  for (const m of messages) {
    joined.set(m, offset);
    offset += m.byteLength;
  }
  return { messages: joined, trailers };
}

/** The gRPC status of an upstream answer that carried none (a 404 when gRPC-Web is off, a 5xx). */
function statusForHttp(status: number): string {
  if (status === 404) return "12"; // UNIMPLEMENTED
  if (status === 401) return "16"; // UNAUTHENTICATED
  if (status === 403) return "7"; // PERMISSION_DENIED
  if (status === 429 || status >= 500) return "14"; // UNAVAILABLE
  return "2"; // UNKNOWN
}

async function readBody(stream: http2.ServerHttp2Stream): Promise<Uint8Array> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return new Uint8Array(Buffer.concat(chunks));
}

async function forward(
  options: GatewayOptions,
  stream: http2.ServerHttp2Stream,
  headers: http2.IncomingHttpHeaders,
): Promise<void> {
  const path = String(headers[":path"] ?? "/");
  const forwarded = new Headers({ "content-type": "application/grpc-web+proto", "x-grpc-web": "1" });
  for (const [name, value] of Object.entries(headers)) {
    if (name.startsWith(":") || HOP_BY_HOP.has(name) || CLAIMS_ADDRESS.test(name) || value === undefined) continue;
    forwarded.set(name, Array.isArray(value) ? value.join(", ") : value);
  }
  const peer = stream.session?.socket.remoteAddress;
  if (options.secret && peer)
    forwarded.set(GATEWAY_CLIENT_HEADER, signClientAddress(options.secret, peer.replace(/^::ffff:(?=\d)/, "")));
  const body = await readBody(stream);
  let trailers: Record<string, string>;
  let messages: Uint8Array = new Uint8Array();
  try {
    const res = await (options.fetch ?? fetch)(new URL(path, options.upstream), {
      method: "POST",
      headers: forwarded,
      body,
    });
    const split = splitGrpcWebBody(new Uint8Array(await res.arrayBuffer()));
    messages = split.messages;
    // A trailers-only answer (an error before any message) carries its status in the headers.
    const status =
      split.trailers["grpc-status"] ?? res.headers.get("grpc-status") ?? (res.ok ? "0" : statusForHttp(res.status));
    const message =
      split.trailers["grpc-message"] ??
      res.headers.get("grpc-message") ??
      (res.ok ? "" : `upstream answered HTTP ${res.status}`);
    trailers = { "grpc-status": status, ...(message ? { "grpc-message": message } : {}) };
  } catch (e) {
    trailers = {
      "grpc-status": "14",
      "grpc-message": encodeURIComponent(`upstream unreachable: ${(e as Error).message}`),
    };
  }
  stream.respond({ ":status": 200, "content-type": "application/grpc+proto" }, { waitForTrailers: true });
  stream.on("wantTrailers", () => stream.sendTrailers(trailers));
  stream.end(messages);
}

/** Starts the gateway; resolves with the server once it listens. */
export function startGateway(options: GatewayOptions): Promise<http2.Http2Server> {
  const server = http2.createServer();
  server.on("stream", (stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders) => {
    forward(options, stream, headers).catch((e: unknown) => {
      console.error("grpc-gateway:", e);
      if (!stream.headersSent)
        stream.respond(
          {
            ":status": 200,
            "content-type": "application/grpc+proto",
            "grpc-status": "13",
            "grpc-message": "gateway error",
          },
          { endStream: true },
        );
    });
  });
  return new Promise((resolve) =>
    server.listen(options.port ?? 5005, options.host ?? "127.0.0.1", () => resolve(server)),
  );
}
