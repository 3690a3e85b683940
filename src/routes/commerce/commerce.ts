/**
 * Payments to licenses (CONTRACT section 10):
 *   POST /v1/commerce/{provider}/webhook   anonymous; the provider's own signature (signatures.ts), then the event
 *                                          acted on exactly once (purchases.ts)
 *   /v1/commerce/mappings                  a provider's price/product/variant -> a license template (Administrator,
 *                                          Sales)
 *   GET /v1/commerce/purchases, /events    what providers sold and every event received (management roles)
 *
 * The webhook answers: 404 when the provider has no secret configured; 400 for a missing or bad signature, a stale
 * timestamp or a body changed after signing (nothing written), and for a body that is not JSON or not the
 * provider's documented shape after a good signature (logged once, nothing written); 200 for everything else the
 * provider should not send again: applied, remembered, ignored, unmapped (logged), duplicates, and failed for a
 * purchase over Commerce:MaxLicensesPerPurchase (logged, nothing written; redelivered after raising it, it is made).
 * A failure part-way answers 500 (the event `failed`): the provider's retry finishes the purchase.
 */
import { type RouteHandler, createRoute, z } from "@hono/zod-openapi";
import { Roles, access } from "../../auth/guard";
import { clock } from "../../kernel/clock";
import { sha256Hex } from "../../kernel/crypto";
import { ApiError } from "../../kernel/errors";
import { serviceContext } from "../../http/context";
import { jsonOnly } from "../../http/body-limit";
import { anonymousErrorResponses, enveloped, int32, json } from "../../http/openapi";
import { ok } from "../../http/respond";
import type { AppEnv } from "../../http/app-env";
import type { Router } from "../../http/router";
import { LicenseTemplate } from "../../records/license-templates";
import { crud } from "../crud";
import {
  MalformedEvent,
  PROVIDERS,
  type Provider,
  type ProviderEvent,
  SECRET_SETTINGS,
  readLemonSqueezy,
  readPaddle,
  readStripe,
} from "../../commerce/provider-events";
import { receiveEvent } from "../../commerce/purchases";
import { CommerceEvent, CommerceMapping, CommercePurchase, EVENT_STATUSES } from "../../commerce/records";
import { SignatureRefused, verifySignature } from "../../commerce/signatures";

const ProviderParam = z.object({
  provider: z.enum(PROVIDERS).openapi({ param: { name: "provider", in: "path" } }),
});

const WebhookAnswer = enveloped({
  result: z.enum([...EVENT_STATUSES, "duplicate"]).openapi({
    description:
      "What the event did: applied, remembered (before its purchase), ignored, unmapped, or duplicate (received before; nothing changed).",
  }),
  eventId: z.string().openapi({ description: "The provider's event id the service counted it under." }),
  orderId: int32(1)
    .nullable()
    .optional()
    .openapi({ description: "The order of the purchase the event is about, once made." }),
  detail: z.string(),
}).openapi("CommerceWebhookAnswer");

/** Reads a verified body as the provider's event; 400 (logged once) when it is not JSON or not its shape. */
async function readEvent(provider: Provider, body: string): Promise<ProviderEvent> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    throw new MalformedEvent("The body is not JSON");
  }
  if (!parsed || typeof parsed !== "object" || Array.isArray(parsed))
    throw new MalformedEvent("The body is not a JSON object");
  const event = parsed as Record<string, unknown>;
  if (provider === "stripe") return readStripe(event);
  if (provider === "paddle") return readPaddle(event);
  return readLemonSqueezy(event, await sha256Hex(body));
}

