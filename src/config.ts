/**
 * The service's settings (CONTRACT section 1): one typed object built from built-in defaults, then environment
 * variables (`Section__Name`), then rows of the `settings` table written through `PUT /v1/settings`; later wins.
 * Every value is parsed and validated here, once; an invalid value is a configuration error naming the setting.
 */
import { z } from "zod";
import { clock } from "./clock";

/** Parses one raw string into a setting's value; throws with a human message when the text is not valid. */
type Parser<T> = (raw: string) => T;

export interface SettingDefinition<T> {
  parse: Parser<T>;
  default: T;
  /** Secrets are never returned by `GET /v1/settings`. */
  secret?: boolean;
  description: string;
}

const bool: Parser<boolean> = (raw) => {
  const v = raw.trim().toLowerCase();
  if (v === "true" || v === "1" || v === "yes") return true;
  if (v === "false" || v === "0" || v === "no") return false;
  throw new Error(`expected true or false, got "${raw}"`);
};

const int =
  (min: number, max = Number.MAX_SAFE_INTEGER): Parser<number> =>
  (raw) => {
    const v = raw.trim();
    if (!/^-?\d+$/.test(v)) throw new Error(`expected an integer, got "${raw}"`);
    const n = Number(v);
    if (n < min || n > max) throw new Error(`expected an integer from ${min} to ${max}, got ${n}`);
    return n;
  };

/** `hh:mm:ss`, `d.hh:mm:ss` (optionally with `.fff` seconds), as SPEC writes durations; the value is milliseconds. */
export const duration: Parser<number> = (raw) => {
  const m = /^(?:(\d+)\.)?(\d{1,2}):(\d{2}):(\d{2})(?:\.(\d{1,3}))?$/.exec(raw.trim());
  if (!m) throw new Error(`expected a duration hh:mm:ss or d.hh:mm:ss, got "${raw}"`);
  const [, d, h, min, s, frac] = m;
  if (Number(min) > 59 || Number(s) > 59 || Number(h) > 23) throw new Error(`duration out of range: "${raw}"`);
  return ((Number(d ?? 0) * 24 + Number(h)) * 60 + Number(min)) * 60_000 + Number(s) * 1000 + Number((frac ?? "0").padEnd(3, "0"));
};

const text =
  (pattern?: RegExp): Parser<string> =>
  (raw) => {
    if (pattern && !pattern.test(raw)) throw new Error(`"${raw}" does not match ${pattern}`);
    return raw;
  };

const optionalText: Parser<string | undefined> = (raw) => (raw.trim() === "" ? undefined : raw);

/** A bare email address (`name@domain`), or nothing. */
const optionalEmail: Parser<string | undefined> = (raw) => {
  const v = raw.trim();
  if (v === "") return undefined;
  if (!/^[^\s@<>",;]+@[^\s@<>",;]+$/.test(v)) throw new Error(`expected an email address such as licensing@example.com, got "${raw}"`);
  return v;
};

// Schemas are built once per isolate, not each time the settings are read again (every SettingsCacheSeconds).
const StringList = z.array(z.string());
const PlatformEditionsSchema = z
  .object({
    windows: z.array(z.string()).default([]),
    mac: z.array(z.string()).default([]),
    linux: z.array(z.string()).default([]),
  })
  .strict();

/** A JSON array of strings, or a comma-separated string. */
export const list: Parser<string[]> = (raw) => {
  const v = raw.trim();
  if (v.startsWith("[")) {
    const parsed = StringList.safeParse(safeJson(v));
    if (!parsed.success) throw new Error(`expected a JSON array of strings, got ${raw}`);
    return parsed.data.map((s) => s.trim()).filter(Boolean);
  }
  return v
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean);
};

function safeJson(raw: string): unknown {
  try {
    return JSON.parse(raw);
  } catch {
    return undefined;
  }
}

/** Platform family -> license editions allowed on it; a family that is absent or empty is open to every edition. */
export type PlatformEditions = Record<"windows" | "mac" | "linux", string[]>;
const platformEditions: Parser<PlatformEditions> = (raw) => {
  const parsed = PlatformEditionsSchema.safeParse(safeJson(raw));
  if (!parsed.success) throw new Error(`expected a JSON object {"windows":[…],"mac":[…],"linux":[…]}, got ${raw}`);
  return parsed.data;
};

const def = <T>(parse: Parser<T>, dflt: T, description: string, secret = false): SettingDefinition<T> => ({
  parse,
  default: dflt,
  description,
  secret,
});

const MiB = 1024 * 1024;

