/**
 * Nothing lost silently: a webhook delivery that exhausts its retries reaches the dead-letter queue, whose consumer
 * records it in the subscription's delivery history with its last answer (src/webhooks/dead-letter.ts), once; an
 * Administrator, and only an Administrator, queues it again. The first test runs the whole way on the real local
 * queues (licensing-webhooks, its retries, licensing-webhooks-dlq and their consumers of wrangler.toml), against the
 * real receiver of test/global-setup.ts; the others hand dead letters to the Worker's queue handler directly.
 */
import { createExecutionContext, createMessageBatch, getQueueResult } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import worker from "../src/index";
import { buildConfig } from "../src/kernel/config";
import { getDb } from "../src/db/client";
import { DEAD_LETTER_QUEUE } from "../src/webhooks/dead-letter";
import { deliveryTiming } from "../src/webhooks/deliver";
import { DELIVERY_JOB, buildPayload, recordDeliveries } from "../src/webhooks/emit";
import { admin, call, keyFor, setSetting } from "./helpers";
import { newCustomer } from "./samples/commerce";
import { RECEIVER, received, receiverPath, subscribe } from "./webhooks-kit";
import type { JsonBody } from "./json-body.ts";

const SUBSCRIPTIONS = "/v1/webhooks/subscriptions";
const config = buildConfig({}, []).config;

afterEach(async () => {
  deliveryTiming.retryDelayFactor = 1;
  await setSetting("Webhooks:Enabled", null);
});

/** The subscription's delivery history through the API (Administrator). */
async function history(subscriptionId: number): Promise<JsonBody[]> {
  const res = await admin("GET", `${SUBSCRIPTIONS}/${subscriptionId}/events`);
  expect(res.status, res.text).toBe(200);
  return res.body["events"];
}

/** Polls the delivery history until `done` holds for its one event (the queues' batch windows are 5 s each). */
function waitForEvent(subscriptionId: number, done: (event: JsonBody) => boolean, timeout = 30_000) {
  return vi.waitFor(
    async () => {
      const [event, ...more] = await history(subscriptionId);
      expect(more).toEqual([]);
      if (!event || !done(event)) throw new Error(`not yet: ${JSON.stringify(event)}`);
      return event;
    },
    { timeout, interval: 250 },
  );
}

/** Service log entries (Administrator) whose message names the event and says what (given up, by default). */
async function logLines(eventId: string, what = "given up"): Promise<JsonBody[]> {
  const filter = encodeURIComponent(`message.Contains("${eventId}") && message.Contains("${what}")`);
  const res = await admin("GET", `/v1/log?filter=${filter}`);
  expect(res.status, res.text).toBe(200);
  return res.body["logs"];
}

const pathOf = (url: string) => new URL(url).pathname;

