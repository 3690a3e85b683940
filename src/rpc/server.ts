/**
 * The gRPC services (CONTRACT section 4, proto/licensing/v1) on the main endpoint at
 * `/licensing.v1.<Service>/<Method>`, with gRPC-Web (binary and text) and the Connect protocol, while
 * Application:EnableGrpcWeb is on. Workers cannot send HTTP/2 trailers, so plain gRPC is the optional Node gateway's
 * job (tools/grpc-gateway). The services call the same licensing services as REST: no logic twice.
 *
 * connect-es serves gRPC-Web binary and Connect; gRPC-Web text (base64, `application/grpc-web-text`) is adapted
 * here: the request body is decoded and served as binary, the answer encoded back.
 */
import { fromBinary } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import {
  Code,
  ConnectError,
  type ConnectRouter,
  type Interceptor,
  createConnectRouter,
  createContextKey,
  createContextValues,
} from "@connectrpc/connect";
import {
  type UniversalHandler,
  universalServerRequestFromFetch,
  universalServerResponseToFetch,
} from "@connectrpc/connect/protocol";
import type { Context } from "hono";
import type { AppEnv, Principal } from "../http/app-env";
import { authenticate } from "../auth/guard";
import { USER_KEY_ATTEMPT, passwordAttempt, protectLogin } from "../protection/limits";
import { fromBase64, toBase64 } from "../crypto";
import { ConfigError } from "../config";
import { Authentication } from "../gen/licensing/v1/authentication_pb";
import { LicenseServer, LicenseStatus } from "../gen/licensing/v1/license_server_pb";
import { ReportServer } from "../gen/licensing/v1/report_server_pb";
import { type ServiceContext, serviceContext, type ClientInfo, clientInfo } from "../http/context";
import { ApiError, LicensingError } from "../errors";
import type { Router } from "../http/router";
import { LICENSE_TYPES as LicenseType, LICENSING_MODES as LicensingMode } from "../licensing/vocabulary";
import { MAX_REPORT_BYTES, storeReport } from "../licensing/report-store";
import type { LicenseView } from "../licensing/license-view";
import { activate, deactivate } from "../licensing/activation";
import { validate } from "../licensing/validation";
import { heartbeat, releaseSeat, requestSeat } from "../licensing/floating";
import { signInWithUserKey, INVALID_LOGIN, signInWithPassword } from "../auth/sign-in";

/** What a call carries into the service implementations. */
interface CallState {
  ctx: ServiceContext;
  client: ClientInfo;
  /** The credential check's outcome: the principal, or the refusal to answer with Unauthenticated. */
  principal: Principal | ApiError;
}
const callKey = createContextKey<CallState | undefined>(undefined);

function state(values: { get<T>(key: { id: symbol; defaultValue: T }): T }): CallState {
  const s = values.get(callKey);
  if (!s) throw new ConnectError("no request context", Code.Internal);
  return s;
}

/** The service context of an authenticated call; Unauthenticated when the credential was missing or bad. */
function authenticated(values: Parameters<typeof state>[0]): CallState {
  const s = state(values);
  // CONTRACT section 7: a missing or bad credential is Unauthenticated with SPEC's login message.
  if (s.principal instanceof ApiError)
    throw new ConnectError(
      s.principal.status === 403 ? "Permission denied" : INVALID_LOGIN,
      s.principal.status === 403 ? Code.PermissionDenied : Code.Unauthenticated,
    );
  s.ctx.principal = s.principal;
  return s;
}

/** Service errors as gRPC statuses with the same message (CONTRACT section 4). */
function toConnectError(e: unknown): unknown {
  if (e instanceof ConnectError) return e;
  if (e instanceof LicensingError)
    return new ConnectError(
      e.message,
      e.grpcCode as number as Code,
      e.reason ? { "licensing-reason": e.reason } : undefined,
    );
  if (e instanceof ApiError) {
    const code =
      e.status === 401
        ? Code.Unauthenticated
        : e.status === 403
          ? Code.PermissionDenied
          : e.status === 413 || e.status === 429
            ? Code.ResourceExhausted
            : e.status < 500
              ? Code.InvalidArgument
              : Code.Internal;
    return new ConnectError(
      e.message || "Request refused",
      code,
      e.reason ? { "licensing-reason": e.reason } : undefined,
    );
  }
  if (e instanceof ConfigError) return new ConnectError(e.message, Code.Internal);
  console.error("gRPC call failed", e);
  return new ConnectError("An unexpected error occurred", Code.Internal);
}

async function call<T>(run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (e) {
    throw toConnectError(e);
  }
}

