/**
 * Sample requests for the webhook routes (Administrator, LicenseManager). Subscriptions listen to webhook.test only,
 * so the rest of the walk queues no deliveries but the redelivery's own; test, retry and redelivered calls go to the
 * real receiver of test/global-setup.ts.
 */
import { createExecutionContext, createMessageBatch, getQueueResult } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { inject } from "vitest";
import worker from "../../src/index";
import { DEAD_LETTER_QUEUE } from "../../src/webhooks/dead-letter";
import { DELIVERY_JOB } from "../../src/webhooks/emit";
import { admin } from "../helpers";
import { type Samples, created } from "./kit";

const SUBSCRIPTIONS = "/v1/webhooks/subscriptions";
const receiver = (behaviour: string) => `${inject("webhookReceiverUrl")}/${behaviour}/samples`;

/** A subscription of the receiver's path for a behaviour (`ok`, `fail500`). */
const newSubscription = (behaviour = "ok"): Promise<number> =>
  created(
    SUBSCRIPTIONS,
    { subscription: { name: "sample", url: receiver(behaviour), eventTypes: ["webhook.test"] } },
    "subscription",
  ).then((s: { id: number }) => s.id);

/** A subscription with one recorded delivery event (failed when the receiver answers 500). */
async function withEvent(behaviour = "ok"): Promise<{ id: number; eventId: number }> {
  const id = await newSubscription(behaviour);
  const res = await admin("POST", `${SUBSCRIPTIONS}/${id}/test`);
  if (res.status !== 200) throw new Error(`fixture test delivery: ${res.status} ${res.text}`);
  return { id, eventId: res.body["event"].id };
}

/**
 * A subscription with a delivery event given up: a failed test delivery whose dead letter (the bare job, as the queue
 * dead-letters it) the Worker's dead-letter consumer recorded.
 */
async function givenUp(): Promise<{ id: number; eventId: number }> {
  const id = await newSubscription("fail500");
  const res = await admin("POST", `${SUBSCRIPTIONS}/${id}/test`);
  if (res.status !== 200) throw new Error(`fixture test delivery: ${res.status} ${res.text}`);
  const event = res.body["event"] as { id: number; eventId: string };
  const batch = createMessageBatch(DEAD_LETTER_QUEUE, [
    {
      id: `dlq-${event.eventId}`,
      timestamp: new Date(),
      attempts: 1,
      body: { kind: DELIVERY_JOB, eventId: event.eventId, subscriptionId: id },
    },
  ]);
  const ctx = createExecutionContext();
  await worker.queue(batch, env, ctx);
  await getQueueResult(batch, ctx);
  return { id, eventId: event.id };
}

export const webhookSamples: Samples = {
  [`GET ${SUBSCRIPTIONS}`]: async () => ({}),
  [`POST ${SUBSCRIPTIONS}`]: async () => ({
    body: { subscription: { name: "sample", url: receiver("ok"), eventTypes: ["webhook.test"] } },
  }),
  [`GET ${SUBSCRIPTIONS}/{id}`]: async () => ({ path: `${SUBSCRIPTIONS}/${await newSubscription()}` }),
  [`PUT ${SUBSCRIPTIONS}/{id}`]: async () => ({
    path: `${SUBSCRIPTIONS}/${await newSubscription()}`,
    body: { subscription: { description: "changed" } },
  }),
  [`DELETE ${SUBSCRIPTIONS}/{id}`]: async () => ({ path: `${SUBSCRIPTIONS}/${await newSubscription()}` }),
  [`POST ${SUBSCRIPTIONS}/{id}/test`]: async () => ({ path: `${SUBSCRIPTIONS}/${await newSubscription()}/test` }),
  [`GET ${SUBSCRIPTIONS}/{id}/events`]: async () => ({ path: `${SUBSCRIPTIONS}/${(await withEvent()).id}/events` }),
  [`DELETE ${SUBSCRIPTIONS}/{id}/events/{eventId}`]: async () => {
    const e = await withEvent();
    return { path: `${SUBSCRIPTIONS}/${e.id}/events/${e.eventId}` };
  },
  [`POST ${SUBSCRIPTIONS}/{id}/events/{eventId}/retry`]: async () => {
    const e = await withEvent("fail500");
    return { path: `${SUBSCRIPTIONS}/${e.id}/events/${e.eventId}/retry` };
  },
  [`POST ${SUBSCRIPTIONS}/{id}/events/{eventId}/redeliver`]: async () => {
    const e = await givenUp();
    return { path: `${SUBSCRIPTIONS}/${e.id}/events/${e.eventId}/redeliver` };
  },
  "GET /v1/webhooks/status": async () => ({}),
  "GET /v1/webhooks/event-types": async () => ({}),
};
