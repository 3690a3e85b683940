/**
 * Webhook subscriptions and their delivery events as records (CONTRACT section 6), free of HTTP: the entity
 * declarations the routes and lists use, and the rules a subscription's values follow. The URL must pass the SSRF
 * policy (url-policy.ts), the secret is generated unless given (then it must be a `whsec_` secret), stored
 * AES-GCM-encrypted (kernel/secrets.ts) and shown only by the create answer; extra headers may never replace the
 * headers the service signs and sets itself. Extra header values (often a receiver's credentials) are stored
 * AES-GCM-encrypted too and shown masked; rows from before that are read as they were stored (`openHeaders`).
 * Unknown ids answer 404 (SPEC: webhook routes).
 */
import { z } from "@hono/zod-openapi";
import { and, eq, isNotNull, sql } from "drizzle-orm";
import { decryptSecret, encryptSecret } from "../kernel/secrets";
import { nowIso } from "../kernel/clock";
import type { Config } from "../kernel/config";
import type { Db } from "../db/client";
import { webhookEvents, webhookSubscriptions } from "../db/schema";
import { type Field, defineEntity, f } from "../http/entity";
import { ApiError } from "../kernel/errors";
import { SUBSCRIBABLE } from "./events";
import { generateSecret, secretProblem } from "./signing";
import { webhookUrlProblem } from "./url-policy";

export type SubscriptionRow = typeof webhookSubscriptions.$inferSelect;
export type EventRow = typeof webhookEvents.$inferSelect;

/** Header names the service sets on every delivery (and hop-by-hop ones): extra headers may not name them. */
const RESERVED_HEADER = /^(content-type|content-length|host|connection|transfer-encoding|x-service-.*|webhook-.*)$/i;
const MAX_HEADERS = 20;

/** `eventTypes`: the event type names (or `*`), stored as JSON. */
const eventTypes: Field = {
  filter: "json",
  output: z
    .array(z.string())
    .openapi({ description: "Event types delivered to this subscription; `*` = all (GET /v1/webhooks/event-types)." }),
  input: z
    .array(z.enum(SUBSCRIBABLE))
    .min(1)
    .max(SUBSCRIBABLE.length)
    .openapi({ description: "Event types to deliver; `*` = all (GET /v1/webhooks/event-types)." }),
};

/** What answers show instead of an extra header's value. */
export const MASKED = "********";

/** `headers`: extra request headers of each delivery, stored as JSON with encrypted values, shown masked. */
const headers: Field = {
  output: z.record(z.string(), z.string()).openapi({
    description: `Extra request headers sent with each delivery; their values are stored encrypted and shown as ${MASKED}.`,
  }),
  show: (value) => Object.fromEntries(Object.keys(value as Record<string, string>).map((name) => [name, MASKED])),
  input: z
    .record(
      z.string().regex(/^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,128}$/, { message: "Not a valid header name" }),
      z
        .string()
        .max(2048)
        .regex(/^[^\r\n\0]*$/, { message: "Header values may not contain line breaks" }),
    )
    .refine((h) => Object.keys(h).length <= MAX_HEADERS, { message: `At most ${MAX_HEADERS} headers` })
    .openapi({
      description:
        "Extra request headers sent with each delivery; they cannot replace Content-Type, X-Service-* or webhook-* headers.",
      maxProperties: MAX_HEADERS,
    }),
};

export const WebhookSubscription = defineEntity({
  name: "WebhookSubscription",
  singular: "subscription",
  plural: "subscriptions",
  table: webhookSubscriptions,
  fields: {
    id: f.id(),
    name: f.string({ max: 256 }),
    url: f.string({
      max: 2048,
      description:
        "https URL called with each event (http and private addresses only with Webhooks:AllowInsecureUrls); no credentials.",
    }),
    eventTypes,
    secret: f.string({
      max: 200,
      writeOnly: true,
      description:
        "whsec_ + base64 of 24 to 64 random bytes; generated when omitted. Returned only by the POST that creates the subscription.",
    }),
    headers,
    isActive: f.bool({ description: "Default true; a 410 Gone answer sets it to false." }),
    maxRetryCount: f.int({
      min: 0,
      max: 8,
      description: "Retries after a failed attempt (default 8: 30 s, 2 m, 10 m, 30 m, 1 h, 3 h, 6 h, 12 h).",
    }),
    description: f.string(),
    createdAt: f.date({ readOnly: true }),
    updatedAt: f.date({ readOnly: true }),
  },
  required: ["name", "url", "eventTypes"],
});

