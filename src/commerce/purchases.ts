/**
 * What a verified provider event does (CONTRACT section 10), free of HTTP. Every change goes through the services
 * the Management API uses (licensing/license-writes.ts, order-writes.ts, customers.ts, mail/), so webhooks, the
 * audit trail and license HMACs follow.
 *
 * Exactly once: the event's row in commerce_events is claimed with one INSERT … ON CONFLICT statement, and only the
 * request whose statement inserted (or took back an `unmapped` / `failed` row) acts; a redelivery or a concurrent
 * duplicate finds the row and changes nothing. A failure marks the row `failed` and answers 500, so the provider's
 * retry tries again.
 *
 * Any order: an event finds its purchase by any id the provider uses for it (commerce_refs). The purchase row
 * keeps the state events left (refunded, canceling, the period's end), so an event that arrives before the payment
 * it is about is `remembered` and the payment, when it comes, makes what the later state says:
 *
 * | purchase state when the payment arrives | order                        | licenses                        | email |
 * |-----------------------------------------|------------------------------|---------------------------------|-------|
 * | active, pastDue                         | Completed, Paid              | made; expire at the latest period end known | yes |
 * | canceling, canceled                     | Completed, Paid              | made; expire at the cancellation | yes  |
 * | refunded, disputed                      | Cancelled, Refunded / Paid   | none                            | no    |
 *
 * With an order, events act on its licenses at once:
 *   renewal            expireDate and supportExpireDate -> the period's end (the latest period known only)
 *   refund, dispute    revoked; the order Cancelled (refund: payment Refunded)
 *   cancel             at the end of the period (scheduled before, or at the known period end): expire then;
 *                      earlier: revoked, the order Cancelled
 *   cancelAtPeriodEnd  expireDate -> that instant
 *   pastDue            expireDate -> now + Commerce:GraceDays when it ended before that (a perpetual one stays)
 */
import { and, eq, inArray, sql } from "drizzle-orm";
import { clock, nowIso } from "../clock";
import type { Db } from "../db/client";
import {
  commerceEvents,
  commerceMappings,
  commercePurchases,
  commerceRefs,
  customers,
  licenseTemplates,
  licenses,
} from "../db/schema";
import type { ServiceContext } from "../http/context";
import { type Row, insertRow } from "../http/repository";
import { Customer, newCustomerValues } from "../licensing/customers";
import { changeLicense, issueLicense } from "../licensing/license-writes";
import { addOrderLine, changeOrder, createOrder } from "../licensing/order-writes";
import { OrderStatus, PaymentStatus } from "../licensing/orders";
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
const laterOf = (a: string | null, b: string | null): string | null => (!a ? b : !b ? a : a > b ? a : b);
/** Purchase states in which the licenses are gone (revoked, or never made). */
const ENDED: readonly PurchaseState[] = ["refunded", "disputed"];
/** A cancellation this close to the known period end is the end of the period, not an immediate one. */
const PERIOD_END_SLACK_MS = 3_600_000;

