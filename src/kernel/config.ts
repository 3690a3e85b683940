/**
 * The service's settings (CONTRACT section 1): one typed object built from built-in defaults, then environment
 * variables (`Section__Name`), then rows of the `settings` table written through `PUT /v1/settings`; later wins.
 * Every value is parsed and validated here, once; an invalid value is a configuration error naming the setting.
 */
import { z } from "zod";
import { clock } from "./clock";
import { forgettable, weakMemo } from "./memo";

/** Parses one raw string into a setting's value; throws with a human message when the text is not valid. */
type Parser<T> = (raw: string) => T;

export interface SettingDefinition<T> {
  parse: Parser<T>;
  default: T;
  /** Secrets are never returned by `GET /v1/settings`. */
  secret?: boolean;
  description: string;
  /** The default while `Application:Environment` is Development, when it differs from `default`. */
  developmentDefault?: T;
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
  return (
    ((Number(d ?? 0) * 24 + Number(h)) * 60 + Number(min)) * 60_000 +
    Number(s) * 1000 +
    Number((frac ?? "0").padEnd(3, "0"))
  );
};

/** A duration of at most `maxMs` (a ceiling that keeps a security promise, such as how late a revocation applies). */
function durationUpTo(maxMs: number, why: string): Parser<number> {
  const parse: Parser<number> = (raw) => {
    const ms = duration(raw);
    if (ms > maxMs) throw new Error(`at most ${maxMs / 60_000} minutes (${why}), got "${raw}"`);
    return ms;
  };
  DURATION_PARSERS.add(parse);
  return parse;
}

/** A duration of at least `minMs` (a zero would end what it times at once). */
function durationAtLeast(minMs: number): Parser<number> {
  const parse: Parser<number> = (raw) => {
    const ms = duration(raw);
    if (ms < minMs) throw new Error(`at least ${minMs / 1000} seconds, got "${raw}"`);
    return ms;
  };
  DURATION_PARSERS.add(parse);
  return parse;
}

/** The parsers whose settings are durations (written `hh:mm:ss` in the settings list). */
export const DURATION_PARSERS = new Set<(raw: string) => unknown>([duration]);

const text =
  (pattern?: RegExp): Parser<string> =>
  (raw) => {
    if (pattern && !pattern.test(raw)) throw new Error(`"${raw}" does not match ${pattern}`);
    return raw;
  };

const optionalText: Parser<string | undefined> = (raw) => (raw.trim() === "" ? undefined : raw);

/** An absolute https URL without credentials (a logo an https page may show), or nothing. */
const optionalHttpsUrl: Parser<string | undefined> = (raw) => {
  const v = raw.trim();
  if (v === "") return undefined;
  const url = URL.canParse(v) ? new URL(v) : undefined;
  if (url?.protocol !== "https:" || url.username !== "" || url.password !== "")
    throw new Error(`expected an https URL such as https://example.com/logo.svg, got "${raw}"`);
  return url.href;
};

