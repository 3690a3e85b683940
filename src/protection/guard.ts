/**
 * SPEC "Limits" at the edge of every request: a blacklisted IP gets 403 before anything else; a counted request
 * costs one call to the client IP's RateLimiter object (none for whitelisted IPs and excluded paths, and never a D1
 * query); a blocked IP gets 429 with `Retry-After` and a text body. And login protection: failed logins (password
 * or user key, REST or gRPC) and the update routes' unknown, revoked or expired user keys count per IP; past
 * `MaxFailedAttempts`, logins fail (500) until `LoginBlockDuration` has passed, even with the right password.
 */
import type { MiddlewareHandler } from "hono";
import type { AppEnv } from "../app-env";
import { clock } from "../clock";
import type { Config } from "../config";
import type { Bindings } from "../env";
import type { ServiceContext } from "../http/context";
import { ApiError } from "../http/errors";
import { ipInList } from "./ip";

function limiter(env: Bindings, ip: string) {
  return env.RATE_LIMITER.getByName(ip);
}

function excluded(path: string, config: Config): boolean {
  return config["IpFiltering:BruteForceProtection:ExcludedPaths"].some((prefix) => path.startsWith(prefix));
}

/** The IP filter and request limit (app middleware, before any route). */
export const ipProtection: MiddlewareHandler<AppEnv> = async (c, next) => {
  const config = c.get("config");
  const ip = c.get("clientIp");
  if (ipInList(ip, config["IpFiltering:Blacklist"])) throw new ApiError(403, "Requests from this address are blocked");
  if (!config["IpFiltering:BruteForceProtection:Enabled"] || ipInList(ip, config["IpFiltering:Whitelist"]) || excluded(c.req.path, config)) return next();
  const verdict = await limiter(c.env, ip).hit(
    clock.now().getTime(),
    config["IpFiltering:BruteForceProtection:MaxRequestsPerTimeFrame"],
    config["IpFiltering:BruteForceProtection:TimeFrameDuration"],
    config["IpFiltering:BruteForceProtection:RequestsBlockDuration"],
  );
  if (!verdict.allowed) {
    const wait = verdict.retryAfter ?? 1;
    return c.text(`Too many requests. Try again in ${wait} seconds.`, 429, { "Retry-After": String(wait) });
  }
  return next();
};

/** Whether login protection watches this caller (whitelisted IPs are never limited). */
function watched(ctx: ServiceContext): boolean {
  return !ipInList(ctx.clientIp, ctx.config["IpFiltering:Whitelist"]);
}

/**
 * Runs a login attempt under login protection: refused (500) while the IP is blocked; a failure (the attempt
 * throws a 401) is counted, a success clears the count.
 */
export async function protectLogin<T>(ctx: ServiceContext, attempt: () => Promise<T>): Promise<T> {
  if (!watched(ctx)) return attempt();
  const ip = limiter(ctx.env, ctx.clientIp);
  const gate = await ip.loginAllowed(clock.now().getTime());
  if (!gate.allowed) throw new ApiError(500, `Too many failed logins from this address. Try again in ${gate.retryAfter ?? 1} seconds.`);
  try {
    const result = await attempt();
    ctx.waitUntil(ip.loginSucceeded());
    return result;
  } catch (e) {
    if (e instanceof ApiError && e.status === 401) await countFailedLogin(ctx);
    throw e;
  }
}

/** Counts a failed login (or a bad user key on the update routes) for the caller's IP. */
export async function countFailedLogin(ctx: ServiceContext): Promise<void> {
  if (!watched(ctx)) return;
  await limiter(ctx.env, ctx.clientIp).loginFailed(
    clock.now().getTime(),
    ctx.config["IpFiltering:AuthenticationProtection:MaxFailedAttempts"],
    ctx.config["IpFiltering:AuthenticationProtection:LoginBlockDuration"],
  );
}
