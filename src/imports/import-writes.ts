/**
 * Writing a chunk of import rows (CONTRACT 16), free of HTTP: what is there already is read first (licenses by source
 * id or legacy key, the service's own keys a legacy key would read as, customers by source id or email), each row is
 * judged (new, imported before and skipped, or refused with its reason), and the new ones are written with one
 * multi-row statement per table, whatever their number: customers and licenses in one D1 batch (a transaction), then
 * their machines, whose tokens are derived from the licenses' row ids as activate derives them (so validate and
 * activate find them). Every statement skips a row a concurrent writer stored meanwhile (`ON CONFLICT DO NOTHING`):
 * a license the statements did not store is reported with its row. Should the machines' write fail after the
 * licenses', a second run finds those licenses without any machine and activates their machines again. A dry run
 * judges and writes nothing.
 */
import type { Db } from "../db/client";
import { generateCode } from "../http/repository";
import { sha256Hex } from "../kernel/crypto";
import { type LicenseKeyGenerator, generateLicenseKeys, signLicense } from "../licensing/license-core";
import { clientToken } from "../licensing/client-tokens";
import { tokenPrefix } from "../licensing/tokens";
import type { Config } from "../kernel/config";
import { typedKey } from "../licensing/user-key";
import { Mode, TokenKind } from "../records/vocabulary";
import type { ImportProblem, ImportRow } from "./rows";

/** What writing (or judging, in a dry run) a chunk came to. */
export interface ChunkOutcome {
  created: { customers: number; licenses: number; activations: number };
  /** Rows imported before: left as they are. */
  skipped: number;
  errors: ImportProblem[];
}

export interface ChunkSettings {
  /** The configuration: the integrity and client-token keys, the user key format. */
  config: Config;
  /** Product codes to their ids (rows naming another product are refused before). */
  products: ReadonlyMap<string, number>;
  now: Date;
  dryRun: boolean;
  /** The identifiers of new licenses (a test forces a collision with it). */
  generate?: LicenseKeyGenerator;
}

/** A new row, judged, and the key of its customer (customerKeysOf). */
interface NewRow {
  row: ImportRow;
  digest: string;
  customerKey?: string;
}

const json = (value: unknown) => JSON.stringify(value);

/** Inserts of a chunk's licenses after the first, for those a generated identifier kept out. */
const LICENSE_ATTEMPTS = 2;

/** The maintenance end of an imported perpetual license: none in practice. */
export const MAINTENANCE_FOREVER = "9999-12-31T23:59:59.999Z";

/** A license already there that a row names. */
interface ExistingLicense {
  id: number;
  licenseId: string;
  sourceId: string | null;
  digest: string | null;
  /** Its tokens (machines and seats). */
  tokens: number;
}

/** A machine to activate on a stored license. */
interface Machine {
  licenseRowId: number;
  machine: ImportRow["machines"][number];
}

/**
 * The keys a row's customer is matched by, in order: its source id (`keygen:<id>`), its email (`email:<lower case>`).
 * A customer already there by either is the row's; else a new one, keyed by the first.
 */
function customerKeysOf(row: ImportRow, source: string): string[] {
  const customer = row.customer;
  return [
    ...(customer?.sourceId ? [`${source}:${customer.sourceId}`] : []),
    ...(customer?.email ? [`email:${customer.email.toLowerCase()}`] : []),
  ];
}

