/**
 * What a verified provider event does (CONTRACT section 10), free of HTTP. Every change goes through the services
 * the Management API uses (licensing/license-writes.ts, licensing/order-writes.ts, records/customers.ts, mail/), so
 * webhooks, the audit trail and license HMACs follow. This file receives events and applies them to a purchase;
 * a purchase event's making of order and licenses is fulfilment.ts, the purchase's row and claims purchase-state.ts.
 *
 * Exactly once: the event's row in commerce_events is claimed with one INSERT … ON CONFLICT statement, and only the
 * request whose statement inserted (or took back an `unmapped` / `failed` row) acts; a redelivery or a concurrent
 * duplicate finds the row and changes nothing. A failure marks the row `failed` and answers 500, so the provider's
 * retry tries again; a request that stopped without marking it (its Worker ended) leaves it `processing`, which a
 * retry takes back after PROCESSING_LEASE_MS.
 *
 * Never half-written: a purchase is made by one purchase event at a time (`claimMaking`, one conditional UPDATE on
 * the purchase row), and a retry of one that failed part-way takes the order it made, adds the missing lines and
 * only the missing licenses (those of the order counted per template), then completes the purchase (`claimCompletion`,
 * once) and sends the license email with every key. Licenses are stored in D1 batches (`issueLicenses`), and a
 * purchase of more than Commerce:MaxLicensesPerPurchase writes nothing and stays retryable.
 *
 * Any order: an event finds its purchase by any id the provider uses for it (commerce_refs); the purchase is found
 * or opened and every id linked to it in one D1 batch, so events of one purchase arriving at once open one row. The
 * purchase row keeps the state events left (refunded, canceling, the period's end), each saved in one conditional
 * UPDATE. Until the purchase is complete an event about it is `remembered`, and the purchase event, completing it,
 * applies the state it reads in the same statement that completes it (so an event arriving while the licenses are
 * made is applied by one side or the other, never lost):
 *
 * | purchase state when the payment arrives | order                        | licenses                        | email |
 * |-----------------------------------------|------------------------------|---------------------------------|-------|
 * | active, pastDue                         | Completed, Paid              | made; expire at the latest period end known | yes |
 * | canceling, canceled                     | Completed, Paid              | made; expire at the cancellation | yes  |
 * | refunded, disputed                      | Cancelled, Refunded / Paid   | none                            | no    |
 *
 * Once the purchase is complete, events act on its licenses at once:
 *   renewal            expireDate and supportExpireDate -> the period's end, for what it paid for (a downgrade
 *                      renews fewer; the latest period sets the seats); an earlier period delivered late only
 *                      lengthens
 *   refund, dispute    revoked; the order Cancelled (refund: payment Refunded)
 *   cancel             at the end of the period (scheduled before, or at the known period end): expire then;
 *                      earlier: revoked, the order Cancelled
 *   cancelAtPeriodEnd  expireDate -> that instant
 *   pastDue            expireDate -> now + Commerce:GraceDays when it ended before that (a perpetual one stays)
 */
import { and, eq, sql } from "drizzle-orm";
import { clock, nowIso } from "../kernel/clock";
import type { Db } from "../db/client";
import { commerceEvents, commercePurchases } from "../db/schema";
import type { ServiceContext } from "../http/context";
import { changeOrder } from "../licensing/order-writes";
import type { Provider, ProviderEvent } from "./provider-events";
import type { EventStatus, PurchaseState } from "./records";

import { applyPurchase, applyPeriods } from "./fulfilment";
import {
  ENDED,
  ambiguous,
  PERIOD_END_SLACK_MS,
  type PurchaseRow,
  type Result,
  moveExpiry,
  foldNamed,
  openPurchase,
  orderStatus,
  paymentStatus,
  readPurchase,
  revokeAll,
  savePurchase,
  laterPeriod,
  paidPeriodsOf,
  rememberPeriod,
} from "./purchase-state";

/** What became of an event: `duplicate` when it had been received before (nothing changed). */
export interface EventOutcome {
  status: EventStatus | "duplicate";
  detail: string;
  orderId?: number | null;
}

/**
 * How long a claimed event may stay `processing` before a redelivery takes it back. A request that acts on an event
 * ends within seconds or marks it `failed`; one that never came back (its Worker stopped: a deploy, a CPU limit) left
 * it `processing`, and the provider's retry must still complete it. Within the lease a redelivery is a concurrent
 * duplicate (CONTRACT section 10: 200, nothing changed); past it, the request that took the event is gone.
 */
export const PROCESSING_LEASE_MS = 10 * 60_000;

