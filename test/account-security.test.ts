/**
 * Accounts and tokens (issue 14), through the public interface: credential changes need the current password; a
 * password change, a removed role and a deletion end the user's bearer tokens at once (REST, the deferred check of
 * the licensing routes, and gRPC); passwords have a minimum length; a bootstrapped administrator and its key never
 * come back once deleted or renamed, and a generated key is printed once.
 */
import { env, exports } from "cloudflare:workers";
import { Code, type ConnectError, createClient } from "@connectrpc/connect";
import { createGrpcWebTransport } from "@connectrpc/connect-web";
import { describe, expect, it } from "vitest";
import { ensureAdmin } from "../src/auth/bootstrap";
import { buildConfig } from "../src/kernel/config";
import { LicenseServer } from "../src/gen/licensing/v1/license_server_pb";
import { BASE, admin, call, login } from "./helpers";

const grpc = createClient(
  LicenseServer,
  createGrpcWebTransport({
    baseUrl: BASE,
    fetch: (input, init) =>
      exports.default.fetch(input as RequestInfo, {
        ...init,
        ...(init?.redirect === "error" ? { redirect: "manual" as const } : {}),
      }),
  }),
);

async function newUser(userName: string, password: string, roles: string[] = ["Sales"]): Promise<string> {
  const res = await admin("POST", "/v1/users", { user: { userName, password, roles } });
  expect(res.status, res.text).toBe(200);
  return res.body["userId"] as string;
}

const session = (token: string) => call("GET", "/v1/auth/session", { token });
/** A licensing route with the deferred logout check (one D1 round trip): 401 for an ended token, 525 otherwise. */
const validate = (token: string) =>
  call("POST", "/v1/license/validate", { token, body: { userKey: "NOPE1-NOPE2-NOPE3-NOPE4-NOPE5" } });
async function grpcCode(token: string): Promise<Code> {
  const e = await grpc
    .validateLicense({ userKey: "NOPE1-NOPE2-NOPE3-NOPE4-NOPE5" }, { headers: { authorization: `Bearer ${token}` } })
    .catch((err: unknown) => err);
  return (e as ConnectError).code;
}

async function expectEnded(token: string): Promise<void> {
  expect((await session(token)).status).toBe(401);
  expect((await validate(token)).status).toBe(401);
  expect(await grpcCode(token)).toBe(Code.Unauthenticated);
}

async function expectLive(token: string): Promise<void> {
  expect((await session(token)).status).toBe(200);
  expect((await validate(token)).status).toBe(525);
  expect(await grpcCode(token)).toBe(Code.NotFound);
}

describe("POST /v1/auth/user", () => {
  it("changes the password, email or user name only with the current password", async () => {
    await newUser("careful", "Careful#password1");
    const token = await login("careful", "Careful#password1");
    const change = (user: Record<string, unknown>, currentPassword?: string) =>
      call("POST", "/v1/auth/user", {
        token,
        body: { user, ...(currentPassword !== undefined ? { currentPassword } : {}) },
      });

    for (const user of [{ password: "Stolen#password9" }, { email: "thief@example.com" }, { userName: "taken-over" }]) {
      const missing = await change(user);
      expect(missing.status, JSON.stringify(user)).toBe(400);
      expect(missing.body["message"]).toBe(
        "The current password is required to change the password, email or user name.",
      );
      const wrong = await change(user, "Not-the-password");
      expect(wrong.status).toBe(400);
      expect(wrong.body["message"]).toBe("The current password is not correct.");
    }
    // Nothing changed.
    expect((await call("GET", "/v1/auth/user", { token })).body["user"]).toMatchObject({ userName: "careful" });
    expect((await call("GET", "/v1/auth/user", { token })).body["user"]["email"]).toBeUndefined();
    // Other fields, and the same user name sent back, need no password.
    expect((await change({ lastName: "Careful", userName: "careful" })).status).toBe(200);
    // With the current password the change goes through.
    const ok = await change({ email: "careful@example.com" }, "Careful#password1");
    expect(ok.status, ok.text).toBe(200);
    expect(ok.body["user"]).toMatchObject({ email: "careful@example.com", lastName: "Careful" });
  });

  it("counts a wrong current password as a failed login, so a stolen token cannot guess it", async () => {
    await newUser("guessed", "Guessed#password1");
    const ip = "198.18.9.1";
    const token = await login("guessed", "Guessed#password1");
    for (let i = 0; i < 5; i++) {
      const res = await call("POST", "/v1/auth/user", {
        token,
        headers: { "cf-connecting-ip": ip },
        body: { user: { password: "Stolen#password9" }, currentPassword: `guess-${i}-xx` },
      });
      expect(res.status).toBe(400);
    }
    const blocked = await call("POST", "/v1/auth/user", {
      token,
      headers: { "cf-connecting-ip": ip },
      body: { user: { password: "Stolen#password9" }, currentPassword: "Guessed#password1" },
    });
    expect(blocked.status).toBe(500);
    expect(
      (
        await call("POST", "/v1/auth/login", {
          headers: { "cf-connecting-ip": ip },
          body: { username: "guessed", password: "Guessed#password1" },
        })
      ).status,
    ).toBe(500);
  });
});

