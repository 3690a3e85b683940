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
import type { Row } from "../db/repository";
import { apiKeys } from "../db/schema";
import type { ServiceContext } from "../http/context";
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

/** Properties of a key an audit entry may name: never the key, its digest, prefix or client secret. */
const AUDITED = ["name", "ownerId", "permissions", "revoked", "expireDate", "description"] as const;

/** The audit entry of an API key write: created, revoked, changed or deleted, by whom. */
function auditApiKeyWrite(ctx: ServiceContext, operation: "create" | "update" | "delete", row: Row, previous?: Row): void {
  const about = { targetApiKeyId: row["id"], targetApiKeyName: row["name"] ?? null, ownerId: row["ownerId"] ?? null, permissions: row["permissions"] };
  const label = `API key ${String(row["id"])}${row["name"] ? ` (${String(row["name"])})` : ""}`;
  if (operation === "create") return ctx.log?.audit("ApiKeyCreated", `${label} created`, ctx, about);
  if (operation === "delete") return ctx.log?.audit("ApiKeyDeleted", `${label} deleted`, ctx, about);
  const fields = AUDITED.filter((k) => JSON.stringify(row[k] ?? null) !== JSON.stringify(previous?.[k] ?? null));
  if (fields.length === 0) return;
  const revoked = Boolean(row["revoked"]) && !previous?.["revoked"];
  ctx.log?.audit(revoked ? "ApiKeyRevoked" : "ApiKeyChanged", `${label} ${revoked ? "revoked" : "changed"}`, ctx, { ...about, fields });
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
      written: (ctx, operation, row, previous) => {
        invalidateApiKeyCache();
        auditApiKeyWrite(ctx, operation, row, previous);
      },
    },
  });
}
