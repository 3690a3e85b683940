/**
 * The service's settings (CONTRACT section 1): one typed object built from built-in defaults, then environment
 * variables (`Section__Name`), then rows of the `settings` table written through `PUT /v1/settings`; later wins.
 * Every value is parsed and validated here, once; an invalid value is a configuration error naming the setting.
 */
import { type Config, type SettingDefinition, type SettingName, settingDefinitions } from "./settings";
import { clock } from "./clock";
import { forgettable, weakMemo } from "./memo";

export {
  DURATION_PARSERS,
  type Config,
  type PlatformEditions,
  type SettingDefinition,
  type SettingName,
  duration,
  list,
  settingDefinitions,
} from "./settings";

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

/** Settings read from the deployment's variables only, never from the settings table. */
export const ENVIRONMENT_ONLY: ReadonlySet<string> = new Set<SettingName>(["Application:Environment"]);

function isDevelopmentName(environment: string): boolean {
  return environment.toLowerCase() === "development";
}

/** Whether the service runs as Development (`Application:Environment`), where the production checks are off. */
export function isDevelopment(config: Config): boolean {
  return isDevelopmentName(config["Application:Environment"]);
}

/** Shortest JwtSecret and EncryptionKey accepted outside development, in UTF-8 bytes (256 bits of key material). */
export const MIN_SECRET_BYTES = 32;

/**
 * Secret values published with the project (`.dev.vars.example`): known to anyone, so never acceptable outside
 * development. test/production-checks.test.ts keeps this list equal to that file's values.
 */
export const PUBLISHED_SECRETS: ReadonlySet<string> = new Set([
  "dev-only-jwt-secret-change-me-0123456789abcdef",
  "dev-only-encryption-key-change-me",
  "Admin-12345678",
  "api_DevAdminKey000000000000000000000",
  "dev-only-gateway-secret-change-me-0123456789",
]);

/** Fewest bits of estimated entropy (secretBits) a generated secret carries outside development. */
export const MIN_SECRET_BITS = 128;

/** The command that makes a value each generated secret accepts (the AdminApiKey in the service's own `api_` form). */
const GENERATE_WITH = "generate one with `openssl rand -base64 32`";
const GENERATED_SECRETS = [
  ["Application:JwtSecret", GENERATE_WITH],
  ["Application:EncryptionKey", GENERATE_WITH],
  [
    "Application:AdminApiKey",
    "generate one with `echo api_$(openssl rand -hex 24)`, or leave it unset and the service generates one and logs it once",
  ],
  ["IpFiltering:GatewaySecret", GENERATE_WITH],
] as const;

/**
 * How many bytes a base64 value decodes to (standard or url-safe alphabet, `=` padding optional), or undefined when
 * the value is not base64.
 */
function base64Bytes(value: string): number | undefined {
  if (!/^(?:[A-Za-z0-9+/]+|[A-Za-z0-9_-]+)={0,2}$/.test(value)) return undefined;
  const digits = value.replace(/=+$/, "").length;
  if (digits % 4 === 1 || (digits < value.length && value.length % 4 !== 0)) return undefined;
  return Math.floor((digits * 6) / 8);
}

/** Characters of a value secretBits reads: a longer value is credited with its first ones only (never more). */
const ESTIMATED_CHARACTERS = 512;

/**
 * The largest alphabet (at most `largest`) that `length` random draws could come from and still give as few as
 * `distinct` different characters: one whose expected count, less 3 standard deviations, is not above it. So random
 * text is almost never taken for a smaller alphabet, while text that reuses few characters (words, patterns) is.
 * The expected count a * (1 - (1 - 1/a)^length), less 3 deviations, grows with a: found by bisection.
 */
function drawnFrom(length: number, distinct: number, largest: number): number {
  const plausibleLow = (a: number) => {
    const empty = (1 - 1 / a) ** length;
    const variance = a * (a - 1) * (1 - 2 / a) ** length + a * empty - a * a * empty * empty;
    return a * (1 - empty) - 3 * Math.sqrt(Math.max(0, variance));
  };
  if (distinct <= 1) return distinct;
  if (plausibleLow(largest) <= distinct) return largest;
  let low = distinct;
  let high = largest;
  for (let step = 0; step < 30; step++) {
    const middle = (low + high) / 2;
    if (plausibleLow(middle) <= distinct) low = middle;
    else high = middle;
  }
  return low;
}

