/**
 * The service settings as an administrator sees and changes them (`/v1/settings`, CONTRACT sections 1, 3 and 7),
 * free of HTTP: every setting of kernel/config.ts with its effective value as text and where it came from, secrets
 * without their value; and a change set validated whole before one batch writes it.
 */
import { eq, sql } from "drizzle-orm";
import {
  type Config,
  ConfigError,
  DURATION_PARSERS,
  ENVIRONMENT_ONLY,
  type SettingDefinition,
  type SettingName,
  type SettingRow,
  type SettingSource,
  isSettingName,
  loadConfigFrom,
  parseSetting,
  settingDefinitions,
  unsafeSetting,
} from "../kernel/config";
import { nowIso } from "../kernel/clock";
import { type Db, getDb } from "./client";
import { products, settings } from "./schema";
import { ApiError } from "../kernel/errors";
import { forgetAll } from "../kernel/memo";

/** Every row of the settings table, as the configuration is built from them (kernel/config.ts buildConfig). */
function readSettings(d1: D1Database): Promise<readonly SettingRow[]> {
  return getDb(d1).select({ name: settings.name, value: settings.value }).from(settings);
}

/**
 * The effective configuration for a request (kernel/config.ts loadConfigFrom: cached per isolate, re-read after
 * Application:SettingsCacheSeconds), its stored settings read with drizzle.
 */
export function loadConfig(vars: Record<string, unknown>, d1: D1Database) {
  return loadConfigFrom(vars, d1, readSettings);
}

/** How a setting's text is read. */
export type SettingType = "boolean" | "integer" | "duration" | "string" | "list" | "json";

/** One setting as `GET /v1/settings` returns it. */
export interface SettingView {
  name: string;
  /** The first part of the name (`Application`, `IpFiltering` …). */
  category: string;
  /** The middle parts of a three-part name (`BruteForceProtection`). */
  group?: string;
  /** The effective value as text, in a form PUT accepts back; absent for secrets and for unset optional settings. */
  value?: string;
  source: SettingSource;
  type: SettingType;
  description: string;
  /** Cannot be written through `PUT /v1/settings` (secrets, and the settings listed in API_READ_ONLY). */
  readOnly: boolean;
  isSecret: boolean;
  /** Whether the setting has a value at all (for secrets, the only thing said about them). */
  isSet: boolean;
}

/**
 * Settings that are not secrets and still stay out of the API: turning the Web API off through the Web API would
 * leave no way back through it, and the bootstrap account belongs with its password in the environment.
 */
const API_READ_ONLY: ReadonlySet<SettingName> = new Set([
  "Application:EnableWebApi",
  "Application:AdminUsername",
  ...(ENVIRONMENT_ONLY as ReadonlySet<SettingName>),
]);

function definitionOf(name: SettingName): SettingDefinition<unknown> {
  return settingDefinitions[name] as SettingDefinition<unknown>;
}

/** Whether PUT may change the setting. Secrets never: they belong in `wrangler secret put`, not in a D1 row. */
export function isWritable(name: SettingName): boolean {
  return !definitionOf(name).secret && !API_READ_ONLY.has(name);
}

/** The kind of text a setting takes, from its parser and default. */
export function settingType(name: SettingName): SettingType {
  const definition = definitionOf(name);
  if (DURATION_PARSERS.has(definition.parse)) return "duration";
  const value = definition.default;
  if (typeof value === "boolean") return "boolean";
  if (typeof value === "number") return "integer";
  if (Array.isArray(value)) return "list";
  if (value !== null && typeof value === "object") return "json";
  return "string";
}

const pad = (n: number, width = 2) => String(n).padStart(width, "0");

/** Milliseconds as SPEC writes durations: `hh:mm:ss`, `d.hh:mm:ss`, with `.fff` only when needed. */
export function formatDuration(ms: number): string {
  const days = Math.floor(ms / 86_400_000);
  const h = Math.floor(ms / 3_600_000) % 24;
  const m = Math.floor(ms / 60_000) % 60;
  const s = Math.floor(ms / 1000) % 60;
  const frac = ms % 1000;
  return `${days > 0 ? `${days}.` : ""}${pad(h)}:${pad(m)}:${pad(s)}${frac > 0 ? `.${pad(frac, 3)}` : ""}`;
}

/** A typed value as the text its setting parses back to the same value. */
export function settingText(name: SettingName, value: unknown): string | undefined {
  if (value === undefined || value === null) return undefined;
  if (settingType(name) === "duration" && typeof value === "number") return formatDuration(value);
  if (typeof value === "string") return value;
  if (typeof value === "object") return JSON.stringify(value);
  return String(value);
}

