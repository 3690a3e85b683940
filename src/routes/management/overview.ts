/**
 * `GET /v1/overview` (Administrator, LicenseManager, Sales, as the console's overview): what an owner asks first,
 * computed by overview/figures.ts in one D1 round trip. Webhook deliveries are the managers' (as the webhook routes
 * are): the answer has `webhooks` only for them.
 */
import { type RouteHandler, createRoute, z } from "@hono/zod-openapi";
import { Roles, access, isManager } from "../../auth/guard";
import { clock } from "../../kernel/clock";
import { enveloped, errorResponses, int32, int64, json } from "../../http/openapi";
import { ok } from "../../http/respond";
import type { AppEnv } from "../../http/app-env";
import type { Router } from "../../http/router";
import { EXPIRING_DAYS, REVENUE_MONTHS, readOverview } from "../../overview/figures";

const instant = () => z.string().openapi({ format: "date-time" });
const count = int64;
const money = () => z.number().openapi({ description: "Sum of order totals, rounded to cents." });

const ExpiringLicense = z
  .object({
    licenseId: z.string(),
    licenseeName: z.string().nullable(),
    productId: int32(1),
    productName: z.string(),
    expireDate: instant(),
  })
  .openapi("OverviewExpiringLicense");

const MonthRevenue = z
  .object({
    month: z.string().openapi({ description: "The UTC month, `yyyy-MM`.", example: "2026-11" }),
    currency: z
      .string()
      .nullable()
      .openapi({ description: "The orders' currency as recorded (none when unrecorded)." }),
    paid: money(),
    paidOrders: count(),
    refunded: money(),
    refundedOrders: count(),
  })
  .openapi("OverviewMonthRevenue");

const RolloutStep = z.object({ percentage: int32(0, 100), at: instant() });

const RollingRelease = z
  .object({
    productId: int32(1),
    productName: z.string(),
    releaseId: int32(1),
    version: z.string(),
    channel: z.string(),
    state: z.enum(["staged", "scheduled", "halted"]).openapi({
      description:
        "`staged`: below 100 % now, nothing scheduled; `scheduled`: rollout steps are still ahead; `halted`: halted.",
    }),
    percentage: int32(0, 100).openapi({ description: "The rollout's percentage now (100 when it has none)." }),
    nextStep: RolloutStep.nullable(),
    haltedAt: instant().nullable(),
    haltReason: z.string().nullable(),
    haltNote: z.string().nullable(),
  })
  .openapi("OverviewRelease");

const DeadLetter = z
  .object({
    subscriptionId: int32(1),
    subscriptionName: z.string(),
    eventId: z.string(),
    eventType: z.string(),
    statusCode: int32(0).nullable(),
    deadLetteredAt: instant(),
  })
  .openapi("OverviewDeadLetter");

/** The answer of `GET /v1/overview`. */
export const OverviewAnswer = enveloped({
  serverTime: instant(),
  licenses: z.object({
    active: count().openapi({ description: "Not revoked, with no expiry or one still ahead." }),
    expiringSoon: count().openapi({ description: `Active licenses expiring within ${EXPIRING_DAYS} days.` }),
    expiringWithinDays: int32(1),
    expired: count(),
    revoked: count(),
    expiring: z.array(ExpiringLicense).openapi({ description: "The soonest expiring active licenses (at most 10)." }),
  }),
  seats: z.object({
    floatingInUse: count().openapi({ description: "Floating seats held now on active licenses." }),
    floatingAllowed: count().openapi({ description: "Seats the active floating licenses allow (their maxClients)." }),
    activatedMachines: count().openapi({ description: "Machines activated now on active licenses." }),
  }),
  revenue: z.object({
    months: int32(1),
    since: instant().openapi({ description: "The first instant counted: the start of the oldest month." }),
    periods: z.array(MonthRevenue).openapi({
      description: `Per UTC month (the last ${REVENUE_MONTHS}) and currency, newest first: paid is the total of orders paid (or paid and later refunded) in the month of their paymentDate; refunded the total of orders refunded, in the month the refund was recorded.`,
    }),
  }),
  releases: z.object({
    rollingOut: count().openapi({ description: "Public releases staged or scheduled, not halted." }),
    halted: count(),
    list: z.array(RollingRelease),
  }),
  webhooks: z
    .object({
      deadLetters: count().openapi({ description: "Deliveries given up (recorded from the dead-letter queue)." }),
      failing: count().openapi({ description: "Deliveries whose last attempt failed, not given up yet." }),
      recentDeadLetters: z.array(DeadLetter),
    })
    .optional()
    .openapi({ description: "Administrator and LicenseManager only (the webhook routes' roles)." }),
}).openapi("Overview");

const getOverviewRoute = createRoute({
  method: "get",
  path: "/v1/overview",
  tags: ["Service"],
  operationId: "getOverview",
  summary: "Licenses active and expiring, seats in use, revenue and refunds, releases rolling out, failed webhooks",
  ...access.key(Roles.management),
  responses: { 200: json(OverviewAnswer, "The figures an owner asks first, now"), ...errorResponses },
});

const getOverview: RouteHandler<typeof getOverviewRoute, AppEnv> = async (c) =>
  ok(c, await readOverview(c.get("db"), clock.now(), isManager(c.get("principal"))));

/** Registers `GET /v1/overview`. */
export function registerOverview(app: Router): void {
  app.openapi(getOverviewRoute, getOverview);
}
