/**
 * `GET /v1/overview` (issue 37, "a console for the business"): the figures an owner asks first, from known data made
 * through the API: licenses active, expiring within 30 days, expired and revoked; floating seats held and machines
 * activated; revenue and refunds per month and currency from orders; releases staged, scheduled and halted; webhook
 * deliveries given up (through the dead-letter queue's own consumer). This file's D1 is its own, so the figures are
 * exact. Webhook figures are the managers'; Sales gets the rest.
 */
import { createExecutionContext, createMessageBatch, getQueueResult } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import worker from "../src/index";
import { getDb } from "../src/db/client";
import { buildConfig } from "../src/kernel/config";
import { DEAD_LETTER_QUEUE } from "../src/webhooks/dead-letter";
import { DELIVERY_JOB, buildPayload, recordDeliveries } from "../src/webhooks/emit";
import { admin, call, keyFor } from "./helpers";
import { newCustomer } from "./samples/commerce";
import { RECEIVER, receiverPath, subscribe } from "./webhooks-kit";
import type { JsonBody } from "./json-body.ts";

const DAY = 86_400_000;
const inDays = (days: number) => new Date(Date.now() + days * DAY).toISOString();
/** The UTC month `back` months before this one, `yyyy-MM`. */
function month(back: number): string {
  const now = new Date();
  return new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - back, 15)).toISOString().slice(0, 7);
}

async function ok(res: Promise<{ status: number; text: string; body: JsonBody }>): Promise<JsonBody> {
  const answer = await res;
  expect(answer.status, answer.text).toBeLessThan(300);
  return answer.body;
}

async function license(productId: number, values: Record<string, unknown>) {
  const created = await ok(admin("POST", "/v1/licenses", { license: { productId, ...values } }));
  const list = await admin("GET", `/v1/licenses?filter=${encodeURIComponent(`id == ${created["id"]}`)}`);
  return list.body["licenses"][0] as JsonBody;
}

const order = (values: Record<string, unknown>) =>
  newCustomer().then((customerId) => ok(admin("POST", "/v1/orders", { order: { customerId, ...values } })));

async function release(productId: number, values: Record<string, unknown>): Promise<number> {
  const body = await ok(admin("POST", `/v1/products/${productId}/releases`, { productRelease: values }));
  return body["productReleaseId"];
}

/** Runs the Worker's queue handler on one message of a queue, with `queueEnv` as its bindings. */
async function runQueue(queue: string, body: unknown, queueEnv: typeof env = env): Promise<void> {
  const batch = createMessageBatch(queue, [{ id: crypto.randomUUID(), timestamp: new Date(), attempts: 1, body }]);
  const ctx = createExecutionContext();
  await worker.queue(batch, queueEnv, ctx);
  expect((await getQueueResult(batch, ctx)).explicitAcks).toHaveLength(1);
}

/**
 * A delivery given up, as the queues give one up: recorded as emission records it, attempted once by the delivery
 * consumer against a receiver that answers 500 (no retries), and its dead letter handed to the dead-letter consumer.
 */
async function deadLetter(): Promise<string> {
  const s = await subscribe({ name: "CRM", url: `${RECEIVER}${receiverPath("fail500")}`, maxRetryCount: 0 });
  const payload = buildPayload(buildConfig({}, []).config, "license.created", { data: { id: 1 } });
  await recordDeliveries(getDb(env.DB), payload, [s.id]);
  const letters: unknown[] = [];
  const keep = { send: async (body: unknown) => void letters.push(body) } as unknown as Queue;
  await runQueue(
    "licensing-webhooks",
    { kind: DELIVERY_JOB, eventId: payload.id, subscriptionId: s.id },
    {
      ...env,
      WEBHOOKS_DLQ: keep,
    },
  );
  expect(letters).toHaveLength(1);
  await runQueue(DEAD_LETTER_QUEUE, letters[0]);
  return payload.id;
}

let studio: number;
let expiringSoonest: JsonBody;
let expiringLater: JsonBody;
let eventId: string;