describe("ending a user's bearer tokens", () => {
  it("a password change on the own profile ends every token of the user at once, REST and gRPC; a new sign-in works", async () => {
    await newUser("rotator", "Rotator#password1");
    const [a, b] = [await login("rotator", "Rotator#password1"), await login("rotator", "Rotator#password1")];
    const other = await newUser("bystander", "Bystander#password1").then(() =>
      login("bystander", "Bystander#password1"),
    );
    await expectLive(a);
    const res = await call("POST", "/v1/auth/user", {
      token: a,
      body: { user: { password: "Rotator#password2" }, currentPassword: "Rotator#password1" },
    });
    expect(res.status, res.text).toBe(200);
    await expectEnded(a);
    await expectEnded(b);
    await expectLive(other);
    // Signing in again right away (same second) gives a token that works.
    await expectLive(await login("rotator", "Rotator#password2"));
  });

  it("an administrator's password change, a removed role and a deletion end the user's tokens; an added role does not", async () => {
    const id = await newUser("managed", "Managed#password1", ["Sales", "LicenseManager"]);
    let token = await login("managed", "Managed#password1");
    expect((await admin("POST", `/v1/users/${id}/roles`, { roles: ["Customer"] })).status).toBe(200);
    await expectLive(token);

    expect((await admin("DELETE", `/v1/users/${id}/roles`, { roles: ["LicenseManager"] })).status).toBe(200);
    await expectEnded(token);

    token = await login("managed", "Managed#password1");
    await expectLive(token);
    expect((await admin("PUT", "/v1/users", { user: { id, roles: ["Customer"] } })).status).toBe(200);
    await expectEnded(token);

    token = await login("managed", "Managed#password1");
    expect((await admin("PUT", "/v1/users", { user: { id, city: "Oslo" } })).status).toBe(200);
    await expectLive(token);
    expect((await admin("PUT", "/v1/users", { user: { id, password: "Managed#password2" } })).status).toBe(200);
    await expectEnded(token);

    token = await login("managed", "Managed#password2");
    await expectLive(token);
    expect((await admin("DELETE", `/v1/users/${id}`)).status).toBe(200);
    await expectEnded(token);
  });
});

