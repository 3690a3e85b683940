/**
 * Administrator bootstrap (SPEC "Authentication" rule 9, CONTRACT section 1): when Application:AdminUsername and
 * Application:AdminPassword are set, the first request of an isolate makes sure that administrator was created once,
 * with the Administrator role and an API key with every permission. Once: each bootstrapped name leaves a tombstone
 * (`admin_bootstraps`), so a deleted or renamed account or key never comes back and a generated key is printed
 * only by the isolate that created it. A database whose administrator exists from before the tombstones adopts it.
 * Safe when several isolates run it at once: one batch, in which the isolate whose claim landed creates the rest.
 */
import { and, eq, exists, sql } from "drizzle-orm";
import { nowIso } from "../kernel/clock";
import { type Config, ConfigError } from "../kernel/config";
import { generateApiKey, keyPrefix } from "./api-key-service";
import { sha256Hex } from "../kernel/crypto";
import { getDb } from "../db/client";
import { insertedRow } from "../db/insert-select";
import { adminBootstraps, apiKeys, logs, users } from "../db/schema";
import { forgettable } from "../kernel/memo";
import { MIN_PASSWORD_LENGTH, hashPassword } from "./passwords";

const BOOTSTRAP_KEY_NAME = "Administrator (bootstrap)";
let done: string | undefined;
forgettable("admin-bootstrap", { key: "Application:AdminUsername and AdminApiKey", lifetime: "the isolate's" }, () => {
  done = undefined;
});

/** Creates the configured administrator and its key unless that name was bootstrapped before. */
export async function ensureAdmin(d1: D1Database, config: Config, trigger: { clientIp?: string } = {}): Promise<void> {
  const username = config["Application:AdminUsername"];
  const password = config["Application:AdminPassword"];
  const fixedKey = config["Application:AdminApiKey"];
  const signature = `${username}\n${fixedKey ?? ""}`;
  if (!username || !password || done === signature) return;

  const now = nowIso();
  const normalized = username.toLowerCase();
  const db = getDb(d1);
  const [tombstone, existing] = await db.batch([
    db
      .select({ found: sql<number>`1` })
      .from(adminBootstraps)
      .where(eq(adminBootstraps.normalizedUserName, normalized)),
    db.select({ found: sql<number>`1` }).from(users).where(eq(users.normalizedUserName, normalized)),
  ]);
  if (tombstone.length > 0) {
    done = signature;
    return;
  }
  if (existing.length > 0) {
    // Created before tombstones existed: adopt it, create nothing.
    await db
      .insert(adminBootstraps)
      .values({ normalizedUserName: normalized, claim: "adopted", createdAt: now })
      .onConflictDoNothing()
      .run();
    done = signature;
    return;
  }
  // The password of a new administrator meets the same minimum as any other (decisions.md, Service security).
  if (password.length < MIN_PASSWORD_LENGTH) {
    throw new ConfigError(
      "Application:AdminPassword",
      `the administrator's password needs at least ${MIN_PASSWORD_LENGTH} characters`,
    );
  }

  const claim = crypto.randomUUID();
  const userId = crypto.randomUUID();
  const key = fixedKey ?? generateApiKey();
  // Each insert after the claim happens only when the one before it did: the isolate whose claim landed creates all.
  const claimed = exists(
    db
      .select({ one: sql`1` })
      .from(adminBootstraps)
      .where(and(eq(adminBootstraps.normalizedUserName, normalized), eq(adminBootstraps.claim, claim))),
  );
  const created = exists(db.select({ one: sql`1` }).from(users).where(eq(users.id, userId)));
  const [, , createdKeys] = await db.batch([
    db.insert(adminBootstraps).values({ normalizedUserName: normalized, claim, createdAt: now }).onConflictDoNothing(),
    db
      .insert(users)
      .select(
        db
          .select(
            insertedRow(users, {
              id: userId,
              userName: username,
              normalizedUserName: normalized,
              roles: ["Administrator"],
              passwordHash: await hashPassword(password),
              createdAt: now,
              updatedAt: now,
            }),
          )
          .from(sql`(SELECT 1)`)
          .where(claimed),
      )
      .onConflictDoNothing({ target: users.normalizedUserName }),
    db
      .insert(apiKeys)
      .select(
        db
          .select(
            insertedRow(apiKeys, {
              name: BOOTSTRAP_KEY_NAME,
              keyDigest: await sha256Hex(key),
              keyPrefix: keyPrefix(key),
              ownerId: userId,
              description: "Created at startup from Application:AdminUsername",
              createdDate: now,
              revoked: false,
              permissions: 15,
              updatedAt: now,
            }),
          )
          .from(sql`(SELECT 1)`)
          .where(created),
      )
      .onConflictDoNothing({ target: apiKeys.keyDigest })
      .returning({ id: apiKeys.id }),
    // The audit trail's first entry (db/logging.ts ServiceLog.audit writes the same shape).
    db.insert(logs).select(
      db
        .select(
          insertedRow(logs, {
            timestamp: now,
            level: 2,
            category: "Audit",
            message: `Administrator ${username} and its API key created at startup`,
            properties: JSON.stringify({
              event: "Bootstrap",
              user: null,
              userId: null,
              clientIp: trigger.clientIp ?? null,
              targetUserId: userId,
              targetUserName: username,
              fixedKey: fixedKey !== undefined,
            }),
          }),
        )
        .from(sql`(SELECT 1)`)
        .where(created),
    ),
  ]);
  if (createdKeys.length > 0 && !fixedKey) {
    // Shown once, in the Worker's log (`wrangler tail` / the dev console): the operator's first key.
    console.log(`Administrator API key for ${username}: ${key} (store it now; it is not shown again)`);
  }
  done = signature;
}