beforeAll(async () => {
  studio = await ok(
    admin("POST", "/v1/products", { product: { code: "studio", name: "Studio", isApplication: true } }),
  ).then((b) => b["productId"]);
  // Licenses: 2 active without expiry (one floating with 3 seats), 2 expiring within 30 days, 1 in 90 days,
  // 1 expired, 1 revoked.
  const floating = await license(studio, { licensingMode: "Floating", maxClients: 3, licenseeName: "Initech" });
  const activation = await license(studio, { licensingMode: "Activation", maxClients: 2 });
  expiringLater = await license(studio, { expireDate: inDays(20), licenseeName: "Globex" });
  expiringSoonest = await license(studio, { expireDate: inDays(3), licenseeName: "Hooli" });
  await license(studio, { expireDate: inDays(90) });
  await license(studio, { expireDate: inDays(-2) });
  await license(studio, { revoked: true });
  // Two floating seats held, then one released; one machine activated.
  const seats = [];
  for (const clientId of ["alice", "bob"])
    seats.push(
      await ok(admin("POST", "/v1/license/request", { userKey: floating["userKey"], machineId: "M", clientId })),
    );
  await ok(admin("POST", "/v1/license/release", { licenseToken: seats[1]!["licenseToken"] }));
  await ok(admin("POST", "/v1/license/activate", { userKey: activation["userKey"], machineId: "PC-1" }));

  // Orders: this month 100 + 50 EUR paid (the 50 refunded now) and 30 USD paid; two months ago 200 EUR;
  // thirteen months ago 999 EUR (outside the year); an unpaid order of 70 EUR (not revenue).
  await order({ paymentStatus: "Paid", total: 100, currency: "EUR", paymentDate: new Date().toISOString() });
  const refunded = await order({ paymentStatus: "Paid", total: 50.5, currency: "EUR" });
  await ok(admin("PUT", "/v1/orders", { order: { id: refunded["orderId"], paymentStatus: "Refunded" } }));
  await order({ paymentStatus: "Paid", total: 30, currency: "USD", paymentDate: new Date().toISOString() });
  await order({ paymentStatus: "Paid", total: 200, currency: "EUR", paymentDate: `${month(2)}-10T12:00:00.000Z` });
  await order({ paymentStatus: "Paid", total: 999, currency: "EUR", paymentDate: `${month(13)}-10T12:00:00.000Z` });
  await order({ paymentStatus: "Unpaid", total: 70, currency: "EUR" });

  // Releases: staged at 30 %, scheduled (10 % now, 50 % tomorrow), halted, and three that are not rolling out.
  await release(studio, { version: "1.0.0", public: true });
  await release(studio, { version: "1.1.0", public: true, stagingPercentage: 30 });
  await release(studio, {
    version: "1.2.0",
    public: true,
    stagingPercentage: 10,
    rolloutSchedule: [{ percentage: 50, at: inDays(1) }],
  });
  const halted = await release(studio, { version: "1.3.0", public: true, stagingPercentage: 100 });
  await ok(admin("POST", `/v1/products/${studio}/releases/${halted}/halt`, { reason: "crashes on start" }));
  await release(studio, { version: "2.0.0-beta", public: false, stagingPercentage: 5 });
  await release(studio, { version: "1.0.1", public: true, stagingPercentage: 100 });

  // Webhooks: one delivery given up.
  eventId = await deadLetter();
}, 60_000);

