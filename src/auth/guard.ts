/**
 * Credential, role and permission checks, declared on every route (DESIGN house style):
 *   ...access.key(["Administrator"])  API key only; roles of its owner; permission bit of the HTTP method
 *   ...access.bearer()                bearer token only
 *   ...access.either(roles?)          API key or bearer token
 *   ...access.anonymous()             no credential
 * Routes that check roles (the management routes) also take an `Idempotency-Key` on POST (http/idempotency.ts).
 * Each returns the route's `middleware` and its OpenAPI `security`, so the document always says what is enforced.
 */
import type { Context, MiddlewareHandler } from "hono";
import type { AppEnv, Principal, Role } from "../http/app-env";
import { batchReads } from "../db/compiled";
import { type PendingCheck, heldFirstBatch, leaveCheck } from "../db/first-batch";
import { idempotentPost } from "../http/idempotency";
import { forbidden, unauthorized } from "../kernel/errors";
import { type KeyRecheck, authenticateApiKey, permissionFor } from "./api-key-service";
import { loggedOutColumn, loggedOutQuery, verifyToken, verifyTokenClaims } from "./bearer";
import { consoleSessionActive, consoleSessionKey } from "./console-session";

export const API_KEY_SCHEME = "ApiKey";
export const BEARER_SCHEME = "Bearer";

function bearerToken(header: string | undefined): string | undefined {
  const m = /^Bearer\s+(\S+)\s*$/i.exec(header ?? "");
  return m?.[1];
}

function hasRole(principal: Principal, roles: readonly Role[] | undefined): boolean {
  return roles === undefined || principal.roles.some((r) => roles.includes(r));
}

/**
 * Whether the caller is staff who manage licenses and releases (Administrator, LicenseManager: `Roles.managers`),
 * whom the licensee's own limits (monthly deactivations) do not hold and who may control a release's rollout.
 */
export function isManager(principal: Principal | undefined): boolean {
  return principal !== undefined && hasRole(principal, Roles.managers);
}

export type Credential = "key" | "bearer" | "either";

/** A bearer token's logout check as a check of the request's first D1 batch: 401 for a logged-out token. */
function logoutCheck(token: Principal): PendingCheck {
  return {
    // The token's logout record or its user's cut (no rows: still valid).
    query: () => loggedOutQuery(token),
    column: loggedOutColumn(token),
    settle: (rows) => {
      if (rows.length > 0) throw unauthorized(BEARER_SCHEME);
    },
  };
}

/**
 * A cached API key's check that it (and its owner) still exist, as a check of the request's first batch: 401 for a
 * key deleted, or whose owner was deleted, in any isolate since this one cached it.
 */
function keyCheck(c: Context<AppEnv>, recheck: KeyRecheck): PendingCheck {
  return {
    query: () => recheck.query(),
    column: recheck.column,
    settle: (rows) => {
      if (rows.length > 0) refuseKey(c);
    },
  };
}

/** 401 for an API key that is not (or no longer) valid; it counts like a failed login (protection/limits.ts). */
function refuseKey(c: Context<AppEnv>): never {
  c.set("refusedApiKey", true);
  throw unauthorized(API_KEY_SCHEME);
}

/** How a route's guard checks its credential. */
export interface AuthenticateOptions {
  /**
   * Leave a bearer token's logout check, and a cached API key's existence check, to the route's first D1 batch
   * (db/first-batch.ts).
   */
  deferLogoutCheck?: boolean;
}

/**
 * Checks the request's credential: an API key (header Application:ApiKeyHeaderName) or a bearer token, as the
 * route accepts; the roles, and the permission bit of the method where roles are checked. Returns the principal or
 * throws the 401/403 ApiError. gRPC calls it with the call's metadata (the same headers).
 */
