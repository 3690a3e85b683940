/**
 * `/v1/settings` through the API (CONTRACT sections 1, 3 and 7): every setting with its effective value and source,
 * secrets never returned nor written, changes validated whole and written in one batch, applied at once here and
 * within Application:SettingsCacheSeconds in other isolates; and what a change does to the service.
 */
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it } from "vitest";
import { clock } from "../src/kernel/clock";
import { settingDefinitions } from "../src/kernel/config";
import { ADMIN, admin, call, countRows, keyFor, setSetting } from "./helpers";

type Setting = {
  name: string;
  value?: string;
  source: string;
  type: string;
  readOnly: boolean;
  isSecret: boolean;
  isSet: boolean;
  category: string;
  group?: string;
};

async function settingsByName(): Promise<Record<string, Setting>> {
  // The whole list page by page, whatever page sizes a test set (the list conventions apply to this list too).
  const all: Setting[] = [];
  for (;;) {
    const res = await admin("GET", `/v1/settings?take=1000&skip=${all.length}`);
    expect(res.status, res.text).toBe(200);
    all.push(...(res.body["settings"] as Setting[]));
    if (all.length >= res.body["totalSettingsCount"] || res.body["settings"].length === 0) break;
  }
  return Object.fromEntries(all.map((s) => [s.name, s]));
}

function put(settings: { name: string; value: string | null }[]) {
  return admin("PUT", "/v1/settings", { settings });
}

/** Settings these tests change, returned to their environment or default value after each test. */
const touched = [
  "Application:DefaultPageSize",
  "Application:MaxPageSize",
  "Application:EnableSwagger",
  "Application:LogRetentionDays",
  "Application:HealthCheckEndPoint",
  "Updates:FeedCacheSeconds",
];
afterEach(async () => {
  await put(touched.map((name) => ({ name, value: null })));
});

describe("GET /v1/settings", () => {
  it("lists every setting once, in declaration order, with its value as text, type, source and description", async () => {
    const res = await admin("GET", "/v1/settings");
    expect(res.body).toMatchObject({
      success: true,
      code: 0,
      totalSettingsCount: Object.keys(settingDefinitions).length,
    });
    expect(res.body["settings"].map((s: Setting) => s.name)).toEqual(Object.keys(settingDefinitions));
    const all = await settingsByName();
    // wrangler.toml [vars] and the test bindings are environment variables; the rest are defaults.
    expect(all["Application:ApiKeyCacheDuration"]).toMatchObject({
      value: "00:03:00",
      type: "duration",
      source: "environment",
      readOnly: false,
      isSecret: false,
      isSet: true,
    });
    expect(all["Webhooks:AllowInsecureUrls"]).toMatchObject({ value: "true", type: "boolean", source: "environment" });
    expect(all["Application:LogRetentionDays"]).toMatchObject({
      value: "30",
      type: "integer",
      source: "default",
      category: "Application",
    });
    expect(all["Licensing:UserKeyFormat"]).toMatchObject({
      value: "XXXXX-XXXXX-XXXXX-XXXXX-XXXXX",
      type: "string",
      source: "default",
    });
    expect(all["Updates:PlatformEditions"]).toMatchObject({ type: "json", source: "default" });
    expect(JSON.parse(all["Updates:PlatformEditions"]!.value!)).toEqual({
      windows: [],
      mac: ["Ultimate"],
      linux: ["Ultimate"],
    });
    expect(all["IpFiltering:Whitelist"]).toMatchObject({ type: "list", source: "environment" });
    expect(all["IpFiltering:Whitelist"]!.group).toBeUndefined();
    expect(JSON.parse(all["IpFiltering:Whitelist"]!.value!)).toEqual(["127.0.0.1", "::1"]);
    expect(all["IpFiltering:BruteForceProtection:Enabled"]).toMatchObject({
      category: "IpFiltering",
      group: "BruteForceProtection",
    });
    // An optional setting without a value has none.
    expect(all["Email:From"]).toMatchObject({ isSet: false, source: "default" });
    expect(all["Email:From"]!.value).toBeUndefined();
  });

  it("never returns a secret's value, in JSON or TOON, and says only whether it is set", async () => {
    const all = await settingsByName();
    for (const name of [
      "Application:JwtSecret",
      "Application:EncryptionKey",
      "Application:AdminPassword",
      "Application:AdminApiKey",
    ]) {
      expect(all[name], name).toMatchObject({ isSecret: true, isSet: true, readOnly: true, source: "environment" });
      expect(all[name]!.value, name).toBeUndefined();
    }
    const secrets = ["test-jwt-secret-at-least-32-bytes-long!!", "test-encryption-key", ADMIN.password, ADMIN.key];
    for (const accept of ["application/json", "application/toon"]) {
      const res = await call("GET", "/v1/settings", { key: ADMIN.key, headers: { accept } });
      expect(res.status).toBe(200);
      for (const secret of secrets) expect(res.text, `${accept} leaks a secret`).not.toContain(secret);
    }
    // Null properties shown (IgnoreJSonDefaultValues off) still carry no secret.
    await setSetting("Application:IgnoreJSonDefaultValues", "false");
    try {
      const res = await admin("GET", "/v1/settings");
      for (const secret of secrets) expect(res.text).not.toContain(secret);
    } finally {
      await setSetting("Application:IgnoreJSonDefaultValues", null);
    }
  });

  it("is for administrators only", async () => {
    expect((await call("GET", "/v1/settings", { key: await keyFor(["LicenseManager"]) })).status).toBe(403);
    expect(
      (
        await call("PUT", "/v1/settings", {
          key: await keyFor(["Sales"]),
          body: { settings: [{ name: "Application:DefaultPageSize", value: "1" }] },
        })
      ).status,
    ).toBe(403);
    expect((await settingsByName())["Application:DefaultPageSize"]!.value).toBe("100");
  });
});

