/**
 * What a payment provider's webhook event means for licenses, read from the provider's documented payload (Stripe
 * API 2026-10-28 shapes with the older fields still read, Paddle Billing, Lemon Squeezy). Each reader turns one
 * verified event into a `ProviderEvent`: the provider's event id (what makes it count once), every id the provider
 * uses for the purchase it is about (`refs`, the purchase's own id first), and one `Happening`. The table of which
 * event does what is the `read…` functions below; docs/commerce/<provider>.md says the same for vendors.
 */

export const PROVIDERS = ["stripe", "paddle", "lemonsqueezy"] as const;
export type Provider = (typeof PROVIDERS)[number];

/** The setting holding each provider's webhook secret (CONTRACT section 10). */
export const SECRET_SETTINGS = {
  stripe: "Commerce:Stripe:WebhookSecret",
  paddle: "Commerce:Paddle:WebhookSecret",
  lemonsqueezy: "Commerce:LemonSqueezy:WebhookSecret",
} as const satisfies Record<Provider, string>;

/** One item bought: the provider's ids for it, most specific first (price or variant, then product). */
export interface PurchaseLine {
  ids: string[];
  quantity: number;
  /** Price of one, in the currency's main unit. */
  unitPrice: number | null;
  description: string | null;
}

/** The buyer as the provider names them. */
export interface Buyer {
  email: string | null;
  name: string | null;
}

export type Happening =
  /** A completed payment of a new purchase. `periodEnd`: end of the paid period of a subscription. */
  | {
      action: "purchase";
      buyer: Buyer;
      lines: PurchaseLine[];
      periodEnd: string | null;
      total: number | null;
      currency: string | null;
      paidAt: string | null;
      /** Stripe Checkout: the session whose line items are the lines (its event names none; read with the API). */
      checkoutSession?: string;
    }
  /**
   * A paid renewal: the licenses run to `periodEnd`. `lines`, when the provider names what the renewal paid for,
   * bounds what is renewed (a downgrade renews fewer licenses or seats); without them every license is renewed.
   */
  | { action: "renewal"; periodEnd: string; lines?: PurchaseLine[] }
  /** Money back, or a dispute (chargeback) opened: the purchase's licenses are revoked. */
  | { action: "refund" | "dispute" }
  /** The subscription ended at `at`: at the end of its period when that was scheduled (expire), else revoked. */
  | { action: "cancel"; at: string }
  /** The subscription will end at `at` (the period's end): the licenses expire then. */
  | { action: "cancelAtPeriodEnd"; at: string }
  /** A renewal payment failed: the licenses stay usable for Commerce:GraceDays. */
  | { action: "pastDue" }
  /** The event only tells that its ids are one purchase's (Stripe's invoice_payment.paid: an invoice and its payment). */
  | { action: "link" }
  /** Nothing to do with licenses (another event type, a partial refund, an unpaid order). */
  | { action: "ignored"; why: string };

export type Action = Happening["action"];

export interface ProviderEvent {
  eventId: string;
  type: string;
  /** The provider's ids of the purchase, its own id first (subscription, else order/invoice/transaction). */
  refs: string[];
  customerRef: string | null;
  happening: Happening;
}

/** A JSON value read loosely: the provider's payload is checked field by field, never trusted as a whole. */
type Json = Record<string, unknown>;

const obj = (v: unknown): Json => (v && typeof v === "object" && !Array.isArray(v) ? (v as Json) : {});
const arr = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);
const str = (v: unknown): string | null =>
  typeof v === "string" && v !== "" ? v : typeof v === "number" ? String(v) : null;
