/**
 * One fixture kit for the three payment providers of test/commerce-webhooks.test.ts: each provider's events in its
 * documented payload shape (Stripe API 2026-10-28.endive objects as the `stripe` package types them and webhooks send
 * them: an invoice without `payments` or payment ids, its payment in `invoice_payment.paid`; Paddle Billing
 * notifications, Lemon Squeezy webhook bodies), signed the provider's way: Stripe with the SDK's own
 * `webhooks.generateTestHeaderStringAsync`, Paddle `ts=…;h1=` HMAC-SHA256 of `ts:body`, Lemon Squeezy hex
 * HMAC-SHA256 of the body. Secrets are vitest.config.ts's Commerce__* bindings.
 */
import { env } from "cloudflare:workers";
import Stripe from "stripe";
import { clock } from "../src/kernel/clock";
import { toHex } from "../src/kernel/crypto";
import { call } from "./helpers";

export type ProviderName = "stripe" | "paddle" | "lemonsqueezy";

export const SECRETS: Record<ProviderName, string> = {
  stripe: "whsec_test_commerce_stripe",
  paddle: "pdl_ntfset_test_commerce_paddle",
  lemonsqueezy: "test-commerce-lemonsqueezy",
};

/** One purchase at a provider: its ids, unique per test. */
export interface Sale {
  /** The provider's id of the purchase (subscription, or the Lemon Squeezy order). */
  ref: string;
  u: string;
  email: string;
}

export interface PurchaseOptions {
  /** The provider's price / variant id sold. */
  item: string;
  quantity: number;
  /** End of the first period (ISO). */
  periodEnd: string;
}

/** What a kit makes: bodies of the provider's events (an event may be several deliveries, in order). */
export interface ProviderKit {
  name: ProviderName;
  /** Ids a mapping names: the price (variant) sold per seat, one sold as licenses, and one nobody maps. */
  ids: { licenses: string; seats: string; product: string; unmapped: string };
  sale(): Sale;
  purchase(sale: Sale, o: PurchaseOptions): object[];
  /** A paid renewal; `paid` (the item and quantity the renewal charged) where the provider's event names them. */
  renewal(sale: Sale, periodEnd: string, paid?: { item: string; quantity: number }): object;
  refund(sale: Sale): object;
  /** A chargeback opened on the purchase's payment (Lemon Squeezy, the merchant of record, sends none). */
  dispute?(sale: Sale): object;
  cancelAtPeriodEnd(sale: Sale, at: string): object;
  ended(sale: Sale, at: string): object;
  pastDue(sale: Sale): object;
  /** An event type the service does not act on. */
  unknown(): object;
  /** Whether the scheme signs a time (Lemon Squeezy's does not). */
  timed: boolean;
  /** Headers of a delivery of `body`, signed `at` (unix seconds; default the service clock's now). */
  sign(body: string, at?: number): Promise<Record<string, string>>;
}

const unix = (iso: string) => Math.floor(Date.parse(iso) / 1000);
const nowUnix = () => Math.floor(clock.now().getTime() / 1000);
const nowIso = () => clock.now().toISOString();
const uid = () => crypto.randomUUID().replaceAll("-", "").slice(0, 12);

async function hmacHex(secret: string, message: string): Promise<string> {
  const enc = new TextEncoder();
  const key = await crypto.subtle.importKey("raw", enc.encode(secret), { name: "HMAC", hash: "SHA-256" }, false, [
    "sign",
  ]);
  return toHex(await crypto.subtle.sign("HMAC", key, enc.encode(message)));
}

// ---------------------------------------------------------------------------------------------------------------
// Stripe

const stripe = new Stripe("sk_test_unused");
const stripeCrypto = Stripe.createSubtleCryptoProvider();

const stripeEvent = (type: string, object: Record<string, unknown>) => ({
  id: `evt_${uid()}`,
  object: "event",
  api_version: "2026-10-28.endive",
  created: nowUnix(),
  data: { object },
  livemode: false,
  pending_webhooks: 1,
  request: { id: null, idempotency_key: null },
  type,
});

