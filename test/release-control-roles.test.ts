/**
 * Release control follows the roles of halt (issue 36, N9): Sales may create and edit releases but, as it may not
 * halt or resume one, it may not stop a rollout (stagingPercentage 0), roll a release back, aim it at an audience,
 * schedule it, mark it critical or arm its automatic halt either; Administrator and LicenseManager may. A field sent
 * with the value it already has is no change.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { admin, call, keyFor } from "./helpers";

let sales = "";
let manager = "";
let productId = 0;

const asSales = (method: string, path: string, body?: unknown) => call(method, path, { key: sales, body });
const stored = async (id: number) =>
  (await admin("GET", `/v1/products/${productId}/releases?filter=${encodeURIComponent(`id == ${id}`)}`)).body[
    "productReleases"
  ][0];

beforeAll(async () => {
  sales = await keyFor(["Sales"]);
  manager = await keyFor(["LicenseManager"]);
  const product = await admin("POST", "/v1/products", {
    product: { code: `roles-${crypto.randomUUID().slice(0, 6)}`, name: "Roles" },
  });
  productId = product.body["productId"];
});

describe("release control fields", () => {
  it.each([
    ["stagingPercentage", 0],
    ["rollback", true],
    ["audience", 'edition == "Ultimate"'],
    ["critical", true],
    ["haltOnReports", { count: 3, minutes: 10 }],
    ["rolloutSchedule", [{ percentage: 50, at: "2099-01-01T00:00:00.000Z" }]],
  ])("Sales may not set %s, on create or on update; a manager may", async (field, value) => {
    const path = `/v1/products/${productId}/releases`;
    const version = `1.0.${Math.floor(Math.random() * 1e6)}`;
    const create = await asSales("POST", path, { productRelease: { version, [field]: value } });
    expect(create.status, create.text).toBe(403);
    expect(create.body["message"]).toContain(field);
    const plain = await asSales("POST", path, { productRelease: { version, requiresMaintenance: true } });
    expect(plain.status, plain.text).toBe(200);
    const id = plain.body["productReleaseId"] as number;
    const before = await stored(id);
    // rollback needs a release to roll back to: the manager's answer may be 400 for that, never 403.
    const update = await asSales("PUT", path, { productRelease: { id, [field]: value } });
    expect(update.status, update.text).toBe(403);
    expect(await stored(id)).toEqual(before);
    const same = await asSales("PUT", path, { productRelease: { id, [field]: before[field] ?? null } });
    if (before[field] !== undefined) expect(same.status, same.text).toBe(200);
    const managed = await call("PUT", path, { key: manager, body: { productRelease: { id, [field]: value } } });
    expect(managed.status === 200 || (field === "rollback" && managed.status === 400), managed.text).toBe(true);
  });

  it("Sales may still edit what is not release control", async () => {
    const path = `/v1/products/${productId}/releases`;
    const created = await asSales("POST", path, {
      productRelease: { version: "2.0.0", stagingPercentage: 100, rollback: false, critical: false },
    });
    expect(created.status, created.text).toBe(200);
    const id = created.body["productReleaseId"] as number;
    const edit = await asSales("PUT", path, { productRelease: { id, name: "Two", releaseNotes: "Fixes" } });
    expect(edit.status, edit.text).toBe(200);
    expect(await stored(id)).toMatchObject({ name: "Two", releaseNotes: "Fixes" });
  });
});
