/**
 * One release, and why it is halted (issue 37), through the API:
 * - `GET /v1/products/{productId}/releases/{releaseId}` answers the release as the list does, under `productRelease`,
 *   and 404 (the service's error envelope) for an unknown id, an unknown product, or a release of another product;
 * - a halt keeps its reason in words as `haltNote`: the text given to POST .../halt, or what the automatic halt saw;
 *   a second halt keeps the first note; resume clears it; the `release.halted` event carries it as `note`.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ADMIN, admin, call, keyFor, setSetting } from "./helpers";
import { emitted, subscribe } from "./webhooks-kit";

const unique = () => crypto.randomUUID().slice(0, 8);

async function product(): Promise<number> {
  const res = await admin("POST", "/v1/products", { product: { code: `rr-${unique()}`, name: "Release record" } });
  expect(res.status, res.text).toBe(200);
  return res.body["productId"];
}

async function release(productId: number, values: Record<string, unknown>): Promise<number> {
  const res = await admin("POST", `/v1/products/${productId}/releases`, { productRelease: values });
  expect(res.status, res.text).toBe(200);
  return res.body["productReleaseId"];
}

const one = (productId: number, releaseId: number | string, key = ADMIN.key) =>
  call("GET", `/v1/products/${productId}/releases/${releaseId}`, { key });

/** The release as GET by id answers it (200 asserted). */
async function got(productId: number, releaseId: number): Promise<Record<string, unknown>> {
  const res = await one(productId, releaseId);
  expect(res.status, res.text).toBe(200);
  return res.body["productRelease"];
}

describe("GET /v1/products/{productId}/releases/{releaseId}", () => {
  it("answers the release as the list does, in the envelope, for every management role", async () => {
    const productId = await product();
    const id = await release(productId, {
      version: "1.4.0",
      name: "Spring",
      releaseNotes: "# Spring\n\n- faster",
      public: true,
      stagingPercentage: 30,
      critical: true,
      haltOnReports: { count: 4, minutes: 30 },
    });
    await release(productId, { version: "1.5.0" });
    const res = await one(productId, id);
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ success: true, code: 0 });
    const listed = await admin("GET", `/v1/products/${productId}/releases?filter=${encodeURIComponent(`id == ${id}`)}`);
    expect(res.body["productRelease"]).toEqual(listed.body["productReleases"][0]);
    expect(res.body["productRelease"]).toMatchObject({
      id,
      productId,
      version: "1.4.0",
      stagingPercentage: 30,
      critical: true,
      haltOnReports: { count: 4, minutes: 30 },
    });
    // The roles of the list: Sales reads it too; an application's key does not.
    expect((await one(productId, id, await keyFor(["Sales"]))).status).toBe(200);
    expect((await one(productId, id, await keyFor(["Application"]))).status).toBe(403);
  });

  it("answers 404 with the error envelope for an unknown id, an unknown product and another product's release", async () => {
    const productId = await product();
    const other = await product();
    const id = await release(productId, { version: "1.0.0" });
    const theirs = await release(other, { version: "1.0.0" });
    for (const [path, message] of [
      [`/v1/products/${productId}/releases/${theirs + 1000}`, `ProductRelease ${theirs + 1000} not found`],
      [`/v1/products/${productId}/releases/${theirs}`, `ProductRelease ${theirs} not found`],
      [`/v1/products/${other + 1000}/releases/${id}`, `Product ${other + 1000} not found`],
    ] as const) {
      const res = await admin("GET", path);
      expect(res.status, `${path}: ${res.text}`).toBe(404);
      expect(res.body).toEqual({ success: false, code: 404, message });
    }
    // The release itself is there under its own product.
    expect((await got(other, theirs))["id"]).toBe(theirs);
  });
});

describe("haltNote: why a release is halted, in words", () => {
  beforeAll(() => setSetting("Webhooks:Enabled", "true"));
  afterAll(() => setSetting("Webhooks:Enabled", null));

  it("keeps the reason given to POST .../halt, keeps the first on a second halt, and resume clears it", async () => {
    const sub = await subscribe({ eventTypes: ["release.halted"] });
    const productId = await product();
    const id = await release(productId, { version: "2.0.0", public: true });
    const halt = (body?: unknown) => admin("POST", `/v1/products/${productId}/releases/${id}/halt`, body);
    const halted = await halt({ reason: "  crashes on start with GPU drivers 531  " });
    expect(halted.status, halted.text).toBe(200);
    expect(halted.body["productRelease"]).toMatchObject({
      halted: true,
      haltReason: "manual",
      haltNote: "crashes on start with GPU drivers 531",
    });
    expect(await got(productId, id)).toMatchObject({ haltNote: "crashes on start with GPU drivers 531" });
    const [event] = await emitted(sub.id, "release.halted");
    expect(event?.data).toMatchObject({
      id,
      reason: "manual",
      note: "crashes on start with GPU drivers 531",
      haltNote: "crashes on start with GPU drivers 531",
    });
    // A release halted already stays as it is, its note too.
    expect((await halt({ reason: "another reason" })).status).toBe(200);
    expect(await got(productId, id)).toMatchObject({ haltNote: "crashes on start with GPU drivers 531" });

    const resumed = await admin("POST", `/v1/products/${productId}/releases/${id}/resume`);
    expect(resumed.status, resumed.text).toBe(200);
    expect((await got(productId, id))["haltNote"] ?? null).toBeNull();
    const row = await admin("GET", `/v1/products/${productId}/releases?filter=${encodeURIComponent(`id == ${id}`)}`);
    expect(row.body["productReleases"][0]).not.toHaveProperty("haltNote");

    // A halt without a reason (or with only spaces) has no note.
    expect((await halt({ reason: "   " })).status).toBe(200);
    expect(await got(productId, id)).toMatchObject({ halted: true });
    expect((await got(productId, id))["haltNote"] ?? null).toBeNull();
  });

  it("the automatic halt writes what it saw, and resume clears it", async () => {
    const sub = await subscribe({ eventTypes: ["release.halted"] });
    const productId = await product();
    await release(productId, { version: "2.0.0", public: true });
    const id = await release(productId, { version: "2.1.0", public: true, haltOnReports: { count: 2, minutes: 60 } });
    const licensed = async () => {
      const res = await admin("POST", "/v1/licenses", { license: { productId } });
      expect(res.status, res.text).toBe(200);
      const listed = await admin(
        "GET",
        `/v1/licenses?filter=${encodeURIComponent(`id == ${res.body["id"]}`)}&select=userKey`,
      );
      return listed.body["licenses"][0]["userKey"] as string;
    };
    const report = async (userKey: string) => {
      const res = await call("POST", "/v1/report", {
        key: ADMIN.key,
        body: { name: "CrashReport", version: "2.1.0", userKey, content: "boom" },
      });
      expect(res.status, res.text).toBe(200);
    };
    const first = await licensed();
    await report(first);
    await report(first);
    expect(await got(productId, id)).toMatchObject({ halted: false });
    await report(await licensed());
    expect(await got(productId, id)).toMatchObject({
      halted: true,
      haltReason: "reports",
      haltNote: "2 licenses reported version 2.1.0 within 60 minutes",
    });
    const [event] = await emitted(sub.id, "release.halted");
    expect(event?.data).toMatchObject({
      id,
      reason: "reports",
      note: "2 licenses reported version 2.1.0 within 60 minutes",
    });
    expect((await admin("POST", `/v1/products/${productId}/releases/${id}/resume`)).status).toBe(200);
    expect(await got(productId, id)).toMatchObject({ halted: false });
    expect((await got(productId, id))["haltNote"] ?? null).toBeNull();
  });
});
