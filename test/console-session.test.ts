/**
 * The admin console's credential (src/auth/console-session.ts): console sign-in yields a short-lived API key of the
 * user in an HttpOnly, Secure, SameSite=Strict cookie that only counts together with its CSRF token; sign-out
 * revokes the key. And the console's files: served at /console/ by the Worker, off with the REST API.
 */
import { createExecutionContext, createScheduledController, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { clock } from "../src/kernel/clock";
import worker from "../src/index";
import { ADMIN, admin, call, movableClock, setSetting } from "./helpers";

const clockAhead = (await movableClock()).move;

const COOKIE = "__Host-console-key";

async function signIn(username = ADMIN.username, password = ADMIN.password) {
  const res = await call("POST", "/v1/auth/console/login", { body: { username, password } });
  const setCookie = res.headers.get("set-cookie") ?? "";
  const key = new RegExp(`${COOKIE}=([^;]+)`).exec(setCookie)?.[1];
  return { res, setCookie, key, csrf: res.body["csrfToken"] as string, cookie: `${COOKIE}=${key}` };
}

describe("console sign-in", () => {
  it("sets the session's API key in an HttpOnly, Secure, SameSite=Strict cookie and returns a CSRF token", async () => {
    const s = await signIn();
    expect(s.res.status).toBe(200);
    expect(s.res.body).toMatchObject({ success: true, user: "admin", roles: ["Administrator"] });
    expect(s.key).toMatch(/^api_[0-9A-Za-z]{32}$/);
    expect(s.setCookie).toMatch(/HttpOnly/);
    expect(s.setCookie).toMatch(/Secure/);
    expect(s.setCookie).toMatch(/SameSite=Strict/);
    expect(s.setCookie).toMatch(/Path=\//);
    expect(s.setCookie).toMatch(/Max-Age=28800/);
    expect(s.csrf).toMatch(/^[A-Za-z0-9_-]{43}$/);
    // The body never carries the key itself.
    expect(s.res.text).not.toContain(s.key);
    // The key is a real API key of the user, named as a console session and expiring with it.
    const keys = await admin(
      "GET",
      `/v1/api-keys?filter=${encodeURIComponent('name == "Console session"')}&sort=-id&take=1`,
    );
    expect(keys.body["apiKeys"][0]).toMatchObject({
      ownerId: expect.any(String),
      revoked: false,
      permissions: 15,
      expireDate: s.res.body["expiresAt"],
    });
  });

  it("refuses wrong credentials with the login message, and sets no cookie", async () => {
    const s = await signIn("admin", "wrong");
    expect(s.res.status).toBe(401);
    expect(s.res.body["message"]).toBe("Invalid username or password.");
    expect(s.setCookie).toBe("");
  });

  it("lets the cookie reach the management routes only with its CSRF token", async () => {
    const s = await signIn();
    const ok = await call("GET", "/v1/products", { headers: { cookie: s.cookie, "x-csrf-token": s.csrf } });
    expect(ok.status).toBe(200);
    const session = await call("GET", "/v1/auth/session", { headers: { cookie: s.cookie, "x-csrf-token": s.csrf } });
    expect(session.body).toMatchObject({ user: "admin", roles: ["Administrator"], keyName: "Console session" });
    // Cookie alone (what a forged cross-site request carries): 401, for reads and writes.
    expect((await call("GET", "/v1/products", { headers: { cookie: s.cookie } })).status).toBe(401);
    expect(
      (
        await call("POST", "/v1/products", {
          headers: { cookie: s.cookie },
          body: { product: { code: "x", name: "X" } },
        })
      ).status,
    ).toBe(401);
    // A token of another session does not fit this cookie.
    const other = await signIn();
    expect(
      (await call("GET", "/v1/products", { headers: { cookie: s.cookie, "x-csrf-token": other.csrf } })).status,
    ).toBe(401);
    // The token without the cookie is nothing.
    expect((await call("GET", "/v1/products", { headers: { "x-csrf-token": s.csrf } })).status).toBe(401);
  });

  it("acts with the user's roles: a Sales user's console session cannot manage users", async () => {
    const created = await admin("POST", "/v1/users", {
      user: { userName: "console-sales", password: "Secret#123456", roles: ["Sales"] },
    });
    expect(created.status).toBe(200);
    const s = await signIn("console-sales", "Secret#123456");
    expect(s.res.body["roles"]).toEqual(["Sales"]);
    const headers = { cookie: s.cookie, "x-csrf-token": s.csrf };
    expect((await call("GET", "/v1/customers", { headers })).status).toBe(200);
    expect((await call("GET", "/v1/users", { headers })).status).toBe(403);
  });

  it("ends with the user's credentials: a new password or a removed role ends the user's console sessions", async () => {
    const created = await admin("POST", "/v1/users", {
      user: { userName: "console-ends", password: "Secret#123456", roles: ["Sales", "LicenseManager"] },
    });
    expect(created.status).toBe(200);
    const userId = created.body["userId"] as string;
    const asSession = (s: { cookie: string; csrf: string }) => ({
      headers: { cookie: s.cookie, "x-csrf-token": s.csrf },
    });
    const first = await signIn("console-ends", "Secret#123456");
    expect((await call("GET", "/v1/customers", asSession(first))).status).toBe(200);
    // An administrator sets a new password: the session opened with the old one ends at once.
    expect((await admin("PUT", "/v1/users", { user: { id: userId, password: "Secret#654321" } })).status).toBe(200);
    expect((await call("GET", "/v1/customers", asSession(first))).status).toBe(401);
    // A role taken away ends the sessions too; adding one does not.
    const second = await signIn("console-ends", "Secret#654321");
    expect((await admin("POST", `/v1/users/${userId}/roles`, { roles: ["Administrator"] })).status).toBe(200);
    expect((await call("GET", "/v1/customers", asSession(second))).status).toBe(200);
    expect((await admin("DELETE", `/v1/users/${userId}/roles`, { roles: ["LicenseManager"] })).status).toBe(200);
    expect((await call("GET", "/v1/customers", asSession(second))).status).toBe(401);
  });

  it("leaves the API key list through the cron trigger once expired", async () => {
    const s = await signIn();
    const digestOf = async (key: string) =>
      [...new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(key)))]
        .map((b) => b.toString(16).padStart(2, "0"))
        .join("");
    const rows = async () =>
      (
        await env.DB.prepare("SELECT count(*) AS n FROM api_keys WHERE key_digest = ?")
          .bind(await digestOf(s.key as string))
          .first<{ n: number }>()
      )?.n;
    const cronAt = async (at: number) => {
      const ctx = createExecutionContext();
      worker.scheduled(createScheduledController({ scheduledTime: new Date(at), cron: "*/15 * * * *" }), env, ctx);
      await waitOnExecutionContext(ctx);
    };
    await cronAt(Date.now());
    expect(await rows()).toBe(1);
    // The session's lifetime is 8 hours (Application:ConsoleSessionLifetime).
    await cronAt(Date.now() + 9 * 3_600_000);
    expect(await rows()).toBe(0);
    // A session left idle past Application:ConsoleIdleTimeout (30 minutes) goes too, long before its expiry.
    const idle = await signIn();
    const idleRows = async () =>
      (
        await env.DB.prepare("SELECT count(*) AS n FROM api_keys WHERE key_digest = ?")
          .bind(await digestOf(idle.key as string))
          .first<{ n: number }>()
      )?.n;
    await cronAt(Date.now() + 29 * 60_000);
    expect(await idleRows()).toBe(1);
    await cronAt(Date.now() + 31 * 60_000);
    expect(await idleRows()).toBe(0);
  });

  it("sign-out revokes the key and clears the cookie", async () => {
    const s = await signIn();
    const headers = { cookie: s.cookie, "x-csrf-token": s.csrf };
    // Sign-out needs the CSRF token too; without any session there is nothing to end.
    expect((await call("POST", "/v1/auth/console/logout", { headers: { cookie: s.cookie } })).status).toBe(401);
    expect((await call("GET", "/v1/products", { headers })).status).toBe(200);
    expect((await call("POST", "/v1/auth/console/logout")).status).toBe(200);
    const out = await call("POST", "/v1/auth/console/logout", { headers });
    expect(out.status).toBe(200);
    expect(out.headers.get("set-cookie")).toMatch(new RegExp(`^${COOKIE}=; Max-Age=0`));
    expect((await call("GET", "/v1/products", { headers })).status).toBe(401);
    expect((await call("GET", "/v1/products", { key: s.key })).status).toBe(401);
  });

  it("an expired session key is refused", async () => {
    await setSetting("Application:ConsoleSessionLifetime", "00:00:01");
    try {
      const s = await signIn();
      expect(s.setCookie).toMatch(/Max-Age=1/);
      await new Promise((r) => setTimeout(r, 1100));
      expect(
        (await call("GET", "/v1/products", { headers: { cookie: s.cookie, "x-csrf-token": s.csrf } })).status,
      ).toBe(401);
    } finally {
      await setSetting("Application:ConsoleSessionLifetime", null);
    }
  });
});

