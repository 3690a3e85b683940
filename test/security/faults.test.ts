/**
 * Faults (issue 9): a D1 statement that fails in the middle of a multi-row write leaves nothing half-written; bytes
 * missing from storage are reported by verify and answered 404 by the download route (whole, HEAD, one range,
 * several); a license's seat object evicted mid-lease keeps its seats. Failures are provoked with SQLite triggers
 * that abort one chosen statement (the last of a batch, the n-th chunk of an upload), since a trigger fails exactly
 * where a constraint or a lost connection would, inside the statement.
 */
import { env, exports } from "cloudflare:workers";
import { evictDurableObject } from "cloudflare:test";
import { afterEach, describe, expect, it, vi } from "vitest";
import { ADMIN, BASE, admin, countRows, setSetting } from "../helpers";
import { MiB, bytesOf, newRelease, send, upload } from "../artifacts-kit";
import { newLicense } from "../samples/licensing";

vi.setConfig({ testTimeout: 30_000 });

const triggers: string[] = [];
/** Makes the statements `event` on `table` matching `when` fail, as a constraint would, until the test ends. */
async function failing(table: string, event: "INSERT" | "UPDATE" | "DELETE", when = "1"): Promise<void> {
  const name = `fail_${table}_${event.toLowerCase()}_${triggers.length}`;
  await env.DB.prepare(
    `CREATE TRIGGER ${name} BEFORE ${event} ON ${table} WHEN ${when} BEGIN SELECT RAISE(ABORT, 'injected failure'); END`,
  ).run();
  triggers.push(name);
}
afterEach(async () => {
  while (triggers.length > 0) await env.DB.prepare(`DROP TRIGGER IF EXISTS ${triggers.pop()}`).run();
});

const failed = (status: number) => expect(status).toBeGreaterThanOrEqual(400);

