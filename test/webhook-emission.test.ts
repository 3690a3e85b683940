/**
 * Emission (CONTRACT sections 6 and 7, "Which change emits which event"): each change records its event for every
 * active subscription that names its type (or `*`), with the record as the API returns it and, for updates, the
 * changed fields' former values; none for other types, inactive subscriptions or while Webhooks:Enabled is false.
 * What emit wrote is read back as the delivery event rows it records when it queues the deliveries; one test follows
 * an event through the real local queue to the receiver.
 */
import { runDurableObjectAlarm } from "cloudflare:test";
import { env, exports } from "cloudflare:workers";
import { createClient } from "@connectrpc/connect";
import { createGrpcWebTransport } from "@connectrpc/connect-web";
import { afterEach, describe, expect, it, vi } from "vitest";
import { ReportServer } from "../src/gen/licensing/v1/report_server_pb";
import { ADMIN, BASE, admin, movableClock, setSetting } from "./helpers";
import { newCustomer, newProduct } from "./samples/commerce";
import { newLicense } from "./samples/licensing";
import { emitted, eventRows, received, settledTypes, subscribe } from "./webhooks-kit";

const clock = await movableClock();
afterEach(async () => {
  await setSetting("Webhooks:Enabled", null);
  // Each test listens with its own subscriptions only.
  await env.DB.prepare("UPDATE webhook_subscriptions SET is_active = 0").run();
});

const licensing = (name: string, body: Record<string, unknown>) => admin("POST", `/v1/license/${name}`, body);

/** The license as GET /v1/licenses returns it. */
async function listedLicense(id: number): Promise<Record<string, unknown>> {
  return (await admin("GET", `/v1/licenses?filter=${encodeURIComponent(`id == ${id}`)}`)).body["licenses"][0];
}

