/**
 * SPEC "Partial update rule" (and Versioning rule 3) on products and product releases: a PUT that leaves out
 * `isApplication`, `public` or `requiresMaintenance` keeps the stored value; one that sends them (false included)
 * changes them.
 */
import { describe, expect, it } from "vitest";
import { admin } from "./helpers";
import { unique } from "./artifacts-kit";

async function product(id: number): Promise<Record<string, unknown>> {
  const res = await admin("GET", `/v1/products?filter=${encodeURIComponent(`id == ${id}`)}`);
  expect(res.status, res.text).toBe(200);
  return res.body["products"][0];
}

async function release(productId: number, id: number): Promise<Record<string, unknown>> {
  const res = await admin("GET", `/v1/products/${productId}/releases?filter=${encodeURIComponent(`id == ${id}`)}`);
  expect(res.status, res.text).toBe(200);
  return res.body["productReleases"][0];
}

async function put(path: string, body: unknown): Promise<void> {
  const res = await admin("PUT", path, body);
  expect(res.status, res.text).toBe(200);
}

describe("partial PUT of a product", () => {
  it("keeps isApplication when the body leaves it out, and applies it (false included) when sent", async () => {
    const created = await admin("POST", "/v1/products", {
      product: { code: `pp-${unique()}`, name: "Partial", isApplication: true },
    });
    expect(created.status, created.text).toBe(200);
    const id = created.body["productId"] as number;

    await put("/v1/products", { product: { id, name: "Renamed" } });
    expect(await product(id)).toMatchObject({ name: "Renamed", isApplication: true });

    await put("/v1/products", { product: { id, isApplication: false } });
    expect(await product(id)).toMatchObject({ name: "Renamed", isApplication: false });

    await put("/v1/products", { product: { id, description: "still not an application" } });
    expect(await product(id)).toMatchObject({ description: "still not an application", isApplication: false });
  });
});

describe("partial PUT of a product release", () => {
  it("keeps public and requiresMaintenance when the body leaves them out, and applies them when sent", async () => {
    // Not an application: requiresMaintenance false needs no setting there.
    const created = await admin("POST", "/v1/products", {
      product: { code: `pr-${unique()}`, name: "Partial releases", isApplication: false },
    });
    const productId = created.body["productId"] as number;
    const path = `/v1/products/${productId}/releases`;
    const made = await admin("POST", path, {
      productRelease: { version: "1.0.0", public: true, requiresMaintenance: false },
    });
    expect(made.status, made.text).toBe(200);
    const id = made.body["productReleaseId"] as number;
    expect(await release(productId, id)).toMatchObject({ public: true, requiresMaintenance: false });

    await put(path, { productRelease: { id, name: "One", releaseNotes: "Notes" } });
    expect(await release(productId, id)).toMatchObject({ name: "One", public: true, requiresMaintenance: false });

    await put(path, { productRelease: { id, public: false, requiresMaintenance: true } });
    expect(await release(productId, id)).toMatchObject({ name: "One", public: false, requiresMaintenance: true });

    await put(path, { productRelease: { id, releaseNotes: "Other notes" } });
    expect(await release(productId, id)).toMatchObject({
      releaseNotes: "Other notes",
      public: false,
      requiresMaintenance: true,
    });

    // requiresMaintenance defaults to true only at creation, never on a later PUT that omits it.
    await put(path, { productRelease: { id, requiresMaintenance: false } });
    await put(path, { productRelease: { id, channel: "insider" } });
    expect(await release(productId, id)).toMatchObject({
      channel: "insider",
      public: false,
      requiresMaintenance: false,
    });
  });
});