/** What is there already of the chunk's rows: licenses by source id and digest, user keys, customers. */
async function readExisting(db: Db, rows: ImportRow[], digests: string[], source: string) {
  const sourceIds = rows.flatMap((r) => (r.sourceId ? [`${source}:${r.sourceId}`] : []));
  const compacts = (await Promise.all(rows.map((r) => typedKey(r.legacyKey)))).map((k) => k.compact);
  const customerKeys = rows.flatMap((r) => customerKeysOf(r, source));
  const [licenses, userKeys, customers] = await db.$client.batch([
    db.$client
      .prepare(
        `SELECT id, license_id AS licenseId, source_id AS sourceId, legacy_key_digest AS digest,
           (SELECT count(*) FROM license_tokens AS t WHERE t.license_id = l.id) AS tokens
         FROM licenses AS l
         WHERE source_id IN (SELECT value FROM json_each(?1)) OR legacy_key_digest IN (SELECT value FROM json_each(?2))`,
      )
      .bind(json(sourceIds), json(digests)),
    db.$client
      .prepare(
        `SELECT replace(user_key, '-', '') AS compact FROM licenses
         WHERE replace(user_key, '-', '') IN (SELECT value FROM json_each(?1))`,
      )
      .bind(json(compacts.filter((c) => c !== ""))),
    db.$client
      .prepare(
        `SELECT source_id AS sourceId, lower(email) AS email FROM customers
         WHERE source_id IN (SELECT value FROM json_each(?1))
           OR lower(email) IN (SELECT substr(value, 7) FROM json_each(?1) WHERE value LIKE 'email:%')`,
      )
      .bind(json(customerKeys)),
  ]);
  const found = (licenses?.results ?? []) as ExistingLicense[];
  const knownCustomers = new Set<string>();
  for (const c of (customers?.results ?? []) as { sourceId: string | null; email: string | null }[]) {
    if (c.sourceId) knownCustomers.add(c.sourceId);
    if (c.email) knownCustomers.add(`email:${c.email}`);
  }
  return {
    bySource: new Map(found.filter((l) => l.sourceId).map((l) => [l.sourceId!, l])),
    byDigest: new Map(found.filter((l) => l.digest).map((l) => [l.digest!, l])),
    userKeys: new Set(((userKeys?.results ?? []) as { compact: string }[]).map((k) => k.compact)),
    compacts,
    knownCustomers,
  };
}

/** Judges each row of a chunk against what is there: new, imported before (skipped), or refused. */
async function judge(db: Db, rows: ImportRow[], source: string) {
  const digests = await Promise.all(rows.map((r) => sha256Hex(r.legacyKey)));
  const existing = await readExisting(db, rows, digests, source);
  const fresh: NewRow[] = [];
  const errors: ImportProblem[] = [];
  // Rows imported before whose license has no machine at all (a run that stopped between its two writes): their
  // machines are activated again.
  const repairs: Machine[] = [];
  let skipped = 0;
  rows.forEach((row, i) => {
    const digest = digests[i]!;
    const bySource = row.sourceId ? existing.bySource.get(`${source}:${row.sourceId}`) : undefined;
    const byKey = existing.byDigest.get(digest);
    const before = bySource ?? (byKey && (!row.sourceId || byKey.sourceId === null) ? byKey : undefined);
    if (before) {
      skipped++;
      if (before.tokens === 0) repairs.push(...row.machines.map((machine) => ({ licenseRowId: before.id, machine })));
      return;
    }
    if (byKey) {
      errors.push({
        row: row.row,
        field: "legacyKey",
        message: `License ${byKey.licenseId} already answers to this key`,
      });
      return;
    }
    if (existing.compacts[i] && existing.userKeys.has(existing.compacts[i]!)) {
      errors.push({ row: row.row, field: "legacyKey", message: "The key reads as another license's user key" });
      return;
    }
    const keys = customerKeysOf(row, source);
    const customerKey = keys.find((key) => existing.knownCustomers.has(key)) ?? keys[0];
    fresh.push({ row, digest, ...(customerKey ? { customerKey } : {}) });
  });
  return { fresh, skipped, errors, repairs, knownCustomers: existing.knownCustomers };
}

