/**
 * The webhook routes through the API (SPEC "Webhook routes", CONTRACT section 6): subscriptions (create with the
 * secret shown once and stored encrypted, list, get, partial update, delete, test), their delivery events (list with
 * include, delete, retry by hand), status and event types; the webhook answer shape without `code`; 404 for unknown
 * subscriptions and events; the SSRF policy for every spelling of a private address, at create, update and delivery.
 */
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it } from "vitest";
import { decryptSecret } from "../src/kernel/secrets";
import { admin, setSetting } from "./helpers";
import { RECEIVER, eventRows, received, receiverPath, subscribe } from "./webhooks-kit";

const SUBSCRIPTIONS = "/v1/webhooks/subscriptions";

afterEach(async () => {
  await setSetting("Webhooks:AllowInsecureUrls", null);
  await setSetting("Webhooks:Enabled", null);
});

/** A webhook answer: success and message plus data, never `code` (SPEC). */
function expectWebhookAnswer(body: Record<string, unknown>): void {
  expect(body["success"]).toBe(true);
  expect(typeof body["message"]).toBe("string");
  expect(body).not.toHaveProperty("code");
}

function expectNotFound(res: { status: number; body: Record<string, unknown> }, message: string): void {
  expect(res.status).toBe(404);
  expect(res.body).toEqual({ success: false, code: 404, message });
}

describe("status and event types", () => {
  it("lists every event type of CONTRACT section 6 with a description", async () => {
    const res = await admin("GET", "/v1/webhooks/event-types");
    expect(res.status).toBe(200);
    expectWebhookAnswer(res.body);
    expect(res.body["eventTypes"].map((t: { name: string }) => t.name)).toEqual([
      "license.created",
      "license.updated",
      "license.deleted",
      "license.revoked",
      "license.activated",
      "license.deactivated",
      "license.seat.requested",
      "license.seat.released",
      "license.seat.expired",
      "license.check-in-overdue",
      "order.created",
      "order.updated",
      "order.deleted",
      "report.received",
      "report.deleted",
      "release.published",
      "release.rollout.changed",
      "release.halted",
      "release.resumed",
      "webhook.test",
    ]);
    for (const type of res.body["eventTypes"]) expect(type.description.length).toBeGreaterThan(10);
  });

  it("reports Webhooks:Enabled as isEnabled", async () => {
    const on = await admin("GET", "/v1/webhooks/status");
    expect(on.status).toBe(200);
    expectWebhookAnswer(on.body);
    expect(on.body["isEnabled"]).toBe(true);
    await setSetting("Webhooks:Enabled", "false");
    expect((await admin("GET", "/v1/webhooks/status")).body).toEqual({
      success: true,
      message: "Webhooks are disabled",
      isEnabled: false,
    });
  });
});

