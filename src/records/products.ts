/** The product record (SPEC "Product"): licensed by licensing/, released by updates/. */
import { z } from "@hono/zod-openapi";
import { products } from "../db/schema";
import { defineEntity, f } from "../http/entity";

/**
 * A link the service hands to customers: http or https only, so no `javascript:` or `data:` URL stored by a vendor's
 * staff ever becomes a link a customer clicks (the portal, the update check's renewalUrl and purchaseUrl).
 */
export const HTTP_URL = /^https?:\/\/[^\s]+$/i;

/** `url` when it is an http(s) link, else null: a value stored before products kept to HTTP_URL is never handed out. */
export const httpUrl = (url: string | null | undefined): string | null =>
  url !== null && url !== undefined && HTTP_URL.test(url) ? url : null;

/** An Apple Team ID: ten capital letters and digits, as codesign prints it (TeamIdentifier=...). */
export const TEAM_ID = /^[A-Z0-9]{10}$/;

export const Product = defineEntity({
  name: "Product",
  singular: "product",
  plural: "products",
  table: products,
  // Update answers carry product fields: a product's writes bump its own release generation (http/repository.ts).
  releaseGeneration: (id) => id,
  fields: {
    id: f.id(),
    // Not `.` or `..`: the code is a segment of update and download URLs, which URL parsers would remove.
    code: f.string({
      max: 64,
      pattern: /^(?!\.\.?$)[A-Za-z0-9._-]{1,64}$/,
      description: "Unique; letters, digits, '.', '_' and '-' (not '.' or '..').",
    }),
    name: f.string({ max: 256 }),
    description: f.string(),
    url: f.string({ max: 2048 }),
    copyright: f.string({ max: 512 }),
    isApplication: f.bool({ description: "An application receives releases with downloads (update feeds)." }),
    purchaseUrl: f.string({
      max: 2048,
      pattern: HTTP_URL,
      description: "Where to buy: an http(s) URL (the customer portal and update checks show it as a link).",
    }),
    renewalUrl: f.string({
      max: 2048,
      pattern: HTTP_URL,
      description: "Where to renew maintenance: an http(s) URL (the customer portal and update checks link to it).",
    }),
    supportEmail: f.string({ max: 256 }),
    maintenanceNoticeDays: f.int({ min: 0, max: 3650 }),
    price: f.number({ min: 0 }),
    currency: f.string({ max: 8 }),
    meta: f.string(),
    minimumVersion: f.string({
      max: 64,
      pattern: /^\d+\.\d+\.\d+$/,
      description: "major.minor.patch: callers below it get `required: true` in the update check (CONTRACT section 8).",
    }),
    sparklePublicKey: f.string({
      max: 44,
      pattern: /^[A-Za-z0-9+/]{43}=$/,
      description:
        "Sparkle's SUPublicEDKey (base64 of the 32-byte Ed25519 public key, as generate_keys prints it): an upload's " +
        "EdDSA signature (sign_update's edSignature) of a macOS zip, installer or archive must verify against it.",
    }),
    windowsPublisherNames: {
      ...f.strings({
        description:
          "The subject common names (CN) Windows builds may be signed by, as electron-builder's publisherName: an " +
          ".exe, .msi or .nupkg signed by another is refused at upload (CONTRACT section 15).",
      }),
      input: z
        .array(z.string().trim().min(1).max(256))
        .max(20)
        .openapi({ description: "Up to 20 subject common names, as the certificate shows them (CN=...)." }),
    },
    macTeamIds: {
      ...f.strings({
        description:
          "The Apple Team IDs macOS builds may be signed by: a macOS .zip whose app is signed by another is refused at upload.",
      }),
      input: z
        .array(z.string().max(10).regex(TEAM_ID, "an Apple Team ID: 10 capital letters and digits"))
        .max(20)
        .openapi({ description: "Up to 20 Team IDs (10 capital letters and digits, e.g. 7Z6EMTD2C6)." }),
    },
    tauriPublicKey: f.string({
      max: 1024,
      description:
        "Tauri's updater public key (tauri.conf.json `pubkey`: base64 of the minisign public key file): an upload's " +
        "minisign `.sig` must verify over the uploaded bytes with it.",
    }),
    createdAt: f.date({ readOnly: true }),
    updatedAt: f.date({ readOnly: true }),
  },
  required: ["code", "name"],
});
