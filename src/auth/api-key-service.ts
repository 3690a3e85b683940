/**
 * API keys (SPEC "Authentication"): `api_` + 32 base62 characters, stored as SHA-256 digests, acting with their
 * owner's roles and their own permission bits. A validated key is cached per isolate for
 * Application:ApiKeyCacheDuration; revocation or a permission change can take that long in other isolates. A
 * deleted key, or a key whose owner was deleted, ends at once everywhere: a cached validation is used only with a
 * check that the key's row (and its owner's) still exist (`recheck`), which a licensing call's first read carries
 * (db/first-batch.ts) and any other route runs before it acts.
 */
import { type SQL, eq, sql } from "drizzle-orm";
import { ROLES, type Principal, type Role } from "../http/app-env";
import { clock } from "../kernel/clock";
import { forgetAll, memo } from "../kernel/memo";
import type { Config } from "../kernel/config";
import type { Db } from "../db/client";
import { apiKeys, users } from "../db/schema";
import { keyIsLive } from "../db/rules";
import { randomString, sha256Hex } from "../kernel/crypto";
import { type BoundQuery, type CheckColumn, compiled } from "../db/compiled";
import { defineEntity, f } from "../http/entity";
import { int32 } from "../http/openapi";

/** Permission bits (SPEC rule 5). */
export const Permission = { Read: 1, Write: 2, Delete: 4, Create: 8, All: 15 } as const;

/** The permission an HTTP method needs: it follows the method, not the effect (SPEC rule 6). */
export function permissionFor(method: string): number {
  switch (method.toUpperCase()) {
    case "GET":
    case "HEAD":
      return Permission.Read;
    case "PUT":
    case "PATCH":
      return Permission.Write;
    case "DELETE":
      return Permission.Delete;
    default:
      return Permission.Create;
  }
}

export function generateApiKey(): string {
  return `api_${randomString(32)}`;
}

export function generateClientSecret(): string {
  return randomString(40);
}

/** What lists show instead of a key: its first characters. */
export function keyPrefix(key: string): string {
  return `${key.slice(0, 8)}…`;
}

interface KeyEntry {
  id: number;
  name: string | null;
  ownerId: string | null;
  ownerName: string | null;
  roles: Role[];
  permissions: number;
  revoked: boolean;
  expireDate: string | null;
  /** Set on console session keys only (auth/console-session.ts), whose idle time the guard checks. */
  lastUsedAt: string | null;
}

const cache = memo<string, { entry: KeyEntry; until: number }>("api-keys", {
  key: "API key digest",
  max: 10_000,
  lifetime: "Application:ApiKeyCacheDuration ms",
  forgetOn: ["keys"],
});

/** Forgets cached validations (after a key or user is changed in this isolate). */
export function invalidateApiKeyCache(): void {
  forgetAll("keys");
}

async function lookup(db: Db, digest: string): Promise<KeyEntry | undefined> {
  const row = await db
    .select({
      id: apiKeys.id,
      name: apiKeys.name,
      ownerId: apiKeys.ownerId,
      ownerName: users.userName,
      roles: users.roles,
      permissions: apiKeys.permissions,
      revoked: apiKeys.revoked,
      expireDate: apiKeys.expireDate,
      lastUsedAt: apiKeys.lastUsedAt,
    })
    .from(apiKeys)
    .leftJoin(users, eq(users.id, apiKeys.ownerId))
    .where(eq(apiKeys.keyDigest, digest))
    .get();
  if (!row) return undefined;
  return { ...row, roles: (row.roles ?? []).filter((r): r is Role => ROLES.includes(r as Role)) };
}

/**
 * Whether a cached key has gone: its row was deleted, or, for a key that had an owner, that owner was deleted (the
 * user delete removes the user's keys; a user row removed behind the API leaves the key without one). An SQL
 * condition over the placeholder checkKeyDigest, true when the key must be refused.
 */
function keyGone(owned: boolean): SQL {
  if (!owned)
    return sql`NOT EXISTS (SELECT 1 FROM ${apiKeys} WHERE ${apiKeys.keyDigest} = ${sql.placeholder("checkKeyDigest")})`;
  return sql`NOT EXISTS (SELECT 1 FROM ${apiKeys} INNER JOIN ${users} ON ${users.id} = ${apiKeys.ownerId} WHERE ${apiKeys.keyDigest} = ${sql.placeholder("checkKeyDigest")})`;
}