describe("passwords", () => {
  it("need at least 12 characters on create and on change (administrator and own profile)", async () => {
    const short = await admin("POST", "/v1/users", { user: { userName: "shorty", password: "Short#pass1" } });
    expect(short.status).toBe(400);
    expect(JSON.stringify(short.body)).toContain("user.password");
    const id = await newUser("longer", "Long#password");
    expect((await admin("PUT", "/v1/users", { user: { id, password: "Short#pass1" } })).status).toBe(400);
    const token = await login("longer", "Long#password");
    expect(
      (
        await call("POST", "/v1/auth/user", {
          token,
          body: { user: { password: "Short#pass1" }, currentPassword: "Long#password" },
        })
      ).status,
    ).toBe(400);
    expect(await login("longer", "Long#password")).toMatch(/^ey/);
  });

  it("a configured administrator password shorter than 12 characters is refused, naming the setting", async () => {
    const { config } = buildConfig(
      { Application__AdminUsername: "weakling", Application__AdminPassword: "Admin-12345" },
      [],
    );
    await expect(ensureAdmin(env.DB, config)).rejects.toThrow(/Application:AdminPassword/);
    expect(
      await env.DB.prepare("SELECT count(*) AS n FROM users WHERE normalized_user_name = 'weakling'").first("n"),
    ).toBe(0);
  });
});

describe("the administrator bootstrap", () => {
  it("never brings back a deleted or renamed key, nor a deleted account, and prints a generated key once", async () => {
    const logged: string[] = [];
    const log = console.log;
    console.log = (...args: unknown[]) => logged.push(args.join(" "));
    try {
      // Each call differs in its fixed key, as a new isolate or a changed secret would: none is remembered in memory.
      const start = (fixedKey?: string) =>
        ensureAdmin(
          env.DB,
          buildConfig(
            {
              Application__AdminUsername: "phoenix",
              Application__AdminPassword: "Phoenix#password1",
              ...(fixedKey ? { Application__AdminApiKey: fixedKey } : {}),
            },
            [],
          ).config,
        );
      await start();
      const printed = logged.filter((l) => l.includes("Administrator API key for phoenix"));
      expect(printed).toHaveLength(1);
      const key = /(api_[0-9A-Za-z]{32})/.exec(printed[0]!)![1]!;
      expect((await call("GET", "/v1/auth/session", { key })).body).toMatchObject({ user: "phoenix", permissions: 15 });

      // Renamed: a second start (with another fixed key) creates no key.
      const owner = (await env.DB.prepare("SELECT id FROM users WHERE normalized_user_name = 'phoenix'").first<{
        id: string;
      }>())!.id;
      const keys = await admin("GET", `/v1/api-keys?filter=${encodeURIComponent(`ownerId == "${owner}"`)}`);
      expect(keys.body["apiKeys"]).toHaveLength(1);
      const phoenixKey = keys.body["apiKeys"][0];
      expect((await admin("PUT", "/v1/api-keys", { apiKey: { id: phoenixKey.id, name: "renamed" } })).status).toBe(200);
      await start("api_Phoenix1Key000000000000000000000");
      expect((await call("GET", "/v1/auth/session", { key: "api_Phoenix1Key000000000000000000000" })).status).toBe(401);

      // Deleted: never comes back, neither with a fixed nor with a generated key.
      expect((await admin("DELETE", `/v1/api-keys/${phoenixKey.id}`)).status).toBe(200);
      await start("api_Phoenix2Key000000000000000000000");
      expect((await call("GET", "/v1/auth/session", { key: "api_Phoenix2Key000000000000000000000" })).status).toBe(401);
      await start("api_Phoenix3Key000000000000000000000");
      expect(await env.DB.prepare("SELECT count(*) AS n FROM api_keys WHERE owner_id = ?").bind(owner).first("n")).toBe(
        0,
      );

      // The account itself, deleted, is not created again.
      expect((await admin("DELETE", `/v1/users/${owner}`)).status).toBe(200);
      await start("api_Phoenix4Key000000000000000000000");
      expect(
        await env.DB.prepare("SELECT count(*) AS n FROM users WHERE normalized_user_name = 'phoenix'").first("n"),
      ).toBe(0);
      expect(logged.filter((l) => l.includes("Administrator API key for phoenix"))).toHaveLength(1);
    } finally {
      console.log = log;
    }
  });
});
