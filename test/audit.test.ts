/**
 * The audit trail (issue 14): security events written as service-log entries of category `Audit`, each saying who,
 * what, when and from which IP, never a secret; readable by Administrators through `GET /v1/log` (filter
 * `category == "Audit"`), invisible to LicenseManager and Sales, and not deletable by them.
 */
import { describe, expect, it } from "vitest";
import { ADMIN, call, keyFor, setSetting } from "./helpers";
import { development, fetchAs } from "./production-kit";
import { newLicense } from "./samples/licensing";

const IP = "198.18.7.7";
const AUDIT = `filter=${encodeURIComponent('category == "Audit"')}`;

interface Entry {
  id: number;
  timestamp: string;
  message: string;
  category: string;
  properties?: string;
}

/** The audit entries an Administrator reads, newest last; entries are written after each response. */
async function auditEntries(key = ADMIN.key): Promise<Entry[]> {
  await new Promise((r) => setTimeout(r, 100));
  const res = await call("GET", `/v1/log?${AUDIT}&sort=id&take=1000`, { key });
  expect(res.status, res.text).toBe(200);
  return res.body["logs"] as Entry[];
}

const asAdmin = (method: string, path: string, body?: unknown) =>
  call(method, path, { key: ADMIN.key, headers: { "cf-connecting-ip": IP }, ...(body ? { body } : {}) });

