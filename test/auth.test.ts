/**
 * SPEC "Authentication": login, bearer tokens (HS256, exp required, algorithm pinned, logout), API keys (digests,
 * revocation, expiry, the per-isolate cache), the session and signed-in user routes, and the admin bootstrap.
 */
import { env } from "cloudflare:workers";
import { SignJWT, UnsecuredJWT } from "jose";
import { describe, expect, it } from "vitest";
import { ensureAdmin } from "../src/auth/bootstrap";
import { buildConfig } from "../src/kernel/config";
import { ADMIN, admin, call, keyFor, login, movableClock, setSetting } from "./helpers";

const SECRET = new TextEncoder().encode("test-jwt-secret-at-least-32-bytes-long!!");
const moveClock = (await movableClock()).move;

describe("login", () => {
  it("issues a bearer token that carries the user's roles and lasts Application:TokenExpiration", async () => {
    const res = await call("POST", "/v1/auth/login", { body: { username: "ADMIN", password: ADMIN.password } });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ success: true, code: 0, expiresIn: 1800 });
    const [, payload] = (res.body["token"] as string).split(".");
    expect(JSON.parse(atob(payload!.replace(/-/g, "+").replace(/_/g, "/")))).toMatchObject({
      roles: ["Administrator"],
      name: "admin",
    });

    await setSetting("Application:TokenExpiration", "00:10:00");
    try {
      expect(
        (await call("POST", "/v1/auth/login", { body: { username: "admin", password: ADMIN.password } })).body[
          "expiresIn"
        ],
      ).toBe(600);
    } finally {
      await setSetting("Application:TokenExpiration", null);
    }
  });

  it("answers 401 with SPEC's message to a wrong password, an unknown user or no body", async () => {
    for (const body of [{ username: "admin", password: "wrong" }, { username: "nobody", password: "x" }, {}]) {
      const res = await call("POST", "/v1/auth/login", { body });
      expect(res.status).toBe(401);
      expect(res.body).toEqual({
        success: false,
        code: 401,
        message: "Invalid username or password.",
        reason: "invalidLogin",
      });
    }
    expect((await call("POST", "/v1/auth/login")).status).toBe(401);
  });
});

describe("bearer tokens", () => {
  const session = (token: string) => call("GET", "/v1/auth/session", { token });
  const claims = { sub: "x", name: "admin", roles: ["Administrator"], jti: "j1" };

  it("reports user and roles, without permissions, for a bearer token", async () => {
    const res = await session(await login());
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ success: true, code: 0, user: "admin", roles: ["Administrator"] });
  });

  it("refuses an expired token", async () => {
    const token = await login();
    moveClock(31 * 60_000);
    expect((await session(token)).status).toBe(401);
  });

  it("refuses a token at its expiry though it was accepted a second before (the isolate remembers it verified)", async () => {
    const token = await login();
    expect((await session(token)).status).toBe(200);
    moveClock(30 * 60_000 - 1_000);
    expect((await session(token)).status).toBe(200);
    moveClock(1_000);
    expect((await session(token)).status).toBe(401);
  });

  it("refuses tokens with alg none, another algorithm, no exp, another issuer or a changed payload", async () => {
    const now = Math.floor(Date.now() / 1000);
    const unsecured = new UnsecuredJWT(claims)
      .setIssuer("licensing-service")
      .setExpirationTime(now + 600)
      .encode();
    const hs512 = await new SignJWT(claims)
      .setProtectedHeader({ alg: "HS512" })
      .setIssuer("licensing-service")
      .setExpirationTime(now + 600)
      .sign(SECRET);
    const noExp = await new SignJWT(claims)
      .setProtectedHeader({ alg: "HS256" })
      .setIssuer("licensing-service")
      .sign(SECRET);
    const otherIssuer = await new SignJWT(claims)
      .setProtectedHeader({ alg: "HS256" })
      .setIssuer("elsewhere")
      .setExpirationTime(now + 600)
      .sign(SECRET);
    const [head, , signature] = (await login()).split(".");
    const forgedPayload = btoa(JSON.stringify({ ...claims, iss: "licensing-service", exp: now + 600 })).replace(
      /=+$/,
      "",
    );
    for (const token of [unsecured, hs512, noExp, otherIssuer, `${head}.${forgedPayload}.${signature}`]) {
      expect((await session(token)).status, token).toBe(401);
    }
    // The same claims signed properly are accepted: the refusals above are about the flaw, not the claims. The
    // subject must be a user that exists (a deleted user's tokens end: test/account-security.test.ts).
    const users = await admin("GET", `/v1/users?filter=${encodeURIComponent('userName == "admin"')}`);
    const good = await new SignJWT({ ...claims, sub: users.body["users"][0].id })
      .setProtectedHeader({ alg: "HS256" })
      .setIssuer("licensing-service")
      .setExpirationTime(now + 600)
      .sign(SECRET);
    expect((await session(good)).status).toBe(200);
  });

  it("makes a token unusable after logout, leaving other tokens alone", async () => {
    const token = await login();
    const other = await login();
    expect((await call("POST", "/v1/auth/logout", { token, body: {} })).body).toEqual({ success: true, code: 0 });
    expect((await session(token)).status).toBe(401);
    expect((await call("POST", "/v1/auth/logout", { token, body: {} })).status).toBe(401);
    expect((await session(other)).status).toBe(200);
  });
});