/** Claims the event: the row's id when this request is the one to act on it, undefined for a duplicate. */
async function claim(db: Db, provider: Provider, event: ProviderEvent): Promise<number | undefined> {
  const now = nowIso();
  const leaseEnded = new Date(clock.now().getTime() - PROCESSING_LEASE_MS).toISOString();
  const [row] = await db
    .insert(commerceEvents)
    .values({
      provider,
      eventId: event.eventId,
      type: event.type,
      action: event.happening.action,
      status: "processing",
      purchaseRef: event.refs[0] ?? null,
      createdAt: now,
      updatedAt: now,
    })
    .onConflictDoUpdate({
      target: [commerceEvents.provider, commerceEvents.eventId],
      set: { status: "processing", updatedAt: now },
      // Only an event that did not finish may be taken again: one that wrote nothing (a mapping added since, a failure
      // retried), or one whose request stopped half-way past the lease (its work is completed as a failure's is).
      setWhere: sql`${commerceEvents.status} IN ('unmapped', 'failed') OR (${commerceEvents.status} = 'processing' AND ${commerceEvents.updatedAt} < ${leaseEnded})`,
    })
    .returning({ id: commerceEvents.id });
  return row?.id;
}

async function finish(db: Db, id: number, result: Result): Promise<void> {
  await db
    .update(commerceEvents)
    .set({
      status: result.status,
      detail: result.detail.slice(0, 2000),
      purchaseId: result.purchase?.id ?? null,
      orderId: result.purchase?.orderId ?? null,
      updatedAt: nowIso(),
    })
    .where(eq(commerceEvents.id, id));
}

/** A refund or a dispute on a completed purchase: its licenses revoked, the order cancelled (a refund: Refunded). */
async function revokeForMoneyBack(ctx: ServiceContext, purchase: PurchaseRow, kind: "refund" | "dispute") {
  const n = await revokeAll(ctx, purchase);
  await changeOrder(ctx, purchase.orderId!, {
    status: orderStatus("Cancelled"),
    ...(kind === "refund" ? { paymentStatus: paymentStatus("Refunded") } : {}),
  });
  return n;
}

