/**
 * License files (CONTRACT section 11): what `POST /v1/license/checkout`, a borrowed seat and the air-gapped
 * `/activate/` page hand an application to run offline. A file is a compact JWS (ES256, header `typ:
 * "license-file+jwt"`, `kid` of a key in the service's JWKS) whose payload names the license, its entitlements, the
 * machine, `issuedAt` and `expiresAt`; an encrypted file's payload is AES-256-GCM under a key derived (HKDF-SHA256)
 * from the license's user key and the machine id, so only that machine can read it. Verified here without the network,
 * as is an air-gapped response code (`LRS2-…`, client/src/offline-codes.ts): the same checks over its signed binary
 * layout, so an application may save either as its license file.
 */
import { compactVerify, createLocalJWKSet, errors as joseErrors } from "jose";
import { ProtocolError, VerificationError } from "./errors.js";
import { licenseFromJson } from "./rest.js";
import { dateFromIso } from "./timestamps.js";
import {
  COMPACT_HASH_BYTES,
  COMPACT_KEY_ID_BYTES,
  LICENSE_TYPE_NAMES,
  LICENSING_MODE_NAMES,
  type ResponseCode,
  readResponseCode,
  shortHash,
} from "./offline-codes.js";
import type { JwkSet, License, PublicJwk } from "./types.js";
import { base64ToBytes } from "./verify.js";
import { object, optStr, str, strings } from "./wire.js";

/** The JWS header `typ` of a license file. */
export const LICENSE_FILE_TYPE = "license-file+jwt";

/** The HKDF `info` of an encrypted license file's key. */
const ENCRYPTION_INFO = "license-file";

/** What a license grants, as a license file states it. */
export interface LicenseEntitlements {
  productCode: string;
  licenseType: string;
  edition?: string;
  features: string[];
  /** Machines (Activation mode) or seats (Floating); 0 = unlimited. */
  maxClients: number;
  /** When the license expires; `undefined` = perpetual. */
  expireAt?: Date;
  /** When maintenance (support and updates) ends. */
  supportExpireAt?: Date;
}

/** A verified license file's content. */
export interface LicenseFile {
  /** Format version: 1 for a license file (JWS), 2 for an `LRS2` response code. */
  v: number;
  /**
   * The license as validate answers it (dates as `Date`, enumerations as names). From an `LRS2` response code: without
   * `licensee`, which the code does not carry.
   */
  license: License;
  /** What the license grants, for the application to enforce offline. */
  entitlements: LicenseEntitlements;
  /**
   * The machine (and client) the file is bound to. An `LRS2` response code holds their hashes: `machineId` is the one
   * checked, and `clientId` the option's when the code names a client and it matched.
   */
  machine: { machineId: string; clientId?: string };
  /** When the service issued the file (its clock). */
  issuedAt: Date;
  /** When the file stops being valid. */
  expiresAt: Date;
  /** The nonce of the request it answers (air-gapped activation; from an `LRS2` code, the option's when it matched). */
  nonce?: string;
  /** For a borrowed floating seat: when the borrow ends. */
  borrow?: { until: Date };
  /** Whether the file was encrypted (and so opened with the user key and machine id). */
  encrypted: boolean;
  /** The `kid` of the key that signed it. */
  keyId: string;
}

/** Options of {@link verifyLicenseFile}. */
export interface LicenseFileOptions {
  /** The service's JWK Set (`GET /v1/extensions/keys` or `/.well-known/jwks.json`), stored with the application. */
  jwks: JwkSet;
  /** This machine: a file issued to another one is refused (`machine`), and an encrypted one does not open. */
  machineId: string;
  /** When given, a file of another product's license is refused (`product`). */
  productCode?: string;
  /** This client, when the application uses one: a file naming another client is refused (`machine`). */
  clientId?: string;
  /** The time to check against (default: the computer's clock). */
  now?: Date;
  /**
   * The latest time the application has seen (kept by the application, e.g. in its settings, and raised each run):
   * a clock earlier than it was set back, and the file is refused (`clock`).
   */
  lastSeen?: Date;
  /** The license's user key: needed to open an encrypted file. */
  userKey?: string;
  /** When given, the file must name this nonce (`nonce`): the answer to this request, not an older one. */
  nonce?: string;
  /**
   * Seconds the computer's clock may be behind the service's before an issue time in the future counts as a clock
   * set back (default 300). Expiry is checked exactly.
   */
  clockSkewSeconds?: number;
}

