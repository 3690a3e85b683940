/**
 * Payments to licenses through the API (CONTRACT section 10), the same scenarios for Stripe, Paddle Billing and
 * Lemon Squeezy (fixtures and signatures: test/commerce-kit.ts): purchases of 3 as licenses and as seats, renewal,
 * refund, cancellation at period end on a test clock, past due then paid, redelivery, two concurrent deliveries,
 * a refund before its payment, an unmapped product, and the refusals (bad signature, stale timestamp, body changed
 * after signing, malformed JSON) that write nothing. The license email goes once per purchase with every key.
 */
import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { clock } from "../src/kernel/clock";
import { PROCESSING_LEASE_MS } from "../src/commerce/purchases";
import { OrderStatus, PaymentStatus } from "../src/records/orders";
import { KITS, type ProviderKit, type Sale, deliver, logged, stripeKit } from "./commerce-kit";
import { admin, call, countRows, keyFor, movableClock, setSetting } from "./helpers";

const DAY = 86_400_000;
// Order and payment statuses as the API writes them (numbers by default; src/records/orders.ts).
const [COMPLETED, CANCELLED] = [OrderStatus.indexOf("Completed"), OrderStatus.indexOf("Cancelled")];
const [PAID, REFUNDED] = [PaymentStatus.indexOf("Paid"), PaymentStatus.indexOf("Refunded")];
const q = (expr: string) => encodeURIComponent(expr);
const inDays = (days: number) => new Date(Math.floor((clock.now().getTime() + days * DAY) / 1000) * 1000).toISOString();
const testClock = await movableClock();

interface License {
  licenseId: string;
  userKey: string;
  maxClients: number;
  expireDate?: string;
  supportExpireDate?: string;
  revoked: boolean;
  status: string;
  templateId: number;
  customerId: number;
}

let templateId = 0;
let seatsTemplateId = 0;

async function licensesOf(orderId: number): Promise<License[]> {
  const res = await admin("GET", `/v1/licenses?filter=${q(`orderId == ${orderId}`)}&sort=id`);
  expect(res.status, res.text).toBe(200);
  return res.body["licenses"];
}

async function purchasesOf(kit: ProviderKit) {
  const purchases = await admin("GET", `/v1/commerce/purchases?filter=${q(`provider == "${kit.name}"`)}`);
  expect(purchases.status, purchases.text).toBe(200);
  return purchases.body["purchases"] as { id: number; purchaseRef: string; state: string; orderId?: number }[];
}

/** Delivers every event of a purchase and answers the order it made. */
async function buy(kit: ProviderKit, sale: Sale, item: string, quantity = 3, periodEnd = inDays(30)): Promise<number> {
  let orderId: number | undefined;
  for (const event of kit.purchase(sale, { item, quantity, periodEnd })) {
    const res = await deliver(kit, event);
    expect(res.status, res.text).toBe(200);
    expect(res.body["result"], res.text).toBe("applied");
    orderId ??= res.body["orderId"];
  }
  expect(orderId).toBeGreaterThan(0);
  return orderId!;
}

async function outbox(to: string): Promise<{ subject: string; body: string }[]> {
  const { results } = await env.DB.prepare("SELECT subject, body FROM email_outbox WHERE to_address = ?")
    .bind(to)
    .all<{ subject: string; body: string }>();
  return results;
}