function stripeInvoice(sale: Sale, reason: string, line: { item: string; quantity: number; periodEnd: string }, n = 1) {
  const invoice = `in_${sale.u}${n}`;
  return {
    id: invoice,
    object: "invoice",
    account_country: "US",
    amount_due: 999 * line.quantity,
    amount_paid: 999 * line.quantity,
    amount_remaining: 0,
    billing_reason: reason,
    collection_method: "charge_automatically",
    currency: "usd",
    customer: `cus_${sale.u}`,
    customer_email: sale.email,
    customer_name: "Ada Lovelace",
    lines: {
      object: "list",
      data: [
        {
          id: `il_${sale.u}${n}`,
          object: "line_item",
          amount: 999 * line.quantity,
          currency: "usd",
          description: `${line.quantity} × Pro (at $9.99 / month)`,
          invoice,
          livemode: false,
          metadata: {},
          parent: {
            type: "subscription_item_details",
            subscription_item_details: { subscription: sale.ref, subscription_item: `si_${sale.u}` },
          },
          period: { start: nowUnix(), end: unix(line.periodEnd) },
          pricing: {
            type: "price_details",
            price_details: { price: line.item, product: "prod_commerce_test" },
            unit_amount_decimal: "999",
          },
          quantity: line.quantity,
        },
      ],
      has_more: false,
      url: `/v1/invoices/${invoice}/lines`,
    },
    livemode: false,
    parent: {
      type: "subscription_details",
      quote_details: null,
      subscription_details: { metadata: {}, subscription: sale.ref },
    },
    period_end: nowUnix(),
    period_start: nowUnix(),
    status: "paid",
    status_transitions: { finalized_at: nowUnix(), paid_at: nowUnix() },
    total: 999 * line.quantity,
  };
}

/**
 * The invoice's payment (`invoice_payment.paid`): since API 2025-03-31.basil the only webhook that ties an invoice to
 * its payment intent (an invoice names no payment_intent or charge, and webhook invoices carry no `payments`).
 */
function stripeInvoicePayment(sale: Sale, quantity: number, n = 1) {
  return {
    id: `inpay_${sale.u}${n}`,
    object: "invoice_payment",
    amount_paid: 999 * quantity,
    amount_requested: 999 * quantity,
    created: nowUnix(),
    currency: "usd",
    invoice: `in_${sale.u}${n}`,
    is_default: true,
    livemode: false,
    payment: { type: "payment_intent", payment_intent: `pi_${sale.u}${n}` },
    status: "paid",
    status_transitions: { canceled_at: null, paid_at: nowUnix() },
  };
}

function stripeSubscription(sale: Sale, extra: Record<string, unknown>) {
  return {
    id: sale.ref,
    object: "subscription",
    customer: `cus_${sale.u}`,
    cancel_at: null,
    cancel_at_period_end: false,
    canceled_at: null,
    ended_at: null,
    items: {
      object: "list",
      data: [
        {
          id: `si_${sale.u}`,
          object: "subscription_item",
          current_period_end: nowUnix() + 86_400,
          current_period_start: nowUnix(),
          quantity: 3,
        },
      ],
    },
    status: "active",
    ...extra,
  };
}

export const stripeKit: ProviderKit = {
  name: "stripe",
  ids: {
    licenses: "price_commerce_licenses",
    seats: "price_commerce_seats",
    product: "prod_commerce_test",
    unmapped: "price_nobody_maps",
  },
  timed: true,
  sale: () => {
    const u = uid();
    return { ref: `sub_${u}`, u, email: `ada.${u}@example.com` };
  },
  // Stripe sends both when an invoice is paid, in no set order; the refund of the payment names only its intent.
  purchase: (sale, o) => [
    stripeEvent("invoice.paid", stripeInvoice(sale, "subscription_create", o)),
    stripeEvent("invoice_payment.paid", stripeInvoicePayment(sale, o.quantity)),
  ],
  renewal: (sale, periodEnd, paid = { item: "price_commerce_licenses", quantity: 3 }) =>
    stripeEvent("invoice.paid", stripeInvoice(sale, "subscription_cycle", { ...paid, periodEnd }, 2)),
  pastDue: (sale) =>
    stripeEvent("invoice.payment_failed", {
      ...stripeInvoice(
        sale,
        "subscription_cycle",
        { item: "price_commerce_licenses", quantity: 3, periodEnd: nowIso() },
        2,
      ),
      status: "open",
      amount_paid: 0,
      attempted: true,
      attempt_count: 1,
    }),
  refund: (sale) =>
    stripeEvent("charge.refunded", {
      id: `ch_${sale.u}`,
      object: "charge",
      amount: 2997,
      amount_captured: 2997,
      amount_refunded: 2997,
      captured: true,
      currency: "usd",
      customer: `cus_${sale.u}`,
      paid: true,
      payment_intent: `pi_${sale.u}1`,
      refunded: true,
      status: "succeeded",
    }),
  dispute: (sale) =>
    stripeEvent("charge.dispute.created", {
      id: `dp_${sale.u}`,
      object: "dispute",
      amount: 2997,
      charge: `ch_${sale.u}`,
      currency: "usd",
      payment_intent: `pi_${sale.u}1`,
      reason: "fraudulent",
      status: "needs_response",
    }),
  cancelAtPeriodEnd: (sale, at) =>
    stripeEvent(
      "customer.subscription.updated",
      stripeSubscription(sale, { cancel_at_period_end: true, cancel_at: unix(at) }),
    ),
  ended: (sale, at) =>
    stripeEvent(
      "customer.subscription.deleted",
      stripeSubscription(sale, { status: "canceled", canceled_at: unix(at), ended_at: unix(at) }),
    ),
  unknown: () => stripeEvent("customer.created", { id: `cus_${uid()}`, object: "customer", email: "new@example.com" }),
  sign: async (body, at = nowUnix()) => ({
    "stripe-signature": await stripe.webhooks.generateTestHeaderStringAsync({
      payload: body,
      secret: SECRETS.stripe,
      timestamp: at,
      cryptoProvider: stripeCrypto,
    }),
  }),
};