/** The entitlements of a file's payload (dates as `Date`, absent members undefined). */
function entitlementsFromJson(value: unknown): LicenseEntitlements {
  const o = object(value, "entitlements");
  const max = o["maxClients"];
  if (typeof max !== "number") throw new ProtocolError("entitlements.maxClients is missing or not a number");
  return {
    productCode: str(o, "productCode", "entitlements"),
    licenseType: str(o, "licenseType", "entitlements"),
    edition: optStr(o, "edition", "entitlements"),
    features: strings(o, "features", "entitlements"),
    maxClients: max,
    expireAt: dateFromIso(o["expireAt"], "entitlements.expireAt"),
    supportExpireAt: dateFromIso(o["supportExpireAt"], "entitlements.supportExpireAt"),
  };
}

/** The compact JWS of a license file given as the file's text, or as the checkout answer's `data`. */
function compactOf(file: string | { licenseFile: string }): string {
  const text = typeof file === "string" ? file : file?.licenseFile;
  if (typeof text !== "string") throw new VerificationError("malformed", "The license file is not text");
  return text.trim();
}

const utf8 = (value: string): Uint8Array<ArrayBuffer> => new Uint8Array(new TextEncoder().encode(value));

function record(value: unknown): Record<string, unknown> | undefined {
  return typeof value === "object" && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : undefined;
}

/** An ISO date member, or a `malformed` refusal naming it. */
function dateMember(o: Record<string, unknown>, key: string, what = "license file"): Date {
  const value = o[key];
  const ms = typeof value === "string" ? Date.parse(value) : Number.NaN;
  if (Number.isNaN(ms)) throw new VerificationError("malformed", `The ${what}'s ${key} is not a date`);
  return new Date(ms);
}

/**
 * A user key as the service compares it (Crockford base32 as people type it): upper case, without spaces and dashes,
 * I and L read as 1, O as 0. The service's rule (src/licensing/user-key.ts compactUserKey), restated because this
 * package ships alone; test/node/offline-client.test.ts opens files the service encrypted with keys typed otherwise.
 */
export function compactUserKey(typed: string): string {
  return typed
    .toUpperCase()
    .replace(/[\s-]+/g, "")
    .replace(/[IL]/g, "1")
    .replace(/O/g, "0");
}

/**
 * The key an encrypted file is sealed with: HKDF-SHA256(ikm = the user key in its compact form, salt = machine id,
 * info = "license-file").
 */
async function fileKey(userKey: string, machineId: string): Promise<CryptoKey> {
  const ikm = await crypto.subtle.importKey("raw", utf8(compactUserKey(userKey)), "HKDF", false, ["deriveKey"]);
  return crypto.subtle.deriveKey(
    { name: "HKDF", hash: "SHA-256", salt: utf8(machineId), info: utf8(ENCRYPTION_INFO) },
    ikm,
    { name: "AES-GCM", length: 256 },
    false,
    ["decrypt"],
  );
}