describe("through the real queues", () => {
  it("records an exhausted delivery with its last answer; an Administrator (only) queues it again", async () => {
    // The schedule's 30 s first step asked of the queue as 1 s, so that the retry happens within the test.
    deliveryTiming.retryDelayFactor = 1 / 30;
    const s = await subscribe({
      eventTypes: ["order.created"],
      url: `${RECEIVER}${receiverPath("fail500")}`,
      maxRetryCount: 1,
    });
    const order = await admin("POST", "/v1/orders", { order: { customerId: await newCustomer() } });
    expect(order.status, order.text).toBe(200);

    // The first attempt and its one retry fail with 500: the consumer dead-letters it, the DLQ consumer records it.
    const exhausted = await waitForEvent(s.id, (e) => e["deadLetteredAt"] !== undefined, 45_000);
    expect(exhausted).toMatchObject({
      eventType: "order.created",
      isSuccess: false,
      retryCount: 1,
      statusCode: 500,
      response: '{"error":"receiver failed"}',
      errorMessage: "HTTP 500 Internal Server Error",
    });
    expect(exhausted).not.toHaveProperty("nextRetryAt");
    expect(Date.parse(exhausted["deadLetteredAt"])).toBeGreaterThanOrEqual(Date.parse(exhausted["sentAt"]));
    expect(await received(pathOf(s.url))).toHaveLength(2);
    const [warning, ...others] = await logLines(exhausted["eventId"]);
    expect(others).toEqual([]);
    expect(warning).toMatchObject({
      level: 3, // Warning (enums as numbers by default)
      message: `Webhook delivery ${exhausted["eventId"]} to subscription ${s.id} given up after 2 attempt(s): HTTP 500 Internal Server Error`,
    });

    // A LicenseManager may read the history and retry other deliveries, but not this one.
    const manager = await keyFor(["LicenseManager"]);
    const redeliverPath = `${SUBSCRIPTIONS}/${s.id}/events/${exhausted["id"]}/redeliver`;
    const refused = await call("POST", redeliverPath, { key: manager });
    expect(refused.status, refused.text).toBe(403);
    const byHand = await call("POST", `${SUBSCRIPTIONS}/${s.id}/events/${exhausted["id"]}/retry`, { key: manager });
    expect(byHand.body).toEqual({
      success: false,
      code: 400,
      message: `Event ${exhausted["id"]} was given up; an Administrator sends it again with POST ${redeliverPath}`,
    });
    expect((await history(s.id))[0]).toEqual(exhausted);
    expect(await received(pathOf(s.url))).toHaveLength(2);

    // The Administrator queues it again: due now, then one more attempt through the queue, given up again.
    const again = await admin("POST", redeliverPath);
    expect(again.status, again.text).toBe(202);
    expect(again.body).toMatchObject({ success: true, message: `Queued for delivery: ${exhausted["eventId"]}` });
    expect(again.body["event"]).toMatchObject({ id: exhausted["id"], retryCount: 1, nextRetryAt: expect.any(String) });
    expect(again.body["event"]).not.toHaveProperty("deadLetteredAt");
    const exhaustedAgain = await waitForEvent(s.id, (e) => e["deadLetteredAt"] !== undefined && e["retryCount"] === 2);
    expect(exhaustedAgain).toMatchObject({ statusCode: 500, isSuccess: false });
    const attempts = await received(pathOf(s.url));
    expect(attempts).toHaveLength(3);
    expect(new Set(attempts.map((d) => d.headers["webhook-id"]))).toEqual(new Set([exhausted["eventId"]]));
    expect(await logLines(exhausted["eventId"])).toHaveLength(2);
    expect(await logLines(exhausted["eventId"], "queued again")).toEqual([
      expect.objectContaining({ category: "Audit", message: `Webhook delivery ${exhausted["eventId"]} queued again` }),
    ]);

    // The receiver is fixed: queued once more, the same event is delivered.
    const fixed = receiverPath("ok");
    await admin("PUT", `${SUBSCRIPTIONS}/${s.id}`, { subscription: { url: `${RECEIVER}${fixed}` } });
    expect((await admin("POST", redeliverPath)).status).toBe(202);
    const delivered = await waitForEvent(s.id, (e) => e["isSuccess"] === true);
    expect(delivered).toMatchObject({ retryCount: 3, statusCode: 200, response: '{"received":true}' });
    expect(delivered).not.toHaveProperty("deadLetteredAt");
    expect((await received(fixed)).map((d) => d.headers["webhook-id"])).toEqual([exhausted["eventId"]]);
  }, 120_000);
});

/** An event recorded for a subscription as emission records it, not queued. */
async function pendingEvent(subscriptionId: number) {
  const payload = buildPayload(config, "license.created", { data: { id: 7, licenseId: "lic0000ABCD" } });
  await recordDeliveries(getDb(env.DB), payload, [subscriptionId]);
  return payload;
}

/** Runs the Worker's queue handler on one batch of a queue; answers how many messages it acknowledged. */
async function runQueue(queue: string, bodies: unknown[], queueEnv: typeof env = env, attempts = 1) {
  const batch = createMessageBatch(
    queue,
    bodies.map((body, i) => ({ id: `m-${crypto.randomUUID()}-${i}`, timestamp: new Date(), attempts, body })),
  );
  const ctx = createExecutionContext();
  await worker.queue(batch, queueEnv, ctx);
  const result = await getQueueResult(batch, ctx);
  return { acked: result.explicitAcks.length, retried: result.retryMessages.length };
}

/** One delivery attempt by the delivery consumer that gives up (maxRetryCount 0, 500): returns its dead letter. */
async function exhaust(subscriptionId: number, eventId: string): Promise<Record<string, unknown>> {
  const letters: unknown[] = [];
  // The consumer's dead-letter producer, kept here so that this test hands the letter to the DLQ consumer itself.
  const keep = { send: async (body: unknown) => void letters.push(body) } as unknown as Queue;
  const consumed = await runQueue("licensing-webhooks", [{ kind: DELIVERY_JOB, eventId, subscriptionId }], {
    ...env,
    WEBHOOKS_DLQ: keep,
  });
  expect(consumed).toEqual({ acked: 1, retried: 0 });
  expect(letters).toHaveLength(1);
  return letters[0] as Record<string, unknown>;
}