/** Claims the event: the row's id when this request is the one to act on it, undefined for a duplicate. */
async function claim(db: Db, provider: Provider, event: ProviderEvent): Promise<number | undefined> {
  const now = nowIso();
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
      // Only an event that wrote nothing before may be taken again (a mapping added since, a failure retried).
      setWhere: sql`${commerceEvents.status} IN ('unmapped', 'failed')`,
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

/** The purchase any of `refs` names, if one was seen. */
async function findPurchase(db: Db, provider: Provider, refs: readonly string[]): Promise<PurchaseRow | undefined> {
  if (refs.length === 0) return undefined;
  const [row] = await db
    .select({ purchase: commercePurchases })
    .from(commerceRefs)
    .innerJoin(commercePurchases, eq(commercePurchases.id, commerceRefs.purchaseId))
    .where(and(eq(commerceRefs.provider, provider), inArray(commerceRefs.ref, [...refs])))
    .limit(1);
  return row?.purchase;
}

/** The purchase of the event, opened when no event named it before; every id of the event is linked to it. */
async function openPurchase(db: Db, provider: Provider, event: ProviderEvent): Promise<PurchaseRow> {
  const refs = event.refs;
  let purchase = await findPurchase(db, provider, refs);
  if (!purchase) {
    const now = nowIso();
    const [inserted] = await db
      .insert(commercePurchases)
      .values({ provider, purchaseRef: refs[0]!, customerRef: event.customerRef, createdAt: now, updatedAt: now })
      .onConflictDoNothing()
      .returning();
    purchase =
      inserted ??
      (await db
        .select()
        .from(commercePurchases)
        .where(and(eq(commercePurchases.provider, provider), eq(commercePurchases.purchaseRef, refs[0]!)))
        .get());
    if (!purchase) throw new Error(`commerce purchase ${provider} ${refs[0]} could not be opened`);
  }
  const id = purchase.id;
  await db
    .insert(commerceRefs)
    .values(refs.map((ref) => ({ provider, ref, purchaseId: id })))
    .onConflictDoNothing();
  return purchase;
}

async function savePurchase(db: Db, id: number, values: Partial<PurchaseRow>): Promise<PurchaseRow> {
  const [row] = await db
    .update(commercePurchases)
    .set({ ...values, updatedAt: nowIso() })
    .where(eq(commercePurchases.id, id))
    .returning();
  if (!row) throw new Error(`commerce purchase ${id} vanished`);
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

async function applyPurchase(
  ctx: ServiceContext,
  provider: Provider,
  event: ProviderEvent,
  happening: Purchase,
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
  let purchase = await openPurchase(ctx.db, provider, event);
  if (purchase.orderId !== null)
    return { status: "applied", detail: `Order ${purchase.orderId} was made by an earlier event`, purchase };

  const purchaseRef = event.refs[0]!;
  const customer = await buyerCustomer(ctx, happening, `${provider} ${event.customerRef ?? purchaseRef}`);
  const ended = ENDED.includes(purchase.state as PurchaseState);
  const order = await createOrder(ctx, {
    customerId: customer["id"],
    status: orderStatus(ended ? "Cancelled" : "Completed"),
    paymentStatus: paymentStatus(purchase.state === "refunded" ? "Refunded" : "Paid"),
    total: happening.total,
    currency: happening.currency,
    paymentType: provider,
    paymentNumber: purchaseRef,
    paymentDate: happening.paidAt ?? nowIso(),
    description: `${provider} ${purchaseRef}`,
  });
  const orderId = order["id"] as number;
  // The purchase points at its order before anything else is made: a retry after a failure makes no second order.
  purchase = await savePurchase(ctx.db, purchase.id, {
    orderId,
    customerRef: purchase.customerRef ?? event.customerRef,
    periodEnd: laterOf(purchase.periodEnd, happening.periodEnd),
  });

  const perProduct = new Map<number, { quantity: number; unitPrice: number | null; description: string | null }>();
  for (const { line, template } of mapped) {
    const seen = perProduct.get(template.productId);
    perProduct.set(template.productId, {
      quantity: (seen?.quantity ?? 0) + line.quantity,
      unitPrice: seen?.unitPrice ?? line.unitPrice,
      description: seen?.description ?? line.description,
    });
  }
  for (const [productId, line] of perProduct) await addOrderLine(ctx, orderId, productId, line);

  if (ended)
    return {
      status: "applied",
      detail: `Order ${String(order["orderNumber"])} recorded as ${purchase.state} (the ${purchase.state === "refunded" ? "refund" : "dispute"} arrived first): no license made`,
      purchase,
    };

  const canceled = purchase.state === "canceling" || purchase.state === "canceled";
  const expireDate = purchase.periodEnd;
  const made: Row[] = [];
  for (const { line, mapping, template } of mapped) {
    const values: Row = {
      productId: template.productId,
      templateId: template.id,
      customerId: customer["id"],
      orderId,
      licenseeEmail: happening.buyer.email,
      licenseeName: happening.buyer.name,
      ...(expireDate ? { expireDate, ...(canceled ? {} : { supportExpireDate: expireDate }) } : {}),
    };
    if ((mapping.quantityMode as QuantityMode) === "seats") {
      const per = template.maxClients ?? 1;
      made.push(await issueLicense(ctx, { ...values, maxClients: per === 0 ? 0 : per * line.quantity }));
    } else for (let i = 0; i < line.quantity; i++) made.push(await issueLicense(ctx, values));
  }
  const mail = await mailLicenses(ctx, made, happening.buyer.email);
  return {
    status: "applied",
    detail: `Order ${String(order["orderNumber"])}: ${made.length} license(s) ${made.map((l) => l["licenseId"]).join(", ")}${expireDate ? ` until ${expireDate}` : ""}; ${mail}`,
    purchase,
  };
}

/** The license email, once, with every key; a failure to send is logged and said, never undoes the purchase. */
async function mailLicenses(ctx: ServiceContext, made: readonly Row[], to: string | null): Promise<string> {
  if (made.length === 0) return "no email";
  try {
    const mail = await licensesMail(
      ctx.db,
      made.map((l) => l["id"] as number),
      to ?? undefined,
    );
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
  let purchase = await openPurchase(ctx.db, provider, event);
  const hasOrder = purchase.orderId !== null;
  const ended = ENDED.includes(purchase.state as PurchaseState);
  const remembered = (what: string): Result => ({
    status: "remembered",
    detail: `${what}; remembered until the purchase's payment arrives`,
    purchase,
  });
  switch (happening.action) {
    case "renewal": {
      // Only the latest period known moves the licenses: a renewal delivered after a later one changes nothing.
      const newest = !purchase.periodEnd || happening.periodEnd >= purchase.periodEnd;
      const state = ended || purchase.state === "canceled" ? purchase.state : "active";
      purchase = await savePurchase(ctx.db, purchase.id, {
        state,
        periodEnd: laterOf(purchase.periodEnd, happening.periodEnd),
      });
      if (!hasOrder) return remembered(`Paid until ${happening.periodEnd}`);
      if (!newest)
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
      purchase = await savePurchase(ctx.db, purchase.id, {
        state: happening.action === "refund" ? "refunded" : "disputed",
      });
      if (!hasOrder) return remembered(happening.action === "refund" ? "Refunded" : "Disputed");
      const n = await revokeAll(ctx, purchase);
      await changeOrder(ctx, purchase.orderId!, {
        status: orderStatus("Cancelled"),
        ...(happening.action === "refund" ? { paymentStatus: paymentStatus("Refunded") } : {}),
      });
      return { status: "applied", detail: `${n} license(s) revoked (${happening.action})`, purchase };
    }
    case "cancel": {
      const atPeriodEnd =
        purchase.state === "canceling" ||
        (purchase.periodEnd !== null &&
          Date.parse(happening.at) >= Date.parse(purchase.periodEnd) - PERIOD_END_SLACK_MS);
      if (ended) return { status: "applied", detail: `Already ${purchase.state}`, purchase };
      purchase = await savePurchase(ctx.db, purchase.id, { state: "canceled", periodEnd: happening.at });
      if (!hasOrder) return remembered(`Canceled at ${happening.at}`);
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
      if (ended) return { status: "applied", detail: `Already ${purchase.state}`, purchase };
      purchase = await savePurchase(ctx.db, purchase.id, { state: "canceling", periodEnd: happening.at });
      if (!hasOrder) return remembered(`Canceling at ${happening.at}`);
      const n = await moveExpiry(ctx, purchase, happening.at, (c) => c !== happening.at, false);
      return { status: "applied", detail: `Canceling: ${n} license(s) expire ${happening.at}`, purchase };
    }
    case "pastDue": {
      if (ended || purchase.state === "canceled")
        return { status: "applied", detail: `Already ${purchase.state}`, purchase };
      purchase = await savePurchase(ctx.db, purchase.id, { state: "pastDue" });
      if (!hasOrder) return remembered("Past due");
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
      return { status: "ignored", detail: "Nothing to do", purchase };
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
    else if (happening.action === "purchase") result = await applyPurchase(ctx, provider, event, happening);
    else result = await applyToPurchase(ctx, provider, event);
  } catch (e) {
    const reason = e instanceof Error ? e.message : String(e);
    await finish(ctx.db, id, { status: "failed", detail: reason });
    throw e;
  }
  await finish(ctx.db, id, result);
  return { status: result.status, detail: result.detail, orderId: result.purchase?.orderId ?? null };
}
