/**
 * Feed tokens (CONTRACT section 9): what an updater that cannot send the X-Service-User-Key header puts in a feed's
 * query (`?feed=<token>`) to be the license's caller. A token is `<license id in base 36>.<mac>`, the mac 16 bytes of
 * an HMAC-SHA256 of the license's id and its user key (compact form) under a key derived from
 * Application:EncryptionKey for this one purpose, in base64url. It is stored nowhere: it is derived from the license
 * whenever it is shown or presented, so deleting the license, or giving it another user key, makes every earlier token
 * name nothing, and revoking or expiring it refuses the token exactly as it refuses the key.
 */
import { timingSafeEqualText, toBase64Url } from "../kernel/crypto";
import { deriveKey, requireEncryptionKey } from "../kernel/secrets";
import { compactUserKey } from "./user-key";

const TOKEN = /^([0-9a-z]{1,11})\.([0-9A-Za-z_-]{22})$/;

function feedTokenKey(secret: string | undefined): Promise<CryptoKey> {
  return deriveKey(
    requireEncryptionKey(secret, "feed tokens"),
    "updates/feed-token/v1",
    { name: "HMAC", hash: "SHA-256", length: 256 },
    ["sign"],
  );
}

async function macOf(secret: string | undefined, id: number, userKey: string): Promise<string> {
  const payload = new TextEncoder().encode(`${id}:${compactUserKey(userKey)}`);
  const mac = new Uint8Array(await crypto.subtle.sign("HMAC", await feedTokenKey(secret), payload)).slice(0, 16);
  return toBase64Url(mac);
}

/** The feed token of a license (its integer id and user key); `secret` is Application:EncryptionKey. */
export async function feedTokenOf(
  secret: string | undefined,
  license: { id: number; userKey: string },
): Promise<string> {
  return `${license.id.toString(36)}.${await macOf(secret, license.id, license.userKey)}`;
}

/** The license id a token names, read from its shape alone (undefined: not a feed token); feedTokenHolds proves it. */
export function feedTokenLicenseId(token: string): number | undefined {
  const m = TOKEN.exec(token);
  if (!m) return undefined;
  const id = parseInt(m[1]!, 36);
  return Number.isSafeInteger(id) && id > 0 ? id : undefined;
}

/** Whether `token` is the feed token of this license as it is now (its id and its current user key). */
export async function feedTokenHolds(
  secret: string | undefined,
  token: string,
  license: { id: number; userKey: string },
): Promise<boolean> {
  const m = TOKEN.exec(token);
  if (!m || feedTokenLicenseId(token) !== license.id) return false;
  return timingSafeEqualText(await macOf(secret, license.id, license.userKey), m[2]!);
}
