/**
 * Delivery (CONTRACT section 6): one attempt POSTs the stored payload, signed, to the subscription's URL and records
 * the outcome on the event's one delivery row. The queue consumer (`webhook.delivery` jobs) decides what follows:
 *   2xx                  delivered; acknowledged
 *   410 Gone             the subscriber asked to stop: the subscription becomes inactive; acknowledged
 *   URL refused (SSRF),  permanent: no retry; acknowledged and sent to the dead-letter queue
 *   secret unreadable
 *   anything else        (3xx: redirects are not followed; other statuses, network errors, the 15 s timeout) retried
 *                        with `message.retry({ delaySeconds })` at 30 s, 2 m, 10 m, 30 m, 1 h, 3 h, 6 h, 12 h (±10 %)
 *                        while retryCount < the subscription's maxRetryCount; then acknowledged and sent to the
 *                        dead-letter queue (WEBHOOKS_DLQ) explicitly, so the per-subscription limit decides, not
 *                        the queue's max_retries (which stays above the largest maxRetryCount, for crashes only)
 * A dead letter carries the last answer (retryCount, statusCode, response, reason); its consumer (dead-letter.ts)
 * records it on the row as given up, and an Administrator can send it again from there.
 * A row that is gone (deleted history or subscription) or already delivered is acknowledged without a call; an
 * inactive subscription or `Webhooks:Enabled` false records why and stops.
 */
import { and, eq } from "drizzle-orm";
import { decryptSecret } from "../kernel/secrets";
import { clock, nowIso } from "../kernel/clock";
import type { Config } from "../kernel/config";
import { loadConfig } from "../db/settings-store";
import { type Db, getDb } from "../db/client";
import { webhookEvents, webhookSubscriptions } from "../db/schema";
import type { Job } from "../kernel/jobs";
import { SERVICE_VERSION } from "../kernel/version";
import { deadLetterOf } from "./dead-letter";
import { type DeliveryJob, isDeliveryJob } from "./emit";
import { signatureHeaders } from "./signing";
import { type EventRow, type SubscriptionRow, openHeaders } from "./subscriptions";
import { webhookUrlProblem } from "./url-policy";

/** Seconds before retry n + 1 (index n = retryCount of the failed attempt); CONTRACT section 6. */
export const RETRY_SCHEDULE_SECONDS = [30, 120, 600, 1800, 3600, 10_800, 21_600, 43_200] as const;
/** Queues delay a retry by at most 12 hours. */
const MAX_DELAY_SECONDS = 43_200;
const RESPONSE_BYTES = 2048;

/**
 * How long one attempt may take (CONTRACT: success = 2xx within 15 s), and the factor of the retry delays the
 * consumer asks the queue for (1: the schedule). Properties, not constants, so tests can shorten them instead of
 * waiting 15 s or 30 s per retry on the real queue; the service never changes them.
 */
export const deliveryTiming = { timeoutMs: 15_000, retryDelayFactor: 1 };

/** The outcome of one attempt. */
export interface Attempt {
  statusCode: number | null;
  response: string | null;
  errorMessage: string | null;
  isSuccess: boolean;
  /** 410 Gone: stop delivering to this subscription. */
  gone: boolean;
  /** No call was made and none would help (the URL is refused, the secret unreadable). */
  permanent: boolean;
}

/** The retry delay after the failed attempt with this retryCount: the schedule's step ±10 %, in whole seconds. */
export function retryDelaySeconds(retryCount: number, random: () => number = Math.random): number {
  const base = RETRY_SCHEDULE_SECONDS[Math.min(retryCount, RETRY_SCHEDULE_SECONDS.length - 1)]!;
  return Math.min(MAX_DELAY_SECONDS, Math.max(1, Math.round(base * (0.9 + 0.2 * random()))));
}

/** Reads at most the first 2 KB of an answer's body as text, then lets the rest go. */
async function responseHead(response: Response): Promise<string | null> {
  if (!response.body) return null;
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    while (size < RESPONSE_BYTES) {
      const { done, value } = await reader.read();
      if (done) break;
      chunks.push(value);
      size += value.byteLength;
    }
  } finally {
    await reader.cancel().catch(() => undefined);
  }
  const bytes = new Uint8Array(size);
  let at = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, at);
    at += chunk.byteLength;
  }
  return new TextDecoder().decode(bytes.slice(0, RESPONSE_BYTES));
}