/** Judges a chunk of rows and, unless it is a dry run, writes the new ones (see the module's comment). */
export async function writeChunk(
  db: Db,
  source: string,
  rows: ImportRow[],
  settings: ChunkSettings,
): Promise<ChunkOutcome> {
  const { fresh, skipped, errors, repairs, knownCustomers } = await judge(db, rows, source);
  const stamp = settings.now.toISOString();
  // Customers: one each, the first row naming it gives its fields.
  const customers = new Map<string, ImportRow>();
  for (const { row, customerKey } of fresh)
    if (customerKey && !knownCustomers.has(customerKey) && !customers.has(customerKey)) customers.set(customerKey, row);
  const licenses = await newLicenses(fresh, settings);
  const outcome: ChunkOutcome = {
    created: {
      customers: customers.size,
      licenses: licenses.length,
      activations: fresh.reduce((n, f) => n + f.row.machines.length, 0) + repairs.length,
    },
    skipped,
    errors,
  };
  if (settings.dryRun || (licenses.length === 0 && repairs.length === 0)) return outcome;

  const products = productSources(rows, source);
  const [addedCustomers, addedLicenses] =
    licenses.length === 0
      ? await db.$client.batch([products(db)]).then(() => [])
      : (
          await db.$client.batch([
            products(db),
            customerInsert(db, customers, stamp),
            licenseInsert(db, source, licenses, stamp),
          ])
        ).slice(1);
  const stored = new Map(
    ((addedLicenses?.results ?? []) as { id: number; licenseId: string }[]).map((l) => [l.licenseId, l.id]),
  );
  // A license the statement skipped met a unique column: its legacy key or source id, stored meanwhile by another
  // import, or a generated identifier (a `lic` id is 32 bits: among 100,000 licenses two are likely to be drawn
  // twice), which new identifiers clear. Tried again with new ones, twice at most.
  let unstored = licenses.filter((l) => !stored.has(l.core.licenseId));
  for (let attempt = 0; attempt < LICENSE_ATTEMPTS && unstored.length > 0; attempt++) {
    const again = await newLicenses(unstored, settings);
    const added = await licenseInsert(db, source, again, stamp).all<{ id: number; licenseId: string }>();
    for (const l of added.results) stored.set(l.licenseId, l.id);
    licenses.push(...again.filter((l) => stored.has(l.core.licenseId)));
    unstored = again.filter((l) => !stored.has(l.core.licenseId));
  }
  // The machines, second: their tokens are the ones activate derives from the license's row id (validate finds them).
  const machines: Machine[] = [
    ...licenses.flatMap(({ row, core }) => {
      const licenseRowId = stored.get(core.licenseId);
      return licenseRowId === undefined ? [] : row.machines.map((machine) => ({ licenseRowId, machine }));
    }),
    ...repairs,
  ];
  const addedActivations = machines.length === 0 ? undefined : await machineInsert(db, source, machines, settings);
  outcome.created = {
    customers: addedCustomers?.meta.changes ?? 0,
    licenses: stored.size,
    activations: addedActivations?.meta.changes ?? 0,
  };
  for (const { row } of unstored)
    errors.push({ row: row.row, field: "legacyKey", message: "Not written: stored meanwhile by another import" });
  return outcome;
}

/** The licenses of the new rows, with their generated identifiers and integrity. */
function newLicenses(fresh: NewRow[], settings: ChunkSettings) {
  const stamp = settings.now.toISOString();
  return Promise.all(
    fresh.map(async ({ row, digest, customerKey }) => {
      const core = {
        ...(settings.generate ?? generateLicenseKeys)(settings.config["Licensing:UserKeyFormat"]),
        productId: settings.products.get(row.product)!,
        licenseType: 0,
        edition: row.edition ?? null,
        licensingMode: row.licensingMode === "floating" ? Mode.Floating : Mode.Activation,
        maxClients: row.maxClients ?? 0,
        issueDate: stamp,
        expireDate: row.expireDate ?? null,
        // Updates and maintenance run to the license's expiry, as the source's license did; a perpetual one's never end
        // (SPEC's default, a year from the issue date, would stop an imported app's updates a year after the move).
        supportExpireDate: row.expireDate ?? MAINTENANCE_FOREVER,
        revoked: row.revoked ?? false,
        features: null,
      };
      const integrity = await signLicense(settings.config["Application:EncryptionKey"], core);
      return { row, digest, customerKey, core, integrity };
    }),
  );
}

/**
 * Records the source's product ids on the service's products the rows name (the compatible routes' product scope):
 * a product keeps the first id given, and an id names one product.
 */
function productSources(rows: ImportRow[], source: string) {
  const pairs = [
    ...new Map(rows.flatMap((r) => (r.productSourceId ? [[r.product, `${source}:${r.productSourceId}`]] : []))),
  ];
  return (db: Db) =>
    db.$client
      .prepare(
        `UPDATE products SET source_id = value ->> 1 FROM json_each(?1)
         WHERE products.code = value ->> 0 AND products.source_id IS NULL
           AND NOT EXISTS (SELECT 1 FROM products AS p WHERE p.source_id = value ->> 1)`,
      )
      .bind(json(pairs));
}