describe("PUT /v1/settings", () => {
  it("changes the service at once: the default page size of lists", async () => {
    for (const name of ["p1", "p2", "p3"]) await admin("POST", "/v1/resources", { resource: { name } });
    const res = await put([{ name: "Application:DefaultPageSize", value: "2" }]);
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({
      success: true,
      code: 0,
      settings: [{ name: "Application:DefaultPageSize", value: "2", source: "database" }],
    });
    const page = await admin("GET", "/v1/resources");
    expect(page.body["resources"]).toHaveLength(2);
    expect(page.body["totalResourcesCount"]).toBeGreaterThanOrEqual(3);
    // null removes the stored value: the environment's 100 applies again.
    const back = await put([{ name: "Application:DefaultPageSize", value: null }]);
    expect(back.body["settings"]).toEqual([
      expect.objectContaining({ name: "Application:DefaultPageSize", value: "100", source: "environment" }),
    ]);
    expect((await admin("GET", "/v1/resources")).body["resources"].length).toBeGreaterThanOrEqual(3);
  });

  it("switches Swagger off and on", async () => {
    expect((await put([{ name: "Application:EnableSwagger", value: "false" }])).status).toBe(200);
    expect((await call("GET", "/swagger")).status).toBe(404);
    expect((await call("GET", "/swagger/v1/swagger.json")).status).toBe(404);
    expect((await put([{ name: "Application:EnableSwagger", value: null }])).status).toBe(200);
    expect((await call("GET", "/swagger")).status).toBe(200);
  });

  it("layers database over environment over default, and removing the row restores the layer below", async () => {
    expect(
      (
        await put([
          { name: "Application:MaxPageSize", value: "2" },
          { name: "Application:LogRetentionDays", value: "7" },
        ])
      ).status,
    ).toBe(200);
    let all = await settingsByName();
    expect(all["Application:MaxPageSize"]).toMatchObject({ value: "2", source: "database" });
    expect(all["Application:LogRetentionDays"]).toMatchObject({ value: "7", source: "database" });
    for (const name of ["m1", "m2", "m3"]) await admin("POST", "/v1/resources", { resource: { name } });
    expect((await admin("GET", "/v1/resources?take=50")).body["resources"]).toHaveLength(2);
    await put([
      { name: "Application:MaxPageSize", value: null },
      { name: "Application:LogRetentionDays", value: null },
    ]);
    all = await settingsByName();
    expect(all["Application:MaxPageSize"]).toMatchObject({ value: "1000", source: "environment" });
    expect(all["Application:LogRetentionDays"]).toMatchObject({ value: "30", source: "default" });
  });

  it("stores what setSetting stores: one row per name, updated in place", async () => {
    await put([{ name: "Application:HealthCheckEndPoint", value: "/status/live" }]);
    await put([{ name: "Application:HealthCheckEndPoint", value: "/status/ready" }]);
    const rows = await env.DB.prepare(
      "SELECT name, value, category, type FROM settings WHERE name = 'Application:HealthCheckEndPoint'",
    ).all();
    expect(rows.results).toEqual([
      { name: "Application:HealthCheckEndPoint", value: "/status/ready", category: "Application", type: "string" },
    ]);
    expect((await call("GET", "/status/ready")).text).toBe("Healthy");
    // The helper's row and the API's row are the same thing: either one is read back by GET.
    await setSetting("Application:HealthCheckEndPoint", "/status/helper");
    expect((await settingsByName())["Application:HealthCheckEndPoint"]).toMatchObject({
      value: "/status/helper",
      source: "database",
    });
  });

  it("reports the parsed value, in a form PUT accepts back", async () => {
    await put([{ name: "Application:DefaultPageSize", value: " 7 " }]);
    const setting = (await settingsByName())["Application:DefaultPageSize"]!;
    expect(setting).toMatchObject({ value: "7", source: "database" });
    expect((await put([{ name: "Application:DefaultPageSize", value: setting.value! }])).status).toBe(200);
  });

  it("applies a change made by another isolate within Application:SettingsCacheSeconds", async () => {
    for (const name of ["i1", "i2"]) await admin("POST", "/v1/resources", { resource: { name } });
    await admin("GET", "/v1/resources"); // this isolate caches the current settings
    const now = new Date().toISOString();
    // Another isolate's PUT: the row changes, this isolate's cache is not told.
    await env.DB.prepare(
      "INSERT INTO settings (name, value, read_only, created_at, updated_at) VALUES ('Application:DefaultPageSize', '1', 0, ?, ?)",
    )
      .bind(now, now)
      .run();
    expect((await admin("GET", "/v1/resources")).body["resources"].length).toBeGreaterThan(1);
    const realNow = clock.now;
    clock.now = () => new Date(realNow().getTime() + 6_000);
    try {
      expect((await admin("GET", "/v1/resources")).body["resources"]).toHaveLength(1);
    } finally {
      clock.now = realNow;
    }
  });

  describe("refuses, naming the setting, and writes nothing", () => {
    async function refused(settings: { name: string; value: string | null }[], message: string | RegExp) {
      const before = await countRows("settings");
      const res = await put(settings);
      expect(res.status, res.text).toBe(400);
      expect(res.body).toMatchObject({ success: false, code: 400 });
      expect(res.body["message"]).toMatch(message);
      expect(await countRows("settings")).toBe(before);
      expect((await settingsByName())["Application:DefaultPageSize"]).toMatchObject({
        value: "100",
        source: "environment",
      });
    }

    it("an unknown setting, even beside a valid change", () =>
      refused(
        [
          { name: "Application:DefaultPageSize", value: "5" },
          { name: "Application:NoSuchThing", value: "1" },
        ],
        "Unknown setting Application:NoSuchThing",
      ));

    it("a value that does not parse", () =>
      refused(
        [
          { name: "Application:DefaultPageSize", value: "5" },
          { name: "Application:TokenExpiration", value: "soon" },
        ],
        "Invalid value for setting Application:TokenExpiration: expected a duration",
      ));

    it("every problem at once", () =>
      refused(
        [
          { name: "Application:DefaultPageSize", value: "many" },
          { name: "Nope", value: "1" },
        ],
        /Application:DefaultPageSize.*; Unknown setting Nope/,
      ));

    it("a secret: secrets stay in wrangler secrets, never in a D1 row", () =>
      refused(
        [{ name: "Application:JwtSecret", value: "a-new-secret-that-is-long-enough-000" }],
        "Setting Application:JwtSecret is read-only through the API; set the environment variable or secret Application__JwtSecret",
      ));

    it("Application:EnableWebApi, which would lock the API out of itself", () =>
      refused([{ name: "Application:EnableWebApi", value: "false" }], "Application:EnableWebApi is read-only"));

    it("the same setting twice", () =>
      refused(
        [
          { name: "Application:DefaultPageSize", value: "5" },
          { name: "Application:DefaultPageSize", value: "6" },
        ],
        "Setting Application:DefaultPageSize appears more than once",
      ));

    it("a body that does not match the schema (problem details)", async () => {
      for (const body of [
        { settings: [] },
        { settings: [{ name: "Application:DefaultPageSize", value: 5 }] },
        { settings: [{ name: "Application:DefaultPageSize" }] },
        {},
      ]) {
        const res = await admin("PUT", "/v1/settings", body);
        expect(res.status, JSON.stringify(body)).toBe(400);
        expect(res.headers.get("content-type")).toContain("application/problem+json");
      }
      expect(await countRows("settings")).toBe(0);
    });
  });
});
