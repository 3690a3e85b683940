/**
 * Password hashing: PBKDF2-SHA256, 100,000 iterations (the Workers runtime's maximum), 16-byte random salt,
 * stored as `pbkdf2-sha256$<iterations>$<salt b64>$<hash b64>` (CONTRACT section 3).
 */
import { fromBase64, timingSafeEqual, toBase64 } from "../kernel/crypto";

const ITERATIONS = 100_000;

/** Shortest password accepted when a user is created or a password changed (users, own profile, bootstrap). */
export const MIN_PASSWORD_LENGTH = 12;
const encoder = new TextEncoder();

async function derive(password: string, salt: Uint8Array, iterations: number): Promise<Uint8Array> {
  const key = await crypto.subtle.importKey("raw", encoder.encode(password), "PBKDF2", false, ["deriveBits"]);
  const bits = await crypto.subtle.deriveBits({ name: "PBKDF2", hash: "SHA-256", salt, iterations }, key, 256);
  return new Uint8Array(bits);
}

/** Hashes a password for storage. */
export async function hashPassword(password: string): Promise<string> {
  const salt = crypto.getRandomValues(new Uint8Array(16));
  const hash = await derive(password, salt, ITERATIONS);
  return `pbkdf2-sha256$${ITERATIONS}$${toBase64(salt)}$${toBase64(hash)}`;
}

/** A hash of no password: verifying against it costs the same as a real check, so unknown users are not revealed by timing. */
const DUMMY = "pbkdf2-sha256$100000$AAAAAAAAAAAAAAAAAAAAAA==$AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=";

/** Checks a password against a stored hash in constant time; a missing hash is checked against a dummy and fails. */
export async function verifyPassword(password: string, stored: string | null | undefined): Promise<boolean> {
  const [scheme, iterations, salt, hash] = (stored ?? DUMMY).split("$");
  if (scheme !== "pbkdf2-sha256" || !iterations || !salt || !hash) return false;
  const derived = await derive(password, fromBase64(salt), Number(iterations));
  return timingSafeEqual(derived, fromBase64(hash)) && stored !== null && stored !== undefined;
}
