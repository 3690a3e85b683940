/**
 * `/v1/api-keys` (Administrator): keys act with their owner's roles plus their own permission bits. The key and
 * its client secret are returned once, by the POST that creates them, and stored only as SHA-256 digests.
 * A key must have an owner (SPEC "Authentication" rule 8).
 */
import { z } from "@hono/zod-openapi";
import {
  generateApiKey,
  generateClientSecret,
  invalidateApiKeyCache,
  keyPrefix,
  ApiKey,
  maskKeys,
} from "../../auth/api-key-service";
import { sha256Hex } from "../../kernel/crypto";
import { Roles } from "../../auth/guard";
import { nowIso } from "../../kernel/clock";
import type { Row } from "../../http/repository";
import type { ServiceContext } from "../../http/context";
import { crud } from "../crud";
import type { Router } from "../../http/router";
import { User } from "../../auth/users";

/** Properties of a key an audit entry may name: never the key, its digest, prefix or client secret. */
const AUDITED = ["name", "ownerId", "permissions", "revoked", "expireDate", "description"] as const;

/** The audit entry of an API key write: created, revoked, changed or deleted, by whom. */
function auditApiKeyWrite(
  ctx: ServiceContext,
  operation: "create" | "update" | "delete",
  row: Row,
  previous?: Row,
): void {
  const about = {
    targetApiKeyId: row["id"],
    targetApiKeyName: row["name"] ?? null,
    ownerId: row["ownerId"] ?? null,
    permissions: row["permissions"],
  };
  const label = `API key ${String(row["id"])}${row["name"] ? ` (${String(row["name"])})` : ""}`;
  if (operation === "create") return ctx.log?.audit("ApiKeyCreated", `${label} created`, ctx, about);
  if (operation === "delete") return ctx.log?.audit("ApiKeyDeleted", `${label} deleted`, ctx, about);
  const fields = AUDITED.filter((k) => JSON.stringify(row[k] ?? null) !== JSON.stringify(previous?.[k] ?? null));
  if (fields.length === 0) return;
  const revoked = Boolean(row["revoked"]) && !previous?.["revoked"];
  ctx.log?.audit(revoked ? "ApiKeyRevoked" : "ApiKeyChanged", `${label} ${revoked ? "revoked" : "changed"}`, ctx, {
    ...about,
    fields,
  });
}

export function registerApiKeys(app: Router): void {
  const admin = Roles.admin;
  crud(app, {
    entity: ApiKey,
    path: "/v1/api-keys",
    tag: "API keys",
    operationIds: { list: "listApiKeys", create: "createApiKey", update: "updateApiKey", delete: "deleteApiKey" },
    label: "API key",
    roles: { list: admin, create: admin, update: admin, delete: admin },
    references: { ownerId: User },
    list: { decorate: maskKeys },
    createdShape: {
      key: z.string().openapi({ description: "The API key: shown only in this answer, stored as a digest." }),
      clientSecret: z
        .string()
        .openapi({ description: "The client secret: shown only in this answer, stored as a digest." }),
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
