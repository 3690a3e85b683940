// Bulk seeding for the benchmark's scale runs: licenses inserted straight into D1 (through Miniflare's
// getD1Database) as batches of multi-row INSERTs, signed with the integrity HMAC the service computes
// (src/licensing/license-core.ts), so the filler reads as ordinary licenses to every route that lists or counts them.
// The few licenses the scenarios use are created through the API; `verifyIntegrity` checks this file's HMAC against
// one of them, so a change to the service's signing is caught before any number is taken.
import { createHmac, hkdfSync, randomInt } from "node:crypto";

const ROWS_PER_STATEMENT = 1000;
const STATEMENTS_PER_BATCH = 10;
const CROCKFORD32 = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";
const DAY_MS = 86_400_000;

/**
 * The HMAC key of src/licensing/license-core.ts: HKDF-SHA256 of Application:EncryptionKey with an empty salt and the
 * purpose as `info`, 256 bits (what WebCrypto's deriveKey produces for an HMAC-SHA256 key of that length).
 */
function integrityKey(secret) {
  return Buffer.from(
    hkdfSync(
      "sha256",
      Buffer.from(secret, "utf8"),
      Buffer.alloc(0),
      Buffer.from("licensing/license-integrity/v1", "utf8"),
      32,
    ),
  );
}

/** canonicalLicense of src/licensing/license-core.ts, over a row in D1's column names. */
function canonical(row) {
  return JSON.stringify([
    "license/v1",
    row.license_id,
    row.user_key,
    Number(row.product_id),
    Number(row.license_type),
    row.edition ?? null,
    Number(row.licensing_mode),
    Number(row.max_clients),
    row.issue_date,
    row.expire_date ?? null,
    row.support_expire_date ?? null,
    Boolean(row.revoked),
    typeof row.features === "string" ? JSON.parse(row.features) : (row.features ?? null),
  ]);
}

function sign(key, row) {
  return createHmac("sha256", key).update(canonical(row)).digest("hex");
}

/** Throws unless this file signs a license created through the API exactly as the service did. */
export async function verifyIntegrity(db, secret, licenseRowId) {
  const row = await db.prepare("SELECT * FROM licenses WHERE id = ?").bind(licenseRowId).first();
  if (!row) throw new Error(`license ${licenseRowId} not found`);
  if (sign(integrityKey(secret), row) !== row.integrity) {
    throw new Error(
      "bench/seed.mjs signs licenses differently from src/licensing/license-core.ts: update its canonical form",
    );
  }
}

function userKey() {
  let out = "";
  for (let group = 0; group < 5; group++) {
    if (group > 0) out += "-";
    for (let i = 0; i < 5; i++) out += CROCKFORD32[randomInt(32)];
  }
  return out;
}

const COLUMNS = [
  "license_id",
  "user_key",
  "product_id",
  "license_type",
  "edition",
  "licensing_mode",
  "max_clients",
  "issue_date",
  "expire_date",
  "support_expire_date",
  "revoked",
  "features",
  "licensee_name",
  "trace",
  "integrity",
  "created_at",
  "updated_at",
];
// One bound value per statement (a JSON array of rows), far under D1's 100 bound parameters per statement.
const INSERT = `INSERT INTO licenses (${COLUMNS.join(", ")})
  SELECT ${COLUMNS.map((_, i) => `json_extract(j.value, '$[${i}]')`).join(", ")} FROM json_each(?1) AS j`;

/** A filler license: a mix of modes, editions, expiries and a few revoked ones, as a vendor's table would hold. */
function fillerRow(key, productId, n, now) {
  const issued = new Date(now - (n % 1000) * DAY_MS).toISOString();
  const row = {
    // `lic` + 8 upper-case hex, from a range apart from the random ids the API draws for the scenario licenses.
    license_id: `lic${(0x80000000 + n).toString(16).toUpperCase()}`,
    user_key: userKey(),
    product_id: productId,
    license_type: n % 10 === 0 ? 2 : 0,
    edition: n % 4 === 0 ? "Ultimate" : "Standard",
    licensing_mode: n % 3,
    max_clients: (n % 3) * 5,
    issue_date: issued,
    expire_date: n % 5 === 0 ? new Date(now + ((n % 700) - 200) * DAY_MS).toISOString() : null,
    support_expire_date: null,
    revoked: n % 97 === 0 ? 1 : 0,
    features: n % 2 === 0 ? JSON.stringify(["export", "sync"]) : null,
    licensee_name: `Licensee ${n}`,
    trace: 1,
    created_at: issued,
    updated_at: issued,
  };
  row.integrity = sign(key, row);
  return COLUMNS.map((c) => row[c]);
}

/**
 * Adds filler licenses of `productId` until the table holds `target` licenses; returns how many were added and how
 * long it took. Each D1 batch carries STATEMENTS_PER_BATCH multi-row INSERTs of ROWS_PER_STATEMENT rows.
 */
export async function fillLicenses(db, { secret, productId, target }) {
  const started = performance.now();
  const { n: existing } = await db.prepare("SELECT count(*) AS n FROM licenses").first();
  const key = integrityKey(secret);
  const { next } = await db.prepare("SELECT coalesce(max(id), 0) + 1 AS next FROM licenses").first();
  const now = Date.now();
  let added = 0;
  const missing = Math.max(0, target - existing);
  while (added < missing) {
    const statements = [];
    for (let s = 0; s < STATEMENTS_PER_BATCH && added < missing; s++) {
      const rows = [];
      for (let r = 0; r < ROWS_PER_STATEMENT && added < missing; r++, added++)
        rows.push(fillerRow(key, productId, next + added, now));
      statements.push(db.prepare(INSERT).bind(JSON.stringify(rows)));
    }
    await db.batch(statements);
  }
  return { added, total: existing + added, seconds: (performance.now() - started) / 1000 };
}
