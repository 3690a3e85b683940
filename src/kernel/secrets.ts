/**
 * Secrets at rest (CONTRACT section 1): private signing keys and webhook secrets are stored AES-GCM-encrypted with a
 * key derived from Application:EncryptionKey. Stored form: `v1:<base64 iv>:<base64 ciphertext+tag>`. Keys derived
 * from the setting are imported once per isolate and separated by purpose (HKDF `info`), so the same setting can
 * key encryption and the license integrity HMAC without one use weakening the other.
 */
import { ConfigError } from "./config";
import { fromBase64, toBase64 } from "./crypto";
import { memo } from "./memo";

const encoder = new TextEncoder();
const derived = memo<string, Promise<CryptoKey>>("derived-keys", {
  key: "HKDF info and Application:EncryptionKey",
  max: 32,
  evict: "all",
});

/** Application:EncryptionKey, or a 500 naming it. */
export function requireEncryptionKey(secret: string | undefined, purpose: string): string {
  if (!secret) throw new ConfigError("Application:EncryptionKey", `it is not set, and ${purpose} needs it`);
  return secret;
}

/**
 * A key derived from a secret with HKDF-SHA256 for one purpose (`info`), cached per isolate.
 * `algorithm` and `usages` describe the derived key (AES-GCM for encryption, HMAC for integrity).
 */
export function deriveKey(
  secret: string,
  info: string,
  algorithm: SubtleCryptoImportKeyAlgorithm,
  usages: string[],
): Promise<CryptoKey> {
  const cacheKey = `${info}\n${secret}`;
  let key = derived.get(cacheKey);
  if (!key) {
    key = crypto.subtle
      .importKey("raw", encoder.encode(secret), "HKDF", false, ["deriveKey"])
      .then((base) =>
        crypto.subtle.deriveKey(
          { name: "HKDF", hash: "SHA-256", salt: new Uint8Array(0), info: encoder.encode(info) },
          base,
          algorithm,
          false,
          usages,
        ),
      );
    derived.keep(cacheKey, key);
  }
  return key;
}

function encryptionKey(secret: string | undefined): Promise<CryptoKey> {
  return deriveKey(
    requireEncryptionKey(secret, "encrypting secrets at rest"),
    "licensing/secrets-at-rest/v1",
    { name: "AES-GCM", length: 256 },
    ["encrypt", "decrypt"],
  );
}

/** Encrypts a secret for storage. */
export async function encryptSecret(secret: string | undefined, plaintext: string): Promise<string> {
  const iv = crypto.getRandomValues(new Uint8Array(12));
  const ciphertext = await crypto.subtle.encrypt(
    { name: "AES-GCM", iv },
    await encryptionKey(secret),
    encoder.encode(plaintext),
  );
  return `v1:${toBase64(iv)}:${toBase64(ciphertext)}`;
}

/** Decrypts a stored secret; a value that was not encrypted with this key throws (never returns garbage). */
export async function decryptSecret(secret: string | undefined, stored: string): Promise<string> {
  const [version, iv, ciphertext] = stored.split(":");
  if (version !== "v1" || !iv || !ciphertext) throw new Error("stored secret is not in the v1 format");
  const plaintext = await crypto.subtle.decrypt(
    { name: "AES-GCM", iv: fromBase64(iv) },
    await encryptionKey(secret),
    fromBase64(ciphertext),
  );
  return new TextDecoder().decode(plaintext);
}
