/**
 * Stripe Checkout's one-time purchases (issue 37): `checkout.session.completed` carries no line items, so the service
 * reads them with the official SDK and the vendor's restricted key (Commerce:Stripe:ApiKey) — here from Stripe's own
 * mock server (stripe-mock, built with `go install` at a pinned version: scripts/ensure-stripe-mock.mjs), the bundled
 * Worker under Miniflare talking to it. The session's purchase makes its license exactly once, also when Stripe
 * created an invoice for it (its invoice.paid is the same purchase, in either order); its refund revokes it; and
 * without a key the event makes nothing and says what to set.
 */
import { createHash } from "node:crypto";
import Stripe from "stripe";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
// @ts-expect-error: plain JavaScript modules shared with the scripts
import { startLocalWorker } from "../../scripts/local-worker.mjs";
// @ts-expect-error: a plain JavaScript module
import { startStripeMock } from "../../scripts/ensure-stripe-mock.mjs";
import type { JsonBody } from "../json-body.ts";

const KEY = "api_StripeCheckoutAdminKey00000000000";
const SECRET = "whsec_StripeCheckoutTestSigningSecret4242";
const stripe = new Stripe("sk_test_unused");
type Worker = { url: URL; dispose(): Promise<void> };
let mock: { origin: string; stop(): void };
let worker: Worker;
let keyless: Worker;
/** The price stripe-mock's line items name (its fixture), mapped to a license template. */
let price = "";

const secrets = {
  Application__JwtSecret: "stripe-checkout-test-jwt-secret-0123456789",
  Application__EncryptionKey: "stripe-checkout-test-encryption-key",
  Application__AdminUsername: "admin",
  Application__AdminPassword: "Checkout-12345",
  Application__AdminApiKey: KEY,
  Commerce__Stripe__WebhookSecret: SECRET,
};

