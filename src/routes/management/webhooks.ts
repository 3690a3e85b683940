/**
 * The webhook routes (SPEC "Webhook routes", CONTRACT section 6): subscriptions (list, create, get, partial update,
 * delete, test), their delivery events (list with `include`, delete, retry by hand, redeliver one given up), the
 * dispatcher's status and the event types. API key only, Administrator or LicenseManager (redelivery: Administrator). Answers carry `success` and `message` plus their data
 * and no `code` (SPEC); errors keep the service's error envelope; unknown subscriptions and events answer 404.
 */
import { type RouteHandler, createRoute, z } from "@hono/zod-openapi";
import { and, eq, sql } from "drizzle-orm";
import { Roles, access } from "../../auth/guard";
import type { Config } from "../../kernel/config";
import type { Db } from "../../db/client";
import { webhookEvents, webhookSubscriptions } from "../../db/schema";
import { serviceContext } from "../../http/context";
import { intIdParam } from "../crud";
import { ApiError } from "../../kernel/errors";
import { type IncludeLoader, listBody, listQuery } from "../../http/list";
import { Envelope, envelopedWithoutCode, errorResponses, json, jsonBody } from "../../http/openapi";
import { ok } from "../../http/respond";
import type { AppEnv } from "../../http/app-env";
import type { Router } from "../../http/router";
import { isDeadLettered, redeliver } from "../../webhooks/dead-letter";
import { deliverNow } from "../../webhooks/deliver";
import { buildPayload, recordDeliveries } from "../../webhooks/emit";
import { EVENT_TYPES } from "../../webhooks/events";
import {
  type EventRow,
  type SubscriptionRow,
  WebhookEvent,
  WebhookSubscription,
  createSubscription,
  requireEvent,
  requireSubscription,
  updateSubscription,
} from "../../webhooks/subscriptions";

const TAG = "Webhooks";
const BASE = "/v1/webhooks/subscriptions";
const withoutCode = { code: false } as const;

const webhookErrors = {
  ...errorResponses,
  404: { description: "Unknown subscription or event.", content: { "application/json": { schema: Envelope } } },
} as const;

const idParams = z.object({ id: intIdParam("id") });
const eventParams = z.object({ id: intIdParam("id"), eventId: intIdParam("eventId") });

/** A total of a list (int64, as the shared list answers state theirs). */
const count = z.int().min(0).openapi({ format: "int64" });
const EventType = z.object({ name: z.string(), description: z.string() }).openapi("WebhookEventType");
const CreatedSubscription = WebhookSubscription.record.extend({
  secret: z.string().openapi({ description: "The signing secret (whsec_…): shown only in this answer." }),
});

/** A subscription as the API returns it (never its secret). */
export function subscriptionRecord(row: SubscriptionRow, config: Config): Record<string, unknown> {
  return WebhookSubscription.toWire(row, config);
}

function eventRecord(row: EventRow, config: Config) {
  return WebhookEvent.toWire(row, config);
}

/** `include=subscription` on the events list: each event's subscription, one query for the page. */
const includeSubscription: IncludeLoader = async (db: Db, items, config) => {
  const ids = [
    ...new Set(items.map((item) => item["webhookSubscriptionId"]).filter((id): id is number => typeof id === "number")),
  ];
  if (ids.length === 0) return;
  const rows = await db
    .select()
    .from(webhookSubscriptions)
    .where(sql`${webhookSubscriptions.id} IN (SELECT value FROM json_each(${JSON.stringify(ids)}))`);
  const byId = new Map(rows.map((row) => [row.id, subscriptionRecord(row, config)]));
  for (const item of items) item["subscription"] = byId.get(item["webhookSubscriptionId"] as number) ?? null;
};

/** Test deliveries and retries by hand call out at once; they follow the dispatcher's switch too. */
function requireEnabled(config: Config): void {
  if (!config["Webhooks:Enabled"]) throw new ApiError(400, "Webhooks are disabled (Webhooks:Enabled)");
}

/** What an attempt made by hand says in `message`. */
function attemptMessage(event: EventRow): string {
  return event.isSuccess
    ? `Delivered: HTTP ${event.statusCode}`
    : `Delivery failed: ${event.errorMessage ?? "no answer"}`;
}

/**
 * What every route of this module declares: API key only, Administrator or LicenseManager (Administrator alone where
 * `roles` says so), the Webhooks tag.
 */
function webhookRoute<M extends "get" | "post" | "put" | "delete", P extends string>(
  method: M,
  path: P,
  operationId: string,
  summary: string,
  roles: typeof Roles.managers | typeof Roles.admin = Roles.managers,
) {
  return { method, path, tags: [TAG], operationId, summary, ...access.key(roles) };
}