describe("subscriptions", () => {
  it("creates a subscription (201) with a generated secret shown once and stored encrypted", async () => {
    const url = `${RECEIVER}${receiverPath("ok")}`;
    const res = await admin("POST", SUBSCRIPTIONS, {
      subscription: { name: "CRM", url, eventTypes: ["license.created", "order.created"], description: "sync" },
    });
    expect(res.status).toBe(201);
    expectWebhookAnswer(res.body);
    const created = res.body["subscription"];
    expect(created).toMatchObject({
      name: "CRM",
      url,
      eventTypes: ["license.created", "order.created"],
      isActive: true,
      maxRetryCount: 8,
      description: "sync",
    });
    expect(created.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(atob(created.secret.slice(6))).toHaveLength(32);

    const got = await admin("GET", `${SUBSCRIPTIONS}/${created.id}`);
    expect(got.status).toBe(200);
    expectWebhookAnswer(got.body);
    expect(got.body["subscription"]).toEqual({
      ...created,
      secret: undefined,
      createdAt: created.createdAt,
      updatedAt: created.updatedAt,
    });
    expect(got.body["subscription"]).not.toHaveProperty("secret");
    const listed = await admin("GET", `${SUBSCRIPTIONS}?filter=${encodeURIComponent(`id == ${created.id}`)}`);
    expect(listed.body["subscriptions"][0]).not.toHaveProperty("secret");
    expect(listed.text).not.toContain(created.secret);

    const row = await env.DB.prepare("SELECT * FROM webhook_subscriptions WHERE id = ?")
      .bind(created.id)
      .first<Record<string, string>>();
    expect(JSON.stringify(row)).not.toContain(created.secret.slice(6));
    expect(row!["secret_encrypted"]).toMatch(/^v1:/);
    expect(await decryptSecret("test-encryption-key", row!["secret_encrypted"]!)).toBe(created.secret);
  });

  it("keeps a given whsec_ secret and refuses malformed ones", async () => {
    const secret = `whsec_${btoa(String.fromCharCode(...crypto.getRandomValues(new Uint8Array(32))))}`;
    expect((await subscribe({ secret })).secret).toBe(secret);
    for (const bad of ["not-a-secret", "whsec_###", `whsec_${btoa("too short")}`]) {
      const res = await admin("POST", SUBSCRIPTIONS, {
        subscription: { name: "x", url: `${RECEIVER}/ok/x`, eventTypes: ["*"], secret: bad },
      });
      expect(res.status, bad).toBe(400);
      expect(res.body["message"]).toContain("secret");
    }
  });

  it("validates names, event types, retry counts and extra headers", async () => {
    const base = { name: "x", url: `${RECEIVER}/ok/x`, eventTypes: ["*"] };
    const problem = async (subscription: Record<string, unknown>) => {
      const res = await admin("POST", SUBSCRIPTIONS, { subscription });
      expect(res.status, JSON.stringify(subscription)).toBe(400);
      return res;
    };
    expect((await problem({ url: base.url, eventTypes: ["*"] })).headers.get("content-type")).toContain("problem+json");
    await problem({ ...base, eventTypes: [] });
    await problem({ ...base, eventTypes: ["license.exploded"] });
    await problem({ ...base, maxRetryCount: 9 });
    await problem({ ...base, headers: { "Bad Header": "x" } });
    await problem({ ...base, headers: { "X-Ok": "line\r\nbreak" } });
    for (const reserved of ["X-Service-Signature", "webhook-id", "Content-Type", "Host"]) {
      const res = await problem({ ...base, headers: { [reserved]: "forged" } });
      expect(res.body).toEqual({
        success: false,
        code: 400,
        message: `The service sets ${reserved} itself; extra headers cannot replace it`,
      });
    }
  });

  it("lists with the list conventions and counts under totalSubscriptionsCount", async () => {
    const a = await subscribe({ name: "list-a" });
    await subscribe({ name: "list-b", isActive: false });
    const res = await admin(
      "GET",
      `${SUBSCRIPTIONS}?filter=${encodeURIComponent('name.StartsWith("list-")')}&sort=-name&select=id,name,isActive`,
    );
    expect(res.status).toBe(200);
    expectWebhookAnswer(res.body);
    expect(res.body["subscriptions"]).toEqual([
      { id: a.id + 1, name: "list-b", isActive: false },
      { id: a.id, name: "list-a", isActive: true },
    ]);
    expect(res.body["totalSubscriptionsCount"]).toBe(2);
    expect((await admin("GET", `${SUBSCRIPTIONS}?filter=nope == 1`)).body).toEqual({
      success: false,
      code: 500,
      message: "No property or field 'nope' exists in type 'WebhookSubscription'",
    });
  });

  it("updates only the properties sent (an explicit false applies) and can rotate the secret", async () => {
    const s = await subscribe({ name: "before", headers: { "X-Tenant": "a" } });
    const res = await admin("PUT", `${SUBSCRIPTIONS}/${s.id}`, {
      subscription: { name: "after", isActive: false, maxRetryCount: 0 },
    });
    expect(res.status).toBe(200);
    expectWebhookAnswer(res.body);
    expect(res.body["subscription"]).toMatchObject({
      id: s.id,
      name: "after",
      url: s.url,
      eventTypes: ["webhook.test"],
      headers: { "X-Tenant": "********" },
      isActive: false,
      maxRetryCount: 0,
    });
    expect(res.body["subscription"]).not.toHaveProperty("secret");

    const secret = `whsec_${btoa("r".repeat(32))}`;
    expect((await admin("PUT", `${SUBSCRIPTIONS}/${s.id}`, { subscription: { secret } })).status).toBe(200);
    const row = await env.DB.prepare("SELECT secret_encrypted FROM webhook_subscriptions WHERE id = ?")
      .bind(s.id)
      .first<{ secret_encrypted: string }>();
    expect(await decryptSecret("test-encryption-key", row!.secret_encrypted)).toBe(secret);

    expect((await admin("PUT", `${SUBSCRIPTIONS}/${s.id}`, { subscription: { name: null } })).status).toBe(400);
    expect((await admin("PUT", `${SUBSCRIPTIONS}/${s.id}`, { subscription: { isActive: null } })).body["message"]).toBe(
      "A subscription's isActive cannot be cleared",
    );
  });

  it("deletes a subscription with its delivery history; unknown ids answer 404", async () => {
    const s = await subscribe();
    expect((await admin("POST", `${SUBSCRIPTIONS}/${s.id}/test`)).status).toBe(200);
    expect(await eventRows(s.id)).toHaveLength(1);
    const res = await admin("DELETE", `${SUBSCRIPTIONS}/${s.id}`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ success: true, message: "Subscription deleted" });
    expect(await eventRows(s.id)).toHaveLength(0);

    expectNotFound(await admin("GET", `${SUBSCRIPTIONS}/${s.id}`), `Subscription ${s.id} not found`);
    expectNotFound(
      await admin("PUT", `${SUBSCRIPTIONS}/${s.id}`, { subscription: { name: "x" } }),
      `Subscription ${s.id} not found`,
    );
    expectNotFound(await admin("DELETE", `${SUBSCRIPTIONS}/${s.id}`), `Subscription ${s.id} not found`);
    expectNotFound(await admin("POST", `${SUBSCRIPTIONS}/${s.id}/test`), `Subscription ${s.id} not found`);
    expectNotFound(await admin("GET", `${SUBSCRIPTIONS}/${s.id}/events`), `Subscription ${s.id} not found`);
    expectNotFound(await admin("DELETE", `${SUBSCRIPTIONS}/${s.id}/events/1`), `Subscription ${s.id} not found`);
    expectNotFound(await admin("POST", `${SUBSCRIPTIONS}/${s.id}/events/1/retry`), `Subscription ${s.id} not found`);
  });
});

