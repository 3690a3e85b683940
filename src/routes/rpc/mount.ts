/**
 * The gRPC services' HTTP mount on the main endpoint at `/licensing.v1.<Service>/<Method>`, with gRPC-Web (binary
 * and text) and the Connect protocol, while Application:EnableGrpcWeb is on (the router: routes/rpc/router.ts). The
 * services call the same licensing services as REST: no logic twice.
 *
 * connect-es serves gRPC-Web binary and Connect; gRPC-Web text (base64, `application/grpc-web-text`) is adapted
 * here: the request body is decoded and served as binary, the answer encoded back. A body that is not a message of
 * the method is refused here, as the client's error (InvalidArgument), before connect-es would call it Internal.
 */
import { fromBinary } from "@bufbuild/protobuf";
import { Code, createContextValues } from "@connectrpc/connect";
import {
  type UniversalHandler,
  universalServerRequestFromFetch,
  universalServerResponseToFetch,
} from "@connectrpc/connect/protocol";
import type { Context } from "hono";
import { fromBase64, toBase64 } from "../../kernel/crypto";
import { ApiError } from "../../kernel/errors";
import type { AppEnv } from "../../http/app-env";
import type { Router } from "../../http/router";
import { requestKey } from "./call";
import { MAX_MESSAGE_BYTES, rpcHandlers } from "./router";

const TEXT = /^application\/grpc-web-text(\+proto)?/i;

/** gRPC-Web text -> binary request (the base64 body decoded), remembering to encode the answer back. */
async function binaryRequest(request: Request): Promise<{ request: Request; text: boolean }> {
  const type = request.headers.get("content-type") ?? "";
  if (!TEXT.test(type)) return { request, text: false };
  const body = (await boundedText(request, Math.ceil((MAX_MESSAGE_BYTES * 4) / 3) + 1024)).replace(/\s+/g, "");
  // A unary request is one base64 string, possibly several padded chunks back to back.
  const chunks = body.match(/[^=]+=*/g) ?? [];
  let bytes: Uint8Array[];
  try {
    bytes = chunks.map((chunk) => fromBase64(chunk));
  } catch {
    throw new MalformedRequest("the gRPC-Web text body is not base64");
  }
  const joined = join(
    bytes,
    bytes.reduce((n, b) => n + b.byteLength, 0),
  );
  const headers = new Headers(request.headers);
  headers.set("content-type", "application/grpc-web+proto");
  return { request: new Request(request.url, { method: request.method, headers, body: joined }), text: true };
}

/** The body as text, refused with 413 once it passes `max` bytes (before it is all held in memory). */
async function boundedText(request: Request, max: number): Promise<string> {
  if (!request.body) return "";
  const decoder = new TextDecoder();
  let text = "";
  let size = 0;
  for await (const chunk of request.body as unknown as AsyncIterable<Uint8Array>) {
    size += chunk.byteLength;
    if (size > max) throw new ApiError(413, "The gRPC-Web request is too large");
    text += decoder.decode(chunk, { stream: true });
  }
  return text + decoder.decode();
}

async function textResponse(response: Response): Promise<Response> {
  const headers = new Headers(response.headers);
  headers.set("content-type", "application/grpc-web-text+proto");
  headers.delete("content-length");
  return new Response(toBase64(await response.arrayBuffer()), { status: response.status, headers });
}

/** A request body that is not a well-formed message of the method: the client's error, never an Internal one. */
class MalformedRequest extends Error {
  constructor(
    message: string,
    readonly code: Code.InvalidArgument | Code.ResourceExhausted = Code.InvalidArgument,
  ) {
    super(message);
  }
}

/** The body as bytes, refused with 413 past `max` (connect's own readMaxBytes applies to what it reads later). */
async function boundedBytes(request: Request, max: number): Promise<Uint8Array> {
  const parts: Uint8Array[] = [];
  let size = 0;
  if (request.body) {
    for await (const chunk of request.body as unknown as AsyncIterable<Uint8Array>) {
      size += chunk.byteLength;
      if (size > max) throw new MalformedRequest(`message larger than ${max - 5} bytes`, Code.ResourceExhausted);
      parts.push(chunk);
    }
  }
  return join(parts, size);
}

