/**
 * Verifying what the service signed with its ES256 keys (CONTRACT sections 4 and 5): update-check data (a P1363
 * signature over the RFC 8785 canonical JSON) and license keys (compact JWS). Only WebCrypto and jose, so it runs
 * wherever the application runs, offline included.
 */
import { createLocalJWKSet, errors as joseErrors, jwtVerify } from "jose";
import { ProtocolError, VerificationError } from "./errors.js";
import { canonicalize } from "./jcs.js";
import type { JwkSet, LicenseKeyPayload, PublicJwk } from "./types.js";
import { licenseStatus, licenseType, licensingMode, object, optNum, optStr, str, strings } from "./wire.js";

/** The bytes of standard (or URL-safe) base64; `undefined` when the text is not base64. */
export function base64ToBytes(text: string): Uint8Array<ArrayBuffer> | undefined {
  const normalized = text.replace(/-/g, "+").replace(/_/g, "/").replace(/\s+/g, "");
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(normalized)) return undefined;
  let binary: string;
  try {
    binary = atob(normalized);
  } catch {
    return undefined;
  }
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}

/** The published key with this `kid`, when it is an ES256 (P-256) key. */
export function findSigningKey(jwks: JwkSet, keyId: string): PublicJwk | undefined {
  return jwks.keys.find(
    (k) => k.kid === keyId && k.kty === "EC" && k.crv === "P-256" && typeof k.x === "string" && typeof k.y === "string",
  );
}

/**
 * Checks an ES256 signature over the canonical JSON of `data`: `signature` is standard base64 of the 64-byte IEEE
 * P1363 (r||s) form, `keyId` the `kid` of a key in `jwks`. Throws a {@link VerificationError} (`unknownKey` or
 * `signature`) unless it verifies.
 */
export async function verifyDataSignature(
  data: unknown,
  signature: string,
  keyId: string,
  jwks: JwkSet,
): Promise<void> {
  const jwk = findSigningKey(jwks, keyId);
  if (!jwk) throw new VerificationError("unknownKey", `No published P-256 key has the id ${keyId}`);
  const bytes = base64ToBytes(signature);
  // P1363 ES256 is exactly r||s of 32 bytes each; DER or truncated signatures are refused, not guessed at.
  if (bytes?.length !== 64) throw new VerificationError("signature", "The signature is not 64 bytes of base64");
  let message: Uint8Array<ArrayBuffer>;
  try {
    // Copied into a fresh buffer: the platforms' TextEncoder typings differ on the buffer type WebCrypto accepts.
    message = new Uint8Array(new TextEncoder().encode(canonicalize(data)));
  } catch (error) {
    throw new VerificationError("signature", "The signed data cannot be canonicalized", error);
  }
  let valid: boolean;
  try {
    const key = await crypto.subtle.importKey(
      "jwk",
      { kty: "EC", crv: "P-256", x: jwk.x, y: jwk.y, ext: true },
      { name: "ECDSA", namedCurve: "P-256" },
      false,
      ["verify"],
    );
    valid = await crypto.subtle.verify({ name: "ECDSA", hash: "SHA-256" }, key, bytes, message);
  } catch (error) {
    throw new VerificationError(
      "signature",
      `The key ${keyId} cannot verify: ${error instanceof Error ? error.message : String(error)}`,
      error,
    );
  }
  if (!valid) throw new VerificationError("signature", "The signature does not match the data");
}

/** Options of {@link verifyLicenseOffline}. */
export interface OfflineVerificationOptions {
  /** The time to check expiry against (default: now). A client that distrusts the local clock passes the last `serverTime`. */
  now?: Date;
  /** Seconds of clock skew to tolerate on `exp` (default 0). */
  clockToleranceSeconds?: number;
  /** When given, a key issued for another product (or naming none) is refused (`product`). */
  productCode?: string;
  /**
   * This machine. A key issued to another machine is refused (`machine`), and so is an Activation or Floating key
   * that names no machine: those modes prove a use on one machine only. A File key without a machine passes.
   */
  machineId?: string;
  /** When given, the key must echo this nonce (`nonce`): the answer is fresh, not replayed by another server. */
  nonce?: string;
}

