/**
 * Issue 14, "Secrets and configuration": outside development (`Application:Environment`, Production by default) the
 * service refuses to run, every route answering 500 naming the setting, with a short JwtSecret or EncryptionKey, a
 * secret published in `.dev.vars.example`, or insecure webhook URLs; `PUT /v1/settings` cannot turn those checks
 * off. Swagger is off by default outside development. "Trust at the edges": a guessable JwtSecret, EncryptionKey,
 * AdminApiKey or gateway secret (under 128 bits by the estimate of kernel/config.ts, whatever its length) is refused the same
 * way, the message showing how to generate one; the EncryptionKey must be the base64 of 32 bytes or more.
 *
 * The suite's own Worker runs as Development (vitest.config.ts); these tests call the same Worker entry with a
 * production deployment's variables, as `wrangler deploy` would give it.
 */
import { env } from "cloudflare:workers";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import devVarsExample from "../.dev.vars.example?raw";
import { MIN_SECRET_BYTES, PUBLISHED_SECRETS, settingDefinitions } from "../src/kernel/config";
import { generateApiKey } from "../src/auth/api-key-service";
import { sha256Hex } from "../src/kernel/crypto";
import { ADMIN, admin, setSetting } from "./helpers";
import { fetchAs, production } from "./production-kit";

const withKey = { headers: { "x-api-key": ADMIN.key } };
const grpcWeb = {
  method: "POST",
  headers: { "content-type": "application/grpc-web+proto" },
  body: new Uint8Array([0, 0, 0, 0, 0]),
};

beforeAll(async () => {
  // The administrator and key of the test bindings exist (the Development bootstrap), so production calls can use it.
  expect((await admin("GET", "/v1/info")).status).toBe(200);
});

afterEach(async () => {
  await setSetting("Application:Environment", null);
});

describe("outside development", () => {
  it("runs with strong, unpublished secrets; Swagger and the OpenAPI document are off by default", async () => {
    const vars = production();
    expect((await fetchAs(vars, "/health")).status).toBe(200);
    expect((await fetchAs(vars, "/v1/info", withKey)).status).toBe(200);
    for (const path of ["/swagger", "/swagger/", "/swagger/v1/swagger.json", "/swagger/assets/swagger-ui-bundle.js"]) {
      expect((await fetchAs(vars, path)).status, path).toBe(404);
    }
    // Application:EnableSwagger turns them on.
    const on = production({ Application__EnableSwagger: "true" });
    expect((await fetchAs(on, "/swagger/v1/swagger.json")).status).toBe(200);
    expect((await fetchAs(on, "/swagger")).status).toBe(200);
  });

  const cases: [string, Record<string, string | undefined>, string][] = [
    [
      "a JwtSecret shorter than 32 bytes",
      { Application__JwtSecret: "x".repeat(MIN_SECRET_BYTES - 1) },
      "Application:JwtSecret",
    ],
    ["no JwtSecret", { Application__JwtSecret: undefined }, "Application:JwtSecret"],
    [
      "an EncryptionKey shorter than 32 bytes",
      { Application__EncryptionKey: "short-key" },
      "Application:EncryptionKey",
    ],
    ["no EncryptionKey", { Application__EncryptionKey: undefined }, "Application:EncryptionKey"],
    [
      "the published JwtSecret",
      { Application__JwtSecret: "dev-only-jwt-secret-change-me-0123456789abcdef" },
      "Application:JwtSecret",
    ],
    [
      "the published EncryptionKey",
      { Application__EncryptionKey: "dev-only-encryption-key-change-me" },
      "Application:EncryptionKey",
    ],
    [
      "the published administrator API key",
      { Application__AdminApiKey: "api_DevAdminKey000000000000000000000" },
      "Application:AdminApiKey",
    ],
    [
      "the published administrator password",
      { Application__AdminUsername: "root", Application__AdminPassword: "Admin-12345678" },
      "Application:AdminPassword",
    ],
    [
      "the published gateway secret",
      { IpFiltering__GatewaySecret: "dev-only-gateway-secret-change-me-0123456789" },
      "IpFiltering:GatewaySecret",
    ],
    ["insecure webhook URLs", { Webhooks__AllowInsecureUrls: "true" }, "Webhooks:AllowInsecureUrls"],
  ];
  for (const [what, vars, setting] of cases) {
    it(`refuses to run with ${what}: every route answers 500 naming ${setting}`, async () => {
      const variables = production(vars);
      for (const [path, init] of [
        ["/health", {}],
        ["/v1/info", withKey],
        [
          "/v1/auth/login",
          {
            method: "POST",
            headers: { "content-type": "application/json" },
            body: JSON.stringify({ username: "a", password: "b" }),
          },
        ],
        ["/v1/updates/check", {}],
        ["/licensing.v1.LicenseServer/ValidateLicense", grpcWeb],
      ] as const) {
        const res = await fetchAs(variables, path, init as RequestInit);
        expect(res.status, `${path}: ${res.text}`).toBe(500);
        expect(res.text, path).toContain(setting);
      }
      // The same variables run as Development.
      expect(
        (await fetchAs({ ...variables, Application__Environment: "Development" }, "/v1/info", withKey)).status,
      ).toBe(200);
    });
  }

  it("creates no administrator from a published password before refusing", async () => {
    await fetchAs(
      production({ Application__AdminUsername: "published-admin", Application__AdminPassword: "Admin-12345678" }),
      "/health",
    );
    const row = await env.DB.prepare(
      "SELECT count(*) AS n FROM users WHERE normalized_user_name = 'published-admin'",
    ).first<{ n: number }>();
    expect(row?.n).toBe(0);
  });

  it("takes Application:Environment from the deployment only: a settings row cannot switch to Development", async () => {
    await setSetting("Application:Environment", "Development");
    const res = await fetchAs(production({ Application__EncryptionKey: "short-key" }), "/v1/info", withKey);
    expect(res.status).toBe(500);
    expect(res.text).toContain("Application:EncryptionKey");
  });

  it("PUT /v1/settings cannot change the environment nor turn on insecure webhook URLs", async () => {
    const put = (settings: unknown) =>
      fetchAs(production(), "/v1/settings", {
        method: "PUT",
        headers: { "x-api-key": ADMIN.key, "content-type": "application/json" },
        body: JSON.stringify({ settings }),
      });
    const environment = await put([{ name: "Application:Environment", value: "Development" }]);
    expect(environment.status).toBe(400);
    expect(environment.text).toContain("Setting Application:Environment is read-only through the API");
    const insecure = await put([{ name: "Webhooks:AllowInsecureUrls", value: "true" }]);
    expect(insecure.status).toBe(400);
    expect(insecure.text).toContain("Webhooks:AllowInsecureUrls");
    const row = await env.DB.prepare(
      "SELECT count(*) AS n FROM settings WHERE name = 'Webhooks:AllowInsecureUrls'",
    ).first<{ n: number }>();
    expect(row?.n).toBe(0);
    // The service still runs.
    expect((await fetchAs(production(), "/v1/info", withKey)).status).toBe(200);
  });
});

