/**
 * Licenses (`/v1/licenses`) and the licenses of a customer, an order and a template. The license logic (generated
 * identifiers, template defaults, integrity, status) lives in licensing/license-core.ts; this module declares the
 * routes. Paths name a license by its `lic…` id or its integer id (CONTRACT section 7). Records that point at a
 * license (tokens, traces, reports) show its `lic…` id: `licenseReference` and `showPublicLicenseIds` below.
 */
import { z } from "@hono/zod-openapi";
import { eq } from "drizzle-orm";
import { Roles } from "../auth/guard";
import { clock, nowIso } from "../clock";
import { type Id, type Row, constraintError } from "../http/repository";
import { licenseTemplates, licenses } from "../db/schema";
import type { ServiceContext } from "../http/context";
import { crud } from "./crud";
import { int32 } from "../http/openapi";
import { ApiError, notFound400 } from "../errors";
import type { Router } from "../http/router";
import {
  LicenseConflictError,
  type LicenseRow,
  type TemplateDefaults,
  applyTemplate,
  createLicense,
  updateLicense,
} from "../licensing/license-core";
import { dropSeats } from "../licensing/tokens";
import { changedFields, emit } from "../webhooks/emit";
import { Customer } from "../licensing/customers";
import { Order } from "../licensing/orders";
import { Product } from "../licensing/products";
import { LicenseTemplate } from "../licensing/license-templates";
import { License, showStatus, licenseRecords } from "../licensing/license-records";

/** Stored with a default and never null: an omitted or null value on create takes the default (or the template's). */
const DEFAULTED = ["licenseType", "licensingMode", "maxClients", "revoked", "trace", "issueDate"] as const;

/** Management changes of licenses as events: created, updated (with previous) plus revoked, deleted. */
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
  // A PUT that changed nothing stored is no news; both records are built once, and only for a subscriber.
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

/** Create: defaults for omitted values, then the template's; identifiers and integrity come at insert. */
async function prepareNewLicense(ctx: ServiceContext, values: Row): Promise<Row> {
  const given = Object.fromEntries(
    Object.entries(values).filter(
      ([key, value]) => !(value === null && (DEFAULTED as readonly string[]).includes(key)),
    ),
  );
  given["issueDate"] ??= nowIso();
  const template = await checkTemplateProduct(ctx, given);
  return template ? applyTemplate(given, template) : given;
}

/** Update: defaulted values cannot be cleared, and the template must stay on the license's product. */
async function checkLicenseUpdate(ctx: ServiceContext, values: Row, existing: Row): Promise<Row> {
  const cleared = DEFAULTED.filter((key) => values[key] === null);
  if (cleared.length > 0) throw new ApiError(400, `A license's ${cleared.join(", ")} cannot be cleared`);
  if (values["productId"] !== undefined || values["templateId"] !== undefined)
    await checkTemplateProduct(ctx, { ...existing, ...values });
  return values;
}

/** The update and its new integrity HMAC, in one conditional statement (licensing/license-core.ts `updateLicense`). */
async function saveLicenseUpdate(ctx: ServiceContext, id: Id, values: Row): Promise<Row> {
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

async function storeNewLicense(ctx: ServiceContext, values: Row): Promise<Row> {
  const settings = {
    secret: ctx.config["Application:EncryptionKey"],
    userKeyFormat: ctx.config["Licensing:UserKeyFormat"],
  };
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
      delete:
        "Deletes the license with its tokens and traces; received reports stay, without the link. The path takes the lic… id or the integer id.",
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
        if (operation === "delete")
          ctx.log?.audit("LicenseDeleted", `License ${String(row["licenseId"])} deleted`, ctx, about);
        if (operation === "update" && row["revoked"] && !previous?.["revoked"])
          ctx.log?.audit("LicenseRevoked", `License ${String(row["licenseId"])} revoked`, ctx, about);
      },
    },
  });
  const nested = {
    tag: "Licenses",
    operations: ["list"] as const,
    roles: { list: all, create: all, update: all, delete: all },
    list,
  };
  crud(app, {
    ...nested,
    entity: License,
    path: "/v1/customers/{customerId}/licenses",
    tag: "Customers",
    scope: { param: "customerId", parent: Customer, column: licenses.customerId },
  });
  crud(app, {
    ...nested,
    entity: License,
    path: "/v1/orders/{orderId}/licenses",
    tag: "Orders",
    scope: { param: "orderId", parent: Order, column: licenses.orderId },
  });
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
