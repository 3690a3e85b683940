/**
 * SPEC "Limits" at the edge of every request: a blacklisted IP gets 403 before anything else; a counted request
 * costs one call to the client IP's RateLimiter object (none for whitelisted IPs and excluded paths, and never a D1
 * query); a blocked IP gets 429 with `Retry-After` and a text body. And login protection: failed logins (password
 * or user key, REST or gRPC) and the update routes' unknown, revoked or expired user keys count per IP; past
 * `MaxFailedAttempts`, logins fail (500) until `LoginBlockDuration` has passed, even with the right password.
 * Login itself (REST and gRPC) is outside the request limit (SPEC) but has a generous limit of its own, and IPv6
 * clients are counted per /64. Reports naming no license are also counted per credential (spendCredentialBudget).
 */
import type { MiddlewareHandler } from "hono";
import type { AppEnv, Principal } from "../http/app-env";
import { clock } from "../kernel/clock";
import type { Config } from "../kernel/config";
import { type ServiceContext, serviceContext } from "../http/context";
import { ApiError, RefusalError } from "../kernel/errors";
import { ServiceLog } from "../db/logging";
import { ipInList, parseIp } from "./ip";

/**
 * The name of the RateLimiter object that counts `ip`: the address itself for IPv4, its /64 prefix for IPv6 (one
 * subscriber holds a whole /64, so counting single IPv6 addresses would let one client rotate past every limit).
 */
export function limiterName(ip: string): string {
  const bytes = parseIp(ip);
  if (bytes?.length !== 16) return ip;
  const groups = Array.from({ length: 4 }, (_, i) => ((bytes[i * 2]! << 8) | bytes[i * 2 + 1]!).toString(16));
  return `${groups.join(":")}::/64`;
}

function limiter(env: Bindings, ip: string, purpose: "requests" | "logins" = "requests") {
  // Login requests have their own request count (another object), so a login flood and other routes never mix.
  const name = limiterName(ip);
  return env.RATE_LIMITER.getByName(purpose === "logins" ? `login ${name}` : name);
}

/** The login routes (REST and gRPC): excluded from the request limit by SPEC, but counted by their own limit. */
const LOGIN_PATHS = ["/v1/auth/login", "/licensing.v1.Authentication/Authenticate", "/v1/portal/sign-in"];

function excluded(path: string, config: Config): boolean {
  return config["IpFiltering:BruteForceProtection:ExcludedPaths"].some((prefix) => path.startsWith(prefix));
}

/**
 * What the IP filter and request limit make of a request, before any count: refused (blacklisted), free (protection
 * off, a whitelisted IP, or a path excluded from the request limit) or counted by the IP's RateLimiter object.
 */
export function ipVerdict(ip: string, path: string, config: Config): "blocked" | "free" | "counted" {
  if (ipInList(ip, config["IpFiltering:Blacklist"])) return "blocked";
  if (!config["IpFiltering:BruteForceProtection:Enabled"] || ipInList(ip, config["IpFiltering:Whitelist"]))
    return "free";
  if (!LOGIN_PATHS.includes(path) && excluded(path, config)) return "free";
  return "counted";
}

/** The IP filter and request limit (app middleware, before any route). */
export const ipProtection: MiddlewareHandler<AppEnv> = async (c, next) => {
  const config = c.get("config");
  const ip = c.get("clientIp");
  // A refused API key (unknown, revoked, expired; REST or gRPC) counts like a failed login (auth/guard.ts marks it).
  const proceed = async () => {
    await next();
    if (c.get("refusedApiKey")) {
      const ctx = serviceContext(c);
      ctx.waitUntil(countFailedLogin(ctx));
    }
  };
  const decided = ipVerdict(ip, c.req.path, config);
  if (decided === "blocked") throw new ApiError(403, "Requests from this address are blocked");
  if (decided === "free") return proceed();
  let verdict;
  if (LOGIN_PATHS.includes(c.req.path)) {
    // A login flood stops here, before any password is hashed: a generous limit of its own, blocked for one frame.
    const frame = config["IpFiltering:BruteForceProtection:TimeFrameDuration"];
    verdict = await limiter(c.env, ip, "logins").hit(
      clock.now().getTime(),
      config["IpFiltering:AuthenticationProtection:MaxLoginRequestsPerTimeFrame"],
      frame,
      frame,
    );
  } else {
    verdict = await limiter(c.env, ip).hit(
      clock.now().getTime(),
      config["IpFiltering:BruteForceProtection:MaxRequestsPerTimeFrame"],
      config["IpFiltering:BruteForceProtection:TimeFrameDuration"],
      config["IpFiltering:BruteForceProtection:RequestsBlockDuration"],
    );
  }
  if (!verdict.allowed) {
    const wait = verdict.retryAfter ?? 1;
    return c.text(`Too many requests. Try again in ${wait} seconds.`, 429, { "Retry-After": String(wait) });
  }
  return proceed();
};

/**
 * The RateLimiter object counting one credential's calls for `purpose`: per API key; per user for a user's bearer
 * tokens (every sign-in mints a new token, the user stays one); per license for a license's own bearer token; per
 * address (IPv6 /64) for a caller without a credential. The names hold spaces, so they never meet an IP's objects.
 */
export function credentialLimiterName(purpose: string, principal: Principal | undefined, ip: string): string {
  if (principal?.keyId !== undefined) return `${purpose} key ${principal.keyId}`;
  if (principal?.userId !== undefined) return `${purpose} user ${principal.userId}`;
  if (principal?.licenseId !== undefined) return `${purpose} license ${principal.licenseId}`;
  return `${purpose} address ${limiterName(ip)}`;
}