/** Registers the webhook routes (SPEC "Webhook routes"). */
export function registerWebhooks(app: Router): void {
  registerSubscriptionRoutes(app);
  registerEventRoutes(app);
  registerInfoRoutes(app);
}

const subscriptionListParams = listQuery(["select", "filter", "sort", "take", "skip"]);

const listWebhookSubscriptionsRoute = createRoute({
  ...webhookRoute("get", BASE, "listWebhookSubscriptions", "List webhook subscriptions"),
  request: { query: subscriptionListParams },
  responses: {
    200: json(
      envelopedWithoutCode({ subscriptions: z.array(WebhookSubscription.record), totalSubscriptionsCount: count }),
      "A page of subscriptions",
    ),
    ...webhookErrors,
  },
});

const listWebhookSubscriptions: RouteHandler<typeof listWebhookSubscriptionsRoute, AppEnv> = async (c) => {
  const ctx = serviceContext(c);
  const body = await listBody(ctx.db, WebhookSubscription, c.req.valid("query"), ctx.config);
  return ok(c, { message: "Subscriptions retrieved", ...body }, 200, withoutCode);
};

const createWebhookSubscriptionRoute = createRoute({
  ...webhookRoute("post", BASE, "createWebhookSubscription", "Subscribe an endpoint to events"),
  description: "The answer is the only one that shows the signing secret (generated unless given).",
  request: { body: jsonBody(z.object({ subscription: WebhookSubscription.createInput })) },
  responses: {
    201: json(envelopedWithoutCode({ subscription: CreatedSubscription }), "The subscription, with its secret"),
    ...webhookErrors,
  },
});

const createWebhookSubscription: RouteHandler<typeof createWebhookSubscriptionRoute, AppEnv> = async (c) => {
  const ctx = serviceContext(c);
  const { row, secret } = await createSubscription(ctx.db, ctx.config, c.req.valid("json").subscription);
  const subscription = { ...WebhookSubscription.toWire(row, ctx.config), secret };
  return ok(
    c,
    { message: "Subscription created; store its secret now, it is not shown again", subscription },
    201,
    withoutCode,
  );
};

const getWebhookSubscriptionRoute = createRoute({
  ...webhookRoute("get", `${BASE}/{id}`, "getWebhookSubscription", "Get a webhook subscription"),
  request: { params: idParams },
  responses: {
    200: json(envelopedWithoutCode({ subscription: WebhookSubscription.record }), "The subscription"),
    ...webhookErrors,
  },
});

const getWebhookSubscription: RouteHandler<typeof getWebhookSubscriptionRoute, AppEnv> = async (c) => {
  const ctx = serviceContext(c);
  const row = await requireSubscription(ctx.db, c.req.valid("param").id);
  return ok(
    c,
    { message: "Subscription retrieved", subscription: WebhookSubscription.toWire(row, ctx.config) },
    200,
    withoutCode,
  );
};

const updateWebhookSubscriptionRoute = createRoute({
  ...webhookRoute(
    "put",
    `${BASE}/{id}`,
    "updateWebhookSubscription",
    "Change a webhook subscription (only the properties sent)",
  ),
  description: "A new secret (whsec_…) replaces the old one; it is not returned.",
  request: {
    params: idParams,
    body: jsonBody(z.object({ subscription: WebhookSubscription.updateInput.omit({ id: true }) })),
  },
  responses: {
    200: json(envelopedWithoutCode({ subscription: WebhookSubscription.record }), "The changed subscription"),
    ...webhookErrors,
  },
});

const updateWebhookSubscription: RouteHandler<typeof updateWebhookSubscriptionRoute, AppEnv> = async (c) => {
  const ctx = serviceContext(c);
  const row = await updateSubscription(ctx.db, ctx.config, c.req.valid("param").id, c.req.valid("json").subscription);
  return ok(
    c,
    { message: "Subscription updated", subscription: WebhookSubscription.toWire(row, ctx.config) },
    200,
    withoutCode,
  );
};

const deleteWebhookSubscriptionRoute = createRoute({
  ...webhookRoute(
    "delete",
    `${BASE}/{id}`,
    "deleteWebhookSubscription",
    "Delete a webhook subscription with its delivery history",
  ),
  request: { params: idParams },
  responses: { 200: json(envelopedWithoutCode({}), "The subscription was deleted"), ...webhookErrors },
});

const deleteWebhookSubscription: RouteHandler<typeof deleteWebhookSubscriptionRoute, AppEnv> = async (c) => {
  const ctx = serviceContext(c);
  const id = c.req.valid("param").id;
  const deleted = await ctx.db
    .delete(webhookSubscriptions)
    .where(eq(webhookSubscriptions.id, id))
    .returning({ id: webhookSubscriptions.id });
  if (deleted.length === 0) throw new ApiError(404, `Subscription ${id} not found`);
  return ok(c, { message: "Subscription deleted" }, 200, withoutCode);
};

