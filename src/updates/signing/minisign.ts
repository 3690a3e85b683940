/**
 * Tauri's updater signatures (CONTRACT section 15): minisign, wrapped in base64 the way the Tauri CLI writes them and
 * the updater plugin reads them (base64 STANDARD of the minisign text, then minisign-verify's decoders), so a `.sig`
 * that passes here is one the installed app accepts.
 *   - The public key (tauri.conf.json's `pubkey`): base64 of "untrusted comment: …\n" + base64("Ed" ‖ key id ‖ key).
 *   - A signature (`.sig`): base64 of "untrusted comment: …\n" + base64(algorithm ‖ key id ‖ signature) +
 *     "\ntrusted comment: …\n" + base64(global signature over signature ‖ trusted comment).
 * Only prehashed signatures ('ED': Ed25519 over the BLAKE2b-512 of the file) are accepted: the file is hashed as it
 * streams and never held whole. The Tauri CLI has always signed prehashed since it moved to the minisign crate 0.7
 * (whose sign() prehashes unconditionally); the legacy 'Ed' form would need the whole file in memory.
 */
import { blake2b } from "@noble/hashes/blake2.js";
import { plain } from "./source.ts";

/** The verdict on a Tauri signature: malformed text, a signature by another key, or one that does not verify. */
export type TauriVerdict =
  | { ok: true }
  | { ok: false; reason: "malformed" | "keyMismatch" | "invalid"; message: string };

const UNTRUSTED_PREFIX = "untrusted comment:";
const TRUSTED_PREFIX = "trusted comment: ";
/** base64 of "untrusted comment:", how every Tauri `.sig` and `pubkey` begins. */
const WRAPPED_PREFIX = "dW50cnVzdGVkIGNvbW1lbnQ6";
const ALG_ED25519 = [0x45, 0x64]; // "Ed"
const ALG_PREHASHED = [0x45, 0x44]; // "ED"
const KEY_LENGTH = 2 + 8 + 32;
const SIGNATURE_LENGTH = 2 + 8 + 64;
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/** Standard base64 with its padding, as Rust's base64 STANDARD engine reads it; undefined when it is not. */
function base64(text: string): Uint8Array | undefined {
  if (text.length % 4 !== 0 || !BASE64.test(text)) return undefined;
  try {
    return Uint8Array.from(atob(text), (c) => c.charCodeAt(0));
  } catch {
    return undefined;
  }
}

/** The minisign text inside Tauri's base64 wrapping, or why there is none. */
function unwrap(text: string, what: string): { lines: string[] } | { problem: string } {
  const bytes = base64(text.trim());
  if (!bytes) return { problem: `${what} is not base64 (Tauri's form is the base64 of the minisign file's text)` };
  let decoded: string;
  try {
    decoded = new TextDecoder("utf-8", { fatal: true, ignoreBOM: false }).decode(bytes);
  } catch {
    return { problem: `${what} is base64 but not of minisign text (Tauri's form wraps the whole minisign file)` };
  }
  const lines = decoded.split("\n").map((line) => line.replace(/\r$/, ""));
  if (!lines[0]?.startsWith(UNTRUSTED_PREFIX))
    return { problem: `${what} does not hold minisign text (its first line is not an "untrusted comment:")` };
  return { lines };
}

const sameAs = (bytes: Uint8Array, expected: number[]) => bytes[0] === expected[0] && bytes[1] === expected[1];

/** Key ids as minisign prints them: the 8 bytes as a little-endian number, in upper-case hex. */
function keyIdHex(keyId: Uint8Array): string {
  return [...keyId]
    .reverse()
    .map((b) => b.toString(16).padStart(2, "0"))
    .join("")
    .toUpperCase();
}

interface PublicKey {
  keyId: Uint8Array;
  key: Uint8Array;
}

function parsePublicKey(text: string): PublicKey | string {
  const unwrapped = unwrap(text, "the public key");
  if ("problem" in unwrapped) {
    const bare = base64(text.trim());
    if (bare?.byteLength === KEY_LENGTH)
      return "the public key is minisign's key line itself; Tauri's pubkey is the base64 of the whole key file (as `tauri signer generate` prints it)";
    return unwrapped.problem;
  }
  const key = base64((unwrapped.lines[1] ?? "").trim());
  if (!key) return "the public key's second line is not base64 of a minisign key";
  if (!sameAs(key, ALG_ED25519)) return "the public key is not a minisign Ed25519 key (its algorithm is not 'Ed')";
  if (key.byteLength !== KEY_LENGTH)
    return `the public key is ${key.byteLength} bytes, a minisign key is ${KEY_LENGTH} ('Ed', 8-byte key id, 32-byte key)`;
  return { keyId: key.subarray(2, 10), key: key.subarray(10) };
}

