/**
 * `GET /v1/info` (CONTRACT section 3): version, build date from the Worker's version metadata, runtime, row counts
 * per entity and the feature switches of the effective configuration.
 */
import { describe, expect, it } from "vitest";
import { SERVICE_VERSION } from "../src/app/app";
import { admin, call, keyFor, setSetting } from "./helpers";

describe("GET /v1/info", () => {
  it("says what is running", async () => {
    const res = await call("GET", "/v1/info", { key: await keyFor(["Sales"]) });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ success: true, code: 0, version: SERVICE_VERSION, runtime: "Cloudflare Workers" });
    expect(res.body["buildDate"]).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/);
    expect(res.body["versionId"]).toEqual(expect.any(String));
    expect(Date.parse(res.body["serverTime"])).toBeGreaterThan(Date.now() - 60_000);
  });

  it("counts the rows of every entity in one answer", async () => {
    const before = (await admin("GET", "/v1/info")).body["database"];
    expect(Object.keys(before)).toEqual(
      expect.arrayContaining([
        "customers",
        "products",
        "orders",
        "licenses",
        "licenseTemplates",
        "resources",
        "users",
        "apiKeys",
        "subscriptions",
        "events",
        "logs",
        "emails",
        "settings",
      ]),
    );
    expect(before.users).toBeGreaterThanOrEqual(2);
    await admin("POST", "/v1/resources", { resource: { name: "counted" } });
    await admin("POST", "/v1/customers", { customer: { company: "Counted Ltd" } });
    const after = (await admin("GET", "/v1/info")).body["database"];
    expect(after.resources).toBe(before.resources + 1);
    expect(after.customers).toBe(before.customers + 1);
    expect(after.licenses).toBe(before.licenses);
  });

  it("reports the feature switches of the effective configuration", async () => {
    expect((await admin("GET", "/v1/info")).body["features"]).toEqual({
      webApi: true,
      swagger: true,
      grpcWeb: true,
      healthCheck: true,
      webhooks: true,
      bruteForceProtection: true,
      enforcePlatformEditions: true,
      enumsAsStrings: false,
      email: "outbox",
      artifactStorage: true,
    });
    await setSetting("Webhooks:Enabled", "false");
    await setSetting("Application:EnableGrpcWeb", "false");
    try {
      expect((await admin("GET", "/v1/info")).body["features"]).toMatchObject({
        webhooks: false,
        grpcWeb: false,
        swagger: true,
      });
    } finally {
      await setSetting("Webhooks:Enabled", null);
      await setSetting("Application:EnableGrpcWeb", null);
    }
  });
});