const failed = (errorMessage: string, permanent = false): Attempt => ({
  statusCode: null,
  response: null,
  errorMessage,
  isSuccess: false,
  gone: false,
  permanent,
});

/** The request headers of an attempt: extra headers first, so the service's own always win. */
async function requestHeaders(
  secret: string,
  extra: Record<string, string>,
  event: EventRow,
  timestamp: number,
): Promise<Headers> {
  const headers = new Headers({ "User-Agent": `licensing-service-webhooks/${SERVICE_VERSION}` });
  for (const [name, value] of Object.entries(extra)) headers.set(name, value);
  const own = {
    "Content-Type": "application/json",
    "X-Service-Event": event.eventType,
    "X-Service-Delivery": event.eventId,
    ...(await signatureHeaders(secret, event.eventId, timestamp, event.payload)),
  };
  for (const [name, value] of Object.entries(own)) headers.set(name, value);
  return headers;
}

/** One signed POST of the event's payload to the subscription's URL, with the SSRF policy checked again first. */
export async function attemptDelivery(
  config: Config,
  subscription: SubscriptionRow,
  event: EventRow,
): Promise<Attempt> {
  const refused = webhookUrlProblem(subscription.url, config["Webhooks:AllowInsecureUrls"]);
  if (refused) return failed(refused, true);
  let secret: string;
  let extra: Record<string, string>;
  try {
    secret = await decryptSecret(config["Application:EncryptionKey"], subscription.secretEncrypted);
    extra = await openHeaders(config, subscription.headers);
  } catch (e) {
    return failed(
      `The subscription's secret or headers cannot be read (was Application:EncryptionKey changed?): ${e instanceof Error ? e.message : String(e)}`,
      true,
    );
  }
  const timestamp = Math.floor(clock.now().getTime() / 1000);
  const timeoutMs = deliveryTiming.timeoutMs;
  try {
    const response = await fetch(subscription.url, {
      method: "POST",
      headers: await requestHeaders(secret, extra, event, timestamp),
      body: event.payload,
      redirect: "manual",
      signal: AbortSignal.timeout(timeoutMs),
    });
    const text = await responseHead(response);
    const status = response.status;
    const isSuccess = status >= 200 && status < 300;
    const redirect =
      status >= 300 && status < 400
        ? `Redirect not followed (${status}${response.headers.get("location") ? ` to ${response.headers.get("location")}` : ""})`
        : null;
    return {
      statusCode: status,
      response: text,
      errorMessage: isSuccess
        ? null
        : (redirect ?? `HTTP ${status}${response.statusText ? ` ${response.statusText}` : ""}`),
      isSuccess,
      gone: status === 410,
      permanent: false,
    };
  } catch (e) {
    const timedOut = e instanceof Error && (e.name === "TimeoutError" || e.name === "AbortError");
    return failed(
      timedOut
        ? `No answer within ${timeoutMs / 1000} s`
        : `Request failed: ${e instanceof Error ? e.message : String(e)}`,
    );
  }
}

/** Stores an attempt on the event's row; a 410 also makes the subscription inactive. */
export async function recordAttempt(
  db: Db,
  event: EventRow,
  attempt: Attempt,
  retryCount: number,
  nextRetryAt: string | null,
): Promise<EventRow> {
  const stamp = nowIso();
  const update = db
    .update(webhookEvents)
    .set({
      retryCount,
      statusCode: attempt.statusCode,
      response: attempt.response,
      errorMessage: attempt.errorMessage,
      isSuccess: attempt.isSuccess,
      sentAt: stamp,
      nextRetryAt,
      updatedAt: stamp,
    })
    .where(eq(webhookEvents.id, event.id))
    .returning();
  if (!attempt.gone) return (await update)[0] ?? event;
  const disable = db
    .update(webhookSubscriptions)
    .set({ isActive: false, updatedAt: stamp })
    .where(eq(webhookSubscriptions.id, event.webhookSubscriptionId));
  const [rows] = await db.batch([update, disable]);
  return rows[0] ?? event;
}

