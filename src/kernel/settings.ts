/**
 * Every setting the service reads (CONTRACT section 1), declared once: its parser, its default (and the development
 * default where one differs) and what it does. The configuration object (config.ts), `GET /v1/settings`, the console's
 * Settings page and the settings reference (docs/settings.md, generated from this file by `npm run docs:settings`)
 * all read these definitions.
 */
import {
  DURATION_PARSERS,
  type PlatformEditions,
  type SettingDefinition,
  bool,
  def,
  devDef,
  duration,
  durationAtLeast,
  durationUpTo,
  int,
  list,
  optionalEmail,
  optionalHttpsOrigin,
  optionalHttpsUrl,
  optionalText,
  platformEditions,
  text,
} from "./setting-parsers.ts";

export { DURATION_PARSERS, type PlatformEditions, type SettingDefinition, duration, list };

const MiB = 1024 * 1024;

/** Every setting the service reads, with SPEC.md's name, its default and what it does. */
export const settingDefinitions = {
  "Application:Environment": def(
    text(/^[A-Za-z][A-Za-z0-9-]{0,31}$/),
    "Production",
    "Development (set in .dev.vars.example, the tests and the local scripts), or any other name (Production, Staging …). Outside Development the service refuses to run, every route (the health check too) answering 500 naming the setting, while Application:JwtSecret is shorter than 32 bytes, Application:EncryptionKey is not the base64 of 32 bytes or more, Application:JwtSecret, Application:EncryptionKey, Application:AdminApiKey or IpFiltering:GatewaySecret is guessable (under 128 bits by the service's conservative estimate: repeats, sequences and reused characters count for little, whatever the length; generate each with openssl rand -base64 32), any secret has a value published in .dev.vars.example, Application:PublicUrl is unset, or Webhooks:AllowInsecureUrls is on. Read from the environment only: the settings table and PUT /v1/settings cannot change it, and PUT refuses a change that would stop the service.",
  ),
  "Application:EnableWebApi": def(bool, true, "Serve the REST API under /v1 (404 when false)."),
  "Application:EnableSwagger": devDef(
    bool,
    false,
    true,
    "Serve the OpenAPI document at /swagger/v1/swagger.json and Swagger UI at /swagger (and /swagger/); on in Development only by default. The UI's files (swagger-ui-dist, pinned) are served by the service itself under /swagger/assets/: no CDN, works offline.",
  ),
  "Application:EnableGrpcWeb": def(
    bool,
    true,
    "Serve the gRPC services with gRPC-Web and Connect on the main endpoint. Native gRPC through the gateway (npm run grpc-gateway) is separate and stays on.",
  ),
  "Application:EnableHealthCheck": def(bool, true, "Serve the health check."),
  "Application:HealthCheckEndPoint": def(
    text(/^\/[^\s?#]*$/),
    "/health",
    "Path of the health check (200 Healthy when D1 answers, 503 otherwise).",
  ),
  "Application:SerializeJSonEnumAsString": def(bool, false, "Write enumerations as names instead of numbers."),
  "Application:IgnoreJSonDefaultValues": def(bool, true, "Omit properties whose value is null from responses."),
  "Application:CorsOrigins": def(
    list,
    [],
    "Origins (https://app.example.com; * for any) that browsers and Electron renderers may call the licensing operations, login, update routes, signing keys and gRPC-Web from; none by default. The Management API never answers cross-origin.",
  ),
  "Application:PublicUrl": def(
    optionalHttpsOrigin,
    undefined,
    "The service's public https origin, with no path or query (https://licensing.example.com, a port allowed): every absolute URL of feeds, update checks and downloads starts with it, whatever Host or X-Forwarded-Host a request names. Required outside Development. In Development, when unset, each request's own origin is used, and the kept and cached anonymous answers are keyed by it, so one host's answer is never served to another.",
  ),
  "Application:ApiKeyHeaderName": def(text(/^[A-Za-z0-9-]+$/), "x-api-key", "Request header that carries the API key."),
  "Application:ApiKeyCacheDuration": def(
    durationUpTo(600_000, "a revoked or deleted key must stop working within it"),
    180_000,
    "How long a validated API key is cached per isolate: a revocation or permission change made in another isolate applies within it. At most 00:10:00 (a longer value is refused). A deleted key, or a deleted user's keys and console sessions, end at once everywhere: a cached key is used only with a check that it and its owner still exist, in the licensing call's one D1 statement.",
  ),
  "Application:TokenExpiration": def(duration, 1_800_000, "Lifetime of bearer tokens issued by login."),
  "Application:ConsoleSessionLifetime": def(
    duration,
    28_800_000,
    "Lifetime of an admin console session (the console at /console): the short-lived API key its sign-in holds in an HttpOnly cookie.",
  ),
  "Application:ConsoleIdleTimeout": def(
    durationAtLeast(1000),
    1_800_000,
    "A console session ends after this long without a request (besides its lifetime); it may end up to a minute sooner, as the last use is recorded at most once a minute. At least 00:00:01.",
  ),
  "Application:JwtSecret": def(
    optionalText,
    undefined,
    "HS256 key of bearer tokens (secret; required for login). Outside Development at least 32 bytes and 128 bits of randomness: openssl rand -base64 32.",
    true,
  ),
  "Application:EncryptionKey": def(
    optionalText,
    undefined,
    "Key for secrets at rest and license integrity (secret). Outside Development the base64 (standard or url-safe, padding optional) of at least 32 random bytes: openssl rand -base64 32. It is used as written, never stretched, so changing it makes stored secrets unreadable and every license read as tampered: set it once.",
    true,
  ),
  "Application:AdminUsername": def(
    optionalText,
    undefined,
    "Administrator account created at startup (with Application:AdminPassword).",
  ),
  "Application:AdminPassword": def(optionalText, undefined, "Password of that administrator (secret).", true),
  "Application:AdminApiKey": def(
    optionalText,
    undefined,
    "Value of the administrator's API key (secret); when unset, a key is generated and written once to the Worker's log. Outside Development a set value must carry 128 bits of randomness after its api_ prefix: echo api_$(openssl rand -hex 24).",
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
    "Report each request's D1 work (statements, round trips, rows written and read, time) in a Server-Timing header; always on in Development.",
  ),
  "Application:SettingsCacheSeconds": def(
    int(0, 3600),
    5,
    "How long other isolates may use settings before re-reading the table.",
  ),
  "Application:LogRetentionDays": def(
    int(1, 36_500),
    30,
    "Days the service log (GET /v1/log) keeps an entry; the cron trigger prunes older ones.",
  ),
  "Email:OutboxRetentionDays": def(
    int(1, 36_500),
    30,
    "Days a message of the email outbox is kept; the cron trigger prunes older ones.",
  ),
  "Email:From": def(
    optionalEmail,
    undefined,
    "Sender address of mail sent through the EMAIL send_email binding; required when it is bound (without the binding, mail is queued in the email outbox, the email_outbox table).",
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
    "Path prefixes never counted or blocked; by default the floating routes (request, release, heartbeat) and login, REST and gRPC.",
  ),
  "IpFiltering:Whitelist": def(list, ["127.0.0.1", "::1"], "IPs never rate limited."),
  "IpFiltering:GatewaySecret": def(
    optionalText,
    undefined,
    "Secret shared with the native gRPC gateway (npm run grpc-gateway reads the same variable, IpFiltering__GatewaySecret, and does not start without it): the gateway signs each client's address with it, and the Worker believes a signed, fresh address (5 minutes) instead of the gateway's own (a signed loopback address counts as unknown, never whitelisted), and lets a signed call through while Application:EnableGrpcWeb is off. Besides it only CF-Connecting-IP is believed; a request with no address at all is unknown outside Development: one bucket of its own, never whitelisted. Outside Development a set value must carry 128 bits of randomness: openssl rand -base64 32.",
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
    "Login requests (REST and gRPC Authenticate) one IP (an IPv6 /64) may make per IpFiltering:BruteForceProtection:TimeFrameDuration, right or wrong, counted apart from the request limit; over it: 429 until the frame ends.",
  ),
  "Extensions:TokenLifetimeMinutes": def(int(1, 10_080), 10, "Lifetime of download tokens, in minutes."),
  "Extensions:DownloadRoot": def(
    optionalText,
    undefined,
    "Key prefix of uploaded artifacts in the ARTIFACTS R2 bucket (wrangler.toml sets artifacts).",
  ),
  "Extensions:MaxResourceArtifactBytes": def(
    int(0),
    64 * MiB,
    "Largest artifact stored in the database (sourceKind=resource).",
  ),
  "Licensing:HeartbeatInterval": def(
    duration,
    300_000,
    "Interval floating clients heartbeat at; a seat lives twice this plus 30 s.",
  ),
  "Licensing:LicenseKeyLifetime": def(
    duration,
    7 * 86_400_000,
    "How long a license key (license.licenseKey, the signed JWS in licensing answers) stays valid offline from its issue; never past the license's expiry, the activation or the seat. A deactivated machine gets no new key, but the key it holds stays valid offline until this lifetime ends, and a revocation is not seen offline before then either: a longer value lets an activation handed from machine to machine leave more valid keys behind, a shorter one makes applications validate online more often.",
  ),
  "Licensing:MaxRequestsPerLicense": def(
    int(1),
    600,
    "Floating requests, heartbeats, releases and reports one license may make per Licensing:LicenseRequestTimeFrame, REST and gRPC together; more answer 429 with Retry-After (gRPC ResourceExhausted). Raise it for floating licenses with many seats (each seat heartbeats once per Licensing:HeartbeatInterval).",
  ),
  "Licensing:MaxReportsWithoutLicense": def(
    int(1),
    30,
    "Reports naming no license (or an unknown user key) one credential may send per Licensing:LicenseRequestTimeFrame, REST and gRPC together, whatever address they come from: per API key, per user for a user's bearer tokens. More answer 429 with Retry-After. A budget of its own: such a report may carry up to 4 MiB and is stored with no license to bound it.",
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
    "How long a license file (POST /v1/license/checkout) stays valid offline from its issue; a checkout's ttl (seconds) can shorten it. Never past the license's expiry, the activation or seat it rests on, or a borrowed seat's end.",
  ),
  "Licensing:MaxBorrowHours": def(
    int(1, 8_760),
    168,
    "Longest a floating seat may be borrowed (POST /v1/license/borrow `hours`, from 1), in hours.",
  ),
  "Licensing:OfflineGraceDays": def(
    int(0, 365),
    7,
    "Days the client package keeps a license usable offline after its last signed validation; every signed validation carries it (offlineGraceDays), and every license key carries it signed.",
  ),
  "Licensing:UserKeyFormat": def(
    text(/^[X-]*X[X-]*$/),
    "XXXXX-XXXXX-XXXXX-XXXXX-XXXXX",
    "Shape of generated user keys (X = a Crockford base32 character).",
  ),
  "Licensing:MaxDeactivationsPerMonth": def(
    int(0, 1_000),
    3,
    "Machines the licensee may deactivate per license per calendar month (UTC), through the application (POST /v1/license/deactivate, gRPC; more answer 528 deactivationLimit) and the customer portal (more answer 429), both with the reset date in X-Deactivations-Reset; Administrator and LicenseManager are not limited. 0 = no limit.",
  ),
  "Webhooks:Enabled": def(bool, true, "Deliver webhooks."),
  "Webhooks:AllowInsecureUrls": def(bool, false, "Allow http:// and private-address webhook URLs (local development)."),
  "Webhooks:EventRetentionDays": def(
    int(1, 36_500),
    30,
    "Days webhook delivery history (delivery events) is kept; the cron trigger prunes older ones.",
  ),
  "Updates:FeedCacheSeconds": def(
    int(0, 86_400),
    60,
    "max-age of cached anonymous feed and update-check answers, and of ungated artifacts open to everyone (never immutable: a release can be gated later, and a cache must ask again within this time).",
  ),
  "Updates:AdoptionRetentionDays": def(
    int(1, 36_500),
    400,
    "Days of release adoption (GET /v1/products/{productId}/releases/{releaseId}/adoption) kept; the cron trigger prunes older days.",
  ),
  "Updates:HealthInstallsPerAddress": def(
    int(1, 1000),
    5,
    "Unlicensed installs an IP (v6: /64) adds per release a day.",
  ),
  "Updates:HealthSessionsPerInstall": def(int(1, 1000), 20, "Sessions one install adds to release health per day."),
  "Updates:CrashLoopSessions": def(
    int(2, 20),
    3,
    "Last sessions of a version that, all crashed soon, roll its install back.",
  ),
  "Updates:CrashLoopMinutes": def(int(1, 1440), 10, "A crash this soon after starting counts toward a crash loop."),
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
    "Signing secret (whsec_…) of the Stripe webhook endpoint /v1/commerce/stripe/webhook; unset, that route answers 404 (secret: wrangler secret put Commerce__Stripe__WebhookSecret).",
    true,
  ),
  "Commerce:Stripe:ApiKey": def(
    optionalText,
    undefined,
    "A restricted Stripe API key (rk_…) with read access to Checkout Sessions: Stripe Checkout's one-time purchases (checkout.session.completed) name their line items only through the API, so without it they make no license unless Stripe also creates an invoice (secret: wrangler secret put Commerce__Stripe__ApiKey).",
    true,
  ),
  "Commerce:Stripe:ApiUrl": def(
    text(/^(?:https:\/\/[A-Za-z0-9.-]+(?::\d+)?|http:\/\/(?:127\.0\.0\.1|localhost)(?::\d+)?)$/),
    "https://api.stripe.com",
    "Where Stripe's API is: https://api.stripe.com; an http://127.0.0.1 or http://localhost origin is allowed for Stripe's own mock server (stripe-mock) in tests.",
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
    "Days a past-due subscription's licenses stay usable past the end of its paid period when the renewal payment fails (a later failed attempt does not restart them).",
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
  "Compat:Keygen:Account": def(
    optionalText,
    undefined,
    "The Keygen account id or slug (or both, separated by a comma) that applications in the field were built with: the Keygen-compatible routes under /v1/accounts/{account}/ answer for it (CONTRACT 16); none, they answer 404.",
  ),
} as const satisfies Record<string, SettingDefinition<unknown>>;

export type SettingName = keyof typeof settingDefinitions;
type DefinitionValue<D> = D extends SettingDefinition<infer T> ? T : never;
/** The effective configuration, keyed by SPEC's setting names. */
export type Config = { readonly [K in SettingName]: DefinitionValue<(typeof settingDefinitions)[K]> };