beforeAll(async () => {
  const product = await admin("POST", "/v1/products", {
    product: { code: `commerce-${crypto.randomUUID().slice(0, 6)}`, name: "Pro" },
  });
  expect(product.status, product.text).toBe(200);
  const productId = product.body["productId"];
  const template = await admin("POST", "/v1/license-templates", {
    licenseTemplate: {
      name: "Pro yearly",
      productId,
      licensingMode: "Activation",
      maxClients: 2,
      expireDays: 365,
      supportDays: 365,
    },
  });
  expect(template.status, template.text).toBe(200);
  templateId = template.body["licenseTemplateId"];
  const seats = await admin("POST", "/v1/license-templates", {
    licenseTemplate: { name: "Pro floating", productId, licensingMode: "Floating", maxClients: 5, expireDays: 365 },
  });
  seatsTemplateId = seats.body["licenseTemplateId"];
  const mail = await admin("POST", "/v1/resources", {
    resource: { name: "Your {ProductName} license", type: "EmailTemplate", data: "License {LicenseId}: {UserKey}" },
  });
  expect(mail.status, mail.text).toBe(200);
  for (const kit of KITS) {
    for (const [externalId, id, quantityMode] of [
      [kit.ids.licenses, templateId, "licenses"],
      [kit.ids.seats, seatsTemplateId, "seats"],
    ] as const) {
      const res = await admin("POST", "/v1/commerce/mappings", {
        mapping: { provider: kit.name, externalId, templateId: id, quantityMode },
      });
      expect(res.status, res.text).toBe(200);
    }
  }
});

describe("commerce mappings", () => {
  it("need an existing template (400 naming it), Administrator or Sales, and one mapping per provider id", async () => {
    const before = await countRows("commerce_mappings");
    const missing = await admin("POST", "/v1/commerce/mappings", {
      mapping: { provider: "stripe", externalId: "price_ghost", templateId: 987654 },
    });
    expect(missing.status).toBe(400);
    expect(missing.body["message"]).toBe("LicenseTemplate 987654 not found (templateId)");
    const twice = await admin("POST", "/v1/commerce/mappings", {
      mapping: { provider: "stripe", externalId: stripeKit.ids.licenses, templateId },
    });
    expect(twice.status).toBe(400);
    expect(await countRows("commerce_mappings")).toBe(before);

    const manager = await keyFor(["LicenseManager"]);
    const refused = await call("POST", "/v1/commerce/mappings", {
      key: manager,
      body: { mapping: { provider: "paddle", externalId: "pri_01manager", templateId } },
    });
    expect(refused.status).toBe(403);
    const sales = await keyFor(["Sales"]);
    const made = await call("POST", "/v1/commerce/mappings", {
      key: sales,
      body: { mapping: { provider: "paddle", externalId: "pri_01sales", templateId } },
    });
    expect(made.status, made.text).toBe(200);
    const [mapping] = (await admin("GET", `/v1/commerce/mappings?filter=${q(`externalId == "pri_01sales"`)}`)).body[
      "mappings"
    ];
    expect(mapping).toMatchObject({ provider: "paddle", templateId, quantityMode: "licenses" });
    const moved = await call("PUT", "/v1/commerce/mappings", {
      key: sales,
      body: { mapping: { id: made.body["mappingId"], templateId: 987654 } },
    });
    expect(moved.status).toBe(400);
    expect((await call("DELETE", `/v1/commerce/mappings/${made.body["mappingId"]}`, { key: sales })).status).toBe(200);
  });

  it("answers 404 for a provider without a webhook secret", async () => {
    await setSetting("Commerce:Paddle:WebhookSecret", " ");
    try {
      const sale = KITS[1]!.sale();
      const res = await deliver(KITS[1]!, KITS[1]!.refund(sale));
      expect(res.status).toBe(404);
    } finally {
      await setSetting("Commerce:Paddle:WebhookSecret", null);
    }
  });
});

