/**
 * The owner's overview (issue 37, "a console for the business"), free of HTTP: what an owner asks first, read in one
 * D1 round trip (eight statements in one batch) and judged by the rules the rest of the service uses.
 *
 * - Licenses: active (not revoked, no expiry or an expiry ahead: the policy's order without the integrity check,
 *   licensing/policy.ts), expiring within `EXPIRING_DAYS` (the soonest listed), expired, revoked.
 * - Seats: floating seats held now and activated machines, by the rule "a token is live" (db/rules.ts) on licenses
 *   still active; the seats the active floating licenses allow (their maxClients).
 * - Money, per UTC month of the last `REVENUE_MONTHS` and per currency, from orders: paid is the total of orders
 *   whose payment is Paid or Refunded (a refunded order was paid first), in the month of its paymentDate (its
 *   createdAt when no date was recorded); refunded is the total of orders whose payment is Refunded, in the month
 *   the refund was recorded (the order's updatedAt, the last write, which the refund is for orders of a provider).
 * - Releases rolling out: public releases below 100 % now or with rollout steps still ahead (the admission's own
 *   effectivePercentage, delivery/admission.ts), and halted releases.
 * - Webhook deliveries given up (dead letters, webhooks/dead-letter.ts) and still failing, the newest dead letters.
 */
import { type SQL, and, asc, count, desc, eq, gt, inArray, isNotNull, isNull, lte, or, sql } from "drizzle-orm";
import type { Db } from "../db/client";
import { tokenIsLive } from "../db/rules";
import {
  licenseTokens,
  licenses,
  orders,
  productReleases,
  products,
  webhookEvents,
  webhookSubscriptions,
} from "../db/schema";
import { type RolloutStep, effectivePercentage } from "../delivery/admission";
import { PaymentStatus } from "../records/orders";
import { Mode, TokenKind } from "../records/vocabulary";

/** Licenses expiring within this many days count as expiring. */
export const EXPIRING_DAYS = 30;
/** How many of the soonest expiring licenses are listed. */
export const EXPIRING_LISTED = 10;
/** Months of revenue: this one and the eleven before it. */
export const REVENUE_MONTHS = 12;
/** Releases rolling out are read up to this many (the most recently changed first). */
export const RELEASES_LISTED = 50;
/** How many of the newest dead letters are listed. */
export const DEAD_LETTERS_LISTED = 5;

const PAID = PaymentStatus.indexOf("Paid");
const REFUNDED = PaymentStatus.indexOf("Refunded");

export interface ExpiringLicense {
  licenseId: string;
  licenseeName: string | null;
  productId: number;
  productName: string;
  expireDate: string;
}

export interface MonthRevenue {
  /** `yyyy-MM`, UTC. */
  month: string;
  currency: string | null;
  paid: number;
  paidOrders: number;
  refunded: number;
  refundedOrders: number;
}

export type RolloutState = "staged" | "scheduled" | "halted";

export interface RollingRelease {
  productId: number;
  productName: string;
  releaseId: number;
  version: string;
  channel: string;
  state: RolloutState;
  /** The rollout's percentage now (100 when it has none). */
  percentage: number;
  /** The next scheduled step, when one is ahead. */
  nextStep: RolloutStep | null;
  haltedAt: string | null;
  haltReason: string | null;
  haltNote: string | null;
}

export interface DeadLetter {
  subscriptionId: number;
  subscriptionName: string;
  eventId: string;
  eventType: string;
  statusCode: number | null;
  deadLetteredAt: string;
}

export interface Overview {
  serverTime: string;
  licenses: {
    active: number;
    expiringSoon: number;
    expiringWithinDays: number;
    expired: number;
    revoked: number;
    expiring: ExpiringLicense[];
  };
  seats: { floatingInUse: number; floatingAllowed: number; activatedMachines: number };
  revenue: { months: number; since: string; periods: MonthRevenue[] };
  releases: { rollingOut: number; halted: number; list: RollingRelease[] };
  webhooks?: { deadLetters: number; failing: number; recentDeadLetters: DeadLetter[] };
}

/**
 * How many rows meet `condition`, as a named column: D1 returns a batch's rows by column name, so two unnamed
 * expressions of the same text (conditions differing only in a bound value) would be one column.
 */
const sum = (condition: SQL, name: string) =>
  sql<number>`coalesce(sum(CASE WHEN ${condition} THEN 1 ELSE 0 END), 0)`.as(name);
const total = () => sql<number>`coalesce(sum(${orders.total}), 0)`.as("total");
const cents = (n: number) => Math.round(n * 100) / 100;

/** The first instant of the UTC month `back` months before the month of `now`. */
function monthStart(now: Date, back: number): string {
  return new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - back, 1)).toISOString();
}