describe("the audit trail", () => {
  it("records key, user, role, password, license and settings changes and blocked logins: who, what, when, IP, no secret", async () => {
    const secrets: string[] = [];
    // API keys: created, changed, revoked, deleted.
    const user = await asAdmin("POST", "/v1/users", {
      user: { userName: "audited", password: "Audited#password1", roles: ["Sales"] },
    });
    const userId = user.body["userId"] as string;
    secrets.push("Audited#password1");
    const created = await asAdmin("POST", "/v1/api-keys", {
      apiKey: { name: "audited key", ownerId: userId, permissions: 1 },
    });
    const keyId = created.body["apiKeyId"] ?? created.body["id"];
    secrets.push(created.body["key"], created.body["clientSecret"]);
    expect((await asAdmin("PUT", "/v1/api-keys", { apiKey: { id: keyId, permissions: 3 } })).status).toBe(200);
    expect((await asAdmin("PUT", "/v1/api-keys", { apiKey: { id: keyId, revoked: true } })).status).toBe(200);
    expect((await asAdmin("DELETE", `/v1/api-keys/${keyId}`)).status).toBe(200);
    // Users, roles, passwords.
    expect((await asAdmin("POST", `/v1/users/${userId}/roles`, { roles: ["LicenseManager"] })).status).toBe(200);
    expect(
      (await asAdmin("PUT", "/v1/users", { user: { id: userId, password: "Audited#password2", city: "Oslo" } })).status,
    ).toBe(200);
    secrets.push("Audited#password2");
    expect((await asAdmin("DELETE", `/v1/users/${userId}`)).status).toBe(200);
    // Licenses revoked and deleted.
    const lic = await newLicense("Activation", 1);
    secrets.push(lic.userKey);
    expect((await asAdmin("PUT", "/v1/licenses", { license: { id: lic.id, revoked: true } })).status).toBe(200);
    expect((await asAdmin("DELETE", `/v1/licenses/${lic.id}`)).status).toBe(200);
    // Settings.
    expect(
      (await asAdmin("PUT", "/v1/settings", { settings: [{ name: "Application:DefaultPageSize", value: "25" }] }))
        .status,
    ).toBe(200);
    await setSetting("Application:DefaultPageSize", null);
    // A blocked login (anonymous: the IP is the who).
    for (let i = 0; i < 5; i++)
      await call("POST", "/v1/auth/login", {
        headers: { "cf-connecting-ip": "198.18.7.8" },
        body: { username: "admin", password: `guess-${i}` },
      });

    const entries = await auditEntries();
    const events = entries.map((e) => JSON.parse(e.properties!) as Record<string, unknown>);
    const mine = events.filter((p) => p["clientIp"] === IP && p["event"] !== "Bootstrap");
    expect(mine.map((p) => p["event"])).toEqual([
      "UserCreated",
      "ApiKeyCreated",
      "ApiKeyChanged",
      "ApiKeyRevoked",
      "ApiKeyDeleted",
      "RolesChanged",
      "PasswordChanged",
      "UserChanged",
      "UserDeleted",
      "LicenseRevoked",
      "LicenseDeleted",
      "SettingsChanged",
    ]);
    for (const p of mine)
      expect(p).toMatchObject({ user: "admin", apiKeyName: "Administrator (bootstrap)", clientIp: IP });
    expect(mine.find((p) => p["event"] === "RolesChanged")).toMatchObject({
      targetUserName: "audited",
      from: ["Sales"],
      to: ["LicenseManager", "Sales"],
    });
    expect(mine.find((p) => p["event"] === "ApiKeyChanged")).toMatchObject({ fields: ["permissions"], permissions: 3 });
    expect(mine.find((p) => p["event"] === "LicenseRevoked")).toMatchObject({ licenseId: lic.licenseId });
    expect(events.find((p) => p["event"] === "LoginBlocked")).toMatchObject({
      clientIp: "198.18.7.8",
      user: null,
      failures: 5,
    });
    // The bootstrap of the configured administrator is the trail's first entry.
    expect(events[0]).toMatchObject({ event: "Bootstrap", targetUserName: "admin" });
    for (const e of entries) {
      expect(e.category).toBe("Audit");
      expect(Date.parse(e.timestamp)).toBeGreaterThan(0);
      for (const secret of secrets) expect(JSON.stringify(e), secret).not.toContain(secret);
      expect(JSON.stringify(e)).not.toMatch(/passwordHash|password_hash|keyDigest|pbkdf2/);
    }
  });

  it("is for Administrators only: other roles neither see it nor delete it", async () => {
    await asAdmin("PUT", "/v1/settings", { settings: [{ name: "Application:DefaultPageSize", value: "30" }] });
    await setSetting("Application:DefaultPageSize", null);
    const before = (await auditEntries()).length;
    expect(before).toBeGreaterThan(0);
    for (const role of ["LicenseManager", "Sales"]) {
      const key = await keyFor([role]);
      const filtered = await call("GET", `/v1/log?${AUDIT}`, { key });
      expect(filtered.status).toBe(200);
      expect(filtered.body["logs"]).toEqual([]);
      expect(filtered.body["totalLogsCount"]).toBe(0);
      const all = await call("GET", "/v1/log?take=1000", { key });
      expect((all.body["logs"] as Entry[]).filter((e) => e.category === "Audit")).toEqual([]);
      const deleted = await call("DELETE", "/v1/log", { key });
      expect(deleted.status).toBe(200);
    }
    // The keys made above and the two clearings are audit entries too: the trail only grew.
    const after = await auditEntries();
    expect(after.length).toBeGreaterThanOrEqual(before + 2);
    expect(after.filter((e) => JSON.parse(e.properties!)["event"] === "LogDeleted")).toHaveLength(2);
    // An Administrator may clear it; that clearing is the first entry of the new trail.
    expect((await call("DELETE", "/v1/log", { key: ADMIN.key })).status).toBe(200);
    const cleared = await auditEntries();
    expect(cleared.map((e) => JSON.parse(e.properties!)["event"])).toEqual(["LogDeleted"]);
  });

  it("lists the category of every entry, Service for the service's own", async () => {
    // A real failure of the service's own: login while Application:JwtSecret is missing answers 500 naming it, and
    // every 5xx is logged (a refused filter no longer is: it is the caller's mistake).
    const failed = await fetchAs(development({ Application__JwtSecret: undefined }), "/v1/auth/login", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ username: "admin", password: "Admin-12345678" }),
    });
    expect(failed.status, failed.text).toBe(500);
    await new Promise((r) => setTimeout(r, 100));
    const res = await call("GET", `/v1/log?filter=${encodeURIComponent('category == "Service"')}&take=5`, {
      key: ADMIN.key,
    });
    expect(res.status).toBe(200);
    expect((res.body["logs"] as Entry[]).length).toBeGreaterThan(0);
    for (const e of res.body["logs"] as Entry[]) expect(e.category).toBe("Service");
  });
});
