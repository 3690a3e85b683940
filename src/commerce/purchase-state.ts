/**
 * A purchase as the commerce tables hold it (CONTRACT section 10), free of HTTP: its row (opened by the first event
 * that names any of its ids, one D1 batch), the claims that let one event make its order and one complete it, and
 * what ends or moves its licenses (a refund revokes them, a renewal or a cancellation moves their expiry). The
 * events themselves are received in purchases.ts; what a purchase event makes is fulfilment.ts.
 */
import { and, eq, isNull, sql } from "drizzle-orm";
import { nowIso } from "../kernel/clock";
import type { Db } from "../db/client";
import { commerceEvents, commercePurchases, commerceRefs, licenses } from "../db/schema";
import { insertedRow } from "../db/insert-select";
import type { ServiceContext } from "../http/context";
import { changeLicense } from "../licensing/license-writes";
import { OrderStatus, PaymentStatus } from "../records/orders";
import type { Happening, Provider, ProviderEvent, PurchaseLine } from "./provider-events";
import type { EventStatus, PurchaseState } from "./records";

export type PurchaseRow = typeof commercePurchases.$inferSelect;
export type Purchase = Extract<Happening, { action: "purchase" }>;

export interface Result {
  status: EventStatus;
  detail: string;
  purchase?: PurchaseRow;
}

export const orderStatus = (name: (typeof OrderStatus)[number]) => OrderStatus.indexOf(name);
export const paymentStatus = (name: (typeof PaymentStatus)[number]) => PaymentStatus.indexOf(name);
/** What an event says of a purchase whose order an earlier event made. */
export const made = (p: PurchaseRow) => `Order ${p.orderId} was made by an earlier event`;
/** Purchase states in which the licenses are gone (revoked, or never made). */
export const ENDED: readonly PurchaseState[] = ["refunded", "disputed"];
/** A cancellation this close to the known period end is the end of the period, not an immediate one. */
export const PERIOD_END_SLACK_MS = 3_600_000;

/**
 * The purchase of the event: the one any of its ids names, else a new one, and every id of the event linked to it.
 * One D1 batch (a transaction), so two events of one purchase arriving at once (an invoice and the refund of its
 * charge, naming different ids) open one row: the second finds the ids the first linked.
 */
export async function openPurchase(db: Db, provider: Provider, event: ProviderEvent): Promise<PurchaseRow> {
  const refs = event.refs;
  const ref = refs[0];
  if (!ref) throw new Error(`commerce ${provider} event ${event.eventId} names no purchase`);
  const now = nowIso();
  const named = sql`SELECT value FROM json_each(${JSON.stringify(refs)})`;
  // The purchase the event's ids already name (the oldest, should two ever have been linked).
  const known = sql`(SELECT min(${commerceRefs.purchaseId}) FROM ${commerceRefs} WHERE ${commerceRefs.provider} = ${provider} AND ${commerceRefs.ref} IN (${named}))`;
  const [, , rows] = await db.batch([
    db
      .insert(commercePurchases)
      .select(
        db
          .select(
            insertedRow(commercePurchases, {
              provider,
              purchaseRef: ref,
              customerRef: event.customerRef,
              createdAt: now,
              updatedAt: now,
            }),
          )
          .from(sql`(SELECT 1)`)
          .where(sql`${known} IS NULL`),
      )
      .onConflictDoNothing(),
    db
      .insert(commerceRefs)
      .select(
        db
          .select(
            insertedRow(commerceRefs, {
              provider,
              ref: sql`value`,
              purchaseId: sql`coalesce(${known}, (SELECT ${commercePurchases.id} FROM ${commercePurchases} WHERE ${commercePurchases.provider} = ${provider} AND ${commercePurchases.purchaseRef} = ${ref}))`,
            }),
          )
          .from(sql`json_each(${JSON.stringify(refs)})`)
          .where(sql`true`),
      )
      .onConflictDoNothing(),
    db.select().from(commercePurchases).where(sql`${commercePurchases.id} = ${known}`),
  ]);
  const purchase = rows[0];
  if (!purchase) throw new Error(`commerce purchase ${provider} ${ref} could not be opened`);
  return purchase;
}

/**
 * Saves values on the purchase, unless its state is one of `unless` (checked in the same statement, so an event
 * never overwrites what a concurrent one decided); the row as saved, or undefined when its state said no.
 */
