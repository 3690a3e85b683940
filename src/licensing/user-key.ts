/**
 * User keys as people type them. Generated keys are Crockford base32 (license-core.ts: `XXXXX-XXXXX-…`, shaped by
 * Licensing:UserKeyFormat), and Crockford base32 is read case-insensitively, ignoring the spaces and dashes a person
 * types, with `I` and `L` read as `1` and `O` as `0`. So a key is compared in its compact form: the typed text read
 * that way, against the stored key without its dashes. The stored form stays as generated (the license's HMAC covers
 * it), and an expression index on the compact form (`licenses_user_key_compact`) keeps the lookup one index probe,
 * whatever format a key was generated with (the format may change over time).
 */
import { type Placeholder, type SQL, sql } from "drizzle-orm";
import { licenses } from "../db/schema";

/** The longest text taken as a user key, as typed (spaces and dashes included). */
export const MAX_TYPED_USER_KEY = 128;

/** A typed user key in its compact form: upper case, no white space or dashes, I/L read as 1 and O as 0. */
export function compactUserKey(typed: string): string {
  return typed
    .toUpperCase()
    .replace(/[\s-]+/g, "")
    .replace(/[IL]/g, "1")
    .replace(/O/g, "0");
}

/** Whether a typed user key is this stored key (compact forms equal). */
export function sameUserKey(typed: string, stored: string): boolean {
  return compactUserKey(typed) === compactUserKey(stored);
}

/**
 * SQL condition: the license's stored key is the compact key `compact`. The expression is the index's own
 * (schema.ts), text for text, so SQLite answers it from the index.
 */
export function userKeyIs(compact: Placeholder | string): SQL {
  return sql`replace(${licenses.userKey}, '-', '') = ${compact}`;
}
