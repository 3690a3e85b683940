/**
 * Licenses (`/v1/licenses`) and the licenses of a customer, an order and a template. The license logic (generated
 * identifiers, template defaults, integrity, status) lives in licensing/licenses.ts; this module declares the
 * routes. Paths name a license by its `lic…` id or its integer id (CONTRACT section 7). Records that point at a
 * license (tokens, traces, reports) show its `lic…` id: `licenseReference` and `showPublicLicenseIds` below.
 */
import { z } from "@hono/zod-openapi";
import { eq, sql } from "drizzle-orm";
import type { SQLiteColumn } from "drizzle-orm/sqlite-core";
import { Roles } from "../auth/guard";
import { clock, nowIso } from "../clock";
import type { Config } from "../config";
import type { Db } from "../db/client";
import { type Id, type Row, constraintError } from "../db/repository";
import { licenseTemplates, licenses } from "../db/schema";
import type { ServiceContext } from "../http/context";
import { crud } from "../http/crud";
import { type Field, defineEntity, f } from "../http/entity";
import { int32 } from "../http/openapi";
import { ApiError, notFound400 } from "../http/errors";
import type { Router } from "../http/router";
import {
  LICENSE_STATUSES,
  LicenseConflictError,
  type LicenseRow,
  type TemplateDefaults,
  applyTemplate,
  createLicense,
  publicLicenseIds,
  updateLicense,
} from "../licensing/licenses";
import { describeLicenses } from "../licensing/policy";
import { dropSeats } from "../licensing/tokens";
import { changedFields, emit } from "../webhooks/emit";
import { Customer } from "./customers";
import { LicenseTemplate, LicenseType, LicensingMode } from "./license-templates";
import { Order } from "./orders";
import { Product } from "./products";

export const License = defineEntity({
  name: "License",
  singular: "license",
  plural: "licenses",
  table: licenses,
  publicId: "licenseId",
  fields: {
    id: f.id(),
    licenseId: f.string({ readOnly: true, description: "Public identifier: lic + 8 upper-case hex characters; generated, unique." }),
    userKey: f.string({ readOnly: true, description: "Generated from Licensing:UserKeyFormat (Crockford base32); unique." }),
    productId: f.int({ min: 1 }),
    customerId: f.int({ min: 1 }),
    orderId: f.int({ min: 1 }),
    templateId: f.int({ min: 1, description: "On create, the template fills every property the body omits; its product must be the license's." }),
    licenseType: f.enumOf(LicenseType),
    edition: f.string({ max: 64, description: "Standard, Professional, Ultimate …" }),
    licensingMode: f.enumOf(LicensingMode),
    maxClients: f.int({ min: 0, description: "Activations (Activation mode, distinct machines) or concurrent seats (Floating); 0 = unlimited." }),
    issueDate: f.date({ description: "Default: now." }),
    expireDate: f.date({ description: "None = perpetual; from the template's expireDays when omitted." }),
    supportExpireDate: f.date({ description: "End of maintenance; from the template's supportDays when omitted." }),
    revoked: f.bool({ description: "true revokes; only an explicit false un-revokes (partial update)." }),
    features: f.strings(),
    licenseeName: f.string({ max: 256 }),
    licenseeEmail: f.string({ max: 256 }),
    licenseeCompany: f.string({ max: 256 }),
    description: f.string(),
    trace: f.bool({ description: "Record licensing operations as traces (default true)." }),
    meta: f.string(),
    status: f.oneOf(LICENSE_STATUSES, {
      readOnly: true,
      description: "Computed (not filterable): Tampered (changed outside the API), Revoked, Expired, else Activated or NotActivated.",
    }),
    activeClientCount: f.int({ readOnly: true, description: "Computed: machines (Activation) or seats (Floating) holding a live token." }),
    createdAt: f.date({ readOnly: true }),
    updatedAt: f.date({ readOnly: true }),
  },
  required: ["productId"],
});

/** Stored with a default and never null: an omitted or null value on create takes the default (or the template's). */
const DEFAULTED = ["licenseType", "licensingMode", "maxClients", "revoked", "trace", "issueDate"] as const;

