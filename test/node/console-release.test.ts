/**
 * Release control in the console, in Chromium (Debian's, driven by playwright-core) against the bundled Worker under
 * Miniflare (real D1, Queue and the console's static files): installs poll, download and report their version; the
 * release page charts their adoption as the queue consumer counted it, and its rollout controls set a percentage, add
 * and remove a scheduled step, halt the release with a reason (the feed then serves the previous one; the panel shows
 * the reason and the header says halted), roll it back, resume it and mark it critical; the overview
 * charts each product's newest release. It takes the README's screenshot of a release page (docs/console-release.png).
 * Signing identities (CONTRACT section 15): the product's Windows publisher names set in its form, a real signed PE
 * uploaded with its signer shown beside it, another certificate's build refused with the service's message, then
 * accepted by the Administrator and shown as a change of signer (docs/console-signing.png).
 *
 * Needs `npm run console:build` first (`npm test` does it) and Chromium (scripts/ensure-chromium.mjs).
 */
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Browser, type Page, chromium } from "playwright-core";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
// @ts-expect-error: plain JavaScript modules shared with the benchmark and the scripts
import { root, startLocalWorker } from "../../scripts/local-worker.mjs";
// @ts-expect-error: a plain JavaScript module
import { CHROMIUM_ARGS, ensureChromium } from "../../scripts/ensure-chromium.mjs";
import type { JsonBody } from "../json-body.ts";
import { screenshot } from "./console-kit.ts";
import { UNSIGNED_EXE, makeCertificate, signPe } from "./signing-fixtures.ts";
// @ts-expect-error: a plain JavaScript module shared with the scripts
import { ensureSigningTools } from "../../scripts/ensure-signing-tools.mjs";

const KEY = "api_ConsoleReleaseKey000000000000000";
const PASSWORD = "Console-12345";
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

/** An anonymous request as an install's updater makes it (its install id; the version it runs on feeds). */
async function poll(path: string, install: string, current?: string): Promise<Response> {
  return fetch(new URL(path, base), {
    redirect: "manual",
    headers: { "X-Service-Install-Id": install, ...(current ? { "X-Service-Current-Version": current } : {}) },
  });
}

beforeAll(async () => {
  const executablePath = ensureChromium();
  ensureSigningTools();
  if (!existsSync(join(root, "console/dist/console/index.html")))
    throw new Error("The console is not built: run `npm run console:build` (npm test does).");
  worker = await startLocalWorker({
    bindings: {
      Application__JwtSecret: "console-release-jwt-secret-0123456789abcdef",
      Application__EncryptionKey: "console-release-encryption-key",
      Application__AdminUsername: "admin",
      Application__AdminPassword: PASSWORD,
      Application__AdminApiKey: KEY,
      // Releases anyone may install: the installs here poll without a license.
      Updates__AllowPublicApplicationReleases: "true",
    },
  });
  base = worker.url.toString();
  browser = await chromium.launch({ executablePath, args: CHROMIUM_ARGS });
  const context = await browser.newContext({ viewport: { width: 1366, height: 800 } });
  page = await context.newPage();
}, 180_000);

afterEach(async (context) => {
  if (context.task.result?.state !== "fail" || !page) return;
  const file = join(mkdtempSync(join(tmpdir(), "console-release-")), "failure.png");
  await page.screenshot({ path: file, fullPage: true }).catch(() => undefined);
  console.error(`console test "${context.task.name}" failed on ${page.url()}; screenshot: ${file}`);
});

afterAll(async () => {
  await browser?.close();
  await worker?.dispose();
});

