/**
 * The one way a license is created or changed from outside the licensing runtime, free of HTTP: the Management API
 * (routes/management/licenses.ts) and the commerce webhooks (commerce/) both go through here, so defaults, the template,
 * the integrity HMAC, webhook events and the audit trail follow every change alike.
 */
import { eq } from "drizzle-orm";
import { clock, nowIso } from "../kernel/clock";
import { type Id, type Row, constraintError, requireById } from "../http/repository";
import { licenseTemplates, licenses } from "../db/schema";
import { Roles } from "../auth/guard";
import { legacyKeyProblem, typedKey, userKeyIs } from "./user-key";
import type { ServiceContext } from "../http/context";
import { ApiError, ValidationProblem, notFound400 } from "../kernel/errors";
import {
  LicenseConflictError,
  type LicenseRow,
  type TemplateDefaults,
  applyTemplate,
  createLicense,
  createLicenses,
  updateLicense,
} from "./license-core";
import { dropSeats } from "./tokens";
import { changedFields, emit, emitEach } from "../webhooks/emit";
import { LicenseTemplate } from "../records/license-templates";
import { License, licenseRecords } from "./license-records";

/** Stored with a default and never null: an omitted or null value on create takes the default (or the template's). */
const DEFAULTED = [
  "licenseType",
  "licensingMode",
  "maxClients",
  "revoked",
  "trace",
  "issueDate",
  "checkInDays",
] as const;

/** Changes of licenses as events: created, updated (with previous) plus revoked, deleted. */
function emitLicenseChange(
  ctx: ServiceContext,
  operation: "create" | "update" | "delete",
  row: Row,
  previous?: Row,
): void {
  if (operation === "create")
    emit(ctx, "license.created", async () => ({ data: (await licenseRecords(ctx.db, ctx.config, [row]))[0]! }));
  if (operation === "delete")
    emit(ctx, "license.deleted", async () => ({ data: (await licenseRecords(ctx.db, ctx.config, [row]))[0]! }));
  if (operation !== "update" || !previous) return;
  // A change of nothing stored is no news; both records are built once, and only for a subscriber.
  if (Object.keys(changedFields(License.toWire(previous, ctx.config), License.toWire(row, ctx.config))).length === 0)
    return;
  let records: Promise<Record<string, unknown>[]> | undefined;
  const changed = async () => {
    const [before, after] = await (records ??= licenseRecords(ctx.db, ctx.config, [previous, row]));
    return { data: after!, previous: changedFields(before!, after!) };
  };
  emit(ctx, "license.updated", changed);
  if (row["revoked"] && !previous["revoked"]) emit(ctx, "license.revoked", changed);
}

/** After a stored change: seats of a deleted license, events, and the audit trail (revocations and deletions). */
export async function licenseWritten(
  ctx: ServiceContext,
  operation: "create" | "update" | "delete",
  row: Row,
  previous?: Row,
): Promise<void> {
  // The row goes first, its tokens with it (foreign key), then its seats: a delete that fails keeps every client.
  if (operation === "delete") await dropSeats(ctx.env, row["id"] as number);
  emitLicenseChange(ctx, operation, row, previous);
  // The audit trail (db/logging.ts): revocations and deletions, by whom; never the user key.
  const about = { licenseId: row["licenseId"], id: row["id"] };
  if (operation === "delete")
    ctx.log?.audit("LicenseDeleted", `License ${String(row["licenseId"])} deleted`, ctx, about);
  if (operation === "update" && row["revoked"] && !previous?.["revoked"])
    ctx.log?.audit("LicenseRevoked", `License ${String(row["licenseId"])} revoked`, ctx, about);
}

/** The license's template (when it names one), or 400 unless that template is for the license's product. */
async function checkTemplateProduct(ctx: ServiceContext, license: Row): Promise<TemplateDefaults | undefined> {
  const templateId = license["templateId"];
  if (typeof templateId !== "number") return undefined;
  const template = await ctx.db.select().from(licenseTemplates).where(eq(licenseTemplates.id, templateId)).get();
  if (!template) throw notFound400(LicenseTemplate.name, templateId);
  if (template.productId !== license["productId"]) {
    throw new ApiError(
      400,
      `LicenseTemplate ${template.id} is for product ${template.productId}, not product ${String(license["productId"])}`,
    );
  }
  return template;
}

/**
 * A new license's legacy key (CONTRACT 16), when the body gives one: trimmed and checked (400 naming it), given by an
 * Administrator or a LicenseManager only (403; an import or a purchase has no principal), not readable as another
 * license's user key (one typed key names one license), stored as its digest (unique: storeNewLicense) and shown as its
 * last 4 characters.
 */
async function takeLegacyKey(ctx: ServiceContext, values: Row): Promise<void> {
  const given = values["legacyKey"];
  delete values["legacyKey"];
  if (given === undefined || given === null) return;
  const roles = ctx.principal?.roles;
  if (roles && !roles.some((role) => (Roles.managers as readonly string[]).includes(role)))
    throw new ApiError(403, "Only an Administrator or a LicenseManager gives a license a legacyKey");
  const key = String(given).trim();
  const problem = legacyKeyProblem(key);
  if (problem) throw new ValidationProblem({ legacyKey: [problem] });
  const typed = await typedKey(key);
  if (typed.compact !== "") {
    const taken = await ctx.db.select({ id: licenses.id }).from(licenses).where(userKeyIs(typed.compact, "")).get();
    if (taken) throw new ValidationProblem({ legacyKey: [LEGACY_KEY_TAKEN] });
  }
  values["legacyKeyDigest"] = typed.legacy;
  values["legacyKey"] = key.slice(-4);
}