describe("license events", () => {
  it("emits created, updated with previous, revoked when revoked turns true, and deleted", async () => {
    const s = await subscribe({
      eventTypes: ["license.created", "license.updated", "license.revoked", "license.deleted"],
    });
    const created = await admin("POST", "/v1/licenses", {
      license: { productId: await newProduct(), licenseeName: "Initech", maxClients: 3 },
    });
    const id = created.body["id"] as number;
    const [event] = await emitted(s.id, "license.created");
    expect(event!.id).toMatch(/^evt_[A-Za-z0-9]{24}$/);
    expect(event!.type).toBe("license.created");
    expect(Date.parse(event!.createdAt)).toBeGreaterThan(Date.now() - 60_000);
    expect(event!.data).toEqual(await listedLicense(id));
    expect(event!.data).toMatchObject({
      licenseId: created.body["licenseId"],
      status: "NotActivated",
      activeClientCount: 0,
      licenseeName: "Initech",
    });
    expect(event).not.toHaveProperty("previous");

    await admin("PUT", "/v1/licenses", { license: { id, edition: "Ultimate", maxClients: 5 } });
    const [updated] = await emitted(s.id, "license.updated");
    expect(updated!.data).toMatchObject({ edition: "Ultimate", maxClients: 5 });
    expect(updated!.previous).toEqual({ edition: null, maxClients: 3 });

    // Nothing stored changed: no news.
    await admin("PUT", "/v1/licenses", { license: { id, edition: "Ultimate" } });
    await admin("PUT", "/v1/licenses", { license: { id, revoked: true } });
    const [, revokedUpdate] = await emitted(s.id, "license.updated", 2);
    expect(revokedUpdate!.previous).toEqual({ revoked: false, status: "NotActivated" });
    const [revoked] = await emitted(s.id, "license.revoked");
    expect(revoked!.data).toMatchObject({ revoked: true, status: "Revoked" });
    expect(revoked!.previous).toEqual({ revoked: false, status: "NotActivated" });
    await admin("PUT", "/v1/licenses", { license: { id, revoked: true, description: "still revoked" } });
    await emitted(s.id, "license.updated", 3);

    await admin("DELETE", `/v1/licenses/${id}`);
    const [deleted] = await emitted(s.id, "license.deleted");
    expect(deleted!.data).toMatchObject({ id, licenseId: created.body["licenseId"], revoked: true });
    expect(await settledTypes(s.id)).toEqual([
      "license.created",
      "license.updated",
      "license.updated",
      "license.revoked",
      "license.updated",
      "license.deleted",
    ]);
  });

  it("emits license.activated for a new machine only, and license.deactivated", async () => {
    const s = await subscribe({ eventTypes: ["license.activated", "license.deactivated"] });
    const lic = await newLicense("Activation", 2);
    expect(
      (await licensing("activate", { userKey: lic.userKey, machineId: "PC-1", clientName: "Office" })).status,
    ).toBe(200);
    const [activated] = await emitted(s.id, "license.activated");
    expect(activated!.data).toMatchObject({
      id: lic.id,
      licenseId: lic.licenseId,
      status: "Activated",
      activeClientCount: 1,
      client: { machineId: "PC-1", clientName: "Office" },
    });

    await licensing("activate", { userKey: lic.userKey, machineId: "PC-1" });
    await licensing("activate", { userKey: lic.userKey, machineId: "PC-2" });
    const second = (await emitted(s.id, "license.activated", 2))[1]!;
    expect(second.data.client.machineId).toBe("PC-2");

    await licensing("deactivate", { userKey: lic.userKey, machineId: "PC-1" });
    const [deactivated] = await emitted(s.id, "license.deactivated");
    expect(deactivated!.data).toMatchObject({
      licenseId: lic.licenseId,
      activeClientCount: 1,
      client: { machineId: "PC-1" },
    });
    expect(await settledTypes(s.id)).toEqual(["license.activated", "license.activated", "license.deactivated"]);
  });

  it("emits seat requested (a seat not held before), released, and expired from the seat object's alarm", async () => {
    const s = await subscribe({
      eventTypes: ["license.seat.requested", "license.seat.released", "license.seat.expired"],
    });
    const lic = await newLicense("Floating", 2);
    const seat = await licensing("request", { userKey: lic.userKey, machineId: "m1", clientId: "c1" });
    const [requested] = await emitted(s.id, "license.seat.requested");
    expect(requested!.data).toMatchObject({
      licenseId: lic.licenseId,
      activeClientCount: 1,
      client: { machineId: "m1", clientId: "c1" },
    });
    await licensing("request", { userKey: lic.userKey, machineId: "m1", clientId: "c1" });

    await licensing("release", { licenseToken: seat.body["licenseToken"] });
    const [released] = await emitted(s.id, "license.seat.released");
    expect(released!.data).toMatchObject({ activeClientCount: 0, client: { machineId: "m1", clientId: "c1" } });

    await licensing("request", { userKey: lic.userKey, machineId: "m2", clientId: "c2" });
    await emitted(s.id, "license.seat.requested", 2);
    clock.move(2 * 300_000 + 31_000);
    expect(await runDurableObjectAlarm(env.LICENSE_SEATS.getByName(String(lic.id)))).toBe(true);
    const [expired] = await emitted(s.id, "license.seat.expired", 1, 15_000);
    expect(expired!.data).toMatchObject({
      licenseId: lic.licenseId,
      activeClientCount: 0,
      client: { machineId: "m2", clientId: "c2" },
    });
    expect(await settledTypes(s.id)).toEqual([
      "license.seat.requested",
      "license.seat.released",
      "license.seat.requested",
      "license.seat.expired",
    ]);
  });
});

