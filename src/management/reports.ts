/**
 * Received reports (`/v1/reports`, Administrator and LicenseManager): what applications sent with `POST /v1/report`.
 * Listed, deleted and geolocated here; `licenseId` shows the license's lic… id (CONTRACT section 7).
 */
import { z } from "@hono/zod-openapi";
import { Roles } from "../auth/guard";
import type { Config } from "../config";
import type { Db } from "../db/client";
import type { Row } from "../db/repository";
import { reports } from "../db/schema";
import { crud } from "../http/crud";
import { type Field, defineEntity, f } from "../http/entity";
import type { Router } from "../http/router";
import { emit } from "../webhooks/emit";
import { registerGeoLocationRoute } from "./geolocation";
import { licenseReference, showPublicLicenseIds } from "./licenses";

const ro = { readOnly: true } as const;

const Property = z.object({ name: z.string(), value: z.string().nullable() }).openapi("ReportProperty");
/** `properties`: name/value pairs sent with the report, stored as JSON. */
const properties: Field = { filter: "json", output: z.array(Property), input: z.array(Property), readOnly: true };

export const Report = defineEntity({
  name: "Report",
  singular: "report",
  plural: "reports",
  table: reports,
  fields: {
    id: f.id(),
    uid: f.string(ro),
    name: f.string({ ...ro, description: "ExceptionReport, LicenseReport or a custom name." }),
    version: f.string(ro),
    date: f.date(ro),
    licenseId: licenseReference(reports.licenseId),
    machineId: f.string(ro),
    clientId: f.string(ro),
    clientName: f.string(ro),
    contentType: f.string(ro),
    content: f.string(ro),
    address: f.string({ ...ro, description: "IP address the report came from." }),
    geoLocation: f.string({ ...ro, description: "JSON text: country, region, city, latitude, longitude, timezone." }),
    properties,
    createdAt: f.date(ro),
    updatedAt: f.date(ro),
  },
});

/** A received report as the API returns it (the license's lic… id), for events. */
export async function reportRecord(db: Db, config: Config, row: Row): Promise<Record<string, unknown>> {
  const item = Report.toWire(row, config) as Record<string, unknown>;
  await showPublicLicenseIds([item], [row], { db });
  return item;
}

export function registerReports(app: Router): void {
  const managers = Roles.managers;
  crud(app, {
    entity: Report,
    path: "/v1/reports",
    tag: "Reports",
    label: "received report",
    operations: ["list", "delete"],
    idParam: "reportId",
    roles: { list: managers, create: managers, update: managers, delete: managers },
    list: { decorate: showPublicLicenseIds },
    hooks: {
      written: (ctx, operation, row) => {
        if (operation === "delete") emit(ctx, "report.deleted", async () => ({ data: await reportRecord(ctx.db, ctx.config, row) }));
      },
    },
  });
  registerGeoLocationRoute(app, { path: "/v1/reports/geolocation", tag: "Reports", operationId: "locateReports", target: "reports", label: "received reports" });
}