const receiveCommerceWebhookRoute = createRoute({
  method: "post",
  path: "/v1/commerce/{provider}/webhook",
  tags: ["Commerce"],
  operationId: "receiveCommerceWebhook",
  summary: "Receive a payment provider's webhook event (Stripe, Paddle Billing, Lemon Squeezy)",
  description:
    "Anonymous: authenticated by the provider's signature (Stripe-Signature, Paddle-Signature, X-Signature) with the secret of Commerce:<Provider>:WebhookSecret. Each provider event counts once: a redelivery answers 200 with result duplicate.",
  ...access.anonymous(),
  // Read whole as text for the signature: every body is bounded, whatever its type, and only JSON is read.
  middleware: [jsonOnly],
  request: {
    params: ProviderParam,
    body: {
      required: true,
      description: "The provider's event, exactly as signed (read raw; never re-serialized).",
      content: { "application/json": { schema: { type: "object", additionalProperties: true } } },
    },
  },
  responses: {
    200: json(WebhookAnswer, "The event was received (acted on, remembered, ignored, unmapped or a duplicate)"),
    404: json(enveloped({}), "No webhook secret is configured for this provider"),
    ...anonymousErrorResponses,
    413: json(enveloped({}), "A body over 4 MiB, whatever its type (nothing read, nothing written)"),
    415: json(enveloped({}), "A body whose Content-Type is not JSON (nothing read, nothing written)"),
  },
});

const receiveCommerceWebhook: RouteHandler<typeof receiveCommerceWebhookRoute, AppEnv> = async (c) => {
  const { provider } = c.req.valid("param");
  const ctx = serviceContext(c);
  const secret = ctx.config[SECRET_SETTINGS[provider]];
  if (!secret) throw new ApiError(404, `No ${SECRET_SETTINGS[provider]} is configured`);
  const body = await c.req.text();
  try {
    await verifySignature(provider, body, c.req.raw.headers, secret, clock.now());
  } catch (e) {
    if (e instanceof SignatureRefused) throw new ApiError(400, e.message);
    throw e;
  }
  let event: ProviderEvent;
  try {
    event = await readEvent(provider, body);
  } catch (e) {
    if (!(e instanceof MalformedEvent)) throw e;
    ctx.log?.warning(`Commerce: a ${provider} webhook with a valid signature is malformed: ${e.message}`, {
      properties: { provider, bytes: body.length },
    });
    throw new ApiError(400, `Malformed ${provider} event: ${e.message}`);
  }
  const outcome = await receiveEvent(ctx, provider, event);
  return ok(
    c,
    { result: outcome.status, eventId: event.eventId, orderId: outcome.orderId ?? null, detail: outcome.detail },
    200,
  );
};

function registerWebhook(app: Router): void {
  app.openapi(receiveCommerceWebhookRoute, receiveCommerceWebhook);
}

export function registerCommerce(app: Router): void {
  registerWebhook(app);
  const sellers = ["Administrator", "Sales"] as const;
  crud(app, {
    entity: CommerceMapping,
    path: "/v1/commerce/mappings",
    tag: "Commerce",
    operationIds: {
      list: "listCommerceMappings",
      create: "createCommerceMapping",
      update: "updateCommerceMapping",
      delete: "deleteCommerceMapping",
    },
    roles: { list: sellers, create: sellers, update: sellers, delete: sellers },
    references: { templateId: LicenseTemplate },
    label: "commerce mapping",
    hooks: {
      create: (_ctx, values) => ({ ...values, quantityMode: values["quantityMode"] ?? "licenses" }),
      update: (_ctx, values) => {
        for (const field of ["provider", "externalId", "templateId", "quantityMode"])
          if (values[field] === null) throw new ApiError(400, `A mapping's ${field} cannot be cleared`);
        return values;
      },
    },
  });
  const readers = { list: Roles.management, create: [], update: [], delete: [] } as const;
  crud(app, {
    entity: CommercePurchase,
    path: "/v1/commerce/purchases",
    tag: "Commerce",
    operationIds: { list: "listCommercePurchases" },
    operations: ["list"],
    roles: readers,
    label: "commerce purchase",
  });
  crud(app, {
    entity: CommerceEvent,
    path: "/v1/commerce/events",
    tag: "Commerce",
    operationIds: { list: "listCommerceEvents" },
    operations: ["list"],
    roles: readers,
    label: "commerce event",
    descriptions: { list: "The payment providers' events received, e.g. filter=orderId == 5 for one order's history." },
  });
}
