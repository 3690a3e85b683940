/**
 * The service's errors. Handlers and services throw; `app.onError` (http/respond.ts) renders. SPEC "Errors" has
 * three body shapes: the service envelope `{success:false, code, message}`, problem details for unreadable or
 * invalid requests, and the update routes' envelope with ordinary statuses. Licensing errors carry their gRPC code
 * and answer HTTP 520 + that code.
 */

/** An error the client should see with this status and message. `message` empty = empty body (401/403 of auth). */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    /** Extra response headers, such as `WWW-Authenticate` or `Retry-After`. */
    readonly headers: Record<string, string> = {},
    /**
     * A stable, machine-readable name of a refusal (`licenseRevoked`, `invalidUserKey`) that applications switch on:
     * REST bodies carry it as `reason`, gRPC errors as the `licensing-reason` metadata entry.
     */
    readonly reason?: string,
    /** More machine-readable facts of the refusal, beside `reason` in the body (a signing refusal's expected, found). */
    readonly details?: Readonly<Record<string, unknown>>,
  ) {
    super(message);
  }
}

/**
 * A 5xx answer SPEC asks for that is no failure of the service (a login from a blocked IP answers 500): rendered
 * like any ApiError but not written to the service log, so a flood of refusals cannot grow it.
 */
export class RefusalError extends ApiError {}

/** 401 from the credential checks: empty body, `WWW-Authenticate` (SPEC: authorization failures have no body). */
export function unauthorized(scheme = "Bearer"): ApiError {
  return new ApiError(401, "", { "WWW-Authenticate": scheme });
}

/** 403 from the role and permission checks: empty body. */
export function forbidden(): ApiError {
  return new ApiError(403, "");
}

/** 400 naming a record that does not exist (CONTRACT section 2: `<Thing> <id> not found`). */
export function notFound400(thing: string, id: string | number): ApiError {
  return new ApiError(400, `${thing} ${id} not found`);
}

/** gRPC status codes used by licensing errors (SPEC "Errors", CONTRACT section 4). */
export const GrpcCode = {
  InvalidArgument: 3,
  NotFound: 5,
  AlreadyExists: 6,
  PermissionDenied: 7,
  ResourceExhausted: 8,
  FailedPrecondition: 9,
  Unauthenticated: 16,
  DataLoss: 15,
} as const;
export type GrpcCode = (typeof GrpcCode)[keyof typeof GrpcCode];

/**
 * A licensing error shared by REST (HTTP 520 + gRPC code) and gRPC (the code itself). `reason` is a stable,
 * machine-readable name of the refusal (`licenseRevoked`), sent beside SPEC's status and message: REST bodies carry
 * it as `reason`, gRPC errors as the `licensing-reason` metadata entry.
 */
export class LicensingError extends ApiError {
  constructor(
    readonly grpcCode: GrpcCode,
    message: string,
    reason?: string,
    headers: Record<string, string> = {},
  ) {
    super(520 + grpcCode, message, headers, reason);
  }
}

/** Problem details (RFC 9457) for requests that cannot be read or violate the schema: SPEC error shape 2. */
export class ValidationProblem extends Error {
  constructor(
    readonly errors: Record<string, string[]>,
    readonly title = "One or more validation errors occurred.",
  ) {
    super(title);
  }
}