/** `parts` back to back, `size` bytes in all. */
function join(parts: readonly Uint8Array[], size: number): Uint8Array {
  const bytes = new Uint8Array(size);
  let at = 0;
  for (const part of parts) {
    bytes.set(part, at);
    at += part.byteLength;
  }
  return bytes;
}

const GRPC_WEB_BINARY = /^application\/grpc-web(\+proto)?$/i;
const CONNECT_BINARY = /^application\/proto$/i;

/**
 * Parses a binary request's envelope and message before connect-es does: connect-es answers a body that does not
 * parse with Internal (and the service would log it as its own failure). Throws MalformedRequest naming the fault;
 * returns the request to serve, rebuilt from the bytes read. JSON bodies are connect-es's (InvalidArgument already).
 */
async function parsedRequest(request: Request, handler: UniversalHandler): Promise<Request> {
  const type = (request.headers.get("content-type") ?? "").split(";")[0]?.trim() ?? "";
  const grpcWeb = GRPC_WEB_BINARY.test(type);
  if (!grpcWeb && !CONNECT_BINARY.test(type)) return request;
  const bytes = await boundedBytes(request, MAX_MESSAGE_BYTES + 5);
  let message = bytes;
  if (grpcWeb) {
    if (bytes.byteLength === 0) return new Request(request, { body: bytes });
    if (bytes.byteLength < 5) throw new MalformedRequest("the gRPC-Web frame header is cut short");
    const length = new DataView(bytes.buffer, bytes.byteOffset + 1, 4).getUint32(0);
    if (bytes[0] !== 0)
      throw new MalformedRequest(
        "the gRPC-Web message is compressed or not a message frame; send one uncompressed message",
      );
    if (5 + length !== bytes.byteLength)
      throw new MalformedRequest("the gRPC-Web body is not exactly one message frame");
    message = bytes.subarray(5);
  }
  try {
    fromBinary(handler.method.input, message);
  } catch (e) {
    throw new MalformedRequest(
      `the request is not a ${handler.method.input.typeName} message: ${e instanceof Error ? e.message : String(e)}`,
    );
  }
  return new Request(request, { body: bytes });
}

/** The protocol's error answer: trailers-only for gRPC-Web, an error object with its HTTP status for Connect. */
function refusal(request: Request, text: boolean, e: MalformedRequest): Response {
  const type = request.headers.get("content-type") ?? "";
  if (text || GRPC_WEB_BINARY.test(type.split(";")[0]?.trim() ?? "")) {
    const headers = {
      "content-type": text ? "application/grpc-web-text+proto" : "application/grpc-web+proto",
      "grpc-status": String(e.code),
      "grpc-message": encodeURIComponent(e.message),
    };
    return new Response(null, { status: 200, headers });
  }
  const tooLarge = e.code === Code.ResourceExhausted;
  return Response.json(
    { code: tooLarge ? "resource_exhausted" : "invalid_argument", message: e.message },
    { status: tooLarge ? 429 : 400 },
  );
}

async function serve(c: Context<AppEnv>, handler: UniversalHandler): Promise<Response> {
  let request: Request;
  let text = TEXT.test(c.req.header("content-type") ?? "");
  try {
    ({ request, text } = await binaryRequest(c.req.raw));
    request = await parsedRequest(request, handler);
  } catch (e) {
    if (e instanceof MalformedRequest) return refusal(c.req.raw, text, e);
    throw e;
  }
  const universal = universalServerRequestFromFetch(request, {});
  // The interceptors (routes/rpc/interceptors.ts) take the call's credential, context and errors from here.
  universal.contextValues = createContextValues().set(requestKey, c);
  const response = universalServerResponseToFetch(await handler(universal));
  return text ? textResponse(response) : response;
}

/** Mounts every gRPC method at its path (outside the OpenAPI document). */
export function registerRpc(app: Router): void {
  for (const [path, handler] of rpcHandlers()) app.post(path, (c) => serve(c, handler));
}
