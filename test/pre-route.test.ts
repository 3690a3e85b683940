/**
 * One list of pre-route gates (src/app/app.ts PRE_ROUTE): the app's middleware chain is the list, and the front door
 * asks every gate of it before it answers from the isolate's kept answers. A gate added to the list applies to kept
 * answers too: here a test gate refuses requests that carry a header, in the app and at the front door alike.
 */
import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PRE_ROUTE, type PreRouteGate, createApp, frontDoor } from "../src/app/app";
import { ApiError } from "../src/kernel/errors";
import { BASE, admin, setSetting } from "./helpers";
import { bytesOf, newProduct, upload } from "./artifacts-kit";

let code = "";

beforeAll(async () => {
  await setSetting("Updates:AllowPublicApplicationReleases", "true");
  const product = await newProduct();
  code = product.code;
  const release = await admin("POST", `/v1/products/${product.id}/releases`, {
    productRelease: { version: "2.0.0", public: true, requiresMaintenance: false },
  });
  expect(release.status, release.text).toBe(200);
  const path = `/v1/products/${product.id}/releases/${release.body["productReleaseId"]}/downloads`;
  const uploaded = await upload(path, bytesOf(64, 9), { partName: "Gate Setup 2.0.0.exe" });
  expect(uploaded.status, JSON.stringify(uploaded)).toBe(201);
});

afterAll(() => setSetting("Updates:AllowPublicApplicationReleases", null));

const REFUSED = "x-refused-by-test-gate";
/** A new gate: refuses a request that carries REFUSED, and says so to the front door. */
const testGate: PreRouteGate = {
  name: "test",
  middleware: async (c, next) => {
    if (c.req.header(REFUSED)) throw new ApiError(403, "Refused by the test gate");
    await next();
  },
  quietFor: (door) => !door.headers.has(REFUSED),
};

const feed = (headers: Record<string, string> = {}) =>
  new Request(`${BASE}/v1/updates/${code}/latest.yml`, { headers });

describe("the pre-route gates", () => {
  it("are one list: the app runs it, and the front door asks every gate of it", async () => {
    // The answer is kept (by the app of this module graph, which the front door below reads): the front door
    // answers it, header or not.
    const app = createApp();
    for (let i = 0; i < 2; i++) {
      const ctx = createExecutionContext();
      expect((await app.fetch(feed(), env, ctx)).status).toBe(200);
      await waitOnExecutionContext(ctx);
    }
    expect((await frontDoor(feed({ [REFUSED]: "1" }), env))?.status).toBe(200);

    const gates = [...PRE_ROUTE, testGate];
    // With the new gate in the list, the front door leaves the request to the app, whose chain refuses it.
    expect(await frontDoor(feed({ [REFUSED]: "1" }), env, gates)).toBeUndefined();
    const ctx = createExecutionContext();
    const refused = await createApp(gates).fetch(feed({ [REFUSED]: "1" }), env, ctx);
    await waitOnExecutionContext(ctx);
    expect(refused.status).toBe(403);
    expect(await refused.text()).toContain("Refused by the test gate");
    // A request the gate leaves alone is still answered at the front door.
    expect((await frontDoor(feed(), env, gates))?.status).toBe(200);
  });

  it("each have a name, once", () => {
    const names = PRE_ROUTE.map((gate) => gate.name);
    expect(new Set(names).size).toBe(names.length);
    expect(names).toEqual([
      "noStoreByDefault",
      "requestLog",
      "context",
      "browserCors",
      "ipProtection",
      "health",
      "gates",
      "jsonBodyLimit",
    ]);
  });
});
