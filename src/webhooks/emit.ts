/**
 * Emission (CONTRACT section 6): every change a subscriber can hear of calls `emit` after the change is stored. It
 * never blocks or fails the call that caused it: the work runs under `waitUntil`, and any failure is logged, never
 * thrown. When `Webhooks:Enabled` and at least one active subscription names the type (or `*`), the event is built
 * (`{ id: "evt_…", type, createdAt, data, previous? }`), one delivery event row per subscription records it, and one
 * `webhook.delivery` message per subscription goes to the WEBHOOKS queue for the consumer (deliver.ts).
 */
import { sql } from "drizzle-orm";
import { BASE62, randomString } from "../kernel/crypto";
import { nowIso } from "../kernel/clock";
import type { Config } from "../kernel/config";
import { loadConfig } from "../db/settings-store";
import { type Db, getDb } from "../db/client";
import { webhookEvents, webhookSubscriptions } from "../db/schema";
import { omitNulls } from "../http/respond";
import type { Job, JobKind, JobOf } from "../kernel/jobs";
import { ALL_EVENTS, type EventType } from "./events";
import { type AuditPrincipal, customerActor } from "../db/logging";

/** The queue message kind the delivery consumer handles (kernel/jobs.ts). */
export const DELIVERY_JOB = "webhook.delivery" satisfies JobKind;

/** What a `webhook.delivery` message carries: the delivery event row it delivers, by its unique key. */
export type DeliveryJob = JobOf<typeof DELIVERY_JOB>;

/** Whether a queue message (not trusted until checked) names a delivery event row. */
export function isDeliveryJob(body: Job): body is Job & DeliveryJob {
  return typeof body["eventId"] === "string" && typeof body["subscriptionId"] === "number";
}

/** What emission needs: the same shape as a request's ServiceContext, so routes and services pass theirs. */
export interface EmitContext {
  db: Db;
  config: Config;
  env: Bindings;
  waitUntil(promise: Promise<unknown>): void;
  /** Who caused the change: a customer portal session marks its events with `actor` (db/logging.ts customerActor). */
  principal?: AuditPrincipal | undefined;
}

/** An event's content: the record as the API returns it, and for changes the changed fields' former values. */
export interface EventBody {
  data: Record<string, unknown>;
  previous?: Record<string, unknown>;
  /** `release.published` of a release whose builds an Administrator let change signer (CONTRACT section 15). */
  signerChanged?: { from: string[]; to: string | null };
}

/** The JSON body every subscriber of one event receives. */
export interface EventPayload extends EventBody {
  id: string;
  type: EventType;
  createdAt: string;
  /** Set when a customer caused the change through the customer portal: `{ kind: "customer", customerId }`. */
  actor?: { kind: "customer"; customerId: number | null };
}

/** A new event id: `evt_` + 24 base62 characters from the CSPRNG. */
export function newEventId(): string {
  return `evt_${randomString(24, BASE62)}`;
}

/**
 * The payload of an event. `data` follows the API's null rule (Application:IgnoreJSonDefaultValues); `previous`
 * keeps its nulls, because "this field was empty" is the information it carries.
 */
export function buildPayload(config: Config, type: EventType, body: EventBody): EventPayload {
  const data = config["Application:IgnoreJSonDefaultValues"]
    ? (omitNulls(body.data) as Record<string, unknown>)
    : body.data;
  return {
    id: newEventId(),
    type,
    createdAt: nowIso(),
    data,
    ...(body.previous ? { previous: body.previous } : {}),
    ...(body.signerChanged ? { signerChanged: body.signerChanged } : {}),
  };
}

/** Ids of the active subscriptions that name this type or `*` (one query; eventTypes is a JSON array). */
async function subscribersOf(db: Db, type: EventType): Promise<number[]> {
  const rows = await db
    .select({ id: webhookSubscriptions.id })
    .from(webhookSubscriptions)
    .where(
      sql`${webhookSubscriptions.isActive} = 1 AND EXISTS (SELECT 1 FROM json_each(${webhookSubscriptions.eventTypes}) WHERE value IN (${type}, ${ALL_EVENTS}))`,
    );
  return rows.map((r) => r.id);
}

/** Rows per INSERT: each binds 8 values, and D1 binds at most 100 per statement. */
const ROWS_PER_INSERT = 10;
/** Messages per sendBatch (the Queues limit). */
const MESSAGES_PER_BATCH = 100;

/**
 * Records one delivery event row per subscription for a payload (due now: `nextRetryAt` = its creation), in one D1
 * batch; a row that already exists for the (event, subscription) pair is kept.
 */
