/**
 * Release health's gate (CONTRACT section 13; src/updates/health-gate.ts), through the public API: a release with a
 * `healthGate` (set with PUT .../releases) halts itself, within 60 seconds of the sessions that cross it, when the
 * lower bound of the 95 % Wilson interval of its crash rate is above `maxCrashRate` or above `maxCrashRateRatio` x
 * the previous release's crash rate; never below `minSessions` or `minInstalls`; with `rollback` when its action says
 * so. The table's cases send real session pings (unlicensed installs, five per address: the honest counts) and read
 * the release as the API answers it. One address with 200 fake crashing installs cannot halt a gated release, and a
 * gate with rates outside 0-1 or a negative minimum is refused naming the field.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bytesOf, unique, upload } from "./artifacts-kit";
import { admin, call, setSetting } from "./helpers";
import { MARKER, type Session, ago, health, ping, product, settled } from "./health-kit";
import { emitted, subscribe } from "./webhooks-kit";
import { wilsonLowerBound } from "../src/updates/health-gate";

type App = Awaited<ReturnType<typeof product>>;
const net = { n: 0 };

/**
 * Sends `sessions` sessions of `version`, `crashed` of them crashed (spread evenly), from installs of 20 sessions each (the most one
 * install adds a day), five installs per address (the most one address adds): the cohort an honest fleet sends.
 */
async function cohort(app: App, version: string, sessions: number, crashed: number): Promise<void> {
  const all: Session[] = Array.from({ length: sessions }, (_, i) => ({
    id: `s-${unique()}`,
    status: Math.floor(((i + 1) * crashed) / sessions) > Math.floor((i * crashed) / sessions) ? "crashed" : "exited",
    startedAt: ago(60_000 + i),
    durationMs: 30 * 60_000,
  }));
  const subnet = ++net.n;
  const pings: Promise<void>[] = [];
  for (let at = 0, install = 0; at < all.length; at += 20, install++) {
    const body = { version, platform: "win-x64", sessions: all.slice(at, at + 20) };
    const ip = `10.${subnet % 250}.${Math.floor(install / 5)}.${1 + Math.floor(subnet / 250)}`;
    pings.push(
      ping(app.code, body, { ip, install: `i-${unique()}` }).then((res) => {
        expect(res.status, res.text).toBe(202);
      }),
    );
  }
  await Promise.all(pings);
}

async function release(app: App, version: string) {
  const res = await admin("GET", `/v1/products/${app.productId}/releases/${app.releases[version]}`);
  expect(res.status, res.text).toBe(200);
  return res.body["productRelease"] as Record<string, unknown>;
}

