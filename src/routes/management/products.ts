/**
 * Products (`/v1/products`). A product's code is unique; `isApplication` products receive releases with downloads.
 * Deleting a product is refused while releases, license templates, licenses or order lines point at it.
 */
import { eq } from "drizzle-orm";
import { Roles } from "../../auth/guard";
import { refuseIfReferenced } from "../../http/repository";
import { licenseTemplates, licenses, orderProducts, productReleases, releaseDownloads } from "../../db/schema";
import { crud } from "../crud";
import type { ServiceContext } from "../../http/context";
import { ApiError, ValidationProblem } from "../../kernel/errors";
import type { Row } from "../../http/repository";
import { tauriPublicKeyProblem } from "../../updates/signing/minisign";
import type { Router } from "../../http/router";
import { Product } from "../../records/products";

export function registerProducts(app: Router): void {
  const all = Roles.management;
  crud(app, {
    entity: Product,
    path: "/v1/products",
    tag: "Products",
    operationIds: { list: "listProducts", create: "createProduct", update: "updateProduct", delete: "deleteProduct" },
    roles: { list: all, create: all, update: all, delete: all },
    hooks: {
      create: (_ctx, values) => checkTauriKey(values),
      update: async (ctx, values, existing) => {
        if (values["isApplication"] === false && existing["isApplication"])
          await refuseIfDownloads(ctx, existing["id"] as number);
        return checkTauriKey(values);
      },
      delete: (ctx, existing) =>
        refuseIfReferenced(ctx.db, Product, existing["id"] as number, [
          { label: "releases", table: productReleases, column: productReleases.productId },
          { label: "license templates", table: licenseTemplates, column: licenseTemplates.productId },
          { label: "licenses", table: licenses, column: licenses.productId },
          { label: "order lines", table: orderProducts, column: orderProducts.productId },
        ]),
      // The update routes remember products by code: the repository bumps a written product's release generation
      // and forgets the isolate's release memos (Product.releaseGeneration), so a change applies at once here.
    },
  });
}

/** 400 naming tauriPublicKey when it is not Tauri's updater key (updates/signing/minisign.ts reads it). */
function checkTauriKey(values: Row): Row {
  const key = values["tauriPublicKey"];
  if (typeof key !== "string") return values;
  const problem = tauriPublicKeyProblem(key.trim());
  if (problem) throw new ValidationProblem({ tauriPublicKey: [problem] });
  return { ...values, tauriPublicKey: key.trim() };
}

/**
 * A product whose releases have downloads stays an application (400): the update routes serve them, and their gates
 * (delivery/catalog.ts `requiresMaintenance`) count on it.
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
