/**
 * The rules of the stored data that more than one query states, each written once, in the lowest layer every user may
 * import: the routes' and the domain services' drizzle queries (plain and compiled), the raw statements that remain,
 * the cron, and the seat Durable Object's own SQLite (which may import db/ but no domain).
 *
 * A rule is a template over a tag: drizzle's `sql` makes it a fragment with the column and the bound value in it, and
 * `String.raw` makes it SQL text for a raw statement or the Durable Object's storage, with the column and the
 * placeholder written out. Both come from the one template, so the rule cannot drift between them, and a compiled
 * hot-path query that states it sends the same text as before it was written here (bench/floor-statements.mjs).
 *
 * How D1 is queried (docs/architecture.md), one way per need:
 * - the hot paths (validate, heartbeat, feed, update check, download): compiled drizzle queries (db/compiled.ts:
 *   described once per isolate, no SQL built per request);
 * - everything else (management, the licensing operations off the hot path, sign-in, the bootstrap, the settings
 *   read, the cron and the queue consumers): drizzle's query builder; a conditional write that must check and write
 *   in one statement (D1 has no transactions) is drizzle's insert().select() with db/insert-select.ts insertedRow;
 *   the cron sends every module's drizzle query in its one batch (db/compiled.ts d1Statement);
 * - raw SQL only where drizzle has no place or cannot say it: the Durable Objects' own SQLite storage (private
 *   tables, run synchronously so a decision has no await in it; their rules come from here as text), the trace
 *   writer's multi-row INSERT from a VALUES list that skips rows of deleted licenses (licensing/traces.ts), and the
 *   health check's `SELECT 1` (app/app.ts: it asks only whether D1 answers, of no table, so there is no query to build).
 */
import { type SQL, type SQLWrapper, sql } from "drizzle-orm";
import { apiKeys, licenseTokens } from "./schema";

/** A tagged template: drizzle's `sql` or `String.raw`. */
type Tag<V, R> = (strings: TemplateStringsArray, ...values: V[]) => R;

/**
 * THE rule "a token is live", for activation tokens and floating seats alike: it has no expiry, or its expiry is
 * still ahead of the moment `at`. A seat's row in D1 (license_tokens.expire_date, an ISO text) and its seat in the
 * Durable Object (seats.expires_at, epoch milliseconds) both follow it; a seat is lapsed when it is not live.
 */
function live<V, R>(tag: Tag<V, R>, expiry: V, at: V): R {
  return tag`(${expiry} IS NULL OR ${expiry} > ${at})`;
}

/**
 * "A token is live" as a drizzle fragment: over license_tokens.expire_date, or the same column of an alias of the
 * table (`expiry`); `at` an ISO time or a placeholder.
 */
export function tokenIsLive(at: unknown, expiry: SQLWrapper = licenseTokens.expireDate): SQL {
  return live<unknown, SQL>(sql, expiry, at);
}

/** "A token is live" as SQL text over a column (`t.expire_date`, `expires_at`) and a placeholder (`?`, `?8`). */
export function liveText(expiry: string, at: string): string {
  return live(String.raw, expiry, at);
}

/** "A seat is lapsed" as SQL text: not live (the seat object's alarm reclaims these). */
export function lapsedText(expiry: string, at: string): string {
  return `NOT ${liveText(expiry, at)}`;
}

/**
 * THE rule "an API key has not expired" (SPEC "Authentication" rule 7): it has no expiry date, or the date is still
 * ahead of the moment `at` (at its expiry date it is expired). Revocation is a rule of its own. The key check
 * (auth/api-key-service.ts) and the signed-in user's profile (routes/auth/auth.ts) ask it of a row (keyIsLive); the
 * cron's removal of ended console sessions (auth/console-session.ts) states it in SQL (keyIsLiveSql): the same
 * template as a token's, over api_keys.expire_date (ISO text, so text order is time order).
 */
export function keyIsLiveSql(at: string): SQL {
  return live<unknown, SQL>(sql, apiKeys.expireDate, at);
}

/** "An API key has not expired" for a key's row read from D1 (`at` in epoch milliseconds). */
export function keyIsLive(key: { expireDate: string | null }, at: number): boolean {
  return key.expireDate === null || Date.parse(key.expireDate) > at;
}
