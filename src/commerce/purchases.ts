/**
 * What a verified provider event does (CONTRACT section 10), free of HTTP. Every change goes through the services
 * the Management API uses (licensing/license-writes.ts, order-writes.ts, customers.ts, mail/), so webhooks, the
 * audit trail and license HMACs follow.
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
 *   renewal            expireDate and supportExpireDate -> the period's end (the latest period known only)
 *   refund, dispute    revoked; the order Cancelled (refund: payment Refunded)
 *   cancel             at the end of the period (scheduled before, or at the known period end): expire then;
 *                      earlier: revoked, the order Cancelled
 *   cancelAtPeriodEnd  expireDate -> that instant
 *   pastDue            expireDate -> now + Commerce:GraceDays when it ended before that (a perpetual one stays)
 */
import { and, eq, inArray, isNull, sql } from "drizzle-orm";
import { clock, nowIso } from "../kernel/clock";
import type { Db } from "../db/client";
import {
  commerceEvents,
  commerceMappings,
  commercePurchases,
  commerceRefs,
  customers,
  licenseTemplates,
  licenses,
  orderProducts,
  orders,
} from "../db/schema";
import { insertedRow } from "../db/insert-select";
import type { ServiceContext } from "../http/context";
import { type Row, insertRow, requireById } from "../http/repository";
import { Customer, newCustomerValues } from "../records/customers";
import { changeLicense, issueLicenses } from "../licensing/license-writes";
import { addOrderLine, changeOrder, createOrder } from "../licensing/order-writes";
import { Order, OrderStatus, PaymentStatus } from "../records/orders";
import { licensesMail } from "../mail/license-mail";
import { sendMail } from "../mail/send";
import type { Happening, Provider, ProviderEvent, PurchaseLine } from "./provider-events";
import type { EventStatus, PurchaseState, QuantityMode } from "./records";

type PurchaseRow = typeof commercePurchases.$inferSelect;
type Purchase = Extract<Happening, { action: "purchase" }>;

/** What became of an event: `duplicate` when it had been received before (nothing changed). */
export interface EventOutcome {
  status: EventStatus | "duplicate";
  detail: string;
  orderId?: number | null;
}

interface Result {
  status: EventStatus;
  detail: string;
  purchase?: PurchaseRow;
}

const orderStatus = (name: (typeof OrderStatus)[number]) => OrderStatus.indexOf(name);
const paymentStatus = (name: (typeof PaymentStatus)[number]) => PaymentStatus.indexOf(name);
/** Purchase states in which the licenses are gone (revoked, or never made). */
const ENDED: readonly PurchaseState[] = ["refunded", "disputed"];
/** A cancellation this close to the known period end is the end of the period, not an immediate one. */
const PERIOD_END_SLACK_MS = 3_600_000;

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

/**
 * The purchase of the event: the one any of its ids names, else a new one, and every id of the event linked to it.
 * One D1 batch (a transaction), so two events of one purchase arriving at once (an invoice and the refund of its
 * charge, naming different ids) open one row: the second finds the ids the first linked.
 */
