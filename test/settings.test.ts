/**
 * CONTRACT section 1: settings from defaults, environment variables (`__` form) and the settings table, parsed and
 * validated once into one typed object; and the switches they drive (Web API, Swagger, health check, enum format).
 */
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { buildConfig, duration, list, parseSetting, settingDefinitions } from "../src/kernel/config";
import { integer, sqliteTable, text } from "drizzle-orm/sqlite-core";
import { defineEntity, f } from "../src/http/entity";
import { ADMIN, admin, call, setSetting } from "./helpers";

describe("parsing (pure)", () => {
  it("reads durations as hh:mm:ss and d.hh:mm:ss, in milliseconds", () => {
    expect(duration("00:01:00")).toBe(60_000);
    expect(duration("00:15:00")).toBe(900_000);
    expect(duration("1.02:03:04")).toBe(((24 + 2) * 3600 + 3 * 60 + 4) * 1000);
    expect(duration("00:00:01.5")).toBe(1500);
    for (const bad of ["1:00", "00:60:00", "abc", "24:00:00", "-00:01:00"]) expect(() => duration(bad), bad).toThrow();
  });

  it("reads lists as JSON arrays or comma-separated strings", () => {
    expect(list('["127.0.0.1", "::1"]')).toEqual(["127.0.0.1", "::1"]);
    expect(list("127.0.0.1, ::1,,")).toEqual(["127.0.0.1", "::1"]);
    expect(list("")).toEqual([]);
    expect(() => list("[1, 2]")).toThrow();
  });

  it("names the setting in the error of an invalid value", () => {
    expect(() => parseSetting("Application:MaxPageSize", "lots")).toThrow(
      "Invalid value for setting Application:MaxPageSize: expected an integer",
    );
    expect(() => parseSetting("Application:EnableSwagger", "perhaps")).toThrow("Application:EnableSwagger");
    expect(() => parseSetting("Updates:PlatformEditions", '{"mac": "Ultimate"}')).toThrow("Updates:PlatformEditions");
  });

  it("layers defaults, environment variables and settings rows, later winning, and says where each came from", () => {
    const { config, sources } = buildConfig(
      // Development: Swagger's default is on there (off in Production), so the ignored "false" below shows.
      {
        Application__Environment: "Development",
        Application__DefaultPageSize: "25",
        Application__MaxPageSize: "50",
        "Application:EnableSwagger": "false",
      },
      [{ name: "Application:MaxPageSize", value: "75" }],
    );
    expect(config["Application:TokenExpiration"]).toBe(30 * 60_000);
    expect(sources["Application:TokenExpiration"]).toBe("default");
    expect(config["Application:DefaultPageSize"]).toBe(25);
    expect(sources["Application:DefaultPageSize"]).toBe("environment");
    expect(config["Application:MaxPageSize"]).toBe(75);
    expect(sources["Application:MaxPageSize"]).toBe("database");
    // Only the `__` spelling is an environment variable (wrangler's .dev.vars drops names with ':').
    expect(config["Application:EnableSwagger"]).toBe(true);
  });

  it("has SPEC's defaults", () => {
    const { config } = buildConfig({}, []);
    expect(config["IpFiltering:BruteForceProtection:MaxRequestsPerTimeFrame"]).toBe(60);
    expect(config["IpFiltering:BruteForceProtection:RequestsBlockDuration"]).toBe(15 * 60_000);
    expect(config["IpFiltering:Whitelist"]).toEqual(["127.0.0.1", "::1"]);
    expect(config["IpFiltering:BruteForceProtection:ExcludedPaths"]).toEqual(
      expect.arrayContaining(["/v1/license/request", "/v1/license/release", "/v1/license/heartbeat", "/v1/auth/login"]),
    );
    expect(config["Application:ApiKeyCacheDuration"]).toBe(3 * 60_000);
    expect(config["Extensions:TokenLifetimeMinutes"]).toBe(10);
    expect(config["Extensions:MaxResourceArtifactBytes"]).toBe(64 * 1024 * 1024);
    expect(config["Updates:PlatformEditions"]).toEqual({ windows: [], mac: ["Ultimate"], linux: ["Ultimate"] });
    expect(Object.keys(settingDefinitions).length).toBeGreaterThan(35);
  });
});

