/**
 * Payments to licenses through the API (CONTRACT section 10), the same scenarios for Stripe, Paddle Billing and
 * Lemon Squeezy (fixtures and signatures: test/commerce-kit.ts): purchases of 3 as licenses and as seats, renewal,
 * refund, cancellation at period end on a test clock, past due then paid, redelivery, two concurrent deliveries,
 * a refund before its payment, an unmapped product, and the refusals (bad signature, stale timestamp, body changed
 * after signing, malformed JSON) that write nothing. The license email goes once per purchase with every key.
 */
import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { clock } from "../src/clock";
import { OrderStatus, PaymentStatus } from "../src/licensing/orders";
import { KITS, type ProviderKit, type Sale, deliver, stripeKit } from "./commerce-kit";
import { admin, call, countRows, keyFor, movableClock, setSetting } from "./helpers";

const DAY = 86_400_000;
// Order and payment statuses as the API writes them (numbers by default; src/licensing/orders.ts).
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

/** Log entries whose message contains `text`, once the request's log (written after the answer) is there. */
async function logged(text: string): Promise<number> {
  const deadline = Date.now() + 5000;
  for (;;) {
    const row = await env.DB.prepare("SELECT count(*) AS n FROM logs WHERE instr(message, ?) > 0")
      .bind(text)
      .first<{ n: number }>();
    if ((row?.n ?? 0) > 0 || Date.now() > deadline) return row?.n ?? 0;
    await new Promise((r) => setTimeout(r, 50));
  }
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
    const grace = new Date(clock.now().getTime() + 7 * DAY).toISOString();
    for (const license of await licensesOf(orderId)) {
      expect(license.expireDate).toBe(grace);
      expect(license.status).toBe("NotActivated");
    }
    testClock.move(8 * DAY);
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

  it("a refund that arrives before its payment is remembered: the payment makes a refunded order and no license", async () => {
    const sale = kit.sale();
    const early = await deliver(kit, kit.refund(sale));
    expect(early.body, early.text).toMatchObject({ result: "remembered" });
    expect(early.body["orderId"]).toBeUndefined();
    const licenses = await countRows("licenses");
    let orderId: number | undefined;
    for (const event of kit.purchase(sale, { item: kit.ids.licenses, quantity: 3, periodEnd: inDays(30) })) {
      const res = await deliver(kit, event);
      expect(res.status, res.text).toBe(200);
      orderId ??= res.body["orderId"];
    }
    const order = (await admin("GET", `/v1/orders?filter=${q(`id == ${orderId}`)}`)).body["orders"][0];
    expect(order).toMatchObject({ status: CANCELLED, paymentStatus: REFUNDED });
    expect(await countRows("licenses")).toBe(licenses);
    expect(await outbox(sale.email)).toHaveLength(0);
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