const timestamp = (iso: string | undefined) => (iso ? timestampFromDate(new Date(iso)) : undefined);
const name = (names: readonly string[], value: number | string) =>
  typeof value === "string" ? value : (names[value] ?? String(value));
const opt = (s: string | undefined) => (s === undefined || s === "" ? undefined : s);

function licenseMessage(view: LicenseView) {
  return {
    licenseId: view.licenseId,
    licensingMode: name(LicensingMode, view.licensingMode),
    licenseType: name(LicenseType, view.licenseType),
    edition: view.edition ?? "",
    issueDate: timestamp(view.issueDate),
    expireAt: timestamp(view.expireAt),
    supportExpireAt: timestamp(view.supportExpireAt),
    features: view.features,
    licensee: {
      name: view.licensee.name ?? "",
      email: view.licensee.email ?? "",
      company: view.licensee.company ?? "",
    },
    licenseKey: view.licenseKey ?? "",
  };
}

const STATUS: Record<string, LicenseStatus> = {
  Activated: LicenseStatus.ACTIVATED,
  NotActivated: LicenseStatus.NOT_ACTIVATED,
  Expired: LicenseStatus.EXPIRED,
  Revoked: LicenseStatus.REVOKED,
  Tampered: LicenseStatus.TAMPERED,
};

function routes(router: ConnectRouter): void {
  router.service(Authentication, {
    authenticate: (req, context) =>
      call(async () => {
        const { ctx } = state(context.values);
        const signedIn =
          req.userKey !== "" && req.username === ""
            ? await protectLogin(ctx, USER_KEY_ATTEMPT, () => signInWithUserKey(ctx, req.userKey))
            : await protectLogin(ctx, passwordAttempt(req.username || undefined), () =>
                signInWithPassword(ctx, req.username || undefined, req.password),
              );
        return { token: signedIn.token, expiresIn: signedIn.expiresIn, roles: signedIn.roles };
      }),
  });

  router.service(LicenseServer, {
    activateLicense: (req, context) =>
      call(async () => {
        const { ctx, client } = authenticated(context.values);
        const r = await activate(
          ctx,
          {
            userKey: req.userKey,
            machineId: req.machineId,
            clientId: opt(req.clientId),
            clientName: opt(req.clientName),
            productCode: opt(req.productCode),
            version: opt(req.version),
            nonce: opt(req.nonce),
          },
          client,
        );
        return {
          licenseToken: r.licenseToken,
          tokenExpireAt: timestamp(r.tokenExpireAt),
          activeClientCount: r.activeClientCount,
          maxClientCount: r.maxClientCount,
          license: licenseMessage(r.license),
        };
      }),
    deactivateLicense: (req, context) =>
      call(async () => {
        const { ctx, client } = authenticated(context.values);
        return deactivate(
          ctx,
          {
            userKey: req.userKey,
            machineId: req.machineId,
            clientId: opt(req.clientId),
            licenseToken: opt(req.licenseToken),
          },
          client,
        );
      }),
    validateLicense: (req, context) =>
      call(async () => {
        const { ctx, client } = authenticated(context.values);
        const r = await validate(
          ctx,
          {
            userKey: req.userKey,
            machineId: opt(req.machineId),
            clientId: opt(req.clientId),
            licenseToken: opt(req.licenseToken),
            productCode: opt(req.productCode),
            version: opt(req.version),
            nonce: req.nonce,
          },
          client,
        );
        return {
          licenseId: r.licenseId,
          status: STATUS[r.status] ?? LicenseStatus.UNSPECIFIED,
          license: licenseMessage(r.license),
          licenseToken: r.licenseToken,
          tokenExpireAt: timestamp(r.tokenExpireAt),
          serverTime: timestamp(r.serverTime),
          nonce: r.nonce,
        };
      }),
    requestFloatingLicense: (req, context) =>
      call(async () => {
        const { ctx, client } = authenticated(context.values);
        const r = await requestSeat(
          ctx,
          { userKey: req.userKey, machineId: req.machineId, clientId: req.clientId, clientName: opt(req.clientName) },
          client,
        );
        return {
          licenseToken: r.licenseToken,
          tokenExpireAt: timestamp(r.tokenExpireAt),
          activeClientCount: r.activeClientCount,
          maxClientCount: r.maxClientCount,
          license: licenseMessage(r.license),
          heartbeatInterval: r.heartbeatInterval,
        };
      }),
    releaseFloatingLicense: (req, context) =>
      call(async () => {
        const { ctx, client } = authenticated(context.values);
        return releaseSeat(ctx, { licenseToken: req.licenseToken, userKey: opt(req.userKey) }, client);
      }),
    heartbeat: (req, context) =>
      call(async () => {
        const { ctx } = authenticated(context.values);
        const r = await heartbeat(ctx, { licenseToken: req.licenseToken });
        return {
          tokenExpireAt: timestamp(r.tokenExpireAt),
          heartbeatInterval: r.heartbeatInterval,
          activeClientCount: r.activeClientCount,
          maxClientCount: r.maxClientCount,
        };
      }),
  });

  router.service(ReportServer, {
    sendReport: (req, context) =>
      call(async () => {
        const { ctx, client } = authenticated(context.values);
        if (req.name === "") throw new ConnectError("name is required", Code.InvalidArgument);
        const reportId = await storeReport(
          ctx,
          {
            name: req.name,
            uid: opt(req.uid),
            version: opt(req.version),
            date: req.date
              ? new Date(Number(req.date.seconds) * 1000 + Math.floor(req.date.nanos / 1e6)).toISOString()
              : undefined,
            userKey: opt(req.userKey),
            machineId: opt(req.machineId),
            clientId: opt(req.clientId),
            clientName: opt(req.clientName),
            contentType: opt(req.contentType),
            content: req.content,
            properties: req.properties.map((p) => ({ name: p.name, value: p.value })),
          },
          client,
        );
        return { reportId };
      }),
  });
}