describe("test deliveries, events and retries by hand", () => {
  it("delivers webhook.test at once and answers with the delivery event", async () => {
    const s = await subscribe();
    const res = await admin("POST", `${SUBSCRIPTIONS}/${s.id}/test`);
    expect(res.status).toBe(200);
    expectWebhookAnswer(res.body);
    expect(res.body["message"]).toBe("Delivered: HTTP 200");
    const event = res.body["event"];
    expect(event).toMatchObject({
      webhookSubscriptionId: s.id,
      eventType: "webhook.test",
      isSuccess: true,
      statusCode: 200,
      retryCount: 0,
      response: '{"received":true}',
    });
    expect(event).not.toHaveProperty("nextRetryAt");
    expect(event.eventId).toMatch(/^evt_[A-Za-z0-9]{24}$/);

    const [delivery] = await received(new URL(s.url).pathname);
    expect(delivery!.headers["x-service-event"]).toBe("webhook.test");
    expect(delivery!.headers["x-service-delivery"]).toBe(event.eventId);
    expect(delivery!.body).toBe(event.payload);
    const payload = JSON.parse(delivery!.body);
    expect(payload).toMatchObject({
      id: event.eventId,
      type: "webhook.test",
      data: { id: s.id, name: "receiver", url: s.url },
    });
    expect(payload.data).not.toHaveProperty("secret");
  });

  it("lists a subscription's events with filter, select and include=subscription", async () => {
    const s = await subscribe();
    await admin("POST", `${SUBSCRIPTIONS}/${s.id}/test`);
    await admin("POST", `${SUBSCRIPTIONS}/${s.id}/test`);
    const other = await subscribe();
    await admin("POST", `${SUBSCRIPTIONS}/${other.id}/test`);

    const res = await admin("GET", `${SUBSCRIPTIONS}/${s.id}/events?sort=-id`);
    expect(res.status).toBe(200);
    expectWebhookAnswer(res.body);
    expect(res.body["totalEventsCount"]).toBe(2);
    expect(res.body["events"].map((e: { webhookSubscriptionId: number }) => e.webhookSubscriptionId)).toEqual([
      s.id,
      s.id,
    ]);
    expect(res.body["events"][0].id).toBeGreaterThan(res.body["events"][1].id);

    const included = await admin(
      "GET",
      `${SUBSCRIPTIONS}/${s.id}/events?include=subscription&select=id,subscription&take=1`,
    );
    expect(included.body["events"]).toEqual([
      { id: res.body["events"][1].id, subscription: expect.objectContaining({ id: s.id, name: "receiver" }) },
    ]);
    expect(included.body["events"][0].subscription).not.toHaveProperty("secret");
    expect(included.body["totalEventsCount"]).toBe(2);

    expect(
      (await admin("GET", `${SUBSCRIPTIONS}/${s.id}/events?filter=${encodeURIComponent("isSuccess == false")}`)).body[
        "totalEventsCount"
      ],
    ).toBe(0);
    expect((await admin("GET", `${SUBSCRIPTIONS}/${s.id}/events?include=secrets`)).body["message"]).toBe(
      "No property or field 'secrets' exists in type 'WebhookEvent'",
    );
  });

  it("deletes an event; unknown events and events of another subscription answer 404", async () => {
    const s = await subscribe();
    const other = await subscribe();
    const eventId = (await admin("POST", `${SUBSCRIPTIONS}/${s.id}/test`)).body["event"].id;
    expectNotFound(
      await admin("DELETE", `${SUBSCRIPTIONS}/${other.id}/events/${eventId}`),
      `Event ${eventId} not found`,
    );
    const res = await admin("DELETE", `${SUBSCRIPTIONS}/${s.id}/events/${eventId}`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ success: true, message: "Event deleted" });
    expectNotFound(await admin("DELETE", `${SUBSCRIPTIONS}/${s.id}/events/${eventId}`), `Event ${eventId} not found`);
    expectNotFound(
      await admin("POST", `${SUBSCRIPTIONS}/${s.id}/events/${eventId}/retry`),
      `Event ${eventId} not found`,
    );
  });

  it("retries a failed event by hand, recording each attempt on the same row", async () => {
    const s = await subscribe({ url: `${RECEIVER}${receiverPath("fail500")}` });
    const test = await admin("POST", `${SUBSCRIPTIONS}/${s.id}/test`);
    expect(test.body["message"]).toBe("Delivery failed: HTTP 500 Internal Server Error");
    expect(test.body["event"]).toMatchObject({
      isSuccess: false,
      statusCode: 500,
      retryCount: 0,
      response: '{"error":"receiver failed"}',
    });
    const eventId = test.body["event"].id;

    const again = await admin("POST", `${SUBSCRIPTIONS}/${s.id}/events/${eventId}/retry`);
    expect(again.status).toBe(200);
    expectWebhookAnswer(again.body);
    expect(again.body["event"]).toMatchObject({ id: eventId, isSuccess: false, statusCode: 500, retryCount: 1 });

    // The receiver is fixed: the next retry by hand delivers the same event (same id and body).
    const fixedPath = receiverPath("ok");
    await admin("PUT", `${SUBSCRIPTIONS}/${s.id}`, { subscription: { url: `${RECEIVER}${fixedPath}` } });
    const fixed = await admin("POST", `${SUBSCRIPTIONS}/${s.id}/events/${eventId}/retry`);
    expect(fixed.body).toMatchObject({
      message: "Delivered: HTTP 200",
      event: { id: eventId, isSuccess: true, statusCode: 200, retryCount: 2 },
    });
    expect(fixed.body["event"]).not.toHaveProperty("errorMessage");
    expect(await eventRows(s.id)).toHaveLength(1);
    const attempts = [...(await received(new URL(s.url).pathname)), ...(await received(fixedPath))];
    expect(attempts).toHaveLength(3);
    expect(new Set(attempts.map((d) => d.headers["webhook-id"]))).toEqual(new Set([test.body["event"].eventId]));

    const done = await admin("POST", `${SUBSCRIPTIONS}/${s.id}/events/${eventId}/retry`);
    expect(done.body).toEqual({ success: false, code: 400, message: `Event ${eventId} was already delivered` });
  });

  it("refuses test deliveries and retries while Webhooks:Enabled is false", async () => {
    const s = await subscribe();
    await setSetting("Webhooks:Enabled", "false");
    expect((await admin("POST", `${SUBSCRIPTIONS}/${s.id}/test`)).body).toEqual({
      success: false,
      code: 400,
      message: "Webhooks are disabled (Webhooks:Enabled)",
    });
    expect(await received(new URL(s.url).pathname)).toEqual([]);
  });
});