/** The plain payload of an encrypted one (`{v, enc: "A256GCM", iv, ciphertext}`). */
async function decrypt(sealed: Record<string, unknown>, options: LicenseFileOptions): Promise<unknown> {
  if (sealed["enc"] !== "A256GCM")
    throw new VerificationError(
      "malformed",
      `The license file is encrypted with ${String(sealed["enc"])}, not A256GCM`,
    );
  if (options.userKey === undefined)
    throw new VerificationError("decrypt", "The license file is encrypted: pass the license's userKey to open it");
  const iv = typeof sealed["iv"] === "string" ? base64ToBytes(sealed["iv"]) : undefined;
  const ciphertext = typeof sealed["ciphertext"] === "string" ? base64ToBytes(sealed["ciphertext"]) : undefined;
  if (!iv || !ciphertext)
    throw new VerificationError("malformed", "The encrypted license file has no iv or ciphertext");
  let plain: ArrayBuffer;
  try {
    const key = await fileKey(options.userKey, options.machineId);
    plain = await crypto.subtle.decrypt({ name: "AES-GCM", iv }, key, ciphertext);
  } catch (error) {
    throw new VerificationError(
      "decrypt",
      "The encrypted license file does not open with this machine id and user key: it was made for another machine or license",
      error,
    );
  }
  try {
    return JSON.parse(new TextDecoder().decode(plain));
  } catch (error) {
    throw new VerificationError("malformed", "The decrypted license file is not JSON", error);
  }
}

/**
 * Verifies a license file offline and returns its content: the ES256 signature by a key of `jwks` (`unknownKey`,
 * `signature`), its type (`malformed`), opening it when encrypted (`decrypt`), the machine and client (`machine`),
 * the nonce when given (`nonce`), the clock (`clock`: the computer's clock is earlier than the file's issue time or
 * than `lastSeen`, i.e. it was set back), and its lifetime and the license's expiry (`expired`). Each refusal is a
 * {@link VerificationError} whose `reason` names it and whose message says it for a person.
 *
 * A response code of air-gapped activation is taken too (what `verifyActivationResponse` returns as `licenseFile`
 * for an `LRS2` code): the same checks over its signed layout; a code that does not read is an `OfflineCodeError`.
 */
export async function verifyLicenseFile(
  file: string | { licenseFile: string },
  options: LicenseFileOptions,
): Promise<LicenseFile> {
  const text = compactOf(file);
  if (!/^LR[A-Z]\d/i.test(text)) return verifySignedFile(text, options);
  const read = readResponseCode(text);
  return read.version === 1 ? verifySignedFile(read.licenseFile, options) : verifyCompactResponse(read, options);
}

const sameBytes = (a: Uint8Array, b: Uint8Array): boolean => a.length === b.length && a.every((x, i) => x === b[i]);

/** The keys of the JWKS an `LRS2` code's key id names (the first bytes of SHA-256 of their `kid`). */
async function keysNamed(jwks: JwkSet, keyId: Uint8Array): Promise<PublicJwk[]> {
  const named: PublicJwk[] = [];
  for (const jwk of jwks.keys ?? []) {
    if (typeof jwk.kid !== "string" || jwk.kty !== "EC" || jwk.crv !== "P-256") continue;
    if (sameBytes(await shortHash(jwk.kid, COMPACT_KEY_ID_BYTES), keyId)) named.push(jwk);
  }
  return named;
}

/** Whether a P-256 key signed the bytes (ES256, r||s); false for a key WebCrypto does not import. */
async function signedBy(jwk: PublicJwk, signature: Uint8Array<ArrayBuffer>, bytes: Uint8Array<ArrayBuffer>) {
  let key: CryptoKey;
  try {
    key = await crypto.subtle.importKey(
      "jwk",
      { kty: "EC", crv: "P-256", x: jwk.x, y: jwk.y },
      { name: "ECDSA", namedCurve: "P-256" },
      false,
      ["verify"],
    );
  } catch {
    return false;
  }
  return crypto.subtle.verify({ name: "ECDSA", hash: "SHA-256" }, key, signature, bytes);
}

/**
 * An `LRS2` response code's checks (docs/reference/offline-codes.md): the signature by the key its key id names
 * (`unknownKey`, `signature`), this machine's and client's hashes (`machine`), the nonce's when given (`nonce`), then
 * those of every file (product, clock, expiry). Its content as a {@link LicenseFile} of version 2.
 */
