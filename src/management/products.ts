/**
 * Products (`/v1/products`). A product's code is unique; `isApplication` products receive releases with downloads.
 * Deleting a product is refused while releases, license templates, licenses or order lines point at it.
 */
import { eq } from "drizzle-orm";
import { Roles } from "../auth/guard";
import { refuseIfReferenced } from "../db/repository";
import { licenseTemplates, licenses, orderProducts, productReleases, products, releaseDownloads } from "../db/schema";
import { crud } from "../http/crud";
import type { ServiceContext } from "../http/context";
import { ApiError } from "../http/errors";
import { defineEntity, f } from "../http/entity";
import type { Router } from "../http/router";
import { forgetProducts } from "../updates/product-memo";

export const Product = defineEntity({
  name: "Product",
  singular: "product",
  plural: "products",
  table: products,
  fields: {
    id: f.id(),
    // Not `.` or `..`: the code is a segment of update and download URLs, which URL parsers would remove.
    code: f.string({ max: 64, pattern: /^(?!\.\.?$)[A-Za-z0-9._-]{1,64}$/, description: "Unique; letters, digits, '.', '_' and '-' (not '.' or '..')." }),
    name: f.string({ max: 256 }),
    description: f.string(),
    url: f.string({ max: 2048 }),
    copyright: f.string({ max: 512 }),
    isApplication: f.bool({ description: "An application receives releases with downloads (update feeds)." }),
    purchaseUrl: f.string({ max: 2048 }),
    renewalUrl: f.string({ max: 2048 }),
    supportEmail: f.string({ max: 256 }),
    maintenanceNoticeDays: f.int({ min: 0, max: 3650 }),
    price: f.number({ min: 0 }),
    currency: f.string({ max: 8 }),
    meta: f.string(),
    createdAt: f.date({ readOnly: true }),
    updatedAt: f.date({ readOnly: true }),
  },
  required: ["code", "name"],
});

export function registerProducts(app: Router): void {
  const all = Roles.management;
  crud(app, {
    entity: Product,
    path: "/v1/products",
    tag: "Products",
    roles: { list: all, create: all, update: all, delete: all },
    hooks: {
      update: async (ctx, values, existing) => {
        if (values["isApplication"] === false && existing["isApplication"]) await refuseIfDownloads(ctx, existing["id"] as number);
        return values;
      },
      delete: (ctx, existing) =>
        refuseIfReferenced(ctx.db, Product, existing["id"] as number, [
          { label: "releases", table: productReleases, column: productReleases.productId },
          { label: "license templates", table: licenseTemplates, column: licenseTemplates.productId },
          { label: "licenses", table: licenses, column: licenses.productId },
          { label: "order lines", table: orderProducts, column: orderProducts.productId },
        ]),
      // The update routes remember products by code: a renamed, changed or deleted product applies at once here.
      written: () => forgetProducts(),
    },
  });
}

/**
 * A product whose releases have downloads stays an application (400): the update routes serve them, and their gates
 * (updates/catalog.ts `requiresMaintenance`) count on it.
 */
async function refuseIfDownloads(ctx: ServiceContext, productId: number): Promise<void> {
  const any = await ctx.db
    .select({ id: releaseDownloads.id })
    .from(releaseDownloads)
    .innerJoin(productReleases, eq(productReleases.id, releaseDownloads.releaseId))
    .where(eq(productReleases.productId, productId))
    .limit(1)
    .get();
  if (any) throw new ApiError(400, "isApplication cannot be turned off while releases of the product have downloads");
}