describe.each(KITS)("$name webhooks", (kit) => {
  it("a purchase of 3 as licenses: customer, order and line, 3 licenses, one email with every key; a redelivery changes nothing", async () => {
    const sale = kit.sale();
    const periodEnd = inDays(30);
    const [first, ...rest] = kit.purchase(sale, { item: kit.ids.licenses, quantity: 3, periodEnd });
    const res = await deliver(kit, first!);
    expect(res.status, res.text).toBe(200);
    expect(res.body["result"]).toBe("applied");
    for (const event of rest) expect((await deliver(kit, event)).status).toBe(200);
    const orderId = res.body["orderId"] as number;

    const order = (await admin("GET", `/v1/orders?filter=${q(`id == ${orderId}`)}`)).body["orders"][0];
    expect(order).toMatchObject({ status: COMPLETED, paymentStatus: PAID, paymentType: kit.name });
    const lines = (await admin("GET", `/v1/orders/${orderId}/products`)).body["orderProducts"];
    expect(lines).toHaveLength(1);
    expect(lines[0].quantity).toBe(3);
    const customer = (await admin("GET", `/v1/customers?filter=${q(`id == ${order.customerId}`)}`)).body[
      "customers"
    ][0];
    expect(customer).toMatchObject({ email: sale.email, firstName: "Ada", lastName: "Lovelace" });

    const licenses = await licensesOf(orderId);
    expect(licenses).toHaveLength(3);
    for (const license of licenses) {
      expect(license).toMatchObject({
        templateId,
        maxClients: 2,
        revoked: false,
        status: "NotActivated",
        customerId: customer.id,
      });
      expect(license.expireDate).toBe(periodEnd);
    }
    const mails = await outbox(sale.email);
    expect(mails).toHaveLength(1);
    for (const license of licenses) expect(mails[0]!.body).toContain(license.userKey);

    // The same delivery again (the provider's retry): 200, nothing new.
    const orders = await countRows("orders");
    const again = await deliver(kit, first!);
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ result: "duplicate", orderId });
    expect(await countRows("orders")).toBe(orders);
    expect(await licensesOf(orderId)).toHaveLength(3);
    expect(await outbox(sale.email)).toHaveLength(1);

    // The order's event history, as the console shows it.
    const history = (await admin("GET", `/v1/commerce/events?filter=${q(`orderId == ${orderId}`)}&sort=id`)).body[
      "events"
    ];
    expect(history[0]).toMatchObject({
      provider: kit.name,
      action: "purchase",
      status: "applied",
      eventId: res.body["eventId"],
    });
  });

  it("a purchase of 3 as seats: one license with maxClients 3 x the template's", async () => {
    const sale = kit.sale();
    const orderId = await buy(kit, sale, kit.ids.seats);
    const licenses = await licensesOf(orderId);
    expect(licenses).toHaveLength(1);
    expect(licenses[0]).toMatchObject({ templateId: seatsTemplateId, maxClients: 15, revoked: false });
    expect((await outbox(sale.email))[0]!.body).toContain(licenses[0]!.userKey);
  });

  it("a renewal moves expiry and support; past due stays usable for Commerce:GraceDays; paid again renews", async () => {
    const sale = kit.sale();
    const orderId = await buy(kit, sale, kit.ids.licenses, 3, inDays(30));
    const renewed = inDays(60);
    expect((await deliver(kit, kit.renewal(sale, renewed))).body["result"]).toBe("applied");
    for (const license of await licensesOf(orderId))
      expect(license).toMatchObject({ expireDate: renewed, supportExpireDate: renewed, status: "NotActivated" });

    // The period ends unpaid: the renewal payment fails.
    testClock.move(61 * DAY);
    const due = await deliver(kit, kit.pastDue(sale));
    expect(due.body["result"], due.text).toBe("applied");
    // The grace runs from the end of the paid period (issue 36, N10), not from the event.
    const grace = new Date(Date.parse(renewed) + 7 * DAY).toISOString();
    for (const license of await licensesOf(orderId)) {
      expect(license.expireDate).toBe(grace);
      expect(license.status).toBe("NotActivated");
    }
    // Another failed attempt a day later names the same end: the grace does not restart.
    testClock.move(DAY);
    expect((await deliver(kit, kit.pastDue(sale))).status).toBe(200);
    for (const license of await licensesOf(orderId)) expect(license.expireDate).toBe(grace);
    testClock.move(7 * DAY);
    for (const license of await licensesOf(orderId)) expect(license.status).toBe("Expired");

    const paid = inDays(30);
    expect((await deliver(kit, kit.renewal(sale, paid))).body["result"]).toBe("applied");
    for (const license of await licensesOf(orderId))
      expect(license).toMatchObject({ expireDate: paid, status: "NotActivated" });
    const [purchase] = (await purchasesOf(kit)).filter((p) => p.orderId === orderId);
    expect(purchase?.state).toBe("active");
  });

  it("an event type it does not act on answers 200 ignored and changes nothing but its history", async () => {
    const tables = ["commerce_purchases", "orders", "customers", "licenses"];
    const before = await Promise.all(tables.map(countRows));
    const res = await deliver(kit, kit.unknown());
    expect(res.status, res.text).toBe(200);
    expect(res.body["result"]).toBe("ignored");
    expect(await Promise.all(tables.map(countRows))).toEqual(before);
  });

  it("a refund revokes the purchase's licenses and marks the order refunded", async () => {
    const sale = kit.sale();
    const orderId = await buy(kit, sale, kit.ids.licenses);
    const res = await deliver(kit, kit.refund(sale));
    expect(res.body, res.text).toMatchObject({ result: "applied", orderId });
    for (const license of await licensesOf(orderId))
      expect(license).toMatchObject({ revoked: true, status: "Revoked" });
    const order = (await admin("GET", `/v1/orders?filter=${q(`id == ${orderId}`)}`)).body["orders"][0];
    expect(order).toMatchObject({ status: CANCELLED, paymentStatus: REFUNDED });
  });

  it("a cancellation at period end lets the licenses expire then, not before, and never revokes them", async () => {
    const sale = kit.sale();
    const end = inDays(20);
    const orderId = await buy(kit, sale, kit.ids.licenses, 3, end);
    expect((await deliver(kit, kit.cancelAtPeriodEnd(sale, end))).body["result"]).toBe("applied");
    testClock.move(19 * DAY);
    for (const license of await licensesOf(orderId))
      expect(license).toMatchObject({ expireDate: end, status: "NotActivated" });
    testClock.move(2 * DAY);
    expect((await deliver(kit, kit.ended(sale, end))).body["result"]).toBe("applied");
    for (const license of await licensesOf(orderId))
      expect(license).toMatchObject({ expireDate: end, revoked: false, status: "Expired" });
  });

  it("a subscription ended before its period's end revokes the licenses and cancels the order", async () => {
    const sale = kit.sale();
    const orderId = await buy(kit, sale, kit.ids.licenses, 3, inDays(30));
    expect((await deliver(kit, kit.ended(sale, inDays(0)))).body["result"]).toBe("applied");
    for (const license of await licensesOf(orderId))
      expect(license).toMatchObject({ revoked: true, status: "Revoked" });
    expect((await admin("GET", `/v1/orders?filter=${q(`id == ${orderId}`)}`)).body["orders"][0].status).toBe(CANCELLED);
  });

  it("two concurrent deliveries of one event make one order", async () => {
    const sale = kit.sale();
    const [event] = kit.purchase(sale, { item: kit.ids.licenses, quantity: 3, periodEnd: inDays(30) });
    const orders = await countRows("orders");
    const body = JSON.stringify(event);
    const headers = { ...(await kit.sign(body)), "content-type": "application/json" };
    const both = await Promise.all(
      [1, 2].map(() => call("POST", `/v1/commerce/${kit.name}/webhook`, { raw: body, headers })),
    );
    expect(both.map((r) => r.status)).toEqual([200, 200]);
    expect(both.map((r) => r.body["result"]).sort()).toEqual(["applied", "duplicate"]);
    expect(await countRows("orders")).toBe(orders + 1);
    const orderId = both.find((r) => r.body["result"] === "applied")!.body["orderId"];
    expect(await licensesOf(orderId)).toHaveLength(3);
    expect(await outbox(sale.email)).toHaveLength(1);
  });

  it("different events of one purchase at the same moment (the payment twice under two event ids, its refund) open one purchase and one order", async () => {
    const sale = kit.sale();
    // The purchase's events (Stripe: the invoice and its payment's link), all at once with the refund.
    const [event, ...links] = kit.purchase(sale, { item: kit.ids.licenses, quantity: 3, periodEnd: inDays(30) });
    // The same purchase delivered under another event id (Lemon Squeezy: another body of the same order).
    const [again] = kit.purchase(sale, { item: kit.ids.licenses, quantity: 3, periodEnd: inDays(30) });
    const orders = await countRows("orders");
    const answers = await Promise.all(
      [event!, { ...again!, resent: true }, kit.refund(sale), ...links].map((e) => deliver(kit, e)),
    );
    for (const res of answers) expect(res.status, res.text).toBe(200);
    expect(answers.map((r) => r.body["result"])).not.toContain("duplicate");
    const { n } = (await env.DB.prepare(
      "SELECT count(*) AS n FROM commerce_purchases WHERE provider = ? AND (instr(purchase_ref, ?) > 0 OR purchase_ref = ?)",
    )
      .bind(kit.name, sale.u, sale.ref)
      .first<{ n: number }>())!;
    expect(n).toBe(1);
    expect(await countRows("orders")).toBe(orders + 1);
    // Whichever came first, the refund wins: no license of the purchase stays usable, the order is refunded.
    const orderId = answers.find((r) => r.body["orderId"])!.body["orderId"] as number;
    for (const license of await licensesOf(orderId)) expect(license.revoked).toBe(true);
    const order = (await admin("GET", `/v1/orders?filter=${q(`id == ${orderId}`)}`)).body["orders"][0];
    expect(order).toMatchObject({ status: CANCELLED, paymentStatus: REFUNDED });
    expect((await outbox(sale.email)).length).toBeLessThanOrEqual(1);
  });

  it("a refund that arrives before its payment is remembered: the payment makes a refunded order and no license", async () => {
    const sale = kit.sale();
    const early = await deliver(kit, kit.refund(sale));
    expect(early.body, early.text).toMatchObject({ result: "remembered" });
    expect(early.body["orderId"]).toBeUndefined();
    const licenses = await countRows("licenses");
    let orderId: number | undefined;
    // Where the provider ties the payment to its invoice in an event of its own (Stripe's invoice_payment.paid),
    // that one arrives first here; the other order is the Stripe test below.
    const [purchase, ...links] = kit.purchase(sale, { item: kit.ids.licenses, quantity: 3, periodEnd: inDays(30) });
    for (const event of [...links, purchase!]) {
      const res = await deliver(kit, event);
      expect(res.status, res.text).toBe(200);
      orderId ??= res.body["orderId"];
    }
    const order = (await admin("GET", `/v1/orders?filter=${q(`id == ${orderId}`)}`)).body["orders"][0];
    expect(order).toMatchObject({ status: CANCELLED, paymentStatus: REFUNDED });
    expect(await countRows("licenses")).toBe(licenses);
    expect(await outbox(sale.email)).toHaveLength(0);
  });

  it("a renewal that arrives before its purchase is remembered: the purchase makes licenses to the renewed period's end", async () => {
    const sale = kit.sale();
    const renewed = inDays(60);
    const early = await deliver(kit, kit.renewal(sale, renewed));
    expect(early.status, early.text).toBe(200);
    expect(early.body["orderId"]).toBeUndefined();
    let orderId: number | undefined;
    for (const event of kit.purchase(sale, { item: kit.ids.licenses, quantity: 3, periodEnd: inDays(30) })) {
      const res = await deliver(kit, event);
      expect(res.status, res.text).toBe(200);
      orderId ??= res.body["orderId"];
    }
    const licenses = await licensesOf(orderId!);
    expect(licenses).toHaveLength(3);
    for (const license of licenses)
      expect(license).toMatchObject({ expireDate: renewed, supportExpireDate: renewed, revoked: false });
    expect(await outbox(sale.email)).toHaveLength(1);
  });

  it("an unmapped product answers 200 and writes nothing; mapped later, a redelivery makes the order", async () => {
    const sale = kit.sale();
    const [event, ...rest] = kit.purchase(sale, { item: kit.ids.unmapped, quantity: 3, periodEnd: inDays(30) });
    const counts = async () => Promise.all(["orders", "customers", "licenses", "commerce_purchases"].map(countRows));
    const before = await counts();
    const res = await deliver(kit, event!);
    expect(res.status).toBe(200);
    expect(res.body["result"]).toBe("unmapped");
    expect(await counts()).toEqual(before);
    expect(await logged(res.body["eventId"])).toBe(1);

    const mapping = await admin("POST", "/v1/commerce/mappings", {
      mapping: { provider: kit.name, externalId: kit.ids.unmapped, templateId },
    });
    try {
      const again = await deliver(kit, event!);
      expect(again.body["result"], again.text).toBe("applied");
      for (const other of rest) await deliver(kit, other);
      expect(await licensesOf(again.body["orderId"])).toHaveLength(3);
    } finally {
      await admin("DELETE", `/v1/commerce/mappings/${mapping.body["mappingId"]}`);
    }
  });

  it("refuses a bad or missing signature, a stale timestamp, a body changed after signing and malformed JSON: 400, nothing written", async () => {
    const sale = kit.sale();
    const [event] = kit.purchase(sale, { item: kit.ids.licenses, quantity: 3, periodEnd: inDays(30) });
    const body = JSON.stringify(event);
    const tables = ["commerce_events", "commerce_purchases", "orders", "licenses"];
    const before = await Promise.all(tables.map(countRows));
    const post = (raw: string, headers: Record<string, string>) =>
      call("POST", `/v1/commerce/${kit.name}/webhook`, {
        raw,
        headers: { ...headers, "content-type": "application/json" },
      });

    const signed = await kit.sign(body);
    const [name, value] = Object.entries(signed)[0]!;
    const forged = await post(body, {
      [name]: value.replace(/[0-9a-f](?=[0-9a-f]*$)/, (d) => (d === "0" ? "1" : "0")),
    });
    expect(forged.status, forged.text).toBe(400);
    expect((await post(body, {})).status).toBe(400);
    const changed = await deliver(kit, event!, { tamper: (b) => b.replace(sale.email, `x${sale.email}`) });
    expect(changed.status).toBe(400);
    if (kit.timed) {
      const stale = await deliver(kit, event!, { at: Math.floor(clock.now().getTime() / 1000) - 3600 });
      expect(stale.status).toBe(400);
      expect(stale.text).toMatch(/timestamp|tolerance/i);
    }
    expect(await Promise.all(tables.map(countRows))).toEqual(before);

    const malformed = "{ not json";
    const bad = await post(malformed, await kit.sign(malformed));
    expect(bad.status).toBe(400);
    expect(bad.body["message"]).toMatch(/Malformed/);
    expect(await Promise.all(tables.map(countRows))).toEqual(before);
    expect(await logged(`a ${kit.name} webhook with a valid signature is malformed`)).toBe(1);
  });
});