async function api(w: Worker, method: string, path: string, body?: unknown): Promise<JsonBody> {
  const res = await fetch(new URL(path, w.url), {
    method,
    headers: { "x-api-key": KEY, "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return (await res.json()) as JsonBody;
}

const uid = () => createHash("sha256").update(crypto.randomUUID()).digest("hex").slice(0, 14);
const event = (type: string, object: Record<string, unknown>) => ({
  id: `evt_${uid()}`,
  object: "event",
  api_version: "2026-10-28.endive",
  created: Math.floor(Date.now() / 1000),
  data: { object },
  livemode: false,
  pending_webhooks: 1,
  request: { id: null, idempotency_key: null },
  type,
});

/** A completed Checkout Session of a one-time payment, as Stripe sends it (no line_items). */
function session(u: string, o: { invoice?: boolean } = {}) {
  return event("checkout.session.completed", {
    id: `cs_test_${u}`,
    object: "checkout.session",
    mode: "payment",
    status: "complete",
    payment_status: "paid",
    amount_total: 1000,
    currency: "usd",
    customer: null,
    customer_details: { email: `buyer.${u}@example.com`, name: "Grace Hopper" },
    payment_intent: `pi_${u}`,
    invoice: o.invoice ? `in_${u}` : null,
    created: Math.floor(Date.now() / 1000),
  });
}

/** The invoice Stripe makes for a session with invoice creation on, paid (billing_reason manual). */
function invoicePaid(u: string) {
  return event("invoice.paid", {
    id: `in_${u}`,
    object: "invoice",
    billing_reason: "manual",
    customer: null,
    customer_email: `buyer.${u}@example.com`,
    customer_name: "Grace Hopper",
    amount_paid: 1000,
    currency: "usd",
    status: "paid",
    status_transitions: { paid_at: Math.floor(Date.now() / 1000) },
    lines: {
      object: "list",
      data: [
        {
          id: `il_${u}`,
          object: "line_item",
          amount: 1000,
          quantity: 1,
          description: "T-shirt",
          pricing: { price_details: { price, product: "prod_mock" } },
          period: { start: Math.floor(Date.now() / 1000), end: Math.floor(Date.now() / 1000) },
        },
      ],
    },
  });
}

async function deliver(w: Worker, body: object): Promise<JsonBody> {
  const raw = JSON.stringify(body);
  const res = await fetch(new URL("/v1/commerce/stripe/webhook", w.url), {
    method: "POST",
    headers: {
      "content-type": "application/json",
      "stripe-signature": stripe.webhooks.generateTestHeaderString({ payload: raw, secret: SECRET }),
    },
    body: raw,
  });
  expect(res.status).toBe(200);
  return (await res.json()) as JsonBody;
}

async function licensesOf(orderId: number): Promise<{ revoked: boolean }[]> {
  return (await api(worker, "GET", `/v1/licenses?filter=${encodeURIComponent(`orderId == ${orderId}`)}`))["licenses"];
}

beforeAll(async () => {
  mock = await startStripeMock();
  worker = await startLocalWorker({
    bindings: { ...secrets, Commerce__Stripe__ApiKey: "sk_test_checkout", Commerce__Stripe__ApiUrl: mock.origin },
  });
  keyless = await startLocalWorker({ bindings: secrets });
  // What stripe-mock answers for any session's line items: the price to map.
  const items = await (
    await fetch(`${mock.origin}/v1/checkout/sessions/cs_test_any/line_items`, {
      headers: { authorization: "Bearer sk_test_checkout" },
    })
  ).json();
  price = (items as { data: { price: { id: string } }[] }).data[0]!.price.id;
  for (const w of [worker, keyless]) {
    const product = await api(w, "POST", "/v1/products", { product: { code: "shirt", name: "Shirt" } });
    const template = await api(w, "POST", "/v1/license-templates", {
      licenseTemplate: { name: "Shirt", productId: product["productId"], licensingMode: "Activation", maxClients: 2 },
    });
    const mapping = await api(w, "POST", "/v1/commerce/mappings", {
      mapping: { provider: "stripe", externalId: price, templateId: template["licenseTemplateId"] },
    });
    expect(mapping["success"], JSON.stringify(mapping)).toBe(true);
  }
}, 300_000);

afterAll(async () => {
  await worker?.dispose();
  await keyless?.dispose();
  mock?.stop();
});

describe("Stripe Checkout one-time purchases", () => {
  it("make the license from the session's line items, read with the API; a redelivery and the refund act once", async () => {
    const u = uid();
    const first = await deliver(worker, session(u));
    expect(first["result"], JSON.stringify(first)).toBe("applied");
    const orderId = first["orderId"] as number;
    expect(await licensesOf(orderId)).toHaveLength(1);
    const order = (await api(worker, "GET", `/v1/orders?filter=${encodeURIComponent(`id == ${orderId}`)}`))["orders"];
    expect(order[0]).toMatchObject({ paymentType: "stripe", paymentNumber: `cs_test_${u}`, total: 10 });
    expect((await deliver(worker, session(u)))["result"]).toBe("applied");
    expect(await licensesOf(orderId)).toHaveLength(1);
    const refund = event("charge.refunded", {
      id: `ch_${u}`,
      object: "charge",
      amount: 1000,
      amount_refunded: 1000,
      payment_intent: `pi_${u}`,
      refunded: true,
      status: "succeeded",
    });
    expect((await deliver(worker, refund))["result"]).toBe("applied");
    expect((await licensesOf(orderId)).every((l) => l.revoked)).toBe(true);
  });

  it("are one purchase with the invoice Stripe made for the session, whichever event comes first", async () => {
    for (const order of [
      ["session", "invoice"],
      ["invoice", "session"],
    ]) {
      const u = uid();
      const orders = new Set<number>();
      for (const which of order) {
        const answer = await deliver(worker, which === "session" ? session(u, { invoice: true }) : invoicePaid(u));
        expect(answer["result"], JSON.stringify(answer)).toBe("applied");
        orders.add(answer["orderId"] as number);
      }
      expect([...orders], order.join(" then ")).toHaveLength(1);
      expect(await licensesOf([...orders][0]!)).toHaveLength(1);
    }
  });

  it("make nothing without Commerce:Stripe:ApiKey, and say what to set", async () => {
    const answer = await deliver(keyless, session(uid()));
    expect(answer["result"]).toBe("failed");
    expect(answer["message"] ?? answer["detail"]).toMatch(/set Commerce:Stripe:ApiKey/);
    expect((await api(keyless, "GET", "/v1/orders"))["orders"]).toHaveLength(0);
  });
});