/** The retryCount of the next attempt on a row: 0 for the first, then one more per attempt. */
export function nextRetryCount(event: EventRow): number {
  return event.sentAt === null ? 0 : event.retryCount + 1;
}

/**
 * An attempt made now, outside the schedule (the test route, a retry by hand): recorded like any other; a scheduled
 * retry still pending keeps its time, so a failure here does not cancel it.
 */
export async function deliverNow(
  db: Db,
  config: Config,
  subscription: SubscriptionRow,
  event: EventRow,
): Promise<EventRow> {
  const attempt = await attemptDelivery(config, subscription, event);
  const pending =
    event.nextRetryAt !== null && event.sentAt !== null && event.nextRetryAt > nowIso() ? event.nextRetryAt : null;
  return recordAttempt(db, event, attempt, nextRetryCount(event), attempt.isSuccess || attempt.gone ? null : pending);
}

/** Records why a row will not be delivered (no attempt made) and stops its schedule. */
async function recordSkip(db: Db, event: EventRow, reason: string): Promise<void> {
  await db
    .update(webhookEvents)
    .set({ errorMessage: reason, nextRetryAt: null, updatedAt: nowIso() })
    .where(eq(webhookEvents.id, event.id));
}

/**
 * Hands an exhausted or undeliverable message to the dead-letter queue with its last answer (dead-letter.ts records
 * it); the caller acknowledges it. Never throws: a failure here must not make the queue retry a delivery that is over
 * (the row already holds the last answer, with no attempt due).
 */
async function deadLetter(env: Bindings, job: DeliveryJob, retryCount: number, attempt: Attempt): Promise<void> {
  const what = `${job.eventId} for subscription ${job.subscriptionId} (${attempt.errorMessage})`;
  if (!env.WEBHOOKS_DLQ) return console.error(`webhooks: no WEBHOOKS_DLQ binding; dropping ${what}`);
  await env.WEBHOOKS_DLQ.send(deadLetterOf(job, retryCount, attempt)).catch((e: unknown) =>
    console.error(`webhooks: dead-lettering ${what} failed`, e),
  );
}

/** The consumer of `webhook.delivery` messages (see the file comment for each decision). */
export async function consumeDelivery(message: Message<Job>, env: Bindings): Promise<void> {
  const job = message.body;
  if (!isDeliveryJob(job)) {
    console.error(`webhooks: malformed delivery message ${message.id}`, JSON.stringify(job).slice(0, 200));
    return message.ack();
  }
  const { config } = await loadConfig(env, env.DB);
  const db = getDb(env.DB);
  const found = await db
    .select({ event: webhookEvents, subscription: webhookSubscriptions })
    .from(webhookEvents)
    .innerJoin(webhookSubscriptions, eq(webhookSubscriptions.id, webhookEvents.webhookSubscriptionId))
    .where(and(eq(webhookEvents.eventId, job.eventId), eq(webhookEvents.webhookSubscriptionId, job.subscriptionId)))
    .get();
  if (!found || found.event.isSuccess) return message.ack();
  const { event, subscription } = found;
  if (!config["Webhooks:Enabled"] || !subscription.isActive) {
    await recordSkip(
      db,
      event,
      config["Webhooks:Enabled"]
        ? "Not delivered: the subscription is inactive"
        : "Not delivered: webhooks are disabled (Webhooks:Enabled)",
    );
    return message.ack();
  }
  const retryCount = nextRetryCount(event);
  const attempt = await attemptDelivery(config, subscription, event);
  const retry = !attempt.isSuccess && !attempt.gone && !attempt.permanent && retryCount < subscription.maxRetryCount;
  const delaySeconds = retry
    ? Math.max(1, Math.round(retryDelaySeconds(retryCount) * deliveryTiming.retryDelayFactor))
    : 0;
  const nextRetryAt = retry ? new Date(clock.now().getTime() + delaySeconds * 1000).toISOString() : null;
  await recordAttempt(db, event, attempt, retryCount, nextRetryAt);
  if (retry) return message.retry({ delaySeconds });
  if (!attempt.isSuccess && !attempt.gone) await deadLetter(env, job, retryCount, attempt);
  message.ack();
}
