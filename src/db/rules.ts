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
 * How D1 is queried (docs/architecture.md): the hot paths (validate, heartbeat, feed, update check, download) run
 * compiled drizzle queries (db/compiled.ts: described once, no SQL built per request); every other query uses
 * drizzle's builder (management, licensing operations off the hot path, the cron); raw SQL only where drizzle cannot
 * say it as one statement or has no place: the seat Durable Object's own SQLite storage (a private table, run
 * synchronously so a seat decision has no await in it), the activation limit's single INSERT … SELECT … WHERE count
 * (licensing/tokens.ts: the check and the write must be one statement, D1 has no transactions) and the count batched
 * beside it, statements built from lists of computed columns (licensing/traces.ts), and the settings read of
 * config.ts (the kernel, which knows no schema).
 */
import { type SQL, type SQLWrapper, sql } from "drizzle-orm";
import { licenseTokens } from "./schema";

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