describe("API keys", () => {
  it("reports permissions and the key's name in the session", async () => {
    const res = await call("GET", "/v1/auth/session", { key: ADMIN.key });
    expect(res.body).toMatchObject({
      user: "admin",
      roles: ["Administrator"],
      permissions: 15,
      keyName: "Administrator (bootstrap)",
    });
  });

  it("returns the key and client secret once, stores digests and lists a masked key", async () => {
    const user = await admin("POST", "/v1/users", { user: { userName: "keyholder", roles: ["Sales"] } });
    const res = await admin("POST", "/v1/api-keys", {
      apiKey: { name: "ci", ownerId: user.body["userId"], permissions: 9 },
    });
    expect(res.status).toBe(200);
    expect(res.body["key"]).toMatch(/^api_[0-9A-Za-z]{32}$/);
    expect(res.body["clientSecret"]).toMatch(/^[0-9A-Za-z]{40}$/);
    const stored = await env.DB.prepare("SELECT * FROM api_keys WHERE id = ?")
      .bind(res.body["apiKeyId"])
      .first<Record<string, string>>();
    expect(JSON.stringify(stored)).not.toContain(res.body["key"]);
    expect(JSON.stringify(stored)).not.toContain(res.body["clientSecret"]);
    const list = await admin("GET", `/v1/api-keys?filter=${encodeURIComponent('name == "ci"')}`);
    expect(list.body["apiKeys"]).toEqual([
      expect.objectContaining({
        id: res.body["apiKeyId"],
        name: "ci",
        ownerId: user.body["userId"],
        permissions: 9,
        revoked: false,
        key: `${res.body["key"].slice(0, 8)}…`,
      }),
    ]);
    expect(list.body["apiKeys"][0].clientSecret).toBeUndefined();
  });

  it("refuses a key without an owner, with an unknown owner, or with bits outside 0-15", async () => {
    expect((await admin("POST", "/v1/api-keys", { apiKey: { name: "orphan" } })).status).toBe(400);
    const unknown = await admin("POST", "/v1/api-keys", { apiKey: { ownerId: "no-such-user" } });
    expect(unknown.status).toBe(400);
    expect(unknown.body["message"]).toBe("User no-such-user not found (ownerId)");
    expect((await admin("POST", "/v1/api-keys", { apiKey: { ownerId: "x", permissions: 16 } })).status).toBe(400);
    expect(
      (await admin("GET", `/v1/api-keys?filter=${encodeURIComponent('name == "orphan"')}`)).body["totalApiKeysCount"],
    ).toBe(0);
  });

  it("refuses a revoked key at once in this isolate, and elsewhere once the cache duration has passed", async () => {
    const key = await keyFor(["Sales"]);
    expect((await call("GET", "/v1/resources", { key })).status).toBe(200);
    const { id } = (await env.DB.prepare("SELECT id FROM api_keys WHERE key_prefix = ?")
      .bind(`${key.slice(0, 8)}…`)
      .first<{ id: number }>())!;
    // Another isolate revokes it: this isolate's cached validation still holds for Application:ApiKeyCacheDuration.
    await env.DB.prepare("UPDATE api_keys SET revoked = 1 WHERE id = ?").bind(id).run();
    expect((await call("GET", "/v1/resources", { key })).status).toBe(200);
    moveClock(3 * 60_000 + 1000);
    expect((await call("GET", "/v1/resources", { key })).status).toBe(401);

    const second = await keyFor(["Sales"]);
    expect((await call("GET", "/v1/resources", { key: second })).status).toBe(200);
    const { id: secondId } = (await env.DB.prepare("SELECT id FROM api_keys WHERE key_prefix = ?")
      .bind(`${second.slice(0, 8)}…`)
      .first<{ id: number }>())!;
    expect((await admin("PUT", "/v1/api-keys", { apiKey: { id: secondId, revoked: true } })).status).toBe(200);
    expect((await call("GET", "/v1/resources", { key: second })).status).toBe(401);
    // An explicit false is applied (SPEC partial update rule), an omitted one keeps the stored value.
    expect(
      (await admin("PUT", "/v1/api-keys", { apiKey: { id: secondId, description: "still revoked" } })).status,
    ).toBe(200);
    expect((await call("GET", "/v1/resources", { key: second })).status).toBe(401);
    expect((await admin("PUT", "/v1/api-keys", { apiKey: { id: secondId, revoked: false } })).status).toBe(200);
    expect((await call("GET", "/v1/resources", { key: second })).status).toBe(200);
  });

  it("applies a permission change made through the API at once", async () => {
    const key = await keyFor(["Sales"]);
    const { id } = (await env.DB.prepare("SELECT id FROM api_keys WHERE key_prefix = ?")
      .bind(`${key.slice(0, 8)}…`)
      .first<{ id: number }>())!;
    expect((await admin("PUT", "/v1/api-keys", { apiKey: { id, permissions: 8 } })).status).toBe(200);
    expect((await call("GET", "/v1/resources", { key })).status).toBe(403);
    expect(
      (await call("POST", "/v1/resources", { key, body: { resource: { name: "by create-only key" } } })).status,
    ).toBe(200);
  });

  it("refuses a key past its expiration date", async () => {
    const user = await admin("POST", "/v1/users", { user: { userName: "expiring", roles: ["Sales"] } });
    const past = await admin("POST", "/v1/api-keys", {
      apiKey: { ownerId: user.body["userId"], expireDate: "2020-01-01T00:00:00Z" },
    });
    expect((await call("GET", "/v1/resources", { key: past.body["key"] })).status).toBe(401);
    const soon = await admin("POST", "/v1/api-keys", {
      apiKey: { ownerId: user.body["userId"], expireDate: new Date(Date.now() + 60_000).toISOString() },
    });
    expect((await call("GET", "/v1/resources", { key: soon.body["key"] })).status).toBe(200);
    moveClock(61_000);
    expect((await call("GET", "/v1/resources", { key: soon.body["key"] })).status).toBe(401);
  });

  it("reads the key from the header named by Application:ApiKeyHeaderName", async () => {
    await setSetting("Application:ApiKeyHeaderName", "X-Licensing-Key");
    try {
      expect((await call("GET", "/v1/resources", { headers: { "x-licensing-key": ADMIN.key } })).status).toBe(200);
      expect((await call("GET", "/v1/resources", { key: ADMIN.key })).status).toBe(401);
      const doc = await call("GET", "/swagger/v1/swagger.json");
      expect(doc.body["components"]["securitySchemes"]["ApiKey"]).toEqual({
        type: "apiKey",
        in: "header",
        name: "X-Licensing-Key",
      });
    } finally {
      await setSetting("Application:ApiKeyHeaderName", null);
    }
  });
});