describe("console session idle timeout (Application:ConsoleIdleTimeout)", () => {
  const lastUsedAt = async (key: string) => {
    const digest = [...new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(key)))]
      .map((b) => b.toString(16).padStart(2, "0"))
      .join("");
    return (
      await env.DB.prepare("SELECT last_used_at AS at FROM api_keys WHERE key_digest = ?")
        .bind(digest)
        .first<{ at: string | null }>()
    )?.at;
  };

  it("ends a session left unused for the timeout, also when this isolate has its key cached; use keeps it open", async () => {
    await setSetting("Application:ConsoleIdleTimeout", "00:00:02");
    try {
      const s = await signIn();
      const headers = { cookie: s.cookie, "x-csrf-token": s.csrf };
      const products = async () => (await call("GET", "/v1/products", { headers })).status;
      expect(await products()).toBe(200);
      // Used every 1.5 s, the session outlives the timeout counted from its sign-in.
      for (let i = 0; i < 4; i++) {
        clockAhead(1500);
        expect(await products()).toBe(200);
      }
      // 2.1 s without a request: ended, though the key is cached (ApiKeyCacheDuration 3 min) and far from expiry.
      clockAhead(2100);
      expect(await products()).toBe(401);
      expect((await call("GET", "/v1/auth/session", { headers })).status).toBe(401);
      // The key itself, sent as a header, is ended too.
      expect((await call("GET", "/v1/products", { key: s.key })).status).toBe(401);
      // And it stays ended: a refused request does not count as use.
      clockAhead(100);
      expect(await products()).toBe(401);
      // Another session of the same user is not affected.
      const other = await signIn();
      expect(
        (await call("GET", "/v1/products", { headers: { cookie: other.cookie, "x-csrf-token": other.csrf } })).status,
      ).toBe(200);
    } finally {
      await setSetting("Application:ConsoleIdleTimeout", null);
    }
  });

  it("records the use at most once per step (a minute, or half a short timeout), not on every request", async () => {
    await setSetting("Application:ConsoleIdleTimeout", "00:10:00");
    try {
      const s = await signIn();
      const headers = { cookie: s.cookie, "x-csrf-token": s.csrf };
      const signedIn = await lastUsedAt(s.key as string);
      // Sign-in writes the first use: an ISO time within a second of the (test-controlled) clock.
      expect(typeof signedIn).toBe("string");
      expect(Math.abs(Date.parse(signedIn as string) - clock.now().getTime())).toBeLessThan(1000);
      for (let i = 0; i < 5; i++) {
        clockAhead(10_000);
        expect((await call("GET", "/v1/products", { headers })).status).toBe(200);
      }
      // 50 s of requests: nothing written yet.
      expect(await lastUsedAt(s.key as string)).toBe(signedIn);
      clockAhead(15_000);
      const at = clock.now().toISOString();
      expect((await call("GET", "/v1/products", { headers })).status).toBe(200);
      // Past the step (a minute): this request recorded its time.
      expect(await lastUsedAt(s.key as string)).toBe(at);
      // 9 minutes idle after that write: still open (the timeout counts from the last recorded use).
      clockAhead(9 * 60_000);
      expect((await call("GET", "/v1/products", { headers })).status).toBe(200);
    } finally {
      await setSetting("Application:ConsoleIdleTimeout", null);
    }
  });

  it("applies only to console sessions: an issued API key has no idle time", async () => {
    await setSetting("Application:ConsoleIdleTimeout", "00:00:02");
    try {
      // A key issued through the API, even one named like a session, is not a session.
      const users = await admin("GET", `/v1/users?filter=${encodeURIComponent('userName == "admin"')}`);
      const created = await admin("POST", "/v1/api-keys", {
        apiKey: { name: "Console session", ownerId: users.body["users"][0].id },
      });
      expect(created.status, created.text).toBe(200);
      const key = created.body["key"] as string;
      expect((await call("GET", "/v1/products", { key })).status).toBe(200);
      clockAhead(60_000);
      expect((await call("GET", "/v1/products", { key })).status).toBe(200);
      expect(await lastUsedAt(key)).toBeNull();
    } finally {
      await setSetting("Application:ConsoleIdleTimeout", null);
    }
  });

  it("refuses a timeout under a second", async () => {
    const res = await admin("PUT", "/v1/settings", {
      settings: [{ name: "Application:ConsoleIdleTimeout", value: "00:00:00" }],
    });
    expect(res.status).toBe(400);
    expect(res.text).toContain("Application:ConsoleIdleTimeout");
  });
});

