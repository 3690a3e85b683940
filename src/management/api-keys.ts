/**
 * `/v1/api-keys` (Administrator): keys act with their owner's roles plus their own permission bits. The key and
 * its client secret are returned once, by the POST that creates them, and stored only as SHA-256 digests.
 * A key must have an owner (SPEC "Authentication" rule 8).
 */
import { z } from "@hono/zod-openapi";
import { generateApiKey, generateClientSecret, invalidateApiKeyCache, keyPrefix } from "../auth/api-keys";
import { sha256Hex } from "../auth/crypto";
import { Roles } from "../auth/guard";
import { nowIso } from "../clock";
import { apiKeys } from "../db/schema";
import { crud } from "../http/crud";
import { defineEntity, f } from "../http/entity";
import { int32 } from "../http/openapi";
import type { Router } from "../http/router";
import { User } from "./users";

export const ApiKey = defineEntity({
  name: "ApiKey",
  singular: "apiKey",
  plural: "apiKeys",
  table: apiKeys,
  fields: {
    id: f.id(),
    name: f.string({ max: 256 }),
    key: { ...f.string({ readOnly: true, description: "Masked: the full key is returned only when created." }), filter: undefined },
    ownerId: f.string({ max: 64, description: "The user whose roles the key acts with." }),
    description: f.string(),
    createdDate: f.date({ readOnly: true }),
    expireDate: f.date(),
    revoked: f.bool(),
    permissions: {
      ...f.int({ min: 0, max: 15 }),
      output: int32(0, 15).openapi({ description: "Bits: Read 1 (GET), Write 2 (PUT, PATCH), Delete 4, Create 8; All 15." }),
    },
  },
  required: ["ownerId"],
});

/** The masked key shown in lists (`api_AbCd…`). */
export function maskKeys(items: Record<string, unknown>[], rows: Record<string, unknown>[]): void {
  items.forEach((item, i) => (item["key"] = rows[i]?.["keyPrefix"]));
}

export function registerApiKeys(app: Router): void {
  const admin = Roles.admin;
  crud(app, {
    entity: ApiKey,
    path: "/v1/api-keys",
    tag: "API keys",
    label: "API key",
    roles: { list: admin, create: admin, update: admin, delete: admin },
    references: { ownerId: User },
    list: { decorate: maskKeys },
    createdShape: {
      key: z.string().openapi({ description: "The API key: shown only in this answer, stored as a digest." }),
      clientSecret: z.string().openapi({ description: "The client secret: shown only in this answer, stored as a digest." }),
    },
    hooks: {
      create: async (_ctx, values) => {
        const key = generateApiKey();
        const clientSecret = generateClientSecret();
        return {
          permissions: 15,
          ...values,
          keyDigest: await sha256Hex(key),
          keyPrefix: keyPrefix(key),
          clientSecretDigest: await sha256Hex(clientSecret),
          createdDate: nowIso(),
          // Handed to `created` below and never stored.
          plainKey: key,
          plainClientSecret: clientSecret,
        };
      },
      created: (_ctx, _row, values) => ({ key: values["plainKey"], clientSecret: values["plainClientSecret"] }),
      written: () => invalidateApiKeyCache(),
    },
  });
}