/**
 * Counts one call of the request's credential for `purpose` (reports naming no license) against `limit` calls per
 * `windowMs`, whatever address it comes from; once spent, 429 with Retry-After until the time frame ends. Unlike the
 * per-IP limit it holds for whitelisted addresses too: it bounds what one credential may store, not one address.
 */
export async function spendCredentialBudget(
  ctx: ServiceContext,
  purpose: string,
  limit: number,
  windowMs: number,
): Promise<void> {
  const name = credentialLimiterName(purpose, ctx.principal, ctx.clientIp);
  const verdict = await ctx.env.RATE_LIMITER.getByName(name).hit(clock.now().getTime(), limit, windowMs, windowMs);
  if (!verdict.allowed) {
    const wait = verdict.retryAfter ?? 1;
    throw new ApiError(429, `Too many ${purpose} from this credential. Try again in ${wait} seconds.`, {
      "Retry-After": String(wait),
    });
  }
}

/** Whether login protection watches this caller (whitelisted IPs are never limited). */
function watched(ctx: ServiceContext): boolean {
  return !ipInList(ctx.clientIp, ctx.config["IpFiltering:Whitelist"]);
}

/** What a login attempt is: the account it names (normalized user name), and whether a success proves a person. */
export interface LoginAttempt {
  /** The normalized user name of a password sign-in; null for a user key (a key is no account). */
  account: string | null;
  /**
   * Whether a success clears the account's failures: a password sign-in does; a user-key sign-in never clears
   * password failures (a license key can be shared or leaked, and proves no person).
   */
  clearsFailures: boolean;
}

/** A password sign-in for `username`. */
export function passwordAttempt(username: string | undefined): LoginAttempt {
  return { account: username === undefined ? null : username.toLowerCase(), clearsFailures: true };
}

/** A sign-in with a license's user key. */
export const USER_KEY_ATTEMPT: LoginAttempt = { account: null, clearsFailures: false };

const isFailedLogin = (e: unknown) => e instanceof ApiError && e.status === 401;

/**
 * Runs a login attempt under login protection. Deciding and counting is one call to the IP's RateLimiter object
 * (loginBegin): while the IP is blocked, or while its failures and the attempts still being checked reach
 * MaxFailedAttempts, the attempt is refused (500, not written to the service log) without checking anything; else
 * it counts as a failure until settled. A failure (`isFailure`, by default a 401) stays counted and may start the
 * block (one audit entry per block); a password success clears that account's failures only.
 */
export async function protectLogin<T>(
  ctx: ServiceContext,
  who: LoginAttempt,
  attempt: () => Promise<T>,
  isFailure: (e: unknown) => boolean = isFailedLogin,
): Promise<T> {
  if (!watched(ctx)) return attempt();
  const ip = limiter(ctx.env, ctx.clientIp);
  const maxAttempts = ctx.config["IpFiltering:AuthenticationProtection:MaxFailedAttempts"];
  const blockMs = ctx.config["IpFiltering:AuthenticationProtection:LoginBlockDuration"];
  const gate = await ip.loginBegin(clock.now().getTime(), maxAttempts, blockMs);
  if (!gate.allowed)
    throw new RefusalError(
      500,
      `Too many failed logins from this address. Try again in ${gate.retryAfter} seconds.`,
      {},
      "loginBlocked",
    );
  let result: T;
  try {
    result = await attempt();
  } catch (e) {
    const failed = isFailure(e);
    const outcome = await ip.loginEnd(
      clock.now().getTime(),
      gate.attempt,
      failed ? "failed" : "neutral",
      who.account,
      maxAttempts,
      blockMs,
    );
    if (outcome.blocked) await auditBlock(ctx, outcome.failures ?? maxAttempts, blockMs);
    throw e;
  }
  ctx.waitUntil(
    ip.loginEnd(
      clock.now().getTime(),
      gate.attempt,
      who.clearsFailures ? "succeeded" : "neutral",
      who.account,
      maxAttempts,
      blockMs,
    ),
  );
  return result;
}

/**
 * Counts a failure that is no login attempt for the caller's IP: a bad user key on the update routes, an unknown
 * API key. Enough of them block logins like failed logins do.
 */
export async function countFailedLogin(ctx: ServiceContext): Promise<void> {
  if (!watched(ctx)) return;
  const blockMs = ctx.config["IpFiltering:AuthenticationProtection:LoginBlockDuration"];
  const outcome = await limiter(ctx.env, ctx.clientIp).loginFailed(
    clock.now().getTime(),
    ctx.config["IpFiltering:AuthenticationProtection:MaxFailedAttempts"],
    blockMs,
  );
  if (outcome.blocked) await auditBlock(ctx, outcome.failures ?? 0, blockMs);
}

/**
 * The one audit entry of a block (not one per refused attempt). Written at once with its own batch: the failure that
 * started the block may be counted after the request's log was flushed (update routes count in `waitUntil`).
 */
async function auditBlock(ctx: ServiceContext, failures: number, blockMs: number): Promise<void> {
  const log = new ServiceLog();
  log.audit(
    "LoginBlocked",
    `Logins from ${ctx.clientIp} blocked for ${Math.ceil(blockMs / 1000)} seconds after ${failures} failed attempts`,
    ctx,
    {
      failures,
      blockedSeconds: Math.ceil(blockMs / 1000),
    },
  );
  await log.flush(ctx.db, ctx.requestId);
}
