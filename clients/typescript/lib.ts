/**
 * What the TypeScript interop program (interop.ts) and the vector runner (vectors.ts) share: the client package's
 * checks of a signed validation, a signed update check, a license file and an air-gap response, each returning what
 * CONTRACT 14 and clients/vectors/README.md say a client reports, and the refusal code of any error.
 */
import {
  type JwkSet,
  LicensingError,
  NetworkError,
  OfflineCodeError,
  OfflineGraceError,
  ProtocolError,
  ServiceError,
  VerificationError,
  verifyActivationResponse,
  verifyDataSignature,
  verifyLicenseFile,
  verifyLicenseOffline,
} from "../../client/src/index.ts";
import { updateCheckDataFromJson } from "../../client/src/updates.ts";

/** A refusal: its CONTRACT 14 code and a message for a person. */
export interface Refusal {
  code: string;
  message: string;
}

/** The CONTRACT 14 refusal code of an error the client package threw (clients/vectors/README.md, its table). */
export function refusalOf(error: unknown): Refusal {
  const message = error instanceof Error ? error.message : String(error);
  if (error instanceof VerificationError) return { code: error.reason, message };
  if (error instanceof OfflineGraceError) {
    const code = error.reason === "clock" || error.reason === "expired" ? error.reason : "grace";
    return { code, message };
  }
  if (error instanceof OfflineCodeError || error instanceof ProtocolError || error instanceof TypeError)
    return { code: "malformed", message };
  if (error instanceof NetworkError) return { code: "network", message };
  if (error instanceof LicensingError) return { code: error.reason ?? `grpc${error.grpcCode}`, message };
  if (error instanceof ServiceError) return { code: `http${error.httpStatus ?? error.grpcCode ?? ""}`, message };
  return { code: "malformed", message };
}

const record = (value: unknown, what: string): Record<string, unknown> => {
  if (typeof value !== "object" || value === null || Array.isArray(value))
    throw new VerificationError("malformed", `${what} is not a JSON object`);
  return value as Record<string, unknown>;
};

/** The checks a caller asks for (absent: not checked). */
export interface CheckParams {
  machineId?: string;
  productCode?: string;
  userKey?: string;
  clientId?: string;
  nonce?: string;
  now?: Date;
  lastSeen?: Date;
}

/** A signed validation answer (`POST /v1/license/validate`'s body): its license key verified, what it proves. */
export async function checkValidation(answerValue: unknown, jwks: JwkSet, params: CheckParams) {
  const answer = record(answerValue, "The validation answer");
  const license = record(answer["license"], "The validation answer's license");
  const licenseKey = license["licenseKey"];
  if (typeof licenseKey !== "string")
    throw new VerificationError("malformed", "The validation answer carries no license key");
  const payload = await verifyLicenseOffline(licenseKey, jwks, {
    ...(params.now ? { now: params.now } : {}),
    ...(params.machineId !== undefined ? { machineId: params.machineId } : {}),
    ...(params.productCode !== undefined ? { productCode: params.productCode } : {}),
    ...(params.nonce !== undefined ? { nonce: params.nonce } : {}),
  });
  return {
    valid: true,
    licenseId: payload.licenseId,
    productCode: payload.productCode ?? null,
    machineId: payload.machineId ?? null,
    licensingMode: payload.licensingMode ?? null,
    status: payload.status ?? null,
    offlineGraceDays: payload.offlineGraceDays ?? 0,
    issuedAt: new Date(payload.iat * 1000).toISOString(),
    expiresAt: payload.exp === undefined ? null : new Date(payload.exp * 1000).toISOString(),
  };
}

/** A signed update check (`GET /v1/updates/{productCode}`'s body): signature verified, what it offers. */
export async function checkUpdate(answerValue: unknown, jwks: JwkSet) {
  const answer = record(answerValue, "The update check");
  const { data, signature, keyId } = answer;
  if (typeof data !== "object" || data === null || typeof signature !== "string" || typeof keyId !== "string")
    throw new ProtocolError("The update check has no data, signature or keyId");
  await verifyDataSignature(data, signature, keyId, jwks);
  const read = updateCheckDataFromJson(data);
  return {
    available: read.updateAvailable,
    version: read.release?.version ?? null,
    required: read.required,
    rollback: read.rollback,
  };
}

/** A license file's text: verified (and opened) offline. */
export async function checkLicenseFile(text: string, jwks: JwkSet, params: CheckParams) {
  if (params.machineId === undefined) throw new TypeError("A machine id is needed to verify a license file");
  const file = await verifyLicenseFile(text, {
    jwks,
    machineId: params.machineId,
    ...(params.productCode !== undefined ? { productCode: params.productCode } : {}),
    ...(params.userKey !== undefined ? { userKey: params.userKey } : {}),
    ...(params.clientId !== undefined ? { clientId: params.clientId } : {}),
    ...(params.nonce !== undefined ? { nonce: params.nonce } : {}),
    ...(params.now ? { now: params.now } : {}),
    ...(params.lastSeen ? { lastSeen: params.lastSeen } : {}),
  });
  return {
    licenseId: file.license.licenseId,
    machineId: file.machine.machineId,
    productCode: file.entitlements.productCode,
    expiresAt: file.expiresAt.toISOString(),
    encrypted: file.encrypted,
  };
}

/** An air-gap response code (LRS2 or LRS1) or license file, verified offline as the answer to the request of `nonce`. */
export async function checkAirgapResponse(code: string, jwks: JwkSet, params: CheckParams & { nonce: string }) {
  if (params.machineId === undefined) throw new TypeError("A machine id is needed to verify a response code");
  const file = await verifyActivationResponse(code, {
    jwks,
    machineId: params.machineId,
    nonce: params.nonce,
    ...(params.productCode !== undefined ? { productCode: params.productCode } : {}),
    ...(params.clientId !== undefined ? { clientId: params.clientId } : {}),
    ...(params.userKey !== undefined ? { userKey: params.userKey } : {}),
    ...(params.now ? { now: params.now } : {}),
    ...(params.lastSeen ? { lastSeen: params.lastSeen } : {}),
  });
  return {
    licenseId: file.license.licenseId,
    machineId: file.machine.machineId,
    productCode: file.entitlements.productCode,
    expiresAt: file.expiresAt.toISOString(),
  };
}
