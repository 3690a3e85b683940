/**
 * The delivery consumer (CONTRACT section 6) driven with the queue helpers of "cloudflare:test" against the real
 * receiver of test/global-setup.ts: both signatures (checked with the standardwebhooks library and with a plain HMAC),
 * extra headers that cannot override the service's, and each decision: 2xx ack, 5xx retry on the schedule within its
 * jitter, 3xx failure, timeout, 410 disabling the subscription, exhaustion to the dead-letter queue, and the one event
 * row per delivery that every attempt updates.
 */
import {
  createExecutionContext,
  createMessageBatch,
  createScheduledController,
  getQueueResult,
  waitOnExecutionContext,
} from "cloudflare:test";
import { env } from "cloudflare:workers";
import { Webhook } from "standardwebhooks";
import { afterEach, describe, expect, it } from "vitest";
import worker from "../src/index";
import { getDb } from "../src/db/client";
import { buildConfig } from "../src/kernel/config";
import { RETRY_SCHEDULE_SECONDS, deliveryTiming, retryDelaySeconds } from "../src/webhooks/deliver";
import { DELIVERY_JOB, buildPayload, recordDeliveries } from "../src/webhooks/emit";
import { admin, setSetting } from "./helpers";
import { RECEIVER, eventRows, received, receiverPath, subscribe } from "./webhooks-kit";

const config = buildConfig({}, []).config;

afterEach(async () => {
  deliveryTiming.timeoutMs = 15_000;
  await setSetting("Webhooks:AllowInsecureUrls", null);
  await setSetting("Webhooks:Enabled", null);
});

/** An event recorded for a subscription as emit records it, but not queued: each test consumes it by hand. */
async function pendingEvent(
  subscriptionId: number,
  data: Record<string, unknown> = { id: 7, licenseId: "lic0000ABCD" },
) {
  const payload = buildPayload(config, "license.created", { data });
  await recordDeliveries(getDb(env.DB), payload, [subscriptionId]);
  return payload;
}

/** Messages the consumer sent to the dead-letter queue (a stand-in WEBHOOKS_DLQ handed to the consumer). */
const deadLetters: unknown[] = [];
const consumerEnv = {
  ...env,
  WEBHOOKS_DLQ: {
    send: async (body: unknown) => void deadLetters.push(body),
    sendBatch: async () => undefined,
  } as unknown as Queue,
};

/**
 * Runs the Worker's queue handler on one delivery message (attempt n) and returns what it decided: acknowledged, or
 * retried with which options (the test batch records that a retry happened, the spy what delay it asked for).
 */
async function consume(eventId: string, subscriptionId: number, attempts = 1) {
  const batch = createMessageBatch("licensing-webhooks", [
    {
      id: `m-${eventId}-${attempts}`,
      timestamp: new Date(),
      attempts,
      body: { kind: DELIVERY_JOB, eventId, subscriptionId },
    },
  ]);
  const message = batch.messages[0]!;
  let options: QueueRetryOptions | undefined;
  const retry = message.retry.bind(message);
  message.retry = (o?: QueueRetryOptions) => {
    options = o;
    retry(o);
  };
  const ctx = createExecutionContext();
  await worker.queue(batch, consumerEnv as typeof env, ctx);
  const result = await getQueueResult(batch, ctx);
  return {
    acked: result.explicitAcks.length === 1,
    retry: result.retryMessages.length === 1 ? { ...options } : undefined,
  };
}

const pathOf = (url: string) => new URL(url).pathname + new URL(url).search;

async function hmacHex(key: string, message: string): Promise<string> {
  const k = await crypto.subtle.importKey(
    "raw",
    new TextEncoder().encode(key),
    { name: "HMAC", hash: "SHA-256" },
    false,
    ["sign"],
  );
  const mac = new Uint8Array(await crypto.subtle.sign("HMAC", k, new TextEncoder().encode(message)));
  return [...mac].map((b) => b.toString(16).padStart(2, "0")).join("");
}

