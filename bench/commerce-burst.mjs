// The commerce webhook under a provider's burst (issue 28): distinct signed purchase events sent at a fixed rate,
// open loop (a new delivery starts on schedule whether or not earlier ones were answered, as a provider's queue
// sends), each event delivered twice (its redelivery 0 to 1 s later, and every tenth one twice at the same instant,
// as a provider's retry after a timeout and its concurrent duplicate). Afterwards D1 is counted: every event must
// have made exactly one order with its licenses (no event lost, no duplicate order), and the buyers' emails must
// have made one customer each.
//
// Lemon Squeezy's scheme signs the body alone (hex HMAC-SHA256, no timestamp), so the events are signed before the
// clock starts and the sending measures the service, not the signing.
import { createHmac } from "node:crypto";

export const COMMERCE_SECRET = "bench-lemonsqueezy-webhook-secret";
const VARIANT = "9001";
const QUANTITY = 2;

function orderCreated(orderId, email) {
  return JSON.stringify({
    meta: { event_name: "order_created", custom_data: {} },
    data: {
      type: "orders",
      id: String(orderId),
      attributes: {
        store_id: 1,
        customer_id: 100000 + (orderId % 1000),
        identifier: `bench-${orderId}`,
        order_number: orderId,
        user_name: "Bench Buyer",
        user_email: email,
        currency: "USD",
        status: "paid",
        total: 4900 * QUANTITY,
        created_at: new Date().toISOString(),
        first_order_item: {
          order_id: orderId,
          product_id: 9000,
          variant_id: Number(VARIANT),
          product_name: "Bench",
          variant_name: "Yearly",
          price: 4900,
          quantity: QUANTITY,
        },
      },
    },
  });
}

const percentile = (sorted, p) =>
  sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] : 0;

/**
 * Maps the bench variant to a new template, sends `events` distinct purchases at `rate` per second (each twice),
 * and counts what D1 holds afterwards. `api(method, path, body)` calls the Management API with the admin key and
 * answers the JSON body; `d1()` answers the service's D1 database.
 */
export async function commerceBurst({ url, api, d1, events, rate, buyers = 50 }) {
  const product = await api("POST", "/v1/products", {
    product: { name: "Bench commerce", code: `bench-commerce-${Date.now()}` },
  });
  const template = await api("POST", "/v1/license-templates", {
    licenseTemplate: { name: "Bench yearly", productId: product.productId, maxClients: 1, expireDays: 365 },
  });
  await api("POST", "/v1/commerce/mappings", {
    mapping: {
      provider: "lemonsqueezy",
      externalId: VARIANT,
      templateId: template.licenseTemplateId,
      quantityMode: "licenses",
    },
  });
  const firstOrder = 5_000_000 + Math.floor(Math.random() * 1_000_000);
  const signed = Array.from({ length: events }, (_, i) => {
    const body = orderCreated(firstOrder + i, `buyer${i % buyers}@bench.example`);
    return { body, signature: createHmac("sha256", COMMERCE_SECRET).update(body).digest("hex") };
  });
  const endpoint = new URL("/v1/commerce/lemonsqueezy/webhook", url);
  const latencies = [];
  const statuses = new Map();
  const deliver = async ({ body, signature }) => {
    const t0 = performance.now();
    try {
      const res = await fetch(endpoint, {
        method: "POST",
        headers: { "content-type": "application/json", "x-event-name": "order_created", "x-signature": signature },
        body,
      });
      await res.arrayBuffer();
      statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
    } catch (e) {
      statuses.set(
        `error ${e.cause?.code ?? e.message}`,
        (statuses.get(`error ${e.cause?.code ?? e.message}`) ?? 0) + 1,
      );
    }
    latencies.push(performance.now() - t0);
  };
  const started = performance.now();
  const inFlight = [];
  for (let i = 0; i < events; i++) {
    const due = started + (i * 1000) / rate;
    const wait = due - performance.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    inFlight.push(deliver(signed[i]));
    // The redelivery: at once for every tenth event (a concurrent duplicate), else up to a second later.
    const later = i % 10 === 0 ? 0 : Math.random() * 1000;
    inFlight.push(new Promise((r) => setTimeout(r, later)).then(() => deliver(signed[i])));
  }
  await Promise.all(inFlight);
  const seconds = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);

  const db = await d1();
  // The events' order ids are consecutive: each count is over that range (no bound-parameter limit).
  const ours = "payment_type = 'lemonsqueezy' AND CAST(payment_number AS INTEGER) BETWEEN ?1 AND ?2";
  const counted = await db
    .prepare(
      `SELECT (SELECT count(*) FROM orders WHERE ${ours}) AS orders,
              (SELECT count(DISTINCT payment_number) FROM orders WHERE ${ours}) AS distinctOrders,
              (SELECT count(*) FROM licenses WHERE order_id IN (SELECT id FROM orders WHERE ${ours})) AS licenses,
              (SELECT count(*) FROM commerce_events WHERE provider = 'lemonsqueezy'
                 AND CAST(purchase_ref AS INTEGER) BETWEEN ?1 AND ?2) AS events`,
    )
    .bind(firstOrder, firstOrder + events - 1)
    .first();
  const { orders, distinctOrders, licenses, events: eventRows } = counted;
  const customers = await db
    .prepare(
      "SELECT count(*) AS n, count(DISTINCT email) AS distinctEmails FROM customers WHERE email LIKE '%@bench.example'",
    )
    .first();
  return {
    events,
    deliveries: events * 2,
    rate,
    seconds,
    achieved: (events * 2) / seconds,
    statuses: Object.fromEntries(statuses),
    p50: Math.round(percentile(latencies, 0.5)),
    p99: Math.round(percentile(latencies, 0.99)),
    orders,
    lost: events - distinctOrders,
    duplicateOrders: orders - distinctOrders,
    licenses,
    expectedLicenses: events * QUANTITY,
    eventRows,
    customers: customers.n,
    buyers: Math.min(buyers, events),
  };
}

/** The result as a Markdown table row (with its header), for the bench report. */
export function commerceRows(r) {
  const ok = Object.entries(r.statuses)
    .map(([status, n]) => `${status}: ${n}`)
    .join(", ");
  return [
    "| events | deliveries (each twice) | target rate /s | achieved deliveries/s | answers | p50 ms | p99 ms | orders in D1 | lost | duplicate orders | licenses (expected) | event rows | customers (buyers) |",
    "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    `| ${r.events} | ${r.deliveries} | ${r.rate} | ${r.achieved.toFixed(0)} | ${ok} | ${r.p50} | ${r.p99} | ${r.orders} | ${r.lost} | ${r.duplicateOrders} | ${r.licenses} (${r.expectedLicenses}) | ${r.eventRows} | ${r.customers} (${r.buyers}) |`,
  ];
}