describe("the signed-in user", () => {
  it("returns the user with roles, settings and only active API keys", async () => {
    const user = await admin("POST", "/v1/users", {
      user: { userName: "profiled", password: "Old#password1", firstName: "Pat", roles: ["LicenseManager"] },
    });
    const userId = user.body["userId"];
    await admin("POST", `/v1/users/${userId}/settings`, {
      userSetting: { name: "theme", value: "dark", category: "ui" },
    });
    const active = await admin("POST", "/v1/api-keys", { apiKey: { name: "active", ownerId: userId } });
    const revoked = await admin("POST", "/v1/api-keys", { apiKey: { name: "revoked", ownerId: userId } });
    await admin("PUT", "/v1/api-keys", { apiKey: { id: revoked.body["apiKeyId"], revoked: true } });
    // Past its expiry date: not active (the one expiry rule, db/rules.ts keyIsLive).
    await admin("POST", "/v1/api-keys", {
      apiKey: { name: "expired", ownerId: userId, expireDate: "2020-01-01T00:00:00Z" },
    });

    const res = await call("GET", "/v1/auth/user", { token: await login("profiled", "Old#password1") });
    expect(res.status).toBe(200);
    expect(res.body["user"]).toMatchObject({
      id: userId,
      userName: "profiled",
      firstName: "Pat",
      roles: ["LicenseManager"],
    });
    expect(res.body["user"].password).toBeUndefined();
    expect(res.body["user"].settings).toEqual([
      expect.objectContaining({ name: "theme", value: "dark", category: "ui", userId }),
    ]);
    expect(res.body["user"].apiKeys.map((k: { name: string }) => k.name)).toEqual(["active"]);
    expect(res.body["user"].apiKeys[0].key).toBe(`${active.body["key"].slice(0, 8)}…`);
    expect(res.body["user"].lastLogIn).toMatch(/Z$/);
  });

  it("lets users change their own profile and password, but not their roles", async () => {
    await admin("POST", "/v1/users", {
      user: { userName: "selfservice", password: "First#password1", roles: ["Sales"] },
    });
    const token = await login("selfservice", "First#password1");
    const res = await call("POST", "/v1/auth/user", {
      token,
      body: {
        user: { lastName: "Doe", password: "Second#password2", roles: ["Administrator"] },
        currentPassword: "First#password1",
      },
    });
    expect(res.status, res.text).toBe(200);
    expect(res.body["user"]).toMatchObject({ userName: "selfservice", lastName: "Doe", roles: ["Sales"] });
    expect(
      (await call("POST", "/v1/auth/login", { body: { username: "selfservice", password: "First#password1" } })).status,
    ).toBe(401);
    expect(
      (await call("POST", "/v1/auth/login", { body: { username: "selfservice", password: "Second#password2" } }))
        .status,
    ).toBe(200);
  });
});