/** "An active license" as a condition at `at`: not revoked, no expiry or one still ahead. */
function activeAt(at: string): SQL {
  return and(eq(licenses.revoked, false), or(isNull(licenses.expireDate), gt(licenses.expireDate, at))) as SQL;
}

/** What the overview reads of a release. */
const releaseColumns = {
  id: productReleases.id,
  productId: productReleases.productId,
  version: productReleases.version,
  channel: productReleases.channel,
  stagingPercentage: productReleases.stagingPercentage,
  rolloutSchedule: productReleases.rolloutSchedule,
  halted: productReleases.halted,
  haltedAt: productReleases.haltedAt,
  haltReason: productReleases.haltReason,
  haltNote: productReleases.haltNote,
};
type ReleaseRead = { [K in keyof typeof releaseColumns]: (typeof productReleases.$inferSelect)[K] } & {
  productName: string;
};

/** The statements of the overview, each a drizzle query: sent together as one batch. */
function statements(db: Db, now: Date) {
  const at = now.toISOString();
  const soon = new Date(now.getTime() + EXPIRING_DAYS * 86_400_000).toISOString();
  const since = monthStart(now, REVENUE_MONTHS - 1);
  const active = activeAt(at);
  const expiringSoon = and(active, isNotNull(licenses.expireDate), lte(licenses.expireDate, soon)) as SQL;
  const paidAt = sql<string>`coalesce(${orders.paymentDate}, ${orders.createdAt})`;
  const paidMonth = sql<string>`substr(${paidAt}, 1, 7)`;
  const refundMonth = sql<string>`substr(${orders.updatedAt}, 1, 7)`;
  return [
    db
      .select({
        active: sum(active, "active"),
        expiringSoon: sum(expiringSoon, "expiring_soon"),
        expired: sum(and(eq(licenses.revoked, false), lte(licenses.expireDate, at)) as SQL, "expired"),
        revoked: sum(eq(licenses.revoked, true), "revoked"),
        floatingAllowed:
          sql<number>`coalesce(sum(CASE WHEN ${and(active, eq(licenses.licensingMode, Mode.Floating))} THEN ${licenses.maxClients} ELSE 0 END), 0)`.as(
            "floating_allowed",
          ),
      })
      .from(licenses),
    db
      .select({
        licenseId: licenses.licenseId,
        licenseeName: licenses.licenseeName,
        productId: licenses.productId,
        productName: products.name,
        expireDate: sql<string>`${licenses.expireDate}`.as("expire_date"),
      })
      .from(licenses)
      .innerJoin(products, eq(products.id, licenses.productId))
      .where(expiringSoon)
      .orderBy(asc(licenses.expireDate), asc(licenses.id))
      .limit(EXPIRING_LISTED),
    db
      .select({
        floatingInUse: sum(eq(licenseTokens.kind, TokenKind.Floating), "floating_in_use"),
        activatedMachines: sum(eq(licenseTokens.kind, TokenKind.Activation), "activated_machines"),
      })
      .from(licenseTokens)
      .innerJoin(licenses, eq(licenses.id, licenseTokens.licenseId))
      .where(and(tokenIsLive(at), active)),
    db
      .select({ month: paidMonth.as("month"), currency: orders.currency, total: total(), n: count() })
      .from(orders)
      .where(and(inArray(orders.paymentStatus, [PAID, REFUNDED]), sql`${paidAt} >= ${since}`))
      .groupBy(paidMonth, orders.currency),
    db
      .select({ month: refundMonth.as("month"), currency: orders.currency, total: total(), n: count() })
      .from(orders)
      .where(and(eq(orders.paymentStatus, REFUNDED), sql`${orders.updatedAt} >= ${since}`))
      .groupBy(refundMonth, orders.currency),
    db
      .select({ ...releaseColumns, productName: sql<string>`${products.name}`.as("product_name") })
      .from(productReleases)
      .innerJoin(products, eq(products.id, productReleases.productId))
      .where(
        or(
          eq(productReleases.halted, true),
          and(
            eq(productReleases.public, true),
            or(sql`${productReleases.stagingPercentage} < 100`, isNotNull(productReleases.rolloutSchedule)),
          ),
        ),
      )
      .orderBy(desc(productReleases.updatedAt), desc(productReleases.id))
      .limit(RELEASES_LISTED),
    db
      .select({
        deadLetters: sum(isNotNull(webhookEvents.deadLetteredAt), "dead_letters"),
        failing: sum(
          and(
            eq(webhookEvents.isSuccess, false),
            isNull(webhookEvents.deadLetteredAt),
            isNotNull(webhookEvents.sentAt),
          ) as SQL,
          "failing",
        ),
      })
      .from(webhookEvents),
    db
      .select({
        subscriptionId: webhookEvents.webhookSubscriptionId,
        subscriptionName: webhookSubscriptions.name,
        eventId: webhookEvents.eventId,
        eventType: webhookEvents.eventType,
        statusCode: webhookEvents.statusCode,
        deadLetteredAt: sql<string>`${webhookEvents.deadLetteredAt}`.as("dead_lettered_at"),
      })
      .from(webhookEvents)
      .innerJoin(webhookSubscriptions, eq(webhookSubscriptions.id, webhookEvents.webhookSubscriptionId))
      .where(isNotNull(webhookEvents.deadLetteredAt))
      .orderBy(desc(webhookEvents.deadLetteredAt), desc(webhookEvents.id))
      .limit(DEAD_LETTERS_LISTED),
  ] as const;
}

