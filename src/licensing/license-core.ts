/**
 * Licenses as the licensing core sees them, free of HTTP so the Management API and the licensing runtime share it:
 * generated identifiers (`lic…`, user keys), the integrity HMAC over the core fields, template defaults, the
 * computed status (CONTRACT section 4) and the one way a license is stored.
 */
import { and, eq, isNull, sql } from "drizzle-orm";
import { CROCKFORD32, randomString, timingSafeEqualText, toHex } from "../kernel/crypto";
import { deriveKey, requireEncryptionKey } from "../kernel/secrets";
import { memo } from "../kernel/memo";
import type { Db } from "../db/client";
import { tokenIsLive } from "../db/rules";
import { licenseTokens, licenses } from "../db/schema";
import { Mode } from "../records/vocabulary";

export { LICENSE_STATUSES, type LicenseStatus, Mode } from "../records/vocabulary";

/** A stored license row, as drizzle reads it. */
export type LicenseRow = typeof licenses.$inferSelect;

/** The fields the integrity HMAC covers: what a client would gain by changing them in the database. */
export interface LicenseCore {
  licenseId: string;
  userKey: string;
  productId: number;
  licenseType: number;
  edition: string | null;
  licensingMode: number;
  maxClients: number;
  issueDate: string;
  expireDate: string | null;
  supportExpireDate: string | null;
  revoked: boolean;
  features: string[] | null;
}

/**
 * The columns of a license the policy judges it by (LicenseCore and its HMAC), with its row id: all a hot path that
 * only decides whether the license may be used reads.
 */
export const judgedLicenseColumns = {
  id: licenses.id,
  licenseId: licenses.licenseId,
  userKey: licenses.userKey,
  productId: licenses.productId,
  licenseType: licenses.licenseType,
  edition: licenses.edition,
  licensingMode: licenses.licensingMode,
  maxClients: licenses.maxClients,
  issueDate: licenses.issueDate,
  expireDate: licenses.expireDate,
  supportExpireDate: licenses.supportExpireDate,
  revoked: licenses.revoked,
  features: licenses.features,
  integrity: licenses.integrity,
};

/**
 * The columns a validation reads and answers with: what the policy judges, the licensee the answer names, and
 * whether the license traces. Not the license's links, description, meta or row dates.
 */
export const viewedLicenseColumns = {
  ...judgedLicenseColumns,
  licenseeName: licenses.licenseeName,
  licenseeEmail: licenses.licenseeEmail,
  licenseeCompany: licenses.licenseeCompany,
  trace: licenses.trace,
};

/** A license as a validation reads it (viewedLicenseColumns). */
export type ViewedLicense = Pick<LicenseRow, keyof typeof viewedLicenseColumns>;

const HEX_UPPER = "0123456789ABCDEF";
/** How often a colliding generated identifier is drawn again before the insert gives up. */
const KEY_ATTEMPTS = 5;
const DAY_MS = 86_400_000;

// ---------------------------------------------------------------------------------------------------------------
// Generated identifiers

/** A public license id: `lic` + 8 upper-case hex characters from the CSPRNG. */
export function generateLicenseId(): string {
  return `lic${randomString(8, HEX_UPPER)}`;
}

/** A user key shaped by Licensing:UserKeyFormat: each `X` a Crockford base32 character from the CSPRNG. */
export function generateUserKey(format: string): string {
  const characters = randomString([...format].filter((ch) => ch === "X").length, CROCKFORD32);
  let next = 0;
  return [...format].map((ch) => (ch === "X" ? characters[next++] : ch)).join("");
}

/** The identifiers a new license gets; injectable so tests can force a collision. */
export type LicenseKeyGenerator = (userKeyFormat: string) => { licenseId: string; userKey: string };
export const generateLicenseKeys: LicenseKeyGenerator = (format) => ({
  licenseId: generateLicenseId(),
  userKey: generateUserKey(format),
});

// ---------------------------------------------------------------------------------------------------------------
// Integrity

/**
 * The text the HMAC signs: the core fields in a fixed order, JSON-encoded so no value can be confused with a
 * separator, and normalized so a row reads back to the same text however the driver types it (0/1 vs booleans).
 */