/** Computed properties of a page of licenses: one query for the page's tokens (list `decorate`). */
async function showStatus(items: Row[], rows: Row[], context: { db: Db; config: Config }): Promise<void> {
  const facts = await describeLicenses(context.db, context.config["Application:EncryptionKey"], rows as LicenseRow[], clock.now());
  items.forEach((item, i) => Object.assign(item, facts[i]));
}

/** Licenses as the API returns them (wire form with status and activeClientCount): one token query for all. */
export async function licenseRecords(db: Db, config: Config, rows: readonly Row[]): Promise<Record<string, unknown>[]> {
  const items = rows.map((row) => License.toWire(row, config) as Record<string, unknown>);
  await showStatus(items, [...rows], { db, config });
  return items;
}

/** Management changes of licenses as events: created, updated (with previous) plus revoked, deleted. */
function emitLicenseChange(ctx: ServiceContext, operation: "create" | "update" | "delete", row: Row, previous?: Row): void {
  if (operation === "create") emit(ctx, "license.created", async () => ({ data: (await licenseRecords(ctx.db, ctx.config, [row]))[0]! }));
  if (operation === "delete") emit(ctx, "license.deleted", async () => ({ data: (await licenseRecords(ctx.db, ctx.config, [row]))[0]! }));
  if (operation !== "update" || !previous) return;
  // A PUT that changed nothing stored is no news; both records are built once, and only for a subscriber.
  if (Object.keys(changedFields(License.toWire(previous, ctx.config), License.toWire(row, ctx.config))).length === 0) return;
  let records: Promise<Record<string, unknown>[]> | undefined;
  const changed = async () => {
    const [before, after] = await (records ??= licenseRecords(ctx.db, ctx.config, [previous, row]));
    return { data: after!, previous: changedFields(before!, after!) };
  };
  emit(ctx, "license.updated", changed);
  if (row["revoked"] && !previous["revoked"]) emit(ctx, "license.revoked", changed);
}

/** The license's template (when it names one), or 400 unless that template is for the license's product. */
async function checkTemplateProduct(ctx: ServiceContext, license: Row): Promise<TemplateDefaults | undefined> {
  const templateId = license["templateId"];
  if (typeof templateId !== "number") return undefined;
  const template = await ctx.db.select().from(licenseTemplates).where(eq(licenseTemplates.id, templateId)).get();
  if (!template) throw notFound400(LicenseTemplate.name, templateId);
  if (template.productId !== license["productId"]) {
    throw new ApiError(400, `LicenseTemplate ${template.id} is for product ${template.productId}, not product ${String(license["productId"])}`);
  }
  return template;
}

/** Create: defaults for omitted values, then the template's; identifiers and integrity come at insert. */
async function prepareNewLicense(ctx: ServiceContext, values: Row): Promise<Row> {
  const given = Object.fromEntries(Object.entries(values).filter(([key, value]) => !(value === null && (DEFAULTED as readonly string[]).includes(key))));
  given["issueDate"] ??= nowIso();
  const template = await checkTemplateProduct(ctx, given);
  return template ? applyTemplate(given, template) : given;
}

/** Update: defaulted values cannot be cleared, and the template must stay on the license's product. */
async function checkLicenseUpdate(ctx: ServiceContext, values: Row, existing: Row): Promise<Row> {
  const cleared = DEFAULTED.filter((key) => values[key] === null);
  if (cleared.length > 0) throw new ApiError(400, `A license's ${cleared.join(", ")} cannot be cleared`);
  if (values["productId"] !== undefined || values["templateId"] !== undefined) await checkTemplateProduct(ctx, { ...existing, ...values });
  return values;
}

/** The update and its new integrity HMAC, in one conditional statement (licensing/licenses.ts `updateLicense`). */
async function saveLicenseUpdate(ctx: ServiceContext, id: Id, values: Row): Promise<Row> {
  let row: LicenseRow | undefined;
  try {
    row = await updateLicense(ctx.db, ctx.config["Application:EncryptionKey"], id as number, values as Parameters<typeof updateLicense>[3], clock.now());
  } catch (e) {
    if (e instanceof LicenseConflictError) throw new ApiError(400, e.message);
    throw constraintError(License, e);
  }
  if (!row) throw notFound400(License.name, id);
  return row;
}