export const WebhookEvent = defineEntity({
  name: "WebhookEvent",
  singular: "event",
  plural: "events",
  table: webhookEvents,
  fields: {
    id: f.id(),
    webhookSubscriptionId: f.int({ readOnly: true }),
    eventId: f.string({
      readOnly: true,
      description: "The event's id (evt_…): the payload's id, X-Service-Delivery and webhook-id.",
    }),
    eventType: f.string({ readOnly: true }),
    payload: f.string({ readOnly: true, description: "The JSON body delivered." }),
    statusCode: f.int({ readOnly: true, description: "HTTP status of the last attempt (none when no answer came)." }),
    response: f.string({ readOnly: true, description: "First 2 KB of the last answer's body." }),
    errorMessage: f.string({ readOnly: true }),
    isSuccess: f.bool({ readOnly: true }),
    retryCount: f.int({ readOnly: true, description: "Attempts made after the first." }),
    sentAt: f.date({ readOnly: true, description: "When the last attempt was made." }),
    nextRetryAt: f.date({
      readOnly: true,
      description: "When the next attempt is due; none when no attempt is scheduled.",
    }),
    deadLetteredAt: f.date({
      readOnly: true,
      description:
        "When the delivery was given up (retries exhausted, or a permanent failure) and recorded from the dead-letter queue, with its last answer in statusCode, response and errorMessage; an Administrator sends it again with POST …/redeliver. None otherwise.",
    }),
    createdAt: f.date({ readOnly: true }),
  },
});

/** 404 for an unknown subscription (SPEC: webhook routes answer 404, not 400). */
export async function requireSubscription(db: Db, id: number): Promise<SubscriptionRow> {
  const row = await db.select().from(webhookSubscriptions).where(eq(webhookSubscriptions.id, id)).get();
  if (!row) throw new ApiError(404, `Subscription ${id} not found`);
  return row;
}

/** 404 for an event that does not exist or belongs to another subscription. */
export async function requireEvent(db: Db, subscriptionId: number, eventId: number): Promise<EventRow> {
  const row = await db.select().from(webhookEvents).where(eq(webhookEvents.id, eventId)).get();
  if (!row || row.webhookSubscriptionId !== subscriptionId) throw new ApiError(404, `Event ${eventId} not found`);
  return row;
}

/** The values a body may set, validated beyond the schema: URL policy, secret form, reserved headers. */
function checkValues(config: Config, values: Record<string, unknown>): void {
  if (typeof values["url"] === "string") {
    const problem = webhookUrlProblem(values["url"], config["Webhooks:AllowInsecureUrls"]);
    if (problem) throw new ApiError(400, problem);
  }
  if (typeof values["secret"] === "string") {
    const problem = secretProblem(values["secret"]);
    if (problem) throw new ApiError(400, problem);
  }
  const extra = values["headers"];
  if (extra && typeof extra === "object") {
    const reserved = Object.keys(extra).filter((name) => RESERVED_HEADER.test(name));
    if (reserved.length > 0)
      throw new ApiError(400, `The service sets ${reserved.join(", ")} itself; extra headers cannot replace it`);
  }
}

const ENCRYPTED = /^v1:[A-Za-z0-9+/=]+:[A-Za-z0-9+/=]+$/;

/** Extra headers as stored: each value encrypted with Application:EncryptionKey. */
async function sealHeaders(config: Config, plain: Record<string, string>): Promise<Record<string, string>> {
  const sealed: Record<string, string> = {};
  for (const [name, value] of Object.entries(plain))
    sealed[name] = await encryptSecret(config["Application:EncryptionKey"], value);
  return sealed;
}

/**
 * Extra headers as sent: encrypted values decrypted (throws when the key cannot read them), and values stored in
 * plain text before encryption (which never have the encrypted form) as they are.
 */
export async function openHeaders(
  config: Config,
  stored: Record<string, string> | null,
): Promise<Record<string, string>> {
  const open: Record<string, string> = {};
  for (const [name, value] of Object.entries(stored ?? {}))
    open[name] = ENCRYPTED.test(value) ? await decryptSecret(config["Application:EncryptionKey"], value) : value;
  return open;
}

