/**
 * The customer portal's credential (CONTRACT section 12; decisions in docs/decisions.md, "Customer portal"). A
 * customer signs in with a license's user key or a one-time link sent to their email; either opens a session whose
 * secret lives in a cookie no script can read:
 *
 *   Set-Cookie: __Host-portal-session=pts_…; Path=/; HttpOnly; Secure; SameSite=Strict; Max-Age=<lifetime>
 *
 * like the console's (auth/console-session.ts), but a credential of its own: the secret is a row of
 * `portal_credentials`, never an API key, so the staff guard (auth/guard.ts) never accepts it and the portal's guard
 * here reads nothing but this cookie (an API key header or the console's cookie opens no portal route). Writes also
 * carry `X-CSRF-Token`, derived from the secret (GET /v1/portal/me hands it to the page after a reload).
 *
 * What a session opens (its scope): every license of its customer; for a license with no customer signed in by its
 * user key, that license only. A session opened by a user key ends when that license is revoked (checked on each
 * request) or deleted (the row goes with it).
 */
import { and, eq, gt, isNull, sql } from "drizzle-orm";
import type { Context, MiddlewareHandler } from "hono";
import { generateCookie, getCookie } from "hono/cookie";
import { clock } from "../kernel/clock";
import { randomString, sha256Hex, timingSafeEqualText, toBase64Url } from "../kernel/crypto";
import { licenses, portalCredentials } from "../db/schema";
import type { AppEnv, PortalScope } from "../http/app-env";
import type { ServiceContext } from "../http/context";
import { ApiError } from "../kernel/errors";
import { CSRF_HEADER } from "../auth/console-session";

/** `__Host-`: only ever set by this origin over HTTPS, for path `/`, with no Domain (RFC 6265bis). */
export const PORTAL_COOKIE = "__Host-portal-session";
export { CSRF_HEADER };
/** The OpenAPI security scheme of the portal's routes (app/app.ts registers it). */
export const PORTAL_SCHEME = "PortalSession";

/** 401 of the portal's guard: no session, an ended one, or a write without its CSRF token. */
export const NOT_SIGNED_IN = "Not signed in to the customer portal (or the session ended): sign in again.";
const NO_CSRF = `A portal write needs the ${CSRF_HEADER} header the sign-in (or GET /v1/portal/me) returned.`;

const SESSION_PREFIX = "pts_";

/** The CSRF token of a portal session: derived, so nothing is stored, and it never reveals the secret. */
export async function portalCsrfToken(secret: string): Promise<string> {
  return toBase64Url(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(`portal-csrf\0${secret}`)));
}

/** The session cookie (an empty value with Max-Age 0 clears it). */
export function portalCookie(secret: string, maxAgeSeconds: number): string {
  return generateCookie(PORTAL_COOKIE, secret, {
    path: "/",
    httpOnly: true,
    secure: true,
    sameSite: "Strict",
    maxAge: maxAgeSeconds,
  });
}

/** Who a new session is for: a customer, or (a license with no customer) one license; the license a key signed in with. */
export interface SessionFor {
  customerId: number | null;
  licenseId: number | null;
}

export interface OpenedSession {
  secret: string;
  csrfToken: string;
  expiresAt: string;
  maxAgeSeconds: number;
}

/** Stores a new session (lifetime Application:ConsoleSessionLifetime, as the console's) and returns its secret. */
export async function openSession(ctx: ServiceContext, who: SessionFor): Promise<OpenedSession> {
  const secret = `${SESSION_PREFIX}${randomString(43)}`;
  const now = clock.now();
  const lifetime = ctx.config["Application:ConsoleSessionLifetime"];
  const expiresAt = new Date(now.getTime() + lifetime).toISOString();
  await ctx.db.insert(portalCredentials).values({
    digest: await sha256Hex(secret),
    kind: "session",
    customerId: who.customerId,
    licenseId: who.licenseId,
    expiresAt,
    createdAt: now.toISOString(),
  });
  return { secret, csrfToken: await portalCsrfToken(secret), expiresAt, maxAgeSeconds: Math.floor(lifetime / 1000) };
}

/** Ends the session of this secret (sign-out). */
export async function endSession(ctx: ServiceContext, secret: string): Promise<void> {
  await ctx.db
    .delete(portalCredentials)
    .where(and(eq(portalCredentials.digest, await sha256Hex(secret)), eq(portalCredentials.kind, "session")));
}

/**
 * The scope of a session secret: its customer, or its one license; undefined for an unknown, expired or ended
 * session, or one a user key opened whose license has since been revoked. One D1 statement.
 */
