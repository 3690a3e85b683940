/**
 * Sign-in (SPEC "Authentication routes", CONTRACT section 4): a user's name and password, or an application's user key,
 * for a bearer token. Free of HTTP: REST and gRPC call these.
 */
import type { Role } from "../http/app-env";
import { issueToken } from "./bearer";
import { clock, nowIso } from "../clock";
import type { ServiceContext } from "../http/context";
import { ApiError, LicensingError } from "../errors";
import { type LicenseWithProduct, Reasons, findByUserKey } from "../licensing/license-lookup";
import { eq } from "drizzle-orm";
import type { Db } from "../db/client";
import { users } from "../db/schema";
import { verifyPassword } from "./passwords";

export const INVALID_USER_KEY = "Invalid user key.";

/**
 * Signs an application in with its user key (CONTRACT section 4): a bearer token whose subject is the license
 * (role Application, claim `lic`). A key that names no license, or a revoked or expired one, answers 401
 * `Invalid user key.` with its reason (`invalidUserKey`, `licenseRevoked`, `licenseExpired`); a tampered license signs
 * in, so the application learns why from its licensing calls (535). The key is read as Crockford base32 is typed
 * (license-lookup.ts: any case, spaces and dashes ignored).
 */
export async function signInWithUserKey(
  ctx: ServiceContext,
  userKey: string,
): Promise<{ token: string; expiresIn: number; roles: Role[] }> {
  let license: LicenseWithProduct;
  try {
    license = await findByUserKey(ctx.db, userKey);
  } catch (e) {
    if (e instanceof LicensingError) throw new ApiError(401, INVALID_USER_KEY, {}, Reasons.invalidKey);
    throw e;
  }
  // A revoked or expired license's key signs nothing in, and counts as a failed attempt like an unknown key; SPEC's
  // message stays, the reason says which (the holder of a real key may know, a guesser has nothing to learn).
  if (license.revoked) throw new ApiError(401, INVALID_USER_KEY, {}, Reasons.revoked);
  if (license.expireDate !== null && license.expireDate <= clock.now().toISOString())
    throw new ApiError(401, INVALID_USER_KEY, {}, Reasons.expired);
  const roles: Role[] = ["Application"];
  const issued = await issueToken(ctx.config, {
    subject: license.licenseId,
    name: license.licenseId,
    roles,
    licenseId: license.licenseId,
  });
  return { ...issued, roles };
}

export const INVALID_LOGIN = "Invalid username or password.";

/** Reasons of sign-in refusals that are not a license's (a user key's are licensing reasons: `invalidUserKey`, …). */
export const SIGN_IN_REASONS = { invalidLogin: "invalidLogin" } as const;

/** Checks a user name and password; the user row on success. Costs the same whether or not the user exists. */
export async function checkPassword(db: Db, username: string, password: string) {
  const user = await db.select().from(users).where(eq(users.normalizedUserName, username.toLowerCase())).get();
  const valid = await verifyPassword(password, user?.passwordHash);
  return valid && user ? user : undefined;
}

/** A user name and password sign-in: a bearer token, or 401 `Invalid username or password.` */
export async function signInWithPassword(
  ctx: ServiceContext,
  username: string | undefined,
  password: string | undefined,
): Promise<{ token: string; expiresIn: number; roles: Role[] }> {
  const user = username && password !== undefined ? await checkPassword(ctx.db, username, password) : undefined;
  if (!user) throw new ApiError(401, INVALID_LOGIN, {}, SIGN_IN_REASONS.invalidLogin);
  const roles = (user.roles ?? []) as Role[];
  const issued = await issueToken(ctx.config, {
    subject: user.id,
    name: user.userName,
    roles,
    validAfter: user.tokensValidAfter,
  });
  ctx.waitUntil(ctx.db.update(users).set({ lastLogIn: nowIso() }).where(eq(users.id, user.id)).run());
  return { ...issued, roles };
}
