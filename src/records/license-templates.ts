/** License templates as records and the license type and licensing mode vocabularies (SPEC "License template"). */
import { LICENSE_TYPES, LICENSING_MODES } from "./vocabulary";
import { licenseTemplates } from "../db/schema";
import { defineEntity, f } from "../http/entity";

/** The names of the stored numbers (records/vocabulary.ts). */
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
    licenseType: f.enumOf("LicenseType", LicenseType),
    edition: f.string({ max: 64 }),
    licensingMode: f.enumOf("LicensingMode", LicensingMode),
    maxClients: f.int({
      min: 0,
      description: "Activations (Activation mode) or concurrent seats (Floating); 0 = unlimited.",
    }),
    expireDays: f.int({ min: 0, description: "Days from the issue date to expiry; none = perpetual." }),
    supportDays: f.int({ min: 0, description: "Days from the issue date to the end of maintenance." }),
    features: f.strings(),
    checkInDays: f.int({
      min: 0,
      description:
        "Days a license may go without checking in (an online validation, activation, seat or license file) before license.check-in-overdue is emitted; none or 0 = no interval. Copied to the licenses made from the template.",
    }),
    description: f.string(),
    meta: f.string(),
    createdAt: f.date({ readOnly: true }),
    updatedAt: f.date({ readOnly: true }),
  },
  required: ["name", "productId"],
});
