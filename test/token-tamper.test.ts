/**
 * An activation token changed by one character is tampered (issue 36; CONTRACT section 4: 535 `The license token has
 * been tampered`), on validate and on deactivate, where it answered 529 and 525 before; the machine's own token
 * whose activation is gone is merely not found.
 */
import { describe, expect, it } from "vitest";
import { ADMIN, admin, call } from "./helpers";

const op = (name: string, body: Record<string, unknown>) =>
  call("POST", `/v1/license/${name}`, { key: ADMIN.key, body });

/** The token with one character changed to another of the alphabet. */
function altered(token: string): string {
  const i = token.length - 3;
  return `${token.slice(0, i)}${token[i] === "A" ? "B" : "A"}${token.slice(i + 1)}`;
}

describe("an altered activation token", () => {
  it("is 535 licenseTokenTampered on validate and deactivate; the machine's own token once deactivated is not found", async () => {
    const product = await admin("POST", "/v1/products", {
      product: { code: `tamper-${crypto.randomUUID().slice(0, 8)}`, name: "Tamper" },
    });
    const created = await admin("POST", "/v1/licenses", {
      license: { productId: product.body["productId"], licensingMode: "Activation", maxClients: 2 },
    });
    const userKey = (
      await admin("GET", `/v1/licenses?filter=${encodeURIComponent(`id == ${created.body["id"]}`)}&select=userKey`)
    ).body["licenses"][0].userKey as string;
    const activated = await op("activate", { userKey, machineId: "PC-1" });
    expect(activated.status, activated.text).toBe(200);
    const token = activated.body["licenseToken"] as string;
    const bad = altered(token);
    for (const name of ["validate", "deactivate"]) {
      const res = await op(name, { userKey, machineId: "PC-1", licenseToken: bad });
      expect(res.status, `${name}: ${res.text}`).toBe(535);
      expect(res.body).toMatchObject({
        message: "The license token has been tampered",
        reason: "licenseTokenTampered",
      });
    }
    expect((await op("validate", { userKey, machineId: "PC-1", licenseToken: token })).status).toBe(200);
    expect((await op("deactivate", { userKey, machineId: "PC-1", licenseToken: token })).status).toBe(200);
    expect((await op("deactivate", { userKey, machineId: "PC-1", licenseToken: token })).status).toBe(525);
    expect((await op("validate", { userKey, machineId: "PC-1", licenseToken: token })).status).toBe(529);
  });
});