/** The D1 round trips of a request, from its Server-Timing header (http/d1-session.ts; on in development). */
function d1RoundTrips(headers: Headers): number {
  const match = /d1-round-trips;desc="(\d+)"/.exec(headers.get("server-timing") ?? "");
  expect(match, "Server-Timing d1-round-trips").not.toBeNull();
  return Number(match![1]);
}

const licenseCount = async (orderId: number) =>
  (await env.DB.prepare("SELECT count(*) AS n FROM licenses WHERE order_id = ?").bind(orderId).first<{ n: number }>())!
    .n;

/** The licenses made for the buyer of `sale`. */
const licensesMadeFor = async (sale: Sale) =>
  (await env.DB.prepare("SELECT count(*) AS n FROM licenses WHERE licensee_email = ?")
    .bind(sale.email)
    .first<{ n: number }>())!.n;

/** Runs `attempt` while a failure follows the first batch of licenses (50 a batch): the buyer's 51st insert is refused. */
async function failingAfterFirstBatch(sale: Sale, attempt: () => Promise<unknown>): Promise<void> {
  const trigger = `commerce_fail_${sale.u}`;
  await env.DB.prepare(
    `CREATE TRIGGER ${trigger} BEFORE INSERT ON licenses WHEN NEW.licensee_email = '${sale.email}' AND (SELECT count(*) FROM licenses WHERE licensee_email = '${sale.email}') >= 50 BEGIN SELECT RAISE(ABORT, 'injected failure'); END`,
  ).run();
  try {
    await attempt();
  } finally {
    await env.DB.prepare(`DROP TRIGGER ${trigger}`).run();
  }
}