type Grouped = { month: string; currency: string | null; total: number; n: number };

/** Paid and refunded totals side by side, per month and currency, newest month first. */
function monthsOf(paid: readonly Grouped[], refunded: readonly Grouped[]): MonthRevenue[] {
  const periods = new Map<string, MonthRevenue>();
  const entry = (g: Grouped) => {
    const key = `${g.month} ${g.currency ?? ""}`;
    let found = periods.get(key);
    if (!found) {
      found = { month: g.month, currency: g.currency, paid: 0, paidOrders: 0, refunded: 0, refundedOrders: 0 };
      periods.set(key, found);
    }
    return found;
  };
  for (const g of paid) Object.assign(entry(g), { paid: cents(g.total), paidOrders: g.n });
  for (const g of refunded) Object.assign(entry(g), { refunded: cents(g.total), refundedOrders: g.n });
  return [...periods.values()].sort(
    (a, b) => b.month.localeCompare(a.month) || (a.currency ?? "").localeCompare(b.currency ?? ""),
  );
}

/** A release's rollout state at `now`, or undefined when it reaches everyone with nothing ahead. */
function rolloutOf(release: ReleaseRead, now: number): RollingRelease | undefined {
  const ahead = (release.rolloutSchedule ?? [])
    .filter((step) => Date.parse(step.at) > now)
    .sort((a, b) => Date.parse(a.at) - Date.parse(b.at));
  const percentage = effectivePercentage(release, now) ?? 100;
  let state: RolloutState;
  if (release.halted) state = "halted";
  else if (ahead.length > 0) state = "scheduled";
  else if (percentage < 100) state = "staged";
  else return undefined;
  return {
    productId: release.productId,
    productName: release.productName,
    releaseId: release.id,
    version: release.version,
    channel: release.channel,
    state,
    percentage,
    nextStep: ahead[0] ?? null,
    haltedAt: release.haltedAt,
    haltReason: release.haltReason,
    haltNote: release.haltNote,
  };
}

/**
 * The overview at `now`, in one D1 round trip. `withWebhooks`: whether the caller may see webhook deliveries
 * (the managers); without it the answer has no `webhooks`.
 */
export async function readOverview(db: Db, now: Date, withWebhooks: boolean): Promise<Overview> {
  const [first, ...rest] = statements(db, now);
  const [counted, expiring, tokens, paid, refunded, releases, deliveries, deadLetters] = await db.batch([
    first,
    ...rest,
  ]);
  const license = counted[0];
  const rolling = releases.flatMap((r) => rolloutOf(r, now.getTime()) ?? []);
  const overview: Overview = {
    serverTime: now.toISOString(),
    licenses: {
      active: license?.active ?? 0,
      expiringSoon: license?.expiringSoon ?? 0,
      expiringWithinDays: EXPIRING_DAYS,
      expired: license?.expired ?? 0,
      revoked: license?.revoked ?? 0,
      expiring,
    },
    seats: {
      floatingInUse: tokens[0]?.floatingInUse ?? 0,
      floatingAllowed: license?.floatingAllowed ?? 0,
      activatedMachines: tokens[0]?.activatedMachines ?? 0,
    },
    revenue: { months: REVENUE_MONTHS, since: monthStart(now, REVENUE_MONTHS - 1), periods: monthsOf(paid, refunded) },
    releases: {
      rollingOut: rolling.filter((r) => r.state !== "halted").length,
      halted: rolling.filter((r) => r.state === "halted").length,
      list: rolling,
    },
  };
  if (withWebhooks)
    overview.webhooks = {
      deadLetters: deliveries[0]?.deadLetters ?? 0,
      failing: deliveries[0]?.failing ?? 0,
      recentDeadLetters: deadLetters,
    };
  return overview;
}