const testWebhookSubscriptionRoute = createRoute({
  ...webhookRoute(
    "post",
    `${BASE}/{id}/test`,
    "testWebhookSubscription",
    "Deliver a webhook.test event now (one attempt)",
  ),
  description:
    "Delivers a webhook.test event whose data is the subscription, once and at once (also to an inactive subscription), and answers with its delivery event.",
  request: { params: idParams },
  responses: {
    200: json(envelopedWithoutCode({ event: WebhookEvent.record }), "The delivery event of the attempt"),
    ...webhookErrors,
  },
});

const testWebhookSubscription: RouteHandler<typeof testWebhookSubscriptionRoute, AppEnv> = async (c) => {
  const ctx = serviceContext(c);
  const subscription = await requireSubscription(ctx.db, c.req.valid("param").id);
  requireEnabled(ctx.config);
  const payload = buildPayload(ctx.config, "webhook.test", { data: subscriptionRecord(subscription, ctx.config) });
  await recordDeliveries(ctx.db, payload, [subscription.id]);
  const recorded = await ctx.db
    .select()
    .from(webhookEvents)
    .where(and(eq(webhookEvents.eventId, payload.id), eq(webhookEvents.webhookSubscriptionId, subscription.id)))
    .get();
  if (!recorded) throw new Error(`webhook.test event ${payload.id} was not recorded`);
  const event = await deliverNow(ctx.db, ctx.config, subscription, recorded);
  return ok(c, { message: attemptMessage(event), event: eventRecord(event, ctx.config) }, 200, withoutCode);
};

function registerSubscriptionRoutes(app: Router): void {
  app.openapi(listWebhookSubscriptionsRoute, listWebhookSubscriptions);
  app.openapi(createWebhookSubscriptionRoute, createWebhookSubscription);
  app.openapi(getWebhookSubscriptionRoute, getWebhookSubscription);
  app.openapi(updateWebhookSubscriptionRoute, updateWebhookSubscription);
  app.openapi(deleteWebhookSubscriptionRoute, deleteWebhookSubscription);
  app.openapi(testWebhookSubscriptionRoute, testWebhookSubscription);
}

const eventListParams = listQuery(["select", "filter", "sort", "include", "take", "skip"]);

const listWebhookEventsRoute = createRoute({
  ...webhookRoute("get", `${BASE}/{id}/events`, "listWebhookEvents", "List a subscription's delivery events"),
  description: "`include=subscription` adds each event's subscription.",
  request: { params: idParams, query: eventListParams },
  responses: {
    200: json(
      envelopedWithoutCode({
        events: z.array(WebhookEvent.record.extend({ subscription: WebhookSubscription.record.optional() })),
        totalEventsCount: count,
      }),
      "A page of delivery events",
    ),
    ...webhookErrors,
  },
});

const listWebhookEvents: RouteHandler<typeof listWebhookEventsRoute, AppEnv> = async (c) => {
  const ctx = serviceContext(c);
  const subscription = await requireSubscription(ctx.db, c.req.valid("param").id);
  const body = await listBody(ctx.db, WebhookEvent, c.req.valid("query"), ctx.config, {
    scope: eq(webhookEvents.webhookSubscriptionId, subscription.id),
    includes: { subscription: includeSubscription },
  });
  return ok(c, { message: "Events retrieved", ...body }, 200, withoutCode);
};

const deleteWebhookEventRoute = createRoute({
  ...webhookRoute("delete", `${BASE}/{id}/events/{eventId}`, "deleteWebhookEvent", "Delete a delivery event"),
  request: { params: eventParams },
  responses: { 200: json(envelopedWithoutCode({}), "The event was deleted"), ...webhookErrors },
});

const deleteWebhookEvent: RouteHandler<typeof deleteWebhookEventRoute, AppEnv> = async (c) => {
  const ctx = serviceContext(c);
  const { id, eventId } = c.req.valid("param");
  await requireSubscription(ctx.db, id);
  const event = await requireEvent(ctx.db, id, eventId);
  await ctx.db.delete(webhookEvents).where(eq(webhookEvents.id, event.id));
  return ok(c, { message: "Event deleted" }, 200, withoutCode);
};

const retryWebhookEventRoute = createRoute({
  ...webhookRoute(
    "post",
    `${BASE}/{id}/events/{eventId}/retry`,
    "retryWebhookEvent",
    "Deliver a failed event again, now",
  ),
  description:
    "One attempt now, recorded on the event like a scheduled one (retryCount + 1); a scheduled retry still pending keeps its time.",
  request: { params: eventParams },
  responses: {
    200: json(envelopedWithoutCode({ event: WebhookEvent.record }), "The delivery event after the attempt"),
    ...webhookErrors,
  },
});