describe("GET /v1/overview", () => {
  it("counts licenses by what an owner asks, and lists the soonest expiring", async () => {
    const res = await admin("GET", "/v1/overview");
    expect(res.status, res.text).toBe(200);
    expect(res.body["licenses"]).toEqual({
      active: 5,
      expiringSoon: 2,
      expiringWithinDays: 30,
      expired: 1,
      revoked: 1,
      expiring: [
        {
          licenseId: expiringSoonest["licenseId"],
          licenseeName: "Hooli",
          productId: studio,
          productName: "Studio",
          expireDate: expiringSoonest["expireDate"],
        },
        {
          licenseId: expiringLater["licenseId"],
          licenseeName: "Globex",
          productId: studio,
          productName: "Studio",
          expireDate: expiringLater["expireDate"],
        },
      ],
    });
  });

  it("counts the floating seats held now against those allowed, and the machines activated", async () => {
    const res = await admin("GET", "/v1/overview");
    expect(res.body["seats"]).toEqual({ floatingInUse: 1, floatingAllowed: 3, activatedMachines: 1 });
  });

  it("sums revenue and refunds per month and currency from orders", async () => {
    const res = await admin("GET", "/v1/overview");
    expect(res.body["revenue"]).toEqual({
      months: 12,
      since: `${month(11)}-01T00:00:00.000Z`,
      periods: [
        { month: month(0), currency: "EUR", paid: 150.5, paidOrders: 2, refunded: 50.5, refundedOrders: 1 },
        { month: month(0), currency: "USD", paid: 30, paidOrders: 1, refunded: 0, refundedOrders: 0 },
        { month: month(2), currency: "EUR", paid: 200, paidOrders: 1, refunded: 0, refundedOrders: 0 },
      ],
    });
  });

  it("lists the releases staged, scheduled and halted, with the next step and why a release halted", async () => {
    const res = await admin("GET", "/v1/overview");
    const releases = res.body["releases"];
    expect(releases).toMatchObject({ rollingOut: 2, halted: 1 });
    const byVersion = Object.fromEntries(releases["list"].map((r: JsonBody) => [r["version"], r]));
    expect(Object.keys(byVersion).sort()).toEqual(["1.1.0", "1.2.0", "1.3.0"]);
    expect(byVersion["1.1.0"]).toMatchObject({ state: "staged", percentage: 30, productName: "Studio" });
    // Null properties are left out on the wire (SPEC): no step ahead, no halt.
    expect(byVersion["1.1.0"]).not.toHaveProperty("nextStep");
    expect(byVersion["1.1.0"]).not.toHaveProperty("haltedAt");
    expect(byVersion["1.2.0"]).toMatchObject({ state: "scheduled", percentage: 10, nextStep: { percentage: 50 } });
    expect(byVersion["1.3.0"]).toMatchObject({
      state: "halted",
      haltReason: "manual",
      haltNote: "crashes on start",
      haltedAt: expect.any(String),
    });
  });

  it("counts webhook deliveries given up and names the newest", async () => {
    const res = await admin("GET", "/v1/overview");
    expect(res.body["webhooks"]).toEqual({
      deadLetters: 1,
      failing: 0,
      recentDeadLetters: [
        {
          subscriptionId: expect.any(Number),
          subscriptionName: "CRM",
          eventId,
          eventType: "license.created",
          statusCode: 500,
          deadLetteredAt: expect.any(String),
        },
      ],
    });
  });

  it("answers Sales without the webhook figures (the managers'), and a LicenseManager with them", async () => {
    const sales = await call("GET", "/v1/overview", { key: await keyFor(["Sales"]) });
    expect(sales.status, sales.text).toBe(200);
    expect(sales.body).not.toHaveProperty("webhooks");
    expect(sales.body["licenses"]["active"]).toBe(5);
    const manager = await call("GET", "/v1/overview", { key: await keyFor(["LicenseManager"]) });
    expect(manager.body["webhooks"]["deadLetters"]).toBe(1);
    expect((await call("GET", "/v1/overview", { key: await keyFor(["Customer"]) })).status).toBe(403);
  });

  it("reads its figures in one D1 round trip, writing nothing", async () => {
    const work = async (path: string) => {
      const header = (await admin("GET", path)).headers.get("server-timing") ?? "";
      return Object.fromEntries(
        [...header.matchAll(/d1-([\w-]+);desc="(\d+)"/g)].map(([, name, n]) => [name, Number(n)]),
      );
    };
    // What any request of this key costs (a route that reads nothing itself), then the overview's own on top.
    const base = await work("/v1/log/levels");
    const overview = await work("/v1/overview");
    expect(overview).toEqual({
      "round-trips": base["round-trips"]! + 1,
      statements: base["statements"]! + 8,
      "rows-written": 0,
      "rows-read": expect.any(Number),
    });
  });
});