describe("a successful delivery", () => {
  it("POSTs the payload signed twice, with the event headers and the extra headers, and acknowledges", async () => {
    const s = await subscribe({
      eventTypes: ["license.created"],
      headers: { "X-Tenant": "acme", Authorization: "Bearer receiver-token" },
    });
    const payload = await pendingEvent(s.id);
    const before = Math.floor(Date.now() / 1000);
    expect(await consume(payload.id, s.id)).toEqual({ acked: true, retry: undefined });

    const [delivery, ...more] = await received(pathOf(s.url));
    expect(more).toEqual([]);
    expect(delivery!.method).toBe("POST");
    expect(JSON.parse(delivery!.body)).toEqual(payload);
    expect(delivery!.headers).toMatchObject({
      "content-type": "application/json",
      "x-service-event": "license.created",
      "x-service-delivery": payload.id,
      "webhook-id": payload.id,
      "x-tenant": "acme",
      authorization: "Bearer receiver-token",
    });

    // Standard Webhooks, verified by the reference library with the whsec_ secret.
    const verified = new Webhook(s.secret).verify(delivery!.body, delivery!.headers);
    expect(verified).toEqual(payload);
    expect(() =>
      new Webhook(s.secret).verify(delivery!.body.replace("license", "LICENSE"), delivery!.headers),
    ).toThrow();

    // X-Service-Signature: t=<unix>,v1=<hex HMAC-SHA256(UTF-8 bytes of the whole secret, "<t>.<body>")>.
    const m = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(delivery!.headers["x-service-signature"]!);
    expect(m).not.toBeNull();
    expect(Number(m![1])).toBeGreaterThanOrEqual(before);
    expect(m![1]).toBe(delivery!.headers["webhook-timestamp"]);
    expect(m![2]).toBe(await hmacHex(s.secret, `${m![1]}.${delivery!.body}`));

    const [row] = await eventRows(s.id);
    expect(row).toMatchObject({
      event_id: payload.id,
      is_success: 1,
      status_code: 200,
      response: '{"received":true}',
      error_message: null,
      retry_count: 0,
      next_retry_at: null,
    });
    expect(row!.sent_at).not.toBeNull();
  });

  it("never lets extra headers replace the service's own, even when stored around the API", async () => {
    const s = await subscribe({ eventTypes: ["license.created"] });
    await env.DB.prepare("UPDATE webhook_subscriptions SET headers = ? WHERE id = ?")
      .bind(
        JSON.stringify({
          "x-service-event": "forged",
          "Webhook-Signature": "v1,forged",
          "content-type": "text/plain",
          "X-Extra": "kept",
        }),
        s.id,
      )
      .run();
    const payload = await pendingEvent(s.id);
    await consume(payload.id, s.id);
    const [delivery] = await received(pathOf(s.url));
    expect(delivery!.headers).toMatchObject({
      "x-service-event": "license.created",
      "content-type": "application/json",
      "x-extra": "kept",
    });
    expect(new Webhook(s.secret).verify(delivery!.body, delivery!.headers)).toEqual(payload);
  });

  it("keeps the first 2 KB of a long answer", async () => {
    const s = await subscribe({ eventTypes: ["license.created"], url: `${RECEIVER}${receiverPath("big")}` });
    const payload = await pendingEvent(s.id);
    await consume(payload.id, s.id);
    const [row] = await eventRows(s.id);
    expect(row!.response).toHaveLength(2048);
    expect(row!.response!.startsWith('{"padding":"xxx')).toBe(true);
  });
});

