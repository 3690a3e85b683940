/**
 * The subscribable event types (CONTRACT section 6) with the change that emits each (CONTRACT section 7, "Which
 * change emits which event"). `GET /v1/webhooks/event-types` lists them; subscriptions name them (or `*` for all).
 */

export const EVENT_TYPES = [
  { name: "license.created", description: "A license was created (POST /v1/licenses)." },
  {
    name: "license.updated",
    description: "A license was changed (PUT /v1/licenses); previous holds the changed fields' former values.",
  },
  { name: "license.deleted", description: "A license was deleted; data is the license as it was." },
  { name: "license.revoked", description: "A license's revoked flag turned true." },
  { name: "license.activated", description: "A new machine activated a license; data.client names it." },
  { name: "license.deactivated", description: "A machine's activation was freed; data.client names it." },
  {
    name: "license.seat.requested",
    description: "A floating client took a seat it did not hold; data.client names it.",
  },
  { name: "license.seat.released", description: "A floating client gave its seat back; data.client names it." },
  {
    name: "license.seat.expired",
    description: "A floating seat lapsed without heartbeats and was reclaimed; data.client names it.",
  },
  {
    name: "license.check-in-overdue",
    description:
      "A license has not checked in for longer than its checkInDays (once per overdue period); data.checkIn says since when.",
  },
  { name: "order.created", description: "An order was created." },
  { name: "order.updated", description: "An order or one of its product lines was changed." },
  { name: "order.deleted", description: "An order was deleted; data is the order as it was." },
  { name: "report.received", description: "An application sent a report (POST /v1/report or gRPC SendReport)." },
  { name: "report.deleted", description: "A received report was deleted; data is the report as it was." },
  { name: "release.published", description: "A product release became public (created public, or made public)." },
  {
    name: "release.rollout.changed",
    description: "A release's stagingPercentage or rolloutSchedule changed; previous holds the former values.",
  },
  {
    name: "release.halted",
    description:
      "A release was halted; data.reason is manual (POST .../halt), reports (haltOnReports) or health (healthGate, with " +
      "the figures it judged in data.health), data.note why in words (as data.haltNote).",
  },
  { name: "release.resumed", description: "A halted release was resumed; data.reason is the halt's reason." },
  { name: "webhook.test", description: "A test delivery requested with POST /v1/webhooks/subscriptions/{id}/test." },
] as const;

export type EventType = (typeof EVENT_TYPES)[number]["name"];

/** What a subscription names in `eventTypes` to receive every event. */
export const ALL_EVENTS = "*";

/** Every name a subscription's `eventTypes` may hold. */
export const SUBSCRIBABLE = [ALL_EVENTS, ...EVENT_TYPES.map((t) => t.name)] as [string, ...string[]];
