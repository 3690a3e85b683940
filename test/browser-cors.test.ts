/**
 * CORS (Application:CorsOrigins): the routes a web page or Electron renderer calls answer preflights and carry
 * Access-Control-Allow-Origin for allowed origins only; the Management API never does; with no origins set (the
 * default) nothing changes.
 */
import { afterEach, describe, expect, it } from "vitest";
import { ADMIN, call, setSetting } from "./helpers";

const ORIGIN = "https://app.example.com";

function preflight(path: string, origin = ORIGIN, method = "POST") {
  return call("OPTIONS", path, {
    headers: {
      origin,
      "access-control-request-method": method,
      "access-control-request-headers": "content-type,authorization",
    },
  });
}

afterEach(() => setSetting("Application:CorsOrigins", null));

describe("CORS for browser-facing routes", () => {
  it("sends no CORS headers by default", async () => {
    const res = await call("GET", "/v1/extensions/keys", { headers: { origin: ORIGIN } });
    expect(res.status).toBe(200);
    expect(res.headers.get("access-control-allow-origin")).toBeNull();
    expect((await preflight("/v1/license/validate")).headers.get("access-control-allow-origin")).toBeNull();
  });

  it("answers preflights and real calls of licensing, update, key and gRPC-Web routes for allowed origins", async () => {
    await setSetting("Application:CorsOrigins", `${ORIGIN}, https://other.example.com`);
    for (const path of [
      "/v1/license/validate",
      "/v1/auth/login",
      "/v1/report",
      "/licensing.v1.LicenseServer/ValidateLicense",
      "/v1/updates/studio?platform=win-x64&version=1.0.0",
    ]) {
      const res = await preflight(path);
      expect(res.status, path).toBe(204);
      expect(res.headers.get("access-control-allow-origin"), path).toBe(ORIGIN);
      expect(res.headers.get("access-control-allow-methods"), path).toContain("POST");
      expect(res.headers.get("access-control-allow-headers"), path).toBe("content-type,authorization");
    }
    const keys = await call("GET", "/v1/extensions/keys", { headers: { origin: ORIGIN } });
    expect(keys.headers.get("access-control-allow-origin")).toBe(ORIGIN);
    expect(keys.headers.get("vary")).toContain("Origin");
    // An error answer (a licensing refusal) carries the header too, so the page can read the reason.
    const refused = await call("POST", "/v1/license/validate", {
      key: ADMIN.key,
      headers: { origin: ORIGIN },
      body: { userKey: "NOPE1-NOPE2-NOPE3-NOPE4-NOPE5" },
    });
    expect(refused.status).toBe(525);
    expect(refused.body).toMatchObject({
      success: false,
      code: 525,
      message: "License key not found",
      reason: "licenseNotFound",
    });
    expect(refused.headers.get("access-control-allow-origin")).toBe(ORIGIN);
    expect(refused.headers.get("access-control-expose-headers")).toContain("licensing-reason");
  });

  it("refuses origins that are not listed, and never opens the Management API", async () => {
    await setSetting("Application:CorsOrigins", ORIGIN);
    expect(
      (await preflight("/v1/license/validate", "https://evil.example.com")).headers.get("access-control-allow-origin"),
    ).toBeNull();
    const list = await call("GET", "/v1/licenses", { key: ADMIN.key, headers: { origin: ORIGIN } });
    expect(list.status).toBe(200);
    expect(list.headers.get("access-control-allow-origin")).toBeNull();
    expect((await preflight("/v1/licenses")).headers.get("access-control-allow-origin")).toBeNull();
    expect((await preflight("/v1/settings", ORIGIN, "PUT")).headers.get("access-control-allow-origin")).toBeNull();
  });

  it("allows any origin with *", async () => {
    await setSetting("Application:CorsOrigins", '["*"]');
    expect(
      (await call("GET", "/v1/extensions/keys", { headers: { origin: "https://anywhere.example" } })).headers.get(
        "access-control-allow-origin",
      ),
    ).toBe("*");
  });
});