describe("administrator bootstrap", () => {
  it("created the configured administrator, whose key works with every permission", async () => {
    const users = await admin("GET", `/v1/users?filter=${encodeURIComponent('userName == "admin"')}`);
    expect(users.body["users"]).toEqual([expect.objectContaining({ userName: "admin", roles: ["Administrator"] })]);
    expect((await call("GET", "/v1/auth/session", { key: ADMIN.key })).body["permissions"]).toBe(15);
  });

  it("creates exactly one user and one key when isolates start at once", async () => {
    const { config } = buildConfig(
      { Application__AdminUsername: "root", Application__AdminPassword: "Root#password1" },
      [],
    );
    const logged: string[] = [];
    const log = console.log;
    console.log = (...args: unknown[]) => logged.push(args.join(" "));
    try {
      await Promise.all(Array.from({ length: 8 }, () => ensureAdmin(env.DB, config)));
    } finally {
      console.log = log;
    }
    const users = await env.DB.prepare("SELECT id, roles FROM users WHERE normalized_user_name = 'root'").all<{
      id: string;
      roles: string;
    }>();
    expect(users.results).toHaveLength(1);
    expect(JSON.parse(users.results[0]!.roles)).toEqual(["Administrator"]);
    const keys = await env.DB.prepare("SELECT permissions FROM api_keys WHERE owner_id = ?")
      .bind(users.results[0]!.id)
      .all<{ permissions: number }>();
    expect(keys.results).toEqual([{ permissions: 15 }]);
    // The generated key is written to the log once, and it works.
    const lines = logged.filter((l) => l.includes("Administrator API key for root"));
    expect(lines).toHaveLength(1);
    const key = /(api_[0-9A-Za-z]{32})/.exec(lines[0]!)![1]!;
    expect((await call("GET", "/v1/auth/session", { key })).body).toMatchObject({ user: "root", permissions: 15 });
  });
});