export async function recordDeliveries(
  db: Db,
  payload: EventPayload | readonly EventPayload[],
  subscriptionIds: readonly number[],
): Promise<void> {
  const stamp = nowIso();
  const rows = (Array.isArray(payload) ? payload : [payload as EventPayload]).flatMap((event) => {
    const text = JSON.stringify(event);
    return subscriptionIds.map((webhookSubscriptionId) => ({
      webhookSubscriptionId,
      eventId: event.id,
      eventType: event.type,
      payload: text,
      nextRetryAt: stamp,
      createdAt: stamp,
      updatedAt: stamp,
    }));
  });
  const inserts = [];
  for (let i = 0; i < rows.length; i += ROWS_PER_INSERT) {
    inserts.push(
      db
        .insert(webhookEvents)
        .values(rows.slice(i, i + ROWS_PER_INSERT))
        .onConflictDoNothing(),
    );
  }
  const [first, ...rest] = inserts;
  if (first) await db.batch([first, ...rest]);
}

/** Sends one delivery message per subscription; when the queue refuses, the rows say so instead of waiting forever. */
async function enqueueDeliveries(
  db: Db,
  env: Bindings,
  eventIds: readonly string[],
  subscriptionIds: readonly number[],
): Promise<void> {
  const messages = eventIds.flatMap((eventId) =>
    subscriptionIds.map((subscriptionId) => ({
      body: { kind: DELIVERY_JOB, eventId, subscriptionId } satisfies DeliveryJob,
    })),
  );
  try {
    for (let i = 0; i < messages.length; i += MESSAGES_PER_BATCH)
      await env.WEBHOOKS.sendBatch(messages.slice(i, i + MESSAGES_PER_BATCH));
  } catch (e) {
    const reason = `The delivery could not be queued: ${e instanceof Error ? e.message : String(e)}`;
    await db
      .update(webhookEvents)
      .set({ errorMessage: reason, nextRetryAt: null, updatedAt: nowIso() })
      .where(sql`${webhookEvents.eventId} IN (SELECT value FROM json_each(${JSON.stringify(eventIds)}))`);
    throw e;
  }
}

type Build = () => EventBody | Promise<EventBody>;

/** One event per build: one subscriber query, the delivery rows in one D1 batch, the messages in few sends. */
async function publish(ctx: EmitContext, type: EventType, builds: readonly Build[]): Promise<void> {
  if (!ctx.config["Webhooks:Enabled"] || builds.length === 0) return;
  const subscriptionIds = await subscribersOf(ctx.db, type);
  // Nobody listens: the record is never built, so a change costs one small query.
  if (subscriptionIds.length === 0) return;
  const actor = customerActor(ctx.principal);
  const payloads: EventPayload[] = [];
  for (const build of builds)
    payloads.push({ ...buildPayload(ctx.config, type, await build()), ...(actor ? { actor } : {}) });
  await recordDeliveries(ctx.db, payloads, subscriptionIds);
  await enqueueDeliveries(
    ctx.db,
    ctx.env,
    payloads.map((p) => p.id),
    subscriptionIds,
  );
}

/**
 * Emits an event after a change was stored. `build` makes the event's data (and `previous`) only when someone
 * subscribes. Returns at once; the work runs under `ctx.waitUntil`. The returned promise settles when the event is
 * queued and never rejects: request paths ignore it, background callers (a Durable Object's alarm) may await it.
 */
export function emit(ctx: EmitContext, type: EventType, build: Build): Promise<void> {
  return emitEach(ctx, type, [build]);
}

/**
 * Emits one event per build, as `emit` each would, for a change of many records at once (a purchase's licenses):
 * the D1 work stays a few round trips whatever their number.
 */
export function emitEach(ctx: EmitContext, type: EventType, builds: readonly Build[]): Promise<void> {
  const work = publish(ctx, type, builds).catch((e: unknown) => console.error(`webhooks: emitting ${type} failed`, e));
  ctx.waitUntil(work);
  return work;
}

/** An EmitContext outside a request (a Durable Object, the queue consumer): settings read as requests read them. */
export async function backgroundContext(
  env: Bindings,
  waitUntil: (promise: Promise<unknown>) => void,
): Promise<EmitContext> {
  const { config } = await loadConfig(env, env.DB);
  return { db: getDb(env.DB), config, env, waitUntil };
}

/** The changed wire properties of a record: their values before the change (updatedAt is bookkeeping, not news). */
export function changedFields(
  before: Record<string, unknown>,
  after: Record<string, unknown>,
): Record<string, unknown> {
  const previous: Record<string, unknown> = {};
  for (const key of new Set([...Object.keys(before), ...Object.keys(after)])) {
    if (key === "updatedAt") continue;
    if (JSON.stringify(before[key] ?? null) !== JSON.stringify(after[key] ?? null)) previous[key] = before[key] ?? null;
  }
  return previous;
}