describe("a failing statement inside a multi-row write", () => {
  it("PUT /v1/settings: the last upsert of the batch fails, and no setting of the batch is written", async () => {
    await failing("settings", "INSERT", "NEW.name = 'Updates:FeedCacheSeconds'");
    const res = await admin("PUT", "/v1/settings", {
      settings: [
        { name: "Application:DefaultPageSize", value: "7" },
        { name: "Application:LogRetentionDays", value: "9" },
        { name: "Updates:FeedCacheSeconds", value: "5" },
      ],
    });
    failed(res.status);
    expect(await countRows("settings")).toBe(0);
    const listed = await admin("GET", "/v1/settings");
    const pageSize = listed.body["settings"].find((s: { name: string }) => s.name === "Application:DefaultPageSize");
    expect(pageSize.source).not.toBe("database");
    expect(pageSize.value).not.toBe("7");
  });

  it("POST /v1/licenses: a license whose insert fails leaves no row and no identifiers behind", async () => {
    const productId = (await admin("POST", "/v1/products", { product: { code: "faulty", name: "Faulty" } })).body[
      "productId"
    ];
    await failing("licenses", "INSERT");
    failed(
      (await admin("POST", "/v1/licenses", { license: { productId, licensingMode: "Activation", maxClients: 2 } }))
        .status,
    );
    expect(await countRows("licenses")).toBe(0);
  });

  it("DELETE /v1/licenses: when the license row cannot go, its activations and floating seats stay", async () => {
    const act = await newLicense("Activation", 2);
    const activated = await admin("POST", "/v1/license/activate", { userKey: act.userKey, machineId: "PC-1" });
    const floating = await newLicense("Floating", 1);
    const seat = await admin("POST", "/v1/license/request", {
      userKey: floating.userKey,
      machineId: "m",
      clientId: "c",
    });
    expect([activated.status, seat.status]).toEqual([200, 200]);
    await failing("licenses", "DELETE");
    failed((await admin("DELETE", `/v1/licenses/${act.licenseId}`)).status);
    failed((await admin("DELETE", `/v1/licenses/${floating.licenseId}`)).status);
    expect(
      (await admin("POST", "/v1/license/validate", { userKey: act.userKey, machineId: "PC-1" })).body,
    ).toMatchObject({ status: "Activated", licenseToken: activated.body["licenseToken"] });
    expect(
      (await admin("POST", "/v1/license/heartbeat", { licenseToken: seat.body["licenseToken"] })).body,
    ).toMatchObject({ activeClientCount: 1 });
    expect(
      (await admin("POST", "/v1/license/request", { userKey: floating.userKey, machineId: "m2", clientId: "c2" }))
        .status,
    ).toBe(528);
  });

  it("orders and their lines: a delete whose cascade fails keeps the order and every line; a failed line adds none", async () => {
    const customerId = (await admin("POST", "/v1/customers", { customer: { company: "Lines Ltd" } })).body[
      "customerId"
    ];
    const products = await Promise.all(
      ["l1", "l2"].map(
        async (code) =>
          (await admin("POST", "/v1/products", { product: { code, name: code } })).body["productId"] as number,
      ),
    );
    const orderId = (await admin("POST", "/v1/orders", { order: { customerId } })).body["orderId"];
    for (const productId of products)
      expect(
        (await admin("POST", `/v1/orders/${orderId}/products/${productId}`, { orderProduct: { quantity: 2 } })).status,
      ).toBe(200);
    await failing("order_products", "DELETE", "OLD.product_id = " + products[1]);
    failed((await admin("DELETE", `/v1/orders/${orderId}`)).status);
    expect((await admin("GET", `/v1/orders/${orderId}/products`)).body["totalOrderProductsCount"]).toBe(2);
    expect(
      (await admin("GET", `/v1/orders?filter=${encodeURIComponent(`id == ${orderId}`)}`)).body["totalOrdersCount"],
    ).toBe(1);
    const third = (await admin("POST", "/v1/products", { product: { code: "l3", name: "l3" } })).body["productId"];
    await failing("order_products", "INSERT");
    failed((await admin("POST", `/v1/orders/${orderId}/products/${third}`, { orderProduct: { quantity: 1 } })).status);
    expect(await countRows("order_products")).toBe(2);
  });

  it("a resource upload whose second chunk fails leaves no row (pending or not) and no chunk", async () => {
    const r = await newRelease();
    await failing("artifact_chunks", "INSERT", "NEW.seq = 1");
    failed((await upload(r.path, bytesOf(2 * MiB + 10), { sourceKind: "resource" })).status);
    expect(await countRows("release_downloads")).toBe(0);
    expect(await countRows("artifact_chunks")).toBe(0);
  });

  it("a local upload whose row fails leaves no object in R2", async () => {
    const r = await newRelease();
    await failing("release_downloads", "INSERT");
    failed((await upload(r.path, bytesOf(300_000))).status);
    expect((await env.ARTIFACTS!.list({ prefix: `artifacts/${r.code}/` })).objects).toEqual([]);
  });

  it("a resumable upload whose row fails at completion leaves neither the assembled object nor its state", async () => {
    const r = await newRelease();
    const started = await admin("POST", `${r.path}/uploads`, {
      upload: { platform: "linux-x64", kind: "installer", fileName: "App.AppImage" },
    });
    const uploadId = started.body["uploadId"] as string;
    expect(
      (
        await send("PUT", `${r.path}/uploads/${uploadId}/parts/1`, bytesOf(1000), {
          "content-type": "application/octet-stream",
        })
      ).status,
    ).toBe(200);
    await failing("release_downloads", "INSERT");
    failed((await admin("POST", `${r.path}/uploads/${uploadId}/complete`)).status);
    expect((await env.ARTIFACTS!.list({ prefix: "artifacts/" })).objects.map((o) => o.key)).toEqual([]);
    expect(await countRows("release_downloads")).toBe(0);
  });

  it("a product whose delete fails keeps its releases, and a release whose delete fails keeps its generation", async () => {
    const r = await newRelease();
    await failing("product_releases", "DELETE");
    failed((await admin("DELETE", `/v1/products/${r.productId}/releases/${r.releaseId}`)).status);
    expect((await admin("GET", `/v1/products/${r.productId}/releases`)).body["totalProductReleasesCount"]).toBe(1);
  });
});

