/**
 * Every response body leaves through here: the success envelope, the error envelope, problem details, JSON or TOON
 * by `Accept`, and SPEC's serialization rules (null properties omitted while Application:IgnoreJSonDefaultValues).
 */
import { encode as encodeToon } from "@toon-format/toon";
import type { Context, TypedResponse } from "hono";
import { HTTPException } from "hono/http-exception";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import type { ZodError } from "zod";
import type { AppEnv } from "./app-env";
import { ConfigError } from "../kernel/config";
import { ApiError, LicensingError, RefusalError, ValidationProblem } from "../kernel/errors";
import { logFailure } from "./request-log";

export const TOON_TYPE = "application/toon";

/** Removes null and undefined properties recursively (SPEC wire conventions: null values are omitted). */
export function omitNulls(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(omitNulls);
  if (value !== null && typeof value === "object" && !(value instanceof Date)) {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) if (v !== null && v !== undefined) out[k] = omitNulls(v);
    return out;
  }
  return value;
}

function wantsToon(c: Context): boolean {
  return (c.req.header("accept") ?? "").toLowerCase().includes(TOON_TYPE);
}

/**
 * Sends `body` as JSON, or TOON when the client asked for it with `Accept: application/toon`. Typed like `c.json`
 * so routes keep their OpenAPI response types.
 */
export function send<T extends object, S extends ContentfulStatusCode = 200>(
  c: Context<AppEnv>,
  body: T,
  status?: S,
  headers: Record<string, string> = {},
): Response & TypedResponse<T, S, "json"> {
  const config = c.get("config");
  const wire = config === undefined || config["Application:IgnoreJSonDefaultValues"] ? omitNulls(body) : body;
  const toon = wantsToon(c);
  const text = toon ? encodeToon(wire) : JSON.stringify(wire);
  return new Response(text, {
    status: status ?? 200,
    headers: { "Content-Type": toon ? `${TOON_TYPE}; charset=utf-8` : "application/json; charset=utf-8", ...headers },
  }) as Response & TypedResponse<T, S, "json">;
}

/** How a success envelope is written. */
export interface EnvelopeOptions {
  /** false: no `code` (SPEC: webhook responses carry only success and message plus their data). */
  code: false;
}

/**
 * The success envelope of SPEC ("code repeats the HTTP status; 0 in successful samples") plus the route's data;
 * with `{ code: false }` the webhook routes' envelope, `success` and `message` plus their data.
 */
export function ok<T extends object, S extends ContentfulStatusCode = 200>(
  c: Context<AppEnv>,
  data: T,
  status?: S,
): Response & TypedResponse<{ success: true; code: 0; message?: string } & T, S, "json">;
export function ok<T extends object, S extends ContentfulStatusCode = 200>(
  c: Context<AppEnv>,
  data: T,
  status: S | undefined,
  options: EnvelopeOptions,
): Response & TypedResponse<{ success: true; message?: string } & T, S, "json">;
export function ok<T extends object, S extends ContentfulStatusCode = 200>(
  c: Context<AppEnv>,
  data: T,
  status?: S,
  options?: EnvelopeOptions,
) {
  return send(c, { success: true as const, ...(options?.code === false ? {} : { code: 0 as const }), ...data }, status);
}

/** The error envelope `{success:false, code, message}`; an ApiError without message has an empty body. */
export function errorResponse(c: Context<AppEnv>, error: ApiError): Response {
  if (error.message === "") return new Response(null, { status: error.status, headers: error.headers });
  // A licensing or sign-in refusal adds its machine-readable reason (additive to SPEC's envelope).
  const reason = error.reason ? { reason: error.reason } : {};
  const res = send(
    c,
    { success: false, code: error.status, message: error.message, ...reason, ...error.details },
    error.status as ContentfulStatusCode,
  );
  for (const [k, v] of Object.entries(error.headers)) res.headers.set(k, v);
  return res;
}

/** Problem details (RFC 9457) for unreadable or invalid requests: SPEC error shape 2. */
export function problemResponse(c: Context<AppEnv>, problem: ValidationProblem): Response {
  const body = {
    type: "https://tools.ietf.org/html/rfc9110#section-15.5.1",
    title: problem.title,
    status: 400,
    errors: problem.errors,
    traceId: c.get("requestId"),
  };
  return new Response(JSON.stringify(body), {
    status: 400,
    headers: { "Content-Type": "application/problem+json; charset=utf-8" },
  });
}