const num = (v: unknown): number | null => {
  const n = typeof v === "string" && v.trim() !== "" ? Number(v) : v;
  return typeof n === "number" && Number.isFinite(n) ? n : null;
};
/** An id field that may be expanded into its object (`customer: "cus_…"` or `customer: { id: "cus_…" }`). */
const idOf = (v: unknown): string | null => str(v) ?? str(obj(v)["id"]);
/** Unix seconds as ISO. */
const fromUnix = (v: unknown): string | null => {
  const n = num(v);
  return n === null ? null : new Date(n * 1000).toISOString();
};
/** An ISO (or RFC 3339) date as our ISO form. */
const fromIso = (v: unknown): string | null => {
  const s = str(v);
  if (!s) return null;
  const t = Date.parse(s);
  return Number.isNaN(t) ? null : new Date(t).toISOString();
};
/** Minor units (cents) to the currency's main unit. */
const major = (v: unknown): number | null => {
  const n = num(v);
  return n === null ? null : n / 100;
};
const unique = (values: (string | null)[]): string[] => [...new Set(values.filter((v): v is string => !!v))];
const latest = (dates: (string | null)[]): string | null =>
  dates.filter((d): d is string => !!d).sort((a, b) => (a < b ? 1 : -1))[0] ?? null;
const ignored = (why: string): Happening => ({ action: "ignored", why });

/** A malformed event: its signature was valid, but it is not the provider's documented shape. */
export class MalformedEvent extends Error {}

// ---------------------------------------------------------------------------------------------------------------
// Stripe (https://docs.stripe.com/api/events/types)
//   invoice.paid                   billing_reason subscription_cycle -> renewal; subscription_update/threshold ->
//                                  ignored; anything else (subscription_create, manual …) -> purchase
//   invoice.payment_failed         -> pastDue (renewals only; a first payment that failed made nothing)
//   customer.subscription.updated  cancel_at_period_end or cancel_at -> cancelAtPeriodEnd
//   customer.subscription.deleted  -> cancel at ended_at
//   invoice_payment.paid           status paid -> link: the invoice and its payment intent (or charge) are one
//                                  purchase. Since API 2025-03-31.basil an invoice names no payment_intent or charge
//                                  and webhook invoices carry no `payments`, so a refund or a dispute (which name
//                                  only the payment) finds its purchase through this link
//   charge.refunded                refunded (in full) -> refund; partial -> ignored
//   charge.dispute.created         -> dispute
//   checkout.session.completed     mode payment, paid -> purchase (its line items read with the API: stripe-api.ts);
//   checkout.session.async_payment_succeeded           mode subscription -> link (the subscription's invoice.paid
//                                  makes it); not paid yet (an asynchronous method) -> ignored until async_payment_succeeded
//                                  A session that also made an invoice names it, so its invoice.paid is the same purchase

function stripeInvoiceRefs(invoice: Json): string[] {
  const parent = obj(obj(invoice["parent"])["subscription_details"]);
  const payments = arr(obj(invoice["payments"])["data"]).map((p) => obj(obj(p)["payment"]));
  return unique([
    idOf(parent["subscription"]) ?? idOf(invoice["subscription"]),
    str(invoice["id"]),
    idOf(invoice["payment_intent"]),
    idOf(invoice["charge"]),
    ...payments.flatMap((p) => [idOf(p["payment_intent"]), idOf(p["charge"])]),
  ]);
}

function stripeLines(invoice: Json): { lines: PurchaseLine[]; periodEnd: string | null } {
  const data = arr(obj(invoice["lines"])["data"]).map(obj);
  const lines = data.map((line) => {
    const details = obj(obj(line["pricing"])["price_details"]);
    const legacy = obj(line["price"]);
    const quantity = num(line["quantity"]) ?? 1;
    const amount = major(line["amount"]);
    return {
      ids: unique([idOf(details["price"]) ?? idOf(line["price"]), idOf(details["product"]) ?? idOf(legacy["product"])]),
      quantity,
      unitPrice: amount === null || quantity === 0 ? null : amount / quantity,
      description: str(line["description"]),
    };
  });
  return { lines, periodEnd: latest(data.map((line) => fromUnix(obj(line["period"])["end"]))) };
}

function stripeSubscriptionEnd(subscription: Json): string | null {
  const items = arr(obj(subscription["items"])["data"]).map(obj);
  return latest([...items.map((i) => fromUnix(i["current_period_end"])), fromUnix(subscription["current_period_end"])]);
}