describe("a release's adoption and rollout in the console", () => {
  let productId: number;
  let code: string;
  const releases: Record<string, number> = {};

  it("charts the installs offered, downloading and running a release, as the queue counted them", async () => {
    code = `studio-${Date.now() % 100_000}`;
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
      // A hosted installer: its download is a redirect, counted like a delivered file.
      const hosted = await rest("POST", `/v1/products/${productId}/releases/${releases[version]}/downloads`, {
        releaseDownload: {
          platform: "win-x64",
          kind: "installer",
          fileName: `Studio Setup ${version}.exe`,
          url: `https://cdn.example.com/Studio-${version}.exe`,
          size: 100,
          sha256: createHash("sha256").update(version).digest("hex"),
          sha512: createHash("sha512").update(version).digest("base64"),
        },
      });
      expect(hosted.status, JSON.stringify(hosted.body)).toBe(201);
    }

    // Three installs on 1.0.0 poll the feed (one of them twice) and are offered 1.1.0; two download it; those two
    // then report running 1.1.0 on an update check.
    const feed = `/v1/updates/${code}/feed/stable/win-x64/latest.yml`;
    for (const install of ["install-1", "install-2", "install-3", "install-1"]) {
      const res = await poll(feed, install, "1.0.0");
      const yaml = await res.text();
      expect(res.status, yaml).toBe(200);
      expect(yaml).toContain('version: "1.1.0"');
      if (install !== "install-3") {
        const url = /url: "([^"]+)"/.exec(yaml)![1]!;
        expect((await poll(url, install)).status).toBe(302);
      }
    }
    for (const install of ["install-1", "install-2"]) {
      const check = await poll(`/v1/updates/${code}?platform=win-x64&version=1.1.0`, install);
      expect(check.status, await check.text()).toBe(200);
    }
    // The queue consumer writes the sightings within its batch timeout.
    await expect
      .poll(
        async () =>
          (await rest("GET", `/v1/products/${productId}/releases/${releases["1.1.0"]}/adoption`)).body["data"]?.[
            "totals"
          ],
        { timeout: 60_000, interval: 500 },
      )
      .toEqual({ offered: 3, downloaded: 2, running: 2 });

    await page.goto(new URL("/console/", base).toString());
    await page.getByLabel("User name").fill("admin");
    await page.getByLabel("Password").fill(PASSWORD);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByRole("heading", { name: "Overview" }).waitFor();
    // The overview: each product's newest release, with its totals in the chart's table.
    const overview = page.getByRole("figure").filter({ hasText: "Adoption of each product's newest release" });
    await expect
      .poll(() => overview.getByRole("row", { name: `${code} 1.1.0` }).textContent(), { timeout: 15_000 })
      .toBe(`${code} 1.1.0322`);

    await page.goto(new URL(`/console/#/products/${productId}/releases/${releases["1.1.0"]}`, base).toString());
    await page.getByRole("heading", { name: /Release 1\.1\.0/ }).waitFor();
    const adoption = page.getByRole("region", { name: "Adoption" });
    await expect.poll(() => adoption.locator(".totals").textContent()).toBe("Offered 3Downloaded 2Running 2");
    // Today's bar group, in the chart's table: offered 3, downloaded 2, running 2.
    const today = adoption.getByRole("row").last();
    expect(await today.getByRole("cell").allTextContents()).toEqual(["3", "2", "2"]);
  });

  it("sets a percentage, schedules a step and removes it, halts the release and resumes it", async () => {
    const rollout = page.getByRole("region", { name: "Rollout" });
    await rollout.getByLabel("Rollout %").fill("25");
    await rollout.getByRole("button", { name: "Set rollout" }).click();
    await rollout.getByText("Rollout set to 25 %").waitFor();
    await expect.poll(() => rollout.getByTestId("rollout-state").textContent()).toBe("25 %");
    const release = async () =>
      (
        await rest(
          "GET",
          `/v1/products/${productId}/releases?filter=${encodeURIComponent(`id == ${releases["1.1.0"]}`)}`,
        )
      ).body["productReleases"][0] as JsonBody;
    expect(await release()).toMatchObject({ stagingPercentage: 25, halted: false });

    // A step tomorrow at 60 %, then removed again.
    const tomorrow = new Date(Date.now() + 86_400_000);
    const local = new Date(tomorrow.getTime() - tomorrow.getTimezoneOffset() * 60_000).toISOString().slice(0, 16);
    await rollout.getByLabel("Step %").fill("60");
    await rollout.getByLabel("from").fill(local);
    await rollout.getByRole("button", { name: "Add step" }).click();
    await rollout.getByText(/^Step added: 60 %/).waitFor();
    const scheduled = (await release())["rolloutSchedule"] as { percentage: number; at: string }[];
    expect(scheduled).toHaveLength(1);
    expect(scheduled[0]!.percentage).toBe(60);
    await rollout.getByRole("button", { name: /^Remove the step 60 %/ }).click();
    await rollout.getByText("Step removed").waitFor();
    expect((await release())["rolloutSchedule"] ?? null).toBeNull();

    // Halt, saying why: the feed serves 1.0.0 to an install that is not on 1.1.0; resume: 1.1.0 again (at 100 %).
    const state = page.getByTestId("release-state");
    expect(await state.textContent()).toBe("published");
    await rollout.getByLabel("Reason").fill("Crashes on start with GPU driver 531");
    await rollout.getByRole("button", { name: "Halt" }).click();
    await rollout.getByText("The release is halted: callers get the previous release").waitFor();
    await expect.poll(() => rollout.getByTestId("rollout-state").textContent()).toMatch(/^Halted by hand/);
    expect(await rollout.getByTestId("halt-note").textContent()).toBe("Crashes on start with GPU driver 531");
    await expect.poll(() => state.textContent()).toBe("halted");
    expect(await release()).toMatchObject({
      halted: true,
      haltReason: "manual",
      haltNote: "Crashes on start with GPU driver 531",
    });
    const feed = `/v1/updates/${code}/feed/stable/win-x64/latest.yml`;
    expect(await (await poll(feed, "install-9", "1.0.0")).text()).not.toContain('version: "1.1.0"');
    // Rollback while halted: installs running 1.1.0 are offered 1.0.0.
    await rollout.getByLabel("Roll back installs running it (while halted)").click();
    await rollout.getByText("Rollback on: installs running it get the previous release").waitFor();
    await expect.poll(() => rollout.getByTestId("rollout-state").textContent()).toMatch(/rolling back$/);
    expect(await release()).toMatchObject({ halted: true, rollback: true });
    await rollout.getByLabel("Rollout %").fill("100");
    await rollout.getByRole("button", { name: "Set rollout" }).click();
    await rollout.getByText("Rollout set to 100 %").waitFor();
    await screenshot(page, "console-release.png");
    await rollout.getByRole("button", { name: "Resume" }).click();
    await rollout.getByText("The release is resumed").waitFor();
    await expect.poll(() => rollout.getByTestId("rollout-state").textContent()).toBe("100 %");
    expect(await rollout.getByTestId("halt-note").count()).toBe(0);
    expect(await state.textContent()).toBe("published");
    expect(await release()).toMatchObject({ halted: false, stagingPercentage: 100 });
    expect(await release()).not.toHaveProperty("haltNote");
    await rollout.getByLabel("Critical").click();
    await rollout.getByText("Marked critical: older installs must update").waitFor();
    expect(await release()).toMatchObject({ critical: true });
    await expect
      .poll(async () => (await (await poll(feed, "install-9", "1.0.0")).text()).includes('"1.1.0"'))
      .toBe(true);
    // The chart is still there, with its counts.
    await expect
      .poll(() => page.getByRole("region", { name: "Adoption" }).locator(".totals").textContent())
      .toMatch(/^Offered \d+Downloaded 2Running 2$/);
  });
});