describe("order and report events", () => {
  it("emits order created, updated (with previous; also for its lines) and deleted", async () => {
    const s = await subscribe({ eventTypes: ["order.created", "order.updated", "order.deleted"] });
    const orderId = (
      await admin("POST", "/v1/orders", { order: { customerId: await newCustomer(), total: 100, currency: "EUR" } })
    ).body["orderId"];
    const [created] = await emitted(s.id, "order.created");
    expect(created!.data).toEqual(
      (await admin("GET", `/v1/orders?filter=${encodeURIComponent(`id == ${orderId}`)}`)).body["orders"][0],
    );

    await admin("PUT", "/v1/orders", { order: { id: orderId, status: "Completed", total: 149 } });
    const [updated] = await emitted(s.id, "order.updated");
    expect(updated!.data).toMatchObject({ id: orderId, status: 2, total: 149 });
    expect(updated!.previous).toEqual({ status: 0, total: 100 });

    const productId = await newProduct();
    await admin("POST", `/v1/orders/${orderId}/products/${productId}`, { orderProduct: { quantity: 2 } });
    await admin("PUT", `/v1/orders/${orderId}/products/${productId}`, { orderProduct: { quantity: 3 } });
    await admin("DELETE", `/v1/orders/${orderId}/products/${productId}`);
    const lines = await emitted(s.id, "order.updated", 4);
    expect(lines.slice(1).map((e) => e.data.id)).toEqual([orderId, orderId, orderId]);

    await admin("DELETE", `/v1/orders/${orderId}`);
    const [deleted] = await emitted(s.id, "order.deleted");
    expect(deleted!.data).toMatchObject({ id: orderId, total: 149 });
  });

  it("emits report.received over REST and gRPC, and report.deleted", async () => {
    const s = await subscribe({ eventTypes: ["report.received", "report.deleted"] });
    const lic = await newLicense("File");
    const sent = await admin("POST", "/v1/report", {
      name: "ExceptionReport",
      userKey: lic.userKey,
      content: "NullReferenceException",
      properties: [{ name: "os", value: "Windows" }],
    });
    const [rest] = await emitted(s.id, "report.received");
    expect(rest!.data).toMatchObject({
      id: sent.body["reportId"],
      name: "ExceptionReport",
      licenseId: lic.licenseId,
      content: "NullReferenceException",
      properties: [{ name: "os", value: "Windows" }],
    });
    expect(rest!.data).toEqual(
      (await admin("GET", `/v1/reports?filter=${encodeURIComponent(`id == ${sent.body["reportId"]}`)}`)).body[
        "reports"
      ][0],
    );

    const transport = createGrpcWebTransport({
      baseUrl: BASE,
      fetch: (input, init) => exports.default.fetch(input as RequestInfo, { ...init, redirect: "manual" }),
    });
    const grpc = await createClient(ReportServer, transport).sendReport(
      { name: "LicenseReport", content: "grpc" },
      { headers: { "x-api-key": ADMIN.key } },
    );
    const [, viaGrpc] = await emitted(s.id, "report.received", 2);
    expect(viaGrpc!.data).toMatchObject({ id: grpc.reportId, name: "LicenseReport", content: "grpc" });

    await admin("DELETE", `/v1/reports/${sent.body["reportId"]}`);
    const [deleted] = await emitted(s.id, "report.deleted");
    expect(deleted!.data).toMatchObject({ id: sent.body["reportId"], licenseId: lic.licenseId });
  });
});

describe("who receives an event", () => {
  it("records one delivery per matching active subscription (type or *), none for others", async () => {
    const orders = await subscribe({ eventTypes: ["order.created"] });
    const everything = await subscribe({ eventTypes: ["*"] });
    const licenses = await subscribe({ eventTypes: ["license.created"] });
    const inactive = await subscribe({ eventTypes: ["*"], isActive: false });
    await admin("POST", "/v1/orders", { order: { customerId: await newCustomer() } });
    const [forOrders] = await emitted(orders.id, "order.created");
    const [forEverything] = await emitted(everything.id, "order.created");
    expect(forEverything!.id).toBe(forOrders!.id);
    expect(await settledTypes(licenses.id)).toEqual([]);
    expect(await settledTypes(inactive.id)).toEqual([]);
    expect(await settledTypes(orders.id)).toEqual(["order.created"]);
  });

  it("emits nothing while Webhooks:Enabled is false", async () => {
    const s = await subscribe({ eventTypes: ["*"] });
    await setSetting("Webhooks:Enabled", "false");
    await admin("POST", "/v1/licenses", { license: { productId: await newProduct() } });
    await admin("POST", "/v1/orders", { order: { customerId: await newCustomer() } });
    expect(await settledTypes(s.id)).toEqual([]);
  });

  it("delivers an emitted event through the real local queue to the receiver", async () => {
    const s = await subscribe({ eventTypes: ["license.created"] });
    const created = await admin("POST", "/v1/licenses", { license: { productId: await newProduct() } });
    const [event] = await emitted(s.id, "license.created");
    const delivery = await vi.waitFor(
      async () => {
        const [d] = await received(new URL(s.url).pathname);
        if (!d) throw new Error("not delivered yet");
        return d;
      },
      { timeout: 20_000, interval: 200 },
    );
    expect(JSON.parse(delivery.body)).toMatchObject({
      id: event!.id,
      type: "license.created",
      data: { licenseId: created.body["licenseId"] },
    });
    await vi.waitFor(
      async () => expect((await eventRows(s.id))[0]).toMatchObject({ is_success: 1, status_code: 200 }),
      { timeout: 5000 },
    );
  }, 30_000);
});