/** A completed Checkout Session: a one-time purchase, or the link of a subscription's session to its invoice. */
function readCheckoutSession(
  base: Pick<ProviderEvent, "eventId" | "type" | "customerRef">,
  session: Json,
): ProviderEvent {
  const id = str(session["id"]);
  if (!id) throw new MalformedEvent("A Checkout Session has an id");
  const mode = str(session["mode"]);
  if (mode === "subscription") {
    const refs = unique([idOf(session["subscription"]), idOf(session["invoice"]), id]);
    return { ...base, refs, happening: refs.length > 1 ? { action: "link" } : ignored("no subscription yet") };
  }
  const refs = unique([id, idOf(session["payment_intent"]), idOf(session["invoice"])]);
  if (mode !== "payment") return { ...base, refs, happening: ignored(`a Checkout Session in ${mode ?? "?"} mode`) };
  const paid = str(session["payment_status"]);
  if (paid !== "paid" && paid !== "no_payment_required")
    return { ...base, refs, happening: ignored("not paid yet: checkout.session.async_payment_succeeded will say") };
  const details = obj(session["customer_details"]);
  return {
    ...base,
    refs,
    happening: {
      action: "purchase",
      buyer: { email: str(details["email"]) ?? str(session["customer_email"]), name: str(details["name"]) },
      lines: [],
      periodEnd: null,
      total: major(session["amount_total"]),
      currency: str(session["currency"])?.toUpperCase() ?? null,
      paidAt: fromUnix(session["created"]),
      checkoutSession: id,
    },
  };
}

