/**
 * The per-license request limit (issue 14, "Abuse and growth"): the floating routes (request, heartbeat, release)
 * are excluded from the per-IP limit by SPEC, and reports are cheap to send and grow the database, so each license
 * gets its own budget of `Licensing:MaxRequestsPerLicense` per `Licensing:LicenseRequestTimeFrame`, REST and gRPC
 * together. The license's LicenseSeats object keeps the count (durable/license-seats.ts): the floating calls are
 * counted in the same call that serves them, a report by a call of its own. Over it the call answers 429 with
 * Retry-After (gRPC ResourceExhausted) until the time frame ends.
 */
import { clock } from "../kernel/clock";
import type { ServiceContext } from "../http/context";
import type { Budget, OverBudget } from "../durable/license-seats";
import { ApiError } from "../kernel/errors";

/** The license's LicenseSeats object: its seats and its request budget. */
export function seats(ctx: Pick<ServiceContext, "env">, licenseRowId: number) {
  return ctx.env.LICENSE_SEATS.getByName(String(licenseRowId));
}

/** The budget every license has, from the settings. */
export function licenseBudget(ctx: Pick<ServiceContext, "config">): Budget {
  return {
    limit: ctx.config["Licensing:MaxRequestsPerLicense"],
    windowMs: ctx.config["Licensing:LicenseRequestTimeFrame"],
  };
}

/** The answer of a seat call, or its 429 when the license's budget is spent. */
export function withinBudget<T extends object>(answer: T | OverBudget): Exclude<T, OverBudget> {
  if ("overBudget" in answer && answer.overBudget === true) {
    const wait = answer.retryAfter;
    throw new ApiError(429, `Too many requests for this license. Try again in ${wait} seconds.`, {
      "Retry-After": String(wait),
    });
  }
  return answer as Exclude<T, OverBudget>;
}

/** Counts one call that needs no seat (a report) against the license's budget; 429 once it is spent. */
export async function spendLicenseBudget(ctx: ServiceContext, licenseRowId: number): Promise<void> {
  withinBudget(await seats(ctx, licenseRowId).spend(licenseBudget(ctx), clock.now().getTime()));
}
