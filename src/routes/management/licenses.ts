/**
 * Licenses (`/v1/licenses`) and the licenses of a customer, an order and a template. The license logic (generated
 * identifiers, template defaults, integrity, status) lives in licensing/license-core.ts; this module declares the
 * routes. Paths name a license by its `lic…` id or its integer id (CONTRACT section 7). Records that point at a
 * license (tokens, traces, reports) show its `lic…` id: `licenseReference` and `showPublicLicenseIds` below.
 */
import { z } from "@hono/zod-openapi";
import { Roles } from "../../auth/guard";
import { licenses } from "../../db/schema";
import { crud } from "../crud";
import { int32 } from "../../http/openapi";
import type { Router } from "../../http/router";
import {
  checkLicenseUpdate,
  licenseWritten,
  prepareNewLicense,
  saveLicenseUpdate,
  storeNewLicense,
} from "../../licensing/license-writes";
import { Customer } from "../../records/customers";
import { Order } from "../../records/orders";
import { Product } from "../../records/products";
import { LicenseTemplate } from "../../records/license-templates";
import { License, showStatus } from "../../licensing/license-records";

export function registerLicenses(app: Router): void {
  const all = Roles.management;
  const list = { decorate: showStatus };
  crud(app, {
    entity: License,
    path: "/v1/licenses",
    tag: "Licenses",
    operationIds: { list: "listLicenses", create: "createLicense", update: "updateLicense", delete: "deleteLicense" },
    roles: { list: all, create: all, update: all, delete: Roles.managers },
    idParam: "licenseId",
    references: { productId: Product, customerId: Customer, orderId: Order, templateId: LicenseTemplate },
    list,
    createdShape: {
      licenseId: z.string().openapi({ description: "The new license's public identifier (lic…)." }),
      id: int32(1).openapi({ description: "The new license's integer id." }),
    },
    descriptions: {
      create:
        "licenseId and userKey are generated. A template (templateId) fills every property the body omits; expireDays and " +
        "supportDays count from issueDate (default now). The answer carries the lic… licenseId and the integer id.",
      delete:
        "Deletes the license with its tokens and traces; received reports stay, without the link. The path takes the lic… id or the integer id.",
    },
    hooks: {
      create: prepareNewLicense,
      insert: storeNewLicense,
      created: (_ctx, row) => ({ licenseId: row["licenseId"], id: row["id"] }),
      update: checkLicenseUpdate,
      save: saveLicenseUpdate,
      written: licenseWritten,
    },
  });
  const nested = {
    tag: "Licenses",
    operations: ["list"] as const,
    roles: { list: all, create: all, update: all, delete: all },
    list,
  };
  crud(app, {
    ...nested,
    entity: License,
    path: "/v1/customers/{customerId}/licenses",
    tag: "Customers",
    operationIds: { list: "listCustomerLicenses" },
    scope: { param: "customerId", parent: Customer, column: licenses.customerId },
  });
  crud(app, {
    ...nested,
    entity: License,
    path: "/v1/orders/{orderId}/licenses",
    tag: "Orders",
    operationIds: { list: "listOrderLicenses" },
    scope: { param: "orderId", parent: Order, column: licenses.orderId },
  });
  crud(app, {
    ...nested,
    entity: License,
    path: "/v1/license-templates/{templateId}/licenses",
    tag: "License templates",
    operationIds: { list: "listLicenseTemplateLicenses" },
    scope: { param: "templateId", parent: LicenseTemplate, column: licenses.templateId },
  });
}

// ---------------------------------------------------------------------------------------------------------------
// Records that point at a license by its integer key show its lic… id (CONTRACT section 7).
