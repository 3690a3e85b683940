/**
 * Licenses as the API returns them: the record, its computed status, and the `lic…` id of records that point at a
 * license.
 */
import { sql } from "drizzle-orm";
import type { SQLiteColumn } from "drizzle-orm/sqlite-core";
import { clock } from "../kernel/clock";
import type { Config } from "../kernel/config";
import type { Db } from "../db/client";
import type { Row } from "../http/repository";
import { licenses } from "../db/schema";
import { type Field, defineEntity, f } from "../http/entity";
import { LICENSE_STATUSES, type LicenseRow, publicLicenseIds } from "./license-core";
import { describeLicenses } from "./policy";
import { feedTokenOf } from "./feed-token";
import { LicenseType, LicensingMode } from "../records/license-templates";
import { LEGACY_KEY_MAX, LEGACY_KEY_MIN } from "./user-key";

export const License = defineEntity({
  name: "License",
  singular: "license",
  plural: "licenses",
  table: licenses,
  publicId: "licenseId",
  fields: {
    id: f.id(),
    licenseId: f.string({
      readOnly: true,
      description: "Public identifier: lic + 8 upper-case hex characters; generated, unique.",
    }),
    userKey: f.string({
      readOnly: true,
      description: "Generated from Licensing:UserKeyFormat (Crockford base32); unique.",
    }),
    productId: f.int({ min: 1 }),
    customerId: f.int({ min: 1 }),
    orderId: f.int({ min: 1 }),
    templateId: f.int({
      min: 1,
      description: "On create, the template fills every property the body omits; its product must be the license's.",
    }),
    licenseType: f.enumOf("LicenseType", LicenseType),
    edition: f.string({ max: 64, description: "Standard, Professional, Ultimate …" }),
    licensingMode: f.enumOf("LicensingMode", LicensingMode),
    maxClients: f.int({
      min: 0,
      description: "Activations (Activation mode, distinct machines) or concurrent seats (Floating); 0 = unlimited.",
    }),
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
    checkInDays: f.int({
      min: 0,
      description:
        "Days the license may go without checking in before license.check-in-overdue is emitted (once per overdue period); 0 = none. From the template when omitted.",
    }),
    lastCheckIn: f.date({
      readOnly: true,
      description:
        "The last online licensing operation (validate, activate, floating seat, checkout, borrow); written off the request path, so it may lag a few seconds.",
    }),
    meta: f.string(),
    legacyKey: {
      ...f.string({
        max: LEGACY_KEY_MAX,
        description:
          `A key another system issued (CONTRACT 16): ${LEGACY_KEY_MIN} to ${LEGACY_KEY_MAX} printable characters, matched exactly as typed (surrounding spaces trimmed), ` +
          "accepted wherever the user key is; unique. Set when the license is created (Administrator, LicenseManager) or imported; " +
          "stored as a digest, shown as its last 4 characters after `…`.",
      }),
      show: (value: unknown) => `…${String(value)}`,
    },
    status: f.oneOf(LICENSE_STATUSES, {
      readOnly: true,
      description:
        "Computed (not filterable): Tampered (changed outside the API), Revoked, Expired, else Activated or NotActivated.",
    }),
    activeClientCount: f.int({
      readOnly: true,
      description: "Computed: machines (Activation) or seats (Floating) holding a live token.",
    }),
    feedToken: f.string({
      readOnly: true,
      description:
        "Computed: the license's feed token, for update feeds whose URL is all an updater sends (`?feed=`). Derived " +
        "from the license and its user key: deleting the license or changing its key revokes it, and a revoked or " +
        "expired license is refused with it as with its key.",
    }),
    createdAt: f.date({ readOnly: true }),
    updatedAt: f.date({ readOnly: true }),
  },
  required: ["productId"],
});

/** Computed properties of a page of licenses: one query for the page's tokens (list `decorate`). */
export async function showStatus(items: Row[], rows: Row[], context: { db: Db; config: Config }): Promise<void> {
  const facts = await describeLicenses(
    context.db,
    context.config["Application:EncryptionKey"],
    rows as LicenseRow[],
    clock.now(),
  );
  const secret = context.config["Application:EncryptionKey"];
  const tokens = await Promise.all((rows as LicenseRow[]).map((row) => feedTokenOf(secret, row)));
  items.forEach((item, i) => Object.assign(item, facts[i], { feedToken: tokens[i] }));
}

/** Licenses as the API returns them (wire form with status and activeClientCount): one token query for all. */
export async function licenseRecords(db: Db, config: Config, rows: readonly Row[]): Promise<Record<string, unknown>[]> {
  const items = rows.map((row) => License.toWire(row, config) as Record<string, unknown>);
  await showStatus(items, [...rows], { db, config });
  return items;
}

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
