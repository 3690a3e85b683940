/**
 * Users (`/v1/users`), their settings (`/v1/users/{userId}/settings`) and roles (`/v1/users/{userId}/roles`,
 * `/v1/roles`): Administrator only (SPEC access table). Passwords are write-only, stored as PBKDF2 hashes.
 */
import { type RouteHandler, createRoute, z } from "@hono/zod-openapi";
import { type AppEnv, ROLES, type Role } from "../../http/app-env";
import { invalidateApiKeyCache } from "../../auth/api-key-service";
import { Roles, access } from "../../auth/guard";
import { tokensEndNow } from "../../auth/bearer";
import { endConsoleSessions } from "../../auth/console-session";
import { requireById, updateRow } from "../../http/repository";
import { eq } from "drizzle-orm";
import type { Db } from "../../db/client";
import { apiKeys, userSettings, users } from "../../db/schema";
import { serviceContext } from "../../http/context";
import { crud, idParamSchema } from "../crud";
import { ApiError, notFound400 } from "../../kernel/errors";
import { RoleName, enveloped, errorResponses, int64, json, jsonBody } from "../../http/openapi";
import { listBody, listQuery } from "../../http/list";
import { defineEntity, f } from "../../http/entity";
import { integer, sqliteTable, text } from "drizzle-orm/sqlite-core";
import { ok } from "../../http/respond";
import type { Router } from "../../http/router";
import { User, UserSetting, auditUserWrite, endsTokens, userWriteValues } from "../../auth/users";

const ROLE_DESCRIPTIONS: Record<Role, string> = {
  Administrator: "Everything, including users, roles, API keys, assemblies and service settings.",
  LicenseManager: "Licenses, templates, releases, downloads, traces, reports and webhooks.",
  Sales: "Customers, contacts, products, orders and licenses (no deletion of licenses).",
  Customer: "A customer's own account; no REST route requires it.",
  Application: "A protected application signed in with its user key; no REST route requires it.",
};

/** Deletes a user and the user's API keys in one batch (400 when the user is not found, as deleteRow answers). */
async function removeUser(db: Db, id: string): Promise<void> {
  const [, deleted] = await db.batch([
    db.delete(apiKeys).where(eq(apiKeys.ownerId, id)),
    db.delete(users).where(eq(users.id, id)).returning({ id: users.id }),
  ]);
  if (deleted.length === 0) throw notFound400(User.name, id);
}

const RolesBody = z.object({ roles: z.array(RoleName).min(1).max(ROLES.length) }).openapi("RoleNames");

/** The columns of the roles as a list reads them: fixed by the service (no D1 table; list.ts reads the rows). */
const roleRows = sqliteTable("role_rows", {
  id: integer("id").notNull(),
  name: text("name"),
  description: text("description"),
});

/** A role as `GET /v1/roles` lists it; the list conventions apply to it as to every list. */
export const RoleEntity = defineEntity({
  name: "Role",
  singular: "role",
  plural: "roles",
  table: roleRows,
  // The name is the document's RoleName (one enumeration of the roles, not a copy per property).
  fields: { id: f.id(), name: { ...f.oneOf(ROLES), output: RoleName, input: RoleName }, description: f.string() },
});

const admin = Roles.admin;
const userParams = z.object({ userId: idParamSchema(User, "userId") });
const rolesAnswer = json(enveloped({ roles: z.array(RoleName) }), "The user's roles");

const listRolesRoute = createRoute({
  method: "get",
  path: "/v1/roles",
  tags: ["Users"],
  operationId: "listRoles",
  summary: "List the roles",
  ...access.key(admin),
  request: { query: listQuery(["select", "filter", "sort", "take", "skip"]) },
  responses: {
    200: json(
      enveloped({ roles: z.array(RoleEntity.record), totalRolesCount: int64() }),
      "A page of the roles and the count of all that match the filter",
    ),
    ...errorResponses,
  },
});

const listRoles: RouteHandler<typeof listRolesRoute, AppEnv> = async (c) => {
  const ctx = serviceContext(c);
  const rows = ROLES.map((name, i) => ({ id: i + 1, name, description: ROLE_DESCRIPTIONS[name] }));
  return ok(c, await listBody(ctx.db, RoleEntity, c.req.valid("query"), ctx.config, { rows }));
};

const listUserRolesRoute = createRoute({
  method: "get",
  path: "/v1/users/{userId}/roles",
  tags: ["Users"],
  operationId: "listUserRoles",
  summary: "List a user's roles",
  ...access.key(admin),
  request: { params: userParams },
  responses: { 200: rolesAnswer, ...errorResponses },
});

