/**
 * The codes of air-gapped activation (CONTRACT section 11): the application shows a request code, a person types it
 * (or scans its QR code) into the service's `/activate/` page on any connected device, and brings back a response code
 * (or the license file) the application verifies offline.
 *
 * Each is base32 (Crockford: no I, L, O or U; read case-insensitively, with I and L as 1 and O as 0) of its bytes
 * followed by the bytes' CRC32 (4 bytes, big-endian), in groups of five joined by `-`, after a prefix naming the kind
 * and version: `LRQ1-` a request (`{v:1, k: userKey, m: machineId, c?: clientId, n: nonce, p?: productCode}` as JSON),
 * `LRS2-` a response (the compact binary layout below, signed ES256: what the service issues, about 330 characters),
 * `LRS1-` a response of the first version (the license file's compact JWS, about 2,100 characters: still read, for
 * codes already handed out). The checksum catches a mistyped or missing character before anything is sent or trusted;
 * the alphabet is QR alphanumeric, so the QR code of a code is compact.
 *
 * The layout of `LRS2` (docs/reference/offline-codes.md, with a test vector, for clients in other languages): the
 * signed body, big-endian, then the 64-byte ECDSA P-256 signature (r||s) over ASCII `LRS2` followed by the body.
 *
 *     flags u8 (bit 0: a client hash follows the machine hash; other bits 0)
 *     key id 4 (SHA-256 of the signing key's `kid`, first 4 bytes)
 *     issuedAt u32, expiresAt u32 (Unix seconds)
 *     machine 8 (SHA-256 of the machine id, first 8 bytes), [client 8], nonce 8 (likewise)
 *     licensingMode u8, licenseType u8, maxClients u32
 *     issueDate u32, expireAt u32, supportExpireAt u32 (Unix seconds, 0 = none)
 *     licenseId str, productCode str, edition str (empty = none), features: count u8 then str each
 *
 * where `str` is a length byte and that many bytes of UTF-8.
 *
 * This module has no imports: the service (its offline-activation route) and the `/activate/` page use it too, so
 * the format has one definition.
 */

/** The prefix of a request code (version 1). */
export const REQUEST_CODE_PREFIX = "LRQ1";
/** The prefix of a response code of version 1 (a license file's JWS): still read, no longer issued. */
export const RESPONSE_CODE_PREFIX = "LRS1";
/** The prefix of a response code of version 2 (the compact signed layout): what the service issues. */
export const COMPACT_RESPONSE_CODE_PREFIX = "LRS2";

const ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";
const VALUES: Readonly<Record<string, number>> = (() => {
  const out: Record<string, number> = {};
  for (let i = 0; i < ALPHABET.length; i++) out[ALPHABET[i] as string] = i;
  // Crockford's reading of look-alikes.
  out["I"] = 1;
  out["L"] = 1;
  out["O"] = 0;
  return out;
})();

/** Why a code was refused; `message` says it for a person. */
export type OfflineCodeProblem =
  /** Empty, or characters outside the code's alphabet. */
  | "malformed"
  /** A response code where a request code belongs, or the other way round. */
  | "wrongKind"
  /** A prefix this version does not read. */
  | "unknownVersion"
  /** The checksum does not match: mistyped, or incomplete. */
  | "checksum"
  /** The checksum matches but the content is not a request (or response). */
  | "content";

/** A request or response code that cannot be read; `problem` says why. */
export class OfflineCodeError extends Error {
  readonly problem: OfflineCodeProblem;
  constructor(problem: OfflineCodeProblem, message: string) {
    super(message);
    this.name = "OfflineCodeError";
    this.problem = problem;
  }
}

let crcTable: Uint32Array | undefined;

/** CRC-32 (IEEE 802.3, as zlib and PNG) of the bytes. */
export function crc32(bytes: Uint8Array): number {
  if (!crcTable) {
    crcTable = new Uint32Array(256);
    for (let n = 0; n < 256; n++) {
      let c = n;
      for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
      crcTable[n] = c >>> 0;
    }
  }
  let crc = 0xffffffff;
  for (const byte of bytes) crc = (crcTable[(crc ^ byte) & 0xff] as number) ^ (crc >>> 8);
  return (crc ^ 0xffffffff) >>> 0;
}