/** The release once it is halted, or as it is after `ms` (the gate's promise is 60 seconds). */
async function haltedWithin(app: App, version: string, ms: number) {
  const deadline = Date.now() + ms;
  for (;;) {
    const r = await release(app, version);
    if (r["halted"] === true || Date.now() > deadline) return r;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

const gate = (app: App, version: string, healthGate: unknown) =>
  admin("PUT", `/v1/products/${app.productId}/releases`, {
    productRelease: { id: app.releases[version], healthGate },
  });

interface Case {
  name: string;
  gate: Record<string, unknown>;
  baseline?: [sessions: number, crashed: number];
  release: [sessions: number, crashed: number];
  halts: false | { rule: string; rollback?: boolean };
}

const CASES: Case[] = [
  {
    name: "6 % over 500 sessions against a baseline at 1 %: halts (ratio 2)",
    gate: { maxCrashRateRatio: 2 },
    baseline: [500, 5],
    release: [500, 30],
    halts: { rule: "maxCrashRateRatio" },
  },
  {
    name: "1.2 % over 500 sessions against a baseline at 1 %: goes on (ratio 2)",
    gate: { maxCrashRateRatio: 2 },
    baseline: [500, 5],
    release: [500, 6],
    halts: false,
  },
  {
    name: "half of 80 sessions crashed, below minSessions 100: never judged",
    gate: { maxCrashRate: 0.01 },
    release: [80, 40],
    halts: false,
  },
  {
    name: "a fifth of 200 sessions from 10 installs, below minInstalls 20: never judged",
    gate: { maxCrashRate: 0.01, minSessions: 100 },
    release: [200, 40],
    halts: false,
  },
  {
    name: "3 % against 0.2 %: the ratio rule halts though the absolute rule (5 %) would not",
    gate: { maxCrashRate: 0.05, maxCrashRateRatio: 3, minInstalls: 10 },
    baseline: [500, 1],
    release: [500, 15],
    halts: { rule: "maxCrashRateRatio" },
  },
  {
    name: "a ratio with a baseline below minSessions: the baseline does not count",
    gate: { maxCrashRateRatio: 2, minSessions: 200, minInstalls: 10 },
    baseline: [100, 1],
    release: [400, 40],
    halts: false,
  },
  {
    name: "10 % of 400 sessions above maxCrashRate 2 %, action rollback: halts and rolls back",
    gate: { maxCrashRate: 0.02, action: "rollback", minInstalls: 10 },
    baseline: [100, 0],
    release: [400, 40],
    halts: { rule: "maxCrashRate", rollback: true },
  },
];

beforeAll(async () => {
  await setSetting("Updates:AllowPublicApplicationReleases", "true");
  await setSetting("IpFiltering:BruteForceProtection:Enabled", "false");
  await setSetting("Webhooks:Enabled", "true");
});
afterAll(async () => {
  await setSetting("IpFiltering:BruteForceProtection:Enabled", null);
  await setSetting("Webhooks:Enabled", null);
});

describe("the Wilson lower bound", () => {
  it("is what the formula gives at the edges", () => {
    expect(wilsonLowerBound(0, 0)).toBe(0);
    expect(wilsonLowerBound(0, 500)).toBe(0);
    expect(wilsonLowerBound(30, 500)).toBeCloseTo(0.04234, 4);
    expect(wilsonLowerBound(6, 500)).toBeCloseTo(0.00552, 4);
    expect(wilsonLowerBound(1, 1)).toBeCloseTo(0.2065, 4);
    expect(wilsonLowerBound(500, 500)).toBeCloseTo(0.99239, 4);
  });
});

describe("the health gate", () => {
  for (const c of CASES)
    it(c.name, { timeout: 120_000 }, async () => {
      const sub = await subscribe({ eventTypes: ["release.halted"] });
      const app = await product("1.0.0", "1.1.0");
      expect((await gate(app, "1.1.0", c.gate)).status).toBe(200);
      if (c.baseline) {
        await cohort(app, "1.0.0", ...c.baseline);
        await settled(app.productId, app.releases["1.0.0"]!, (h) => h.sessions >= c.baseline![0]);
      }
      await cohort(app, "1.1.0", ...c.release);
      const sent = Date.now();
      const h = await settled(app.productId, app.releases["1.1.0"]!, (x) => x.sessions >= c.release[0]);
      expect(h.sessions).toBe(c.release[0]);
      if (!c.halts) {
        // Judged with the batches that brought the sessions: a few seconds more and it still goes on.
        await new Promise((resolve) => setTimeout(resolve, 3000));
        expect(await release(app, "1.1.0")).toMatchObject({ halted: false });
        return;
      }
      const r = await haltedWithin(app, "1.1.0", 60_000);
      expect(r, "halted within 60 seconds of the sessions").toMatchObject({ halted: true, haltReason: "health" });
      expect(Date.now() - sent).toBeLessThan(60_000);
      expect(r["haltNote"]).toMatch(/^Health gate: [\d.]+ % of [\d,]+ sessions crashed \(at least [\d.]+ %\)/);
      expect(r["rollback"] === true).toBe(c.halts.rollback === true);
      // The event carries the figures of the batch that crossed the gate: judged with at least minSessions.
      const [event] = await emitted(sub.id, "release.halted");
      expect(event?.data).toMatchObject({
        id: app.releases["1.1.0"],
        reason: "health",
        health: { crossed: { rule: c.halts.rule } },
      });
      const seen = (event?.data as { health: { [k: string]: number } & { crossed: { limit: number } } } | undefined)!
        .health;
      expect(seen.sessions).toBeGreaterThanOrEqual((c.gate["minSessions"] as number | undefined) ?? 100);
      expect(seen.sessions).toBeLessThanOrEqual(c.release[0]);
      expect(seen.crashRateLowerBound).toBeGreaterThan(seen.crossed.limit);
      expect(seen.crashRateLowerBound).toBeCloseTo(wilsonLowerBound(seen["crashedSessions"]!, seen["sessions"]!), 10);
      if (c.halts.rollback) {
        // An install on 1.1.0 is told to go back to 1.0.0 (once the kit's newer marker release is withdrawn).
        const marker = await admin("PUT", `/v1/products/${app.productId}/releases`, {
          productRelease: { id: app.releases[MARKER], public: false },
        });
        expect(marker.status, marker.text).toBe(200);
        for (const version of ["1.0.0", "1.1.0"]) {
          const path = `/v1/products/${app.productId}/releases/${app.releases[version]}/downloads`;
          const installer = await upload(path, bytesOf(700, app.releases[version]));
          expect(installer.status, installer.text).toBe(201);
        }
        const check = await call("GET", `/v1/updates/${app.code}?platform=win-x64&version=1.1.0`, {
          headers: { "X-Service-Install-Id": `i-${unique()}` },
        });
        expect(check.status, check.text).toBe(200);
        expect(check.body["data"], check.text).toMatchObject({
          rollback: true,
          rollbackReason: "halted",
          release: { version: "1.0.0" },
        });
      }
    });

  it("one address with 200 fake installs, all crashing, does not halt a release gated at 100 sessions", async () => {
    const app = await product("1.0.0", "1.1.0");
    expect((await gate(app, "1.1.0", { maxCrashRate: 0.01, minSessions: 100 })).status).toBe(200);
    const ip = "198.51.100.200";
    for (let i = 0; i < 200; i += 20)
      await Promise.all(
        Array.from({ length: 20 }, async () => {
          const sessions = Array.from({ length: 5 }, () => ({
            id: `s-${unique()}`,
            status: "crashed",
            startedAt: ago(60_000),
            durationMs: 1000,
          }));
          const res = await ping(app.code, { version: "1.1.0", sessions }, { ip });
          expect(res.status, res.text).toBe(202);
        }),
      );
    const h = await settled(app.productId, app.releases["1.1.0"]!, (x) => x.installs >= 5);
    await new Promise((resolve) => setTimeout(resolve, 3000));
    expect(await health(app.productId, app.releases["1.1.0"]!)).toMatchObject({ installs: 5, sessions: 25 });
    expect(h.installs).toBe(5);
    expect(await release(app, "1.1.0")).toMatchObject({ halted: false });
  });

  it("refuses a gate with rates outside 0-1, a negative minimum or no rule, naming the field", async () => {
    const app = await product("1.0.0");
    const bad: [unknown, string][] = [
      [{ maxCrashRate: 1.5 }, "maxCrashRate"],
      [{ maxCrashRate: -0.1 }, "maxCrashRate"],
      [{ maxCrashRateRatio: 0 }, "maxCrashRateRatio"],
      [{ maxCrashRate: 0.1, minSessions: -1 }, "minSessions"],
      [{ maxCrashRate: 0.1, minInstalls: -5 }, "minInstalls"],
      [{ maxCrashRate: 0.1, action: "explode" }, "action"],
      [{ minSessions: 10 }, "maxCrashRate"],
    ];
    for (const [healthGate, field] of bad) {
      const res = await gate(app, "1.0.0", healthGate);
      expect(res.status, `${field}: ${res.text}`).toBe(400);
      expect(res.text).toContain(field);
    }
    expect(await release(app, "1.0.0")).not.toHaveProperty("healthGate");
    // A good one is stored with its defaults.
    expect((await gate(app, "1.0.0", { maxCrashRate: 0.02 })).status).toBe(200);
    expect((await release(app, "1.0.0"))["healthGate"]).toEqual({
      maxCrashRate: 0.02,
      minSessions: 100,
      minInstalls: 20,
      action: "halt",
    });
  });
});
