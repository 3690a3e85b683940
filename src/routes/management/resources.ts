/**
 * `/v1/resources` (SPEC "Resources routes"): stored resources such as signature keys, files and email templates.
 * The service's signing keys are resources too (type SignatureKey, and RetiredSignatureKey once deleted), and they
 * are the service's own (issue 12): only an Administrator creates, changes or deletes one, their stored private
 * part (`data`) is never returned, nor seen by a filter or sort (`hiddenWhen`), and deleting the active key retires it
 * (auth/signing-keys.ts). A resource's `password` is a secret: stored AES-GCM-encrypted with
 * Application:EncryptionKey, never returned, filtered, sorted or selected (`writeOnly`).
 */
import { sealPassword } from "../../records/resource-passwords";
import { Roles } from "../../auth/guard";
import { resources } from "../../db/schema";
import { crud } from "../crud";
import type { ServiceContext } from "../../http/context";
import { defineEntity, f } from "../../http/entity";
import { ApiError, forbidden } from "../../kernel/errors";
import type { Router } from "../../http/router";
import { deleteRow } from "../../http/repository";
import {
  SIGNING_KEY_TYPES,
  forgetSigningKeys,
  retireSigningKey,
  retiredKeyHeldUntil,
  signingKeyState,
} from "../../auth/signing-keys";

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
    password: f.string({
      max: 256,
      writeOnly: true,
      description: "Protects the resource; stored encrypted, accepted, never returned.",
    }),
    data: {
      ...f.string({
        max: 1_000_000,
        description:
          "Never returned for signing keys (SignatureKey, RetiredSignatureKey): it holds their private part.",
      }),
      // Left out of a signing key's answers, and NULL to filters and sorts on its row (http/entity.ts).
      hiddenWhen: { property: "type", in: SIGNING_KEY_TYPES },
    },
    dataFormat: f.string({ max: 64 }),
    meta: f.string(),
    createdAt: f.date({ readOnly: true }),
    updatedAt: f.date({ readOnly: true }),
  },
  required: ["name"],
});

const isSigningKey = (type: unknown): boolean => signingKeyState(type) !== undefined;

/** Signing keys are the service's own: anyone but an Administrator gets 403 on them (as on an admin-only route). */
function requireAdministratorFor(ctx: ServiceContext, ...types: unknown[]): void {
  if (types.some(isSigningKey) && !ctx.principal?.roles.includes("Administrator")) throw forbidden();
}

export function registerResources(app: Router): void {
  crud(app, {
    entity: Resource,
    path: "/v1/resources",
    tag: "Resources",
    operationIds: {
      list: "listResources",
      create: "createResource",
      update: "updateResource",
      delete: "deleteResource",
    },
    label: "stored resource",
    roles: { list: Roles.management, create: Roles.management, update: Roles.management, delete: Roles.management },
    descriptions: {
      delete:
        "Deletes a resource. Signing keys (Administrator only) are retired instead: a retired key signs no more and stays published at GET /v1/extensions/keys until every license key it signed has expired.",
    },
    hooks: {
      create: (ctx, values) => {
        requireAdministratorFor(ctx, values["type"]);
        return sealPassword(ctx, values);
      },
      update: (ctx, values, existing) => {
        requireAdministratorFor(ctx, existing["type"], values["type"]);
        return sealPassword(ctx, values);
      },
      delete: (ctx, existing) => {
        requireAdministratorFor(ctx, existing["type"]);
        // A retired key may go once nothing it signed is in use any more.
        const heldUntil = signingKeyState(existing["type"]) === "retired" ? retiredKeyHeldUntil(existing) : undefined;
        if (heldUntil)
          throw new ApiError(
            400,
            `This retired signing key stays published until ${heldUntil}, when the last license key it signed expires`,
          );
      },
      remove: async (ctx, id, existing) => {
        if (signingKeyState(existing["type"]) === "active") return retireSigningKey(ctx.db, ctx.config, id as number);
        await deleteRow(ctx.db, Resource, id);
      },
      written: (_ctx, _operation, row, previous) => {
        if (isSigningKey(row["type"]) || isSigningKey(previous?.["type"])) forgetSigningKeys();
      },
    },
  });
}
