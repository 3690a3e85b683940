/**
 * The interceptors of every gRPC call, in the router's order (routes/rpc/router.ts), outermost first:
 *   errors          the one error path: whatever a call throws becomes its gRPC status, as REST's renderError
 *   authentication  the credential, checked once per call; the principal goes into the call's context
 *   fieldLimits     REST's field limits on the protobuf message
 * A service method reads its call (routes/rpc/call.ts) and checks nothing of the credential itself.
 */
import type { DescMethod } from "@bufbuild/protobuf";
import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";
import { authenticate } from "../../auth/guard";
import { INVALID_LOGIN } from "../../auth/sign-in";
import { ApiError, LicensingError } from "../../kernel/errors";
import { clientInfo, serviceContext, settleFirst } from "../../http/context";
import { heldFirstBatch } from "../../db/first-batch";
import { answerFor } from "../../http/respond";
import { MAX_REPORT_BYTES } from "../../licensing/report-store";
import { callKey, requestOf } from "./call";

/** A REST answer's status as a gRPC code (CONTRACT section 4). */
function codeOf(status: number): Code {
  if (status === 401) return Code.Unauthenticated;
  if (status === 403) return Code.PermissionDenied;
  if (status === 413 || status === 429) return Code.ResourceExhausted;
  return status < 500 ? Code.InvalidArgument : Code.Internal;
}

/**
 * The error of a call as its gRPC status: the error REST would answer (http/respond.ts `answerFor`, which also writes
 * a failure to the service log) with its message and its reason as `licensing-reason` metadata. A credential's
 * refusal (401/403 without a message) is Unauthenticated with SPEC's login message (CONTRACT section 7) or
 * PermissionDenied; a licensing error keeps its own code.
 */
function statusOf(error: Error, c: Parameters<typeof answerFor>[1]): ConnectError {
  if (error instanceof ConnectError) return error;
  const answer = answerFor(error, c);
  if (!(answer instanceof ApiError)) return new ConnectError(answer.title, Code.InvalidArgument);
  const code = answer instanceof LicensingError ? (answer.grpcCode as number as Code) : codeOf(answer.status);
  const message =
    answer.message ||
    (code === Code.Unauthenticated
      ? INVALID_LOGIN
      : code === Code.PermissionDenied
        ? "Permission denied"
        : "Request refused");
  return new ConnectError(message, code, answer.reason ? { "licensing-reason": answer.reason } : undefined);
}

/**
 * Outermost: every error of a call, thrown by the credential check, a service or another interceptor. A check still
 * waiting for the call's first D1 batch is settled first, so its refusal wins, as with REST (app.onError).
 */
export const errors: Interceptor = (next) => async (req) => {
  try {
    return await next(req);
  } catch (e) {
    const c = requestOf(req.contextValues);
    throw statusOf(await settleFirst(c, e instanceof Error ? e : new Error(String(e))), c);
  }
};

/**
 * The credential of every call but the `anonymous` methods': an API key or a bearer token (auth/guard.ts, as REST's
 * licensing routes). Checked once, before the service runs; the principal is in the call's service context. As for
 * REST, a bearer token's logout check and a cached API key's existence check ride in the call's first D1 batch
 * (db/first-batch.ts): a licensing call costs one round trip with either credential.
 */
export function authentication(anonymous: readonly DescMethod[]): Interceptor {
  const open = new Set(anonymous);
  return (next) => async (req) => {
    const c = requestOf(req.contextValues);
    const guarded = !open.has(req.method);
    if (guarded) c.set("principal", await authenticate(c, "either", undefined, { deferLogoutCheck: true }));
    req.contextValues.set(callKey, { ctx: serviceContext(c), client: clientInfo(c) });
    const res = await next(req);
    // A method that never batched still answers a logged-out token Unauthenticated (after the fact, never OK).
    if (guarded) await heldFirstBatch(c.get("db"))?.flush(c.get("db"));
    return res;
  };
}

/**
 * REST validates every licensing field at its edge (routes/licensing/licensing.ts: 256 characters, `version` 64, a
 * report's `content` 4 MiB, a property's `value` 4096, at most 1,000 properties); a protobuf message has no such
 * limits, so the same ones are checked here before a call reaches the services, which share them with REST.
 */
const FIELD_LIMITS: Readonly<Record<string, number>> = { version: 64, content: MAX_REPORT_BYTES, value: 4096 };
const DEFAULT_FIELD_LIMIT = 256;
const MAX_REPEATED = 1000;

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

/** The field limits on every unary request. */
export const fieldLimits: Interceptor = (next) => async (req) => {
  if (!req.stream) checkFieldLengths(req.message);
  return next(req);
};
