/**
 * `/v1/resources` (SPEC "Resources routes"): stored resources such as signature keys, files and email templates.
 * A resource's `password` is a secret: stored AES-GCM-encrypted with Application:EncryptionKey, never returned.
 */
import { crud } from "../http/crud";
import { sealPassword } from "./resource-passwords";
import { defineEntity, f } from "../http/entity";
import type { Router } from "../http/router";
import { resources } from "../db/schema";
import { Roles } from "../auth/guard";

export const Resource = defineEntity({
  name: "Resource",
  singular: "resource",
  plural: "resources",
  table: resources,
  fields: {
    id: f.id(),
    name: f.string({ max: 256 }),
    type: f.string({ max: 128, description: "Kind of resource: SignatureKey, EmailTemplate, File …" }),
    code: f.string({ max: 128 }),
    description: f.string(),
    source: f.string({ max: 2048 }),
    password: f.string({ max: 256, writeOnly: true, description: "Protects the resource; stored encrypted, accepted, never returned." }),
    data: f.string({ max: 1_000_000 }),
    dataFormat: f.string({ max: 64 }),
    meta: f.string(),
    createdAt: f.date({ readOnly: true }),
    updatedAt: f.date({ readOnly: true }),
  },
  required: ["name"],
});

export function registerResources(app: Router): void {
  crud(app, {
    entity: Resource,
    path: "/v1/resources",
    tag: "Resources",
    label: "stored resource",
    roles: { list: Roles.management, create: Roles.management, update: Roles.management, delete: Roles.management },
    hooks: { create: sealPassword, update: sealPassword },
  });
}
