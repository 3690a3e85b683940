/**
 * What a purchase event makes (CONTRACT section 10), free of HTTP, through the services the Management API uses
 * (licensing/license-writes.ts, licensing/order-writes.ts, records/customers.ts, mail/): each line mapped to a
 * template, the buyer's customer, the order and its lines, the licenses, then the license email once. Every step is
 * safe to repeat: a try that failed half-way is finished by the retry, which makes only what is missing.
 */
import { and, asc, eq, inArray, sql } from "drizzle-orm";
import { nowIso } from "../kernel/clock";
import type { Db } from "../db/client";
import { commerceMappings, commercePurchases, customers, licenseTemplates, orderProducts, orders } from "../db/schema";
import type { ServiceContext } from "../http/context";
import { type Row, insertRow, requireById } from "../http/repository";
import { Customer, newCustomerValues } from "../records/customers";
import { changeLicense, issueLicenses } from "../licensing/license-writes";
import { addOrderLine, changeOrder, createOrder } from "../licensing/order-writes";
import { Order } from "../records/orders";
import { licensesMail } from "../mail/license-mail";
import { sendMail } from "../mail/send";
import type { Provider, ProviderEvent, PurchaseLine } from "./provider-events";
import type { PurchaseState, QuantityMode } from "./records";
import { checkoutLines } from "./stripe-api";

import {
  ENDED,
  ambiguous,
  type Purchase,
  type PurchaseRow,
  type Result,
  claimCompletion,
  claimMaking,
  foldNamed,
  laterPeriod,
  made,
  moveExpiry,
  openPurchase,
  type PaidPeriod,
  paidPeriodsOf,
  orderStatus,
  paymentStatus,
  purchaseLicenses,
  readPurchase,
  revokeAll,
  savePurchase,
} from "./purchase-state";

// Purchase

export interface MappedLine {
  line: PurchaseLine;
  mapping: typeof commerceMappings.$inferSelect;
  template: typeof licenseTemplates.$inferSelect;
}