export function canonicalLicense(license: LicenseCore): string {
  return JSON.stringify([
    "license/v1",
    license.licenseId,
    license.userKey,
    Number(license.productId),
    Number(license.licenseType),
    license.edition ?? null,
    Number(license.licensingMode),
    Number(license.maxClients),
    license.issueDate,
    license.expireDate ?? null,
    license.supportExpireDate ?? null,
    Boolean(license.revoked),
    license.features ?? null,
  ]);
}

/**
 * The HMAC key, derived from Application:EncryptionKey for this one purpose and imported once per isolate (the same
 * setting also keys AES-GCM encryption of secrets at rest: kernel/secrets.ts).
 */
function integrityKey(secret: string): Promise<CryptoKey> {
  return deriveKey(secret, "licensing/license-integrity/v1", { name: "HMAC", hash: "SHA-256", length: 256 }, ["sign"]);
}

async function hmacOf(secret: string | undefined, text: string): Promise<string> {
  const key = await integrityKey(requireEncryptionKey(secret, "license integrity"));
  return toHex(await crypto.subtle.sign("HMAC", key, new TextEncoder().encode(text)));
}

/** The integrity HMAC of a license (lowercase hex), as stored in its `integrity` column. */
export async function signLicense(secret: string | undefined, license: LicenseCore): Promise<string> {
  return hmacOf(secret, canonicalLicense(license));
}

/**
 * The HMACs this isolate has checked and found right, by secret and core text: the HMAC is a pure function of the
 * two, so a row read again with the same core fields is checked against the remembered HMAC without computing it
 * again (the hot paths read the same licenses at every poll). Only a match is remembered; a changed field is a new
 * text and is computed. Bounded; emptied when full.
 */
const provenIntegrity = memo<string, string>("proven-integrity", {
  key: "Application:EncryptionKey and the license's canonical core text",
  max: 8192,
  evict: "all",
});

/** Whether a stored row still carries the HMAC of its core fields; false means it was changed outside the API. */
export async function isLicenseIntact(
  secret: string | undefined,
  license: LicenseCore & { integrity: string | null },
): Promise<boolean> {
  if (license.integrity === null) {
    requireEncryptionKey(secret, "license integrity");
    return false;
  }
  const text = canonicalLicense(license);
  const key = `${secret ?? ""}\n${text}`;
  const proven = provenIntegrity.get(key);
  if (proven !== undefined) return timingSafeEqualText(proven, license.integrity);
  const expected = await hmacOf(secret, text);
  const intact = timingSafeEqualText(expected, license.integrity);
  if (intact) {
    provenIntegrity.keep(key, expected);
  }
  return intact;
}

// ---------------------------------------------------------------------------------------------------------------
// Status

/**
 * Clients using each license now: distinct machines with a live token in Activation mode (what `maxClients`
 * limits there), live tokens (seats) otherwise. One query for any number of licenses: the ids travel as one JSON
 * parameter, so a page of a thousand stays under D1's limit of bound values. Unexecuted, so activate batches it
 * after its insert (activation.ts).
 */
export function activeClientCountsQuery(db: Db, licenseIds: readonly number[], now: Date) {
  return db
    .select({
      licenseId: licenseTokens.licenseId,
      tokens: sql<number>`count(*)`.as("tokens"),
      machines: sql<number>`count(DISTINCT ${licenseTokens.machineId})`.as("machines"),
    })
    .from(licenseTokens)
    .where(
      and(
        sql`${licenseTokens.licenseId} IN (SELECT value FROM json_each(${JSON.stringify(licenseIds)}))`,
        tokenIsLive(now.toISOString()),
      ),
    )
    .groupBy(licenseTokens.licenseId);
}

/** activeClientCountsQuery's counts by license. */
export async function activeClientCounts(
  db: Db,
  licenseIds: readonly number[],
  now: Date,
): Promise<Map<number, { tokens: number; machines: number }>> {
  if (licenseIds.length === 0) return new Map();
  const rows = await activeClientCountsQuery(db, licenseIds, now);
  return new Map(rows.map((r) => [r.licenseId, { tokens: r.tokens, machines: r.machines }]));
}

/** What a license's clients count as: machines in Activation mode, seats otherwise. */
export function clientCount(licensingMode: number, counts: { tokens: number; machines: number } | undefined): number {
  if (!counts) return 0;
  return licensingMode === Mode.Activation ? counts.machines : counts.tokens;
}

