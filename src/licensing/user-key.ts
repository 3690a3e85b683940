/**
 * User keys as people type them. Generated keys are Crockford base32 (license-core.ts: `XXXXX-XXXXX-…`, shaped by
 * Licensing:UserKeyFormat), and Crockford base32 is read case-insensitively, ignoring the spaces and dashes a person
 * types, with `I` and `L` read as `1` and `O` as `0`. So a key is compared in its compact form: the typed text read
 * that way, against the stored key without its dashes. The stored form stays as generated (the license's HMAC covers
 * it), and an expression index on the compact form (`licenses_user_key_compact`) keeps the lookup one index probe,
 * whatever format a key was generated with (the format may change over time).
 *
 * A license may also carry a legacy key (CONTRACT 16): a key another system issued, matched exactly as typed (spaces
 * around it trimmed), stored as its SHA-256 digest (`legacy_key_digest`, unique). A typed key is looked up both ways
 * in one condition (`userKeyIs`), each side an index probe.
 */
import { type Placeholder, type SQL, sql } from "drizzle-orm";
import { licenses } from "../db/schema";
import { sha256Hex, timingSafeEqualText } from "../kernel/crypto";

/** A legacy key as typed: any printable text of LEGACY_KEY_MIN to LEGACY_KEY_MAX characters, spaces around trimmed. */
export const LEGACY_KEY_MIN = 8;
export const LEGACY_KEY_MAX = 256;
/** Printable: no control character (C0, DEL, C1); any other Unicode character is taken as typed. */
function printable(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code < 0x20 || (code >= 0x7f && code <= 0x9f)) return false;
  }
  return true;
}

/** The problem of a legacy key (trimmed) as given, in words; undefined: none. */
export function legacyKeyProblem(key: string): string | undefined {
  if (key.length < LEGACY_KEY_MIN || key.length > LEGACY_KEY_MAX)
    return `A legacy key has ${LEGACY_KEY_MIN} to ${LEGACY_KEY_MAX} characters (this one ${key.length})`;
  if (!printable(key)) return "A legacy key holds printable characters only";
  return undefined;
}

/** The stored digest of a legacy key (trimmed). */
export function legacyKeyDigest(key: string): Promise<string> {
  return sha256Hex(key);
}

/**
 * A typed key as the lookups take it: its compact form, for the service's own keys ("" when it cannot be one), and
 * the digest of the text as typed, for legacy keys ("" when it cannot be one).
 */
export interface TypedKey {
  compact: string;
  legacy: string;
}

/** A typed key read both ways (TypedKey); `compact` and `legacy` both empty: it names no license. */
export async function typedKey(typed: string): Promise<TypedKey> {
  const trimmed = typed.trim();
  const compact = trimmed.length > MAX_TYPED_USER_KEY ? "" : compactUserKey(trimmed);
  const legacy = legacyKeyProblem(trimmed) === undefined ? await legacyKeyDigest(trimmed) : "";
  return { compact, legacy };
}

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

/**
 * SQL condition: the license's stored key is the compact key `compact`, or its legacy key has the digest `legacy`.
 * Each side is an index's own expression (schema.ts), text for text, so SQLite answers the OR from the two indexes.
 */
export function userKeyIs(compact: Placeholder | string, legacy: Placeholder | string): SQL {
  return sql`(replace(${licenses.userKey}, '-', '') = ${compact} OR ${licenses.legacyKeyDigest} = ${legacy})`;
}

/** Whether a typed key (TypedKey) names this license: its own key, or its legacy key. */
export function keyNames(key: TypedKey, license: { userKey: string; legacyKeyDigest: string | null }): boolean {
  return (
    (key.compact !== "" && key.compact === compactUserKey(license.userKey)) ||
    (key.legacy !== "" && license.legacyKeyDigest !== null && timingSafeEqualText(key.legacy, license.legacyKeyDigest))
  );
}
