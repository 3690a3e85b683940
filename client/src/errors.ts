/**
 * The client's errors, one class per thing a caller reacts to differently:
 *
 * - {@link LicensingError}: the service refused the licensing operation (revoked, expired, limit reached…). Over REST
 *   it answered HTTP 520 + gRPC code with `{success:false, code, message}`; over gRPC-Web the gRPC status with the same
 *   message. Both transports raise the same error, so an application handles one shape.
 *   {@link AuthenticationError} is the subclass for a refused credential (a wrong user key is a licensing problem to
 *   the person who typed it).
 * - {@link ServiceError}: any other refusal (validation problem, 403, 404, 429, 5xx, an unexpected gRPC status).
 * - {@link NetworkError}: the service could not be reached; worth retrying, and a reason for an offline grace period.
 * - {@link ProtocolError}: an answer that does not follow the contract (wrong service, proxy error page…).
 * - {@link VerificationError}: a signature or license key that does not verify; never retry with the same data.
 */
import { Code, ConnectError } from "@connectrpc/connect";
import { explainNetworkFailure } from "./network.js";

/** gRPC status codes the licensing operations use (CONTRACT section 4), by name. */
export const LicensingCode = {
  InvalidArgument: 3,
  NotFound: 5,
  AlreadyExists: 6,
  PermissionDenied: 7,
  ResourceExhausted: 8,
  FailedPrecondition: 9,
  DataLoss: 15,
  Unauthenticated: 16,
} as const;
/** One of the gRPC status codes of {@link LicensingCode}. */
export type LicensingCode = (typeof LicensingCode)[keyof typeof LicensingCode];

const LICENSING_CODES: ReadonlySet<number> = new Set(Object.values(LicensingCode));

/** Whether a gRPC status code is one the licensing operations answer with. */
export function isLicensingCode(code: number): code is LicensingCode {
  return LICENSING_CODES.has(code);
}

/** Base class of every error this library throws; `instanceof LicensingClientError` catches them all. */
export class LicensingClientError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    // Subclasses name themselves, so logs and `error.name` checks say which failure it was.
    this.name = new.target.name;
  }
}

/**
 * The service refused a licensing operation. `grpcCode` is the gRPC status (3 InvalidArgument, 5 NotFound,
 * 6 AlreadyExists, 7 PermissionDenied, 8 ResourceExhausted, 9 FailedPrecondition, 15 DataLoss, 16 Unauthenticated),
 * `httpStatus` the REST status that goes with it (520 + code; 401 for a refused credential) whichever transport was
 * used, and `message` the service's message (SPEC "Errors", e.g. `The license has been revoked`).
 */
export class LicensingError extends LicensingClientError {
  /** The gRPC status code of the refusal. */
  readonly grpcCode: LicensingCode;
  /** The HTTP status of the refusal over REST (520 + `grpcCode`, 401 for {@link AuthenticationError}). */
  readonly httpStatus: number;
  /**
   * The service's machine-readable reason (REST body `reason`, gRPC metadata `licensing-reason`), to switch on
   * instead of the message: see {@link LicensingReason}. A refused sign-in has one too (`invalidUserKey`,
   * `licenseRevoked`, `licenseExpired`, `invalidLogin`); `undefined` when the service sent none (a refused API key or
   * bearer token).
   */
  readonly reason: LicensingReason | undefined;

  constructor(grpcCode: LicensingCode, message: string, httpStatus: number = 520 + grpcCode, reason?: string) {
    super(message);
    this.grpcCode = grpcCode;
    this.httpStatus = httpStatus;
    this.reason = reason as LicensingReason | undefined;
  }
}

/**
 * Why the service refused a licensing operation, as it names it. A newer service may send a name not listed here,
 * hence the open string.
 */
export type LicensingReason =
  | "invalidUserKey"
  | "machineIdRequired"
  | "clientIdRequired"
  | "licenseNotFound"
  | "licenseTokenNotFound"
  | "alreadyActivated"
  | "licenseRevoked"
  | "licenseExpired"
  | "licenseTokenExpired"
  | "wrongProduct"
  | "seatsExhausted"
  | "notActivated"
  | "notFloating"
  | "activationNotRequired"
  | "licenseTampered"
  | "licenseTokenTampered"
  | "invalidLogin"
  | (string & {});

/**
 * The credential was refused: a wrong user key (`Invalid user key.`), an unknown, revoked or expired API key or bearer
 * token, or none at all. REST answers 401, gRPC `Unauthenticated`.
 */
export class AuthenticationError extends LicensingError {
  constructor(message: string, httpStatus = 401, reason?: string) {
    super(LicensingCode.Unauthenticated, message, httpStatus, reason);
  }
}

/** Any other refusal by the service: problem details (400), 403, 404, 429, 5xx, or a gRPC status outside the licensing set. */
export class ServiceError extends LicensingClientError {
  /** The HTTP status, when the failure had one (REST, or a gRPC-Web answer that was not gRPC at all). */
  readonly httpStatus: number | undefined;
  /** The gRPC status code, over gRPC-Web. */
  readonly grpcCode: number | undefined;
  /** The body's extra detail: the `errors` of problem details, keyed by property path. */
  readonly details: Readonly<Record<string, readonly string[]>> | undefined;

  constructor(
    message: string,
    info: { httpStatus?: number; grpcCode?: number; details?: Record<string, string[]> } = {},
  ) {
    super(message);
    this.httpStatus = info.httpStatus;
    this.grpcCode = info.grpcCode;
    this.details = info.details;
  }
}