export async function authenticate(
  c: Context<AppEnv>,
  accepts: Credential,
  roles?: readonly Role[],
  options: AuthenticateOptions = {},
): Promise<Principal> {
  const config = c.get("config");
  const db = c.get("db");
  // The admin console's cookie (with its CSRF token) stands for an API key when no credential header is sent.
  const key =
    c.req.header(config["Application:ApiKeyHeaderName"]) ??
    (accepts !== "bearer" && c.req.header("authorization") === undefined ? await consoleSessionKey(c) : undefined);
  if (key === null) throw unauthorized(API_KEY_SCHEME);
  let principal: Principal | undefined;
  if (key !== undefined && accepts !== "bearer") {
    const validated = await authenticateApiKey(db, config, key);
    if (validated?.recheck) {
      // From this isolate's cache: the key and its owner must still exist (a deletion ends a key at once everywhere).
      if (options.deferLogoutCheck) await leaveCheck(db, keyCheck(c, validated.recheck));
      else {
        const [gone] = await batchReads(db, [validated.recheck.query()]);
        if (gone.length > 0) refuseKey(c);
      }
    }
    if (!validated) refuseKey(c);
    // A console session also ends when idle; checked on every use, a validation from the cache included.
    if (validated.sessionDigest && !(await consoleSessionActive(db, config, validated.sessionDigest))) refuseKey(c);
    principal = validated.principal;
    // The permission bits apply where roles are checked: Management, release download and webhook routes.
    if (roles !== undefined && ((principal.permissions ?? 0) & permissionFor(c.req.method)) === 0) throw forbidden();
  } else {
    const token = accepts === "key" ? undefined : bearerToken(c.req.header("authorization"));
    if (token === undefined) throw unauthorized(accepts === "key" ? API_KEY_SCHEME : BEARER_SCHEME);
    if (options.deferLogoutCheck) {
      principal = await verifyTokenClaims(config, token);
      if (principal?.jti) await leaveCheck(db, logoutCheck(principal));
    } else {
      principal = await verifyToken(config, db, token);
    }
    if (!principal) throw unauthorized(BEARER_SCHEME);
  }
  if (!hasRole(principal, roles)) throw forbidden();
  return principal;
}

function guard(
  accepts: Credential,
  roles?: readonly Role[],
  options: AuthenticateOptions = {},
): MiddlewareHandler<AppEnv> {
  if (!options.deferLogoutCheck) {
    return async (c, next) => {
      c.set("principal", await authenticate(c, accepts, roles));
      await next();
    };
  }
  return async (c, next) => {
    c.set("principal", await authenticate(c, accepts, roles, options));
    await next();
    // A route that never batched the check still answers a logged-out token 401 (after the fact, but never 200).
    await heldFirstBatch(c.get("db"))?.flush(c.get("db"));
  };
}

const rolesNote = (roles?: readonly Role[]) => (roles ? { "x-roles": [...roles] } : {});
type Security = Record<string, string[]>[];
const requirement = (...schemes: string[]): Security => schemes.map((s) => ({ [s]: [] }));

/** Route declarations of who may call. Spread into `createRoute({...})`. */
export const access = {
  key: (roles: readonly Role[]) => ({
    middleware: [guard("key", roles), idempotentPost],
    security: requirement(API_KEY_SCHEME),
    ...rolesNote(roles),
  }),
  bearer: () => ({ middleware: [guard("bearer")], security: requirement(BEARER_SCHEME) }),
  either: (roles?: readonly Role[], options?: AuthenticateOptions) => ({
    // Role-checked routes are the management routes: their POSTs take an Idempotency-Key (http/idempotency.ts).
    middleware: roles ? [guard("either", roles, options), idempotentPost] : [guard("either", roles, options)],
    security: requirement(API_KEY_SCHEME, BEARER_SCHEME),
    ...rolesNote(roles),
  }),
  anonymous: () => ({ security: requirement() }),
};

/** Role sets of SPEC's access table. */
export const Roles = {
  management: ["Administrator", "LicenseManager", "Sales"],
  managers: ["Administrator", "LicenseManager"],
  admin: ["Administrator"],
} as const satisfies Record<string, readonly Role[]>;