describe("retry decisions", () => {
  it("retries a 5xx on the schedule (30 s, 2 m, … 12 h, ±10 %), updating one row per attempt, then dead-letters it", async () => {
    const s = await subscribe({ eventTypes: ["license.created"], url: `${RECEIVER}${receiverPath("fail500")}` });
    const payload = await pendingEvent(s.id);
    deadLetters.length = 0;
    for (let attempt = 1; attempt <= 9; attempt++) {
      const startedAt = Date.now();
      const decision = await consume(payload.id, s.id, attempt);
      const endedAt = Date.now();
      const [row] = await eventRows(s.id);
      expect(row).toMatchObject({
        retry_count: attempt - 1,
        status_code: 500,
        is_success: 0,
        error_message: "HTTP 500 Internal Server Error",
        response: '{"error":"receiver failed"}',
      });
      if (attempt <= 8) {
        const step = RETRY_SCHEDULE_SECONDS[attempt - 1]!;
        expect(decision.acked).toBe(false);
        expect(decision.retry!.delaySeconds).toBeGreaterThanOrEqual(Math.floor(step * 0.9));
        expect(decision.retry!.delaySeconds).toBeLessThanOrEqual(Math.ceil(step * 1.1));
        // nextRetryAt = the time of the decision + the delay asked of the queue.
        const due = Date.parse(row!.next_retry_at!) - decision.retry!.delaySeconds! * 1000;
        expect(due).toBeGreaterThanOrEqual(startedAt);
        expect(due).toBeLessThanOrEqual(endedAt);
      } else {
        // maxRetryCount (8) retries made: acknowledged, nothing scheduled, handed to the dead-letter queue.
        expect(decision).toEqual({ acked: true, retry: undefined });
        expect(row!.next_retry_at).toBeNull();
      }
    }
    expect(await received(pathOf(s.url))).toHaveLength(9);
    expect(await eventRows(s.id)).toHaveLength(1);
    expect(deadLetters).toEqual([
      expect.objectContaining({
        kind: DELIVERY_JOB,
        eventId: payload.id,
        subscriptionId: s.id,
        reason: "HTTP 500 Internal Server Error",
      }),
    ]);

    const history = await admin("GET", `/v1/webhooks/subscriptions/${s.id}/events`);
    expect(history.body["events"]).toEqual([
      expect.objectContaining({ eventId: payload.id, retryCount: 8, statusCode: 500, isSuccess: false }),
    ]);
    expect(history.body["events"][0]).not.toHaveProperty("nextRetryAt");
  });

  it("spreads the schedule's steps by ±10 %", () => {
    RETRY_SCHEDULE_SECONDS.forEach((step, i) => {
      expect(retryDelaySeconds(i, () => 0)).toBe(Math.round(step * 0.9));
      expect(retryDelaySeconds(i, () => 0.999999)).toBe(Math.min(43_200, Math.round(step * 1.1)));
    });
    expect(RETRY_SCHEDULE_SECONDS).toEqual([30, 120, 600, 1800, 3600, 10_800, 21_600, 43_200]);
  });

  it("stops at the subscription's own maxRetryCount", async () => {
    const s = await subscribe({
      eventTypes: ["license.created"],
      url: `${RECEIVER}${receiverPath("fail500")}`,
      maxRetryCount: 1,
    });
    const payload = await pendingEvent(s.id);
    expect((await consume(payload.id, s.id, 1)).retry).toBeDefined();
    deadLetters.length = 0;
    expect(await consume(payload.id, s.id, 2)).toEqual({ acked: true, retry: undefined });
    expect(deadLetters).toHaveLength(1);
    expect((await eventRows(s.id))[0]).toMatchObject({ retry_count: 1, next_retry_at: null });
  });

  it("treats a redirect as a failure and does not follow it", async () => {
    const s = await subscribe({ eventTypes: ["license.created"], url: `${RECEIVER}${receiverPath("redirect302")}` });
    const payload = await pendingEvent(s.id);
    const decision = await consume(payload.id, s.id);
    expect(decision.retry!.delaySeconds).toBeGreaterThanOrEqual(27);
    const [row] = await eventRows(s.id);
    expect(row).toMatchObject({
      status_code: 302,
      is_success: 0,
      error_message: "Redirect not followed (302 to /ok/redirected)",
    });
    expect(await received("/ok/redirected")).toEqual([]);
  });

  it("gives up on an answer that does not come within the timeout, and retries", async () => {
    deliveryTiming.timeoutMs = 300;
    const s = await subscribe({
      eventTypes: ["license.created"],
      url: `${RECEIVER}${receiverPath("slow", "?ms=3000")}`,
    });
    const payload = await pendingEvent(s.id);
    const started = Date.now();
    const decision = await consume(payload.id, s.id);
    expect(Date.now() - started).toBeLessThan(2500);
    expect(decision.retry).toBeDefined();
    expect((await eventRows(s.id))[0]).toMatchObject({
      status_code: null,
      response: null,
      is_success: 0,
      error_message: "No answer within 0.3 s",
    });
  });

  it("answers 410 Gone by making the subscription inactive, without retry or dead letter", async () => {
    const s = await subscribe({ eventTypes: ["license.created"], url: `${RECEIVER}${receiverPath("gone410")}` });
    const payload = await pendingEvent(s.id);
    deadLetters.length = 0;
    expect(await consume(payload.id, s.id)).toEqual({ acked: true, retry: undefined });
    expect((await eventRows(s.id))[0]).toMatchObject({ status_code: 410, is_success: 0, next_retry_at: null });
    expect(deadLetters).toEqual([]);
    expect((await admin("GET", `/v1/webhooks/subscriptions/${s.id}`)).body["subscription"].isActive).toBe(false);

    // A later message for the now inactive subscription is acknowledged without a call.
    const next = await pendingEvent(s.id);
    expect(await consume(next.id, s.id)).toEqual({ acked: true, retry: undefined });
    expect(await received(pathOf(s.url))).toHaveLength(1);
    expect((await eventRows(s.id))[1]).toMatchObject({
      sent_at: null,
      error_message: "Not delivered: the subscription is inactive",
    });
  });
});

