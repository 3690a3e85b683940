/**
 * Subscription secrets and delivery signatures (CONTRACT sections 6 and 7). A secret is `whsec_` + base64 of random
 * bytes, the Standard Webhooks form. Every delivery carries two signatures over the exact body bytes:
 *   X-Service-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(UTF-8 bytes of the whole secret, "<t>.<body>")>
 *   webhook-signature:   v1,<base64 HMAC-SHA256(base64-decoded part after whsec_, "<id>.<t>.<body>")>
 * the second with `webhook-id` and `webhook-timestamp`, so receivers can verify with the standardwebhooks library.
 */
import { fromBase64, toBase64, toHex } from "../kernel/crypto";

export const SECRET_PREFIX = "whsec_";
const SECRET_BYTES = 32;
/** What Standard Webhooks accepts as a secret's key length; a given secret must decode to this many bytes. */
const MIN_SECRET_BYTES = 24;
const MAX_SECRET_BYTES = 64;

const encoder = new TextEncoder();

/** A new secret: `whsec_` + base64 of 32 bytes from the CSPRNG. */
export function generateSecret(): string {
  return SECRET_PREFIX + toBase64(crypto.getRandomValues(new Uint8Array(SECRET_BYTES)));
}

/** Why a caller-given secret is unusable, or undefined when it is a `whsec_` secret of 24 to 64 bytes. */
export function secretProblem(secret: string): string | undefined {
  const shape = "a secret is whsec_ followed by the standard base64 of 24 to 64 random bytes";
  if (!secret.startsWith(SECRET_PREFIX)) return `The secret must start with whsec_: ${shape}`;
  const encoded = secret.slice(SECRET_PREFIX.length);
  if (!/^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/.test(encoded))
    return `The secret is not valid base64: ${shape}`;
  const length = fromBase64(encoded).byteLength;
  if (length < MIN_SECRET_BYTES || length > MAX_SECRET_BYTES) return `The secret holds ${length} bytes: ${shape}`;
  return undefined;
}

async function hmac(key: Uint8Array, message: string): Promise<ArrayBuffer> {
  const imported = await crypto.subtle.importKey("raw", key, { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
  return crypto.subtle.sign("HMAC", imported, encoder.encode(message));
}

/** The signature headers of one delivery attempt: the service's own and the Standard Webhooks trio. */
export async function signatureHeaders(
  secret: string,
  eventId: string,
  timestamp: number,
  body: string,
): Promise<Record<string, string>> {
  const serviceMac = await hmac(encoder.encode(secret), `${timestamp}.${body}`);
  const standardMac = await hmac(fromBase64(secret.slice(SECRET_PREFIX.length)), `${eventId}.${timestamp}.${body}`);
  return {
    "X-Service-Signature": `t=${timestamp},v1=${toHex(serviceMac)}`,
    "webhook-id": eventId,
    "webhook-timestamp": String(timestamp),
    "webhook-signature": `v1,${toBase64(standardMac)}`,
  };
}
