/**
 * One list of pre-route gates (src/app/app.ts PRE_ROUTE): the app's middleware chain is the list, and the front door
 * asks every gate of it before it answers from the isolate's kept answers. A gate added to the list applies to kept
 * answers too: here a test gate refuses requests that carry a header, in the app and at the front door alike.
 */
import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PRE_ROUTE, type PreRouteGate, createApp, frontDoor } from "../src/app/app";
import { pingDoor } from "../src/app/ping-door";
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

  it("are asked by the session pings' front door, which takes an anonymous ping as the route does", async () => {
    const ping = (headers: Record<string, string> = {}, status = "exited") => {
      const body = JSON.stringify({
        version: "2.0.0",
        sessions: [{ id: `door-${status}`, status, startedAt: new Date(Date.now() - 60_000).toISOString() }],
      });
      // As a client sends it: with its length (the front door leaves a body of unknown length to the app's limit).
      return new Request(`${BASE}/v1/updates/${code}/sessions`, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          "content-length": String(body.length),
          "X-Service-Install-Id": "door-install",
          ...headers,
        },
        body,
      });
    };
    const app = createApp();
    const through = async (request: Request) => {
      const ctx = createExecutionContext();
      const res = await app.fetch(request, env, ctx);
      await waitOnExecutionContext(ctx);
      return res;
    };
    // The app's answer (which remembers the product for the isolate), then the front door's: the same.
    const routed = await through(ping());
    expect(routed.status).toBe(202);
    const ctx = createExecutionContext();
    const taken = await pingDoor(ping(), env, ctx);
    await waitOnExecutionContext(ctx);
    expect(taken).toBeInstanceOf(Response);
    const answer = taken as Response;
    expect([answer.status, await answer.json()]).toEqual([routed.status, await routed.json()]);
    for (const name of ["content-type", "cache-control"])
      expect(answer.headers.get(name), name).toBe(routed.headers.get(name));

    // A gate that would act, a credential: the app's, untouched.
    const gates = [...PRE_ROUTE, testGate];
    expect(await pingDoor(ping({ [REFUSED]: "1" }), env, createExecutionContext(), gates)).toBeUndefined();
    expect(await pingDoor(ping({ "X-Service-User-Key": "ABCDE" }), env, createExecutionContext())).toBeUndefined();
    // A body the route refuses: the app answers it from the text the front door read.
    const again = await pingDoor(ping({}, "exploded"), env, createExecutionContext());
    expect(again).toBeInstanceOf(Request);
    const refused = await through(again as Request);
    expect(refused.status).toBe(400);
    expect(await refused.text()).toContain("sessions[0].status");
    // No install id: the same.
    const anonymous = ping();
    const headers = new Headers(anonymous.headers);
    headers.delete("X-Service-Install-Id");
    const noInstall = new Request(anonymous, { headers });
    const second = await pingDoor(noInstall, env, createExecutionContext());
    expect(second).toBeInstanceOf(Request);
    expect(await (await through(second as Request)).text()).toContain("X-Service-Install-Id");
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
