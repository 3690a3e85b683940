/**
 * The release generation changes in one place (src/http/repository.ts for products, releases and artifacts;
 * src/db/settings-store.ts for settings), so no writer can forget it: after a write through each writer path, the next
 * anonymous feed poll in the same isolate is a new answer, not the one this isolate kept (answer-memo.ts, the front
 * door) nor the Cache API's copy under the old generation.
 */
import { env, exports } from "cloudflare:workers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BASE, admin, setSetting } from "./helpers";
import { bytesOf, newProduct, upload } from "./artifacts-kit";

let product = { id: 0, code: "" };
let releaseId = 0;
let downloads = "";

beforeAll(async () => {
  await setSetting("Updates:AllowPublicApplicationReleases", "true");
  product = await newProduct();
  const release = await admin("POST", `/v1/products/${product.id}/releases`, {
    productRelease: { version: "1.0.0", public: true, requiresMaintenance: false },
  });
  expect(release.status, release.text).toBe(200);
  releaseId = release.body["productReleaseId"];
  downloads = `/v1/products/${product.id}/releases/${releaseId}/downloads`;
  const uploaded = await upload(downloads, bytesOf(64, 5), { partName: "Kept Setup 1.0.0.exe" });
  expect(uploaded.status, JSON.stringify(uploaded)).toBe(201);
});

afterAll(async () => {
  await setSetting("Updates:AllowPublicApplicationReleases", null);
  await setSetting("Updates:FeedCacheSeconds", null);
});

const poll = (code = product.code) => exports.default.fetch(`${BASE}/v1/updates/${code}/latest.yml`);

/** Polls until the isolate answers from its memo (no D1 statement): the answer every write below must replace. */
async function kept(): Promise<string> {
  const first = await poll();
  expect(first.status).toBe(200);
  const body = await first.text();
  const again = await poll();
  expect(again.headers.get("server-timing")).toContain('d1-statements;desc="0"');
  expect(await again.text()).toBe(body);
  return body;
}

async function generation(): Promise<number> {
  const row = await env.DB.prepare("SELECT release_generation AS g FROM products WHERE id = ?")
    .bind(product.id)
    .first<{ g: number }>();
  return row!.g;
}

describe("every writer of what a feed shows changes the next answer in this isolate", () => {
  it("a release PUT", async () => {
    await kept();
    const before = await generation();
    const put = await admin("PUT", `/v1/products/${product.id}/releases`, {
      productRelease: { id: releaseId, releaseNotes: "Notes after the PUT" },
    });
    expect(put.status, put.text).toBe(200);
    expect(await generation()).toBe(before + 1);
    expect(await (await poll()).text()).toContain("Notes after the PUT");
  });

  it("an artifact upload, an artifact PUT and an artifact DELETE", async () => {
    await kept();
    const zip = await upload(downloads, bytesOf(48, 6), { kind: "zip", partName: "Kept 1.0.0.zip" });
    expect(zip.status, JSON.stringify(zip)).toBe(201);
    expect(await (await poll()).text()).toContain("Kept%201.0.0.zip");

    await kept();
    const zipId = (zip.body as Record<string, unknown>)["releaseDownloadId"];
    const renamed = await admin("PUT", downloads, { releaseDownload: { id: zipId, fileName: "Renamed 1.0.0.zip" } });
    expect(renamed.status, renamed.text).toBe(200);
    expect(await (await poll()).text()).toContain("Renamed%201.0.0.zip");

    await kept();
    const removed = await admin("DELETE", `${downloads}/${zipId}`);
    expect(removed.status, removed.text).toBe(200);
    expect(await (await poll()).text()).not.toContain("Renamed%201.0.0.zip");
  });

  it("a new release published with its artifact", async () => {
    await kept();
    const release = await admin("POST", `/v1/products/${product.id}/releases`, {
      productRelease: { version: "1.1.0", public: true, requiresMaintenance: false },
    });
    expect(release.status, release.text).toBe(200);
    const path = `/v1/products/${product.id}/releases/${release.body["productReleaseId"]}/downloads`;
    const uploaded = await upload(path, bytesOf(64, 7), { partName: "Kept Setup 1.1.0.exe" });
    expect(uploaded.status, JSON.stringify(uploaded)).toBe(201);
    expect(await (await poll()).text()).toContain('version: "1.1.0"');
  });

  it("a product PUT (a new code: the old URL no longer answers)", async () => {
    await kept();
    const before = await generation();
    const old = product.code;
    const code = `${old}-renamed`;
    const put = await admin("PUT", "/v1/products", { product: { id: product.id, code } });
    expect(put.status, put.text).toBe(200);
    expect(await generation()).toBe(before + 1);
    expect((await poll(old)).status).toBe(404);
    product = { ...product, code };
    expect((await poll()).status).toBe(200);
  });

  it("a settings PUT", async () => {
    await kept();
    const before = await generation();
    const put = await admin("PUT", "/v1/settings", { settings: [{ name: "Updates:FeedCacheSeconds", value: "17" }] });
    expect(put.status, put.text).toBe(200);
    expect(await generation()).toBe(before + 1);
    expect((await poll()).headers.get("cache-control")).toBe("public, max-age=17");
  });
});