/** One setting's view from the effective configuration and its source. */
export function describeSetting(name: SettingName, config: Config, source: SettingSource): SettingView {
  const definition = definitionOf(name);
  const parts = name.split(":");
  const value = settingText(name, config[name]);
  return {
    name,
    category: parts[0] ?? name,
    ...(parts.length > 2 ? { group: parts.slice(1, -1).join(":") } : {}),
    ...(definition.secret || value === undefined ? {} : { value }),
    source,
    type: settingType(name),
    description: definition.description,
    readOnly: !isWritable(name),
    isSecret: definition.secret === true,
    isSet: value !== undefined,
  };
}

/** Every setting, in the order kernel/settings.ts declares them. */
export function describeSettings(config: Config, sources: Record<SettingName, SettingSource>): SettingView[] {
  return (Object.keys(settingDefinitions) as SettingName[]).map((name) => describeSetting(name, config, sources[name]));
}

/** A requested change: a new stored value, or null to remove the stored row (environment or default apply again). */
export interface SettingChange {
  name: string;
  value: string | null;
}

/** A change whose name is a known, writable setting and whose value parses. */
export interface ValidChange {
  name: SettingName;
  value: string | null;
}

/** The reason a change is refused, or undefined when it may be written. */
function refusal(change: SettingChange, seen: Set<string>): string | undefined {
  if (!isSettingName(change.name)) return `Unknown setting ${change.name}`;
  if (seen.has(change.name)) return `Setting ${change.name} appears more than once`;
  if (!isWritable(change.name)) {
    return `Setting ${change.name} is read-only through the API; set the environment variable or secret ${change.name.replaceAll(":", "__")}`;
  }
  if (change.value === null) return undefined;
  try {
    parseSetting(change.name, change.value);
    return undefined;
  } catch (e) {
    return e instanceof ConfigError ? e.message : String(e);
  }
}

/**
 * Checks a whole change set against the current configuration; 400 naming every refused setting, so nothing is
 * written unless all may be. A change set that would stop the service (the production checks of kernel/config.ts, such as
 * insecure webhook URLs outside development) is refused too: the API cannot turn those checks off.
 */
export function validateChanges(changes: readonly SettingChange[], current: Config): ValidChange[] {
  const seen = new Set<string>();
  const problems: string[] = [];
  for (const change of changes) {
    const problem = refusal(change, seen);
    if (problem) problems.push(problem);
    seen.add(change.name);
  }
  if (problems.length > 0) throw new ApiError(400, problems.join("; "));
  const valid = changes.filter((change): change is ValidChange => isSettingName(change.name));
  // A removed value returns to the environment's or the default, which the service already runs with.
  const next: Record<string, unknown> = { ...current };
  for (const change of valid) if (change.value !== null) next[change.name] = parseSetting(change.name, change.value);
  const unsafe = unsafeSetting(next as Config);
  if (unsafe && !unsafeSetting(current)) throw new ApiError(400, `${unsafe.message}; the change was refused`);
  return valid;
}

function upsert(db: Db, change: ValidChange & { value: string }, now: string) {
  const parts = change.name.split(":");
  const described = {
    category: parts[0] ?? null,
    group: parts.length > 2 ? parts.slice(1, -1).join(":") : null,
    type: settingType(change.name),
    description: definitionOf(change.name).description,
  };
  return db
    .insert(settings)
    .values({ name: change.name, value: change.value, readOnly: false, ...described, createdAt: now, updatedAt: now })
    .onConflictDoUpdate({ target: settings.name, set: { value: change.value, ...described, updatedAt: now } });
}

/**
 * Writes validated changes in one batch: upserts on the unique name, deletes for null values. Update answers follow
 * settings (cache lifetime, public releases, URLs), so the same batch bumps every product's release generation, and
 * this isolate forgets its settings and release memos (kernel/memo.ts): the next answer here follows the new settings.
 */
export async function writeSettings(db: Db, changes: readonly ValidChange[]): Promise<void> {
  const now = nowIso();
  const statements = changes.map((change) =>
    change.value === null
      ? db.delete(settings).where(eq(settings.name, change.name))
      : upsert(db, { name: change.name, value: change.value }, now),
  );
  if (statements.length === 0) return;
  const bump = db.update(products).set({ releaseGeneration: sql`${products.releaseGeneration} + 1` });
  await db.batch([bump, ...statements]);
  forgetAll("settings");
  forgetAll("releases");
}