/**
 * The service could not be reached (DNS, TLS, connection refused, offline). The message names the cause and its fix
 * (`self-signed certificate: pass fetch: trustingFetch({ ca })…`); `code` is the platform's code for it
 * (`DEPTH_ZERO_SELF_SIGNED_CERT`, `CERT_HAS_EXPIRED`, `ECONNREFUSED`, Electron's `ERR_CERT_AUTHORITY_INVALID`…) when
 * it gave one; `cause` holds the platform's error.
 */
export class NetworkError extends LicensingClientError {
  /** The platform's code for the failure, found down `cause`, if any. */
  readonly code: string | undefined;

  constructor(message: string, cause: unknown, code?: string) {
    super(message, { cause });
    this.code = code;
  }
}

/** How an application makes the client trust a certificate (see `trustingFetch` in `@licensing/client/node`). */
const TRUST_HINT =
  "pass fetch: trustingFetch({ ca }) from @licensing/client/node or set NODE_EXTRA_CA_CERTS (Electron's net.fetch trusts the operating system's store)";

/** The {@link NetworkError} for a request to `url` whose fetch threw `error`: the cause named, with its fix. */
export function networkError(url: string, error: unknown): NetworkError {
  const failure = explainNetworkFailure(error, TRUST_HINT);
  return new NetworkError(`Could not reach ${url}: ${failure.message}`, error, failure.code);
}

/** The answer does not follow the contract: not JSON, a required field missing, an unknown enumeration value. */
export class ProtocolError extends LicensingClientError {}

/** Why a signature or license key did not verify. */
export type VerificationFailure =
  /** The signature does not match the data, or is not a valid signature at all. */
  | "signature"
  /** No published key has the id the signature names. */
  | "unknownKey"
  /** The license key is not a well-formed compact JWS, or its payload is not a license. */
  | "malformed"
  /** The license key's `exp` or the license's `expireAt` has passed. */
  | "expired"
  /** The license key was issued for another product than the one the caller expects. */
  | "product"
  /** The license key was issued for another machine than the one the caller expects, or names none where its mode needs one. */
  | "machine"
  /** The license key (or license file) does not echo the nonce the caller sent. */
  | "nonce"
  /** The computer's clock is earlier than a license file's issue time or than the last time the application saw: set back. */
  | "clock"
  /** An encrypted license file does not open: no user key given, or made for another machine or license. */
  | "decrypt";

/** A signature (update check) or license key (offline verification) did not verify. */
export class VerificationError extends LicensingClientError {
  /** What failed. */
  readonly reason: VerificationFailure;

  constructor(reason: VerificationFailure, message: string, cause?: unknown) {
    super(message, cause === undefined ? undefined : { cause });
    this.reason = reason;
  }
}

function asRecord(value: unknown): Record<string, unknown> | undefined {
  return typeof value === "object" && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : undefined;
}

/** The `errors` of a problem-details body, when it has a readable one. */
function problemErrors(body: Record<string, unknown>): Record<string, string[]> | undefined {
  const errors = asRecord(body["errors"]);
  if (!errors) return undefined;
  const out: Record<string, string[]> = {};
  for (const [path, messages] of Object.entries(errors)) {
    if (Array.isArray(messages)) out[path] = messages.filter((m): m is string => typeof m === "string");
  }
  return out;
}

/**
 * The error for a REST answer that was not a success: 520 + code -> {@link LicensingError}, 401 ->
 * {@link AuthenticationError}, anything else -> {@link ServiceError}. `body` is the parsed JSON body, if any: SPEC's
 * envelope `{success:false, code, message}` or problem details `{title, status, errors}`. 401 and 403 from the
 * credential checks have an empty body, so the status text stands in for the message.
 */
export function errorFromRest(status: number, body: unknown, statusText = ""): LicensingClientError {
  const record = asRecord(body) ?? {};
  const message =
    (typeof record["message"] === "string" && record["message"]) ||
    (typeof record["title"] === "string" && record["title"]) ||
    statusText ||
    `HTTP ${status}`;
  const reason = typeof record["reason"] === "string" ? record["reason"] : undefined;
  if (status === 401) return new AuthenticationError(message, status, reason);
  const code = status - 520;
  if (code === LicensingCode.Unauthenticated) return new AuthenticationError(message, status, reason);
  if (isLicensingCode(code)) return new LicensingError(code, message, status, reason);
  const details = problemErrors(record);
  return new ServiceError(message, {
    httpStatus: status,
    ...(code > 0 && code <= 16 ? { grpcCode: code } : {}),
    ...(details ? { details } : {}),
  });
}

/**
 * The error for a failed gRPC-Web call. A licensing status becomes a {@link LicensingError} with the REST status that
 * goes with it, so callers cannot tell the transports apart; a failure of the client's own making (a
 * {@link NetworkError} from the fetch wrapper, a {@link ProtocolError} from mapping) comes back unwrapped.
 */
export function errorFromGrpc(error: unknown): LicensingClientError {
  if (error instanceof LicensingClientError) return error;
  if (!(error instanceof ConnectError)) {
    return new ProtocolError(`gRPC-Web call failed: ${error instanceof Error ? error.message : String(error)}`, {
      cause: error,
    });
  }
  if (error.cause instanceof LicensingClientError) return error.cause;
  const message = error.rawMessage;
  const reason = error.metadata.get("licensing-reason") ?? undefined;
  if (error.code === Code.Unauthenticated) return new AuthenticationError(message, undefined, reason);
  if (isLicensingCode(error.code)) return new LicensingError(error.code, message, undefined, reason);
  return new ServiceError(message, { grpcCode: error.code });
}