/**
 * A conservative estimate of the bits of entropy in a secret's text, low for anything a person would type or guess.
 * Each character is worth log2 of the smallest of: the character classes the value uses (26 lowercase, 26
 * uppercase, 10 digits, 33 ASCII symbols, 100 for any other character), its encoding's alphabet (16 for a hex value
 * and 64 for base64, so an encoded value is credited with its decoded bytes, 8 bits each, never its text), and the
 * largest alphabet its distinct characters could plausibly be drawn from (drawnFrom: words reuse few letters).
 * Nothing is credited for what can be predicted from what came before: a character that continues a run of equal
 * steps (`aaa`, `abc`, `3579`) costs nothing, and a stretch of 3 or more that repeats earlier text
 * (`passwordpassword`) costs only where and how long it is, as a compressor would write it. Free text made of
 * dictionary words is not recognised as such: only its reused letters lower it.
 */
function secretBits(value: string): number {
  const base64 = base64Bytes(value) !== undefined;
  const chars = Array.from(base64 ? value.replace(/=+$/, "") : value).slice(0, ESTIMATED_CHARACTERS);
  let alphabet = 0;
  if (chars.some((c) => /[a-z]/.test(c))) alphabet += 26;
  if (chars.some((c) => /[A-Z]/.test(c))) alphabet += 26;
  if (chars.some((c) => /[0-9]/.test(c))) alphabet += 10;
  if (chars.some((c) => /[\x20-\x2f\x3a-\x40\x5b-\x60\x7b-\x7e]/.test(c))) alphabet += 33;
  if (chars.some((c) => !/[\x20-\x7e]/.test(c))) alphabet += 100;
  if (/^[0-9a-f]*$/i.test(value)) alphabet = Math.min(alphabet, 16);
  else if (base64) alphabet = Math.min(alphabet, 64);
  const perCharacter = Math.log2(Math.max(1, drawnFrom(chars.length, new Set(chars).size, alphabet)));
  const code = (i: number) => chars[i]!.codePointAt(0)!;
  let bits = 0;
  for (let i = 0; i < chars.length; ) {
    // The longest stretch from i that also starts earlier (it may run into itself, as `aaaa` does).
    let repeat = 0;
    for (let j = 0; j < i; j++) {
      let n = 0;
      while (i + n < chars.length && chars[j + n] === chars[i + n]) n++;
      repeat = Math.max(repeat, n);
    }
    if (repeat >= 3) {
      bits += Math.min(repeat * perCharacter, Math.log2(i) + Math.log2(repeat) + 1);
      i += repeat;
      continue;
    }
    const step = i >= 2 ? code(i) - code(i - 1) : undefined;
    const continuesRun = step !== undefined && Math.abs(step) <= 2 && step === code(i - 1) - code(i - 2);
    if (!continuesRun) bits += perCharacter;
    i++;
  }
  return bits;
}

/**
 * The production checks: outside development, the first setting that makes the service unsafe to run (a JwtSecret
 * shorter than MIN_SECRET_BYTES, an EncryptionKey that is not the base64 of that many bytes, a secret published in
 * `.dev.vars.example`, a generated secret under MIN_SECRET_BITS by secretBits, no PublicUrl, insecure
 * webhook URLs), as a ConfigError naming it; undefined when the configuration is safe or the service runs as
 * Development.
 */
export function unsafeSetting(config: Config): ConfigError | undefined {
  // Asked on every request: the answer of a settings object (kept per isolate by loadConfig) is worked out once.
  if (!unsafeVerdicts.has(config)) unsafeVerdicts.set(config, findUnsafeSetting(config));
  return unsafeVerdicts.get(config);
}

const unsafeVerdicts = weakMemo<Config, ConfigError | undefined>("unsafe-verdicts", "settings object");

