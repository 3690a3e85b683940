/**
 * License traces (`/v1/license-traces`, Administrator and LicenseManager): what the licensing runtime recorded.
 * Listed with the list conventions, deleted by age and/or license, geolocated on demand.
 */
import { type RouteHandler, createRoute, z } from "@hono/zod-openapi";
import { Roles, access } from "../../auth/guard";
import { resolveId } from "../../http/repository";
import { serviceContext } from "../../http/context";
import { crud } from "../crud";
import { enveloped, errorResponses, int64, json } from "../../http/openapi";
import { ok } from "../../http/respond";
import type { AppEnv } from "../../http/app-env";
import type { Router } from "../../http/router";
import { deleteTraces, LicenseTrace } from "../../licensing/traces";
import { fillGeoLocationsOf, geoLocationRoute } from "./geolocation";
import { License, showPublicLicenseIds } from "../../licensing/license-records";

const isoDate = z
  .string()
  .max(64)
  .refine((s) => !Number.isNaN(Date.parse(s)), { message: "Not a valid ISO 8601 date" });
const DeleteQuery = z.object({
  before: isoDate.optional().openapi({ format: "date-time", description: "Only traces created before this date." }),
  licenseId: z
    .string()
    .min(1)
    .max(64)
    .optional()
    .openapi({ description: "Only traces of this license (lic… id or integer id)." }),
});

const managers = Roles.managers;

const deleteLicenseTracesRoute = createRoute({
  method: "delete",
  path: "/v1/license-traces",
  tags: ["License traces"],
  operationId: "deleteLicenseTraces",
  summary: "Delete license traces",
  description:
    "Deletes the traces created before `before` and/or of the license `licenseId`; with neither, every trace.",
  ...access.key(managers),
  request: { query: DeleteQuery },
  responses: {
    200: json(enveloped({ deleted: int64().openapi({ description: "Traces deleted." }) }), "Traces deleted"),
    ...errorResponses,
  },
});

const deleteLicenseTraces: RouteHandler<typeof deleteLicenseTracesRoute, AppEnv> = async (c) => {
  const ctx = serviceContext(c);
  const query = c.req.valid("query");
  const licenseId =
    query.licenseId !== undefined ? ((await resolveId(ctx.db, License, query.licenseId)) as number) : undefined;
  const deleted = await deleteTraces(ctx.db, {
    ...(query.before !== undefined ? { before: new Date(query.before).toISOString() } : {}),
    ...(licenseId !== undefined ? { licenseId } : {}),
  });
  return ok(c, { deleted });
};

const locateLicenseTracesRoute = geoLocationRoute({
  path: "/v1/license-traces/geolocation",
  tag: "License traces",
  operationId: "locateLicenseTraces",
  label: "license traces",
});

export function registerLicenseTraces(app: Router): void {
  crud(app, {
    entity: LicenseTrace,
    path: "/v1/license-traces",
    tag: "License traces",
    operationIds: { list: "listLicenseTraces" },
    label: "license trace",
    operations: ["list"],
    roles: { list: managers, create: managers, update: managers, delete: managers },
    list: { decorate: showPublicLicenseIds },
  });
  app.openapi(deleteLicenseTracesRoute, deleteLicenseTraces);
  app.openapi(locateLicenseTracesRoute, fillGeoLocationsOf("traces"));
}
