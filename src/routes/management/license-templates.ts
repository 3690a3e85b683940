/**
 * License templates (`/v1/license-templates`): defaults a license takes from its template (CONTRACT section 3).
 * Listing is open to the management roles; creating, changing and deleting to Administrator and LicenseManager.
 * Deleting a template leaves its licenses as they are (their templateId is cleared).
 */
import { Roles } from "../../auth/guard";
import { crud } from "../crud";
import type { Router } from "../../http/router";
import { ProductRelease } from "../../records/releases";
import { Product } from "../../records/products";
import { LicenseTemplate } from "../../records/license-templates";

export function registerLicenseTemplates(app: Router): void {
  crud(app, {
    entity: LicenseTemplate,
    path: "/v1/license-templates",
    tag: "License templates",
    operationIds: {
      list: "listLicenseTemplates",
      create: "createLicenseTemplate",
      update: "updateLicenseTemplate",
      delete: "deleteLicenseTemplate",
    },
    label: "license template",
    idParam: "templateId",
    roles: { list: Roles.management, create: Roles.managers, update: Roles.managers, delete: Roles.managers },
    references: { productId: Product, releaseId: ProductRelease },
  });
}