function payloadFromClaims(claims: unknown): LicenseKeyPayload {
  const o = object(claims, "license key payload");
  const iat = optNum(o, "iat", "payload");
  if (iat === undefined) throw new ProtocolError("payload.iat is missing");
  return {
    licenseId: str(o, "licenseId", "payload"),
    productCode: optStr(o, "productCode", "payload"),
    licenseType: licenseType(o["licenseType"], "payload.licenseType"),
    edition: optStr(o, "edition", "payload"),
    features: strings(o, "features", "payload"),
    expireAt: optStr(o, "expireAt", "payload"),
    supportExpireAt: optStr(o, "supportExpireAt", "payload"),
    licensingMode:
      o["licensingMode"] === undefined || o["licensingMode"] === null
        ? undefined
        : licensingMode(o["licensingMode"], "payload.licensingMode"),
    status:
      o["status"] === undefined || o["status"] === null ? undefined : licenseStatus(o["status"], "payload.status"),
    machineId: optStr(o, "machineId", "payload"),
    clientId: optStr(o, "clientId", "payload"),
    nonce: optStr(o, "nonce", "payload"),
    iat,
    exp: optNum(o, "exp", "payload"),
    offlineGraceDays: optNum(o, "offlineGraceDays", "payload"),
  };
}

/**
 * Verifies a license key (the compact JWS of `license.licenseKey`) against a JWK Set, such as the one
 * `GET /v1/extensions/keys` published and the application stored: the ES256 signature by the key the header's `kid`
 * names, `exp`, and the license's own `expireAt`. Returns the typed payload (enumerations as names). Throws a
 * {@link VerificationError} saying why it does not verify.
 */
export async function verifyLicenseOffline(
  licenseKey: string,
  jwks: JwkSet,
  options: OfflineVerificationOptions = {},
): Promise<LicenseKeyPayload> {
  const now = options.now ?? new Date();
  let claims: unknown;
  try {
    const result = await jwtVerify(licenseKey, createLocalJWKSet(jwks), {
      algorithms: ["ES256"],
      currentDate: now,
      clockTolerance: options.clockToleranceSeconds ?? 0,
    });
    claims = result.payload;
  } catch (error) {
    if (error instanceof joseErrors.JWTExpired)
      throw new VerificationError("expired", "The license key has expired", error);
    if (error instanceof joseErrors.JWKSNoMatchingKey || error instanceof joseErrors.JWKSMultipleMatchingKeys) {
      throw new VerificationError("unknownKey", "No published key matches the license key's kid", error);
    }
    if (error instanceof joseErrors.JWSSignatureVerificationFailed) {
      throw new VerificationError("signature", "The license key's signature does not verify", error);
    }
    throw new VerificationError(
      "malformed",
      `The license key is not valid: ${error instanceof Error ? error.message : String(error)}`,
      error,
    );
  }
  let payload: LicenseKeyPayload;
  try {
    payload = payloadFromClaims(claims);
  } catch (error) {
    throw new VerificationError(
      "malformed",
      `The license key's payload is not a license: ${error instanceof Error ? error.message : String(error)}`,
      error,
    );
  }
  if (payload.expireAt !== undefined) {
    const expireAt = Date.parse(payload.expireAt);
    if (Number.isNaN(expireAt))
      throw new VerificationError("malformed", `payload.expireAt is not a date: ${payload.expireAt}`);
    const tolerance = (options.clockToleranceSeconds ?? 0) * 1000;
    if (expireAt + tolerance <= now.getTime())
      throw new VerificationError("expired", `The license expired at ${payload.expireAt}`);
  }
  if (options.productCode !== undefined && payload.productCode !== options.productCode) {
    throw new VerificationError(
      "product",
      `The license key is for product ${payload.productCode ?? "(none)"}, not ${options.productCode}`,
    );
  }
  if (options.machineId !== undefined) {
    // Activation and Floating keys prove a use on one machine: one naming no machine proves nothing for this one.
    const needsMachine = payload.licensingMode === "Activation" || payload.licensingMode === "Floating";
    if (payload.machineId === undefined ? needsMachine : payload.machineId !== options.machineId) {
      throw new VerificationError(
        "machine",
        payload.machineId === undefined
          ? "The license key names no machine"
          : "The license key was issued to another machine",
      );
    }
  }
  if (options.nonce !== undefined && payload.nonce !== options.nonce) {
    throw new VerificationError(
      "nonce",
      "The license key does not echo this request's nonce: it is not the answer to this request",
    );
  }
  return payload;
}