/** Creates a subscription; returns the stored row and its secret in the clear (shown once). */
export async function createSubscription(
  db: Db,
  config: Config,
  input: Record<string, unknown>,
): Promise<{ row: SubscriptionRow; secret: string }> {
  const values = WebhookSubscription.toRow(input);
  checkValues(config, values);
  const secret = typeof values["secret"] === "string" ? values["secret"] : generateSecret();
  const stamp = nowIso();
  const [row] = await db
    .insert(webhookSubscriptions)
    .values({
      name: values["name"] as string,
      url: values["url"] as string,
      eventTypes: values["eventTypes"] as string[],
      secretEncrypted: await encryptSecret(config["Application:EncryptionKey"], secret),
      headers: values["headers"] ? await sealHeaders(config, values["headers"] as Record<string, string>) : null,
      isActive: (values["isActive"] as boolean | null | undefined) ?? true,
      maxRetryCount: (values["maxRetryCount"] as number | null | undefined) ?? 8,
      description: (values["description"] as string | null | undefined) ?? null,
      createdAt: stamp,
      updatedAt: stamp,
    })
    .returning();
  if (!row) throw new Error("insert into webhook_subscriptions returned no row");
  return { row, secret };
}

/** Defaulted values that a partial update may change but not clear. */
const NOT_NULL = ["isActive", "maxRetryCount", "secret"] as const;

/** Applies a partial update (only the properties sent; a new secret replaces the old one); 404 when unknown. */
export async function updateSubscription(
  db: Db,
  config: Config,
  id: number,
  input: Record<string, unknown>,
): Promise<SubscriptionRow> {
  const existing = await requireSubscription(db, id);
  const values = WebhookSubscription.toRow(input);
  const cleared = NOT_NULL.filter((key) => values[key] === null);
  if (cleared.length > 0) throw new ApiError(400, `A subscription's ${cleared.join(", ")} cannot be cleared`);
  checkValues(config, values);
  const { secret, ...changes } = values;
  if (typeof secret === "string")
    changes["secretEncrypted"] = await encryptSecret(config["Application:EncryptionKey"], secret);
  if (changes["headers"]) changes["headers"] = await sealHeaders(config, changes["headers"] as Record<string, string>);
  if (Object.keys(changes).length === 0) return existing;
  const [row] = await db
    .update(webhookSubscriptions)
    .set({ ...changes, updatedAt: nowIso() })
    .where(eq(webhookSubscriptions.id, id))
    .returning();
  if (!row) throw new ApiError(404, `Subscription ${id} not found`);
  return row;
}

/** Subscriptions whose headers are sealed per cron run (sealPlainHeaders). */
const SEAL_PER_RUN = 100;

/**
 * Encrypts the extra header values stored in plain text before they were encrypted (the cron trigger, so old rows
 * do not wait for their next update); returns how many subscriptions it sealed. Without an EncryptionKey, none.
 */
export async function sealPlainHeaders(db: Db, config: Config): Promise<number> {
  if (!config["Application:EncryptionKey"]) return 0;
  const column = webhookSubscriptions.headers;
  // The stored JSON text as it is (not parsed by the column), so the update below can compare it.
  const results = await db
    .select({ id: webhookSubscriptions.id, headers: sql<string>`${column}`.mapWith(String) })
    .from(webhookSubscriptions)
    .where(and(isNotNull(column), sql`EXISTS (SELECT 1 FROM json_each(${column}) WHERE value NOT LIKE 'v1:%')`))
    .limit(SEAL_PER_RUN);
  const updates = [];
  for (const row of results) {
    const stored = JSON.parse(row.headers) as Record<string, string>;
    const sealed: Record<string, string> = {};
    for (const [name, value] of Object.entries(stored))
      sealed[name] = ENCRYPTED.test(value) ? value : await encryptSecret(config["Application:EncryptionKey"], value);
    // Only if unchanged since read: an update through the API meanwhile wrote sealed values already.
    updates.push(
      db
        .update(webhookSubscriptions)
        .set({ headers: sealed })
        .where(and(eq(webhookSubscriptions.id, row.id), sql`${column} = ${row.headers}`)),
    );
  }
  const [first, ...rest] = updates;
  if (!first) return 0;
  const done = await db.batch([first, ...rest]);
  return done.reduce((n, r) => n + (r.meta.changes ?? 0), 0);
}
