/**
 * Release health (CONTRACT section 13; src/updates/sessions.ts, routes/updates/sessions.ts,
 * routes/management/release-health.ts): session pings through the public route, counted by the real queue consumer,
 * read back with GET .../health. Bad pings are refused naming the field and count nothing; a session counts once,
 * with its last final status; one address adds at most Updates:HealthInstallsPerAddress unlicensed installs per
 * release per day (IPv6 by /64), one install at most Updates:HealthSessionsPerInstall sessions per day, and licensed
 * sessions count beyond the address limit; the baseline is the previous admissible release.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { unique } from "./artifacts-kit";
import { admin, call, setSetting } from "./helpers";
import { INSTALL, type Session, ago, drained, health, licenseOf, ping, product, session, settled } from "./health-kit";

beforeAll(async () => {
  await setSetting("Updates:AllowPublicApplicationReleases", "true");
  // Hundreds of pings from one address: the per-IP request limit (SPEC "Limits") is not what is tested here.
  await setSetting("IpFiltering:BruteForceProtection:Enabled", "false");
});
afterAll(() => setSetting("IpFiltering:BruteForceProtection:Enabled", null));

describe("session pings", () => {
  it("refuses bad pings with 400 naming the field (or 403 for another product's credential), and counts nothing", async () => {
    const app = await product("1.0.0");
    const other = await product("1.0.0");
    const otherLicense = await licenseOf(other.productId);
    const ok = { version: "1.0.0", sessions: [session()] };

    const missing = await ping(app.code, ok, { install: null });
    expect(missing.status, missing.text).toBe(400);
    expect(missing.text).toContain(INSTALL);

    const bad: [unknown, string][] = [
      [{ version: "1.0.0", sessions: Array.from({ length: 101 }, () => session()) }, "sessions"],
      [{ version: "1.0.0", sessions: [] }, "sessions"],
      [{ version: "1.0.0", sessions: [session("frozen")] }, "sessions[0].status"],
      [{ version: "1.0.0", sessions: [session(), session("exited", ago(-10 * 60_000))] }, "sessions[1].startedAt"],
      [{ version: "1.0.0", sessions: [session("exited", ago(8 * 86_400_000))] }, "sessions[0].startedAt"],
      [{ version: "1.0.0", sessions: [session("exited", "yesterday")] }, "sessions[0].startedAt"],
      [{ version: "1.0.0", sessions: [{ ...session(), durationMs: -1 }] }, "sessions[0].durationMs"],
      [{ version: "1.0.0", sessions: [{ ...session(), durationMs: 8 * 86_400_000 }] }, "sessions[0].durationMs"],
      [{ version: "1.0.0", sessions: [{ ...session(), id: "" }] }, "sessions[0].id"],
      [{ version: "1.0", sessions: [session()] }, "version"],
      [{ version: "1.0.0", platform: "amiga", sessions: [session()] }, "platform"],
    ];
    for (const [body, field] of bad) {
      const res = await ping(app.code, body);
      expect(res.status, `${field}: ${res.text}`).toBe(400);
      expect(Object.keys(res.body["errors"] ?? {}), res.text).toContain(field);
    }

    // A credential of another product: its user key, or its bearer token (user-key sign-in).
    const keyed = await ping(app.code, ok, { headers: { "X-Service-User-Key": otherLicense.userKey } });
    expect(keyed.status, keyed.text).toBe(403);
    expect(keyed.headers.get("X-Service-Reason")).toBe("wrongProduct");
    const login = await call("POST", "/v1/auth/login", { body: { userKey: otherLicense.userKey } });
    expect(login.status, login.text).toBe(200);
    const bearer = await ping(app.code, ok, { headers: { authorization: `Bearer ${login.body["token"]}` } });
    expect(bearer.status, bearer.text).toBe(403);
    const unknownKey = await ping(app.code, ok, { headers: { "X-Service-User-Key": "AAAAA-BBBBB-CCCCC-DDDDD" } });
    expect(unknownKey.status, unknownKey.text).toBe(403);

    // A good ping, sent last, is counted; nothing before it was.
    const marker = await ping(app.code, { version: "1.0.0", sessions: [session("crashed")] });
    expect(marker.status, marker.text).toBe(202);
    expect(marker.body["accepted"]).toBe(1);
    const h = await settled(app.productId, app.releases["1.0.0"]!, (x) => x.sessions >= 1);
    await drained(app);
    expect(await health(app.productId, app.releases["1.0.0"]!)).toMatchObject({
      sessions: 1,
      crashedSessions: 1,
      installs: 1,
    });
    expect(h.sessions).toBe(1);
  });

  it("counts a session once however often it is sent, with its last final status; `started` after 24 h is abnormal", async () => {
    const app = await product("2.0.0");
    const release = app.releases["2.0.0"]!;
    const install = `install-${unique()}`;
    const send = async (sessions: Session[]) => {
      const res = await ping(app.code, { version: "2.0.0", platform: "win-x64", sessions }, { install });
      expect(res.status, res.text).toBe(202);
    };
    const s1 = session("started");
    const s2 = session("exited");
    const old = session("started", ago(25 * 3_600_000));
    const fresh = session("started");
    // s1 starts and exits; s2 exits (sent twice); `old` never ended; `fresh` is still running.
    await send([s1, s2, old, fresh]);
    await send([{ ...s1, status: "exited" }, s2]);
    let h = await settled(app.productId, release, (x) => x.sessions >= 3);
    expect(h).toMatchObject({ sessions: 3, crashedSessions: 1, installs: 1, crashedInstalls: 1 });
    // s1 crashes after all (a later final status), then a stray `started` for it changes nothing.
    await send([{ ...s1, status: "crashed" }]);
    h = await settled(app.productId, release, (x) => x.crashedSessions >= 2);
    await send([s1, s2]);
    await drained(app);
    h = await health(app.productId, release);
    expect(h).toMatchObject({ sessions: 3, crashedSessions: 2, installs: 1, crashedInstalls: 1 });
    expect(h.crashFreeSessions).toBeCloseTo(1 / 3);
    expect(h.crashFreeInstalls).toBe(0);
    expect(h.platforms).toEqual([expect.objectContaining({ platform: "win-x64", sessions: 3 })]);
  });
});

describe("honest counts", () => {
  it("one address adds at most 5 installs per release per day (IPv6 by /64); licensed sessions count beyond", async () => {
    const app = await product("3.0.0");
    const release = app.releases["3.0.0"]!;
    const license = await licenseOf(app.productId);
    const ip = "203.0.113.9";
    // 200 fake installs from one IPv4 address, each with an exited session.
    for (let i = 0; i < 200; i += 20)
      await Promise.all(
        Array.from({ length: 20 }, async () => {
          const res = await ping(app.code, { version: "3.0.0", sessions: [session()] }, { ip });
          expect(res.status, res.text).toBe(202);
        }),
      );
    // Ten more from two addresses of one IPv6 /64.
    for (let i = 0; i < 10; i++) {
      const res = await ping(
        app.code,
        { version: "3.0.0", sessions: [session()] },
        { ip: `2001:db8:7:9::${i % 2 ? "a" : "b"}` },
      );
      expect(res.status, res.text).toBe(202);
    }
    // Eight installs of the same IPv4 address sending with the license's user key: counted beyond the limit.
    for (let i = 0; i < 8; i++) {
      const res = await ping(
        app.code,
        { version: "3.0.0", sessions: [session("crashed")] },
        { ip, headers: { "X-Service-User-Key": license.userKey } },
      );
      expect(res.status, res.text).toBe(202);
    }
    const h = await settled(app.productId, release, (x) => x.installs >= 18);
    await drained(app);
    expect(await health(app.productId, release)).toMatchObject({
      installs: 18,
      sessions: 18,
      crashedSessions: 8,
      crashedInstalls: 8,
    });
    expect(h.installs).toBe(18);
  });

  it("one install adds at most 20 sessions per day", async () => {
    const app = await product("3.1.0");
    const release = app.releases["3.1.0"]!;
    const install = `install-${unique()}`;
    const sessions = Array.from({ length: 30 }, () => session());
    const res = await ping(app.code, { version: "3.1.0", sessions }, { install });
    expect(res.status, res.text).toBe(202);
    expect(res.body["accepted"]).toBe(30);
    await settled(app.productId, release, (x) => x.sessions >= 20);
    // Sent again, the 20 counted ones still count once; the other 10 still do not.
    await ping(app.code, { version: "3.1.0", sessions }, { install });
    await drained(app);
    expect(await health(app.productId, release)).toMatchObject({ sessions: 20, installs: 1 });
  });
});

describe("release health", () => {
  it("answers a release's figures by day and platform beside its baseline, the previous admissible release", async () => {
    // 0.9.0 and 1.0.0 public; 1.0.5 halted; 1.1.0 the release looked at: its baseline is 1.0.0.
    const app = await product("0.9.0", "1.0.0", "1.0.5", "1.1.0");
    const halt = await admin("POST", `/v1/products/${app.productId}/releases/${app.releases["1.0.5"]}/halt`, {});
    expect(halt.status, halt.text).toBe(200);
    const send = async (version: string, platform: string, install: string, sessions: Session[]) => {
      const res = await ping(app.code, { version, platform, sessions }, { install, ip: `192.0.2.${sessions.length}` });
      expect(res.status, res.text).toBe(202);
    };
    // 1.1.0: install A on Windows, 3 exited + 1 crashed; install B on macOS, 2 exited; C on macOS, 1 abnormal.
    await send("1.1.0", "win-x64", "A", [session(), session(), session(), session("crashed")]);
    await send("1.1.0", "darwin-arm64", "B", [session(), session()]);
    await send("1.1.0", "darwin-arm64", "C", [session("abnormal")]);
    // 1.0.0: 4 exited sessions of one install. 0.9.0: a crash, which is no baseline.
    await send("1.0.0", "win-x64", `D-${unique()}`, [session(), session(), session(), session()]);
    await send("0.9.0", "win-x64", `E-${unique()}`, [session("crashed")]);
    const h = await settled(
      app.productId,
      app.releases["1.1.0"]!,
      (x) => x.sessions >= 7 && (x.baseline?.sessions ?? 0) >= 4,
    );
    expect(h).toMatchObject({ sessions: 7, crashedSessions: 2, installs: 3, crashedInstalls: 2 });
    expect(h.crashFreeSessions).toBeCloseTo(5 / 7);
    expect(h.crashFreeInstalls).toBeCloseTo(1 / 3);
    expect(h.platforms).toEqual([
      expect.objectContaining({ platform: "darwin-arm64", sessions: 3, crashedSessions: 1, installs: 2 }),
      expect.objectContaining({ platform: "win-x64", sessions: 4, crashedSessions: 1, installs: 1 }),
    ]);
    expect(h.days).toEqual([expect.objectContaining({ day: h.to, sessions: 7 })]);
    expect(h.baseline).toMatchObject({
      releaseId: app.releases["1.0.0"],
      version: "1.0.0",
      sessions: 4,
      crashedSessions: 0,
      crashFreeSessions: 1,
      installs: 1,
    });
    // The oldest release has no baseline (null, omitted like every null); a span without sessions counts none,
    // and its rates are null.
    expect(await health(app.productId, app.releases["0.9.0"]!)).not.toHaveProperty("baseline");
    const empty = await health(app.productId, app.releases["1.1.0"]!, "?from=2026-01-01&to=2026-01-02");
    expect(empty).toMatchObject({ sessions: 0, installs: 0, days: [], platforms: [] });
    expect(empty).not.toHaveProperty("crashFreeSessions");
  });

  it("is read with the roles of adoption", async () => {
    const app = await product("1.0.0");
    const res = await call("GET", `/v1/products/${app.productId}/releases/${app.releases["1.0.0"]}/health`);
    expect(res.status).toBe(401);
  });
});