// ---------------------------------------------------------------------------------------------------------------
// Paddle Billing

const paddleEvent = (event_type: string, data: Record<string, unknown>) => ({
  event_id: `evt_01${uid()}`,
  event_type,
  occurred_at: nowIso(),
  notification_id: `ntf_01${uid()}`,
  data,
});

function paddleTransaction(sale: Sale, origin: string, o: PurchaseOptions, n = 1) {
  const total = String(999 * o.quantity);
  return {
    id: `txn_01${sale.u}${n}`,
    status: "completed",
    customer_id: `ctm_01${sale.u}`,
    address_id: `add_01${sale.u}`,
    business_id: null,
    custom_data: { email: sale.email, name: "Ada Lovelace" },
    currency_code: "USD",
    origin,
    subscription_id: sale.ref,
    invoice_id: `inv_01${sale.u}${n}`,
    invoice_number: `325-${n}`,
    collection_mode: "automatic",
    discount_id: null,
    billing_details: null,
    billing_period: { starts_at: nowIso(), ends_at: o.periodEnd },
    items: [
      {
        price_id: o.item,
        price: {
          id: o.item,
          description: "Monthly",
          product_id: "pro_01commerce",
          billing_cycle: { interval: "month", frequency: 1 },
          trial_period: null,
          tax_mode: "account_setting",
          unit_price: { amount: "999", currency_code: "USD" },
          quantity: { minimum: 1, maximum: 100 },
          status: "active",
        },
        quantity: o.quantity,
        proration: null,
      },
    ],
    details: {
      totals: {
        subtotal: total,
        tax: "0",
        discount: "0",
        total,
        grand_total: total,
        fee: null,
        earnings: null,
        currency_code: "USD",
      },
    },
    payments: [{ payment_attempt_id: uid(), amount: total, status: "captured", method_details: { type: "card" } }],
    checkout: { url: null },
    created_at: nowIso(),
    updated_at: nowIso(),
    billed_at: nowIso(),
  };
}

function paddleSubscription(sale: Sale, extra: Record<string, unknown>) {
  return {
    id: sale.ref,
    status: "active",
    customer_id: `ctm_01${sale.u}`,
    address_id: `add_01${sale.u}`,
    currency_code: "USD",
    collection_mode: "automatic",
    billing_cycle: { interval: "month", frequency: 1 },
    current_billing_period: {
      starts_at: nowIso(),
      ends_at: new Date(clock.now().getTime() + 86_400_000).toISOString(),
    },
    scheduled_change: null,
    items: [{ status: "active", quantity: 3, price: { id: "pri_01commerce_licenses", product_id: "pro_01commerce" } }],
    custom_data: null,
    created_at: nowIso(),
    updated_at: nowIso(),
    canceled_at: null,
    ...extra,
  };
}

