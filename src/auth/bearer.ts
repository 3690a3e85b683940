/**
 * Bearer tokens (SPEC "Authentication"): HS256 JWTs signed with Application:JwtSecret, lifetime
 * Application:TokenExpiration, carrying the user's roles. Verification pins the algorithm and requires `exp`;
 * logout records the token's `jti` so it stays unusable until it would have expired; a user's password change,
 * removed role or deletion ends all of that user's tokens at once (checked in the same lookup).
 */
import { type SQL, sql } from "drizzle-orm";
import { SignJWT, jwtVerify } from "jose";
import { ROLES, type Principal, type Role } from "../http/app-env";
import { clock } from "../kernel/clock";
import { type Config, ConfigError } from "../kernel/config";
import type { Db } from "../db/client";
import { type CheckColumn, batchReads, compiled } from "../db/compiled";
import { revokedTokens, users } from "../db/schema";
import { randomString } from "../kernel/crypto";
import { memo, weakMemo } from "../kernel/memo";

const ISSUER = "licensing-service";
const keys = memo<string, Promise<CryptoKey>>("jwt-keys", {
  key: "Application:JwtSecret",
  max: 8,
  evict: "all",
});

/**
 * The HS256 key, imported once per isolate and secret: handed raw bytes, jose would import them again on every
 * sign and verify (DESIGN: no per-request key import).
 */
function signingKey(config: Config): Promise<CryptoKey> {
  const secret = config["Application:JwtSecret"];
  if (!secret) throw new ConfigError("Application:JwtSecret", "a secret is required to issue and verify bearer tokens");
  let key = keys.get(secret);
  if (!key) {
    key = crypto.subtle.importKey("raw", new TextEncoder().encode(secret), { name: "HMAC", hash: "SHA-256" }, false, [
      "sign",
      "verify",
    ]);
    keys.keep(secret, key);
  }
  return key;
}

export interface TokenSubject {
  /** `sub`: the user id, or the license's public id for a user-key sign-in. */
  subject: string;
  name: string;
  roles: readonly Role[];
  licenseId?: string;
  /** The user's `tokens_valid_after` (seconds): a new token is dated no earlier, so it outlives that cut. */
  validAfter?: number | null;
}

/** Issues a bearer token; returns it with its lifetime in seconds. */
export async function issueToken(config: Config, who: TokenSubject): Promise<{ token: string; expiresIn: number }> {
  const now = Math.max(Math.floor(clock.now().getTime() / 1000), who.validAfter ?? 0);
  const expiresIn = Math.max(1, Math.floor(config["Application:TokenExpiration"] / 1000));
  const token = await new SignJWT({
    name: who.name,
    roles: [...who.roles],
    ...(who.licenseId ? { lic: who.licenseId } : {}),
  })
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
  const [[revoked]] = await batchReads(db, [loggedOutQuery(principal)]);
  return revoked ? undefined : principal;
}

/**
 * Whether a token has ended early: it was logged out, or it is a user's token and that user is gone or ended their
 * tokens after it was issued (`tokens_valid_after`: a password change or a removed role). An SQL condition over the
 * placeholders checkJti, checkUserId and checkIssuedAt.
 */
function endedEarly(userCut: boolean): SQL {
  const loggedOut = sql`EXISTS (SELECT 1 FROM ${revokedTokens} WHERE ${revokedTokens.jti} = ${sql.placeholder("checkJti")})`;
  if (!userCut) return loggedOut;
  return sql`${loggedOut} OR NOT EXISTS (SELECT 1 FROM ${users} WHERE ${users.id} = ${sql.placeholder("checkUserId")} AND coalesce(${users.tokensValidAfter}, 0) <= ${sql.placeholder("checkIssuedAt")})`;
}

/**
 * The check as a column a licensing call's first read carries (db/first-batch.ts), so that read and the check are
 * one statement: true when the token has ended early.
 */
export function loggedOutColumn(token: Pick<Principal, "jti" | "userId" | "issuedAt">): CheckColumn {
  const checkJti = token.jti ?? "";
  if (!token.userId) return { shape: "logout", expression: () => endedEarly(false), values: { checkJti } };
  return {
    shape: "logout or user cut",
    expression: () => endedEarly(true),
    values: { checkJti, checkUserId: token.userId, checkIssuedAt: token.issuedAt ?? 0 },
  };
}