export function readStripe(event: Json): ProviderEvent {
  const eventId = str(event["id"]);
  const type = str(event["type"]);
  const object = obj(obj(event["data"])["object"]);
  if (!eventId || !type) throw new MalformedEvent("A Stripe event has an id and a type");
  const base = { eventId, type, customerRef: idOf(object["customer"]) };
  switch (type) {
    case "invoice.paid": {
      const reason = str(object["billing_reason"]);
      const refs = stripeInvoiceRefs(object);
      const { lines, periodEnd } = stripeLines(object);
      const subscription = refs[0] !== str(object["id"]);
      if (reason === "subscription_update" || reason === "subscription_threshold")
        return { ...base, refs, happening: ignored(`billing_reason ${reason} changes no license`) };
      if (reason === "subscription_cycle") {
        if (!periodEnd) throw new MalformedEvent("A renewal invoice names its lines' period");
        return { ...base, refs, happening: { action: "renewal", periodEnd, lines } };
      }
      return {
        ...base,
        refs,
        happening: {
          action: "purchase",
          buyer: { email: str(object["customer_email"]), name: str(object["customer_name"]) },
          lines,
          periodEnd: subscription ? periodEnd : null,
          total: major(object["amount_paid"] ?? object["total"]),
          currency: str(object["currency"])?.toUpperCase() ?? null,
          paidAt: fromUnix(obj(object["status_transitions"])["paid_at"]),
        },
      };
    }
    case "invoice.payment_failed": {
      const refs = stripeInvoiceRefs(object);
      if (str(object["billing_reason"]) !== "subscription_cycle")
        return { ...base, refs, happening: ignored("a first payment that failed made no license") };
      return { ...base, refs, happening: { action: "pastDue" } };
    }
    case "customer.subscription.updated": {
      const refs = unique([str(object["id"])]);
      const at =
        fromUnix(object["cancel_at"]) ?? (object["cancel_at_period_end"] ? stripeSubscriptionEnd(object) : null);
      if (at) return { ...base, refs, happening: { action: "cancelAtPeriodEnd", at } };
      return { ...base, refs, happening: ignored("no cancellation scheduled") };
    }
    case "customer.subscription.deleted": {
      const at = fromUnix(object["ended_at"]) ?? fromUnix(object["canceled_at"]);
      if (!at) throw new MalformedEvent("A deleted subscription names when it ended (ended_at)");
      return { ...base, refs: unique([str(object["id"])]), happening: { action: "cancel", at } };
    }
    case "invoice_payment.paid": {
      const payment = obj(object["payment"]);
      const refs = unique([
        idOf(object["invoice"]),
        idOf(payment["payment_intent"]),
        idOf(payment["charge"]),
        idOf(payment["payment_record"]),
      ]);
      if (str(object["status"]) !== "paid") return { ...base, refs, happening: ignored("the payment is not paid") };
      if (refs.length < 2) throw new MalformedEvent("An invoice payment names its invoice and its payment");
      return { ...base, customerRef: null, refs, happening: { action: "link" } };
    }
    case "charge.refunded": {
      const refs = unique([idOf(object["invoice"]), idOf(object["payment_intent"]), str(object["id"])]);
      if (object["refunded"] !== true)
        return { ...base, refs, happening: ignored("a partial refund keeps the licenses") };
      return { ...base, refs, happening: { action: "refund" } };
    }
    case "checkout.session.completed":
    case "checkout.session.async_payment_succeeded":
      return readCheckoutSession(base, object);
    case "charge.dispute.created": {
      const refs = unique([idOf(object["payment_intent"]), idOf(object["charge"])]);
      return { ...base, customerRef: null, refs, happening: { action: "dispute" } };
    }
    default:
      return { ...base, refs: [], happening: ignored(`event type ${type} is not one the service acts on`) };
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Paddle Billing (https://developer.paddle.com/webhooks/overview)
//   transaction.completed   origin subscription_recurring -> renewal; subscription_update,
//                           subscription_payment_method_change, subscription_charge -> ignored; else -> purchase
//   adjustment.created/updated   action refund, status approved, type full -> refund; chargeback -> dispute
//   subscription.updated    scheduled_change.action cancel -> cancelAtPeriodEnd; status past_due -> pastDue
//   subscription.past_due   -> pastDue
//   subscription.canceled   -> cancel at canceled_at
// Paddle's payloads do not carry the buyer's email: the checkout passes it as customData `{ "email": … }` (and
// optionally `name`), which transaction events return as `custom_data`.

/** The items of a Paddle transaction as purchase lines (price, then product id). */
function paddleLines(data: Json): PurchaseLine[] {
  return arr(data["items"])
    .map(obj)
    .map((item) => {
      const price = obj(item["price"]);
      return {
        ids: unique([str(price["id"]), str(price["product_id"])]),
        quantity: num(item["quantity"]) ?? 1,
        unitPrice: major(obj(price["unit_price"])["amount"]),
        description: str(price["description"]) ?? str(price["name"]),
      };
    });
}

export function readPaddle(event: Json): ProviderEvent {
  const eventId = str(event["event_id"]);
  const type = str(event["event_type"]);
  const data = obj(event["data"]);
  if (!eventId || !type) throw new MalformedEvent("A Paddle event has an event_id and an event_type");
  const base = { eventId, type, customerRef: str(data["customer_id"]) };
  switch (type) {
    case "transaction.completed": {
      const refs = unique([str(data["subscription_id"]), str(data["id"])]);
      const origin = str(data["origin"]);
      const periodEnd = fromIso(obj(data["billing_period"])["ends_at"]);
      if (origin === "subscription_recurring") {
        if (!periodEnd) throw new MalformedEvent("A recurring transaction names its billing_period");
        return { ...base, refs, happening: { action: "renewal", periodEnd, lines: paddleLines(data) } };
      }
      if (
        origin === "subscription_update" ||
        origin === "subscription_payment_method_change" ||
        origin === "subscription_charge"
      )
        return { ...base, refs, happening: ignored(`origin ${origin} changes no license`) };
      const custom = obj(data["custom_data"]);
      const totals = obj(obj(data["details"])["totals"]);
      const lines = paddleLines(data);
      return {
        ...base,
        refs,
        happening: {
          action: "purchase",
          buyer: { email: str(custom["email"]), name: str(custom["name"]) },
          lines,
          periodEnd: str(data["subscription_id"]) ? periodEnd : null,
          total: major(totals["total"]),
          currency: str(data["currency_code"]) ?? str(totals["currency_code"]),
          paidAt: fromIso(data["billed_at"]),
        },
      };
    }
    case "adjustment.created":
    case "adjustment.updated": {
      const refs = unique([str(data["transaction_id"]), str(data["subscription_id"])]);
      const action = str(data["action"]);
      if (action === "chargeback") return { ...base, refs, happening: { action: "dispute" } };
      if (action !== "refund") return { ...base, refs, happening: ignored(`adjustment ${action ?? "?"}`) };
      if (str(data["status"]) !== "approved")
        return { ...base, refs, happening: ignored(`refund ${str(data["status"]) ?? "?"}, not approved yet`) };
      if (str(data["type"]) === "partial")
        return { ...base, refs, happening: ignored("a partial refund keeps the licenses") };
      return { ...base, refs, happening: { action: "refund" } };
    }
    case "subscription.updated":
    case "subscription.past_due": {
      const refs = unique([str(data["id"])]);
      const scheduled = obj(data["scheduled_change"]);
      const at = fromIso(scheduled["effective_at"]);
      if (str(scheduled["action"]) === "cancel" && at)
        return { ...base, refs, happening: { action: "cancelAtPeriodEnd", at } };
      if (type === "subscription.past_due" || str(data["status"]) === "past_due")
        return { ...base, refs, happening: { action: "pastDue" } };
      return { ...base, refs, happening: ignored("no cancellation scheduled, not past due") };
    }
    case "subscription.canceled": {
      const at = fromIso(data["canceled_at"]);
      if (!at) throw new MalformedEvent("A canceled subscription names when (canceled_at)");
      return { ...base, refs: unique([str(data["id"])]), happening: { action: "cancel", at } };
    }
    default:
      return { ...base, refs: [], happening: ignored(`event type ${type} is not one the service acts on`) };
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Lemon Squeezy (https://docs.lemonsqueezy.com/help/webhooks)
//   order_created                  status paid -> purchase (first_order_item: variant, product, quantity)
//   order_refunded                 refunded (in full) -> refund; a partial refund (refunded false) -> ignored
//   subscription_created/updated   status active/on_trial -> renewal to renews_at (for first_subscription_item's
//                                  quantity of the variant, when named); past_due/unpaid -> pastDue;
//                                  cancelled -> cancelAtPeriodEnd at ends_at; expired -> cancel at ends_at
//   subscription_cancelled         -> cancelAtPeriodEnd at ends_at
//   subscription_expired           -> cancel at ends_at
//   subscription_payment_failed    -> pastDue
//   subscription_payment_refunded  refunded (in full) -> refund; partial -> ignored
// Lemon Squeezy sends no event id: the event's id is its name, the resource's type and id, and the SHA-256 of the
// signed body (`bodyDigest`), so a redelivery of the same body counts once and a later change of the resource is
// a new event. The purchase's id is the order's id (subscriptions name it as order_id); a subscription's id is kept
// as `subscription:<id>`, apart from order ids, which count from the same small integers.

export function readLemonSqueezy(event: Json, bodyDigest: string): ProviderEvent {
  const meta = obj(event["meta"]);
  const data = obj(event["data"]);
  const a = obj(data["attributes"]);
  const type = str(meta["event_name"]);
  const id = str(data["id"]);
  if (!type || !id) throw new MalformedEvent("A Lemon Squeezy event has meta.event_name and data.id");
  const base = {
    eventId: `${type}:${str(data["type"]) ?? "?"}:${id}:${bodyDigest.slice(0, 32)}`,
    type,
    customerRef: str(a["customer_id"]),
  };
  // Order and subscription ids are both small integers, counted apart: a subscription's id is kept with its kind, so
  // subscription 5001 never names another buyer's order 5001 (orders keep the bare id stored before kinds were kept).
  const subscription = (v: unknown) => {
    const ref = str(v);
    return ref === null ? null : `subscription:${ref}`;
  };
  const subscriptionRefs = () => unique([str(a["order_id"]), subscription(id)]);
  // A refund of part of the money (refunded false, a refunded_amount below the total) keeps the licenses.
  const refunded = (): Happening =>
    a["refunded"] === false ? ignored("a partial refund keeps the licenses") : { action: "refund" };
  switch (type) {
    case "order_created": {
      const refs = unique([id, str(a["identifier"])]);
      if (str(a["status"]) !== "paid")
        return { ...base, refs, happening: ignored(`order status ${str(a["status"]) ?? "?"}`) };
      const item = obj(a["first_order_item"]);
      const custom = obj(meta["custom_data"]);
      return {
        ...base,
        refs,
        happening: {
          action: "purchase",
          buyer: { email: str(a["user_email"]) ?? str(custom["email"]), name: str(a["user_name"]) },
          lines: [
            {
              ids: unique([str(item["variant_id"]), str(item["product_id"])]),
              quantity: num(item["quantity"]) ?? 1,
              unitPrice: major(item["price"]),
              description: [str(item["product_name"]), str(item["variant_name"])].filter(Boolean).join(" - ") || null,
            },
          ],
          periodEnd: null,
          total: major(a["total"]),
          currency: str(a["currency"]),
          paidAt: fromIso(a["created_at"]),
        },
      };
    }
    case "order_refunded":
      return { ...base, refs: unique([id, str(a["identifier"])]), happening: refunded() };
    case "subscription_created":
    case "subscription_updated": {
      const refs = subscriptionRefs();
      const status = str(a["status"]);
      const endsAt = fromIso(a["ends_at"]);
      if (status === "cancelled" && endsAt)
        return { ...base, refs, happening: { action: "cancelAtPeriodEnd", at: endsAt } };
      if (status === "expired") {
        const at = endsAt ?? fromIso(a["updated_at"]);
        if (!at) throw new MalformedEvent("An expired subscription names when it ended (ends_at)");
        return { ...base, refs, happening: { action: "cancel", at } };
      }
      if (status === "past_due" || status === "unpaid") return { ...base, refs, happening: { action: "pastDue" } };
      const renewsAt = fromIso(a["renews_at"]);
      if ((status === "active" || status === "on_trial") && renewsAt) {
        // What the renewal is for: the subscription's item and its quantity, when the event names them.
        const item = obj(a["first_subscription_item"]);
        const quantity = num(item["quantity"]);
        const lines =
          quantity === null
            ? undefined
            : [
                {
                  ids: unique([str(a["variant_id"]), str(a["product_id"])]),
                  quantity,
                  unitPrice: null,
                  description: str(a["variant_name"]),
                },
              ];
        return { ...base, refs, happening: { action: "renewal", periodEnd: renewsAt, ...(lines ? { lines } : {}) } };
      }
      return { ...base, refs, happening: ignored(`subscription status ${status ?? "?"}`) };
    }
    case "subscription_cancelled": {
      const at = fromIso(a["ends_at"]);
      if (!at) throw new MalformedEvent("A cancelled subscription names when it ends (ends_at)");
      return { ...base, refs: subscriptionRefs(), happening: { action: "cancelAtPeriodEnd", at } };
    }
    case "subscription_expired": {
      const at = fromIso(a["ends_at"]) ?? fromIso(a["updated_at"]);
      if (!at) throw new MalformedEvent("An expired subscription names when it ended (ends_at)");
      return { ...base, refs: subscriptionRefs(), happening: { action: "cancel", at } };
    }
    case "subscription_payment_failed":
      return { ...base, refs: unique([subscription(a["subscription_id"])]), happening: { action: "pastDue" } };
    case "subscription_payment_refunded":
      return { ...base, refs: unique([subscription(a["subscription_id"])]), happening: refunded() };
    default:
      return { ...base, refs: [], happening: ignored(`event type ${type} is not one the service acts on`) };
  }
}
