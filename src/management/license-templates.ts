/**
 * License templates (`/v1/license-templates`): defaults a license takes from its template (CONTRACT section 3).
 * Listing is open to the management roles; creating, changing and deleting to Administrator and LicenseManager.
 * Deleting a template leaves its licenses as they are (their templateId is cleared).
 */
import { Roles } from "../auth/guard";
import { LICENSE_TYPES, LICENSING_MODES } from "../licensing/vocabulary";
import { licenseTemplates } from "../db/schema";
import { crud } from "../http/crud";
import { defineEntity, f } from "../http/entity";
import type { Router } from "../http/router";
import { Product } from "./products";
import { ProductRelease } from "./release-entity";

/** The names of the stored numbers (licensing/vocabulary.ts). */
export const LicenseType = LICENSE_TYPES;
export const LicensingMode = LICENSING_MODES;

export const LicenseTemplate = defineEntity({
  name: "LicenseTemplate",
  singular: "licenseTemplate",
  plural: "licenseTemplates",
  table: licenseTemplates,
  fields: {
    id: f.id(),
    name: f.string({ max: 256 }),
    code: f.string({ max: 64 }),
    productId: f.int({ min: 1 }),
    releaseId: f.int({ min: 1 }),
    licenseType: f.enumOf(LicenseType),
    edition: f.string({ max: 64 }),
    licensingMode: f.enumOf(LicensingMode),
    maxClients: f.int({ min: 0, description: "Activations (Activation mode) or concurrent seats (Floating); 0 = unlimited." }),
    expireDays: f.int({ min: 0, description: "Days from the issue date to expiry; none = perpetual." }),
    supportDays: f.int({ min: 0, description: "Days from the issue date to the end of maintenance." }),
    features: f.strings(),
    description: f.string(),
    meta: f.string(),
    createdAt: f.date({ readOnly: true }),
    updatedAt: f.date({ readOnly: true }),
  },
  required: ["name", "productId"],
});

export function registerLicenseTemplates(app: Router): void {
  crud(app, {
    entity: LicenseTemplate,
    path: "/v1/license-templates",
    tag: "License templates",
    label: "license template",
    idParam: "templateId",
    roles: { list: Roles.management, create: Roles.managers, update: Roles.managers, delete: Roles.managers },
    references: { productId: Product, releaseId: ProductRelease },
  });
}