const listUserRoles: RouteHandler<typeof listUserRolesRoute, AppEnv> = async (c) => {
  const user = await requireById(c.get("db"), User, c.req.valid("param").userId);
  return ok(c, { roles: (user["roles"] as Role[] | null) ?? [] });
};

/** `POST` gives a user roles, `DELETE` takes them away: one declaration for both. */
const userRolesRoute = (method: "post" | "delete", operationId: string, summary: string) =>
  createRoute({
    method,
    path: "/v1/users/{userId}/roles",
    tags: ["Users"],
    operationId,
    summary,
    ...access.key(admin),
    request: { params: userParams, body: jsonBody(RolesBody) },
    responses: { 200: rolesAnswer, ...errorResponses },
  });

const addUserRolesRoute = userRolesRoute("post", "addUserRoles", "Give a user roles");
const removeUserRolesRoute = userRolesRoute("delete", "removeUserRoles", "Take roles from a user");

/** The handler of `addUserRoles` (`post`) or `removeUserRoles` (`delete`). */
function changeUserRoles(method: "post" | "delete"): RouteHandler<ReturnType<typeof userRolesRoute>, AppEnv> {
  return async (c) => {
    const ctx = serviceContext(c);
    const { userId } = c.req.valid("param");
    const { roles } = c.req.valid("json");
    const user = await requireById(ctx.db, User, userId);
    const current = new Set((user["roles"] as Role[] | null) ?? []);
    for (const role of roles) method === "post" ? current.add(role) : current.delete(role);
    if (method === "delete" && userId === ctx.principal?.userId && !current.has("Administrator")) {
      throw new ApiError(400, "You cannot remove the Administrator role from your own account");
    }
    const next = ROLES.filter((r) => current.has(r));
    const ends = endsTokens({ roles: next }, user);
    if (ends) await endConsoleSessions(ctx.db, String(userId));
    const row = await updateRow(ctx.db, User, userId, {
      roles: next,
      ...(ends ? { tokensValidAfter: tokensEndNow() } : {}),
    });
    invalidateApiKeyCache();
    auditUserWrite(ctx, "update", row, user);
    return ok(c, { roles: next });
  };
}

const addUserRoles = changeUserRoles("post");
const removeUserRoles = changeUserRoles("delete");

export function registerUsers(app: Router): void {
  crud(app, {
    entity: User,
    path: "/v1/users",
    tag: "Users",
    operationIds: { list: "listUsers", create: "createUser", update: "updateUser", delete: "deleteUser" },
    roles: { list: admin, create: admin, update: admin, delete: admin },
    hooks: {
      create: async (_ctx, values) => ({ roles: [], ...(await userWriteValues(values)), id: crypto.randomUUID() }),
      update: async (ctx, values, existing) => {
        const out = await userWriteValues(values);
        // A new password or a removed role ends the user's bearer tokens at once (auth/bearer.ts loggedOutQuery),
        // and the user's console sessions.
        if (!endsTokens(out, existing)) return out;
        await endConsoleSessions(ctx.db, String(existing["id"]));
        return { ...out, tokensValidAfter: tokensEndNow() };
      },
      delete: (ctx, existing) => {
        if (existing["id"] === ctx.principal?.userId) throw new ApiError(400, "You cannot delete your own account");
      },
      // The user's API keys (console sessions included) go with the user, in one batch: a key left without an owner
      // would still open the licensing routes, which need no role. The user's bearer tokens end with the row
      // (auth/bearer.ts), and other isolates' cached keys at once (auth/api-key-service.ts, `recheck`).
      remove: (ctx, id) => removeUser(ctx.db, String(id)),
      written: (ctx, operation, row, previous) => {
        invalidateApiKeyCache();
        auditUserWrite(ctx, operation, row, previous);
      },
    },
  });

  crud(app, {
    entity: UserSetting,
    path: "/v1/users/{userId}/settings",
    tag: "Users",
    operationIds: {
      list: "listUserSettings",
      create: "createUserSetting",
      update: "updateUserSetting",
      delete: "deleteUserSetting",
    },
    label: "user setting",
    idParam: "settingId",
    scope: { param: "userId", column: userSettings.userId, parent: User },
    roles: { list: admin, create: admin, update: admin, delete: admin },
  });

  app.openapi(listRolesRoute, listRoles);
  app.openapi(listUserRolesRoute, listUserRoles);
  app.openapi(addUserRolesRoute, addUserRoles);
  app.openapi(removeUserRolesRoute, removeUserRoles);
}
