import { Roles } from "../auth/guard";
import { refuseIfReferenced, requireById } from "../http/repository";
import { licenseTemplates, productReleases, releaseDownloads } from "../db/schema";
import type { ServiceContext } from "../http/context";
import { crud } from "./crud";
import { ApiError } from "../errors";
import type { Router } from "../http/router";
import { ProductRelease } from "../updates/release";
import { Product } from "../licensing/products";
import { LicenseTemplate } from "../licensing/license-templates";

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
    label: "product release",
    roles: { list: all, create: all, update: all, delete: all },
    idParam: "releaseId",
    scope,
    hooks: {
      create: async (ctx, values) => {
        await checkMaintenanceRule(ctx, values["productId"] as number, values["requiresMaintenance"]);
        return values;
      },
      update: async (ctx, values, existing) => {
        await checkMaintenanceRule(ctx, existing["productId"] as number, values["requiresMaintenance"]);
        if (values["requiresMaintenance"] === null || values["channel"] === null || values["public"] === null) {
          throw new ApiError(400, "requiresMaintenance, channel and public cannot be cleared");
        }
        return values;
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
}
