/** The product release record (SPEC "Product release", CONTRACT section 3), shared by releases, templates and updates. */
import { sql } from "drizzle-orm";
import { productReleases } from "../db/schema";
import { CHANNELS } from "../licensing/vocabulary";
import { defineEntity, f } from "../http/entity";

export { CHANNELS };

export const ProductRelease = defineEntity({
  name: "ProductRelease",
  singular: "productRelease",
  plural: "productReleases",
  table: productReleases,
  // A release's writes bump its product's release generation (http/repository.ts).
  releaseGeneration: (id) =>
    sql`(SELECT ${productReleases.productId} FROM ${productReleases} WHERE ${productReleases.id} = ${id})`,
  fields: {
    id: f.id(),
    productId: f.int({ readOnly: true }),
    version: f.string({
      max: 64,
      pattern: /^\S+$/,
      description: "major.minor.patch (optionally -prerelease) for releases that receive downloads.",
    }),
    name: f.string({ max: 256 }),
    description: f.string(),
    releaseNotes: f.string({ max: 100_000 }),
    releaseDate: f.date(),
    channel: f.oneOf(CHANNELS, { description: "stable (default) or insider." }),
    public: f.bool(),
    requiresMaintenance: f.bool({
      description: "Default true: installable only while the license's maintenance covers the release date.",
    }),
    stagingPercentage: f.int({ min: 0, max: 100 }),
    createdAt: f.date({ readOnly: true }),
    updatedAt: f.date({ readOnly: true }),
  },
  required: ["version"],
});
