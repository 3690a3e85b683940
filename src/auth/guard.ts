/**
 * Credential, role and permission checks, declared on every route (DESIGN house style):
 *   ...access.key(["Administrator"])  API key only; roles of its owner; permission bit of the HTTP method
 *   ...access.bearer()                bearer token only
 *   ...access.either(roles?)          API key or bearer token
 *   ...access.anonymous()             no credential
 * Each returns the route's `middleware` and its OpenAPI `security`, so the document always says what is enforced.
 */
import type { Context, MiddlewareHandler } from "hono";
import type { AppEnv, Principal, Role } from "../app-env";
import { forbidden, unauthorized } from "../http/errors";
import { authenticateApiKey, permissionFor } from "./api-keys";
import { verifyToken } from "./bearer";

export const API_KEY_SCHEME = "ApiKey";
export const BEARER_SCHEME = "Bearer";

function bearerToken(header: string | undefined): string | undefined {
  const m = /^Bearer\s+(\S+)\s*$/i.exec(header ?? "");
  return m?.[1];
}

function hasRole(principal: Principal, roles: readonly Role[] | undefined): boolean {
  return roles === undefined || principal.roles.some((r) => roles.includes(r));
}

export type Credential = "key" | "bearer" | "either";

/**
 * Checks the request's credential: an API key (header Application:ApiKeyHeaderName) or a bearer token, as the
 * route accepts; the roles, and the permission bit of the method where roles are checked. Returns the principal or
 * throws the 401/403 ApiError. gRPC calls it with the call's metadata (the same headers).
 */
export async function authenticate(c: Context<AppEnv>, accepts: Credential, roles?: readonly Role[]): Promise<Principal> {
  const config = c.get("config");
  const db = c.get("db");
  const key = c.req.header(config["Application:ApiKeyHeaderName"]);
  let principal: Principal | undefined;
  if (key !== undefined && accepts !== "bearer") {
    principal = await authenticateApiKey(db, config, key);
    if (!principal) throw unauthorized(API_KEY_SCHEME);
    // The permission bits apply where roles are checked: Management, release download and webhook routes.
    if (roles !== undefined && ((principal.permissions ?? 0) & permissionFor(c.req.method)) === 0) throw forbidden();
  } else {
    const token = accepts === "key" ? undefined : bearerToken(c.req.header("authorization"));
    if (token === undefined) throw unauthorized(accepts === "key" ? API_KEY_SCHEME : BEARER_SCHEME);
    principal = await verifyToken(config, db, token);
    if (!principal) throw unauthorized(BEARER_SCHEME);
  }
  if (!hasRole(principal, roles)) throw forbidden();
  return principal;
}

function guard(accepts: Credential, roles?: readonly Role[]): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    c.set("principal", await authenticate(c, accepts, roles));
    await next();
  };
}

const rolesNote = (roles?: readonly Role[]) => (roles ? { "x-roles": [...roles] } : {});
type Security = Record<string, string[]>[];
const requirement = (...schemes: string[]): Security => schemes.map((s) => ({ [s]: [] }));

/** Route declarations of who may call. Spread into `createRoute({...})`. */
export const access = {
  key: (roles: readonly Role[]) => ({
    middleware: [guard("key", roles)],
    security: requirement(API_KEY_SCHEME),
    ...rolesNote(roles),
  }),
  bearer: () => ({ middleware: [guard("bearer")], security: requirement(BEARER_SCHEME) }),
  either: (roles?: readonly Role[]) => ({
    middleware: [guard("either", roles)],
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
