/**
 * Administrator bootstrap (SPEC "Authentication" rule 9, CONTRACT section 1): when Application:AdminUsername and
 * Application:AdminPassword are set, the first request of an isolate makes sure that administrator was created once,
 * with the Administrator role and an API key with every permission. Once: each bootstrapped name leaves a tombstone
 * (`admin_bootstraps`), so a deleted or renamed account or key never comes back and a generated key is printed
 * only by the isolate that created it. A database whose administrator exists from before the tombstones adopts it.
 * Safe when several isolates run it at once: one batch, in which the isolate whose claim landed creates the rest.
 */
import { nowIso } from "../clock";
import { type Config, ConfigError } from "../config";
import { generateApiKey, keyPrefix } from "./api-key-service";
import { sha256Hex } from "../crypto";
import { forgettable } from "../memo";
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
  const [tombstone, existing] = await d1.batch<{ found: number }>([
    d1.prepare("SELECT 1 AS found FROM admin_bootstraps WHERE normalized_user_name = ?").bind(normalized),
    d1.prepare("SELECT 1 AS found FROM users WHERE normalized_user_name = ?").bind(normalized),
  ]);
  if (tombstone!.results.length > 0) {
    done = signature;
    return;
  }
  if (existing!.results.length > 0) {
    // Created before tombstones existed: adopt it, create nothing.
    await d1
      .prepare(
        "INSERT INTO admin_bootstraps (normalized_user_name, claim, created_at) VALUES (?, 'adopted', ?) ON CONFLICT DO NOTHING",
      )
      .bind(normalized, now)
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
  const results = await d1.batch([
    d1
      .prepare(
        "INSERT INTO admin_bootstraps (normalized_user_name, claim, created_at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
      )
      .bind(normalized, claim, now),
    d1
      .prepare(
        `INSERT INTO users (id, user_name, normalized_user_name, roles, password_hash, created_at, updated_at)
         SELECT ?, ?, ?, '["Administrator"]', ?, ?, ?
         WHERE EXISTS (SELECT 1 FROM admin_bootstraps WHERE normalized_user_name = ? AND claim = ?)
         ON CONFLICT (normalized_user_name) DO NOTHING`,
      )
      .bind(userId, username, normalized, await hashPassword(password), now, now, normalized, claim),
    d1
      .prepare(
        `INSERT INTO api_keys (name, key_digest, key_prefix, owner_id, description, created_date, revoked, permissions, updated_at)
         SELECT ?1, ?2, ?3, ?4, 'Created at startup from Application:AdminUsername', ?5, 0, 15, ?5
         WHERE EXISTS (SELECT 1 FROM users WHERE id = ?4)
         ON CONFLICT (key_digest) DO NOTHING`,
      )
      .bind(BOOTSTRAP_KEY_NAME, await sha256Hex(key), keyPrefix(key), userId, now),
    // The audit trail's first entry (logging.ts ServiceLog.audit writes the same shape).
    d1
      .prepare(
        `INSERT INTO logs (timestamp, level, category, message, properties)
         SELECT ?, 2, 'Audit', ?, ? WHERE EXISTS (SELECT 1 FROM users WHERE id = ?)`,
      )
      .bind(
        now,
        `Administrator ${username} and its API key created at startup`,
        JSON.stringify({
          event: "Bootstrap",
          user: null,
          userId: null,
          clientIp: trigger.clientIp ?? null,
          targetUserId: userId,
          targetUserName: username,
          fixedKey: fixedKey !== undefined,
        }),
        userId,
      ),
  ]);
  if ((results[2]?.meta.changes ?? 0) > 0 && !fixedKey) {
    // Shown once, in the Worker's log (`wrangler tail` / the dev console): the operator's first key.
    console.log(`Administrator API key for ${username}: ${key} (store it now; it is not shown again)`);
  }
  done = signature;
}
