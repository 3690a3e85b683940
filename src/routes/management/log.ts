/**
 * `/v1/log` (Administrator, LicenseManager, Sales; SPEC access table "Log, server info, email"): the service log
 * with the list conventions, its level names, and deletion by age and level. Entries are written by the service
 * itself (db/logging.ts, http/request-log.ts), never through this API. Each entry has a `category`: `Service`, or
 * `Audit` for the audit trail of security events, which only Administrators see and delete
 * (`GET /v1/log?filter=category == "Audit"`).
 */
import { type RouteHandler, createRoute, z } from "@hono/zod-openapi";
import { Roles, access } from "../../auth/guard";
import { logs } from "../../db/schema";
import { ne } from "drizzle-orm";
import { serviceContext } from "../../http/context";
import { crud } from "../crud";
import { defineEntity, f } from "../../http/entity";
import { enveloped, errorResponses, int64, json } from "../../http/openapi";
import { ok } from "../../http/respond";
import type { AppEnv } from "../../http/app-env";
import type { Router } from "../../http/router";
import { LOG_CATEGORIES, LOG_LEVELS, deleteLogs, parseLogLevel } from "../../db/logging";
import type { ServiceContext } from "../../http/context";

/** Whether the caller may see and delete the audit trail: Administrators only. */
function seesAudit(ctx: ServiceContext): boolean {
  return ctx.principal?.roles.includes("Administrator") ?? false;
}

/** A service log entry as the list returns it (read-only: only the service writes entries). */
export const LogEntry = defineEntity({
  name: "LogEntry",
  singular: "log",
  plural: "logs",
  table: logs,
  fields: {
    id: f.id(),
    timestamp: f.date({ readOnly: true }),
    level: f.enumOf("LogLevel", LOG_LEVELS, { readOnly: true }),
    category: f.oneOf(LOG_CATEGORIES, {
      readOnly: true,
      description:
        "What the entry is about: `Service`, or `Audit` for security events (listed for Administrators only).",
    }),
    message: f.string({ readOnly: true }),
    exception: f.string({ readOnly: true, description: "The error's name, message and stack." }),
    properties: f.string({
      readOnly: true,
      description: "JSON object: method, path, status, clientIp … of the request.",
    }),
    requestId: f.string({
      readOnly: true,
      description: "The request that wrote the entry (its cf-ray or a generated id).",
    }),
  },
});

const levelParam = z
  .string()
  .max(32)
  .refine((v) => parseLogLevel(v) !== undefined, {
    message: `Expected a level name or number: ${LOG_LEVELS.map((l, i) => `${i} ${l}`).join(", ")}`,
  })
  .transform((v) => parseLogLevel(v)!);

const isoInstant = z
  .string()
  .max(64)
  .refine((v) => !Number.isNaN(Date.parse(v)), { message: "Not a valid ISO 8601 date" })
  .transform((v) => new Date(v));

/** The query of `DELETE /v1/log`. */
export const LogDeletionQuery = z.object({
  before: isoInstant.optional().openapi({
    type: "string",
    format: "date-time",
    maxLength: 64,
    description: "Delete entries written before this instant.",
  }),
  level: levelParam
    .optional()
    .openapi({ type: "string", maxLength: 32, description: "Delete only entries of this level (name or number)." }),
});

const roles = Roles.management;

const listLogLevelsRoute = createRoute({
  method: "get",
  path: "/v1/log/levels",
  tags: ["Service log"],
  operationId: "listLogLevels",
  summary: "List the log levels, by number",
  ...access.key(roles),
  responses: {
    200: json(enveloped({ levels: z.array(z.enum(LOG_LEVELS)) }), "Level names; index = level number"),
    ...errorResponses,
  },
});

const deleteLogsRoute = createRoute({
  method: "delete",
  path: "/v1/log",
  tags: ["Service log"],
  operationId: "deleteLogs",
  summary: "Delete log entries (all, or those before a date and/or of a level)",
  description:
    "Audit entries (category `Audit`) are deleted only when an Administrator asks; other roles delete the rest.",
  ...access.key(roles),
  request: { query: LogDeletionQuery },
  responses: { 200: json(enveloped({ deleted: int64() }), "How many entries were deleted"), ...errorResponses },
});

const deleteLogEntries: RouteHandler<typeof deleteLogsRoute, AppEnv> = async (c) => {
  const ctx = serviceContext(c);
  const { before, level } = c.req.valid("query");
  // Roles below Administrator clear the service's own entries only, never the audit trail.
  const deleted = await deleteLogs(ctx.db, {
    ...(before ? { before } : {}),
    ...(level ? { level } : {}),
    keepAudit: !seesAudit(ctx),
  });
  // Clearing the log is itself recorded, so the trail shows who removed what.
  ctx.log?.audit("LogDeleted", `${deleted} log entries deleted`, ctx, {
    deleted,
    before: before?.toISOString() ?? null,
    level: level ?? null,
  });
  return ok(c, { deleted });
};

/** Registers `GET /v1/log`, `GET /v1/log/levels` and `DELETE /v1/log`. */
export function registerLog(app: Router): void {
  crud(app, {
    entity: LogEntry,
    path: "/v1/log",
    tag: "Service log",
    operationIds: { list: "listLogs" },
    label: "service log entry",
    operations: ["list"],
    roles: { list: roles, create: roles, update: roles, delete: roles },
    list: { visible: (ctx) => (seesAudit(ctx) ? undefined : ne(logs.category, "Audit")) },
    descriptions: { list: "Audit entries (category `Audit`) are listed for Administrators only." },
  });

  app.openapi(listLogLevelsRoute, (c) => ok(c, { levels: [...LOG_LEVELS] }));
  app.openapi(deleteLogsRoute, deleteLogEntries);
}