/** The check as a read of its own, unexecuted (a route may send it in one D1 batch with its other reads): a row when the token has ended early. */
const endedQueries = [false, true].map((userCut) =>
  compiled((db) => db.select({ ended: sql<number>`1` }).from(sql`(SELECT 1)`).where(endedEarly(userCut))),
);

export function loggedOutQuery(token: Pick<Principal, "jti" | "userId" | "issuedAt">) {
  const column = loggedOutColumn(token);
  return endedQueries[token.userId ? 1 : 0]!.with(column.values);
}

/**
 * The `tokens_valid_after` update that ends every token of a user issued until now. Tokens carry `iat` in whole
 * seconds, so the cut is the next whole second, and always past the previous cut: a token issued after an earlier
 * cut in this same second is dated at that cut (issueToken), and must end too.
 */
export function tokensEndNow(): SQL {
  return sql`max(coalesce(${users.tokensValidAfter}, 0) + 1, ${Math.ceil(clock.now().getTime() / 1000)})`;
}

/**
 * Verifies a bearer token's signature and claims, without the logout check (verifyToken adds it; a route that
 * defers it must run loggedOutQuery before it acts: db/first-batch.ts).
 */
export async function verifyTokenClaims(config: Config, token: string): Promise<Principal | undefined> {
  const key = await signingKey(config);
  const now = clock.now();
  // A token verified before with this key needs only its expiry checked again (see `verified`).
  const known = verified.get(key)?.get(token);
  if (known)
    return Math.floor(now.getTime() / 1000) < known.exp
      ? { ...known.principal, roles: [...known.principal.roles] }
      : undefined;
  let payload;
  try {
    ({ payload } = await jwtVerify(token, key, {
      algorithms: ["HS256"],
      issuer: ISSUER,
      requiredClaims: ["exp", "jti", "sub"],
      currentDate: now,
    }));
  } catch (e) {
    if (e instanceof ConfigError) throw e;
    return undefined;
  }
  const jti = String(payload.jti);
  const roles = (Array.isArray(payload["roles"]) ? payload["roles"] : []).filter((r): r is Role =>
    ROLES.includes(r as Role),
  );
  const lic = typeof payload["lic"] === "string" ? payload["lic"] : undefined;
  const principal: Principal = {
    kind: "bearer",
    ...(lic ? { licenseId: lic } : { userId: String(payload.sub) }),
    userName: typeof payload["name"] === "string" ? payload["name"] : String(payload.sub),
    roles,
    jti,
    issuedAt: typeof payload.iat === "number" ? payload.iat : 0,
    expiresAt: (payload.exp ?? 0) * 1000,
  };
  remember(key, token, { principal, exp: payload.exp ?? 0 });
  return principal;
}

/**
 * Tokens whose signature and claims jose verified, per key: the same token under the same key verifies the same
 * way every time, but for its expiry, which is checked again at each use (jose's rule: expired when exp <= now, in
 * whole seconds; a token with an nbf still ahead never verified, so it is never here). An application sends its
 * token with every call until it expires, so each isolate verifies it once; the logout check (loggedOutQuery) still
 * runs on every request. Bounded: past MAX_VERIFIED the oldest are verified again when next seen.
 */
const MAX_VERIFIED = 4096;
const verified = weakMemo<CryptoKey, Map<string, { principal: Principal; exp: number }>>(
  "verified-tokens",
  `HMAC key, then bearer token (at most ${MAX_VERIFIED} tokens per key, oldest leaves first; used until its exp)`,
);

function remember(key: CryptoKey, token: string, entry: { principal: Principal; exp: number }): void {
  let tokens = verified.get(key);
  if (!tokens) {
    tokens = new Map();
    verified.set(key, tokens);
  }
  if (tokens.size >= MAX_VERIFIED) tokens.delete(tokens.keys().next().value as string);
  tokens.set(token, entry);
}

/** Logout: the token's id is kept until its expiry so it cannot be used again. */
export async function revokeToken(db: Db, principal: Principal): Promise<void> {
  if (!principal.jti) return;
  const expiresAt = new Date(principal.expiresAt ?? clock.now().getTime()).toISOString();
  await db.insert(revokedTokens).values({ jti: principal.jti, expiresAt }).onConflictDoNothing();
}
