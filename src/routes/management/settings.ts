/**
 * `/v1/settings` (Administrator, SPEC access table "Assemblies, service settings"): every setting with its
 * effective value and source, and changes that apply at once in this isolate and within
 * Application:SettingsCacheSeconds elsewhere (CONTRACT section 7). Secrets are never returned and never written here.
 */
import { type RouteHandler, createRoute, z } from "@hono/zod-openapi";
import { integer, sqliteTable, text } from "drizzle-orm/sqlite-core";
import { Roles, access } from "../../auth/guard";
import { settingDefinitions } from "../../kernel/config";
import { serviceContext } from "../../http/context";
import { defineEntity, f } from "../../http/entity";
import { enveloped, errorResponses, int64, json, jsonBody } from "../../http/openapi";
import { listBody, listQuery } from "../../http/list";
import { ok } from "../../http/respond";
import type { AppEnv } from "../../http/app-env";
import type { Router } from "../../http/router";
import { describeSetting, describeSettings, loadConfig, validateChanges, writeSettings } from "../../db/settings-store";

/**
 * The columns of the settings as a list reads them: computed from the configuration on each request (no D1 table has
 * them; list.ts reads the rows through json_each under this name). `id` is the setting's place in the declaration
 * order, the list's order when no sort is given.
 */
const settingRows = sqliteTable("setting_rows", {
  id: integer("id").notNull(),
  name: text("name"),
  category: text("category"),
  group: text("group"),
  value: text("value"),
  source: text("source"),
  type: text("type"),
  description: text("description"),
  readOnly: integer("read_only", { mode: "boolean" }),
  isSecret: integer("is_secret", { mode: "boolean" }),
  isSet: integer("is_set", { mode: "boolean" }),
});

/** Each setting's id: its place in the declaration order. */
const SETTING_IDS = new Map(Object.keys(settingDefinitions).map((name, i) => [name, i + 1]));

/** One setting as listed (CONTRACT section 3 "Setting"); the list conventions apply to it as to every list. */
export const Setting = defineEntity({
  name: "Setting",
  singular: "setting",
  plural: "settings",
  table: settingRows,
  fields: {
    id: f.id({
      description: "The setting's place in the order kernel/settings.ts declares them: the list's order unsorted.",
    }),
    name: f.string(),
    category: f.string(),
    group: f.string(),
    value: f.string({ description: "Effective value as text; never present for secrets." }),
    source: f.oneOf(["default", "environment", "database"]),
    type: f.oneOf(["boolean", "integer", "duration", "string", "list", "json"]),
    description: f.string(),
    readOnly: f.bool({ description: "Cannot be changed through PUT /v1/settings." }),
    isSecret: f.bool(),
    isSet: f.bool(),
  },
});

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

const listSettingsRoute = createRoute({
  method: "get",
  path: "/v1/settings",
  tags: ["Settings"],
  operationId: "listSettings",
  summary: "List the settings with their effective values and sources",
  ...access.key(Roles.admin),
  request: { query: listQuery(["select", "filter", "sort", "take", "skip"]) },
  responses: {
    200: json(
      enveloped({ settings: z.array(Setting.record), totalSettingsCount: int64() }),
      "A page of the settings and the count of all that match the filter",
    ),
    ...errorResponses,
  },
});

const listSettings: RouteHandler<typeof listSettingsRoute, AppEnv> = async (c) => {
  const ctx = serviceContext(c);
  const { config, sources } = await loadConfig(c.env, c.env.DB);
  const rows = describeSettings(config, sources).map((setting) => ({
    id: SETTING_IDS.get(setting.name),
    ...setting,
  }));
  return ok(c, await listBody(ctx.db, Setting, c.req.valid("query"), ctx.config, { rows }));
};

const updateSettingsRoute = createRoute({
  method: "put",
  path: "/v1/settings",
  tags: ["Settings"],
  operationId: "updateSettings",
  summary: "Change settings (all or nothing); a null value returns a setting to its environment or default value",
  ...access.key(Roles.admin),
  request: { body: jsonBody(SettingsChange) },
  responses: {
    200: json(enveloped({ settings: z.array(Setting.record) }), "The changed settings as they now apply"),
    ...errorResponses,
  },
});

const updateSettings: RouteHandler<typeof updateSettingsRoute, AppEnv> = async (c) => {
  const ctx = serviceContext(c);
  const changes = validateChanges(c.req.valid("json").settings, ctx.config);
  // Forgets this isolate's settings and the answers that follow them (db/settings-store.ts).
  await writeSettings(ctx.db, changes);
  const { config, sources } = await loadConfig(c.env, c.env.DB);
  // The rest of this request (its serialization) follows the new settings too.
  c.set("config", config);
  // An audit entry (db/logging.ts), with names only: a value could be a secret.
  ctx.log?.audit("SettingsChanged", `Settings changed: ${changes.map((change) => change.name).join(", ")}`, ctx, {
    changes: changes.map((change) => ({ name: change.name, removed: change.value === null })),
  });
  return ok(c, {
    settings: changes.map((change) => ({
      id: SETTING_IDS.get(change.name),
      ...describeSetting(change.name, config, sources[change.name]),
    })),
  });
};

/** Registers `GET /v1/settings` and `PUT /v1/settings`. */
export function registerSettings(app: Router): void {
  app.openapi(listSettingsRoute, listSettings);
  app.openapi(updateSettingsRoute, updateSettings);
}
