/**
 * `@licensing/client`: the client library protected applications embed to talk to the licensing service over REST or
 * gRPC-Web. Start with {@link LicensingClient}; verify license keys offline with {@link verifyLicenseOffline}.
 */
export { LicensingClient, type LicensingClientOptions } from "./client.js";
export { FloatingSeat, type SeatOptions, type SeatState } from "./seat.js";
export {
  AuthenticationError,
  LicensingClientError,
  LicensingCode,
  LicensingError,
  NetworkError,
  ProtocolError,
  ServiceError,
  VerificationError,
  type LicensingReason,
  type VerificationFailure,
  errorFromGrpc,
  errorFromRest,
  isLicensingCode,
} from "./errors.js";
export { canonicalize, type JsonValue } from "./jcs.js";
export { dateFromIso, dateFromTimestamp, timestampFromDateValue } from "./timestamps.js";
export { type OfflineVerificationOptions, verifyDataSignature, verifyLicenseOffline } from "./verify.js";
export {
  type LicenseEntitlements,
  type LicenseFile,
  type LicenseFileOptions,
  LICENSE_FILE_TYPE,
  verifyLicenseFile,
} from "./license-file.js";
export {
  type ActivationRequest,
  type ActivationRequestInput,
  type ActivationResponseOptions,
  createActivationRequest,
  verifyActivationResponse,
} from "./air-gap.js";
export { qrCodeSvg } from "./qr.js";
export {
  COMPACT_RESPONSE_CODE_PREFIX,
  type CompactResponse,
  OfflineCodeError,
  type OfflineCodeProblem,
  type OfflineRequest,
  REQUEST_CODE_PREFIX,
  RESPONSE_CODE_PREFIX,
  type ResponseCode,
  compactResponseSigningInput,
  decodeCompactResponse,
  decodeRequestCode,
  decodeResponseCode,
  encodeCompactResponse,
  encodeCompactResponseCode,
  encodeRequestCode,
  encodeResponseCode,
  readResponseCode,
  shortHash,
} from "./offline-codes.js";
export {
  type GraceResult,
  OfflineGrace,
  OfflineGraceError,
  type OfflineGraceFailure,
  type OfflineGraceOptions,
  type ValidationStore,
  isUnreachable,
  memoryStore,
} from "./grace.js";
export type { FetchFunction, LicensingTransport, WireFactory } from "./transport.js";
export type * from "./types.js";
