/** `/v1/users`, their settings and roles, and `/v1/roles` (Administrator), through the API. */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { admin, call, keyFor, login } from "./helpers";

async function newUser(user: Record<string, unknown>): Promise<string> {
  const res = await admin("POST", "/v1/users", { user });
  expect(res.status, res.text).toBe(200);
  return res.body["userId"];
}

describe("users", () => {
  it("creates a user whose password is hashed, never returned, and signs in", async () => {
    const id = await newUser({
      userName: "jane",
      password: "Jane#password1",
      email: "jane@example.com",
      roles: ["Sales", "Sales"],
      birthDate: "1990-05-04",
    });
    expect(id).toMatch(/^[0-9a-f-]{36}$/);
    const res = await admin("GET", `/v1/users?filter=${encodeURIComponent('email.EndsWith("@example.com")')}`);
    expect(res.body["users"]).toEqual([
      expect.objectContaining({ id, userName: "jane", roles: ["Sales"], birthDate: "1990-05-04T00:00:00.000Z" }),
    ]);
    expect(JSON.stringify(res.body)).not.toMatch(/password|Jane#password1/i);
    const stored = await env.DB.prepare("SELECT password_hash FROM users WHERE id = ?")
      .bind(id)
      .first<{ password_hash: string }>();
    expect(stored?.password_hash).toMatch(/^pbkdf2-sha256\$100000\$/);
    expect(await login("JANE", "Jane#password1")).toMatch(/^eyJ[\w-]+\.[\w-]+\.[\w-]+$/);
  });

  it("keeps user names unique regardless of case", async () => {
    await newUser({ userName: "Unique.Name" });
    const res = await admin("POST", "/v1/users", { user: { userName: "unique.name" } });
    expect(res.status).toBe(400);
    expect(res.body["message"]).toBe("A User with the same userName already exists");
  });

  it("refuses unknown roles and blank user names with problem details", async () => {
    expect((await admin("POST", "/v1/users", { user: { userName: "x", roles: ["Root"] } })).status).toBe(400);
    expect((await admin("POST", "/v1/users", { user: { userName: "has space" } })).status).toBe(400);
  });

  it("updates only what is sent, and a new password replaces the old", async () => {
    const id = await newUser({ userName: "pat", password: "Pat#password1", city: "Oslo", rank: 3 });
    expect((await admin("PUT", "/v1/users", { user: { id, rank: 0, password: "Pat#password2" } })).status).toBe(200);
    const [pat] = (await admin("GET", `/v1/users?filter=${encodeURIComponent('userName == "pat"')}`)).body["users"];
    expect(pat).toMatchObject({ city: "Oslo", rank: 0 });
    expect(
      (await call("POST", "/v1/auth/login", { body: { username: "pat", password: "Pat#password1" } })).status,
    ).toBe(401);
    expect(await login("pat", "Pat#password2")).toMatch(/^eyJ[\w-]+\.[\w-]+\.[\w-]+$/);
  });

  it("refuses to delete the caller's own account, and deletes others with their settings", async () => {
    const me = (await admin("GET", `/v1/users?filter=${encodeURIComponent('userName == "admin"')}`)).body["users"][0]
      .id;
    const self = await admin("DELETE", `/v1/users/${me}`);
    expect(self.status).toBe(400);
    expect(self.body["message"]).toBe("You cannot delete your own account");
    const id = await newUser({ userName: "temp" });
    await admin("POST", `/v1/users/${id}/settings`, { userSetting: { name: "a" } });
    expect((await admin("DELETE", `/v1/users/${id}`)).status).toBe(200);
    const left = await env.DB.prepare("SELECT count(*) AS n FROM user_settings WHERE user_id = ?")
      .bind(id)
      .first<{ n: number }>();
    expect(left?.n).toBe(0);
    expect((await admin("DELETE", `/v1/users/${id}`)).body["message"]).toBe(`User ${id} not found`);
  });
});

describe("user settings", () => {
  it("are scoped to their user: listed, updated and deleted only through that user's path", async () => {
    const a = await newUser({ userName: "owner-a" });
    const b = await newUser({ userName: "owner-b" });
    const created = await admin("POST", `/v1/users/${a}/settings`, {
      userSetting: { name: "theme", value: "dark", group: "ui", userId: b },
    });
    expect(created.status).toBe(200);
    const settingId = created.body["userSettingId"];
    await admin("POST", `/v1/users/${b}/settings`, { userSetting: { name: "lang", value: "nb" } });

    const listA = await admin("GET", `/v1/users/${a}/settings`);
    expect(listA.body).toMatchObject({
      totalUserSettingsCount: 1,
      userSettings: [{ id: settingId, name: "theme", group: "ui", userId: a, readOnly: false }],
    });
    expect(
      (await admin("PUT", `/v1/users/${b}/settings`, { userSetting: { id: settingId, value: "light" } })).status,
    ).toBe(400);
    expect((await admin("DELETE", `/v1/users/${b}/settings/${settingId}`)).status).toBe(400);
    expect(
      (await admin("PUT", `/v1/users/${a}/settings`, { userSetting: { id: settingId, value: "light" } })).status,
    ).toBe(200);
    expect((await admin("GET", `/v1/users/${a}/settings`)).body["userSettings"][0].value).toBe("light");
    expect((await admin("DELETE", `/v1/users/${a}/settings/${settingId}`)).status).toBe(200);
    expect((await admin("GET", `/v1/users/${a}/settings`)).body["totalUserSettingsCount"]).toBe(0);
  });

  it("answers 400 for a user that does not exist", async () => {
    const res = await admin("GET", "/v1/users/nobody/settings");
    expect(res.status).toBe(400);
    expect(res.body["message"]).toBe("User nobody not found");
  });
});

describe("roles", () => {
  it("lists the five roles of SPEC", async () => {
    const res = await admin("GET", "/v1/roles");
    expect(res.body["roles"].map((r: { name: string }) => r.name)).toEqual([
      "Administrator",
      "LicenseManager",
      "Sales",
      "Customer",
      "Application",
    ]);
    expect(res.body["totalRolesCount"]).toBe(5);
  });

  it("gives and takes roles, and the user's keys act with the new roles at once", async () => {
    const key = await keyFor(["Customer"], 15, "promoted");
    const id = (await admin("GET", `/v1/users?filter=${encodeURIComponent('userName == "promoted"')}`)).body["users"][0]
      .id;
    expect((await call("GET", "/v1/resources", { key })).status).toBe(403);
    expect((await admin("POST", `/v1/users/${id}/roles`, { roles: ["Sales", "Sales"] })).body["roles"]).toEqual([
      "Sales",
      "Customer",
    ]);
    expect((await call("GET", "/v1/resources", { key })).status).toBe(200);
    expect((await admin("GET", `/v1/users/${id}/roles`)).body["roles"]).toEqual(["Sales", "Customer"]);
    expect((await admin("DELETE", `/v1/users/${id}/roles`, { roles: ["Sales"] })).body["roles"]).toEqual(["Customer"]);
    expect((await call("GET", "/v1/resources", { key })).status).toBe(403);
    expect((await admin("POST", `/v1/users/${id}/roles`, { roles: ["Owner"] })).status).toBe(400);
  });

  it("refuses to take Administrator from the caller's own account", async () => {
    const me = (await admin("GET", `/v1/users?filter=${encodeURIComponent('userName == "admin"')}`)).body["users"][0]
      .id;
    const res = await admin("DELETE", `/v1/users/${me}/roles`, { roles: ["Administrator"] });
    expect(res.status).toBe(400);
    expect((await admin("GET", "/v1/roles")).status).toBe(200);
  });
});
