/**
 * Release health in the console (CONTRACT section 13), in Chromium (Debian's, driven by playwright-core) against the
 * bundled Worker under Miniflare (real D1 and Queue): installs of 1.0.0 and 1.1.0 report their sessions through
 * POST /v1/updates/{productCode}/sessions; 1.1.0 has a health gate (at most 1 % of sessions crashed), which its 2.2 %
 * crosses, so the queue consumer halts it (haltReason "health"). Its release page shows its crash-free sessions per day
 * beside its baseline's (1.0.0), the sentence a release manager reads, the figures per platform, and that its health
 * gate halted it with what the gate saw; 1.0.0's page has no baseline; the overview says the same sentence for the
 * halted release and for each product's newest release, and who halted it. It takes the picture docs/console.md shows
 * (docs/console-release-health.png, written with UPDATE_SCREENSHOTS=1).
 *
 * Needs `npm run console:build` first (`npm test` does it) and Chromium (scripts/ensure-chromium.mjs).
 */
import { createHash } from "node:crypto";
import { existsSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Browser, type Page, chromium } from "playwright-core";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
// @ts-expect-error: plain JavaScript modules shared with the benchmark and the scripts
import { root, startLocalWorker } from "../../scripts/local-worker.mjs";
// @ts-expect-error: a plain JavaScript module
import { CHROMIUM_ARGS, ensureChromium } from "../../scripts/ensure-chromium.mjs";
import { healthSentence } from "../../console/src/words.ts";
import type { JsonBody } from "../json-body.ts";
import { screenshot } from "./console-kit.ts";

const KEY = "api_ConsoleHealthKey00000000000000000";
const PASSWORD = "Console-12345";
/** The gate of 1.1.0: halt when surely more than 1 % of its sessions crash, judged from 100 sessions on 20 installs. */
const GATE = { maxCrashRate: 0.01, minSessions: 100, minInstalls: 20 };
/** The haltNote the gate writes: what it saw when the sessions written so far crossed it (healthNote, health-gate.ts). */
const GATE_NOTE =
  /^Health gate: \d+\.\d % of [\d,]+ sessions crashed \(at least \d+\.\d %\) on \d+ installs, above the gate's 1\.0 %\.$/;
let worker: { url: URL; dispose(): Promise<void> };
let browser: Browser;
let page: Page;
let base: string;