describe("SSRF policy", () => {
  const REFUSED = [
    "https://127.0.0.1/hook",
    "https://0x7f.1/hook",
    "https://2130706433/hook",
    "https://0177.0.0.1/hook",
    "https://127.1/hook",
    "https://[::1]/hook",
    "https://[::ffff:127.0.0.1]/hook",
    "https://[::ffff:7f00:1]/hook",
    "https://[::]/hook",
    "https://0.0.0.0/hook",
    "https://169.254.169.254/latest/meta-data",
    "https://[fd00:ec2::254]/latest",
    "https://metadata.google.internal/computeMetadata",
    "https://localhost/hook",
    "https://api.localhost/hook",
    "https://10.0.0.8/hook",
    "https://172.20.1.1/hook",
    "https://192.168.1.10/hook",
    "https://100.64.0.1/hook",
    "https://224.0.0.251/hook",
    "https://[fe80::1]/hook",
    "https://[ff02::1]/hook",
    "https://[64:ff9b::a00:1]/hook",
    "http://hooks.example.com/hook",
  ];

  it("refuses each spelling of a private, loopback, link-local, metadata or multicast address and plain http", async () => {
    await setSetting("Webhooks:AllowInsecureUrls", "false");
    for (const url of REFUSED) {
      const res = await admin("POST", SUBSCRIPTIONS, { subscription: { name: "ssrf", url, eventTypes: ["*"] } });
      expect(res.status, url).toBe(400);
      expect(res.body["message"], url).toMatch(/^The webhook url (is refused|must use https)/);
    }
    expect(await env.DB.prepare("SELECT count(*) AS n FROM webhook_subscriptions WHERE name = 'ssrf'").first("n")).toBe(
      0,
    );
    const publicUrl = await admin("POST", SUBSCRIPTIONS, {
      subscription: { name: "public", url: "https://hooks.example.com/licensing", eventTypes: ["*"], isActive: false },
    });
    expect(publicUrl.status).toBe(201);
  });

  it("refuses the same addresses on update", async () => {
    const s = await subscribe({ url: "https://hooks.example.com/a", isActive: false });
    await setSetting("Webhooks:AllowInsecureUrls", "false");
    const res = await admin("PUT", `${SUBSCRIPTIONS}/${s.id}`, {
      subscription: { url: "https://[::ffff:169.254.169.254]/" },
    });
    expect(res.status).toBe(400);
    expect(res.body["message"]).toBe(
      "The webhook url is refused: [::ffff:a9fe:a9fe] is a private, loopback, link-local or reserved address (allowed only with Webhooks:AllowInsecureUrls)",
    );
  });

  it("allows them with Webhooks:AllowInsecureUrls, but never credentials in the URL", async () => {
    await setSetting("Webhooks:AllowInsecureUrls", "true");
    for (const url of REFUSED)
      expect(
        (
          await admin("POST", SUBSCRIPTIONS, {
            subscription: { name: "insecure", url, eventTypes: ["*"], isActive: false },
          })
        ).status,
        url,
      ).toBe(201);
    const res = await admin("POST", SUBSCRIPTIONS, {
      subscription: { name: "creds", url: "https://user:pass@hooks.example.com/", eventTypes: ["*"] },
    });
    expect(res.body).toEqual({
      success: false,
      code: 400,
      message: "The webhook url must not carry credentials; use the subscription's headers instead",
    });
    expect(
      (
        await admin("POST", SUBSCRIPTIONS, {
          subscription: { name: "ftp", url: "ftp://hooks.example.com/", eventTypes: ["*"] },
        })
      ).status,
    ).toBe(400);
  });

  it("checks again at delivery: a URL allowed when stored is not called once the setting refuses it", async () => {
    const s = await subscribe();
    await setSetting("Webhooks:AllowInsecureUrls", "false");
    const res = await admin("POST", `${SUBSCRIPTIONS}/${s.id}/test`);
    expect(res.body["event"]).toMatchObject({ isSuccess: false, retryCount: 0 });
    expect(res.body["event"].errorMessage).toMatch(/^The webhook url must use https/);
    expect(res.body["event"]).not.toHaveProperty("statusCode");
    expect(await received(new URL(s.url).pathname)).toEqual([]);
  });
});
