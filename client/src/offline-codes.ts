/**
 * The codes of air-gapped activation (CONTRACT section 11): the application shows a request code, a person types it
 * (or scans its QR code) into the service's `/activate/` page on any connected device, and brings back a response code
 * (or the license file) the application verifies offline.
 *
 * Both are base32 (Crockford: no I, L, O or U; read case-insensitively, with I and L as 1 and O as 0) of their bytes
 * followed by the bytes' CRC32 (4 bytes, big-endian), in groups of five joined by `-`, after a prefix naming the kind
 * and version: `LRQ1-` a request (`{v:1, k: userKey, m: machineId, c?: clientId, n: nonce, p?: productCode}` as JSON),
 * `LRS1-` a response (the license file's compact JWS). The checksum catches a mistyped or missing character before
 * anything is sent; the alphabet is QR alphanumeric, so the QR code of a code is compact.
 *
 * This module has no imports: the service (its offline-activation route) and the `/activate/` page use it too, so
 * the format has one definition.
 */

/** The prefix of a request code (version 1). */
export const REQUEST_CODE_PREFIX = "LRQ1";
/** The prefix of a response code (version 1). */
export const RESPONSE_CODE_PREFIX = "LRS1";

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
};

/** The payload bytes of a code of the expected kind, after its checksum matched. */
function decodeCode(expected: string, code: string): Uint8Array {
  const name = KIND_NAME[expected] as string;
  const compact = code.replace(/[\s-]+/g, "").toUpperCase();
  if (compact === "") throw new OfflineCodeError("malformed", `The ${name} is empty.`);
  const prefix = compact.slice(0, 4);
  if (prefix !== expected) {
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
  return payload;
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
  const payload = decodeCode(REQUEST_CODE_PREFIX, code);
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

/** The response code (`LRS1-…`) of a license file (its compact JWS). */
export function encodeResponseCode(licenseFile: string): string {
  return encodeCode(RESPONSE_CODE_PREFIX, new TextEncoder().encode(licenseFile.trim()));
}

/** The license file (compact JWS) a response code carries; {@link OfflineCodeError} when it is not one. */
export function decodeResponseCode(code: string): string {
  const payload = decodeCode(RESPONSE_CODE_PREFIX, code);
  let jws: string;
  try {
    jws = new TextDecoder("utf-8", { fatal: true, ignoreBOM: false }).decode(payload);
  } catch {
    throw new OfflineCodeError("content", "The response code does not hold a license file.");
  }
  if (!/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/.test(jws))
    throw new OfflineCodeError("content", "The response code does not hold a license file.");
  return jws;
}