export const paddleKit: ProviderKit = {
  name: "paddle",
  ids: {
    licenses: "pri_01commerce_licenses",
    seats: "pri_01commerce_seats",
    product: "pro_01commerce",
    unmapped: "pri_01nobody",
  },
  timed: true,
  sale: () => {
    const u = uid();
    return { ref: `sub_01${u}`, u, email: `ada.${u}@example.com` };
  },
  purchase: (sale, o) => [paddleEvent("transaction.completed", paddleTransaction(sale, "web", o))],
  renewal: (sale, periodEnd, paid = { item: "pri_01commerce_licenses", quantity: 3 }) =>
    paddleEvent("transaction.completed", paddleTransaction(sale, "subscription_recurring", { ...paid, periodEnd }, 2)),
  pastDue: (sale) => paddleEvent("subscription.past_due", paddleSubscription(sale, { status: "past_due" })),
  refund: (sale) =>
    paddleEvent("adjustment.updated", {
      id: `adj_01${sale.u}`,
      action: "refund",
      type: "full",
      transaction_id: `txn_01${sale.u}1`,
      subscription_id: sale.ref,
      customer_id: `ctm_01${sale.u}`,
      reason: "error",
      currency_code: "USD",
      status: "approved",
      items: [],
      totals: { subtotal: "2997", tax: "0", total: "2997", fee: "0", earnings: "0", currency_code: "USD" },
      created_at: nowIso(),
      updated_at: nowIso(),
    }),
  dispute: (sale) =>
    paddleEvent("adjustment.created", {
      id: `adj_01${sale.u}c`,
      action: "chargeback",
      type: "full",
      transaction_id: `txn_01${sale.u}1`,
      subscription_id: sale.ref,
      customer_id: `ctm_01${sale.u}`,
      reason: "chargeback",
      currency_code: "USD",
      status: "approved",
      items: [],
      totals: { subtotal: "2997", tax: "0", total: "2997", fee: "0", earnings: "0", currency_code: "USD" },
      created_at: nowIso(),
      updated_at: nowIso(),
    }),
  cancelAtPeriodEnd: (sale, at) =>
    paddleEvent(
      "subscription.updated",
      paddleSubscription(sale, { scheduled_change: { action: "cancel", effective_at: at, resume_at: null } }),
    ),
  ended: (sale, at) =>
    paddleEvent(
      "subscription.canceled",
      paddleSubscription(sale, { status: "canceled", canceled_at: at, current_billing_period: null }),
    ),
  unknown: () => paddleEvent("customer.created", { id: `ctm_01${uid()}`, email: "new@example.com", status: "active" }),
  sign: async (body, at = nowUnix()) => ({
    "paddle-signature": `ts=${at};h1=${await hmacHex(SECRETS.paddle, `${at}:${body}`)}`,
  }),
};

// ---------------------------------------------------------------------------------------------------------------
// Lemon Squeezy

const lsEvent = (event_name: string, type: string, id: string, attributes: Record<string, unknown>) => ({
  meta: { event_name, custom_data: null, test_mode: true, webhook_id: "5b2d1c4e-commerce-test" },
  data: { type, id, attributes, relationships: {}, links: { self: `https://api.lemonsqueezy.com/v1/${type}/${id}` } },
});

/** The buyer's Lemon Squeezy customer id: one per sale, as each test's buyer is another customer. */
const lsCustomer = (sale: Sale) => 500_000 + Number(sale.ref);

function lsSubscription(sale: Sale, extra: Record<string, unknown>) {
  return {
    store_id: 1,
    customer_id: lsCustomer(sale),
    order_id: Number(sale.ref),
    order_item_id: 1,
    product_id: 4242,
    variant_id: 1001,
    product_name: "Pro",
    variant_name: "Monthly",
    user_name: "Ada Lovelace",
    user_email: sale.email,
    status: "active",
    status_formatted: "Active",
    card_brand: "visa",
    card_last_four: "4242",
    pause: null,
    cancelled: false,
    trial_ends_at: null,
    billing_anchor: 1,
    renews_at: null,
    ends_at: null,
    created_at: nowIso(),
    updated_at: nowIso(),
    test_mode: true,
    ...extra,
  };
}

let lsCounter = Math.floor(Math.random() * 1_000_000);