/** Each line's mapping (its most specific id that has one) and template, or the lines that have none. */
export async function mapLines(
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
async function buyerCustomer(
  ctx: ServiceContext,
  provider: Provider,
  customerRef: string | null,
  purchase: Purchase,
  fallbackName: string,
): Promise<Row> {
  // The provider's own customer id is the only proof that two purchases are one buyer's: an email address is what
  // the buyer typed at checkout, unverified, and matching on it put a stranger's purchase into another customer's
  // record and portal. A buyer the provider knew before is found through an earlier purchase; otherwise a new one.
  if (customerRef) {
    const earlier = await ctx.db
      .select({ customer: customers })
      .from(commercePurchases)
      .innerJoin(orders, eq(orders.id, commercePurchases.orderId))
      .innerJoin(customers, eq(customers.id, orders.customerId))
      .where(and(eq(commercePurchases.provider, provider), eq(commercePurchases.customerRef, customerRef)))
      .orderBy(asc(commercePurchases.id))
      .limit(1)
      .get();
    if (earlier) return earlier.customer;
  }
  const email = purchase.buyer.email?.trim() || null;
  const words = (purchase.buyer.name ?? "").trim().split(/\s+/).filter(Boolean);
  const lastName = words.length ? words[words.length - 1] : email ? null : fallbackName;
  const firstName = words.length > 1 ? words.slice(0, -1).join(" ") : null;
  return insertRow(ctx.db, Customer, newCustomerValues({ email, firstName, lastName }));
}

/** How many licenses the mapped lines make: N for a line in licenses mode, one for a line in seats mode. */
const licensesWanted = (mapped: readonly MappedLine[]) =>
  mapped.reduce((n, { line, mapping }) => n + (mapping.quantityMode === "seats" ? 1 : line.quantity), 0);

/**
 * What a purchase event makes, in steps each safe to repeat: refused whole when it cannot be made (an unmapped line,
 * too many licenses), the purchase claimed by one event, its order found or made, the missing lines and licenses made,
 * then completed once with the license email.
 */
export async function applyPurchase(
  ctx: ServiceContext,
  provider: Provider,
  event: ProviderEvent,
  given: Purchase,
  eventRowId: number,
): Promise<Result> {
  // A Stripe Checkout purchase names its lines only through Stripe's API.
  let happening = given;
  if (given.checkoutSession) {
    const lines = await checkoutLines(ctx.config, given.checkoutSession);
    if ("failed" in lines) {
      ctx.log?.warning(`Commerce: ${provider} event ${event.eventId}: ${lines.failed}`);
      return { status: "failed", detail: lines.failed };
    }
    happening = { ...given, lines };
  }
  const fulfillable = await mappedPurchase(ctx, provider, event, happening);
  if ("status" in fulfillable) return fulfillable;
  const { mapped } = fulfillable;

  // Rows its other events opened before anything tied their ids together (a renewal or a refund that came first)
  // are folded into the purchase, with what they remembered.
  const named = await foldNamed(ctx.db, provider, event, await openPurchase(ctx.db, provider, event));
  if ("ambiguous" in named) return ambiguous(ctx, provider, event, named.ambiguous);
  const opened = named.purchase;
  if (opened.completedAt) return { status: "applied", detail: made(opened), purchase: opened };
  // One purchase event makes the order (another event of the same purchase at the same moment leaves it to it);
  // the retry of one that failed half-way takes it again and makes what is missing.
  const claimed = await claimMaking(ctx.db, opened.id, eventRowId);
  if (!claimed) {
    const now = await readPurchase(ctx.db, opened.id);
    const detail = now.completedAt ? made(now) : "The order is being made by another event of this purchase";
    return { status: "applied", detail, purchase: now };
  }
  const { order, purchase } = await purchaseOrder(ctx, provider, event, happening, claimed);
  const orderId = order["id"] as number;
  await addMissingLines(ctx, orderId, mapped);
  // Renewals that came first renew what they paid for at completion: the licenses start at the purchase's own period,
  // so those a renewal did not pay for (a downgrade) run out at its end.
  const renewed = paidPeriodsOf(purchase).length && (purchase.state === "active" || purchase.state === "pastDue");
  const expireDate = renewed ? happening.periodEnd : purchase.periodEnd;
  await issueMissingLicenses(ctx, purchase, mapped, happening, order, expireDate);
  return completePurchase(ctx, purchase, happening, order, expireDate);
}

/** The lines' mappings, or the refusal of a purchase that cannot be made (nothing written; the event stays retryable). */
async function mappedPurchase(
  ctx: ServiceContext,
  provider: Provider,
  event: ProviderEvent,
  happening: Purchase,
): Promise<Result | { mapped: MappedLine[] }> {
  // A quantity is a whole number of at least one: a line of 0 seats would make an unlimited floating license
  // (maxClients 0), a fraction or a negative one nothing a buyer paid for. Such a purchase makes nothing, logged.
  const odd = happening.lines.filter((l) => !Number.isSafeInteger(l.quantity) || l.quantity < 1);
  if (odd.length > 0) {
    const named = odd.map((l) => `${l.ids.join(" / ") || "an item"} × ${l.quantity}`).join(", ");
    const detail = `A purchase line's quantity is not a whole number of at least 1 (${named}): nothing written`;
    ctx.log?.warning(`Commerce: ${provider} event ${event.eventId}: ${detail}`, {
      properties: { provider, eventId: event.eventId, type: event.type, quantities: odd.map((l) => l.quantity) },
    });
    return { status: "failed", detail };
  }
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

  return { mapped };
}

/** The purchase's order: the one it points at, one a failed try made, or a new one (then pointed at first). */
async function purchaseOrder(
  ctx: ServiceContext,
  provider: Provider,
  event: ProviderEvent,
  happening: Purchase,
  claimed: PurchaseRow,
): Promise<{ order: Row; purchase: PurchaseRow }> {
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
      customerId: (
        await buyerCustomer(
          ctx,
          provider,
          event.customerRef,
          happening,
          `${provider} ${event.customerRef ?? purchaseRef}`,
        )
      )["id"],
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
  return { order, purchase };
}

/** One order line per product of the mapped lines; what a try that failed half-way made is not made again. */
async function addMissingLines(ctx: ServiceContext, orderId: number, mapped: readonly MappedLine[]): Promise<void> {
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
}

/** The licenses the mapped lines make, less those the purchase already holds (a retry makes only what is missing). */
async function issueMissingLicenses(
  ctx: ServiceContext,
  purchase: PurchaseRow,
  mapped: readonly MappedLine[],
  happening: Purchase,
  order: Row,
  expireDate: string | null,
): Promise<void> {
  const orderId = order["id"] as number;
  const customerId = order["customerId"] as number;
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
}

/** Completes the purchase once: the state other events left meanwhile applies now, then the license email. */
async function completePurchase(
  ctx: ServiceContext,
  claimed: PurchaseRow,
  happening: Purchase,
  order: Row,
  expireDate: string | null,
): Promise<Result> {
  const orderId = order["id"] as number;
  let purchase = claimed;
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
  const support = purchase.state === "active" || purchase.state === "pastDue";
  // Renewals that arrived first apply now: each license to the latest period that paid for it.
  const periods = support ? paidPeriodsOf(purchase) : [];
  if (periods.length) await applyPeriods(ctx, purchase.provider as Provider, purchase, periods);
  else if (purchase.periodEnd && purchase.periodEnd !== expireDate) {
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

/**
 * The renewals' periods applied to the purchase's live licenses, in any order they arrived: each license expires at
 * the end of the latest period that paid for it (and support with it), and a seats license has the seats of the
 * latest period that paid for it. A period pays for what its lines name (of each mapped line's template, the first
 * `quantity` licenses in licenses mode, the seats license in seats mode), or for every license when it named nothing
 * or nothing it named maps. A license no period paid for keeps its expiry and runs out. Answers how many changed.
 */
export async function applyPeriods(
  ctx: ServiceContext,
  provider: Provider,
  purchase: PurchaseRow,
  periods: readonly PaidPeriod[],
): Promise<number> {
  const held = (await purchaseLicenses(ctx.db, purchase)).filter((l) => !l.revoked).sort((a, b) => a.id - b.id);
  const due = new Map<number, { end: string; maxClients?: number }>();
  for (const period of [...periods].sort((a, b) => Date.parse(a.end) - Date.parse(b.end))) {
    const paid = (period.lines ?? []).filter((l) => Number.isSafeInteger(l.quantity) && l.quantity >= 1);
    const { mapped } = paid.length ? await mapLines(ctx.db, provider, paid) : { mapped: [] };
    const payees: { id: number; maxClients?: number }[] = mapped.length
      ? mapped.flatMap(({ line, mapping, template }) => {
          const ofTemplate = held.filter((l) => l.templateId === template.id);
          if ((mapping.quantityMode as QuantityMode) !== "seats")
            return ofTemplate.slice(0, line.quantity).map((l) => ({ id: l.id }));
          const per = template.maxClients ?? 1;
          return ofTemplate.slice(0, 1).map((l) => ({ id: l.id, maxClients: per === 0 ? 0 : per * line.quantity }));
        })
      : held.map((l) => ({ id: l.id }));
    // Earliest first: a later period's end and seats replace an earlier one's.
    for (const { id, maxClients } of payees)
      due.set(id, { end: period.end, maxClients: maxClients ?? due.get(id)?.maxClients });
  }
  let n = 0;
  for (const license of held) {
    const to = due.get(license.id);
    if (!to) continue;
    const moved = license.expireDate === null || Date.parse(license.expireDate) !== Date.parse(to.end);
    const reseated = to.maxClients !== undefined && to.maxClients !== license.maxClients;
    if (!moved && !reseated) continue;
    await changeLicense(ctx, license.id, {
      ...(moved ? { expireDate: to.end, supportExpireDate: to.end } : {}),
      ...(reseated ? { maxClients: to.maxClients } : {}),
    });
    n++;
  }
  return n;
}