describe("guessable secrets outside development", () => {
  const health = (vars: Record<string, string | undefined>) => fetchAs(production(vars), "/health");
  const base64 = (bytes: number, alphabet: "standard" | "url" = "standard") => {
    const text = btoa(String.fromCharCode(...crypto.getRandomValues(new Uint8Array(bytes))));
    return alphabet === "url" ? text.replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "") : text;
  };
  const hex = (bytes: number) =>
    Array.from(crypto.getRandomValues(new Uint8Array(bytes)), (b) => b.toString(16).padStart(2, "0")).join("");

  it("refuses Application:AdminApiKey=admin: every route answers 500 naming it, and admin never becomes a key", async () => {
    const bootstrap = {
      Application__AdminUsername: "weak-key-admin",
      Application__AdminPassword: "Weak-key-admin#password1",
      Application__AdminApiKey: "admin",
    };
    for (const path of ["/health", "/v1/info", "/v1/api-keys"]) {
      const res = await fetchAs(production(bootstrap), path, { headers: { "x-api-key": "admin" } });
      expect(res.status, `${path}: ${res.text}`).toBe(500);
      expect(res.text).toContain("Application:AdminApiKey");
      expect(res.text).toContain("api_$(openssl rand -hex 24)");
    }
    // Nothing was bootstrapped from it: a safe deployment does not know the key, nor the administrator.
    expect((await fetchAs(production(), "/v1/info", { headers: { "x-api-key": "admin" } })).status).toBe(401);
    const created = await env.DB.prepare(
      "SELECT (SELECT count(*) FROM users WHERE normalized_user_name = 'weak-key-admin') + (SELECT count(*) FROM api_keys WHERE key_digest = ?) AS n",
    )
      .bind(await sha256Hex("admin"))
      .first<{ n: number }>();
    expect(created?.n).toBe(0);
  });

  // Long enough for every length rule, yet guessable: repeats, sequences, one character, encoded zeros.
  const guessable: [string, string[]][] = [
    [
      "Application:JwtSecret",
      [
        "passwordpassword".repeat(3),
        "a".repeat(64),
        "0123456789abcdef".repeat(4),
        "abcdefghijklmnopqrstuvwxyz0123456789",
      ],
    ],
    ["Application:EncryptionKey", [`${"A".repeat(43)}=`, "0123456789abcdef".repeat(4), "passwordpassword".repeat(3)]],
    [
      "Application:AdminApiKey",
      [`api_${"a".repeat(40)}`, `api_passwordpassword${"password".repeat(4)}`, "api_0123456789abcdef0123456789abcdef"],
    ],
    ["IpFiltering:GatewaySecret", ["passwordpassword".repeat(4), "x".repeat(100), "0123456789abcdef".repeat(4)]],
  ];
  for (const [setting, values] of guessable) {
    it(`refuses a guessable ${setting} of any length, naming it and how to generate one`, async () => {
      for (const value of values) {
        const res = await health({ [setting.replaceAll(":", "__")]: value });
        expect(res.status, value).toBe(500);
        expect(res.text, value).toContain(setting);
        expect(res.text, value).toContain("openssl rand -");
      }
    });
  }

  it("refuses a passphrase wrapped in base64 as Application:EncryptionKey or Application:JwtSecret (issue 36, N12)", async () => {
    const wrapped = btoa("correct horse battery staple, correct horse battery staple!");
    for (const setting of ["Application:EncryptionKey", "Application:JwtSecret"]) {
      const res = await health({ [setting.replaceAll(":", "__")]: wrapped });
      expect(res.status, setting).toBe(500);
      expect(res.text, setting).toContain(setting);
    }
  });

  it("refuses a guessable payment webhook secret, naming it and how to get a strong one (issue 36, N13)", async () => {
    for (const [setting, how] of [
      ["Commerce:Stripe:WebhookSecret", "whsec_"],
      ["Commerce:Paddle:WebhookSecret", "Paddle"],
      ["Commerce:LemonSqueezy:WebhookSecret", "openssl rand -hex 20"],
    ] as const) {
      for (const value of ["secret", "x", "passwordpassword".repeat(2)]) {
        const res = await health({ [setting.replaceAll(":", "__")]: value });
        expect(res.status, `${setting} ${value}`).toBe(500);
        expect(res.text).toContain(setting);
        expect(res.text).toContain(how);
      }
    }
    const strong = {
      Commerce__Stripe__WebhookSecret: `whsec_${base64(24)}`,
      Commerce__Paddle__WebhookSecret: `pdl_ntfset_01j${hex(8)}_${base64(24)}`,
      Commerce__LemonSqueezy__WebhookSecret: hex(20),
    };
    const res = await fetchAs(production(strong), "/v1/info", withKey);
    expect(res.status, res.text).toBe(200);
  });

  it("refuses an Application:EncryptionKey that is not the base64 of 32 bytes, however random", async () => {
    for (const value of [`${hex(20)}!${hex(20)}`, base64(31), "random words are not a key, 9f1c2e7a44b0d3c8e1f2"]) {
      const res = await health({ Application__EncryptionKey: value });
      expect(res.status, value).toBe(500);
      expect(res.text, value).toContain("Application:EncryptionKey");
      expect(res.text, value).toContain("openssl rand -base64 32");
    }
  });

  it("runs with generated values: openssl rand -base64 32 or -hex 32, and the service's own API key form", async () => {
    for (const vars of [
      {
        Application__JwtSecret: base64(32),
        Application__EncryptionKey: base64(32),
        IpFiltering__GatewaySecret: base64(32),
        Application__AdminApiKey: generateApiKey(),
      },
      {
        Application__JwtSecret: hex(32),
        Application__EncryptionKey: hex(32),
        IpFiltering__GatewaySecret: hex(32),
        Application__AdminApiKey: `api_${hex(24)}`,
      },
      {
        Application__JwtSecret: base64(32, "url"),
        Application__EncryptionKey: base64(32, "url"),
        IpFiltering__GatewaySecret: base64(32, "url"),
        Application__AdminApiKey: generateApiKey(),
      },
    ]) {
      const res = await fetchAs(production(vars), "/v1/info", withKey);
      expect(res.status, `${JSON.stringify(vars)}: ${res.text}`).toBe(200);
    }
  });

  it("bootstraps the administrator with a generated Application:AdminApiKey, which then works", async () => {
    const key = generateApiKey();
    const vars = production({
      Application__AdminUsername: "generated-key-admin",
      Application__AdminPassword: "Generated-key-admin#password1",
      Application__AdminApiKey: key,
    });
    expect((await fetchAs(vars, "/health")).status).toBe(200);
    expect((await fetchAs(production(), "/v1/info", { headers: { "x-api-key": key } })).status).toBe(200);
  });

  it("leaves Development free to use any value", async () => {
    const weak = {
      Application__JwtSecret: "a".repeat(40),
      Application__EncryptionKey: "dev",
      IpFiltering__GatewaySecret: "x",
    };
    expect(
      (await fetchAs({ ...production(weak), Application__Environment: "Development" }, "/v1/info", withKey)).status,
    ).toBe(200);
  });
});

describe("the published values", () => {
  it("lists every secret value of .dev.vars.example, and .dev.vars.example runs as Development", () => {
    const values = Object.fromEntries(
      devVarsExample
        .split("\n")
        .filter((line) => /^\w+=/.test(line))
        .map((line) => [line.slice(0, line.indexOf("=")), line.slice(line.indexOf("=") + 1)]),
    );
    expect(values["Application__Environment"]).toBe("Development");
    const secrets = Object.entries(settingDefinitions)
      .filter(([, definition]) => "secret" in definition && definition.secret)
      .map(([name]) => name.replaceAll(":", "__"));
    const published = secrets.filter((name) => values[name] !== undefined);
    expect(published.length).toBeGreaterThanOrEqual(4);
    for (const name of published) expect(PUBLISHED_SECRETS.has(values[name] as string), name).toBe(true);
  });
});
