/**
 * The admin console's credential (issue 17; decisions in docs/decisions.md, "Admin console"). SPEC lets only API
 * keys reach the management routes, so a console sign-in (user name + password) creates a short-lived API key of
 * that user and hands it to the browser in a cookie no script can read:
 *
 *   Set-Cookie: __Host-console-key=api_…; Path=/; HttpOnly; Secure; SameSite=Strict; Max-Age=<lifetime>
 *
 * The cookie alone is never enough: each request must also carry `X-CSRF-Token`, the token sign-in returned in its
 * body, which is derived from the key (base64url SHA-256 of a label and the key). A page on another site can make
 * the browser send the cookie (SameSite=Strict already stops that on modern browsers) but cannot read the token.
 * An `x-api-key` or `Authorization` header always wins over the cookie. Sign-out revokes the key and clears the cookie.
 *
 * Besides its lifetime, a session ends after Application:ConsoleIdleTimeout without a request (consoleSessionActive).
 */
import { and, eq, gte, isNotNull, lt, not, or } from "drizzle-orm";
import type { Context } from "hono";
import { generateCookie, getCookie } from "hono/cookie";
import type { Db } from "../db/client";
import { apiKeys } from "../db/schema";
import { keyIsLiveSql } from "../db/rules";
import type { AppEnv } from "../http/app-env";
import { clock } from "../kernel/clock";
import type { Config } from "../kernel/config";
import { timingSafeEqualText, toBase64Url } from "../kernel/crypto";
import { invalidateApiKeyCache } from "./api-key-service";
import { memo } from "../kernel/memo";

/** `__Host-`: only ever set by this origin over HTTPS, for path `/`, with no Domain (RFC 6265bis). */
export const CONSOLE_COOKIE = "__Host-console-key";
export const CSRF_HEADER = "x-csrf-token";
/** The name console keys carry in the API key list, so administrators can tell sessions from issued keys. */
export const CONSOLE_KEY_NAME = "Console session";

/**
 * Ends a user's console sessions (their keys revoked), as a new password or a removed role ends the user's bearer
 * tokens: a session must not outlive the credentials it was opened with. Other isolates follow within
 * Application:ApiKeyCacheDuration, as for any revoked key.
 */
export async function endConsoleSessions(db: Db, userId: string): Promise<void> {
  await db
    .update(apiKeys)
    .set({ revoked: true })
    .where(and(eq(apiKeys.ownerId, userId), eq(apiKeys.name, CONSOLE_KEY_NAME), eq(apiKeys.revoked, false)))
    .run();
  invalidateApiKeyCache();
}

/**
 * The cron trigger's statement removing console session keys past their expiry or idle past
 * Application:ConsoleIdleTimeout: they can no longer be used, and a key a day of sign-ins would otherwise pile up in
 * the API key list.
 */
export function pruneConsoleSessions(db: Db, config: Config, now: Date) {
  const idleSince = new Date(now.getTime() - config["Application:ConsoleIdleTimeout"]).toISOString();
  return db
    .delete(apiKeys)
    .where(
      and(
        eq(apiKeys.name, CONSOLE_KEY_NAME),
        isNotNull(apiKeys.expireDate),
        or(not(keyIsLiveSql(now.toISOString())), lt(apiKeys.lastUsedAt, idleSince)),
      ),
    );
}

/**
 * When each console session was last used, as far as this isolate knows from D1 (key digest to ms). Only ever
 * earlier than or equal to what D1 holds, since last_used_at only grows.
 */
const lastUseSeen = memo<string, number>("console-last-use", {
  key: "console session key digest",
  // The isolate forgets what it saw beyond this many sessions (it then asks D1 again).
  max: 10_000,
  evict: "all",
  lifetime: "while kept (a value is a past use; the caller compares it with its step)",
});

/**
 * Whether a console session (an API key sign-in created: its `last_used_at` is set) is still in use: a request used
 * it within Application:ConsoleIdleTimeout. Called on every request the key authenticates, whether its validation
 * came from D1 or from this isolate's key cache, and it records the use, cheaply:
 *   - the key's `last_used_at` is written at most once per `step` (a minute, or half the timeout when that is
 *     shorter), by a conditional UPDATE that leaves a newer value alone, so sessions used from many isolates still
 *     cost one write a minute;
 *   - while this isolate saw a use within `step`, the request needs no D1 at all (the session cannot be idle then);
 *   - otherwise one D1 batch (the conditional UPDATE and a read of the value) answers and records at once.
 * As `last_used_at` can trail the last request by up to `step`, a session ends between `timeout - step` and
 * `timeout` after its last request: never later than the setting.
 */
export async function consoleSessionActive(db: Db, config: Config, digest: string): Promise<boolean> {
  const now = clock.now().getTime();
  const timeout = config["Application:ConsoleIdleTimeout"];
  const step = Math.min(60_000, timeout / 2);
  const seen = lastUseSeen.get(digest);
  if (seen !== undefined && now - seen < step) return true;
  const [, rows] = await db.batch([
    db
      .update(apiKeys)
      .set({ lastUsedAt: new Date(now).toISOString() })
      .where(
        and(
          eq(apiKeys.keyDigest, digest),
          lt(apiKeys.lastUsedAt, new Date(now - step).toISOString()),
          gte(apiKeys.lastUsedAt, new Date(now - timeout).toISOString()),
        ),
      ),
    db.select({ lastUsedAt: apiKeys.lastUsedAt }).from(apiKeys).where(eq(apiKeys.keyDigest, digest)),
  ]);
  const lastUsed = rows[0]?.lastUsedAt ? Date.parse(rows[0].lastUsedAt) : Number.NaN;
  if (!(now - lastUsed <= timeout)) {
    lastUseSeen.delete(digest);
    return false;
  }
  lastUseSeen.keep(digest, lastUsed);
  return true;
}

/** The CSRF token of a console key: derived, so nothing is stored, and it never reveals the key. */
export async function csrfTokenFor(key: string): Promise<string> {
  return toBase64Url(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(`console-csrf\0${key}`)));
}

/**
 * The API key of the request's console cookie when it comes with its CSRF token; undefined without a cookie; null
 * for a cookie with a missing or wrong token, which the guard refuses (401) rather than ignores, so a forged
 * request cannot fall through to another check.
 */
export async function consoleSessionKey(c: Context<AppEnv>): Promise<string | null | undefined> {
  const key = getCookie(c, CONSOLE_COOKIE);
  if (key === undefined) return undefined;
  const token = c.req.header(CSRF_HEADER);
  return token !== undefined && timingSafeEqualText(token, await csrfTokenFor(key)) ? key : null;
}

/** The session cookie (an empty value with Max-Age 0 clears it). */
export function sessionCookie(key: string, maxAge: number): string {
  return generateCookie(CONSOLE_COOKIE, key, { path: "/", httpOnly: true, secure: true, sameSite: "Strict", maxAge });
}
