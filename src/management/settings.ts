/**
 * `/v1/settings` (Administrator, SPEC access table "Assemblies, service settings"): every setting with its
 * effective value and source, and changes that apply at once in this isolate and within
 * Application:SettingsCacheSeconds elsewhere (CONTRACT section 7). Secrets are never returned and never written here.
 */
import { createRoute, z } from "@hono/zod-openapi";
import { Roles, access } from "../auth/guard";
import { invalidateConfig, loadConfig } from "../config";
import { serviceContext } from "../http/context";
import { enveloped, errorResponses, int64, json, jsonBody } from "../http/openapi";
import { NO_LIST_PARAMS, refuseListParams } from "../http/list";
import { ok } from "../http/respond";
import type { Router } from "../http/router";
import { describeSetting, describeSettings, validateChanges, writeSettings } from "../settings-store";

/** One setting as listed (CONTRACT section 3 "Setting"). */
export const SettingRecord = z
  .object({
    name: z.string(),
    category: z.string(),
    group: z.string().optional(),
    value: z.string().optional().openapi({ description: "Effective value as text; never present for secrets." }),
    source: z.enum(["default", "environment", "database"]),
    type: z.enum(["boolean", "integer", "duration", "string", "list", "json"]),
    description: z.string(),
    readOnly: z.boolean().openapi({ description: "Cannot be changed through PUT /v1/settings." }),
    isSecret: z.boolean(),
    isSet: z.boolean(),
  })
  .openapi("Setting");

/** The body of `PUT /v1/settings`. */
export const SettingsChange = z
  .object({
    settings: z
      .array(
        z.object({
          name: z.string().min(1).max(256),
          value: z
            .string()
            .max(100_000)
            .nullable()
            .openapi({ description: "The new value as text; null removes the stored value." }),
        }),
      )
      .min(1)
      .max(100),
  })
  .openapi("SettingsChange");

/** Registers `GET /v1/settings` and `PUT /v1/settings`. */
export function registerSettings(app: Router): void {
  app.openapi(
    createRoute({
      method: "get",
      path: "/v1/settings",
      tags: ["Settings"],
      operationId: "listSettings",
      summary: "List every setting with its effective value and source",
      description: NO_LIST_PARAMS,
      ...access.key(Roles.admin),
      responses: {
        200: json(enveloped({ settings: z.array(SettingRecord), totalSettingsCount: int64() }), "Every setting"),
        ...errorResponses,
      },
    }),
    async (c) => {
      refuseListParams(c.req.query());
      const { config, sources } = await loadConfig(c.env, c.env.DB);
      const all = describeSettings(config, sources);
      return ok(c, { settings: all, totalSettingsCount: all.length });
    },
  );

  app.openapi(
    createRoute({
      method: "put",
      path: "/v1/settings",
      tags: ["Settings"],
      operationId: "updateSettings",
      summary: "Change settings (all or nothing); a null value returns a setting to its environment or default value",
      ...access.key(Roles.admin),
      request: { body: jsonBody(SettingsChange) },
      responses: {
        200: json(enveloped({ settings: z.array(SettingRecord) }), "The changed settings as they now apply"),
        ...errorResponses,
      },
    }),
    async (c) => {
      const ctx = serviceContext(c);
      const changes = validateChanges(c.req.valid("json").settings, ctx.config);
      await writeSettings(ctx.db, changes);
      invalidateConfig();
      const { config, sources } = await loadConfig(c.env, c.env.DB);
      // The rest of this request (its serialization) follows the new settings too.
      c.set("config", config);
      // An audit entry (logging.ts), with names only: a value could be a secret.
      ctx.log?.audit("SettingsChanged", `Settings changed: ${changes.map((change) => change.name).join(", ")}`, ctx, {
        changes: changes.map((change) => ({ name: change.name, removed: change.value === null })),
      });
      return ok(c, { settings: changes.map((change) => describeSetting(change.name, config, sources[change.name])) });
    },
  );
}