export async function savePurchase(
  db: Db,
  id: number,
  values: Partial<Record<keyof PurchaseRow, unknown>>,
  unless: readonly PurchaseState[] = [],
): Promise<PurchaseRow | undefined> {
  const [row] = await db
    .update(commercePurchases)
    .set({ ...(values as Partial<PurchaseRow>), updatedAt: nowIso() })
    .where(
      unless.length
        ? and(
            eq(commercePurchases.id, id),
            sql`${commercePurchases.state} NOT IN (SELECT value FROM json_each(${JSON.stringify(unless)}))`,
          )
        : eq(commercePurchases.id, id),
    )
    .returning();
  return row;
}

/** The later of the stored period end and `value` (SQL: concurrent events never move it back). */
export const laterPeriod = (value: string | null) =>
  value === null
    ? sql`${commercePurchases.periodEnd}`
    : sql`CASE WHEN ${commercePurchases.periodEnd} IS NULL OR ${commercePurchases.periodEnd} < ${value} THEN ${value} ELSE ${commercePurchases.periodEnd} END`;

/** A renewal's period: its end and, when the renewal said, what it paid for. */
export interface PaidPeriod {
  end: string;
  lines: PurchaseLine[] | null;
}

/** Adds a renewal's period to the purchase's (SQL, in the renewal's own UPDATE, so two arriving at once are both kept). */
export const rememberPeriod = (period: PaidPeriod) =>
  sql`json_insert(coalesce(${commercePurchases.paidPeriods}, '[]'), '$[#]', json(${JSON.stringify(period)}))`;

/** The renewals' periods of a purchase, earliest first. */
export const paidPeriodsOf = (p: Pick<PurchaseRow, "paidPeriods">): PaidPeriod[] =>
  ((p.paidPeriods ? JSON.parse(p.paidPeriods) : []) as PaidPeriod[]).sort(
    (x, y) => Date.parse(x.end) - Date.parse(y.end),
  );

export async function readPurchase(db: Db, id: number): Promise<PurchaseRow> {
  const row = await db.select().from(commercePurchases).where(eq(commercePurchases.id, id)).get();
  if (!row) throw new Error(`commerce purchase ${id} vanished`);
  return row;
}

/**
 * Makes this event (its commerce_events row) the one that makes the purchase's order and licenses, in one UPDATE:
 * free, already this event's (its retry), or left by an event that is no longer running (it failed). Undefined
 * when the purchase is complete or another event of it is making it now.
 */
export async function claimMaking(db: Db, purchaseId: number, eventRowId: number): Promise<PurchaseRow | undefined> {
  const maker = commercePurchases.makerEventId;
  const [row] = await db
    .update(commercePurchases)
    .set({ makerEventId: eventRowId, updatedAt: nowIso() })
    .where(
      and(
        eq(commercePurchases.id, purchaseId),
        isNull(commercePurchases.completedAt),
        sql`(${maker} IS NULL OR ${maker} = ${eventRowId} OR NOT EXISTS (SELECT 1 FROM ${commerceEvents} WHERE ${commerceEvents.id} = ${maker} AND ${commerceEvents.status} = 'processing'))`,
      ),
    )
    .returning();
  return row;
}

/**
 * Marks the purchase complete (every license made), once: the row with the state other events left meanwhile, or
 * undefined when it was complete already. Only the request that completes it sends the license email.
 */
export async function claimCompletion(db: Db, purchaseId: number): Promise<PurchaseRow | undefined> {
  const now = nowIso();
  const [row] = await db
    .update(commercePurchases)
    .set({ completedAt: now, updatedAt: now })
    .where(and(eq(commercePurchases.id, purchaseId), isNull(commercePurchases.completedAt)))
    .returning();
  return row;
}

/** The licenses a purchase's order holds. */
export function purchaseLicenses(db: Db, purchase: PurchaseRow) {
  return db
    .select()
    .from(licenses)
    .where(eq(licenses.orderId, purchase.orderId ?? -1))
    .all();
}

export async function revokeAll(ctx: ServiceContext, purchase: PurchaseRow): Promise<number> {
  let n = 0;
  for (const license of await purchaseLicenses(ctx.db, purchase))
    if (!license.revoked) {
      await changeLicense(ctx, license.id, { revoked: true });
      n++;
    }
  return n;
}

/** Moves the expiry of the purchase's live licenses to `to` where `when` says so. */
export async function moveExpiry(
  ctx: ServiceContext,
  purchase: PurchaseRow,
  to: string,
  when: (current: string | null) => boolean,
  support: boolean,
): Promise<number> {
  let n = 0;
  for (const license of await purchaseLicenses(ctx.db, purchase))
    if (!license.revoked && when(license.expireDate)) {
      await changeLicense(ctx, license.id, { expireDate: to, ...(support ? { supportExpireDate: to } : {}) });
      n++;
    }
  return n;
}

