/**
 * The service's signing keys (CONTRACT section 5): ES256 (ECDSA P-256) keys that sign license keys (compact JWS)
 * and update-check data (P1363 signatures over canonical JSON). They are stored as resources of type
 * `SignatureKey` holding the private JWK encrypted with Application:EncryptionKey; one is generated on first use;
 * the newest usable one signs; all are published at `GET /v1/extensions/keys`. Imported keys are cached per isolate
 * (DESIGN: no per-request key import); a key added, changed or retired elsewhere is seen within KEY_CACHE_MS.
 *
 * They are the service's own (issue 12): only an Administrator creates, changes or deletes them
 * (routes/management/resources.ts), their private part is never returned, and a row that is malformed or does not decrypt
 * never breaks signing: it is skipped (and logged once per isolate). Deleting a key retires it (`retireSigningKey`):
 * its row becomes a `RetiredSignatureKey` that no longer signs and stays published until every license key it can
 * have signed has expired (Licensing:LicenseKeyLifetime after its retirement).
 */
import { calculateJwkThumbprint } from "jose";
import { decryptSecret, encryptSecret } from "../kernel/secrets";
import { clock } from "../kernel/clock";
import type { Config } from "../kernel/config";
import { and, desc, eq, inArray, isNotNull, notExists, sql } from "drizzle-orm";
import type { Db } from "../db/client";
import { insertedRow } from "../db/insert-select";
import { resources } from "../db/schema";
import { toBase64, toBase64Url } from "../kernel/crypto";
import { forgettable, memo } from "../kernel/memo";

export const SIGNATURE_KEY_TYPE = "SignatureKey";
/** A deleted signing key: it signs no more, and is published until `meta.publishedUntil`. */
export const RETIRED_SIGNATURE_KEY_TYPE = "RetiredSignatureKey";

/** What a resource of this type is to the signing keys: the active kind, a retired one, or no signing key at all. */
export function signingKeyState(type: unknown): "active" | "retired" | undefined {
  switch (type) {
    case SIGNATURE_KEY_TYPE:
      return "active";
    case RETIRED_SIGNATURE_KEY_TYPE:
      return "retired";
    default:
      return undefined;
  }
}
/** Every resource type a signing key's row has: its `data` (the private part) is never shown (routes/management/resources.ts). */
export const SIGNING_KEY_TYPES = [SIGNATURE_KEY_TYPE, RETIRED_SIGNATURE_KEY_TYPE] as const;
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
  type: string | null;
  data: string;
  meta: string | null;
  updatedAt: string;
}

/** Rows already reported as unusable (id and version), so a bad row is logged once per isolate, not per load. */
const reported = memo<string, true>("signing-key-reports", { key: "key row id and version", max: 1024 });

let cache: { secret: string; loadedAt: number; keys: Promise<SigningKeys> } | undefined;
forgettable(
  "signing-keys",
  { key: "Application:EncryptionKey", lifetime: `${KEY_CACHE_MS} ms`, forgetOn: ["signing-keys"] },
  () => forgetSigningKeys(),
);

/** Forgets the cached keys (tests, rotation). */
export function forgetSigningKeys(): void {
  cache = undefined;
}

/**
 * Stores a new key unless a usable one appeared meanwhile. One statement decides: when isolates race on first use
 * (or after every key turned out unusable), only the first insert happens; rows known to be unusable (`unusable`)
 * do not count as a key.
 */
