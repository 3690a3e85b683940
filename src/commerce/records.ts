/** Commerce records as the API returns them (CONTRACT section 10): mappings, purchases and the events received. */
import { commerceEvents, commerceMappings, commercePurchases } from "../db/schema";
import { defineEntity, f } from "../http/entity";
import { PROVIDERS } from "./provider-events";

export const QUANTITY_MODES = ["licenses", "seats"] as const;
export type QuantityMode = (typeof QUANTITY_MODES)[number];

export const PURCHASE_STATES = ["active", "pastDue", "canceling", "canceled", "refunded", "disputed"] as const;
export type PurchaseState = (typeof PURCHASE_STATES)[number];

export const EVENT_STATUSES = ["processing", "applied", "remembered", "ignored", "unmapped", "failed"] as const;
export type EventStatus = (typeof EVENT_STATUSES)[number];

export const CommerceMapping = defineEntity({
  name: "CommerceMapping",
  singular: "mapping",
  plural: "mappings",
  table: commerceMappings,
  fields: {
    id: f.id(),
    provider: f.oneOf(PROVIDERS),
    externalId: f.string({
      min: 1,
      max: 128,
      description:
        "The provider's price or product id (Stripe price_… / prod_…, Paddle pri_… / pro_…) or Lemon Squeezy variant or product id. A price or variant mapping wins over its product's.",
    }),
    templateId: f.int({
      min: 1,
      description: "The license template sold: product, edition, mode, limits, expiry, support.",
    }),
    quantityMode: f.oneOf(QUANTITY_MODES, {
      description:
        "licenses: N licenses for quantity N; seats: one license with maxClients = N x the template's (default licenses).",
    }),
    description: f.string(),
    createdAt: f.date({ readOnly: true }),
    updatedAt: f.date({ readOnly: true }),
  },
  required: ["provider", "externalId", "templateId"],
});

export const CommercePurchase = defineEntity({
  name: "CommercePurchase",
  singular: "purchase",
  plural: "purchases",
  table: commercePurchases,
  fields: {
    id: f.id(),
    provider: f.oneOf(PROVIDERS, { readOnly: true }),
    purchaseRef: f.string({
      readOnly: true,
      description:
        "The provider's id of the purchase: the subscription's, else the order's, invoice's or transaction's.",
    }),
    customerRef: f.string({ readOnly: true, description: "The provider's customer id." }),
    orderId: f.int({ readOnly: true, description: "The order the purchase made (none before its payment arrived)." }),
    state: f.oneOf(PURCHASE_STATES, { readOnly: true }),
    periodEnd: f.date({ readOnly: true, description: "End of the paid period (subscriptions)." }),
    createdAt: f.date({ readOnly: true }),
    updatedAt: f.date({ readOnly: true }),
  },
});

export const CommerceEvent = defineEntity({
  name: "CommerceEvent",
  singular: "event",
  plural: "events",
  table: commerceEvents,
  fields: {
    id: f.id(),
    provider: f.oneOf(PROVIDERS, { readOnly: true }),
    eventId: f.string({ readOnly: true, description: "The provider's event id (counted once)." }),
    type: f.string({ readOnly: true, description: "The provider's event type." }),
    action: f.string({
      readOnly: true,
      description: "purchase, renewal, refund, dispute, cancel, cancelAtPeriodEnd, pastDue, link or ignored.",
    }),
    status: f.oneOf(EVENT_STATUSES, {
      readOnly: true,
      description:
        "applied; remembered (arrived before its purchase, applied when it comes); ignored; unmapped (nothing written; a redelivery is tried again); failed (a redelivery is tried again).",
    }),
    purchaseId: f.int({ readOnly: true }),
    orderId: f.int({ readOnly: true }),
    purchaseRef: f.string({ readOnly: true }),
    detail: f.string({ readOnly: true }),
    createdAt: f.date({ readOnly: true }),
    updatedAt: f.date({ readOnly: true }),
  },
});