/** Every setting the service reads, with SPEC.md's name, its default and what it does. */
export const settingDefinitions = {
  "Application:EnableWebApi": def(bool, true, "Serve the REST API under /v1 (404 when false)."),
  "Application:EnableSwagger": def(bool, true, "Serve the OpenAPI document at /swagger/v1/swagger.json and the UI at /swagger."),
  "Application:EnableGrpcWeb": def(bool, true, "Serve the gRPC services with gRPC-Web and Connect on the main endpoint."),
  "Application:EnableHealthCheck": def(bool, true, "Serve the health check."),
  "Application:HealthCheckEndPoint": def(text(/^\/[^\s?#]*$/), "/health", "Path of the health check."),
  "Application:SerializeJSonEnumAsString": def(bool, false, "Write enumerations as names instead of numbers."),
  "Application:IgnoreJSonDefaultValues": def(bool, true, "Omit properties whose value is null from responses."),
  "Application:ApiKeyHeaderName": def(text(/^[A-Za-z0-9-]+$/), "x-api-key", "Request header that carries the API key."),
  "Application:ApiKeyCacheDuration": def(duration, 180_000, "How long a validated API key is cached per isolate."),
  "Application:TokenExpiration": def(duration, 1_800_000, "Lifetime of bearer tokens issued by login."),
  "Application:ConsoleSessionLifetime": def(duration, 28_800_000, "Lifetime of the API key a console sign-in holds in its cookie (the admin console at /console)."),
  "Application:JwtSecret": def(optionalText, undefined, "HS256 key of bearer tokens (secret; required for login).", true),
  "Application:EncryptionKey": def(optionalText, undefined, "Key for secrets at rest and license integrity (secret).", true),
  "Application:AdminUsername": def(optionalText, undefined, "Administrator account created at startup."),
  "Application:AdminPassword": def(optionalText, undefined, "Password of that administrator (secret).", true),
  "Application:AdminApiKey": def(optionalText, undefined, "Value of the administrator's API key (secret; generated and logged once when unset).", true),
  "Application:MaxPageSize": def(int(1, 100_000), 1000, "Largest `take` of a list; larger values are clamped."),
  "Application:DefaultPageSize": def(int(1, 100_000), 100, "`take` of a list when omitted."),
  "Application:GeoLocationService": def(optionalText, undefined, "URL template with {ip} used to fill missing geolocations."),
  "Application:SettingsCacheSeconds": def(int(0, 3600), 5, "How long other isolates may use settings before re-reading the table."),
  "Application:LogRetentionDays": def(int(1, 36_500), 30, "Days the service log keeps an entry; the cron trigger prunes older ones."),
  "Email:From": def(optionalEmail, undefined, "Sender address of mail sent through the EMAIL send_email binding (required when it is bound)."),
  "IpFiltering:BruteForceProtection:Enabled": def(bool, true, "Count requests per client IP and block IPs over the limit."),
  "IpFiltering:BruteForceProtection:MaxRequestsPerTimeFrame": def(int(1), 60, "Requests allowed per time frame."),
  "IpFiltering:BruteForceProtection:TimeFrameDuration": def(duration, 60_000, "Length of the time frame."),
  "IpFiltering:BruteForceProtection:RequestsBlockDuration": def(duration, 900_000, "Block time for an IP over the limit."),
  "IpFiltering:BruteForceProtection:ExcludedPaths": def(
    list,
    [
      "/v1/license/request",
      "/v1/license/release",
      "/v1/license/heartbeat",
      "/licensing.v1.LicenseServer/RequestFloatingLicense",
      "/licensing.v1.LicenseServer/ReleaseFloatingLicense",
      "/licensing.v1.LicenseServer/Heartbeat",
      "/v1/auth/login",
      "/licensing.v1.Authentication/Authenticate",
    ],
    "Path prefixes never counted or blocked.",
  ),
  "IpFiltering:Whitelist": def(list, ["127.0.0.1", "::1"], "IPs never rate limited."),
  "IpFiltering:Blacklist": def(list, [], "IPs that always get 403."),
  "IpFiltering:AuthenticationProtection:MaxFailedAttempts": def(int(1), 5, "Failed logins before the IP is blocked from logging in."),
  "IpFiltering:AuthenticationProtection:LoginBlockDuration": def(duration, 300_000, "How long login stays blocked."),
  "Extensions:TokenLifetimeMinutes": def(int(1, 10_080), 10, "Lifetime of download tokens, in minutes."),
  "Extensions:DownloadRoot": def(optionalText, undefined, "Key prefix of uploaded artifacts in the ARTIFACTS R2 bucket."),
  "Extensions:MaxResourceArtifactBytes": def(int(0), 64 * MiB, "Largest artifact stored in the database (sourceKind=resource)."),
  "Licensing:HeartbeatInterval": def(duration, 300_000, "Interval floating clients heartbeat at; a seat lives 2x this + 30 s."),
  "Licensing:LicenseKeyLifetime": def(duration, 30 * 86_400_000, "How long a license key (the signed JWS in licensing answers) stays valid offline; never past the license's expiry."),
  "Licensing:UserKeyFormat": def(text(/^[X-]*X[X-]*$/), "XXXXX-XXXXX-XXXXX-XXXXX-XXXXX", "Shape of generated user keys (X = a Crockford base32 character)."),
  "Webhooks:Enabled": def(bool, true, "Deliver webhooks."),
  "Webhooks:AllowInsecureUrls": def(bool, false, "Allow http:// and private-address webhook URLs (local development)."),
  "Webhooks:EventRetentionDays": def(int(1, 36_500), 30, "Days webhook delivery history (delivery events) is kept; the cron trigger prunes older ones."),
  "Updates:FeedCacheSeconds": def(int(0, 86_400), 60, "max-age of cached anonymous feed and update-check answers."),
  "Updates:PlatformEditions": def(
    platformEditions,
    { windows: [], mac: ["Ultimate"], linux: ["Ultimate"] },
    'Editions allowed per platform family, JSON {"windows":[],"mac":["Ultimate"],"linux":["Ultimate"]}; empty = all.',
  ),
  "Updates:EnforcePlatformEditions": def(bool, true, "Apply Updates:PlatformEditions."),
  "Updates:AllowPublicApplicationReleases": def(bool, false, "Allow requiresMaintenance=false on application products."),
  "Updates:EmptyFeedAsYaml": def(bool, false, "Answer an empty feed with 200 and stagingPercentage 0 instead of 204."),
} as const satisfies Record<string, SettingDefinition<unknown>>;

export type SettingName = keyof typeof settingDefinitions;
type DefinitionValue<D> = D extends SettingDefinition<infer T> ? T : never;
/** The effective configuration, keyed by SPEC's setting names. */
export type Config = { readonly [K in SettingName]: DefinitionValue<(typeof settingDefinitions)[K]> };

/** Where a setting's effective value came from. */
export type SettingSource = "default" | "environment" | "database";

export class ConfigError extends Error {
  constructor(
    readonly setting: string,
    reason: string,
  ) {
    super(`Invalid value for setting ${setting}: ${reason}`);
  }
}

export function isSettingName(name: string): name is SettingName {
  return Object.hasOwn(settingDefinitions, name);
}

/** The environment variable that carries a setting (`:` written `__`). */
export function envName(name: SettingName): string {
  return name.replaceAll(":", "__");
}

/** Parses one value for a setting or throws ConfigError naming it. */
export function parseSetting<K extends SettingName>(name: K, raw: string): Config[K] {
  const definition = settingDefinitions[name] as SettingDefinition<Config[K]>;
  try {
    return definition.parse(raw);
  } catch (e) {
    throw new ConfigError(name, e instanceof Error ? e.message : String(e));
  }
}

export interface SettingRow {
  name: string;
  value: string | null;
}

/** Builds the configuration from the environment and the settings rows (later wins). Pure. */
export function buildConfig(vars: Record<string, unknown>, rows: readonly SettingRow[]): { config: Config; sources: Record<SettingName, SettingSource> } {
  const config: Record<string, unknown> = {};
  const sources = {} as Record<SettingName, SettingSource>;
  const fromDb = new Map(rows.filter((r) => r.value !== null).map((r) => [r.name, r.value as string]));
  for (const name of Object.keys(settingDefinitions) as SettingName[]) {
    const envValue = vars[envName(name)];
    const dbValue = fromDb.get(name);
    if (dbValue !== undefined) {
      config[name] = parseSetting(name, dbValue);
      sources[name] = "database";
    } else if (typeof envValue === "string") {
      config[name] = parseSetting(name, envValue);
      sources[name] = "environment";
    } else {
      config[name] = settingDefinitions[name].default;
      sources[name] = "default";
    }
  }
  return { config: config as Config, sources };
}

interface Cached {
  config: Config;
  sources: Record<SettingName, SettingSource>;
  loadedAt: number;
}
let cached: Cached | undefined;
/** The read in flight, shared by the requests that find the cache expired at the same time (one query, not one each). */
let loading: Promise<Cached> | undefined;

/**
 * The effective configuration for a request. Cached per isolate and re-read from the settings table after
 * `Application:SettingsCacheSeconds`; `invalidateConfig()` makes a write visible at once in the writing isolate.
 */
export async function loadConfig(vars: Record<string, unknown>, db: D1Database): Promise<Cached> {
  const now = clock.now().getTime();
  if (cached && now >= cached.loadedAt && now - cached.loadedAt < cached.config["Application:SettingsCacheSeconds"] * 1000) return cached;
  if (loading) return loading;
  const load = readConfig(vars, db, now);
  loading = load;
  try {
    const fresh = await load;
    // A write (invalidateConfig) while the read was in flight: the read may predate it, so it is not kept.
    if (loading === load) cached = fresh;
    return fresh;
  } finally {
    if (loading === load) loading = undefined;
  }
}

async function readConfig(vars: Record<string, unknown>, db: D1Database, now: number): Promise<Cached> {
  const { results } = await db.prepare("SELECT name, value FROM settings").all<SettingRow>();
  return { ...buildConfig(vars, results), loadedAt: now };
}

/** Drops the cached configuration (after `PUT /v1/settings`). */
export function invalidateConfig(): void {
  cached = undefined;
  loading = undefined;
}
