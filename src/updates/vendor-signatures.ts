/**
 * The vendor's signatures on uploads (CONTRACT section 9): the service never signs an update for Tauri or Sparkle, it
 * passes the vendor's signature through, so an upload that cannot be installed is refused before it is published.
 *   - An `archive` (Tauri's updater bundle, a Sparkle .tar.*) is refused without its `signature`: both updaters
 *     refuse an unsigned update, and an archive is for nothing else.
 *   - A product with a `sparklePublicKey`: a macOS zip, installer or archive uploaded with an EdDSA signature (sign_update's
 *     edSignature, base64 of 64 bytes; a Tauri archive's minisign text is not one) is refused unless the signature
 *     verifies over the stored bytes under that key; a zip or installer's signature must be one. The bytes are hashed
 *     as they stream (formats/ed25519.ts).
 * Hosted artifacts (sourceKind url) are not the service's bytes: only the first rule applies to them.
 */
import { ApiError } from "../kernel/errors";
import { ed25519Verify } from "./ed25519";

interface Signed {
  platform: string;
  kind: string;
  signature?: string | null | undefined;
}

/** 400 for an archive without its signature (before any byte is stored). */
export function refuseUnsignedArchive(fields: Pick<Signed, "kind" | "signature">): void {
  if (fields.kind === "archive" && !fields.signature)
    throw new ApiError(
      400,
      "An archive (a Tauri or Sparkle updater bundle) needs its signature: send `signature` (the .sig file's text, or sign_update's edSignature)",
    );
}

/** Whether an upload's signature is Sparkle's to check against the product's key. */
function sparkleChecks(sparklePublicKey: string | null, fields: Signed): boolean {
  if (!sparklePublicKey || !fields.signature || !fields.platform.startsWith("darwin-")) return false;
  if (fields.kind === "zip" || fields.kind === "installer") return true;
  return fields.kind === "archive" && isSparkleSignature(fields.signature);
}

/** 400 when the upload's EdDSA signature does not verify over its stored bytes under the product's Sparkle key. */
export async function requireSparkleSignature(
  sparklePublicKey: string | null,
  fields: Signed,
  read: () => Promise<ReadableStream<Uint8Array> | undefined>,
): Promise<void> {
  if (!sparkleChecks(sparklePublicKey, fields)) return;
  const bytes = await read();
  if (!bytes) throw new Error("the staged artifact's bytes are missing");
  if (!(await sparkleSignatureHolds(sparklePublicKey!, fields.signature!, bytes)))
    throw new ApiError(
      400,
      "The signature is not an EdDSA signature of this file under the product's sparklePublicKey (sign_update's edSignature of exactly these bytes): refused, nothing was stored or changed",
    );
}

// ---------------------------------------------------------------------------------------------------------------
// Sparkle's EdDSA signatures (sign_update): Ed25519 over the archive's bytes, standard base64 (64 bytes), with the
// public key the app carries as SUPublicEDKey (standard base64 of 32 bytes).

const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;

function base64Bytes(text: string, length: number): Uint8Array | undefined {
  const trimmed = text.trim();
  if (!BASE64.test(trimmed)) return undefined;
  try {
    const bytes = Uint8Array.from(atob(trimmed), (c) => c.charCodeAt(0));
    return bytes.byteLength === length ? bytes : undefined;
  } catch {
    return undefined;
  }
}

/** Whether `text` is a Sparkle public key (SUPublicEDKey: base64 of a 32-byte Ed25519 key). */
export function isSparklePublicKey(text: string): boolean {
  return base64Bytes(text, 32) !== undefined;
}

/** Whether `text` has the form of sign_update's edSignature (base64 of 64 bytes), not another vendor's signature. */
export function isSparkleSignature(text: string): boolean {
  return base64Bytes(text, 64) !== undefined;
}

/**
 * Whether `signature` (sign_update's sparkle:edSignature) is the Ed25519 signature of the bytes `chunks` streams under
 * `publicKey` (ed25519.ts: the file is hashed as it streams, never held whole).
 */
export async function sparkleSignatureHolds(
  publicKey: string,
  signature: string,
  chunks: AsyncIterable<Uint8Array> | ReadableStream<Uint8Array>,
): Promise<boolean> {
  const key = base64Bytes(publicKey, 32);
  const sig = base64Bytes(signature, 64);
  if (!key || !sig) return false;
  return ed25519Verify(key, sig, chunks);
}