/** A bare email address (`name@domain`), or nothing. */
const optionalEmail: Parser<string | undefined> = (raw) => {
  const v = raw.trim();
  if (v === "") return undefined;
  if (!/^[^\s@<>",;]+@[^\s@<>",;]+$/.test(v))
    throw new Error(`expected an email address such as licensing@example.com, got "${raw}"`);
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

/**
 * An https origin (`https://licensing.example.com`, a port allowed; no path, query, fragment or credentials), or
 * nothing. The value is the origin as URL writes it (lowercase host, no default port, no trailing slash).
 */
const optionalHttpsOrigin: Parser<string | undefined> = (raw) => {
  const v = raw.trim();
  if (v === "") return undefined;
  const url = URL.canParse(v) ? new URL(v) : undefined;
  if (
    url?.protocol !== "https:" ||
    url.username !== "" ||
    url.password !== "" ||
    url.pathname !== "/" ||
    /[?#]/.test(v) ||
    !/^https:\/\/[^/]+\/?$/i.test(v)
  )
    throw new Error(`expected an https origin such as https://licensing.example.com (no path or query), got "${raw}"`);
  return url.origin;
};

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

/** A setting whose default differs in development (`developmentDefault`) from every other environment (`dflt`). */
const devDef = <T>(parse: Parser<T>, dflt: T, developmentDefault: T, description: string): SettingDefinition<T> => ({
  ...def(parse, dflt, description),
  developmentDefault,
});

const MiB = 1024 * 1024;

/** Every setting the service reads, with SPEC.md's name, its default and what it does. */
export const settingDefinitions = {
  "Application:Environment": def(
    text(/^[A-Za-z][A-Za-z0-9-]{0,31}$/),
    "Production",
    "Development, or any other name (Production, Staging …). Outside Development weak or published secrets and insecure webhook URLs stop the service; read from the environment only.",
  ),
  "Application:EnableWebApi": def(bool, true, "Serve the REST API under /v1 (404 when false)."),
  "Application:EnableSwagger": devDef(
    bool,
    false,
    true,
    "Serve the OpenAPI document at /swagger/v1/swagger.json and the UI at /swagger (default: on in Development only).",
  ),
  "Application:EnableGrpcWeb": def(
    bool,
    true,
    "Serve the gRPC services with gRPC-Web and Connect on the main endpoint.",
  ),
  "Application:EnableHealthCheck": def(bool, true, "Serve the health check."),
  "Application:HealthCheckEndPoint": def(text(/^\/[^\s?#]*$/), "/health", "Path of the health check."),
  "Application:SerializeJSonEnumAsString": def(bool, false, "Write enumerations as names instead of numbers."),
  "Application:IgnoreJSonDefaultValues": def(bool, true, "Omit properties whose value is null from responses."),
  "Application:CorsOrigins": def(
    list,
    [],
    "Origins (https://app.example.com; * for any) that browsers and Electron renderers may call the licensing operations, update routes, signing keys and gRPC-Web from; none by default, never the Management API.",
  ),
  "Application:PublicUrl": def(
    optionalHttpsOrigin,
    undefined,
    "The service's public https origin (https://licensing.example.com): every absolute URL of feeds, update checks and downloads starts with it. Required outside Development; in Development, when unset, the request's own origin is used.",
  ),
  "Application:ApiKeyHeaderName": def(text(/^[A-Za-z0-9-]+$/), "x-api-key", "Request header that carries the API key."),
  "Application:ApiKeyCacheDuration": def(
    durationUpTo(600_000, "a revoked or deleted key must stop working within it"),
    180_000,
    "How long a validated API key is cached per isolate (at most 00:10:00).",
  ),
  "Application:TokenExpiration": def(duration, 1_800_000, "Lifetime of bearer tokens issued by login."),
  "Application:ConsoleSessionLifetime": def(
    duration,
    28_800_000,
    "Lifetime of the API key a console sign-in holds in its cookie (the admin console at /console).",
  ),
  "Application:ConsoleIdleTimeout": def(
    durationAtLeast(1000),
    1_800_000,
    "A console session ends after this long without a request (besides its lifetime); it may end up to a minute sooner, as the last use is recorded at most once a minute.",
  ),
  "Application:JwtSecret": def(
    optionalText,
    undefined,
    "HS256 key of bearer tokens (secret; required for login).",
    true,
  ),
  "Application:EncryptionKey": def(
    optionalText,
    undefined,
    "Key for secrets at rest and license integrity (secret).",
    true,
  ),
  "Application:AdminUsername": def(optionalText, undefined, "Administrator account created at startup."),
  "Application:AdminPassword": def(optionalText, undefined, "Password of that administrator (secret).", true),
  "Application:AdminApiKey": def(
    optionalText,
    undefined,
    "Value of the administrator's API key (secret; generated and logged once when unset).",
    true,
  ),
  "Application:MaxPageSize": def(int(1, 100_000), 1000, "Largest `take` of a list; larger values are clamped."),
  "Application:DefaultPageSize": def(int(1, 100_000), 100, "`take` of a list when omitted."),
  "Application:GeoLocationService": def(
    optionalText,
    undefined,
    "URL template with {ip} used to fill missing geolocations.",
  ),
  "Application:ServerTiming": def(
    bool,
    false,
    "Report each request's D1 work (statements, round trips, rows written and read, time) in a Server-Timing header.",
  ),
  "Application:SettingsCacheSeconds": def(
    int(0, 3600),
    5,
    "How long other isolates may use settings before re-reading the table.",
  ),
  "Application:LogRetentionDays": def(
    int(1, 36_500),
    30,
    "Days the service log keeps an entry; the cron trigger prunes older ones.",
  ),
  "Email:OutboxRetentionDays": def(
    int(1, 36_500),
    30,
    "Days a message of the email outbox is kept; the cron trigger prunes older ones.",
  ),
  "Email:From": def(
    optionalEmail,
    undefined,
    "Sender address of mail sent through the EMAIL send_email binding (required when it is bound).",
  ),
  "IpFiltering:BruteForceProtection:Enabled": def(
    bool,
    true,
    "Count requests per client IP and block IPs over the limit.",
  ),
  "IpFiltering:BruteForceProtection:MaxRequestsPerTimeFrame": def(int(1), 60, "Requests allowed per time frame."),
  "IpFiltering:BruteForceProtection:TimeFrameDuration": def(duration, 60_000, "Length of the time frame."),
  "IpFiltering:BruteForceProtection:RequestsBlockDuration": def(
    duration,
    900_000,
    "Block time for an IP over the limit.",
  ),
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
  "IpFiltering:GatewaySecret": def(
    optionalText,
    undefined,
    "Shared secret of the native gRPC gateway (tools/grpc-gateway): the client address it signs with it is the only one believed besides CF-Connecting-IP (secret).",
    true,
  ),
  "IpFiltering:Blacklist": def(list, [], "IPs that always get 403."),
  "IpFiltering:AuthenticationProtection:MaxFailedAttempts": def(
    int(1),
    5,
    "Failed logins before the IP is blocked from logging in.",
  ),
  "IpFiltering:AuthenticationProtection:LoginBlockDuration": def(duration, 300_000, "How long login stays blocked."),
  "IpFiltering:AuthenticationProtection:MaxLoginRequestsPerTimeFrame": def(
    int(1),
    120,
    "Login requests (REST and gRPC Authenticate) allowed per IP and TimeFrameDuration, counted apart from the request limit; over it: 429 until the frame ends.",
  ),
  "Extensions:TokenLifetimeMinutes": def(int(1, 10_080), 10, "Lifetime of download tokens, in minutes."),
  "Extensions:DownloadRoot": def(
    optionalText,
    undefined,
    "Key prefix of uploaded artifacts in the ARTIFACTS R2 bucket.",
  ),
  "Extensions:MaxResourceArtifactBytes": def(
    int(0),
    64 * MiB,
    "Largest artifact stored in the database (sourceKind=resource).",
  ),
  "Licensing:HeartbeatInterval": def(
    duration,
    300_000,
    "Interval floating clients heartbeat at; a seat lives 2x this + 30 s.",
  ),
  "Licensing:LicenseKeyLifetime": def(
    duration,
    7 * 86_400_000,
    "How long a license key (the signed JWS in licensing answers) stays valid offline from its issue; never past the license's expiry, the activation or the seat. A deactivation or revocation is not seen offline until the keys issued before it expire, so keep it short: an application validates online at least this often.",
  ),
  "Licensing:MaxRequestsPerLicense": def(
    int(1),
    600,
    "Floating requests, heartbeats, releases and reports one license may make per Licensing:LicenseRequestTimeFrame (REST and gRPC together); more answer 429. Reports naming no license count the same way per credential (API key, user).",
  ),
  "Licensing:LicenseRequestTimeFrame": def(duration, 60_000, "Time frame of Licensing:MaxRequestsPerLicense."),
  "Licensing:TraceRetentionDays": def(
    int(1, 36_500),
    365,
    "Days a license trace is kept; the cron trigger prunes older ones.",
  ),
  "Licensing:ReportRetentionDays": def(
    int(1, 36_500),
    90,
    "Days a report (and its body in R2) is kept; the cron trigger prunes older ones.",
  ),
  "Licensing:LicenseFileLifetime": def(
    durationAtLeast(60_000),
    30 * 86_400_000,
    "How long a license file (POST /v1/license/checkout) stays valid offline from its issue; a checkout's ttl can shorten it. Never past the license's expiry or, for a borrowed seat, the borrow's end.",
  ),
  "Licensing:MaxBorrowHours": def(
    int(1, 8_760),
    168,
    "Longest a floating seat may be borrowed (POST /v1/license/borrow `hours`), in hours.",
  ),
  "Licensing:OfflineGraceDays": def(
    int(0, 365),
    7,
    "Days the client package keeps a license usable offline after its last signed validation; every signed validation carries it (offlineGraceDays).",
  ),
  "Licensing:UserKeyFormat": def(
    text(/^[X-]*X[X-]*$/),
    "XXXXX-XXXXX-XXXXX-XXXXX-XXXXX",
    "Shape of generated user keys (X = a Crockford base32 character).",
  ),
  "Licensing:MaxDeactivationsPerMonth": def(
    int(0, 1_000),
    3,
    "Machines a customer may deactivate per license per calendar month (UTC) in the customer portal (/v1/portal); more answer 429 until the next month. 0 = no limit.",
  ),
  "Webhooks:Enabled": def(bool, true, "Deliver webhooks."),
  "Webhooks:AllowInsecureUrls": def(bool, false, "Allow http:// and private-address webhook URLs (local development)."),
  "Webhooks:EventRetentionDays": def(
    int(1, 36_500),
    30,
    "Days webhook delivery history (delivery events) is kept; the cron trigger prunes older ones.",
  ),
  "Updates:FeedCacheSeconds": def(int(0, 86_400), 60, "max-age of cached anonymous feed and update-check answers."),
  "Updates:AdoptionRetentionDays": def(
    int(1, 36_500),
    400,
    "Days of release adoption (GET .../adoption) kept; the cron trigger prunes older days.",
  ),
  "Updates:PlatformEditions": def(
    platformEditions,
    { windows: [], mac: ["Ultimate"], linux: ["Ultimate"] },
    'Editions allowed per platform family, JSON {"windows":[],"mac":["Ultimate"],"linux":["Ultimate"]}; empty = all.',
  ),
  "Updates:EnforcePlatformEditions": def(bool, true, "Apply Updates:PlatformEditions."),
  "Updates:AllowPublicApplicationReleases": def(
    bool,
    false,
    "Allow requiresMaintenance=false on application products.",
  ),
  "Updates:EmptyFeedAsYaml": def(bool, false, "Answer an empty feed with 200 and stagingPercentage 0 instead of 204."),
  "Commerce:Stripe:WebhookSecret": def(
    optionalText,
    undefined,
    "Signing secret (whsec_…) of the Stripe webhook endpoint /v1/commerce/stripe/webhook; unset, that route answers 404 (secret).",
    true,
  ),
  "Commerce:Paddle:WebhookSecret": def(
    optionalText,
    undefined,
    "Secret key (pdl_ntfset_…) of the Paddle notification destination /v1/commerce/paddle/webhook; unset, that route answers 404 (secret).",
    true,
  ),
  "Commerce:LemonSqueezy:WebhookSecret": def(
    optionalText,
    undefined,
    "Signing secret of the Lemon Squeezy webhook /v1/commerce/lemonsqueezy/webhook; unset, that route answers 404 (secret).",
    true,
  ),
  "Commerce:GraceDays": def(
    int(0, 365),
    7,
    "Days a past-due subscription's licenses stay usable after the payment failed.",
  ),
  "Commerce:MaxLicensesPerPurchase": def(
    int(1, 5000),
    1000,
    "Most licenses one provider purchase makes (quantities in licenses mode, summed); a larger purchase writes nothing, is logged and answered 200 failed, and a redelivery after raising this makes it.",
  ),
  "Portal:Enabled": def(bool, true, "Serve the customer portal (/portal/ and /v1/portal/*); off, both answer 404."),
  "Portal:Title": def(
    text(/^[^\r\n]{1,80}$/),
    "Customer portal",
    "The customer portal's title (page heading and the sign-in email's subject), 1 to 80 characters.",
  ),
  "Portal:AccentColor": def(text(/^#[0-9a-fA-F]{6}$/), "#2563eb", "The customer portal's accent colour, #rrggbb."),
  "Portal:LogoUrl": def(
    optionalHttpsUrl,
    undefined,
    "An https URL of the logo the customer portal shows beside its title; none by default.",
  ),
  "Portal:SignInLinkMinutes": def(
    int(1, 1_440),
    15,
    "Minutes a customer portal sign-in link sent by email stays valid; each link signs in once.",
  ),
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