describe("bytes missing from storage", () => {
  async function publicArtifact(sourceKind: "local" | "resource") {
    await setSetting("Updates:AllowPublicApplicationReleases", "true");
    const r = await newRelease("1.0.0");
    await admin("PUT", `/v1/products/${r.productId}/releases`, {
      productRelease: { id: r.releaseId, public: true, requiresMaintenance: false },
    });
    const res = await upload(r.path, bytesOf(sourceKind === "resource" ? MiB + 100 : 5000), {
      sourceKind,
      fileName: "App.exe",
    });
    expect(res.status).toBe(201);
    return {
      ...r,
      id: res.body["releaseDownloadId"] as number,
      url: `${BASE}/v1/updates/${r.code}/download/win-x64/1.0.0/App.exe`,
    };
  }

  it.each(["local", "resource"] as const)(
    "are reported by verify and answered 404 whole, by HEAD, for one range and for several (%s)",
    async (sourceKind) => {
      const a = await publicArtifact(sourceKind);
      expect((await exports.default.fetch(a.url, { method: "HEAD" })).status).toBe(200);
      if (sourceKind === "local") {
        const row = await env.DB.prepare("SELECT storage_key FROM release_downloads WHERE id = ?")
          .bind(a.id)
          .first<{ storage_key: string }>();
        await env.ARTIFACTS!.delete(row!.storage_key);
      } else {
        await env.DB.prepare("DELETE FROM artifact_chunks WHERE download_id = ? AND seq = 0").bind(a.id).run();
      }
      expect((await send("POST", `${a.path}/verify`)).body).toMatchObject({ drifted: [a.id], checked: 1 });
      for (const [method, range] of [
        ["GET", undefined],
        ["HEAD", undefined],
        ["GET", "bytes=0-9"],
        ["GET", "bytes=0-9, 100-109"],
        ["HEAD", "bytes=0-9, 100-109"],
      ] as const) {
        const res = await exports.default.fetch(a.url, { method, headers: range ? { range } : {} });
        expect(res.status, `${method} ${range ?? ""}`).toBe(404);
        if (method === "GET")
          expect(await res.json()).toEqual({ success: false, code: 404, message: "The artifact's bytes are missing" });
      }
    },
  );
});

describe("a seat object restarted mid-lease", () => {
  it("keeps its seats: heartbeats, validation and the seat limit carry on", async () => {
    const lic = await newLicense("Floating", 2);
    const seats = await Promise.all(
      ["a", "b"].map((c) =>
        admin("POST", "/v1/license/request", { userKey: lic.userKey, machineId: `m-${c}`, clientId: c }),
      ),
    );
    expect(seats.map((s) => s.status)).toEqual([200, 200]);
    const stub = env.LICENSE_SEATS.getByName(String(lic.id));
    await evictDurableObject(stub);
    for (const seat of seats)
      expect(
        (await admin("POST", "/v1/license/heartbeat", { licenseToken: seat.body["licenseToken"] })).body,
      ).toMatchObject({ success: true, activeClientCount: 2 });
    expect(
      (await admin("POST", "/v1/license/validate", { userKey: lic.userKey, machineId: "m-a", clientId: "a" })).body,
    ).toMatchObject({ status: "Activated" });
    expect(
      (await admin("POST", "/v1/license/request", { userKey: lic.userKey, machineId: "m-c", clientId: "c" })).status,
    ).toBe(528);
    await evictDurableObject(stub);
    expect((await admin("POST", "/v1/license/release", { licenseToken: seats[0]!.body["licenseToken"] })).status).toBe(
      200,
    );
    expect(
      (await admin("POST", "/v1/license/request", { userKey: lic.userKey, machineId: "m-c", clientId: "c" })).status,
    ).toBe(200);
  });
});

// The administrator's key is what every call above uses.
void ADMIN;