export const lemonSqueezyKit: ProviderKit = {
  name: "lemonsqueezy",
  ids: { licenses: "1001", seats: "1002", product: "4242", unmapped: "9999" },
  timed: false,
  sale: () => {
    const u = uid();
    lsCounter++;
    return { ref: String(lsCounter), u, email: `ada.${u}@example.com` };
  },
  purchase: (sale, o) => [
    lsEvent("order_created", "orders", sale.ref, {
      store_id: 1,
      customer_id: lsCustomer(sale),
      identifier: `${sale.u}-order`,
      order_number: Number(sale.ref),
      user_name: "Ada Lovelace",
      user_email: sale.email,
      currency: "USD",
      currency_rate: "1.0000",
      subtotal: 999 * o.quantity,
      discount_total: 0,
      tax: 0,
      total: 999 * o.quantity,
      status: "paid",
      status_formatted: "Paid",
      refunded: false,
      refunded_at: null,
      first_order_item: {
        id: Number(sale.ref),
        order_id: Number(sale.ref),
        product_id: 4242,
        variant_id: Number(o.item),
        product_name: "Pro",
        variant_name: "Monthly",
        price: 999,
        quantity: o.quantity,
        created_at: nowIso(),
        updated_at: nowIso(),
        test_mode: true,
      },
      created_at: nowIso(),
      updated_at: nowIso(),
      test_mode: true,
    }),
    lsEvent("subscription_created", "subscriptions", `9${sale.ref}`, lsSubscription(sale, { renews_at: o.periodEnd })),
  ],
  renewal: (sale, periodEnd, paid) =>
    lsEvent(
      "subscription_updated",
      "subscriptions",
      `9${sale.ref}`,
      lsSubscription(sale, {
        renews_at: periodEnd,
        ...(paid
          ? {
              variant_id: Number(paid.item),
              first_subscription_item: {
                id: Number(`7${sale.ref}`),
                subscription_id: Number(`9${sale.ref}`),
                price_id: 1,
                quantity: paid.quantity,
              },
            }
          : {}),
      }),
    ),
  pastDue: (sale) =>
    lsEvent("subscription_payment_failed", "subscription-invoices", `8${sale.ref}`, {
      store_id: 1,
      subscription_id: Number(`9${sale.ref}`),
      customer_id: lsCustomer(sale),
      user_name: "Ada Lovelace",
      user_email: sale.email,
      billing_reason: "renewal",
      currency: "USD",
      status: "pending",
      total: 2997,
      created_at: nowIso(),
      updated_at: nowIso(),
      test_mode: true,
    }),
  refund: (sale) =>
    lsEvent("order_refunded", "orders", sale.ref, {
      store_id: 1,
      customer_id: lsCustomer(sale),
      identifier: `${sale.u}-order`,
      user_email: sale.email,
      total: 2997,
      status: "refunded",
      refunded: true,
      refunded_at: nowIso(),
    }),
  cancelAtPeriodEnd: (sale, at) =>
    lsEvent(
      "subscription_cancelled",
      "subscriptions",
      `9${sale.ref}`,
      lsSubscription(sale, { status: "cancelled", cancelled: true, ends_at: at }),
    ),
  ended: (sale, at) =>
    lsEvent(
      "subscription_expired",
      "subscriptions",
      `9${sale.ref}`,
      lsSubscription(sale, { status: "expired", ends_at: at }),
    ),
  unknown: () =>
    lsEvent("license_key_created", "license-keys", String(lsCounter++), { key: "unused", status: "active" }),
  sign: async (body) => ({ "x-signature": await hmacHex(SECRETS.lemonsqueezy, body) }),
};

export const KITS = [stripeKit, paddleKit, lemonSqueezyKit];

/** Delivers one event body as the provider would: the exact bytes signed. */
export async function deliver(
  kit: ProviderKit,
  event: object,
  o: { at?: number; tamper?: (body: string) => string } = {},
) {
  const body = JSON.stringify(event);
  const headers = await kit.sign(body, o.at);
  return call("POST", `/v1/commerce/${kit.name}/webhook`, {
    raw: o.tamper ? o.tamper(body) : body,
    headers: { ...headers, "content-type": "application/json" },
  });
}

/** Log entries whose message contains `text`, once the request's log (written after the answer) is there. */
export async function logged(text: string): Promise<number> {
  const deadline = Date.now() + 5000;
  for (;;) {
    const row = await env.DB.prepare("SELECT count(*) AS n FROM logs WHERE instr(message, ?) > 0")
      .bind(text)
      .first<{ n: number }>();
    if ((row?.n ?? 0) > 0 || Date.now() > deadline) return row?.n ?? 0;
    await new Promise((r) => setTimeout(r, 50));
  }
}