const retryWebhookEvent: RouteHandler<typeof retryWebhookEventRoute, AppEnv> = async (c) => {
  const ctx = serviceContext(c);
  const { id, eventId } = c.req.valid("param");
  const subscription = await requireSubscription(ctx.db, id);
  const recorded = await requireEvent(ctx.db, id, eventId);
  if (recorded.isSuccess) throw new ApiError(400, `Event ${eventId} was already delivered`);
  if (isDeadLettered(recorded))
    throw new ApiError(
      400,
      `Event ${eventId} was given up; an Administrator sends it again with POST ${BASE}/${id}/events/${eventId}/redeliver`,
    );
  requireEnabled(ctx.config);
  const event = await deliverNow(ctx.db, ctx.config, subscription, recorded);
  return ok(c, { message: attemptMessage(event), event: eventRecord(event, ctx.config) }, 200, withoutCode);
};

const redeliverWebhookEventRoute = createRoute({
  ...webhookRoute(
    "post",
    `${BASE}/{id}/events/{eventId}/redeliver`,
    "redeliverWebhookEvent",
    "Queue a given-up delivery again (Administrator)",
    Roles.admin,
  ),
  description:
    "For an event the dead-letter queue recorded as given up (deadLetteredAt): it is queued again for the delivery consumer, which makes one more attempt (retryCount + 1) and, if that fails, records it as given up again. Other events answer 400 (use …/retry).",
  request: { params: eventParams },
  responses: {
    202: json(envelopedWithoutCode({ event: WebhookEvent.record }), "The delivery event, due again"),
    ...webhookErrors,
  },
});

const redeliverWebhookEvent: RouteHandler<typeof redeliverWebhookEventRoute, AppEnv> = async (c) => {
  const ctx = serviceContext(c);
  const { id, eventId } = c.req.valid("param");
  const subscription = await requireSubscription(ctx.db, id);
  const recorded = await requireEvent(ctx.db, id, eventId);
  if (!isDeadLettered(recorded))
    throw new ApiError(
      400,
      recorded.isSuccess
        ? `Event ${eventId} was already delivered`
        : `Event ${eventId} was not given up; retry it with POST ${BASE}/${id}/events/${eventId}/retry`,
    );
  requireEnabled(ctx.config);
  if (!subscription.isActive) throw new ApiError(400, `Subscription ${id} is inactive; activate it first`);
  const event = await redeliver(ctx.db, ctx.env, recorded);
  ctx.log?.audit("WebhookRedelivered", `Webhook delivery ${event.eventId} queued again`, ctx, {
    webhookSubscriptionId: id,
    webhookEventId: eventId,
  });
  return ok(
    c,
    { message: `Queued for delivery: ${event.eventId}`, event: eventRecord(event, ctx.config) },
    202,
    withoutCode,
  );
};

function registerEventRoutes(app: Router): void {
  app.openapi(listWebhookEventsRoute, listWebhookEvents);
  app.openapi(deleteWebhookEventRoute, deleteWebhookEvent);
  app.openapi(retryWebhookEventRoute, retryWebhookEvent);
  app.openapi(redeliverWebhookEventRoute, redeliverWebhookEvent);
}

const getWebhookStatusRoute = createRoute({
  ...webhookRoute("get", "/v1/webhooks/status", "getWebhookStatus", "Whether the dispatcher delivers webhooks"),
  responses: { 200: json(envelopedWithoutCode({ isEnabled: z.boolean() }), "Webhooks:Enabled"), ...webhookErrors },
});

const getWebhookStatus: RouteHandler<typeof getWebhookStatusRoute, AppEnv> = (c) => {
  const isEnabled = c.get("config")["Webhooks:Enabled"];
  return ok(c, { message: isEnabled ? "Webhooks are enabled" : "Webhooks are disabled", isEnabled }, 200, withoutCode);
};

const listWebhookEventTypesRoute = createRoute({
  ...webhookRoute(
    "get",
    "/v1/webhooks/event-types",
    "listWebhookEventTypes",
    "The event types a subscription can name",
  ),
  responses: {
    200: json(envelopedWithoutCode({ eventTypes: z.array(EventType) }), "Every event type with what emits it"),
    ...webhookErrors,
  },
});

const listWebhookEventTypes: RouteHandler<typeof listWebhookEventTypesRoute, AppEnv> = (c) =>
  ok(
    c,
    {
      message: "Event types retrieved",
      eventTypes: EVENT_TYPES.map(({ name, description }) => ({ name, description })),
    },
    200,
    withoutCode,
  );

function registerInfoRoutes(app: Router): void {
  app.openapi(getWebhookStatusRoute, getWebhookStatus);
  app.openapi(listWebhookEventTypesRoute, listWebhookEventTypes);
}