function findUnsafeSetting(config: Config): ConfigError | undefined {
  if (isDevelopment(config)) return undefined;
  const outside = `outside development (Application:Environment is ${config["Application:Environment"]})`;
  const jwtBytes = new TextEncoder().encode(config["Application:JwtSecret"] ?? "").length;
  if (jwtBytes < MIN_SECRET_BYTES)
    return new ConfigError(
      "Application:JwtSecret",
      `it must be set to at least ${MIN_SECRET_BYTES} bytes ${outside}; it has ${jwtBytes}; ${GENERATE_WITH}`,
    );
  // Keys stored secrets and license integrity are derived from (HKDF, never stretched): the value must be random.
  if ((base64Bytes(config["Application:EncryptionKey"] ?? "") ?? 0) < MIN_SECRET_BYTES)
    return new ConfigError(
      "Application:EncryptionKey",
      `it must be set to the base64 of at least ${MIN_SECRET_BYTES} random bytes ${outside}; ${GENERATE_WITH}`,
    );
  for (const name of Object.keys(settingDefinitions) as SettingName[]) {
    const value = config[name];
    if (settingDefinitions[name].secret && typeof value === "string" && PUBLISHED_SECRETS.has(value)) {
      return new ConfigError(name, `its value is published in .dev.vars.example and must not be used ${outside}`);
    }
  }
  for (const [name, generate] of GENERATED_SECRETS) {
    const value = config[name];
    const text = name === "Application:AdminApiKey" ? value?.replace(/^api_/, "") : value;
    if (text !== undefined && secretBits(text) < MIN_SECRET_BITS)
      return new ConfigError(
        name,
        `it is too easy to guess (repeats, sequences or too few random characters): ${outside} it must carry at least ${MIN_SECRET_BITS} bits of randomness; ${generate}`,
      );
  }
  // The origin of feeds' and update checks' download URLs comes from here, never from a request's Host.
  if (!config["Application:PublicUrl"])
    return new ConfigError("Application:PublicUrl", `it must be set to the service's public https origin ${outside}`);
  if (config["Webhooks:AllowInsecureUrls"])
    return new ConfigError("Webhooks:AllowInsecureUrls", `it must be false ${outside}`);
  return undefined;
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
export function buildConfig(
  vars: Record<string, unknown>,
  rows: readonly SettingRow[],
): { config: Config; sources: Record<SettingName, SettingSource> } {
  const config: Record<string, unknown> = {};
  const sources = {} as Record<SettingName, SettingSource>;
  // The environment decides the production checks, so a settings row (written through the API, or by hand) never
  // changes it: it comes from the deployment's variables only.
  const fromDb = new Map(
    rows.filter((r) => r.value !== null && !ENVIRONMENT_ONLY.has(r.name)).map((r) => [r.name, r.value as string]),
  );
  const environment = vars[envName("Application:Environment")];
  const development = isDevelopmentName(
    typeof environment === "string"
      ? parseSetting("Application:Environment", environment)
      : settingDefinitions["Application:Environment"].default,
  );
  for (const name of Object.keys(settingDefinitions) as SettingName[]) {
    const envValue = vars[envName(name)];
    const dbValue = fromDb.get(name);
    const definition = settingDefinitions[name] as SettingDefinition<unknown>;
    if (dbValue !== undefined) {
      config[name] = parseSetting(name, dbValue);
      sources[name] = "database";
    } else if (typeof envValue === "string") {
      config[name] = parseSetting(name, envValue);
      sources[name] = "environment";
    } else {
      config[name] =
        development && "developmentDefault" in definition ? definition.developmentDefault : definition.default;
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
forgettable(
  "settings",
  { key: "none (the settings table)", lifetime: "Application:SettingsCacheSeconds", forgetOn: ["settings"] },
  () => invalidateConfig(),
);

/** Reads every row of the settings table (db/settings-store.ts, in drizzle: the kernel knows no table). */
export type SettingsReader = (db: D1Database) => Promise<readonly SettingRow[]>;

/**
 * The configuration this isolate keeps, while it is fresh (loadConfigFrom's own test); undefined when it must be read.
 * For the front door (app/app.ts), which answers without a promise when it can.
 */
export function keptConfig(): Cached | undefined {
  const now = clock.now().getTime();
  if (
    cached &&
    now >= cached.loadedAt &&
    now - cached.loadedAt < cached.config["Application:SettingsCacheSeconds"] * 1000
  )
    return cached;
  return undefined;
}

/**
 * The effective configuration for a request, from the settings table as `read` reads it (db/settings-store.ts
 * loadConfig is what callers use). Cached per isolate and re-read after `Application:SettingsCacheSeconds`;
 * `invalidateConfig()` makes a write visible at once in the writing isolate.
 */
export async function loadConfigFrom(
  vars: Record<string, unknown>,
  db: D1Database,
  read: SettingsReader,
): Promise<Cached> {
  const kept = keptConfig();
  if (kept) return kept;
  const now = clock.now().getTime();
  if (loading) return loading;
  const load = readConfig(vars, db, read, now);
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

async function readConfig(
  vars: Record<string, unknown>,
  db: D1Database,
  read: SettingsReader,
  now: number,
): Promise<Cached> {
  return { ...buildConfig(vars, await read(db)), loadedAt: now };
}

/** Drops the cached configuration (after `PUT /v1/settings`). */
export function invalidateConfig(): void {
  cached = undefined;
  loading = undefined;
}