async function verifyCompactResponse(
  read: Extract<ResponseCode, { version: 2 }>,
  options: LicenseFileOptions,
): Promise<LicenseFile> {
  const code = read.response;
  const named = await keysNamed(options.jwks, code.keyId);
  if (named.length === 0)
    throw new VerificationError(
      "unknownKey",
      "The response code is signed by a key this application does not know (not in its JWKS)",
    );
  let signer: PublicJwk | undefined;
  for (const jwk of named) {
    if (!(await signedBy(jwk, read.signature, read.signed))) continue;
    signer = jwk;
    break;
  }
  if (!signer)
    throw new VerificationError("signature", "The response code's signature does not verify: it was altered");

  const hash = (text: string) => shortHash(text, COMPACT_HASH_BYTES);
  if (!sameBytes(await hash(options.machineId), code.machine))
    throw new VerificationError("machine", "The response code was issued to another machine");
  const clientMatched = code.client !== undefined && options.clientId !== undefined;
  if (clientMatched && !sameBytes(await hash(options.clientId as string), code.client as Uint8Array))
    throw new VerificationError("machine", "The response code was issued to another client on this machine");
  if (options.nonce !== undefined && !sameBytes(await hash(options.nonce), code.nonce))
    throw new VerificationError(
      "nonce",
      "The response code does not answer this request (another nonce): enter the answer to the code shown now",
    );

  const date = (seconds: number): Date | undefined => (seconds === 0 ? undefined : new Date(seconds * 1000));
  const licenseType = LICENSE_TYPE_NAMES[code.licenseType] as License["licenseType"];
  const edition = code.edition === "" ? undefined : code.edition;
  const license: License = {
    licenseId: code.licenseId,
    licensingMode: LICENSING_MODE_NAMES[code.licensingMode] as License["licensingMode"],
    licenseType,
    edition,
    issueDate: date(code.issueDate),
    expireAt: date(code.expireAt),
    supportExpireAt: date(code.supportExpireAt),
    features: code.features,
    licensee: undefined,
    licenseKey: undefined,
  };
  const entitlements: LicenseEntitlements = {
    productCode: code.productCode,
    licenseType,
    edition,
    features: [...code.features],
    maxClients: code.maxClients,
    expireAt: license.expireAt,
    supportExpireAt: license.supportExpireAt,
  };
  const issuedAt = new Date(code.issuedAt * 1000);
  const expiresAt = new Date(code.expiresAt * 1000);
  inForce(license, entitlements, issuedAt, [expiresAt], options);
  return {
    v: 2,
    license,
    entitlements,
    machine: { machineId: options.machineId, ...(clientMatched ? { clientId: options.clientId as string } : {}) },
    issuedAt,
    expiresAt,
    ...(options.nonce !== undefined ? { nonce: options.nonce } : {}),
    encrypted: false,
    keyId: signer.kid as string,
  };
}

/**
 * The checks every file passes after its signature and binding: the product when given (`product`), the clock
 * (`clock`), the file's ends and the license's expiry (`expired`).
 */
function inForce(
  license: License,
  entitlements: LicenseEntitlements,
  issuedAt: Date,
  ends: Date[],
  options: LicenseFileOptions,
): void {
  if (options.productCode !== undefined && entitlements.productCode !== options.productCode)
    throw new VerificationError(
      "product",
      `The license file is for product ${entitlements.productCode}, not ${options.productCode}`,
    );

  const now = (options.now ?? new Date()).getTime();
  const skew = (options.clockSkewSeconds ?? 300) * 1000;
  if (now + skew < issuedAt.getTime())
    throw new VerificationError(
      "clock",
      `The computer's clock (${new Date(now).toISOString()}) is earlier than the license file's issue time (${issuedAt.toISOString()}): the clock was set back`,
    );
  if (options.lastSeen !== undefined && now + skew < options.lastSeen.getTime())
    throw new VerificationError(
      "clock",
      `The computer's clock (${new Date(now).toISOString()}) is earlier than the last time this application saw (${options.lastSeen.toISOString()}): the clock was set back`,
    );
  const end = Math.min(...ends.map((d) => d.getTime()));
  if (now >= end)
    throw new VerificationError(
      "expired",
      `The license file expired at ${new Date(end).toISOString()}: check out a new one`,
    );
  if (license.expireAt && now >= license.expireAt.getTime())
    throw new VerificationError("expired", `The license expired at ${license.expireAt.toISOString()}`);
}