/** Why `text` is not a Tauri public key (tauri.conf.json's `pubkey`), or undefined when it is one. */
export function tauriPublicKeyProblem(text: string): string | undefined {
  const key = parsePublicKey(text);
  return typeof key === "string" ? key : undefined;
}

/** Whether `text` has the form of a Tauri `.sig` (base64 of minisign signature text), however damaged inside. */
export function isTauriSignature(text: string): boolean {
  return text.trim().startsWith(WRAPPED_PREFIX);
}

interface Signature {
  keyId: Uint8Array;
  signature: Uint8Array;
  trustedComment: string;
  globalSignature: Uint8Array;
}

function parseSignature(text: string): Signature | string {
  const unwrapped = unwrap(text, "the signature");
  if ("problem" in unwrapped) return unwrapped.problem;
  const [, signatureLine, trustedLine, globalLine] = unwrapped.lines;
  if (signatureLine === undefined || trustedLine === undefined || globalLine === undefined)
    return "the signature's minisign text is truncated (it needs four lines)";
  const signature = base64(signatureLine.trim());
  if (signature?.byteLength !== SIGNATURE_LENGTH)
    return `the signature line is not base64 of ${SIGNATURE_LENGTH} bytes (algorithm, key id, Ed25519 signature)`;
  if (sameAs(signature, ALG_ED25519))
    return "legacy non-prehashed minisign signatures are not accepted; Tauri signs prehashed";
  if (!sameAs(signature, ALG_PREHASHED)) return "the signature's algorithm is neither of minisign's ('ED' or 'Ed')";
  if (!trustedLine.startsWith(TRUSTED_PREFIX)) return `the signature's third line does not start "${TRUSTED_PREFIX}"`;
  const globalSignature = base64(globalLine.trim());
  if (globalSignature?.byteLength !== 64)
    return "the signature's last line is not base64 of a 64-byte global signature";
  return {
    keyId: signature.subarray(2, 10),
    signature: signature.subarray(10),
    trustedComment: trustedLine.slice(TRUSTED_PREFIX.length),
    globalSignature,
  };
}

/** BLAKE2b-512 of the stream, updated chunk by chunk. */
async function prehash(bytes: ReadableStream<Uint8Array>): Promise<Uint8Array> {
  const state = blake2b.create({ dkLen: 64 });
  const reader = bytes.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return state.digest();
    state.update(value);
  }
}

async function ed25519(key: Uint8Array, signature: Uint8Array, message: Uint8Array): Promise<boolean> {
  try {
    const imported = await crypto.subtle.importKey("raw", plain(key), { name: "Ed25519" }, false, ["verify"]);
    return await crypto.subtle.verify({ name: "Ed25519" }, imported, plain(signature), plain(message));
  } catch {
    return false;
  }
}

/**
 * Verifies a Tauri `.sig` over the bytes `bytes` streams under the product's Tauri public key, as the updater plugin
 * would: the key ids must agree, the signature must hold over the file's BLAKE2b-512 and the global signature over
 * the signature and its trusted comment. Throws when `publicKey` itself is not a Tauri public key (check it with
 * tauriPublicKeyProblem when it is set).
 */
export async function verifyTauriSignature(
  publicKey: string,
  signature: string,
  bytes: ReadableStream<Uint8Array>,
): Promise<TauriVerdict> {
  const key = parsePublicKey(publicKey);
  if (typeof key === "string") throw new Error(`the product's Tauri public key is not one: ${key}`);
  const parsed = parseSignature(signature);
  if (typeof parsed === "string") {
    await bytes.cancel().catch(() => undefined);
    return { ok: false, reason: "malformed", message: parsed };
  }
  if (keyIdHex(parsed.keyId) !== keyIdHex(key.keyId)) {
    await bytes.cancel().catch(() => undefined);
    return {
      ok: false,
      reason: "keyMismatch",
      message: `the signature's key id ${keyIdHex(parsed.keyId)} is not the public key's ${keyIdHex(key.keyId)} (signed with another key)`,
    };
  }
  const digest = await prehash(bytes);
  if (!(await ed25519(key.key, parsed.signature, digest)))
    return { ok: false, reason: "invalid", message: "the signature does not verify over these bytes" };
  const comment = new TextEncoder().encode(parsed.trustedComment);
  const signed = new Uint8Array(64 + comment.byteLength);
  signed.set(parsed.signature);
  signed.set(comment, 64);
  if (!(await ed25519(key.key, parsed.globalSignature, signed)))
    return { ok: false, reason: "invalid", message: "the global signature over the trusted comment does not verify" };
  return { ok: true };
}
