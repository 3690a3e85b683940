/**
 * Sample requests for the webhook routes (Administrator, LicenseManager). Subscriptions listen to webhook.test only,
 * so the rest of the walk queues no deliveries; test and retry calls go to the real receiver of test/global-setup.ts.
 */
import { inject } from "vitest";
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
  "GET /v1/webhooks/status": async () => ({}),
  "GET /v1/webhooks/event-types": async () => ({}),
};
