/**
 * The service's signing keys (CONTRACT section 5): ES256 (ECDSA P-256) keys that sign license keys (compact JWS)
 * and update-check data (P1363 signatures over canonical JSON). They are stored as resources of type
 * `SignatureKey` holding the private JWK encrypted with Application:EncryptionKey; one is generated on first use;
 * the newest signs; all are published at `GET /v1/extensions/keys`. Imported keys are cached per isolate (DESIGN:
 * no per-request key import); a key added elsewhere is seen within KEY_CACHE_MS.
 */
import { CompactSign, calculateJwkThumbprint } from "jose";
import { decryptSecret, encryptSecret } from "../auth/secrets";
import { clock } from "../clock";
import type { Config } from "../config";
import type { Db } from "../db/client";
import { toBase64 } from "../auth/crypto";

export const SIGNATURE_KEY_TYPE = "SignatureKey";
const KEY_CACHE_MS = 60_000;

/** A public key as `GET /v1/extensions/keys` publishes it. */
export interface PublicJwk {
  kty: "EC";
  crv: "P-256";
  x: string;
  y: string;
  kid: string;
  alg: "ES256";
  use: "sig";
}

export interface SigningKeys {
  /** The newest key: it signs. */
  kid: string;
  privateKey: CryptoKey;
  /** Every key, newest first. */
  published: PublicJwk[];
}

interface KeyRow {
  id: number;
  data: string;
}

let cache: { secret: string; loadedAt: number; keys: Promise<SigningKeys> } | undefined;

/** Forgets the cached keys (tests, rotation). */
export function forgetSigningKeys(): void {
  cache = undefined;
}

async function generateKeyRow(db: Db, secret: string | undefined): Promise<void> {
  const pair = (await crypto.subtle.generateKey({ name: "ECDSA", namedCurve: "P-256" }, true, ["sign", "verify"])) as CryptoKeyPair;
  const jwk = (await crypto.subtle.exportKey("jwk", pair.privateKey)) as JsonWebKey;
  const kid = await calculateJwkThumbprint({ kty: "EC", crv: "P-256", x: jwk.x!, y: jwk.y! });
  const now = clock.now().toISOString();
  // One statement decides: when isolates race on first use, only the first insert happens.
  await db.$client
    .prepare(
      `INSERT INTO resources (name, type, code, description, data, data_format, created_at, updated_at)
       SELECT ?1, ?2, ?3, 'ES256 key that signs license keys and update checks (private JWK, AES-GCM encrypted)', ?4, 'jwk+aes-gcm', ?5, ?5
       WHERE NOT EXISTS (SELECT 1 FROM resources WHERE type = ?2)`,
    )
    .bind(`Signing key ${kid}`, SIGNATURE_KEY_TYPE, kid, await encryptSecret(secret, JSON.stringify({ ...jwk, kid })), now)
    .run();
}

async function readKeyRows(db: Db): Promise<KeyRow[]> {
  const { results } = await db.$client
    .prepare("SELECT id, data FROM resources WHERE type = ? AND data IS NOT NULL ORDER BY id DESC")
    .bind(SIGNATURE_KEY_TYPE)
    .all<KeyRow>();
  return results;
}

async function load(db: Db, secret: string | undefined): Promise<SigningKeys> {
  let rows = await readKeyRows(db);
  if (rows.length === 0) {
    await generateKeyRow(db, secret);
    rows = await readKeyRows(db);
  }
  const jwks = await Promise.all(rows.map(async (row) => JSON.parse(await decryptSecret(secret, row.data)) as JsonWebKey & { kid: string }));
  const newest = jwks[0];
  if (!newest) throw new Error("no signing key could be created");
  const privateKey = await crypto.subtle.importKey("jwk", { ...newest, key_ops: ["sign"] }, { name: "ECDSA", namedCurve: "P-256" }, false, ["sign"]);
  return {
    kid: newest.kid,
    privateKey,
    published: jwks.map((k) => ({ kty: "EC", crv: "P-256", x: k.x!, y: k.y!, kid: k.kid, alg: "ES256", use: "sig" })),
  };
}

/** The signing keys, created on first use and cached per isolate. */
export function signingKeys(db: Db, config: Config): Promise<SigningKeys> {
  const secret = config["Application:EncryptionKey"] ?? "";
  const now = clock.now().getTime();
  if (!cache || cache.secret !== secret || now - cache.loadedAt > KEY_CACHE_MS) {
    const keys = load(db, config["Application:EncryptionKey"]);
    cache = { secret, loadedAt: now, keys };
    keys.catch(() => {
      if (cache?.keys === keys) cache = undefined;
    });
  }
  return cache.keys;
}

/** A compact JWS (ES256, header `kid`) over the JSON payload: what `license.licenseKey` carries. */
export async function signJws(db: Db, config: Config, payload: object): Promise<string> {
  const keys = await signingKeys(db, config);
  return new CompactSign(new TextEncoder().encode(JSON.stringify(payload)))
    .setProtectedHeader({ alg: "ES256", kid: keys.kid, typ: "JWT" })
    .sign(keys.privateKey);
}

/** An ES256 signature of the bytes: standard base64 of the 64-byte IEEE P1363 (r||s) form, with the key's id. */
export async function signBytes(db: Db, config: Config, bytes: Uint8Array): Promise<{ signature: string; keyId: string }> {
  const keys = await signingKeys(db, config);
  const signature = await crypto.subtle.sign({ name: "ECDSA", hash: "SHA-256" }, keys.privateKey, bytes);
  return { signature: toBase64(signature), keyId: keys.kid };
}