// ---------------------------------------------------------------------------------------------------------------
// Templates and creation

/** The defaults a license template holds (CONTRACT section 3). */
export interface TemplateDefaults {
  licenseType: number | null;
  edition: string | null;
  licensingMode: number | null;
  maxClients: number | null;
  features: string[] | null;
  expireDays: number | null;
  supportDays: number | null;
  /** Days a license may go without checking in (CONTRACT 11); copied as the other limits. */
  checkInDays: number | null;
}

/** The date `days` days after an ISO date, as an ISO date. */
export function addDays(iso: string, days: number): string {
  return new Date(Date.parse(iso) + days * DAY_MS).toISOString();
}

/**
 * A new license's values with its template's defaults for every property the caller left out (undefined);
 * `expireDays` and `supportDays` count from `issueDate`, which must already be set.
 */
export function applyTemplate(values: Record<string, unknown>, template: TemplateDefaults): Record<string, unknown> {
  const out = { ...values };
  for (const key of ["licenseType", "edition", "licensingMode", "maxClients", "features", "checkInDays"] as const) {
    if (out[key] === undefined && template[key] !== null) out[key] = template[key];
  }
  const issueDate = out["issueDate"] as string;
  if (out["expireDate"] === undefined && template.expireDays !== null)
    out["expireDate"] = addDays(issueDate, template.expireDays);
  if (out["supportExpireDate"] === undefined && template.supportDays !== null)
    out["supportExpireDate"] = addDays(issueDate, template.supportDays);
  return out;
}

type NewLicenseRow = typeof licenses.$inferInsert;

/** Whether an insert failed only because a generated identifier was already taken. */
function isKeyCollision(error: unknown): boolean {
  const text = [
    error instanceof Error ? error.message : "",
    error instanceof Error && error.cause instanceof Error ? error.cause.message : "",
  ].join(" ");
  // The user key's compact form has an expression index, which SQLite names instead of a column.
  return /UNIQUE constraint failed: (licenses\.(license_id|user_key)|index 'licenses_user_key_compact')/.test(text);
}

/**
 * Stores a new license: the stored defaults made explicit (so the HMAC covers what the row will hold), fresh
 * identifiers, the integrity HMAC, timestamps. A generated identifier that is already taken is drawn again, up to
 * five times; other failures (and a fifth collision) are thrown as the driver reported them.
 */
export async function createLicense(
  db: Db,
  settings: LicenseSettings,
  values: NewLicenseValues,
  now: Date,
  generate: LicenseKeyGenerator = generateLicenseKeys,
): Promise<LicenseRow> {
  const base = storedDefaults(values, now);
  for (let attempt = 1; ; attempt++) {
    const row = { ...base, ...generate(settings.userKeyFormat) };
    const integrity = await signLicense(settings.secret, row);
    try {
      const [stored] = await db
        .insert(licenses)
        .values({ ...row, integrity })
        .returning();
      if (!stored) throw new Error("insert into licenses returned no row");
      return stored;
    } catch (e) {
      if (attempt < KEY_ATTEMPTS && isKeyCollision(e)) continue;
      throw e;
    }
  }
}

/** Licenses one D1 batch inserts (a statement each: a license row binds about 25 values, D1 at most 100 a statement). */
export const LICENSES_PER_BATCH = 50;

/**
 * Stores `count` new licenses of the same values as `createLicense` stores one (each its own identifiers and HMAC),
 * LICENSES_PER_BATCH to a D1 batch, so their D1 work is a few round trips, not one a license (a purchase of
 * hundreds stays within the Workers' subrequest limit). A batch is one transaction: a key collision fails it whole,
 * and it is drawn again with new identifiers, up to five times.
 */
export async function createLicenses(
  db: Db,
  settings: LicenseSettings,
  values: NewLicenseValues,
  count: number,
  now: Date,
  generate: LicenseKeyGenerator = generateLicenseKeys,
): Promise<LicenseRow[]> {
  const base = storedDefaults(values, now);
  const stored: LicenseRow[] = [];
  while (stored.length < count) {
    const size = Math.min(LICENSES_PER_BATCH, count - stored.length);
    for (let attempt = 1; ; attempt++) {
      const rows = await Promise.all(
        Array.from({ length: size }, async () => {
          const row = { ...base, ...generate(settings.userKeyFormat) };
          return { ...row, integrity: await signLicense(settings.secret, row) };
        }),
      );
      const [first, ...rest] = rows.map((row) => db.insert(licenses).values(row).returning());
      try {
        const results = await db.batch([first!, ...rest]);
        for (const [row] of results) {
          if (!row) throw new Error("insert into licenses returned no row");
          stored.push(row);
        }
        break;
      } catch (e) {
        if (attempt < KEY_ATTEMPTS && isKeyCollision(e)) continue;
        throw e;
      }
    }
  }
  return stored;
}