describe("messages that need no call", () => {
  it("acknowledges deleted and already delivered events, and waits out Webhooks:Enabled false", async () => {
    const s = await subscribe({ eventTypes: ["license.created"] });
    const delivered = await pendingEvent(s.id);
    await consume(delivered.id, s.id);
    expect(await consume(delivered.id, s.id, 2)).toEqual({ acked: true, retry: undefined });
    expect(await consume("evt_doesnotexist000000000", s.id)).toEqual({ acked: true, retry: undefined });
    expect(await received(pathOf(s.url))).toHaveLength(1);

    await setSetting("Webhooks:Enabled", "false");
    const held = await pendingEvent(s.id);
    expect(await consume(held.id, s.id)).toEqual({ acked: true, retry: undefined });
    expect((await eventRows(s.id))[1]).toMatchObject({
      is_success: 0,
      sent_at: null,
      error_message: "Not delivered: webhooks are disabled (Webhooks:Enabled)",
    });
    expect(await received(pathOf(s.url))).toHaveLength(1);
  });

  it("refuses a URL the policy no longer allows, without a call and without retrying", async () => {
    const s = await subscribe({ eventTypes: ["license.created"] });
    const payload = await pendingEvent(s.id);
    await setSetting("Webhooks:AllowInsecureUrls", "false");
    deadLetters.length = 0;
    expect(await consume(payload.id, s.id)).toEqual({ acked: true, retry: undefined });
    expect((await eventRows(s.id))[0]!.error_message).toMatch(/^The webhook url must use https/);
    expect(deadLetters).toHaveLength(1);
    expect(await received(pathOf(s.url))).toEqual([]);
  });
});

describe("delivery history retention", () => {
  it("lets the cron trigger prune events older than Webhooks:EventRetentionDays", async () => {
    const s = await subscribe({ eventTypes: ["license.created"] });
    const old = await pendingEvent(s.id);
    const recent = await pendingEvent(s.id);
    const daysAgo = (n: number) => new Date(Date.now() - n * 86_400_000).toISOString();
    await env.DB.prepare("UPDATE webhook_events SET created_at = ? WHERE event_id = ?").bind(daysAgo(31), old.id).run();
    await env.DB.prepare("UPDATE webhook_events SET created_at = ? WHERE event_id = ?")
      .bind(daysAgo(29), recent.id)
      .run();
    const run = async () => {
      const ctx = createExecutionContext();
      worker.scheduled(createScheduledController({ scheduledTime: new Date(), cron: "*/15 * * * *" }), env, ctx);
      await waitOnExecutionContext(ctx);
    };
    await run();
    expect((await eventRows(s.id)).map((r) => r.event_id)).toEqual([recent.id]);
    await setSetting("Webhooks:EventRetentionDays", "7");
    await run();
    expect(await eventRows(s.id)).toEqual([]);
    await setSetting("Webhooks:EventRetentionDays", null);
  });
});
