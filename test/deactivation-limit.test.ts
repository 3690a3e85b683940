/**
 * The monthly deactivation limit holds the licensee wherever it deactivates (issue 36, N8): through the application
 * (POST /v1/license/deactivate with the license's own bearer token, or an Application key) as through the customer
 * portal, one count per license and month (Licensing:MaxDeactivationsPerMonth, 3 by default). Past it: 528
 * `deactivationLimit` with the reset date, and the machine stays activated. Administrator and LicenseManager, who
 * manage licenses, are not limited.
 */
import { describe, expect, it } from "vitest";
import { ADMIN, admin, call, keyFor } from "./helpers";

async function license(): Promise<string> {
  const product = await admin("POST", "/v1/products", {
    product: { code: `deact-${crypto.randomUUID().slice(0, 8)}`, name: "Deact" },
  });
  const created = await admin("POST", "/v1/licenses", {
    license: { productId: product.body["productId"], licensingMode: "Activation", maxClients: 10 },
  });
  const listed = await admin(
    "GET",
    `/v1/licenses?filter=${encodeURIComponent(`id == ${created.body["id"]}`)}&select=userKey`,
  );
  return listed.body["licenses"][0].userKey;
}

async function activate(userKey: string, machines: string[]) {
  for (const machineId of machines) {
    const res = await call("POST", "/v1/license/activate", { key: ADMIN.key, body: { userKey, machineId } });
    expect(res.status, res.text).toBe(200);
  }
}

describe("the monthly deactivation limit", () => {
  it("holds an application with the license's bearer token and an Application key: the fourth is 528 deactivationLimit", async () => {
    const userKey = await license();
    const machines = ["m-1", "m-2", "m-3", "m-4", "m-5"];
    await activate(userKey, machines);
    const token = (await call("POST", "/v1/auth/login", { body: { userKey } })).body["token"] as string;
    const appKey = await keyFor(["Application"]);
    const callers = [{ token }, { key: appKey }, { token }];
    for (const [i, who] of callers.entries()) {
      const res = await call("POST", "/v1/license/deactivate", { ...who, body: { userKey, machineId: machines[i] } });
      expect(res.status, res.text).toBe(200);
    }
    const refused = await call("POST", "/v1/license/deactivate", { token, body: { userKey, machineId: "m-4" } });
    expect(refused.status, refused.text).toBe(528);
    expect(refused.body).toMatchObject({ reason: "deactivationLimit" });
    expect(refused.headers.get("x-deactivations-reset")).toMatch(/^\d{4}-\d{2}-01T00:00:00\.000Z$/);
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(0);
    // The machine is still activated: validating it answers Activated.
    const valid = await call("POST", "/v1/license/validate", { token, body: { userKey, machineId: "m-4" } });
    expect(valid.body["status"], valid.text).toBe("Activated");
    // A refusal counts nothing, and neither does a machine that was not activated.
    const unknown = await call("POST", "/v1/license/deactivate", {
      key: ADMIN.key,
      body: { userKey, machineId: "m-9" },
    });
    expect(unknown.status).toBe(529);
    // Staff who manage licenses are not limited.
    const byAdmin = await call("POST", "/v1/license/deactivate", {
      key: ADMIN.key,
      body: { userKey, machineId: "m-4" },
    });
    expect(byAdmin.status, byAdmin.text).toBe(200);
    const manager = await keyFor(["LicenseManager"]);
    const byManager = await call("POST", "/v1/license/deactivate", {
      key: manager,
      body: { userKey, machineId: "m-5" },
    });
    expect(byManager.status, byManager.text).toBe(200);
  });

  it("counts a machine the application failed to free nothing: only freed machines count", async () => {
    const userKey = await license();
    await activate(userKey, ["a-1", "a-2", "a-3"]);
    const token = (await call("POST", "/v1/auth/login", { body: { userKey } })).body["token"] as string;
    for (let i = 0; i < 5; i++) {
      const res = await call("POST", "/v1/license/deactivate", { token, body: { userKey, machineId: "nobody" } });
      expect(res.status, res.text).toBe(529);
    }
    for (const machineId of ["a-1", "a-2", "a-3"]) {
      const res = await call("POST", "/v1/license/deactivate", { token, body: { userKey, machineId } });
      expect(res.status, res.text).toBe(200);
    }
  });
});