type LicenseSettings = { secret: string | undefined; userKeyFormat: string };
type NewLicenseValues = Omit<NewLicenseRow, "licenseId" | "userKey" | "issueDate" | "createdAt" | "updatedAt"> & {
  issueDate?: string | null;
};

/** The stored defaults made explicit, so the HMAC covers what the row will hold; timestamps `now`. */
function storedDefaults(values: NewLicenseValues, now: Date) {
  const stamp = now.toISOString();
  return {
    ...values,
    licenseType: values.licenseType ?? 0,
    licensingMode: values.licensingMode ?? Mode.File,
    maxClients: values.maxClients ?? 0,
    revoked: values.revoked ?? false,
    trace: values.trace ?? true,
    issueDate: values.issueDate ?? stamp,
    edition: values.edition ?? null,
    expireDate: values.expireDate ?? null,
    supportExpireDate: values.supportExpireDate ?? null,
    features: values.features ?? null,
    createdAt: stamp,
    updatedAt: stamp,
  };
}

/**
 * How often an update that raced another write is read, merged and signed again before it gives up: every round
 * lets at least one of the racing writers through, and a short random pause keeps them from racing in lockstep.
 */
const UPDATE_ATTEMPTS = 10;
const RETRY_PAUSE_MS = 10;

/** An update that kept losing races with other writes to the same license. */
export class LicenseConflictError extends Error {}

/**
 * Applies a partial update and signs the result again, unless the row was already tampered with: API writes never
 * vouch for values changed outside the API, so a Tampered license stays Tampered. The HMAC covers the whole row
 * while the update sets only some columns, so the UPDATE is conditional on the stored HMAC being the one that was
 * read (optimistic concurrency): a concurrent change of core fields makes it miss, and it is merged and signed again
 * over the fresh row. Undefined when the license does not exist.
 */
export async function updateLicense(
  db: Db,
  secret: string | undefined,
  id: number,
  changes: Partial<Omit<NewLicenseRow, "id" | "licenseId" | "userKey" | "integrity" | "createdAt">>,
  now: Date,
): Promise<LicenseRow | undefined> {
  requireEncryptionKey(secret, "license integrity");
  for (let attempt = 1; attempt <= UPDATE_ATTEMPTS; attempt++) {
    const existing = await db.select().from(licenses).where(eq(licenses.id, id)).get();
    if (!existing) return undefined;
    const merged = { ...existing, ...changes } as LicenseRow;
    const integrity = (await isLicenseIntact(secret, existing))
      ? await signLicense(secret, merged)
      : existing.integrity;
    const unchanged =
      existing.integrity === null ? isNull(licenses.integrity) : eq(licenses.integrity, existing.integrity);
    const [row] = await db
      .update(licenses)
      .set({ ...changes, integrity, updatedAt: now.toISOString() })
      .where(and(eq(licenses.id, id), unchanged))
      .returning();
    if (row) return row;
    await new Promise((resolve) => setTimeout(resolve, Math.random() * RETRY_PAUSE_MS * attempt));
  }
  throw new LicenseConflictError(`License ${id} kept changing while it was being updated; send the change again`);
}

/** The public `lic…` ids of licenses by integer id (one query), for records that point at a license. */
export async function publicLicenseIds(
  db: Db,
  ids: readonly (number | null | undefined)[],
): Promise<Map<number, string>> {
  const wanted = [...new Set(ids.filter((id): id is number => typeof id === "number"))];
  if (wanted.length === 0) return new Map();
  const rows = await db
    .select({ id: licenses.id, licenseId: licenses.licenseId })
    .from(licenses)
    .where(sql`${licenses.id} IN (SELECT value FROM json_each(${JSON.stringify(wanted)}))`);
  return new Map(rows.map((r) => [r.id, r.licenseId]));
}
