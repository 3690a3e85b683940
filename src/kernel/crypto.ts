/** Small crypto helpers shared by keys, tokens and passwords: CSPRNG strings, digests, constant-time comparison. */
import { memo } from "./memo";

export const BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
/** Crockford base32 (no I, L, O, U): the alphabet of user keys. */
export const CROCKFORD32 = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";

/** `length` characters drawn uniformly from `alphabet` with the CSPRNG (rejection sampling, no modulo bias). */
export function randomString(length: number, alphabet = BASE62): string {
  const limit = 256 - (256 % alphabet.length);
  let out = "";
  while (out.length < length) {
    const bytes = crypto.getRandomValues(new Uint8Array(length * 2));
    for (const b of bytes) {
      if (b < limit) out += alphabet[b % alphabet.length];
      if (out.length === length) break;
    }
  }
  return out;
}

const encoder = new TextEncoder();

const HEX = Array.from({ length: 256 }, (_, b) => b.toString(16).padStart(2, "0"));

/**
 * The runtime's own encoders (TC39 "Uint8Array to/from base64": workerd has them; Node 24, which runs the scripts,
 * does not), used when present: a validation encodes its signed key's parts and HMACs with them, in native code.
 */
interface NativeEncoders {
  toHex?: (this: Uint8Array) => string;
  toBase64?: (this: Uint8Array, options?: { alphabet?: "base64" | "base64url"; omitPadding?: boolean }) => string;
}
const native = Uint8Array.prototype as NativeEncoders;

const bytesOf = (bytes: ArrayBuffer | Uint8Array): Uint8Array =>
  bytes instanceof Uint8Array ? bytes : new Uint8Array(bytes);

export function toHex(bytes: ArrayBuffer | Uint8Array): string {
  if (native.toHex) return native.toHex.call(bytesOf(bytes));
  let out = "";
  for (const b of bytesOf(bytes)) out += HEX[b];
  return out;
}

export function toBase64(bytes: ArrayBuffer | Uint8Array): string {
  if (native.toBase64) return native.toBase64.call(bytesOf(bytes));
  let s = "";
  for (const b of bytesOf(bytes)) s += String.fromCharCode(b);
  return btoa(s);
}

/** base64url without padding (RFC 7515's encoding of JWS parts). */
export function toBase64Url(bytes: ArrayBuffer | Uint8Array): string {
  if (native.toBase64) return native.toBase64.call(bytesOf(bytes), { alphabet: "base64url", omitPadding: true });
  return toBase64(bytes).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

export function fromBase64(text: string): Uint8Array {
  return Uint8Array.from(atob(text), (ch) => ch.charCodeAt(0));
}

/**
 * Digests of short texts (keys and tokens, which clients present again at every call) this isolate has computed:
 * a digest is a pure function of its text, so a hot path asks WebCrypto once per key, not once per request. Bounded
 * by count and by the length of the texts it keeps; emptied when full.
 */
const SHORT_TEXT = 512;
const shortDigests = memo<string, string>("short-digests", {
  key: `text of at most ${SHORT_TEXT} characters (API keys, client secrets, tokens)`,
  max: 4096,
  evict: "all",
});

/** SHA-256 of the UTF-8 text, lowercase hex: how API keys, client secrets and tokens are stored. */
export async function sha256Hex(text: string): Promise<string> {
  const known = shortDigests.get(text);
  if (known !== undefined) return known;
  const digest = toHex(await crypto.subtle.digest("SHA-256", encoder.encode(text)));
  if (text.length <= SHORT_TEXT) {
    shortDigests.keep(text, digest);
  }
  return digest;
}

/** Constant-time equality of two byte strings (different lengths compare unequal without early exit on content). */
export function timingSafeEqual(a: Uint8Array, b: Uint8Array): boolean {
  if (a.byteLength !== b.byteLength) {
    crypto.subtle.timingSafeEqual(a, a);
    return false;
  }
  return crypto.subtle.timingSafeEqual(a, b);
}

/** Constant-time equality of two strings. */
export function timingSafeEqualText(a: string, b: string): boolean {
  return timingSafeEqual(encoder.encode(a), encoder.encode(b));
}