/**
 * REST validates every licensing field at its edge (licensing/licensing-routes.ts: 256 characters, `version` 64, a report's
 * `content` 4 MiB, a property's `value` 4096, at most 1,000 properties); a protobuf message has no such limits, so
 * the same ones are checked here before a call reaches the services, which share them with REST.
 */
const FIELD_LIMITS: Readonly<Record<string, number>> = { version: 64, content: MAX_REPORT_BYTES, value: 4096 };
const DEFAULT_FIELD_LIMIT = 256;
const MAX_REPEATED = 1000;
/** Largest request message: a report's content and its other fields. */
const MAX_MESSAGE_BYTES = MAX_REPORT_BYTES + 64 * 1024;

function checkFieldLengths(message: object, path = ""): void {
  for (const [key, value] of Object.entries(message)) {
    const limit = FIELD_LIMITS[key] ?? DEFAULT_FIELD_LIMIT;
    if (typeof value === "string" && value.length > limit)
      throw new ConnectError(`${path}${key} is longer than ${limit} characters`, Code.InvalidArgument);
    if (Array.isArray(value)) {
      if (value.length > MAX_REPEATED)
        throw new ConnectError(`${path}${key} has more than ${MAX_REPEATED} items`, Code.InvalidArgument);
      value.forEach((item: unknown, i) => {
        if (typeof item === "string" && item.length > limit)
          throw new ConnectError(`${path}${key}[${i}] is longer than ${limit} characters`, Code.InvalidArgument);
        if (item !== null && typeof item === "object") checkFieldLengths(item, `${path}${key}[${i}].`);
      });
    } else if (value !== null && typeof value === "object") checkFieldLengths(value, `${path}${key}.`);
  }
}

/** Applies the field limits to every unary request. */
const fieldLimits: Interceptor = (next) => async (req) => {
  if (!req.stream) checkFieldLengths(req.message);
  return next(req);
};

let handlers: Map<string, UniversalHandler> | undefined;

/** The connect handlers by path, built once per isolate (DESIGN: no router built per request). */
function rpcHandlers(): Map<string, UniversalHandler> {
  if (!handlers) {
    const router = createConnectRouter({
      grpc: false,
      grpcWeb: true,
      connect: true,
      readMaxBytes: MAX_MESSAGE_BYTES,
      interceptors: [fieldLimits],
    });
    routes(router);
    handlers = new Map(router.handlers.map((h) => [h.requestPath, h]));
  }
  return handlers;
}

const ANONYMOUS = "/licensing.v1.Authentication/Authenticate";
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
  const joined = new Uint8Array(bytes.reduce((n, b) => n + b.byteLength, 0));
  let at = 0;
  for (const b of bytes) {
    joined.set(b, at);
    at += b.byteLength;
  }
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
  const ctx = serviceContext(c);
  let principal: Principal | ApiError;
  try {
    principal = handler.requestPath === ANONYMOUS ? { kind: "bearer", roles: [] } : await authenticate(c, "either");
  } catch (e) {
    if (!(e instanceof ApiError)) throw e;
    principal = e;
  }
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
  universal.contextValues = createContextValues().set(callKey, { ctx, client: clientInfo(c), principal });
  const response = universalServerResponseToFetch(await handler(universal));
  return text ? textResponse(response) : response;
}

/** Mounts every gRPC method at its path (outside the OpenAPI document). */
export function registerRpc(app: Router): void {
  for (const [path, handler] of rpcHandlers()) app.post(path, (c) => serve(c, handler));
}
