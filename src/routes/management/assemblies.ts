/**
 * Assemblies: `/v1/assemblies` (Administrator) and a release's own
 * `/v1/products/{productId}/releases/{releaseId}/assemblies` (management roles, releaseId from the path).
 */
import { Roles } from "../../auth/guard";
import { assemblies, productReleases } from "../../db/schema";
import { crud } from "../crud";
import { defineEntity, f } from "../../http/entity";
import type { Router } from "../../http/router";
import { ProductRelease } from "../../records/releases";
import { Resource } from "./resources";
import { Product } from "../../records/products";

export const Assembly = defineEntity({
  name: "Assembly",
  singular: "assembly",
  plural: "assemblies",
  table: assemblies,
  fields: {
    id: f.id(),
    name: f.string({ max: 256 }),
    version: f.string({ max: 64 }),
    culture: f.string({ max: 32 }),
    publicKeyToken: f.string({ max: 64 }),
    mappingFileId: f.int({ min: 1, description: "A resource holding the obfuscation mapping file." }),
    debugSymbolsKey: f.string({ max: 256 }),
    description: f.string(),
    releaseId: f.int({ min: 1 }),
    createdAt: f.date({ readOnly: true }),
    updatedAt: f.date({ readOnly: true }),
  },
  required: ["name"],
});

export function registerAssemblies(app: Router): void {
  const admin = Roles.admin;
  crud(app, {
    entity: Assembly,
    path: "/v1/assemblies",
    tag: "Assemblies",
    operationIds: {
      list: "listAssemblies",
      create: "createAssembly",
      update: "updateAssembly",
      delete: "deleteAssembly",
    },
    roles: { list: admin, create: admin, update: admin, delete: admin },
    references: { mappingFileId: Resource, releaseId: ProductRelease },
  });
  const all = Roles.management;
  crud(app, {
    entity: Assembly,
    path: "/v1/products/{productId}/releases/{releaseId}/assemblies",
    tag: "Product releases",
    operationIds: {
      list: "listProductReleaseAssemblies",
      create: "createProductReleaseAssembly",
      update: "updateProductReleaseAssembly",
      delete: "deleteProductReleaseAssembly",
    },
    label: "release assembly",
    roles: { list: all, create: all, update: all, delete: all },
    references: { mappingFileId: Resource },
    scope: {
      param: "releaseId",
      parent: ProductRelease,
      column: assemblies.releaseId,
      parentScope: { param: "productId", column: productReleases.productId, parent: Product },
    },
  });
}