async function generateKeyRow(db: Db, secret: string | undefined, unusable: readonly number[]): Promise<void> {
  const pair = (await crypto.subtle.generateKey({ name: "ECDSA", namedCurve: "P-256" }, true, [
    "sign",
    "verify",
  ])) as CryptoKeyPair;
  const jwk = (await crypto.subtle.exportKey("jwk", pair.privateKey)) as JsonWebKey;
  const kid = await calculateJwkThumbprint({ kty: "EC", crv: "P-256", x: jwk.x!, y: jwk.y! });
  const now = clock.now().toISOString();
  const description = "ES256 key that signs license keys and update checks (private JWK, AES-GCM encrypted)";
  const data = await encryptSecret(secret, JSON.stringify({ ...jwk, kid }));
  const usableKey = and(
    eq(resources.type, SIGNATURE_KEY_TYPE),
    isNotNull(resources.data),
    sql`${resources.id} NOT IN (SELECT value FROM json_each(${JSON.stringify(unusable)}))`,
  );
  await db
    .insert(resources)
    .select(
      db
        .select(
          insertedRow(resources, {
            name: `Signing key ${kid}`,
            type: SIGNATURE_KEY_TYPE,
            code: kid,
            description,
            data,
            dataFormat: "jwk+aes-gcm",
            createdAt: now,
            updatedAt: now,
          }),
        )
        .from(sql`(SELECT 1)`)
        .where(notExists(db.select({ one: sql`1` }).from(resources).where(usableKey))),
    )
    .run();
}

async function readKeyRows(db: Db): Promise<KeyRow[]> {
  const rows = await db
    .select({
      id: resources.id,
      type: resources.type,
      data: resources.data,
      meta: resources.meta,
      updatedAt: resources.updatedAt,
    })
    .from(resources)
    .where(and(inArray(resources.type, [SIGNATURE_KEY_TYPE, RETIRED_SIGNATURE_KEY_TYPE]), isNotNull(resources.data)))
    .orderBy(desc(resources.id));
  return rows.flatMap(({ data, ...row }) => (data === null ? [] : [{ ...row, data }]));
}

type PrivateJwk = JsonWebKey & { kid: string; x: string; y: string; d: string };

/** The private ES256 JWK a row holds; undefined (logged once) when it is malformed or does not decrypt. */
async function keyOf(secret: string | undefined, row: KeyRow): Promise<PrivateJwk | undefined> {
  try {
    const jwk = JSON.parse(await decryptSecret(secret, row.data)) as Partial<PrivateJwk>;
    if (jwk.kty !== "EC" || jwk.crv !== "P-256" || typeof jwk.kid !== "string" || !jwk.x || !jwk.y || !jwk.d)
      throw new Error("not a private P-256 JWK with a kid");
    // Importing proves the key is whole; the import is reused for the signing key.
    await crypto.subtle.importKey(
      "jwk",
      { ...jwk, key_ops: ["sign"] } as JsonWebKey,
      { name: "ECDSA", namedCurve: "P-256" },
      false,
      ["sign"],
    );
    return jwk as PrivateJwk;
  } catch (e) {
    const version = `${row.id}@${row.updatedAt}`;
    if (!reported.has(version)) {
      reported.keep(version, true);
      console.error(
        `signing key resource ${row.id} skipped: it is malformed or does not decrypt with Application:EncryptionKey (${e instanceof Error ? e.message : String(e)})`,
      );
    }
    return undefined;
  }
}

/** Until when a retired key stays published (its row's meta); undefined for a row without a readable date. */
function publishedUntil(row: KeyRow): number | undefined {
  try {
    const meta = JSON.parse(row.meta ?? "null") as { publishedUntil?: unknown } | null;
    const until = typeof meta?.publishedUntil === "string" ? Date.parse(meta.publishedUntil) : Number.NaN;
    return Number.isNaN(until) ? undefined : until;
  } catch {
    return undefined;
  }
}

async function load(db: Db, secret: string | undefined): Promise<SigningKeys> {
  const now = clock.now().getTime();
  let rows = await readKeyRows(db);
  let keys = await Promise.all(rows.map(async (row) => ({ row, jwk: await keyOf(secret, row) })));
  const active = () => keys.filter((k) => signingKeyState(k.row.type) === "active" && k.jwk);
  if (active().length === 0) {
    await generateKeyRow(
      db,
      secret,
      keys.filter((k) => signingKeyState(k.row.type) === "active" && !k.jwk).map((k) => k.row.id),
    );
    rows = await readKeyRows(db);
    keys = await Promise.all(rows.map(async (row) => ({ row, jwk: await keyOf(secret, row) })));
  }
  const newest = active()[0]?.jwk;
  if (!newest) throw new Error("no signing key could be created");
  const privateKey = await crypto.subtle.importKey(
    "jwk",
    { ...newest, key_ops: ["sign"] },
    { name: "ECDSA", namedCurve: "P-256" },
    false,
    ["sign"],
  );
  const published = keys.filter(
    (k) => k.jwk && (signingKeyState(k.row.type) === "active" || (publishedUntil(k.row) ?? 0) > now),
  );
  return {
    kid: newest.kid,
    privateKey,
    published: published.map(({ jwk }) => ({
      kty: "EC",
      crv: "P-256",
      x: jwk!.x,
      y: jwk!.y,
      kid: jwk!.kid,
      alg: "ES256",
      use: "sig",
    })),
  };
}