/** {@link verifyLicenseFile} of a compact JWS. */
async function verifySignedFile(jws: string, options: LicenseFileOptions): Promise<LicenseFile> {
  let payloadBytes: Uint8Array;
  let header: { kid?: string | undefined; typ?: string | undefined };
  try {
    const verified = await compactVerify(jws, createLocalJWKSet(options.jwks), { algorithms: ["ES256"] });
    payloadBytes = verified.payload;
    header = verified.protectedHeader;
  } catch (error) {
    if (error instanceof joseErrors.JWKSNoMatchingKey || error instanceof joseErrors.JWKSMultipleMatchingKeys)
      throw new VerificationError(
        "unknownKey",
        "The license file is signed by a key this application does not know (not in its JWKS)",
        error,
      );
    if (error instanceof joseErrors.JWSSignatureVerificationFailed)
      throw new VerificationError("signature", "The license file's signature does not verify: it was altered", error);
    throw new VerificationError(
      "malformed",
      `The license file is not a signed license file: ${error instanceof Error ? error.message : String(error)}`,
      error,
    );
  }
  if (header.typ !== LICENSE_FILE_TYPE)
    throw new VerificationError(
      "malformed",
      `The signed text is not a license file (typ ${header.typ ?? "missing"}, not ${LICENSE_FILE_TYPE})`,
    );
  let outer: Record<string, unknown> | undefined;
  try {
    outer = record(JSON.parse(new TextDecoder().decode(payloadBytes)));
  } catch {
    outer = undefined;
  }
  if (!outer) throw new VerificationError("malformed", "The license file's payload is not a JSON object");
  const encrypted = outer["enc"] !== undefined || outer["ciphertext"] !== undefined;
  const payload = encrypted ? record(await decrypt(outer, options)) : outer;
  if (!payload) throw new VerificationError("malformed", "The license file's payload is not a JSON object");
  if (payload["v"] !== 1)
    throw new VerificationError("malformed", `The license file is of version ${String(payload["v"])}, not 1`);

  const machine = record(payload["machine"]);
  const machineId = machine?.["machineId"];
  if (!machine || typeof machineId !== "string")
    throw new VerificationError("malformed", "The license file names no machine");
  const clientId = typeof machine["clientId"] === "string" && machine["clientId"] ? machine["clientId"] : undefined;
  if (machineId !== options.machineId)
    throw new VerificationError("machine", "The license file was issued to another machine");
  if (options.clientId !== undefined && clientId !== undefined && clientId !== options.clientId)
    throw new VerificationError("machine", "The license file was issued to another client on this machine");
  const nonce = typeof payload["nonce"] === "string" ? payload["nonce"] : undefined;
  if (options.nonce !== undefined && nonce !== options.nonce)
    throw new VerificationError(
      "nonce",
      "The license file does not answer this request (another nonce): enter the answer to the code shown now",
    );

  const issuedAt = dateMember(payload, "issuedAt");
  const expiresAt = dateMember(payload, "expiresAt");
  const borrowRecord = record(payload["borrow"]);
  const borrow = borrowRecord ? { until: dateMember(borrowRecord, "until", "license file's borrow") } : undefined;
  let license: License;
  let entitlements: LicenseEntitlements;
  try {
    license = licenseFromJson(payload["license"]);
    entitlements = entitlementsFromJson(payload["entitlements"]);
  } catch (error) {
    throw new VerificationError(
      "malformed",
      `The license file's license is not readable: ${error instanceof Error ? error.message : String(error)}`,
      error,
    );
  }

  inForce(license, entitlements, issuedAt, borrow ? [expiresAt, borrow.until] : [expiresAt], options);

  return {
    v: 1,
    license,
    entitlements,
    machine: { machineId, ...(clientId !== undefined ? { clientId } : {}) },
    issuedAt,
    expiresAt,
    ...(nonce !== undefined ? { nonce } : {}),
    ...(borrow ? { borrow } : {}),
    encrypted,
    keyId: header.kid ?? "",
  };
}