async function applyToPurchase(ctx: ServiceContext, provider: Provider, event: ProviderEvent): Promise<Result> {
  const happening = event.happening;
  if (event.refs.length === 0) return { status: "ignored", detail: "The event names no purchase" };
  const named = await foldNamed(ctx.db, provider, event, await openPurchase(ctx.db, provider, event));
  if ("ambiguous" in named) return ambiguous(ctx, provider, event, named.ambiguous);
  const opened = named.purchase;
  // Each save is one conditional UPDATE and answers the row as saved: whether the purchase is complete is read
  // in the same statement, so an event either acts on the licenses itself or is remembered and applied by the
  // purchase event completing them (claimCompletion reads the state after it), never neither.
  const save = async (values: Partial<Record<keyof PurchaseRow, unknown>>, unless: readonly PurchaseState[] = []) => {
    const row = await savePurchase(ctx.db, opened.id, values, unless);
    return row ? { row, acting: row.completedAt !== null } : undefined;
  };
  const already = async (): Promise<Result> => {
    const now = await readPurchase(ctx.db, opened.id);
    return { status: "applied", detail: `Already ${now.state}`, purchase: now };
  };
  const remembered = (what: string, purchase: PurchaseRow): Result => ({
    status: "remembered",
    detail: `${what}; remembered until the purchase's payment arrives`,
    purchase,
  });
  /** Revokes a completed purchase's licenses for a refund or a dispute, or remembers it until the purchase completes. */
  const end = async (kind: "refund" | "dispute"): Promise<Result> => {
    const saved = await save({ state: kind === "refund" ? "refunded" : "disputed" });
    if (!saved) return already();
    const purchase = saved.row;
    if (!saved.acting) return remembered(kind === "refund" ? "Refunded" : "Disputed", purchase);
    const n = await revokeForMoneyBack(ctx, purchase, kind);
    return { status: "applied", detail: `${n} license(s) revoked (${kind})`, purchase };
  };
  switch (happening.action) {
    case "link": {
      // A refund or a dispute that arrived before anything tied its payment to this purchase applies now.
      if (named.carried && opened.completedAt !== null) {
        const kind = named.carried === "refunded" ? "refund" : "dispute";
        const n = await revokeForMoneyBack(ctx, opened, kind);
        return {
          status: "applied",
          detail: `Payment linked; its earlier ${kind} revoked ${n} license(s)`,
          purchase: opened,
        };
      }
      if (opened.completedAt === null) return remembered("Payment linked to its invoice", opened);
      return { status: "applied", detail: "Payment linked to its invoice", purchase: opened };
    }
    case "renewal": {
      const period = { end: happening.periodEnd, lines: happening.lines?.length ? happening.lines : null };
      const saved = await save({
        // Paid: active again, unless ended, or this is an earlier period than one known (its state stands).
        state: sql`CASE WHEN ${commercePurchases.state} IN ('refunded', 'disputed', 'canceled') OR ${commercePurchases.periodEnd} > ${happening.periodEnd} THEN ${commercePurchases.state} ELSE 'active' END`,
        paidPeriods: rememberPeriod(period),
        periodEnd: laterPeriod(happening.periodEnd),
      });
      if (!saved) return already();
      const purchase = saved.row;
      // Remembered with what it paid for: the purchase event completing it renews that (fulfilment.ts).
      if (!saved.acting) return remembered(`Paid until ${happening.periodEnd}`, purchase);
      // Each license to the latest period that paid for it: a downgrade renews fewer licenses or seats, and an
      // earlier period delivered late still counts for what the later ones did not pay for. Past due or canceling,
      // an earlier period is only kept (its grace or its end stands).
      const latest = purchase.periodEnd === happening.periodEnd;
      if (!latest && purchase.state !== "active")
        return { status: "applied", detail: `An earlier period (to ${happening.periodEnd}); kept`, purchase };
      const n = await applyPeriods(ctx, provider, purchase, paidPeriodsOf(purchase));
      return { status: "applied", detail: `${n} license(s) renewed until ${happening.periodEnd}`, purchase };
    }
    case "refund":
    case "dispute":
      return end(happening.action);
    case "cancel": {
      const atPeriodEnd =
        opened.state === "canceling" ||
        (opened.periodEnd !== null && Date.parse(happening.at) >= Date.parse(opened.periodEnd) - PERIOD_END_SLACK_MS);
      const saved = await save({ state: "canceled", periodEnd: happening.at }, ENDED);
      if (!saved) return already();
      const purchase = saved.row;
      if (!saved.acting) return remembered(`Canceled at ${happening.at}`, purchase);
      if (atPeriodEnd) {
        const n = await moveExpiry(ctx, purchase, happening.at, (c) => !c || c > happening.at, false);
        return {
          status: "applied",
          detail: `Ended at the period's end: ${n} license(s) expire ${happening.at}`,
          purchase,
        };
      }
      const n = await revokeAll(ctx, purchase);
      await changeOrder(ctx, purchase.orderId!, { status: orderStatus("Cancelled") });
      return { status: "applied", detail: `Canceled at once: ${n} license(s) revoked`, purchase };
    }
    case "cancelAtPeriodEnd": {
      const saved = await save({ state: "canceling", periodEnd: happening.at }, ENDED);
      if (!saved) return already();
      const purchase = saved.row;
      if (!saved.acting) return remembered(`Canceling at ${happening.at}`, purchase);
      const n = await moveExpiry(ctx, purchase, happening.at, (c) => c !== happening.at, false);
      return { status: "applied", detail: `Canceling: ${n} license(s) expire ${happening.at}`, purchase };
    }
    case "pastDue": {
      const saved = await save({ state: "pastDue" }, [...ENDED, "canceled"]);
      if (!saved) return already();
      const purchase = saved.row;
      if (!saved.acting) return remembered("Past due", purchase);
      // The grace runs from the end of the paid period, so each past-due event (a retry of the payment) names the
      // same end rather than restarting it; a purchase whose period is not known yet takes now.
      const days = ctx.config["Commerce:GraceDays"];
      const from = purchase.periodEnd !== null ? Date.parse(purchase.periodEnd) : clock.now().getTime();
      const graceEnd = new Date(from + days * 86_400_000).toISOString();
      const n = await moveExpiry(ctx, purchase, graceEnd, (c) => c !== null && c < graceEnd, false);
      return {
        status: "applied",
        detail: `Past due: ${n} license(s) usable until ${graceEnd} (Commerce:GraceDays ${days})`,
        purchase,
      };
    }
    default:
      return { status: "ignored", detail: "Nothing to do", purchase: opened };
  }
}

/** Acts on one verified provider event, exactly once per (provider, event id). */
export async function receiveEvent(
  ctx: ServiceContext,
  provider: Provider,
  event: ProviderEvent,
): Promise<EventOutcome> {
  const id = await claim(ctx.db, provider, event);
  if (id === undefined) {
    const first = await ctx.db
      .select({ orderId: commerceEvents.orderId, status: commerceEvents.status })
      .from(commerceEvents)
      .where(and(eq(commerceEvents.provider, provider), eq(commerceEvents.eventId, event.eventId)))
      .get();
    return {
      status: "duplicate",
      detail: `Event ${event.eventId} was received before (${first?.status ?? "?"})`,
      orderId: first?.orderId ?? null,
    };
  }
  let result: Result;
  try {
    const happening = event.happening;
    if (happening.action === "ignored") result = { status: "ignored", detail: happening.why };
    else if (happening.action === "purchase") result = await applyPurchase(ctx, provider, event, happening, id);
    else result = await applyToPurchase(ctx, provider, event);
  } catch (e) {
    const reason = e instanceof Error ? e.message : String(e);
    await finish(ctx.db, id, { status: "failed", detail: reason });
    throw e;
  }
  await finish(ctx.db, id, result);
  return { status: result.status, detail: result.detail, orderId: result.purchase?.orderId ?? null };
}