async function openPurchase(db: Db, provider: Provider, event: ProviderEvent): Promise<PurchaseRow> {
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
async function savePurchase(
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
const laterPeriod = (value: string | null) =>
  value === null
    ? sql`${commercePurchases.periodEnd}`
    : sql`CASE WHEN ${commercePurchases.periodEnd} IS NULL OR ${commercePurchases.periodEnd} < ${value} THEN ${value} ELSE ${commercePurchases.periodEnd} END`;

async function readPurchase(db: Db, id: number): Promise<PurchaseRow> {
  const row = await db.select().from(commercePurchases).where(eq(commercePurchases.id, id)).get();
  if (!row) throw new Error(`commerce purchase ${id} vanished`);
  return row;
}

/**
 * Makes this event (its commerce_events row) the one that makes the purchase's order and licenses, in one UPDATE:
 * free, already this event's (its retry), or left by an event that is no longer running (it failed). Undefined
 * when the purchase is complete or another event of it is making it now.
 */
async function claimMaking(db: Db, purchaseId: number, eventRowId: number): Promise<PurchaseRow | undefined> {
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
async function claimCompletion(db: Db, purchaseId: number): Promise<PurchaseRow | undefined> {
  const now = nowIso();
  const [row] = await db
    .update(commercePurchases)
    .set({ completedAt: now, updatedAt: now })
    .where(and(eq(commercePurchases.id, purchaseId), isNull(commercePurchases.completedAt)))
    .returning();
  return row;
}

/** The licenses a purchase's order holds. */
function purchaseLicenses(db: Db, purchase: PurchaseRow) {
  return db
    .select()
    .from(licenses)
    .where(eq(licenses.orderId, purchase.orderId ?? -1))
    .all();
}

// ---------------------------------------------------------------------------------------------------------------
// Purchase

interface MappedLine {
  line: PurchaseLine;
  mapping: typeof commerceMappings.$inferSelect;
  template: typeof licenseTemplates.$inferSelect;
}

/** Each line's mapping (its most specific id that has one) and template, or the lines that have none. */
async function mapLines(
  db: Db,
  provider: Provider,
  lines: readonly PurchaseLine[],
): Promise<{ mapped: MappedLine[]; unmapped: PurchaseLine[] }> {
  const ids = [...new Set(lines.flatMap((l) => l.ids))];
  const mappings = ids.length
    ? await db
        .select()
        .from(commerceMappings)
        .where(and(eq(commerceMappings.provider, provider), inArray(commerceMappings.externalId, ids)))
        .all()
    : [];
  const templateIds = [...new Set(mappings.map((m) => m.templateId))];
  const templates = templateIds.length
    ? await db.select().from(licenseTemplates).where(inArray(licenseTemplates.id, templateIds)).all()
    : [];
  const mapped: MappedLine[] = [];
  const unmapped: PurchaseLine[] = [];
  for (const line of lines) {
    const mapping = line.ids.map((id) => mappings.find((m) => m.externalId === id)).find(Boolean);
    const template = mapping && templates.find((t) => t.id === mapping.templateId);
    if (mapping && template) mapped.push({ line, mapping, template });
    else unmapped.push(line);
  }
  return { mapped, unmapped };
}

/** The customer with the buyer's email, or a new one. */
async function buyerCustomer(ctx: ServiceContext, purchase: Purchase, fallbackName: string): Promise<Row> {
  const email = purchase.buyer.email?.trim() || null;
  if (email) {
    const found = await ctx.db
      .select()
      .from(customers)
      .where(sql`lower(${customers.email}) = lower(${email})`)
      .limit(1)
      .get();
    if (found) return found;
  }
  const words = (purchase.buyer.name ?? "").trim().split(/\s+/).filter(Boolean);
  const lastName = words.length ? words[words.length - 1] : email ? null : fallbackName;
  const firstName = words.length > 1 ? words.slice(0, -1).join(" ") : null;
  return insertRow(ctx.db, Customer, newCustomerValues({ email, firstName, lastName }));
}

/** How many licenses the mapped lines make: N for a line in licenses mode, one for a line in seats mode. */
const licensesWanted = (mapped: readonly MappedLine[]) =>
  mapped.reduce((n, { line, mapping }) => n + (mapping.quantityMode === "seats" ? 1 : line.quantity), 0);

async function applyPurchase(
  ctx: ServiceContext,
  provider: Provider,
  event: ProviderEvent,
  happening: Purchase,
  eventRowId: number,
): Promise<Result> {
  // Every line mapped first: an unmapped one writes nothing at all (the event stays retryable).
  const { mapped, unmapped } = await mapLines(ctx.db, provider, happening.lines);
  if (happening.lines.length === 0 || unmapped.length > 0) {
    const named = unmapped.map((l) => l.ids.join(" / ")).join(", ") || "no items";
    ctx.log?.warning(
      `Commerce: ${provider} event ${event.eventId} sells what no mapping names (${named}); nothing written`,
      {
        properties: { provider, eventId: event.eventId, type: event.type, unmapped: unmapped.map((l) => l.ids) },
      },
    );
    return { status: "unmapped", detail: `No mapping for ${named}: map it, then redeliver the event` };
  }
  // Over the most one purchase makes: nothing written, logged, and retryable like an unmapped one.
  const wanted = licensesWanted(mapped);
  const most = ctx.config["Commerce:MaxLicensesPerPurchase"];
  if (wanted > most) {
    const detail = `The purchase makes ${wanted} licenses, more than Commerce:MaxLicensesPerPurchase (${most}): nothing written; raise it, then redeliver the event`;
    ctx.log?.warning(`Commerce: ${provider} event ${event.eventId}: ${detail}`, {
      properties: { provider, eventId: event.eventId, type: event.type, wanted, most },
    });
    return { status: "failed", detail };
  }

  const opened = await openPurchase(ctx.db, provider, event);
  const made = (p: PurchaseRow) => `Order ${p.orderId} was made by an earlier event`;
  if (opened.completedAt) return { status: "applied", detail: made(opened), purchase: opened };
  // One purchase event makes the order (another event of the same purchase at the same moment leaves it to it);
  // the retry of one that failed half-way takes it again and makes what is missing.
  const claimed = await claimMaking(ctx.db, opened.id, eventRowId);
  if (!claimed) {
    const now = await readPurchase(ctx.db, opened.id);
    const detail = now.completedAt ? made(now) : "The order is being made by another event of this purchase";
    return { status: "applied", detail, purchase: now };
  }
  let purchase = claimed;

  const purchaseRef = event.refs[0]!;
  let order: Row | undefined;
  if (purchase.orderId !== null) order = await requireById(ctx.db, Order, purchase.orderId);
  else {
    // An order made by a try that failed before the purchase pointed at it is this purchase's: taken, not made again.
    order = await ctx.db
      .select()
      .from(orders)
      .where(and(eq(orders.paymentType, provider), eq(orders.paymentNumber, purchaseRef)))
      .get();
    const ended = ENDED.includes(purchase.state as PurchaseState);
    order ??= await createOrder(ctx, {
      customerId: (await buyerCustomer(ctx, happening, `${provider} ${event.customerRef ?? purchaseRef}`))["id"],
      status: orderStatus(ended ? "Cancelled" : "Completed"),
      paymentStatus: paymentStatus(purchase.state === "refunded" ? "Refunded" : "Paid"),
      total: happening.total,
      currency: happening.currency,
      paymentType: provider,
      paymentNumber: purchaseRef,
      paymentDate: happening.paidAt ?? nowIso(),
      description: `${provider} ${purchaseRef}`,
    });
    // The purchase points at its order before anything else is made: a retry after a failure makes no second order.
    purchase =
      (await savePurchase(ctx.db, purchase.id, {
        orderId: order["id"],
        customerRef: sql`coalesce(${commercePurchases.customerRef}, ${event.customerRef})`,
        periodEnd: laterPeriod(happening.periodEnd),
      })) ?? purchase;
  }
  const orderId = order["id"] as number;
  const customerId = order["customerId"] as number;

  // Lines and licenses: what a try that failed half-way made is counted, and only what is missing is made.
  const perProduct = new Map<number, { quantity: number; unitPrice: number | null; description: string | null }>();
  for (const { line, template } of mapped) {
    const seen = perProduct.get(template.productId);
    perProduct.set(template.productId, {
      quantity: (seen?.quantity ?? 0) + line.quantity,
      unitPrice: seen?.unitPrice ?? line.unitPrice,
      description: seen?.description ?? line.description,
    });
  }
  const lines = await ctx.db
    .select({ productId: orderProducts.productId })
    .from(orderProducts)
    .where(eq(orderProducts.orderId, orderId))
    .all();
  for (const [productId, line] of perProduct)
    if (!lines.some((l) => l.productId === productId)) await addOrderLine(ctx, orderId, productId, line);

  const expireDate = purchase.periodEnd;
  if (!ENDED.includes(purchase.state as PurchaseState)) {
    const canceled = purchase.state === "canceling" || purchase.state === "canceled";
    const held = new Map<number, number>();
    for (const license of await purchaseLicenses(ctx.db, purchase))
      if (license.templateId !== null) held.set(license.templateId, (held.get(license.templateId) ?? 0) + 1);
    for (const { line, mapping, template } of mapped) {
      const seats = (mapping.quantityMode as QuantityMode) === "seats";
      const want = seats ? 1 : line.quantity;
      const have = Math.min(want, held.get(template.id) ?? 0);
      held.set(template.id, (held.get(template.id) ?? 0) - have);
      if (want === have) continue;
      const per = template.maxClients ?? 1;
      await issueLicenses(
        ctx,
        {
          productId: template.productId,
          templateId: template.id,
          customerId,
          orderId,
          licenseeEmail: happening.buyer.email,
          licenseeName: happening.buyer.name,
          ...(expireDate ? { expireDate, ...(canceled ? {} : { supportExpireDate: expireDate }) } : {}),
          ...(seats ? { maxClients: per === 0 ? 0 : per * line.quantity } : {}),
        },
        want - have,
      );
    }
  }

  // Complete, once: the state other events left while the licenses were made (they were remembered) applies now.
  const done = await claimCompletion(ctx.db, purchase.id);
  if (!done) {
    const now = await readPurchase(ctx.db, purchase.id);
    return { status: "applied", detail: made(now), purchase: now };
  }
  purchase = done;
  const number = String(order["orderNumber"]);
  if (ENDED.includes(purchase.state as PurchaseState)) {
    const n = await revokeAll(ctx, purchase);
    await changeOrder(ctx, orderId, {
      status: orderStatus("Cancelled"),
      ...(purchase.state === "refunded" ? { paymentStatus: paymentStatus("Refunded") } : {}),
    });
    return {
      status: "applied",
      detail: `Order ${number} recorded as ${purchase.state} (the ${purchase.state === "refunded" ? "refund" : "dispute"} arrived first): ${n ? `${n} license(s) revoked` : "no license made"}, no email`,
      purchase,
    };
  }
  if (purchase.periodEnd && purchase.periodEnd !== expireDate) {
    const support = purchase.state === "active" || purchase.state === "pastDue";
    const to = purchase.periodEnd;
    await moveExpiry(ctx, purchase, to, (c) => c !== to, support);
  }
  const all = await purchaseLicenses(ctx.db, purchase);
  const mail = await mailLicenses(
    ctx,
    all.map((l) => l.id),
    happening.buyer.email,
  );
  const until = purchase.periodEnd ?? expireDate;
  return {
    status: "applied",
    detail:
      `Order ${number}: ${all.length} license(s) ${all.map((l) => l.licenseId).join(", ")}${until ? ` until ${until}` : ""}; ${mail}`.slice(
        0,
        2000,
      ),
    purchase,
  };
}

/** The license email, once, with every key; a failure to send is logged and said, never undoes the purchase. */
async function mailLicenses(ctx: ServiceContext, ids: readonly number[], to: string | null): Promise<string> {
  if (ids.length === 0) return "no email";
  try {
    const mail = await licensesMail(ctx.db, ids, to ?? undefined);
    const outcome = await sendMail({ db: ctx.db, config: ctx.config, transport: ctx.env.EMAIL }, mail);
    return `license email ${outcome.status} to ${mail.to}`;
  } catch (e) {
    const reason = e instanceof Error ? e.message : String(e);
    ctx.log?.warning(`Commerce: the license email was not sent: ${reason}`, { error: e });
    return `license email not sent: ${reason}`;
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Events about a purchase

async function revokeAll(ctx: ServiceContext, purchase: PurchaseRow): Promise<number> {
  let n = 0;
  for (const license of await purchaseLicenses(ctx.db, purchase))
    if (!license.revoked) {
      await changeLicense(ctx, license.id, { revoked: true });
      n++;
    }
  return n;
}

/** Moves the expiry of the purchase's live licenses to `to` where `when` says so. */
async function moveExpiry(
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

async function applyToPurchase(ctx: ServiceContext, provider: Provider, event: ProviderEvent): Promise<Result> {
  const happening = event.happening;
  if (event.refs.length === 0) return { status: "ignored", detail: "The event names no purchase" };
  const opened = await openPurchase(ctx.db, provider, event);
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
  switch (happening.action) {
    case "renewal": {
      // Only the latest period known moves the licenses: a renewal delivered after a later one changes nothing.
      const saved = await save({
        state: sql`CASE WHEN ${commercePurchases.state} IN ('refunded', 'disputed', 'canceled') THEN ${commercePurchases.state} ELSE 'active' END`,
        periodEnd: laterPeriod(happening.periodEnd),
      });
      if (!saved) return already();
      const purchase = saved.row;
      if (!saved.acting) return remembered(`Paid until ${happening.periodEnd}`, purchase);
      if (purchase.periodEnd !== happening.periodEnd)
        return {
          status: "applied",
          detail: `An earlier period (to ${happening.periodEnd}); nothing changed`,
          purchase,
        };
      const n = await moveExpiry(ctx, purchase, happening.periodEnd, (c) => c !== happening.periodEnd, true);
      return { status: "applied", detail: `${n} license(s) renewed until ${happening.periodEnd}`, purchase };
    }
    case "refund":
    case "dispute": {
      const saved = await save({ state: happening.action === "refund" ? "refunded" : "disputed" });
      if (!saved) return already();
      const purchase = saved.row;
      if (!saved.acting) return remembered(happening.action === "refund" ? "Refunded" : "Disputed", purchase);
      const n = await revokeAll(ctx, purchase);
      await changeOrder(ctx, purchase.orderId!, {
        status: orderStatus("Cancelled"),
        ...(happening.action === "refund" ? { paymentStatus: paymentStatus("Refunded") } : {}),
      });
      return { status: "applied", detail: `${n} license(s) revoked (${happening.action})`, purchase };
    }
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
      const days = ctx.config["Commerce:GraceDays"];
      const graceEnd = new Date(clock.now().getTime() + days * 86_400_000).toISOString();
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