describe("through the service", () => {
  it("answers 500 naming the setting when a stored value is invalid, and recovers when it is fixed", async () => {
    await setSetting("Application:DefaultPageSize", "many");
    try {
      const res = await admin("GET", "/v1/resources");
      expect(res.status).toBe(500);
      expect(res.body["message"]).toContain("Application:DefaultPageSize");
    } finally {
      await setSetting("Application:DefaultPageSize", null);
    }
    expect((await admin("GET", "/v1/resources")).status).toBe(200);
  });

  it("serves the health check at the configured path, outside the API and the OpenAPI document", async () => {
    const health = await call("GET", "/health");
    expect(health.status).toBe(200);
    expect(health.text).toBe("Healthy");
    await setSetting("Application:HealthCheckEndPoint", "/status/live");
    try {
      expect((await call("GET", "/status/live")).text).toBe("Healthy");
      expect((await call("GET", "/health")).status).toBe(404);
    } finally {
      await setSetting("Application:HealthCheckEndPoint", null);
    }
    await setSetting("Application:EnableHealthCheck", "false");
    try {
      expect((await call("GET", "/health")).status).toBe(404);
    } finally {
      await setSetting("Application:EnableHealthCheck", null);
    }
    const doc = await call("GET", "/swagger/v1/swagger.json");
    // The health check is no API route (a release's `/health` figures are, under /v1/products/…).
    expect(Object.keys(doc.body["paths"]).filter((p) => !p.startsWith("/v1/"))).toEqual([]);
    expect(Object.keys(doc.body["paths"]).filter((p) => p === "/health" || p.startsWith("/status"))).toEqual([]);
  });

  it("serves the OpenAPI document and Swagger UI only while Application:EnableSwagger is on", async () => {
    const doc = await call("GET", "/swagger/v1/swagger.json");
    expect(doc.status).toBe(200);
    expect(doc.body["openapi"]).toMatch(/^3\./);
    expect(doc.body["components"]["securitySchemes"]).toEqual({
      ApiKey: { type: "apiKey", in: "header", name: "x-api-key" },
      Bearer: { type: "http", scheme: "bearer", bearerFormat: "JWT", description: expect.stringContaining("RFC8725") },
      PortalSession: {
        type: "apiKey",
        in: "cookie",
        name: "__Host-portal-session",
        description: expect.stringContaining("customer portal"),
      },
    });
    expect(doc.body["paths"]["/v1/resources"]["get"]["parameters"].map((p: { name: string }) => p.name).sort()).toEqual(
      ["filter", "select", "skip", "sort", "take"],
    );
    const ui = await call("GET", "/swagger");
    expect(ui.status).toBe(200);
    expect(ui.text).toContain("swagger-ui");
    await setSetting("Application:EnableSwagger", "false");
    try {
      expect((await call("GET", "/swagger/v1/swagger.json")).status).toBe(404);
      expect((await call("GET", "/swagger")).status).toBe(404);
    } finally {
      await setSetting("Application:EnableSwagger", null);
    }
  });

  it("turns the REST API off with Application:EnableWebApi (404) while the health check stays", async () => {
    await setSetting("Application:EnableWebApi", "false");
    try {
      expect((await call("GET", "/v1/resources", { key: ADMIN.key })).status).toBe(404);
      expect(
        (await call("POST", "/v1/auth/login", { body: { username: "admin", password: ADMIN.password } })).status,
      ).toBe(404);
      expect((await call("GET", "/swagger/v1/swagger.json")).status).toBe(404);
      expect((await call("GET", "/health")).status).toBe(200);
    } finally {
      await setSetting("Application:EnableWebApi", null);
    }
    expect((await call("GET", "/v1/resources", { key: ADMIN.key })).status).toBe(200);
  });
});

describe("enumerations on the wire", () => {
  const table = sqliteTable("things", { id: integer("id").primaryKey(), kind: integer("kind"), name: text("name") });
  const Thing = defineEntity({
    name: "Thing",
    singular: "thing",
    plural: "things",
    table,
    fields: { id: f.id(), kind: f.enumOf("ThingKind", ["Standard", "Demo", "Trial"]), name: f.string() },
  });

  it("writes numbers by default and names with Application:SerializeJSonEnumAsString", () => {
    const numbers = buildConfig({}, []).config;
    const names = buildConfig({ Application__SerializeJSonEnumAsString: "true" }, []).config;
    expect(Thing.toWire({ id: 1, kind: 1, name: "x" }, numbers)).toEqual({ id: 1, kind: 1, name: "x" });
    expect(Thing.toWire({ id: 1, kind: 1, name: "x" }, names)).toEqual({ id: 1, kind: "Demo", name: "x" });
  });

  it("accepts a number or a member name on input and stores the number", () => {
    const parse = (v: unknown) => z.object({ kind: Thing.createInput.shape.kind }).safeParse({ kind: v });
    expect(parse(2).success).toBe(true);
    expect(parse("Trial").success).toBe(true);
    expect(parse(3).success).toBe(false);
    expect(parse("Gold").success).toBe(false);
    expect(Thing.toRow({ kind: "Trial" })).toEqual({ kind: 2 });
    expect(Thing.toRow({ kind: 0, id: 7 })).toEqual({ kind: 0 });
  });
});
