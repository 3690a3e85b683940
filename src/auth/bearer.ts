/**
 * Bearer tokens (SPEC "Authentication"): HS256 JWTs signed with Application:JwtSecret, lifetime
 * Application:TokenExpiration, carrying the user's roles. Verification pins the algorithm and requires `exp`;
 * logout records the token's `jti` so it stays unusable until it would have expired.
 */
import { eq } from "drizzle-orm";
import { SignJWT, jwtVerify } from "jose";
import { ROLES, type Principal, type Role } from "../app-env";
import { clock } from "../clock";
import { type Config, ConfigError } from "../config";
import type { Db } from "../db/client";
import { revokedTokens } from "../db/schema";
import { randomString } from "./crypto";

const ISSUER = "licensing-service";
const keys = new Map<string, Promise<CryptoKey>>();

/**
 * The HS256 key, imported once per isolate and secret: handed raw bytes, jose would import them again on every
 * sign and verify (DESIGN: no per-request key import).
 */
function signingKey(config: Config): Promise<CryptoKey> {
  const secret = config["Application:JwtSecret"];
  if (!secret) throw new ConfigError("Application:JwtSecret", "a secret is required to issue and verify bearer tokens");
  let key = keys.get(secret);
  if (!key) {
    key = crypto.subtle.importKey("raw", new TextEncoder().encode(secret), { name: "HMAC", hash: "SHA-256" }, false, ["sign", "verify"]);
    keys.set(secret, key);
  }
  return key;
}

export interface TokenSubject {
  /** `sub`: the user id, or the license's public id for a user-key sign-in. */
  subject: string;
  name: string;
  roles: readonly Role[];
  licenseId?: string;
}

/** Issues a bearer token; returns it with its lifetime in seconds. */
export async function issueToken(config: Config, who: TokenSubject): Promise<{ token: string; expiresIn: number }> {
  const now = Math.floor(clock.now().getTime() / 1000);
  const expiresIn = Math.max(1, Math.floor(config["Application:TokenExpiration"] / 1000));
  const token = await new SignJWT({ name: who.name, roles: [...who.roles], ...(who.licenseId ? { lic: who.licenseId } : {}) })
    .setProtectedHeader({ alg: "HS256", typ: "JWT" })
    .setSubject(who.subject)
    .setIssuer(ISSUER)
    .setJti(randomString(22))
    .setIssuedAt(now)
    .setExpirationTime(now + expiresIn)
    .sign(await signingKey(config));
  return { token, expiresIn };
}

/** Verifies a bearer token; undefined when it is invalid, expired or logged out. */
export async function verifyToken(config: Config, db: Db, token: string): Promise<Principal | undefined> {
  const principal = await verifyTokenClaims(config, token);
  if (!principal?.jti) return undefined;
  const [revoked] = await loggedOutQuery(db, principal.jti);
  return revoked ? undefined : principal;
}

/** The logout record of a token id, unexecuted (a route may send it in one D1 batch with its first read). */
export function loggedOutQuery(db: Db, jti: string) {
  return db.select({ jti: revokedTokens.jti }).from(revokedTokens).where(eq(revokedTokens.jti, jti)).limit(1);
}

/**
 * Verifies a bearer token's signature and claims, without the logout check (verifyToken adds it; a route that
 * defers it must run loggedOutQuery before it acts: auth/guard.ts DeferredLogoutCheck).
 */
export async function verifyTokenClaims(config: Config, token: string): Promise<Principal | undefined> {
  let payload;
  try {
    ({ payload } = await jwtVerify(token, await signingKey(config), {
      algorithms: ["HS256"],
      issuer: ISSUER,
      requiredClaims: ["exp", "jti", "sub"],
      currentDate: clock.now(),
    }));
  } catch (e) {
    if (e instanceof ConfigError) throw e;
    return undefined;
  }
  const jti = String(payload.jti);
  const roles = (Array.isArray(payload["roles"]) ? payload["roles"] : []).filter((r): r is Role => ROLES.includes(r as Role));
  const lic = typeof payload["lic"] === "string" ? payload["lic"] : undefined;
  return {
    kind: "bearer",
    ...(lic ? { licenseId: lic } : { userId: String(payload.sub) }),
    userName: typeof payload["name"] === "string" ? payload["name"] : String(payload.sub),
    roles,
    jti,
    expiresAt: (payload.exp ?? 0) * 1000,
  };
}

/** Logout: the token's id is kept until its expiry so it cannot be used again. */
export async function revokeToken(db: Db, principal: Principal): Promise<void> {
  if (!principal.jti) return;
  const expiresAt = new Date(principal.expiresAt ?? clock.now().getTime()).toISOString();
  await db.insert(revokedTokens).values({ jti: principal.jti, expiresAt }).onConflictDoNothing();
}