describe("signing identities on the release page (CONTRACT section 15)", () => {
  it("shows each uploaded build's signer, the service's refusal of another certificate, and the accepted change", async () => {
    // Two real signed PEs: rcedit-x64.exe signed by "Studio Software Ltd", and by "Studio GmbH".
    const dir = mkdtempSync(join(tmpdir(), "console-signing-"));
    const [ltd, gmbh] = ["Studio Software Ltd", "Studio GmbH"].map((name) => makeCertificate(name, dir));
    mkdirSync(join(dir, "arm64"));
    const signed = signPe(UNSIGNED_EXE, join(dir, "Studio Setup 1.2.0.exe"), ltd!);
    const other = signPe(UNSIGNED_EXE, join(dir, "arm64", "Studio Setup 1.2.0 arm64.exe"), gmbh!);
    const product = await rest("POST", "/v1/products", {
      product: { code: `signed-${Date.now() % 100_000}`, name: "Studio", isApplication: true },
    });
    const productId = product.body["productId"];
    const created = await rest("POST", `/v1/products/${productId}/releases`, {
      productRelease: { version: "1.2.0", public: false, requiresMaintenance: false },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const releaseId = created.body["productReleaseId"];
    // A hosted macOS zip: the service never reads its bytes, so the console shows nothing beside it.
    const hosted = await rest("POST", `/v1/products/${productId}/releases/${releaseId}/downloads`, {
      releaseDownload: {
        platform: "darwin-arm64",
        kind: "zip",
        fileName: "Studio-1.2.0-arm64-mac.zip",
        url: "https://cdn.example.com/Studio-1.2.0-arm64-mac.zip",
        size: 100,
        sha256: createHash("sha256").update("mac").digest("hex"),
        sha512: createHash("sha512").update("mac").digest("base64"),
      },
    });
    expect(hosted.status, JSON.stringify(hosted.body)).toBe(201);

    // The product names its Windows publisher, one per line in its form.
    await page.goto(new URL(`/console/#/products/${productId}`, base).toString());
    await page.getByRole("button", { name: "Edit product" }).click();
    const form = page.getByRole("form", { name: "Edit product" });
    await form.getByLabel("Windows publisher names").fill("Studio Software Ltd\n");
    await form.getByRole("button", { name: "Save" }).click();
    await form.waitFor({ state: "detached" });
    const saved = await rest("GET", `/v1/products?filter=${encodeURIComponent(`id == ${productId}`)}`);
    expect(saved.body["products"][0]["windowsPublisherNames"]).toEqual(["Studio Software Ltd"]);

    // The build signed by it is stored, its signer beside it.
    await page.goto(new URL(`/console/#/products/${productId}/releases/${releaseId}`, base).toString());
    const upload = page.getByRole("form", { name: "Upload an installer" });
    const downloads = page.getByRole("region", { name: "Downloads" });
    await upload.getByLabel("Platform").selectOption("win-x64");
    await upload.getByLabel("File", { exact: true }).setInputFiles(signed);
    await upload.getByRole("button", { name: "Upload" }).click();
    await page.getByText(/^Uploaded Studio Setup 1\.2\.0\.exe/).waitFor();
    const row = downloads.getByRole("row", { name: /Studio Setup 1\.2\.0\.exe/ });
    await expect.poll(() => row.getByTestId("signing").textContent()).toBe("signed by Studio Software Ltd");
    expect(
      await downloads
        .getByRole("row", { name: /arm64-mac\.zip/ })
        .getByTestId("signing")
        .count(),
    ).toBe(0);

    // Another certificate's build: the service's refusal, in its words; nothing stored.
    await upload.getByLabel("Platform").selectOption("win-arm64");
    await upload.getByLabel("File", { exact: true }).setInputFiles(other);
    await upload.getByRole("button", { name: "Upload" }).click();
    const refusal = upload.getByRole("alert");
    await refusal.waitFor();
    expect(await refusal.textContent()).toMatch(
      /^Studio Setup 1\.2\.0 arm64\.exe: its Authenticode signer is "Studio GmbH", expected "Studio Software Ltd": electron-updater refuses/,
    );
    expect(await downloads.getByRole("row", { name: /arm64\.exe/ }).count()).toBe(0);

    // The Administrator accepts the new signer after a confirmation: stored, and recorded on the release.
    page.once("dialog", (dialog) => void dialog.accept());
    await upload.getByRole("button", { name: "Accept the new signer" }).click();
    await page.getByText(/^Uploaded Studio Setup 1\.2\.0 arm64\.exe/).waitFor();
    const changed = downloads.getByRole("row", { name: /arm64\.exe/ }).getByTestId("signing");
    await expect.poll(() => changed.textContent()).toBe("signed by Studio GmbH");
    const changes = page.getByRole("region", { name: "Signer changes" });
    await expect
      .poll(() => changes.getByRole("listitem").textContent())
      .toMatch(/^Signer changed for win-arm64: Studio Software Ltd → Studio GmbH, accepted by admin on /);
    await screenshot(page, "console-signing.png");
  });
});
