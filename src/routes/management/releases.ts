import { Roles } from "../../auth/guard";
import { refuseIfReferenced, requireById } from "../../http/repository";
import { licenseTemplates, productReleases, releaseDownloads } from "../../db/schema";
import type { ServiceContext } from "../../http/context";
import { crud } from "../crud";
import { ApiError } from "../../kernel/errors";
import type { AppEnv } from "../../http/app-env";
import type { Router } from "../../http/router";
import { ProductRelease } from "../../records/releases";
import { Product } from "../../records/products";
import { LicenseTemplate } from "../../records/license-templates";
import { checkReleaseControl, haltRelease, releaseChangeEvents, resumeRelease } from "../../updates/release-control";
import { type RouteHandler, createRoute, z } from "@hono/zod-openapi";
import { access } from "../../auth/guard";
import { serviceContext } from "../../http/context";
import { enveloped, errorResponses, int32PathParam, json, jsonBody } from "../../http/openapi";
import { ok } from "../../http/respond";

async function checkMaintenanceRule(
  ctx: ServiceContext,
  productId: number,
  requiresMaintenance: unknown,
): Promise<void> {
  if (requiresMaintenance !== false || ctx.config["Updates:AllowPublicApplicationReleases"]) return;
  const product = await requireById(ctx.db, Product, productId);
  if (product["isApplication"]) {
    throw new ApiError(
      400,
      "requiresMaintenance cannot be false on an application product unless Updates:AllowPublicApplicationReleases is enabled",
    );
  }
}

export function registerReleases(app: Router): void {
  const all = Roles.management;
  const scope = { param: "productId", parent: Product, column: productReleases.productId };
  crud(app, {
    entity: ProductRelease,
    path: "/v1/products/{productId}/releases",
    tag: "Product releases",
    operationIds: {
      list: "listProductReleases",
      get: "getProductRelease",
      create: "createProductRelease",
      update: "updateProductRelease",
      delete: "deleteProductRelease",
    },
    label: "product release",
    // One release by id (issue 37), with the list's roles: what the publisher and the console read back.
    operations: ["list", "get", "create", "update", "delete"],
    roles: { list: all, create: all, update: all, delete: all },
    idParam: "releaseId",
    scope,
    hooks: {
      create: async (ctx, values) => {
        await checkMaintenanceRule(ctx, values["productId"] as number, values["requiresMaintenance"]);
        await checkReleaseControl(ctx, values);
        return values;
      },
      update: async (ctx, values, existing) => {
        await checkMaintenanceRule(ctx, existing["productId"] as number, values["requiresMaintenance"]);
        if (
          values["requiresMaintenance"] === null ||
          values["channel"] === null ||
          values["public"] === null ||
          values["rollback"] === null ||
          values["critical"] === null
        ) {
          throw new ApiError(400, "requiresMaintenance, channel, public, rollback and critical cannot be cleared");
        }
        await checkReleaseControl(ctx, values, existing);
        return values;
      },
      written: (ctx, operation, row, previous) => {
        if (operation !== "delete") releaseChangeEvents(ctx, row, previous);
      },
      delete: (ctx, existing) =>
        refuseIfReferenced(ctx.db, ProductRelease, existing["id"] as number, [
          { label: "downloads", table: releaseDownloads, column: releaseDownloads.releaseId },
          { label: "license templates", table: licenseTemplates, column: licenseTemplates.releaseId },
        ]),
      // Every write bumps the product's release generation in the repository (ProductRelease.releaseGeneration).
    },
  });
  crud(app, {
    entity: LicenseTemplate,
    path: "/v1/products/{productId}/releases/{releaseId}/license-templates",
    tag: "Product releases",
    operationIds: { list: "listProductReleaseLicenseTemplates" },
    label: "license template",
    operations: ["list"],
    roles: { list: all, create: all, update: all, delete: all },
    scope: {
      param: "releaseId",
      parent: ProductRelease,
      column: licenseTemplates.releaseId,
      parentScope: { param: "productId", column: productReleases.productId, parent: Product },
    },
  });

  registerHaltRoutes(app);
}

const params = z.object({ productId: int32PathParam("productId"), releaseId: int32PathParam("releaseId") });
const answer = json(enveloped({ productRelease: ProductRelease.record }), "The release as it is now");

const haltProductReleaseRoute = createRoute({
  method: "post",
  path: "/v1/products/{productId}/releases/{releaseId}/halt",
  tags: ["Product releases"],
  operationId: "haltProductRelease",
  summary: "Halt a public release: every answer offers the previous admissible release (release.halted)",
  description:
    "Stops the release at once for every caller not yet on it. A release halted already stays as it is, its note " +
    "too (no second event). 400 naming `public` for a release that is not public.",
  ...access.key(Roles.managers),
  request: {
    params,
    body: {
      ...jsonBody(
        z.object({
          reason: z.string().max(256).optional().openapi({
            description:
              "Why, in words: kept as the release's `haltNote` until it is resumed; the release.halted event carries it as `note`.",
          }),
        }),
      ),
      required: false,
    },
  },
  responses: { 200: answer, ...errorResponses },
});

const haltProductRelease: RouteHandler<typeof haltProductReleaseRoute, AppEnv> = async (c) => {
  const ctx = serviceContext(c);
  const { productId, releaseId } = c.req.valid("param");
  const body = c.req.valid("json") as { reason?: string } | undefined;
  const { row } = await haltRelease(ctx, productId, releaseId, "manual", body?.reason);
  return ok(c, { productRelease: ProductRelease.toWire(row, ctx.config) });
};

const resumeProductReleaseRoute = createRoute({
  method: "post",
  path: "/v1/products/{productId}/releases/{releaseId}/resume",
  tags: ["Product releases"],
  operationId: "resumeProductRelease",
  summary: "Resume a halted release (release.resumed)",
  description: "400 naming `halted` when the release is not halted.",
  ...access.key(Roles.managers),
  request: { params },
  responses: { 200: answer, ...errorResponses },
});

const resumeProductRelease: RouteHandler<typeof resumeProductReleaseRoute, AppEnv> = async (c) => {
  const ctx = serviceContext(c);
  const { productId, releaseId } = c.req.valid("param");
  const row = await resumeRelease(ctx, productId, releaseId);
  return ok(c, { productRelease: ProductRelease.toWire(row, ctx.config) });
};

/** POST .../halt and .../resume (CONTRACT section 8): Administrator and LicenseManager. */
function registerHaltRoutes(app: Router): void {
  app.openapi(haltProductReleaseRoute, haltProductRelease);
  app.openapi(resumeProductReleaseRoute, resumeProductRelease);
}
