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
import { isTauriSignature, verifyTauriSignature } from "./signing/minisign";

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

/**
 * Checks the vendor's signature of an upload over its stored bytes with the product's key (CONTRACT section 15): a
 * Tauri minisign `.sig` with the product's tauriPublicKey, a Sparkle edSignature with its sparklePublicKey. Answers
 * true when one was verified, null when none applies; 409 signatureInvalid when it does not verify, 400 when the
 * signature text is not one.
 */
export async function verifyVendorSignature(
  keys: { sparklePublicKey: string | null; tauriPublicKey: string | null },
  fields: Signed & { fileName?: string },
  read: () => Promise<ReadableStream<Uint8Array> | undefined>,
): Promise<true | null> {
  const what = fields.fileName ?? "the file";
  if (keys.tauriPublicKey && fields.signature && isTauriSignature(fields.signature)) {
    const verdict = await verifyTauriSignature(keys.tauriPublicKey, fields.signature, await bytesOf(read));
    if (verdict.ok) return true;
    if (verdict.reason === "malformed")
      throw new ApiError(400, `The signature of ${what} is not a minisign signature: ${verdict.message}`);
    throw new ApiError(
      409,
      `The Tauri signature of ${what} does not verify with the product's tauriPublicKey: ${verdict.message}. The updater would refuse this update; refused, nothing was stored`,
      {},
      "signatureInvalid",
      { artifact: what },
    );
  }
  if (!sparkleChecks(keys.sparklePublicKey, fields)) return null;
  if (await sparkleSignatureHolds(keys.sparklePublicKey!, fields.signature!, await bytesOf(read))) return true;
  throw new ApiError(
    409,
    `The signature of ${what} is not an EdDSA signature of this file under the product's sparklePublicKey (sign_update's edSignature of exactly these bytes): Sparkle would refuse this update; refused, nothing was stored or changed`,
    {},
    "signatureInvalid",
    { artifact: what },
  );
}

async function bytesOf(
  read: () => Promise<ReadableStream<Uint8Array> | undefined>,
): Promise<ReadableStream<Uint8Array>> {
  const bytes = await read();
  if (!bytes) throw new Error("the staged artifact's bytes are missing");
  return bytes;
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