describe("the console's files", () => {
  it("are served at /console/ with a strict Content-Security-Policy", async () => {
    const page = await call("GET", "/console/");
    expect(page.status).toBe(200);
    expect(page.headers.get("content-type")).toMatch(/text\/html/);
    expect(page.text).toContain('<div id="app">');
    expect(page.headers.get("content-security-policy")).toContain("default-src 'self'");
    expect(page.headers.get("content-security-policy")).toContain("frame-ancestors 'none'");
    // /console redirects to /console/ (the helper's fetch follows the redirect).
    const bare = await call("GET", "/console");
    expect(bare.status).toBe(200);
    expect(bare.text).toContain('<div id="app">');
    const script = /src="(\/console\/assets\/[^"]+\.js)"/.exec(page.text)?.[1];
    const js = await call("GET", script!);
    expect(js.status).toBe(200);
    expect(js.headers.get("content-type")).toMatch(/javascript/);
    expect((await call("GET", "/console/nope.js")).status).toBe(404);
  });

  it("are off with the REST API (Application:EnableWebApi false)", async () => {
    await setSetting("Application:EnableWebApi", "false");
    try {
      expect((await call("GET", "/console/")).status).toBe(404);
    } finally {
      await setSetting("Application:EnableWebApi", null);
    }
    expect((await call("GET", "/console/")).status).toBe(200);
  });
});