async function rest(method: string, path: string, body?: unknown, headers: Record<string, string> = {}) {
  const res = await fetch(new URL(path, base), {
    method,
    headers: { "content-type": "application/json", "x-api-key": KEY, ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json().catch(() => ({}))) as JsonBody };
}

let sessionIds = 0;
/** One install's sessions of `version`: `count` of them started a minute ago, the first `crashed` of them crashed. */
async function report(code: string, install: string, version: string, platform: string, count: number, crashed = 0) {
  const startedAt = new Date(Date.now() - 60_000).toISOString();
  const sessions = Array.from({ length: count }, (_, i) => ({
    id: `session-${++sessionIds}`,
    status: i < crashed ? "crashed" : "exited",
    startedAt,
    durationMs: 30_000,
  }));
  const res = await fetch(new URL(`/v1/updates/${code}/sessions`, base), {
    method: "POST",
    headers: { "content-type": "application/json", "X-Service-Install-Id": install },
    body: JSON.stringify({ version, platform, sessions }),
  });
  expect(res.status, await res.clone().text()).toBe(202);
  expect(((await res.json()) as JsonBody)["accepted"]).toBe(count);
}

/** An install's update check on `version` (the adoption chart counts it as running that version). */
async function check(code: string, install: string, version: string, platform: string) {
  const res = await fetch(new URL(`/v1/updates/${code}?platform=${platform}&version=${version}`, base), {
    headers: { "X-Service-Install-Id": install },
  });
  expect(res.status, await res.text()).toBe(200);
}

beforeAll(async () => {
  const executablePath = ensureChromium();
  if (!existsSync(join(root, "console/dist/console/index.html")))
    throw new Error("The console is not built: run `npm run console:build` (npm test does).");
  worker = await startLocalWorker({
    bindings: {
      Application__JwtSecret: "console-health-jwt-secret-0123456789abcdef",
      Application__EncryptionKey: "console-health-encryption-key",
      Application__AdminUsername: "admin",
      Application__AdminPassword: PASSWORD,
      Application__AdminApiKey: KEY,
      // Releases anyone may install: the installs here report without a license.
      Updates__AllowPublicApplicationReleases: "true",
    },
  });
  base = worker.url.toString();
  // Every install here reports from one address (this machine): count them all (the default is 5 per release a
  // day), and let the 156 requests through the per-address request limit.
  const settings = await rest("PUT", "/v1/settings", {
    settings: [
      { name: "Updates:HealthInstallsPerAddress", value: "1000" },
      { name: "IpFiltering:BruteForceProtection:Enabled", value: "false" },
    ],
  });
  expect(settings.status, JSON.stringify(settings.body)).toBe(200);
  browser = await chromium.launch({ executablePath, args: CHROMIUM_ARGS });
  // The sentence's numbers are written in the viewer's locale: this one's.
  const context = await browser.newContext({ viewport: { width: 1366, height: 800 }, locale: "en-US" });
  page = await context.newPage();
}, 180_000);

afterEach(async (context) => {
  if (context.task.result?.state !== "fail" || !page) return;
  const file = join(mkdtempSync(join(tmpdir(), "console-health-")), "failure.png");
  await page.screenshot({ path: file, fullPage: true }).catch(() => undefined);
  console.error(`console test "${context.task.name}" failed on ${page.url()}; screenshot: ${file}`);
});

afterAll(async () => {
  await browser?.close();
  await worker?.dispose();
});

describe("the health sentence (console/src/words.ts)", () => {
  it("compares with the baseline, leaves it out when there is none, and says when nothing was reported", () => {
    const figures = (sessions: number, crashedSessions: number) => ({ sessions, crashedSessions });
    expect(healthSentence("2.1.0", figures(1204, 26), { version: "2.0.3", ...figures(900, 8) })).toBe(
      "2.1.0: 97.8 % crash-free sessions (2.0.3: 99.1 %) over 1,204 sessions",
    );
    expect(healthSentence("2.1.0", figures(1204, 26), null)).toBe(
      "2.1.0: 97.8 % crash-free sessions over 1,204 sessions",
    );
    expect(healthSentence("2.1.0", figures(1204, 26), { version: "2.0.3", ...figures(0, 0) })).toBe(
      "2.1.0: 97.8 % crash-free sessions over 1,204 sessions",
    );
    expect(healthSentence("2.1.0", figures(0, 0), { version: "2.0.3", ...figures(900, 8) })).toBe(
      "2.1.0: no sessions reported yet",
    );
    // Rounded down: one crash in 3,000 is not "100 %"; none at all is.
    expect(healthSentence("1.0.0", figures(3000, 1))).toBe("1.0.0: 99.9 % crash-free sessions over 3,000 sessions");
    expect(healthSentence("1.0.0", figures(1, 0))).toBe("1.0.0: 100 % crash-free sessions over 1 session");
  });
});

describe("a release's health in the console", () => {
  let productId: number;
  let code: string;
  const releases: Record<string, number> = {};
  const sentence = "1.1.0: 97.8 % crash-free sessions (1.0.0: 99.1 %) over 1,204 sessions";
  /** 1.1.0's haltNote, as its health gate wrote it. */
  let haltNote = "";

  it("charts crash-free sessions beside the baseline's, says so in a sentence, and shows that its health gate halted the release", async () => {
    code = `health-${Date.now() % 100_000}`;
    const product = await rest("POST", "/v1/products", { product: { code, name: "Studio", isApplication: true } });
    expect(product.status, JSON.stringify(product.body)).toBe(200);
    productId = product.body["productId"];
    for (const [version, date] of [
      ["1.0.0", "2026-01-01T00:00:00Z"],
      ["1.1.0", "2026-02-01T00:00:00Z"],
    ] as const) {
      const created = await rest("POST", `/v1/products/${productId}/releases`, {
        productRelease: { version, public: true, requiresMaintenance: false, releaseDate: date },
      });
      expect(created.status, JSON.stringify(created.body)).toBe(200);
      releases[version] = created.body["productReleaseId"];
      // A hosted installer per platform: an update check is answered (and counted for adoption) only with one.
      for (const platform of ["win-x64", "darwin-arm64"]) {
        const hosted = await rest("POST", `/v1/products/${productId}/releases/${releases[version]}/downloads`, {
          releaseDownload: {
            platform,
            kind: "installer",
            fileName: `Studio-${version}-${platform}.zip`,
            url: `https://cdn.example.com/Studio-${version}-${platform}.zip`,
            size: 100,
            sha256: createHash("sha256")
              .update(version + platform)
              .digest("hex"),
            sha512: createHash("sha512")
              .update(version + platform)
              .digest("base64"),
          },
        });
        expect(hosted.status, JSON.stringify(hosted.body)).toBe(201);
      }
    }

    // 1.1.0 watches itself: its health gate, set with the release's other fields before any session arrives.
    const gated = await rest("PUT", `/v1/products/${productId}/releases`, {
      productRelease: { id: releases["1.1.0"], healthGate: GATE },
    });
    expect(gated.status, JSON.stringify(gated.body)).toBe(200);

    // Every install checks for updates: the adoption chart beside the health chart counts the 1.1.0 ones running it
    // and the 1.0.0 ones offered it (first, while 1.1.0 is still offered: its gate halts it once the sessions arrive).
    const checks: (() => Promise<void>)[] = [];
    for (let i = 0; i < 40; i++) checks.push(() => check(code, `win-${i}`, "1.1.0", "win-x64"));
    for (let i = 0; i < 21; i++) checks.push(() => check(code, `mac-${i}`, "1.1.0", "darwin-arm64"));
    for (let i = 0; i < 17; i++) checks.push(() => check(code, `old-${i}`, "1.0.0", "win-x64"));
    // 1.1.0: 40 installs on Windows with 20 sessions each, 10 of them crashed once (800 sessions, 10 crashed); 21 on
    // macOS with 20 sessions each but the last with 4, 16 of them crashed once (404, 16). 1,204 sessions, 26 crashed:
    // 97.8 % crash-free, a crash rate of 2.2 % whose Wilson lower bound (about 1.5 %) is above the gate's 1 %. 1.0.0:
    // 17 installs on Windows with 20 sessions each, 3 crashed: 340, 99.1 %.
    const reports: (() => Promise<void>)[] = [];
    for (let i = 0; i < 40; i++) reports.push(() => report(code, `win-${i}`, "1.1.0", "win-x64", 20, i < 10 ? 1 : 0));
    for (let i = 0; i < 21; i++)
      reports.push(() => report(code, `mac-${i}`, "1.1.0", "darwin-arm64", i === 20 ? 4 : 20, i < 16 ? 1 : 0));
    for (let i = 0; i < 17; i++) reports.push(() => report(code, `old-${i}`, "1.0.0", "win-x64", 20, i < 3 ? 1 : 0));
    for (const batch of [checks, reports])
      for (let i = 0; i < batch.length; i += 10) await Promise.all(batch.slice(i, i + 10).map((send) => send()));

    // The queue consumer counts them a few seconds later.
    const health = async () =>
      (await rest("GET", `/v1/products/${productId}/releases/${releases["1.1.0"]}/health`)).body["data"] as JsonBody;
    await expect
      .poll(
        async () => {
          const h = await health();
          return [h["sessions"], h["crashedSessions"], h["baseline"]?.["sessions"], h["baseline"]?.["crashedSessions"]];
        },
        { timeout: 60_000, interval: 500 },
      )
      .toEqual([1204, 26, 340, 3]);
    expect(await health()).toMatchObject({ installs: 61, crashedInstalls: 26, baseline: { version: "1.0.0" } });
    await expect
      .poll(
        async () =>
          (await rest("GET", `/v1/products/${productId}/releases/${releases["1.1.0"]}/adoption`)).body["data"]?.[
            "totals"
          ],
        { timeout: 60_000, interval: 500 },
      )
      .toEqual({ offered: 17, downloaded: 0, running: 61 });

    // The gate halted 1.1.0 when the sessions written so far crossed it (within seconds of them), and said why.
    const release = async () =>
      (
        await rest(
          "GET",
          `/v1/products/${productId}/releases?filter=${encodeURIComponent(`id == ${releases["1.1.0"]}`)}`,
        )
      ).body["productReleases"][0] as JsonBody;
    await expect.poll(async () => (await release())["halted"], { timeout: 60_000, interval: 500 }).toBe(true);
    const halted = await release();
    expect(halted).toMatchObject({ halted: true, haltReason: "health", rollback: false, healthGate: GATE });
    haltNote = halted["haltNote"];
    expect(haltNote).toMatch(GATE_NOTE);

    await page.goto(new URL("/console/", base).toString());
    await page.getByLabel("User name").fill("admin");
    await page.getByLabel("Password").fill(PASSWORD);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByRole("heading", { name: "Overview" }).waitFor();
    await page.goto(new URL(`/console/#/products/${productId}/releases/${releases["1.1.0"]}`, base).toString());
    await page.getByRole("heading", { name: /Release 1\.1\.0/ }).waitFor();

    const section = page.getByRole("region", { name: "Health" });
    await expect.poll(() => section.getByTestId("health-sentence").textContent(), { timeout: 15_000 }).toBe(sentence);
    const chart = section.getByRole("figure").filter({ hasText: "Crash-free sessions per day (last 14 days)" });
    // The chart's table: the release and its baseline, today's rates (the only day with sessions).
    expect(await chart.getByRole("columnheader").allTextContents()).toEqual(["Day", "1.1.0", "1.0.0 (baseline)"]);
    const rows = chart.locator("tbody").getByRole("row");
    expect(await rows.count()).toBe(1);
    expect(await rows.first().getByRole("cell").allTextContents()).toEqual(["97.8 %", "99.1 %"]);
    // One point per line today, drawn.
    expect(await chart.locator("svg circle").count()).toBe(2);
    expect(await chart.getByRole("img").getAttribute("aria-label")).toMatch(
      /1\.1\.0 97\.8 % 1\.0\.0 \(baseline\) 99\.1 %$/,
    );
    expect(await section.textContent()).toContain("61 installs, 57.3 % crash-free (26 with a crash)");
    expect(await section.getByTestId("health-platforms").textContent()).toBe(
      "Per platform: darwin-arm64 96 % of 404 · win-x64 98.7 % of 800",
    );
    // The adoption chart is still beside it.
    await page.getByRole("region", { name: "Adoption" }).getByRole("figure").waitFor();

    // Who halted it and why, first in the rollout panel: its health gate, with what the gate saw.
    const rollout = page.getByRole("region", { name: "Rollout" });
    expect(await rollout.getByTestId("halt-banner").textContent()).toBe(`Halted by its health gate: ${haltNote}`);
    expect(await rollout.getByTestId("halt-note").textContent()).toBe(haltNote);
    expect(await rollout.getByTestId("rollout-state").textContent()).toMatch(/^Halted by its health gate at /);
    await screenshot(page, "console-release-health.png");

    // 1.0.0 is the oldest release: no baseline, so no parenthesis, and one line in its chart.
    await page.goto(new URL(`/console/#/products/${productId}/releases/${releases["1.0.0"]}`, base).toString());
    await page.getByRole("heading", { name: /Release 1\.0\.0/ }).waitFor();
    const older = page.getByRole("region", { name: "Health" });
    await expect
      .poll(() => older.getByTestId("health-sentence").textContent(), { timeout: 15_000 })
      .toBe("1.0.0: 99.1 % crash-free sessions over 340 sessions");
    expect(await older.getByRole("columnheader").allTextContents()).toEqual(["Day", "1.0.0"]);
    expect(await page.getByRole("region", { name: "Rollout" }).getByTestId("halt-banner").count()).toBe(0);
  });

  it("says the same on the overview, for the halted release and for each product's newest release", async () => {
    await page.goto(new URL("/console/#/", base).toString());
    await page.getByRole("heading", { name: "Overview" }).waitFor();
    const rolling = page.getByRole("region", { name: "Releases rolling out" });
    const row = rolling.getByRole("row").filter({ hasText: "Studio 1.1.0" });
    await expect.poll(() => row.getByTestId("health-line").textContent(), { timeout: 15_000 }).toBe(sentence);
    expect(await row.getByRole("cell").nth(1).textContent()).toBe("Halted by its health gate");
    // Why, in its last column: what the gate saw, and since when.
    expect(await row.getByRole("cell").nth(3).textContent()).toContain(`${haltNote} (since `);
    const newest = page.getByTestId("newest-health");
    await expect
      .poll(() => newest.getByTestId("health-line").allTextContents(), { timeout: 15_000 })
      .toEqual([`${code} ${sentence}`]);
  });
});