/** Converts zod issues to the problem-details `errors` map: property path -> messages. */
export function zodProblem(error: ZodError): ValidationProblem {
  const errors: Record<string, string[]> = {};
  for (const issue of error.issues) {
    const path = issue.path
      .map((p) => (typeof p === "number" ? `[${p}]` : String(p)))
      .join(".")
      .replaceAll(".[", "[");
    (errors[path] ??= []).push(issue.message);
  }
  return new ValidationProblem(errors);
}

// A high surrogate without a low one after it, or a low one without a high one before it.
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** Paths (problem-details form) of the strings and property names in a JSON value that hold a lone surrogate. */
export function loneSurrogatePaths(value: unknown, path = ""): string[] {
  if (typeof value === "string") return LONE_SURROGATE.test(value) ? [path] : [];
  if (Array.isArray(value)) return value.flatMap((item, i) => loneSurrogatePaths(item, `${path}[${i}]`));
  if (value === null || typeof value !== "object") return [];
  return Object.entries(value).flatMap(([key, item]) => {
    const at = path ? `${path}.${key}` : key;
    return LONE_SURROGATE.test(key) ? [at] : loneSurrogatePaths(item, at);
  });
}

/**
 * The zod-openapi hook: schema violations in body, query or path become problem details. A JSON body is also
 * refused when a string holds a lone surrogate (`"\ud800"` is valid JSON): D1 and the HMACs see UTF-8, where it
 * becomes U+FFFD, so the service would store, compare and sign something other than what the client sent.
 */
export function validationHook(result: { success: boolean; error?: ZodError; data?: unknown; target: string }): void {
  if (!result.success && result.error) throw zodProblem(result.error);
  if (result.success && result.target === "json") {
    const paths = loneSurrogatePaths(result.data);
    if (paths.length > 0)
      throw new ValidationProblem(
        Object.fromEntries(paths.map((p) => [p, ["The text holds a lone UTF-16 surrogate, which UTF-8 cannot carry"]])),
      );
  }
}

/**
 * `app.onError`: the one place where thrown errors become responses. A 5xx answer is also written to the service
 * log (after the response); licensing errors (520 + gRPC code) are answers about a license, not failures.
 */
export function renderError(err: Error, c: Context<AppEnv>): Response {
  const answer = answerFor(err, c);
  return answer instanceof ValidationProblem ? problemResponse(c, answer) : errorResponse(c, answer);
}

/**
 * What the client is told of `err`: the ApiError (status, message, reason) or the problem details; a 5xx that is no
 * refusal is written to the service log. renderError's, and the gRPC services' (routes/rpc/interceptors.ts `errors`, which
 * turn the answer into a gRPC status).
 */
export function answerFor(err: Error, c: Context<AppEnv>): ApiError | ValidationProblem {
  const answer = errorAnswer(err, c);
  const status = answer instanceof ApiError ? answer.status : 400;
  if (status >= 500 && !(err instanceof LicensingError) && !(err instanceof RefusalError))
    logFailure(c, err, status, logMessage(err));
  return answer;
}

/** The log message of a failure: the client's message for ApiError, the error's own otherwise. */
function logMessage(err: Error): string {
  if (err instanceof ApiError || err instanceof ConfigError) return err.message;
  return `Unhandled error: ${err.message || err.name}`;
}

function errorAnswer(err: Error, c: Context<AppEnv>): ApiError | ValidationProblem {
  if (err instanceof ApiError || err instanceof ValidationProblem) return err;
  if (err instanceof HTTPException) {
    // Hono's own: malformed JSON (400) is a problem-details case; 415 and others keep their status.
    if (err.status === 400) return new ValidationProblem({ "": [err.message] });
    return new ApiError(err.status, err.message || "Request refused");
  }
  if (err instanceof ConfigError) {
    console.error(err.message);
    return new ApiError(500, err.message);
  }
  console.error("Unhandled error", c.get("requestId"), err);
  return new ApiError(500, `An unexpected error occurred. See the service log for request ${c.get("requestId") ?? ""}`);
}