/** Crockford base32 of the bytes (upper case, no padding). */
export function base32Encode(bytes: Uint8Array): string {
  let out = "";
  let buffer = 0;
  let bits = 0;
  for (const byte of bytes) {
    buffer = ((buffer << 8) | byte) & 0xffff;
    bits += 8;
    while (bits >= 5) {
      out += ALPHABET[(buffer >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  if (bits > 0) out += ALPHABET[(buffer << (5 - bits)) & 31];
  return out;
}

/** The bytes of Crockford base32 text (hyphens and spaces already removed); `undefined` for a character outside it. */
export function base32Decode(text: string): Uint8Array | undefined {
  const out = new Uint8Array(Math.floor((text.length * 5) / 8));
  let buffer = 0;
  let bits = 0;
  let index = 0;
  for (const char of text.toUpperCase()) {
    const value = VALUES[char];
    if (value === undefined) return undefined;
    buffer = ((buffer << 5) | value) & 0xffff;
    bits += 5;
    if (bits >= 8) {
      out[index++] = (buffer >>> (bits - 8)) & 0xff;
      bits -= 8;
    }
  }
  return out;
}

/** `PREFIX-XXXXX-XXXXX-…`: the bytes with their CRC32, in base32 groups of five. */
function encodeCode(prefix: string, payload: Uint8Array): string {
  const bytes = new Uint8Array(payload.length + 4);
  bytes.set(payload);
  new DataView(bytes.buffer).setUint32(payload.length, crc32(payload));
  const groups = base32Encode(bytes).match(/.{1,5}/g) ?? [];
  return [prefix, ...groups].join("-");
}

const KIND_NAME: Readonly<Record<string, string>> = {
  [REQUEST_CODE_PREFIX]: "request code",
  [RESPONSE_CODE_PREFIX]: "response code",
  [COMPACT_RESPONSE_CODE_PREFIX]: "response code",
};

/** The prefixes read as each kind: the first is the one issued. */
const READ_AS: Readonly<Record<string, readonly string[]>> = {
  [REQUEST_CODE_PREFIX]: [REQUEST_CODE_PREFIX],
  [RESPONSE_CODE_PREFIX]: [COMPACT_RESPONSE_CODE_PREFIX, RESPONSE_CODE_PREFIX],
};

/** The prefix and payload bytes of a code of the expected kind, after its checksum matched. */
function decodeCode(kind: string, code: string): { prefix: string; payload: Uint8Array } {
  const name = KIND_NAME[kind] as string;
  const accepted = READ_AS[kind] as readonly string[];
  const expected = accepted[0] as string;
  const compact = code.replace(/[\s-]+/g, "").toUpperCase();
  if (compact === "") throw new OfflineCodeError("malformed", `The ${name} is empty.`);
  const prefix = compact.slice(0, 4);
  if (!accepted.includes(prefix)) {
    const other = KIND_NAME[prefix];
    if (other)
      throw new OfflineCodeError(
        "wrongKind",
        `This is a ${other} (${prefix}-…), not a ${name} (${expected}-…): ${
          expected === REQUEST_CODE_PREFIX
            ? "paste the code the application shows, not the answer"
            : "enter the answer from the activation page, not the code the application shows"
        }.`,
      );
    if (/^LR[QS]\d$/.test(prefix))
      throw new OfflineCodeError(
        "unknownVersion",
        `This ${name} is of version ${prefix.slice(3)}, which this version does not read (expected ${expected}-…).`,
      );
    throw new OfflineCodeError("malformed", `A ${name} starts with ${expected}-.`);
  }
  const bytes = base32Decode(compact.slice(4));
  if (!bytes)
    throw new OfflineCodeError(
      "malformed",
      `The ${name} has characters that are not part of it (only digits and the letters A-Z except U).`,
    );
  if (bytes.length <= 4) throw new OfflineCodeError("checksum", `The ${name} is incomplete: part of it is missing.`);
  const payload = bytes.subarray(0, bytes.length - 4);
  const sum = new DataView(bytes.buffer, bytes.byteOffset + payload.length, 4).getUint32(0);
  if (sum !== crc32(payload))
    throw new OfflineCodeError(
      "checksum",
      `The ${name}'s checksum does not match: a character was mistyped or part of the code is missing.`,
    );
  return { prefix, payload };
}

/** What a request code carries (CONTRACT section 11): the license, this machine, and a nonce the answer must echo. */
export interface OfflineRequest {
  /** The license's user key. */
  userKey: string;
  /** The machine to activate (the application's machine id). */
  machineId: string;
  /** The client on the machine, when the application uses one. */
  clientId?: string;
  /** A fresh random value; the license file in the response names it, so a replayed old response is refused. */
  nonce: string;
  /** The application's product code: the service refuses another product's license. */
  productCode?: string;
}

/** The request code (`LRQ1-…`) of a request. */
export function encodeRequestCode(request: OfflineRequest): string {
  const json: Record<string, unknown> = { v: 1, k: request.userKey, m: request.machineId };
  if (request.clientId !== undefined) json["c"] = request.clientId;
  json["n"] = request.nonce;
  if (request.productCode !== undefined) json["p"] = request.productCode;
  return encodeCode(REQUEST_CODE_PREFIX, new TextEncoder().encode(JSON.stringify(json)));
}

const text = (value: unknown): value is string => typeof value === "string" && value.trim() !== "";

/** The request a request code carries; {@link OfflineCodeError} when it is not one, mistyped or incomplete. */
export function decodeRequestCode(code: string): OfflineRequest {
  const { payload } = decodeCode(REQUEST_CODE_PREFIX, code);
  let json: unknown;
  try {
    json = JSON.parse(new TextDecoder("utf-8", { fatal: true, ignoreBOM: false }).decode(payload));
  } catch {
    throw new OfflineCodeError("content", "The request code does not hold a request.");
  }
  const o = (typeof json === "object" && json !== null ? json : {}) as Record<string, unknown>;
  if (o["v"] !== 1 || !text(o["k"]) || !text(o["m"]) || !text(o["n"]))
    throw new OfflineCodeError("content", "The request code does not hold a request (license, machine and nonce).");
  if ((o["c"] !== undefined && !text(o["c"])) || (o["p"] !== undefined && !text(o["p"])))
    throw new OfflineCodeError("content", "The request code's client or product is not text.");
  return {
    userKey: o["k"],
    machineId: o["m"],
    ...(o["c"] !== undefined ? { clientId: o["c"] as string } : {}),
    nonce: o["n"],
    ...(o["p"] !== undefined ? { productCode: o["p"] as string } : {}),
  };
}

/** The response code (`LRS1-…`, version 1) of a license file (its compact JWS). The service issues `LRS2` instead. */
export function encodeResponseCode(licenseFile: string): string {
  return encodeCode(RESPONSE_CODE_PREFIX, new TextEncoder().encode(licenseFile.trim()));
}

/** The license file (compact JWS) an `LRS1` response code carries; {@link OfflineCodeError} when it is not one. */
export function decodeResponseCode(code: string): string {
  const read = readResponseCode(code);
  if (read.version !== 1)
    throw new OfflineCodeError(
      "content",
      "This response code (LRS2-…) holds no license file: verify it with verifyActivationResponse.",
    );
  return read.licenseFile;
}

/** `licensingMode` by its number in an `LRS2` code (CONTRACT section 3). */
export const LICENSING_MODE_NAMES = ["File", "Activation", "Floating"] as const;
/** `licenseType` by its number in an `LRS2` code. */
export const LICENSE_TYPE_NAMES = ["Standard", "Demo", "Trial"] as const;
/** Bytes of the key id, and of the machine, client and nonce hashes, in an `LRS2` code. */
export const COMPACT_KEY_ID_BYTES = 4;
export const COMPACT_HASH_BYTES = 8;
/** Bytes of the ES256 signature (r||s) ending an `LRS2` code. */
export const COMPACT_SIGNATURE_BYTES = 64;
const CLIENT_FLAG = 1;
const U32_MAX = 0xffffffff;

/**
 * What an `LRS2` response code states, signed: exactly what the application checks offline. Times are Unix seconds
 * (0 = none); the key id and the hashes are the first bytes of SHA-256 of the UTF-8 text ({@link shortHash}).
 */
export interface CompactResponse {
  /** {@link COMPACT_KEY_ID_BYTES} of SHA-256 of the signing key's `kid`: which key of the JWKS signed it. */
  keyId: Uint8Array;
  /** When the service issued it, and when it stops being valid (the license file's `issuedAt` and `expiresAt`). */
  issuedAt: number;
  expiresAt: number;
  /** {@link COMPACT_HASH_BYTES} of SHA-256 of the machine id. */
  machine: Uint8Array;
  /** Of the client id, when the request named one. */
  client?: Uint8Array | undefined;
  /** Of the request's nonce. */
  nonce: Uint8Array;
  /** Indexes of {@link LICENSING_MODE_NAMES} and {@link LICENSE_TYPE_NAMES}. */
  licensingMode: number;
  licenseType: number;
  /** Machines or seats; 0 = unlimited. */
  maxClients: number;
  /** The license's issue date, expiry and end of maintenance (0 = none, or perpetual). */
  issueDate: number;
  expireAt: number;
  supportExpireAt: number;
  licenseId: string;
  productCode: string;
  /** "" = none. */
  edition: string;
  features: string[];
}

/** The first `length` bytes of SHA-256 of the UTF-8 text: an `LRS2` code's key id and its bindings. */
export async function shortHash(text: string, length: number): Promise<Uint8Array> {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
  return new Uint8Array(digest, 0, length);
}

const u32 = (n: number): boolean => Number.isInteger(n) && n >= 0 && n <= U32_MAX;

/**
 * The signed body of an `LRS2` code (the layout of this module's comment), or `undefined` when the response does not
 * fit it (a text over 255 bytes, more than 255 features, a time or number out of range, an unknown mode or type): the
 * service then issues `LRS1`.
 */
export function encodeCompactResponse(response: CompactResponse): Uint8Array | undefined {
  const utf8 = new TextEncoder();
  const texts = [response.licenseId, response.productCode, response.edition, ...response.features].map((t) =>
    utf8.encode(t),
  );
  if (texts.some((t) => t.length > 255) || response.features.length > 255) return undefined;
  const numbers = [response.issuedAt, response.expiresAt, response.maxClients, response.issueDate];
  numbers.push(response.expireAt, response.supportExpireAt);
  const named = (n: number, names: readonly string[]) => Number.isInteger(n) && n >= 0 && n < names.length;
  if (!numbers.every(u32) || !named(response.licensingMode, LICENSING_MODE_NAMES)) return undefined;
  if (!named(response.licenseType, LICENSE_TYPE_NAMES)) return undefined;
  const hashes = [response.machine, response.nonce, ...(response.client ? [response.client] : [])];
  if (response.keyId.length !== COMPACT_KEY_ID_BYTES || hashes.some((h) => h.length !== COMPACT_HASH_BYTES))
    return undefined;
  const out: number[] = [];
  const put32 = (n: number) => out.push((n >>> 24) & 255, (n >>> 16) & 255, (n >>> 8) & 255, n & 255);
  const putText = (t: Uint8Array) => out.push(t.length, ...t);
  out.push(response.client ? CLIENT_FLAG : 0, ...response.keyId);
  put32(response.issuedAt);
  put32(response.expiresAt);
  out.push(...response.machine, ...(response.client ?? []), ...response.nonce);
  out.push(response.licensingMode, response.licenseType);
  put32(response.maxClients);
  put32(response.issueDate);
  put32(response.expireAt);
  put32(response.supportExpireAt);
  const [licenseId, productCode, edition, ...features] = texts as [Uint8Array, Uint8Array, Uint8Array, ...Uint8Array[]];
  putText(licenseId);
  putText(productCode);
  putText(edition);
  out.push(features.length);
  for (const feature of features) putText(feature);
  return new Uint8Array(out);
}

/** What the signature of an `LRS2` code covers: ASCII `LRS2`, then the body. */
export function compactResponseSigningInput(body: Uint8Array): Uint8Array<ArrayBuffer> {
  const input = new Uint8Array(COMPACT_RESPONSE_CODE_PREFIX.length + body.length);
  input.set(new TextEncoder().encode(COMPACT_RESPONSE_CODE_PREFIX));
  input.set(body, COMPACT_RESPONSE_CODE_PREFIX.length);
  return input;
}

/** The `LRS2-…` code of a body and its signature (64 bytes, r||s). */
export function encodeCompactResponseCode(body: Uint8Array, signature: Uint8Array): string {
  if (signature.length !== COMPACT_SIGNATURE_BYTES)
    throw new RangeError(`An LRS2 signature is ${COMPACT_SIGNATURE_BYTES} bytes (r||s), not ${signature.length}`);
  const payload = new Uint8Array(body.length + signature.length);
  payload.set(body);
  payload.set(signature, body.length);
  return encodeCode(COMPACT_RESPONSE_CODE_PREFIX, payload);
}

/** The fields of an `LRS2` body; {@link OfflineCodeError} (`content`) when the bytes are not one. */
export function decodeCompactResponse(body: Uint8Array): CompactResponse {
  const refuse = (): never => {
    throw new OfflineCodeError("content", "The response code does not hold a response.");
  };
  const view = new DataView(body.buffer, body.byteOffset, body.byteLength);
  let at = 0;
  const take = (n: number): Uint8Array => {
    if (at + n > body.length) refuse();
    at += n;
    return body.slice(at - n, at);
  };
  const byte = (): number => take(1)[0] as number;
  const get32 = (): number => {
    take(4);
    return view.getUint32(at - 4);
  };
  const utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });
  const text = (): string => {
    try {
      return utf8.decode(take(byte()));
    } catch {
      return refuse();
    }
  };
  const flags = byte();
  if (flags & ~CLIENT_FLAG) refuse();
  const keyId = take(COMPACT_KEY_ID_BYTES);
  const issuedAt = get32();
  const expiresAt = get32();
  const machine = take(COMPACT_HASH_BYTES);
  const client = flags & CLIENT_FLAG ? take(COMPACT_HASH_BYTES) : undefined;
  const nonce = take(COMPACT_HASH_BYTES);
  const licensingMode = byte();
  const licenseType = byte();
  const response: CompactResponse = {
    keyId,
    issuedAt,
    expiresAt,
    machine,
    client,
    nonce,
    licensingMode,
    licenseType,
    maxClients: get32(),
    issueDate: get32(),
    expireAt: get32(),
    supportExpireAt: get32(),
    licenseId: text(),
    productCode: text(),
    edition: text(),
    features: [],
  };
  const count = byte();
  for (let n = 0; n < count; n++) response.features.push(text());
  if (at !== body.length || licensingMode >= LICENSING_MODE_NAMES.length || licenseType >= LICENSE_TYPE_NAMES.length)
    refuse();
  return response;
}

/** A response code read: an `LRS1` license file, or an `LRS2` response with its signed bytes. */
export type ResponseCode =
  | { version: 1; licenseFile: string }
  | {
      version: 2;
      /** The code as the service wrote it (upper case, in groups of five): what to save. */
      code: string;
      response: CompactResponse;
      /** What the signature covers ({@link compactResponseSigningInput}), and the signature (r||s). */
      signed: Uint8Array<ArrayBuffer>;
      signature: Uint8Array<ArrayBuffer>;
    };

/**
 * Reads a response code of either version, after its checksum matched: {@link OfflineCodeError} when it is mistyped,
 * incomplete, a request code, or holds no response. Nothing is verified here: the signature is checked with the
 * application's JWKS (`verifyActivationResponse`).
 */
export function readResponseCode(code: string): ResponseCode {
  const { prefix, payload } = decodeCode(RESPONSE_CODE_PREFIX, code);
  if (prefix === COMPACT_RESPONSE_CODE_PREFIX) {
    if (payload.length <= COMPACT_SIGNATURE_BYTES)
      throw new OfflineCodeError("content", "The response code does not hold a response.");
    const body = payload.slice(0, payload.length - COMPACT_SIGNATURE_BYTES);
    return {
      version: 2,
      code: encodeCode(prefix, payload),
      response: decodeCompactResponse(body),
      signed: compactResponseSigningInput(body),
      signature: payload.slice(payload.length - COMPACT_SIGNATURE_BYTES),
    };
  }
  let jws: string;
  try {
    jws = new TextDecoder("utf-8", { fatal: true, ignoreBOM: false }).decode(payload);
  } catch {
    throw new OfflineCodeError("content", "The response code does not hold a license file.");
  }
  if (!/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/.test(jws))
    throw new OfflineCodeError("content", "The response code does not hold a license file.");
  return { version: 1, licenseFile: jws };
}