/** The check as a read of its own: a row when the key has gone (compiled once per isolate, per shape). */
const goneQueries = [false, true].map((owned) =>
  compiled((db) => db.select({ gone: sql<number>`1` }).from(sql`(SELECT 1)`).where(keyGone(owned))),
);

/**
 * The check a validation served from this isolate's cache still needs: that the key and its owner exist, as the
 * column a licensing call's first read carries (db/first-batch.ts) or as a read of its own (`query`). Unlike a
 * revocation or a permission change (SPEC rule 10: cached), a deletion must end a key at once in every isolate.
 */
export interface KeyRecheck {
  column: CheckColumn;
  query(): BoundQuery<{ gone: number }[]>;
}

function recheckOf(digest: string, owned: boolean): KeyRecheck {
  const values = { checkKeyDigest: digest };
  return {
    column: { shape: owned ? "owned key gone" : "key gone", expression: () => keyGone(owned), values },
    query: () => goneQueries[owned ? 1 : 0]!.with(values),
  };
}

/** A validated key: who it acts for, and the check still due when the validation came from this isolate's cache. */
export interface ValidatedKey {
  principal: Principal;
  recheck?: KeyRecheck;
  /**
   * The key's digest when it is a console session (its last use is tracked): the caller must check that it is not
   * idle (consoleSessionActive), from the cache as from D1.
   */
  sessionDigest?: string;
}

/**
 * Validates an API key; undefined when unknown, revoked or past its expiration date (SPEC rule 7). A validation
 * served from the cache comes with its `recheck`, which the caller must settle before it acts (auth/guard.ts).
 */
export async function authenticateApiKey(db: Db, config: Config, key: string): Promise<ValidatedKey | undefined> {
  const now = clock.now().getTime();
  const digest = await sha256Hex(key);
  let hit = cache.get(digest);
  const cached = hit !== undefined && hit.until > now;
  if (!hit || !cached) {
    const entry = await lookup(db, digest);
    if (!entry) {
      cache.delete(digest);
      return undefined;
    }
    hit = { entry, until: now + config["Application:ApiKeyCacheDuration"] };
    if (config["Application:ApiKeyCacheDuration"] > 0) cache.keep(digest, hit);
  }
  const { entry } = hit;
  if (entry.revoked || !keyIsLive(entry, now)) return undefined;
  return {
    principal: {
      kind: "key",
      ...(entry.ownerId ? { userId: entry.ownerId } : {}),
      ...(entry.ownerName ? { userName: entry.ownerName } : {}),
      roles: entry.ownerId ? entry.roles : [],
      permissions: entry.permissions,
      keyId: entry.id,
      ...(entry.name ? { keyName: entry.name } : {}),
    },
    ...(cached ? { recheck: recheckOf(digest, entry.ownerId !== null) } : {}),
    ...(entry.lastUsedAt !== null ? { sessionDigest: digest } : {}),
  };
}

export const ApiKey = defineEntity({
  name: "ApiKey",
  singular: "apiKey",
  plural: "apiKeys",
  table: apiKeys,
  fields: {
    id: f.id(),
    name: f.string({ max: 256 }),
    key: {
      ...f.string({ readOnly: true, description: "Masked: the full key is returned only when created." }),
      filter: undefined,
    },
    ownerId: f.string({ max: 64, description: "The user whose roles the key acts with." }),
    description: f.string(),
    createdDate: f.date({ readOnly: true }),
    expireDate: f.date(),
    revoked: f.bool(),
    permissions: {
      ...f.int({ min: 0, max: 15 }),
      output: int32(0, 15).openapi({
        description: "Bits: Read 1 (GET), Write 2 (PUT, PATCH), Delete 4, Create 8; All 15.",
      }),
    },
  },
  required: ["ownerId"],
});

/** The masked key shown in lists (`api_AbCd…`). */
export function maskKeys(items: Record<string, unknown>[], rows: Record<string, unknown>[]): void {
  items.forEach((item, i) => (item["key"] = rows[i]?.["keyPrefix"]));
}
