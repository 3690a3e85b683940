/**
 * Sign-in (SPEC "Authentication routes"): a user's name and password for a bearer token. Free of HTTP: REST and gRPC
 * call these. An application's user key signs in through the licensing domain (licensing/sign-in.ts), which judges
 * its license by the license policy.
 */
import type { Role } from "../http/app-env";
import { issueToken } from "./bearer";
import { nowIso } from "../kernel/clock";
import type { ServiceContext } from "../http/context";
import { ApiError } from "../kernel/errors";
import { eq } from "drizzle-orm";
import type { Db } from "../db/client";
import { users } from "../db/schema";
import { verifyPassword } from "./passwords";

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