describe("large and half-made purchases", () => {
  it("a purchase that failed half-way is completed by the provider's retry: only the missing licenses, one email with every key", async () => {
    const kit = stripeKit;
    const sale = kit.sale();
    const [event] = kit.purchase(sale, { item: kit.ids.licenses, quantity: 53, periodEnd: inDays(30) });
    const orders = await countRows("orders");
    const made = () => licensesMadeFor(sale);
    await failingAfterFirstBatch(sale, async () => {
      const failed = await deliver(kit, event!);
      expect(failed.status, failed.text).toBe(500);
      expect(await made()).toBe(50);
      expect(await outbox(sale.email)).toHaveLength(0);
    });
    const retry = await deliver(kit, event!);
    expect(retry.status, retry.text).toBe(200);
    expect(retry.body["result"], retry.text).toBe("applied");
    const orderId = retry.body["orderId"] as number;
    expect(await countRows("orders")).toBe(orders + 1);
    expect((await admin("GET", `/v1/orders/${orderId}/products`)).body["orderProducts"]).toHaveLength(1);
    const licenses = await licensesOf(orderId);
    expect(licenses).toHaveLength(53);
    const mails = await outbox(sale.email);
    expect(mails).toHaveLength(1);
    for (const license of licenses) expect(mails[0]!.body).toContain(license.userKey);
    // Complete now: another delivery of the purchase changes nothing.
    const third = await deliver(kit, { ...event!, id: `evt_${sale.u}x` });
    expect(third.body["result"], third.text).toBe("applied");
    expect(await licensesOf(orderId)).toHaveLength(53);
    expect(await outbox(sale.email)).toHaveLength(1);
  });

  it("a purchase whose request stopped half-way (its event left processing) is a duplicate within the lease and completed by a retry after it", async () => {
    const kit = stripeKit;
    const sale = kit.sale();
    const [event] = kit.purchase(sale, { item: kit.ids.licenses, quantity: 52, periodEnd: inDays(30) });
    const made = () => licensesMadeFor(sale);
    // Half-way, as in the test above; then the row as a Worker stopped mid-purchase leaves it: still processing.
    await failingAfterFirstBatch(sale, async () => expect((await deliver(kit, event!)).status).toBe(500));
    await env.DB.prepare("UPDATE commerce_events SET status = 'processing' WHERE provider = 'stripe' AND event_id = ?")
      .bind((event as { id: string }).id)
      .run();
    expect(await made()).toBe(50);
    // Within the lease the request that took it may still be at work: a redelivery changes nothing.
    testClock.move(PROCESSING_LEASE_MS - 60_000);
    const early = await deliver(kit, event!);
    expect(early.status, early.text).toBe(200);
    expect(early.body["result"], early.text).toBe("duplicate");
    expect(await made()).toBe(50);
    expect(await outbox(sale.email)).toHaveLength(0);
    // Past it, the retry takes the event back and completes the purchase: the missing licenses, one email.
    testClock.move(2 * 60_000);
    const late = await deliver(kit, event!);
    expect(late.body["result"], late.text).toBe("applied");
    expect(await made()).toBe(52);
    const mails = await outbox(sale.email);
    expect(mails).toHaveLength(1);
    for (const license of await licensesOf(late.body["orderId"] as number))
      expect(mails[0]!.body).toContain(license.userKey);
    expect((await deliver(kit, event!)).body["result"]).toBe("duplicate");
  });

  it("a refund that arrives while its purchase is half-made is applied when the retry completes it: revoked, no email", async () => {
    const kit = stripeKit;
    const sale = kit.sale();
    const [event, link] = kit.purchase(sale, { item: kit.ids.licenses, quantity: 3, periodEnd: inDays(30) });
    // The licenses are made, then the purchase fails before it is complete.
    const trigger = `commerce_incomplete_${sale.u}`;
    await env.DB.prepare(
      `CREATE TRIGGER ${trigger} BEFORE UPDATE OF completed_at ON commerce_purchases WHEN NEW.completed_at IS NOT NULL AND NEW.purchase_ref = '${sale.ref}' BEGIN SELECT RAISE(ABORT, 'injected failure'); END`,
    ).run();
    try {
      expect((await deliver(kit, event!)).status).toBe(500);
    } finally {
      await env.DB.prepare(`DROP TRIGGER ${trigger}`).run();
    }
    // The payment is tied to the half-made purchase (invoice_payment.paid), then refunded.
    expect((await deliver(kit, link!)).body["result"]).toBe("remembered");
    const refund = await deliver(kit, kit.refund(sale));
    expect(refund.body["result"], refund.text).toBe("remembered");
    const retry = await deliver(kit, event!);
    expect(retry.body["result"], retry.text).toBe("applied");
    const licenses = await licensesOf(retry.body["orderId"]);
    expect(licenses).toHaveLength(3);
    for (const license of licenses) expect(license.revoked).toBe(true);
    const order = (await admin("GET", `/v1/orders?filter=${q(`id == ${retry.body["orderId"]}`)}`)).body["orders"][0];
    expect(order).toMatchObject({ status: CANCELLED, paymentStatus: REFUNDED });
    expect(await outbox(sale.email)).toHaveLength(0);
  });

  it("Commerce:MaxLicensesPerPurchase: at the limit made in a few D1 round trips; over it nothing written, logged, and made when redelivered after raising it", async () => {
    const kit = stripeKit;
    await setSetting("Commerce:MaxLicensesPerPurchase", "120");
    try {
      const sale = kit.sale();
      const [atLimit] = kit.purchase(sale, { item: kit.ids.licenses, quantity: 120, periodEnd: inDays(30) });
      const res = await deliver(kit, atLimit!);
      expect(res.body["result"], res.text).toBe("applied");
      expect(await licenseCount(res.body["orderId"])).toBe(120);
      // Batched: the D1 work does not grow a round trip per license (one by one it was over 240).
      expect(d1RoundTrips(res.headers)).toBeLessThan(40);
      expect((await outbox(sale.email))[0]!.body.split("License ").length - 1).toBe(120);

      const over = kit.sale();
      const [tooMany] = kit.purchase(over, { item: kit.ids.licenses, quantity: 121, periodEnd: inDays(30) });
      const tables = ["commerce_purchases", "orders", "customers", "licenses"];
      const before = await Promise.all(tables.map(countRows));
      const refused = await deliver(kit, tooMany!);
      expect(refused.status, refused.text).toBe(200);
      expect(refused.body["result"]).toBe("failed");
      expect(refused.body["detail"]).toMatch(/121 licenses, more than Commerce:MaxLicensesPerPurchase \(120\)/);
      expect(await Promise.all(tables.map(countRows))).toEqual(before);
      expect(await logged(`${refused.body["eventId"]}: The purchase makes 121 licenses`)).toBe(1);

      await setSetting("Commerce:MaxLicensesPerPurchase", "121");
      const redelivered = await deliver(kit, tooMany!);
      expect(redelivered.body["result"], redelivered.text).toBe("applied");
      expect(await licenseCount(redelivered.body["orderId"])).toBe(121);
    } finally {
      await setSetting("Commerce:MaxLicensesPerPurchase", null);
    }
  });
});