export async function sessionScope(ctx: ServiceContext, secret: string): Promise<PortalScope | undefined> {
  if (!secret.startsWith(SESSION_PREFIX) || secret.length > 64) return undefined;
  const row = await ctx.db
    .select({
      customerId: portalCredentials.customerId,
      licenseId: portalCredentials.licenseId,
      expiresAt: portalCredentials.expiresAt,
      licenseRevoked: licenses.revoked,
    })
    .from(portalCredentials)
    .leftJoin(licenses, eq(licenses.id, portalCredentials.licenseId))
    .where(
      and(
        eq(portalCredentials.digest, await sha256Hex(secret)),
        eq(portalCredentials.kind, "session"),
        gt(portalCredentials.expiresAt, clock.now().toISOString()),
      ),
    )
    .get();
  if (!row) return undefined;
  if (row.licenseId !== null && row.licenseRevoked !== false) return undefined;
  if (row.customerId === null && row.licenseId === null) return undefined;
  return {
    customerId: row.customerId,
    // A customer's session opens all their licenses; without a customer, the one license.
    licenseRowId: row.customerId === null ? row.licenseId : null,
    signedInWith: row.licenseId === null ? "email" : "userKey",
    keyLicenseRowId: row.licenseId,
    expiresAt: row.expiresAt,
  };
}

/** The session secret of a request's cookie, with its CSRF token checked when `write`; 401 otherwise. */
async function requestSecret(c: Context<AppEnv>, write: boolean): Promise<string> {
  const secret = getCookie(c, PORTAL_COOKIE);
  if (!secret) throw new ApiError(401, NOT_SIGNED_IN);
  if (write) {
    const token = c.req.header(CSRF_HEADER);
    if (token === undefined || !timingSafeEqualText(token, await portalCsrfToken(secret)))
      throw new ApiError(401, NO_CSRF);
  }
  return secret;
}

/** The secret of the request's portal cookie (sign-out and /me), CSRF-checked for writes. */
export function portalSecret(c: Context<AppEnv>): Promise<string> {
  return requestSecret(c, !["GET", "HEAD"].includes(c.req.method));
}

/**
 * The portal's guard: the request's session (cookie, and its CSRF token on writes) as its scope and a `customer`
 * principal (audit entries and webhook events name the customer as the actor). 401 otherwise. Only this cookie
 * counts: an API key, a bearer token or a console cookie opens nothing here.
 */
const portalGuard: MiddlewareHandler<AppEnv> = async (c, next) => {
  const secret = await portalSecret(c);
  const ctx = { db: c.get("db"), config: c.get("config") } as ServiceContext;
  const scope = await sessionScope(ctx, secret);
  if (!scope) throw new ApiError(401, NOT_SIGNED_IN);
  c.set("portal", scope);
  c.set("principal", {
    kind: "customer",
    roles: [],
    ...(scope.customerId !== null ? { customerId: scope.customerId } : {}),
  });
  await next();
};

/** Route declaration of the portal's session credential. Spread into `createRoute({...})`. */
export const portalAccess = () => ({
  middleware: [portalGuard],
  security: [{ [PORTAL_SCHEME]: [] as string[] }],
});

/** A new one-time sign-in link token (its digest stored): 32 base62 characters. */
export async function newLinkToken(): Promise<{ token: string; digest: string }> {
  const token = randomString(32);
  return { token, digest: await sha256Hex(token) };
}

/** The live link a token names: unused, unexpired, of kind `link` (undefined for a malformed token). */
async function liveLink(token: string, now: string) {
  if (!/^[0-9A-Za-z]{32}$/.test(token)) return undefined;
  return and(
    eq(portalCredentials.digest, await sha256Hex(token)),
    eq(portalCredentials.kind, "link"),
    isNull(portalCredentials.usedAt),
    gt(portalCredentials.expiresAt, now),
  );
}

/**
 * Looks at a sign-in link without spending it: the customer it would sign in and when it expires, or undefined
 * (unknown, used or expired). The page shows whose account it is before the customer confirms (login CSRF).
 */
export async function peekLink(
  ctx: ServiceContext,
  token: string,
): Promise<{ customerId: number; expiresAt: string } | undefined> {
  const where = await liveLink(token, clock.now().toISOString());
  if (!where) return undefined;
  const row = await ctx.db
    .select({ customerId: portalCredentials.customerId, expiresAt: portalCredentials.expiresAt })
    .from(portalCredentials)
    .where(where)
    .get();
  return row?.customerId != null ? { customerId: row.customerId, expiresAt: row.expiresAt } : undefined;
}

/**
 * Spends a sign-in link: the one conditional UPDATE that marks it used succeeds once, and only before it expires.
 * The customer it signs in, or undefined (unknown, used or expired link).
 */
export async function spendLink(ctx: ServiceContext, token: string): Promise<{ customerId: number } | undefined> {
  const now = clock.now().toISOString();
  const where = await liveLink(token, now);
  if (!where) return undefined;
  const [row] = await ctx.db
    .update(portalCredentials)
    .set({ usedAt: now })
    .where(where)
    .returning({ customerId: portalCredentials.customerId });
  return row?.customerId != null ? { customerId: row.customerId } : undefined;
}

/** The cron trigger's statement removing portal links and sessions past their expiry. */
export function prunePortalCredentials(ctx: Pick<ServiceContext, "db">, now: Date) {
  return ctx.db.delete(portalCredentials).where(sql`${portalCredentials.expiresAt} <= ${now.toISOString()}`);
}
