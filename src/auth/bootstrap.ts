/**
 * Administrator bootstrap (SPEC "Authentication" rule 9, CONTRACT section 1): when Application:AdminUsername and
 * Application:AdminPassword are set, the first request of an isolate makes sure that user exists with the
 * Administrator role and owns an API key with every permission. Every statement is idempotent and safe when several
 * isolates run it at once (unique indexes and conditional inserts decide, not a read-then-write).
 */
import { nowIso } from "../clock";
import type { Config } from "../config";
import { generateApiKey, keyPrefix } from "./api-keys";
import { sha256Hex } from "./crypto";
import { hashPassword } from "./passwords";

const BOOTSTRAP_KEY_NAME = "Administrator (bootstrap)";
let done: string | undefined;

export async function ensureAdmin(d1: D1Database, config: Config): Promise<void> {
  const username = config["Application:AdminUsername"];
  const password = config["Application:AdminPassword"];
  const fixedKey = config["Application:AdminApiKey"];
  const signature = `${username}\n${fixedKey ?? ""}`;
  if (!username || !password || done === signature) return;

  const now = nowIso();
  const normalized = username.toLowerCase();
  const existing = await d1.prepare("SELECT id FROM users WHERE normalized_user_name = ?").bind(normalized).first<{ id: string }>();
  if (!existing) {
    await d1
      .prepare(
        `INSERT INTO users (id, user_name, normalized_user_name, roles, password_hash, created_at, updated_at)
         VALUES (?, ?, ?, '["Administrator"]', ?, ?, ?) ON CONFLICT (normalized_user_name) DO NOTHING`,
      )
      .bind(crypto.randomUUID(), username, normalized, await hashPassword(password), now, now)
      .run();
  }
  const admin = await d1.prepare("SELECT id FROM users WHERE normalized_user_name = ?").bind(normalized).first<{ id: string }>();
  if (!admin) throw new Error("administrator bootstrap: the user could not be created");

  const key = fixedKey ?? generateApiKey();
  const inserted = await d1
    .prepare(
      `INSERT INTO api_keys (name, key_digest, key_prefix, owner_id, description, created_date, revoked, permissions, updated_at)
       SELECT ?1, ?2, ?3, ?4, 'Created at startup from Application:AdminUsername', ?5, 0, 15, ?5
       WHERE NOT EXISTS (SELECT 1 FROM api_keys WHERE ${fixedKey ? "key_digest = ?2" : "owner_id = ?4 AND name = ?1"})
       ON CONFLICT (key_digest) DO NOTHING`,
    )
    .bind(BOOTSTRAP_KEY_NAME, await sha256Hex(key), keyPrefix(key), admin.id, now)
    .run();
  if (inserted.meta.changes > 0 && !fixedKey) {
    // Shown once, in the Worker's log (`wrangler tail` / the dev console): the operator's first key.
    console.log(`Administrator API key for ${username}: ${key} (store it now; it is not shown again)`);
  }
  done = signature;
}
