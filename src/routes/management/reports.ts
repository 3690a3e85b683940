import { Roles } from "../../auth/guard";
import { crud } from "../crud";
import type { Router } from "../../http/router";
import { emit } from "../../webhooks/emit";
import { fillGeoLocationsOf, geoLocationRoute } from "./geolocation";
import { showPublicLicenseIds } from "../../licensing/license-records";
import { Report, removeReportBody, reportRecord } from "../../licensing/report-store";

const locateReportsRoute = geoLocationRoute({
  path: "/v1/reports/geolocation",
  tag: "Reports",
  operationId: "locateReports",
  label: "received reports",
});

export function registerReports(app: Router): void {
  const managers = Roles.managers;
  crud(app, {
    entity: Report,
    path: "/v1/reports",
    tag: "Reports",
    operationIds: { list: "listReports", delete: "deleteReport" },
    label: "received report",
    operations: ["list", "delete"],
    idParam: "reportId",
    roles: { list: managers, create: managers, update: managers, delete: managers },
    list: { decorate: showPublicLicenseIds },
    hooks: {
      // A body kept in R2 goes first, as the retention does (licensing/retention.ts): no body outlives its row.
      delete: (ctx, existing) => removeReportBody(ctx.env, existing),
      written: (ctx, operation, row) => {
        if (operation === "delete")
          emit(ctx, "report.deleted", async () => ({ data: await reportRecord(ctx.db, ctx.config, row) }));
      },
    },
  });
  app.openapi(locateReportsRoute, fillGeoLocationsOf("reports"));
}
