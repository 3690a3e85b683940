/**
 * Product releases (`/v1/products/{productId}/releases`) and a release's license templates. SPEC rules: channel
 * `stable` (default) or `insider`; `requiresMaintenance` defaults to true, and `false` on an application product is
 * refused (400) unless Updates:AllowPublicApplicationReleases. Every change bumps the product's release generation,
 * which keys the cached update feeds (CONTRACT section 5).
 */
import { eq, sql } from "drizzle-orm";
import { Roles } from "../auth/guard";
import type { Db } from "../db/client";
import { refuseIfReferenced, requireById } from "../db/repository";
import { licenseTemplates, productReleases, products, releaseDownloads } from "../db/schema";
import type { ServiceContext } from "../http/context";
import { crud } from "../http/crud";
import { ApiError } from "../http/errors";
import type { Router } from "../http/router";
import { forgetProducts } from "../updates/product-memo";
import { LicenseTemplate } from "./license-templates";
import { Product } from "./products";
import { ProductRelease } from "./release-entity";

/**
 * Cached update answers are keyed by this number: any change to releases or downloads makes them stale. This isolate's
 * product memo forgets the old number once the new one is stored, so its next answer uses it (other isolates within
 * PRODUCT_MEMO_MS).
 */
export async function bumpReleaseGeneration(db: Db, productId: number): Promise<void> {
  await db.update(products).set({ releaseGeneration: sql`${products.releaseGeneration} + 1` }).where(eq(products.id, productId));
  forgetProducts();
}

async function checkMaintenanceRule(ctx: ServiceContext, productId: number, requiresMaintenance: unknown): Promise<void> {
  if (requiresMaintenance !== false || ctx.config["Updates:AllowPublicApplicationReleases"]) return;
  const product = await requireById(ctx.db, Product, productId);
  if (product["isApplication"]) {
    throw new ApiError(400, "requiresMaintenance cannot be false on an application product unless Updates:AllowPublicApplicationReleases is enabled");
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
      written: (ctx, _op, row) => bumpReleaseGeneration(ctx.db, row["productId"] as number),
    },
  });
  crud(app, {
    entity: LicenseTemplate,
    path: "/v1/products/{productId}/releases/{releaseId}/license-templates",
    tag: "Product releases",
    label: "license template",
    operations: ["list"],
    roles: { list: all, create: all, update: all, delete: all },
    scope: { param: "releaseId", parent: ProductRelease, column: licenseTemplates.releaseId, parentScope: { param: "productId", column: productReleases.productId, parent: Product } },
  });
}