async function storeNewLicense(ctx: ServiceContext, values: Row): Promise<Row> {
  const settings = { secret: ctx.config["Application:EncryptionKey"], userKeyFormat: ctx.config["Licensing:UserKeyFormat"] };
  try {
    return await createLicense(ctx.db, settings, values as Parameters<typeof createLicense>[2], clock.now());
  } catch (e) {
    throw constraintError(License, e);
  }
}

export function registerLicenses(app: Router): void {
  const all = Roles.management;
  const list = { decorate: showStatus };
  crud(app, {
    entity: License,
    path: "/v1/licenses",
    tag: "Licenses",
    roles: { list: all, create: all, update: all, delete: Roles.managers },
    idParam: "licenseId",
    references: { productId: Product, customerId: Customer, orderId: Order, templateId: LicenseTemplate },
    list,
    createdShape: {
      licenseId: z.string().openapi({ description: "The new license's public identifier (lic…)." }),
      id: int32(1).openapi({ description: "The new license's integer id." }),
    },
    descriptions: {
      create:
        "licenseId and userKey are generated. A template (templateId) fills every property the body omits; expireDays and " +
        "supportDays count from issueDate (default now). The answer carries the lic… licenseId and the integer id.",
      delete: "Deletes the license with its tokens and traces; received reports stay, without the link. The path takes the lic… id or the integer id.",
    },
    hooks: {
      create: prepareNewLicense,
      insert: storeNewLicense,
      created: (_ctx, row) => ({ licenseId: row["licenseId"], id: row["id"] }),
      update: checkLicenseUpdate,
      save: saveLicenseUpdate,
      // The row goes first, its tokens with it (foreign key), then its seats: a delete that fails keeps every client.
      written: async (ctx, operation, row, previous) => {
        if (operation === "delete") await dropSeats(ctx.env, row["id"] as number);
        emitLicenseChange(ctx, operation, row, previous);
        // The audit trail (logging.ts): revocations and deletions, by whom; never the user key.
        const about = { licenseId: row["licenseId"], id: row["id"] };
        if (operation === "delete") ctx.log?.audit("LicenseDeleted", `License ${String(row["licenseId"])} deleted`, ctx, about);
        if (operation === "update" && row["revoked"] && !previous?.["revoked"]) ctx.log?.audit("LicenseRevoked", `License ${String(row["licenseId"])} revoked`, ctx, about);
      },
    },
  });
  const nested = { tag: "Licenses", operations: ["list"] as const, roles: { list: all, create: all, update: all, delete: all }, list };
  crud(app, { ...nested, entity: License, path: "/v1/customers/{customerId}/licenses", tag: "Customers", scope: { param: "customerId", parent: Customer, column: licenses.customerId } });
  crud(app, { ...nested, entity: License, path: "/v1/orders/{orderId}/licenses", tag: "Orders", scope: { param: "orderId", parent: Order, column: licenses.orderId } });
  crud(app, {
    ...nested,
    entity: License,
    path: "/v1/license-templates/{templateId}/licenses",
    tag: "License templates",
    scope: { param: "templateId", parent: LicenseTemplate, column: licenses.templateId },
  });
}

// ---------------------------------------------------------------------------------------------------------------
// Records that point at a license by its integer key show its lic… id (CONTRACT section 7).

/**
 * The `licenseId` property of a record that stores a license's integer key in `column`: the license's `lic…` id on
 * the wire (filled by `showPublicLicenseIds`), filtered and sorted through a subquery so `licenseId == "lic…"` works.
 */
export function licenseReference(column: SQLiteColumn): Field {
  return {
    ...f.string({ readOnly: true, description: "The license's public identifier (lic…)." }),
    sql: sql`(SELECT ${licenses.licenseId} FROM ${licenses} WHERE ${licenses.id} = ${column})`,
  };
}

/** List `decorate`: replaces the integer `licenseId` of each item with the license's `lic…` id (one query a page). */
export async function showPublicLicenseIds(items: Row[], rows: Row[], context: { db: Db }): Promise<void> {
  const ids = await publicLicenseIds(
    context.db,
    rows.map((r) => r["licenseId"] as number | null),
  );
  items.forEach((item, i) => {
    const key = rows[i]?.["licenseId"];
    item["licenseId"] = typeof key === "number" ? (ids.get(key) ?? null) : null;
  });
}