function customerInsert(db: Db, customers: Map<string, ImportRow>, stamp: string) {
  return db.$client
    .prepare(
      `INSERT INTO customers (code, first_name, last_name, email, source_id, created_at, updated_at)
       SELECT value ->> 0, value ->> 1, value ->> 2, value ->> 3, value ->> 4, ?2, ?2 FROM json_each(?1) WHERE true
       ON CONFLICT DO NOTHING`,
    )
    .bind(
      json(
        [...customers].map(([key, row]) => [
          generateCode("C"),
          row.customer?.firstName ?? null,
          row.customer?.lastName ?? null,
          row.customer?.email ?? null,
          key.startsWith("email:") ? null : key,
        ]),
      ),
      stamp,
    );
}

function licenseInsert(db: Db, source: string, licenses: Awaited<ReturnType<typeof newLicenses>>, stamp: string) {
  return db.$client
    .prepare(
      `INSERT INTO licenses (license_id, user_key, product_id, customer_id, license_type, edition, licensing_mode,
         max_clients, issue_date, expire_date, support_expire_date, revoked, description, legacy_key_digest,
         legacy_key_hint, source_id, integrity, trace, check_in_days, created_at, updated_at)
       SELECT value ->> 0, value ->> 1, value ->> 2,
         CASE WHEN value ->> 3 LIKE 'email:%'
           THEN (SELECT id FROM customers WHERE lower(email) = substr(value ->> 3, 7) ORDER BY id LIMIT 1)
           ELSE (SELECT id FROM customers WHERE source_id = value ->> 3) END,
         0, value ->> 4, value ->> 5, value ->> 6, ?2, value ->> 7, value ->> 14, value ->> 8, value ->> 9,
         value ->> 10, value ->> 11, value ->> 12, value ->> 13, 1, 0, ?2, ?2
       FROM json_each(?1) WHERE true
       ON CONFLICT DO NOTHING
       RETURNING id, license_id AS licenseId`,
    )
    .bind(
      json(
        licenses.map(({ row, digest, customerKey, core, integrity }) => [
          core.licenseId,
          core.userKey,
          core.productId,
          customerKey ?? null,
          core.edition,
          core.licensingMode,
          core.maxClients,
          core.expireDate,
          core.revoked ? 1 : 0,
          row.description ?? null,
          digest,
          row.legacyKey.slice(-4),
          row.sourceId ? `${source}:${row.sourceId}` : null,
          integrity,
          core.supportExpireDate,
        ]),
      ),
      stamp,
    );
}

/**
 * Activates machines on stored licenses: each with the token activate derives for that license, machine and no client
 * (licensing/client-tokens.ts), so validate and activate find it; a machine already there is left as it is.
 */
async function machineInsert(db: Db, source: string, machines: Machine[], settings: ChunkSettings) {
  const rows = await Promise.all(
    machines.map(async ({ licenseRowId, machine }) => {
      const token = await clientToken(settings.config, TokenKind.Activation, licenseRowId, machine.fingerprint, "");
      return [
        await sha256Hex(token),
        tokenPrefix(token),
        licenseRowId,
        machine.fingerprint,
        machine.name ?? null,
        machine.sourceId ? `${source}:${machine.sourceId}` : null,
      ];
    }),
  );
  const stamp = settings.now.toISOString();
  return db.$client
    .prepare(
      `INSERT INTO license_tokens (token_digest, token_prefix, kind, license_id, machine_id, client_id, client_name,
         issue_date, expire_date, source_id, created_at, updated_at)
       SELECT value ->> 0, value ->> 1, ?3, value ->> 2, value ->> 3, '', value ->> 4, ?2,
         (SELECT expire_date FROM licenses WHERE id = value ->> 2), value ->> 5, ?2, ?2
       FROM json_each(?1) WHERE true
       ON CONFLICT DO NOTHING`,
    )
    .bind(json(rows), stamp, TokenKind.Activation)
    .run();
}