/**
 * Retires a signing key (its resource's delete): the row becomes a RetiredSignatureKey, which signs no more and is
 * published until every license key it signed has expired; update-check signatures are verified when they are
 * received, so the license keys' lifetime is the longest anything it signed stays in use.
 */
export async function retireSigningKey(db: Db, config: Config, id: number): Promise<void> {
  const now = clock.now();
  const until = new Date(now.getTime() + config["Licensing:LicenseKeyLifetime"]).toISOString();
  await db
    .update(resources)
    .set({
      type: RETIRED_SIGNATURE_KEY_TYPE,
      meta: JSON.stringify({ retiredAt: now.toISOString(), publishedUntil: until }),
      updatedAt: now.toISOString(),
    })
    .where(and(eq(resources.id, id), eq(resources.type, SIGNATURE_KEY_TYPE)))
    .run();
  forgetSigningKeys();
}

/** Until when a retired key's row must stay (its publication); undefined when nothing holds it any more. */
export function retiredKeyHeldUntil(row: { meta?: unknown }): string | undefined {
  const until = publishedUntil({
    id: 0,
    type: RETIRED_SIGNATURE_KEY_TYPE,
    data: "",
    meta: typeof row.meta === "string" ? row.meta : null,
    updatedAt: "",
  });
  return until !== undefined && until > clock.now().getTime() ? new Date(until).toISOString() : undefined;
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

/** Each key's encoded protected header per type (`{"alg":"ES256","kid":…,"typ":"JWT"}`), made once. */
const headers = memo<string, string>("jws-headers", { key: "signing key id and typ", max: 18, evict: "all" });
const utf8 = new TextEncoder();

/**
 * A compact JWS (RFC 7515; ES256, header `kid`, `typ` JWT unless given: a license file's is `license-file+jwt`) over
 * the JSON payload: what `license.licenseKey` carries. Built
 * here rather than by jose's CompactSign, whose general header handling cost a validation more than the signature
 * itself (docs/performance.md): the header is the same for every key, and WebCrypto's ECDSA signature is already
 * the IEEE P1363 r||s form ES256 needs. Every JOSE library verifies it (test/client.test.ts, test/offline-license-keys.test.ts).
 */
export async function signJws(db: Db, config: Config, payload: object, typ = "JWT"): Promise<string> {
  const keys = await signingKeys(db, config);
  const name = `${keys.kid} ${typ}`;
  let header = headers.get(name);
  if (header === undefined) {
    header = headers.keep(name, toBase64Url(utf8.encode(JSON.stringify({ alg: "ES256", kid: keys.kid, typ }))));
  }
  const input = `${header}.${toBase64Url(utf8.encode(JSON.stringify(payload)))}`;
  const signature = await crypto.subtle.sign({ name: "ECDSA", hash: "SHA-256" }, keys.privateKey, utf8.encode(input));
  return `${input}.${toBase64Url(signature)}`;
}

/** An ES256 signature of the bytes: standard base64 of the 64-byte IEEE P1363 (r||s) form, with the key's id. */
export async function signBytes(
  db: Db,
  config: Config,
  bytes: Uint8Array,
): Promise<{ signature: string; keyId: string }> {
  const keys = await signingKeys(db, config);
  const signature = await crypto.subtle.sign({ name: "ECDSA", hash: "SHA-256" }, keys.privateKey, bytes);
  return { signature: toBase64(signature), keyId: keys.kid };
}