const LEGACY_KEY_TAKEN = "Another license already answers to this key";

/** Create: defaults for omitted values, then the template's; identifiers and integrity come at insert. */
export async function prepareNewLicense(ctx: ServiceContext, values: Row): Promise<Row> {
  const given = Object.fromEntries(
    Object.entries(values).filter(
      ([key, value]) => !(value === null && (DEFAULTED as readonly string[]).includes(key)),
    ),
  );
  await takeLegacyKey(ctx, given);
  given["issueDate"] ??= nowIso();
  const template = await checkTemplateProduct(ctx, given);
  return template ? applyTemplate(given, template) : given;
}

/** Update: defaulted values cannot be cleared, and the template must stay on the license's product. */
export async function checkLicenseUpdate(ctx: ServiceContext, values: Row, existing: Row): Promise<Row> {
  const cleared = DEFAULTED.filter((key) => values[key] === null);
  if (cleared.length > 0) throw new ApiError(400, `A license's ${cleared.join(", ")} cannot be cleared`);
  if (values["legacyKey"] !== undefined)
    throw new ValidationProblem({ legacyKey: ["Given when the license is created or imported; it cannot be changed"] });
  if (values["productId"] !== undefined || values["templateId"] !== undefined)
    await checkTemplateProduct(ctx, { ...existing, ...values });
  return values;
}

/** The update and its new integrity HMAC, in one conditional statement (license-core.ts `updateLicense`). */
export async function saveLicenseUpdate(ctx: ServiceContext, id: Id, values: Row): Promise<Row> {
  let row: LicenseRow | undefined;
  try {
    row = await updateLicense(
      ctx.db,
      ctx.config["Application:EncryptionKey"],
      id as number,
      values as Parameters<typeof updateLicense>[3],
      clock.now(),
    );
  } catch (e) {
    if (e instanceof LicenseConflictError) throw new ApiError(400, e.message);
    throw constraintError(License, e);
  }
  if (!row) throw notFound400(License.name, id);
  return row;
}

/** Stores a prepared new license: generated identifiers (retried on a collision) and its integrity HMAC. */
export async function storeNewLicense(ctx: ServiceContext, values: Row): Promise<Row> {
  const settings = {
    secret: ctx.config["Application:EncryptionKey"],
    userKeyFormat: ctx.config["Licensing:UserKeyFormat"],
  };
  try {
    return await createLicense(ctx.db, settings, values as Parameters<typeof createLicense>[2], clock.now());
  } catch (e) {
    const text = e instanceof Error ? `${e.message} ${e.cause instanceof Error ? e.cause.message : ""}` : String(e);
    if (/UNIQUE constraint failed: licenses\.legacy_key_digest/.test(text))
      throw new ValidationProblem({ legacyKey: [LEGACY_KEY_TAKEN] });
    throw constraintError(License, e);
  }
}

/** Creates a license as POST /v1/licenses does (values in row form, a template filling what they omit). */
export async function issueLicense(ctx: ServiceContext, values: Row): Promise<Row> {
  const row = await storeNewLicense(ctx, await prepareNewLicense(ctx, values));
  await licenseWritten(ctx, "create", row);
  return row;
}

/**
 * Creates `count` licenses of the same values as `issueLicense` creates one each (a purchase's), in a few D1 round
 * trips whatever their number: the template read once, the rows stored in batches (license-core.ts
 * `createLicenses`), their license.created events emitted together.
 */
export async function issueLicenses(ctx: ServiceContext, values: Row, count: number): Promise<Row[]> {
  if (count <= 0) return [];
  const prepared = await prepareNewLicense(ctx, values);
  const settings = {
    secret: ctx.config["Application:EncryptionKey"],
    userKeyFormat: ctx.config["Licensing:UserKeyFormat"],
  };
  let rows: Row[];
  try {
    rows = await createLicenses(ctx.db, settings, prepared as Parameters<typeof createLicenses>[2], count, clock.now());
  } catch (e) {
    throw constraintError(License, e);
  }
  // The records are built once for all, and only for a subscriber.
  let records: Promise<Record<string, unknown>[]> | undefined;
  emitEach(
    ctx,
    "license.created",
    rows.map((_, i) => async () => ({ data: (await (records ??= licenseRecords(ctx.db, ctx.config, rows)))[i]! })),
  );
  return rows;
}

/** Changes a license as PUT /v1/licenses does (only the values given, in row form). */
export async function changeLicense(ctx: ServiceContext, id: number, values: Row): Promise<Row> {
  const existing = await requireById(ctx.db, License, id);
  const checked = await checkLicenseUpdate(ctx, values, existing);
  if (Object.keys(checked).length === 0) return existing;
  const row = await saveLicenseUpdate(ctx, id, checked);
  await licenseWritten(ctx, "update", row, existing);
  return row;
}
