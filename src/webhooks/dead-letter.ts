/**
 * The dead-letter queue of webhook deliveries (`licensing-webhooks-dlq`, CONTRACT section 6): nothing given up is
 * lost silently. Two kinds of message end there, both `webhook.delivery` jobs:
 *   - sent by the delivery consumer (deliver.ts) when a delivery exhausted its subscription's maxRetryCount or failed
 *     permanently: the job plus the last answer (`retryCount`, `statusCode`, `response`, `reason`, `failedAt`);
 *   - dead-lettered by the queue itself when the consumer kept throwing on the job (max_retries): the bare job.
 * Their consumer (routed by queue name in index.ts) records each on its delivery event row: `deadLetteredAt` set, no
 * attempt due, the last answer kept, and one Warning in the service log. It records once: a row already dead-lettered,
 * delivered, or attempted since (a later retryCount, or due again after a redelivery) is left alone, so a message the
 * queue delivers twice changes nothing the second time. An Administrator sends a dead-lettered delivery again with
 * `redeliver`: the row is due again and one `webhook.delivery` message goes back onto the WEBHOOKS queue, where the
 * consumer attempts it (retryCount + 1) and, failing, dead-letters it again.
 */
import { and, eq, isNotNull, isNull } from "drizzle-orm";
import { nowIso } from "../kernel/clock";
import { ApiError } from "../kernel/errors";
import { getDb, type Db } from "../db/client";
import { webhookEvents } from "../db/schema";
import type { Job } from "../kernel/jobs";
import { ServiceLog } from "../db/logging";
import { DELIVERY_JOB, type DeliveryJob, isDeliveryJob } from "./emit";
import type { EventRow } from "./subscriptions";

/** The dead-letter queue's name (wrangler.toml), by which the Worker's queue handler tells its batches apart. */
export const DEAD_LETTER_QUEUE = "licensing-webhooks-dlq";

/** What the delivery consumer sends to the dead-letter queue: the job and the last answer it got. */
export interface DeadLetter extends DeliveryJob {
  /** Why it was given up: the last attempt's errorMessage. */
  reason: string | null;
  failedAt: string;
  /** retryCount of the last attempt (0 = the first). */
  retryCount: number;
  statusCode: number | null;
  /** The first 2 KB of the last answer's body. */
  response: string | null;
}

/** The dead letter of a delivery given up after the attempt with this retryCount and outcome. */
export function deadLetterOf(
  job: DeliveryJob,
  retryCount: number,
  last: { statusCode: number | null; response: string | null; errorMessage: string | null },
): DeadLetter {
  return {
    ...job,
    reason: last.errorMessage,
    failedAt: nowIso(),
    retryCount,
    statusCode: last.statusCode,
    response: last.response,
  };
}

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;

/** The message's last answer, when the delivery consumer sent it (not when the queue dead-lettered a crash). */
function lastAnswer(job: Job): Omit<DeadLetter, keyof DeliveryJob> | null {
  const { reason, failedAt, retryCount, statusCode, response } = job;
  if (typeof retryCount !== "number" || !Number.isInteger(retryCount) || retryCount < 0) return null;
  return {
    reason: typeof reason === "string" ? reason : null,
    failedAt: typeof failedAt === "string" && ISO.test(failedAt) ? failedAt : nowIso(),
    retryCount,
    statusCode: typeof statusCode === "number" ? statusCode : null,
    response: typeof response === "string" ? response : null,
  };
}

/** Records one dead letter on its delivery event row (see the file comment); true when this message recorded it. */
export async function recordDeadLetter(db: Db, job: Job & DeliveryJob, attempts: number): Promise<boolean> {
  const last = lastAnswer(job);
  const stamp = nowIso();
  const row = and(
    eq(webhookEvents.eventId, job.eventId),
    eq(webhookEvents.webhookSubscriptionId, job.subscriptionId),
    eq(webhookEvents.isSuccess, false),
    isNull(webhookEvents.deadLetteredAt),
  );
  const recorded = last
    ? await db
        .update(webhookEvents)
        .set({
          deadLetteredAt: last.failedAt,
          nextRetryAt: null,
          statusCode: last.statusCode,
          response: last.response,
          errorMessage: last.reason,
          updatedAt: stamp,
        })
        // The attempt that gave up is still the row's last one, and no redelivery is due since.
        .where(and(row, eq(webhookEvents.retryCount, last.retryCount), isNull(webhookEvents.nextRetryAt)))
        .returning()
    : await db
        .update(webhookEvents)
        .set({
          deadLetteredAt: stamp,
          nextRetryAt: null,
          errorMessage: `Given up: the delivery consumer failed on it ${attempts} times (queue dead-lettering)`,
          updatedAt: stamp,
        })
        .where(row)
        .returning();
  const event = recorded[0];
  if (!event) return false;
  const log = new ServiceLog();
  log.warning(
    `Webhook delivery ${event.eventId} to subscription ${event.webhookSubscriptionId} given up after ${event.retryCount + 1} attempt(s): ${event.errorMessage ?? "no answer"}`,
    {
      properties: {
        eventId: event.eventId,
        webhookSubscriptionId: event.webhookSubscriptionId,
        webhookEventId: event.id,
        retryCount: event.retryCount,
        statusCode: event.statusCode,
      },
    },
  );
  await log.flush(db);
  return true;
}

/** The dead-letter queue's consumer of `webhook.delivery` messages: records each (once), then acknowledges it. */
export async function consumeDeadLetter(message: Message<Job>, env: Bindings): Promise<void> {
  const job = message.body;
  if (!isDeliveryJob(job)) {
    console.error(`webhooks: malformed dead letter ${message.id}`, JSON.stringify(job).slice(0, 200));
    return message.ack();
  }
  await recordDeadLetter(getDb(env.DB), job, message.attempts);
  message.ack();
}

/** Whether a delivery event was given up and recorded from the dead-letter queue. */
export function isDeadLettered(event: EventRow): boolean {
  return event.deadLetteredAt !== null;
}

/**
 * Sends a dead-lettered delivery again through the WEBHOOKS queue (Administrator, routes/management/webhooks.ts): the row is
 * due now and no longer dead-lettered, then its message is queued; when the queue refuses, the row is put back.
 */
export async function redeliver(db: Db, env: Bindings, event: EventRow): Promise<EventRow> {
  const stamp = nowIso();
  const [due] = await db
    .update(webhookEvents)
    .set({ deadLetteredAt: null, nextRetryAt: stamp, updatedAt: stamp })
    .where(and(eq(webhookEvents.id, event.id), isNotNull(webhookEvents.deadLetteredAt)))
    .returning();
  if (!due) throw new ApiError(400, `Event ${event.id} was not given up; it cannot be redelivered`);
  try {
    await env.WEBHOOKS.send({
      kind: DELIVERY_JOB,
      eventId: event.eventId,
      subscriptionId: event.webhookSubscriptionId,
    } satisfies DeliveryJob);
  } catch (e) {
    await db
      .update(webhookEvents)
      .set({ deadLetteredAt: event.deadLetteredAt, nextRetryAt: null, updatedAt: nowIso() })
      .where(eq(webhookEvents.id, event.id));
    throw new ApiError(503, `The delivery could not be queued: ${e instanceof Error ? e.message : String(e)}`);
  }
  return due;
}
