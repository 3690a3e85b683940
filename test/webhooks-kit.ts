/** Shared pieces of the webhook tests: subscriptions through the API, the real receiver, delivery rows in D1. */
import { env } from "cloudflare:workers";
import { inject, vi } from "vitest";
import { admin } from "./helpers";
import type { JsonBody } from "./json-body.ts";

/** Base URL of the receiver test/global-setup.ts started (test/webhook-receiver.ts). */
export const RECEIVER = inject("webhookReceiverUrl");

/** A fresh receiver path of a behaviour (`ok`, `fail500`, …), so a test reads back only its own deliveries. */
export function receiverPath(behaviour: string, query = ""): string {
  return `/${behaviour}/${crypto.randomUUID()}${query}`;
}

export interface Delivered {
  method: string;
  path: string;
  headers: Record<string, string>;
  body: string;
  receivedAt: number;
}

/** What the receiver got on paths starting with `path` (its query left out), read back over HTTP. */
export async function received(path: string): Promise<Delivered[]> {
  const prefix = path.split("?")[0]!;
  const res = await fetch(`${RECEIVER}/deliveries?prefix=${encodeURIComponent(prefix)}`);
  return (await res.json()) as Delivered[];
}

/** Creates a subscription through the API (201); returns the answer's subscription, secret included. */
export async function subscribe(
  values: Record<string, unknown> = {},
): Promise<JsonBody & { id: number; secret: string; url: string }> {
  const res = await admin("POST", "/v1/webhooks/subscriptions", {
    subscription: {
      name: "receiver",
      url: `${RECEIVER}${receiverPath("ok")}`,
      eventTypes: ["webhook.test"],
      ...values,
    },
  });
  if (res.status !== 201) throw new Error(`subscription fixture: ${res.status} ${res.text}`);
  return res.body["subscription"];
}

export interface EventRowView {
  id: number;
  event_id: string;
  event_type: string;
  payload: string;
  status_code: number | null;
  response: string | null;
  error_message: string | null;
  is_success: number;
  retry_count: number;
  sent_at: string | null;
  next_retry_at: string | null;
}

/** The delivery event rows of a subscription, oldest first. */
export async function eventRows(subscriptionId: number): Promise<EventRowView[]> {
  const { results } = await env.DB.prepare("SELECT * FROM webhook_events WHERE webhook_subscription_id = ? ORDER BY id")
    .bind(subscriptionId)
    .all<EventRowView>();
  return results;
}

/**
 * Waits (emission runs after the answer, under waitUntil) until the subscription has `count` rows of a type; events
 * that come through the queue (license.seat.expired) need `timeout` above the consumer's 5 s batch window.
 */
export async function emitted(
  subscriptionId: number,
  type: string,
  count = 1,
  timeout = 5000,
): Promise<{ id: string; type: string; createdAt: string; data: JsonBody; previous?: JsonBody }[]> {
  return vi.waitFor(
    async () => {
      const rows = (await eventRows(subscriptionId)).filter((r) => r.event_type === type);
      if (rows.length < count) throw new Error(`${rows.length} ${type} events so far`);
      return rows.map((r) => JSON.parse(r.payload));
    },
    { timeout, interval: 50 },
  );
}

/** Lets emission that may still run settle, then the subscription's event types in order. */
export async function settledTypes(subscriptionId: number): Promise<string[]> {
  await new Promise((resolve) => setTimeout(resolve, 500));
  return (await eventRows(subscriptionId)).map((r) => r.event_type);
}
