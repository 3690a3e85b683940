/**
 * License files and machines add up (issue 36, N6): a machine that holds an unexpired license file keeps running
 * offline until the file ends, so freeing its activation is refused (529 `licenseFileHeld`, with the file's end in
 * X-License-File-Until) and it keeps counting against maxClients. Activate, check out, deactivate, repeat no longer
 * licenses more machines than the license allows.
 */
import { describe, expect, it } from "vitest";
import { ADMIN, admin, call } from "./helpers";

const op = (name: string, body: Record<string, unknown>) =>
  call("POST", `/v1/license/${name}`, { key: ADMIN.key, body });

describe("a machine holding a license file", () => {
  it("cannot be freed until the file ends, so a 2-machine license never runs on a third", async () => {
    const product = await admin("POST", "/v1/products", {
      product: { code: `files-${crypto.randomUUID().slice(0, 8)}`, name: "Files" },
    });
    const created = await admin("POST", "/v1/licenses", {
      license: { productId: product.body["productId"], licensingMode: "Activation", maxClients: 2 },
    });
    const userKey = (
      await admin("GET", `/v1/licenses?filter=${encodeURIComponent(`id == ${created.body["id"]}`)}&select=userKey`)
    ).body["licenses"][0].userKey as string;
    for (const machineId of ["PC-1", "PC-2"]) expect((await op("activate", { userKey, machineId })).status).toBe(200);
    const file = await op("checkout", { userKey, machineId: "PC-1", ttl: 30 * 86_400 });
    expect(file.status, file.text).toBe(200);
    const refused = await op("deactivate", { userKey, machineId: "PC-1" });
    expect(refused.status, refused.text).toBe(529);
    expect(refused.body).toMatchObject({ reason: "licenseFileHeld" });
    expect(refused.headers.get("x-license-file-until")).toBe(file.body["expiresAt"]);
    // PC-1 still counts: a third machine is refused.
    const third = await op("activate", { userKey, machineId: "PC-3" });
    expect(third.status, third.text).toBe(526);
    // A machine without a file is freed as before, and makes room.
    expect((await op("deactivate", { userKey, machineId: "PC-2" })).status).toBe(200);
    expect((await op("activate", { userKey, machineId: "PC-3" })).status).toBe(200);
  });
});
