/**
 * The per-license request limit (issue 14, "Abuse and growth"): the floating routes (request, heartbeat, release)
 * are excluded from the per-IP limit by SPEC, and reports are cheap to send and grow the database, so each license
 * gets its own budget of `Licensing:MaxRequestsPerLicense` per `Licensing:LicenseRequestTimeFrame`, REST and gRPC
 * together, counted by a RateLimiter object of its own (`license:<row id>`, apart from the per-IP ones). Over it the
 * call answers 429 with Retry-After (gRPC ResourceExhausted) until the time frame ends.
 */
import { clock } from "../clock";
import type { ServiceContext } from "../http/context";
import { ApiError } from "../errors";

/** The RateLimiter object's name for a license (never an IP address). */
export function licenseLimiterName(licenseRowId: number): string {
  return `license:${licenseRowId}`;
}

/** Counts one call against the license's budget; 429 once it is spent. */
export async function spendLicenseBudget(ctx: ServiceContext, licenseRowId: number): Promise<void> {
  const window = ctx.config["Licensing:LicenseRequestTimeFrame"];
  const verdict = await ctx.env.RATE_LIMITER.getByName(licenseLimiterName(licenseRowId)).hit(
    clock.now().getTime(),
    ctx.config["Licensing:MaxRequestsPerLicense"],
    window,
    window,
  );
  if (verdict.allowed) return;
  const wait = verdict.retryAfter ?? 1;
  throw new ApiError(429, `Too many requests for this license. Try again in ${wait} seconds.`, {
    "Retry-After": String(wait),
  });
}