describe("the dead-letter consumer", () => {
  it("is routed by queue name, carries the last answer, and records a letter the queue delivers twice once", async () => {
    const s = await subscribe({ url: `${RECEIVER}${receiverPath("fail500")}`, maxRetryCount: 0 });
    const payload = await pendingEvent(s.id);
    const letter = await exhaust(s.id, payload.id);
    expect(letter).toEqual({
      kind: DELIVERY_JOB,
      eventId: payload.id,
      subscriptionId: s.id,
      reason: "HTTP 500 Internal Server Error",
      failedAt: expect.any(String),
      retryCount: 0,
      statusCode: 500,
      response: '{"error":"receiver failed"}',
    });
    // Not recorded until the dead-letter queue's consumer has it.
    expect((await history(s.id))[0]).not.toHaveProperty("deadLetteredAt");

    expect(await runQueue(DEAD_LETTER_QUEUE, [letter])).toEqual({ acked: 1, retried: 0 });
    const [recorded] = await history(s.id);
    expect(recorded).toMatchObject({ deadLetteredAt: letter["failedAt"], retryCount: 0, statusCode: 500 });

    // Delivered again (at-least-once queues): acknowledged, nothing changes, no second log entry.
    expect(await runQueue(DEAD_LETTER_QUEUE, [letter, letter])).toEqual({ acked: 2, retried: 0 });
    expect(await history(s.id)).toEqual([recorded]);
    expect(await logLines(payload.id)).toHaveLength(1);
    // The delivery queue's own handlers never take a dead letter for a delivery to make.
    expect(await received(pathOf(s.url))).toHaveLength(1);
  });

  it("leaves a delivery alone that was queued again since its letter was sent", async () => {
    const s = await subscribe({ url: `${RECEIVER}${receiverPath("fail500")}`, maxRetryCount: 0 });
    const payload = await pendingEvent(s.id);
    const letter = await exhaust(s.id, payload.id);
    await runQueue(DEAD_LETTER_QUEUE, [letter]);
    const [recorded] = await history(s.id);
    const again = await admin("POST", `${SUBSCRIPTIONS}/${s.id}/events/${recorded!["id"]}/redeliver`);
    expect(again.status, again.text).toBe(202);
    // The old letter, delivered late, does not mark the delivery that is due again as given up.
    expect(await runQueue(DEAD_LETTER_QUEUE, [letter])).toEqual({ acked: 1, retried: 0 });
    const [due] = await history(s.id);
    expect(due).not.toHaveProperty("deadLetteredAt");
    expect(due).toHaveProperty("nextRetryAt");
  });

  it("records a message the queue dead-lettered itself (its consumer kept failing), without a last answer", async () => {
    const s = await subscribe({ url: `${RECEIVER}${receiverPath("fail500")}` });
    const payload = await pendingEvent(s.id);
    const job = { kind: DELIVERY_JOB, eventId: payload.id, subscriptionId: s.id };
    expect(await runQueue(DEAD_LETTER_QUEUE, [job], env, 2)).toEqual({ acked: 1, retried: 0 });
    const [recorded] = await history(s.id);
    expect(recorded).toMatchObject({
      isSuccess: false,
      retryCount: 0,
      deadLetteredAt: expect.any(String),
      errorMessage: "Given up: the delivery consumer failed on it 2 times (queue dead-lettering)",
    });
    expect(recorded).not.toHaveProperty("nextRetryAt");
    expect(await received(pathOf(s.url))).toEqual([]);
  });
});

describe("redelivery", () => {
  it("is only for a delivery given up, of an active subscription, while webhooks are enabled", async () => {
    const s = await subscribe({ url: `${RECEIVER}${receiverPath("fail500")}`, maxRetryCount: 0 });
    const payload = await pendingEvent(s.id);
    const [pending] = await history(s.id);
    const path = `${SUBSCRIPTIONS}/${s.id}/events/${pending!["id"]}/redeliver`;
    expect((await admin("POST", path)).body).toEqual({
      success: false,
      code: 400,
      message: `Event ${pending!["id"]} was not given up; retry it with POST ${SUBSCRIPTIONS}/${s.id}/events/${pending!["id"]}/retry`,
    });
    expect((await admin("POST", `${SUBSCRIPTIONS}/${s.id}/events/999999/redeliver`)).status).toBe(404);

    await runQueue(DEAD_LETTER_QUEUE, [await exhaust(s.id, payload.id)]);
    await admin("PUT", `${SUBSCRIPTIONS}/${s.id}`, { subscription: { isActive: false } });
    expect((await admin("POST", path)).body["message"]).toBe(`Subscription ${s.id} is inactive; activate it first`);
    await admin("PUT", `${SUBSCRIPTIONS}/${s.id}`, { subscription: { isActive: true } });
    await setSetting("Webhooks:Enabled", "false");
    expect((await admin("POST", path)).body["message"]).toBe("Webhooks are disabled (Webhooks:Enabled)");
    // Still given up after the refusals.
    expect((await history(s.id))[0]).toHaveProperty("deadLetteredAt");
  });
});