/** A purchase row opened by an event that named only a payment: no order made, none being made, never completed. */
const isOrphan = (p: PurchaseRow) => p.orderId === null && p.completedAt === null && p.makerEventId === null;

/** What foldNamed found: the one purchase the event is about, or the purchases that make its ids ambiguous. */
export type Named = { purchase: PurchaseRow; carried: PurchaseState | undefined } | { ambiguous: PurchaseRow[] };

/**
 * The one purchase an event's ids name, once openPurchase linked them. Two purchases named at once is either an
 * orphan meeting its purchase (a Stripe refund or dispute names only the payment, and arrived before the
 * invoice_payment.paid that ties the payment to its invoice) or two purchases of their own. An orphan is folded into
 * the purchase, in one D1 batch: its ids and events move over, its row goes, and a refund or dispute it remembered is
 * carried (the caller applies it). Two purchases with orders are ambiguous: nothing changes (the caller logs it).
 */
export async function foldNamed(db: Db, provider: Provider, event: ProviderEvent, opened: PurchaseRow): Promise<Named> {
  const named = await db
    .select()
    .from(commercePurchases)
    .where(
      sql`${commercePurchases.id} IN (SELECT ${commerceRefs.purchaseId} FROM ${commerceRefs} WHERE ${commerceRefs.provider} = ${provider} AND ${commerceRefs.ref} IN (SELECT value FROM json_each(${JSON.stringify(event.refs)})))`,
    )
    .orderBy(commercePurchases.id)
    .all();
  if (named.length <= 1) return { purchase: named[0] ?? opened, carried: undefined };
  const owned = named.filter((p) => !isOrphan(p));
  if (owned.length > 1) return { ambiguous: owned };
  const kept = owned[0] ?? named[0]!;
  const folded = named.filter((p) => p.id !== kept.id);
  const ids = JSON.stringify(folded.map((p) => p.id));
  const states = folded.map((p) => p.state as PurchaseState);
  const carried = states.find((state) => ENDED.includes(state));
  const inFolded = (column: unknown) => sql`${column} IN (SELECT value FROM json_each(${ids}))`;
  await db.batch([
    db.update(commerceRefs).set({ purchaseId: kept.id }).where(inFolded(commerceRefs.purchaseId)),
    db.update(commerceEvents).set({ purchaseId: kept.id }).where(inFolded(commerceEvents.purchaseId)),
    db
      .delete(commercePurchases)
      .where(
        and(
          inFolded(commercePurchases.id),
          isNull(commercePurchases.orderId),
          isNull(commercePurchases.completedAt),
          isNull(commercePurchases.makerEventId),
        ),
      ),
  ]);
  // What the folded rows remembered carries over: a refund or dispute, else a cancellation or a missed payment
  // (over an active purchase only), and the latest period end with what it was paid for (a renewal that came first).
  const moved = carried ?? (["canceled", "canceling", "pastDue"] as const).find((state) => states.includes(state));
  const latest = folded.reduce<PurchaseRow | undefined>(
    (a, p) => (p.periodEnd !== null && (!a?.periodEnd || p.periodEnd > a.periodEnd) ? p : a),
    undefined,
  );
  const periods = folded.flatMap(paidPeriodsOf);
  const state = commercePurchases.state;
  if (moved || latest || periods.length)
    await savePurchase(
      db,
      kept.id,
      {
        ...(moved ? { state: carried ?? sql`CASE WHEN ${state} = 'active' THEN ${moved} ELSE ${state} END` } : {}),
        ...(latest ? { periodEnd: laterPeriod(latest.periodEnd) } : {}),
        ...(periods.length
          ? {
              paidPeriods: sql`(SELECT json_group_array(json(value)) FROM (SELECT value FROM json_each(coalesce(${commercePurchases.paidPeriods}, '[]')) UNION ALL SELECT value FROM json_each(${JSON.stringify(periods)})))`,
            }
          : {}),
      },
      carried ? ENDED : [],
    );
  return { purchase: await readPurchase(db, kept.id), carried };
}

/** An event whose ids name two purchases with orders: nothing changes, and the vendor is told in the log. */
export function ambiguous(
  ctx: ServiceContext,
  provider: Provider,
  event: ProviderEvent,
  purchases: PurchaseRow[],
): Result {
  const which = purchases.map((p) => `${p.purchaseRef} (order ${p.orderId})`).join(", ");
  const detail = `The event's ids name more than one purchase (${which}): nothing changed`;
  ctx.log?.warning(`Commerce: ${provider} event ${event.eventId}: ${detail}`, {
    properties: { provider, eventId: event.eventId, type: event.type, refs: event.refs },
  });
  return { status: "failed", detail };
}
