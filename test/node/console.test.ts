/**
 * The admin console in a real browser: Debian's Chromium driven by playwright-core against the bundled Worker under
 * Miniflare (real D1, R2, Durable Objects and Queue; the console's files from its static assets binding). One
 * staff member's day: sign in, create a product and a release, upload an installer and watch the progress, create a
 * license from a template, see an activation and a floating seat appear while an application calls the licensing
 * API, revoke the license, read a failed webhook delivery and retry it, create an API key, sign out.
 * It also takes the README's screenshot (docs/console.png).
 *
 * Needs `npm run console:build` first (`npm test` does it) and Chromium (installed by scripts/ensure-chromium.mjs
 * when missing and possible; otherwise this file fails and says why).
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Browser, type Page, chromium } from "playwright-core";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
// @ts-expect-error: plain JavaScript modules shared with the benchmark and the scripts
import { root, startLocalWorker } from "../../scripts/local-worker.mjs";
// @ts-expect-error: a plain JavaScript module
import { CHROMIUM_ARGS, ensureChromium } from "../../scripts/ensure-chromium.mjs";
// @ts-expect-error: a plain JavaScript module, the generator's own check
import { checkGenerated } from "../../scripts/openapi-types.mjs";
import { type WebhookReceiver, startWebhookReceiver } from "../webhook-receiver";
import type { JsonBody } from "../json-body.ts";
import { expressionBox, screenshot } from "./console-kit.ts";

const KEY = "api_ConsoleAdminKey0000000000000000";
const PASSWORD = "Console-12345";
let worker: { url: URL; dispose(): Promise<void> };
let receiver: WebhookReceiver;
let browser: Browser;
let page: Page;
let base: string;

/** Calls the REST API as an application or a script would (not through the console). */
async function rest(method: string, path: string, init: { key?: string; token?: string; body?: unknown } = {}) {
  const headers: Record<string, string> = { "content-type": "application/json" };
  if (init.key) headers["x-api-key"] = init.key;
  if (init.token) headers["authorization"] = `Bearer ${init.token}`;
  const res = await fetch(new URL(path, base), {
    method,
    headers,
    body: init.body === undefined ? undefined : JSON.stringify(init.body),
  });
  return { status: res.status, body: (await res.json().catch(() => ({}))) as JsonBody };
}

/** Signs an application in with its license's user key; its bearer token. */
async function appToken(userKey: string): Promise<string> {
  const res = await rest("POST", "/v1/auth/login", { body: { userKey } });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body["token"] as string;
}

async function licenseByLicenseId(licenseId: string) {
  const res = await rest("GET", `/v1/licenses?filter=${encodeURIComponent(`licenseId == "${licenseId}"`)}`, {
    key: KEY,
  });
  return res.body["licenses"][0] as JsonBody;
}

beforeAll(async () => {
  // Fails the file with the reason when Chromium is missing and cannot be installed.
  const executablePath = ensureChromium();
  if (!existsSync(join(root, "console/dist/console/index.html")))
    throw new Error("The console is not built: run `npm run console:build` (npm test does).");
  receiver = await startWebhookReceiver();
  worker = await startLocalWorker({
    bindings: {
      Application__JwtSecret: "console-test-jwt-secret-0123456789abcdef",
      Application__EncryptionKey: "console-test-encryption-key",
      Application__AdminUsername: "admin",
      Application__AdminPassword: PASSWORD,
      Application__AdminApiKey: KEY,
      Webhooks__AllowInsecureUrls: "true",
    },
  });
  base = worker.url.toString();
  browser = await chromium.launch({
    executablePath,
    args: CHROMIUM_ARGS,
  });
  const context = await browser.newContext({ viewport: { width: 1366, height: 800 } });
  page = await context.newPage();
  page.on("dialog", (dialog) => void dialog.accept());
}, 180_000);

// A failed step leaves a picture of the page behind, named in the output.
afterEach(async (context) => {
  if (context.task.result?.state !== "fail" || !page) return;
  const file = join(mkdtempSync(join(tmpdir(), "console-test-")), "failure.png");
  await page.screenshot({ path: file, fullPage: true }).catch(() => undefined);
  console.error(`console test "${context.task.name}" failed on ${page.url()}; screenshot: ${file}`);
});

afterAll(async () => {
  await browser?.close();
  await worker?.dispose();
  await receiver?.close();
});

describe("the console's typed client", () => {
  it("was generated from the OpenAPI document the Worker serves now (else run `npm run console:schema`)", async () => {
    const document = await (await fetch(new URL("/swagger/v1/swagger.json", base))).json();
    const { file, committed, served } = checkGenerated("console", document);
    expect(committed, `${file} is out of date: run \`npm run console:schema\` and commit it`).toBe(served);
  });
});

describe("the admin console in Chromium", () => {
  let productId: string;
  let floatingLicense: string;
  let ciKey: string;

  it("signs in with a user name and password; the session key is in an HttpOnly cookie scripts cannot read", async () => {
    await page.goto(new URL("/console/", base).toString());
    await page.getByLabel("User name").fill("admin");
    await page.getByLabel("Password").fill("wrong-password");
    await page.getByRole("button", { name: "Sign in" }).click();
    // The API's own words.
    await expect.poll(() => page.getByRole("alert").textContent()).toBe("Invalid username or password.");
    await page.getByLabel("Password").fill(PASSWORD);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByRole("heading", { name: "Overview" }).waitFor();
    const cookies = await page.context().cookies();
    const session = cookies.find((c) => c.name === "__Host-console-key");
    expect(session).toMatchObject({ httpOnly: true, secure: true, sameSite: "Strict", path: "/" });
    expect(await page.evaluate("document.cookie")).not.toContain("api_");
    // Only the navigation the Administrator may use (all of it), and the counts from /v1/info.
    await page.getByRole("link", { name: "API keys" }).waitFor();
    await page.getByRole("link", { name: "Audit trail" }).waitFor();
  });

  it("creates a product and a release, uploads an installer with a progress bar, publishes and stages it", async () => {
    await page.getByRole("link", { name: "Products & releases" }).click();
    await page.getByRole("button", { name: "New product" }).click();
    await page.getByLabel("Code", { exact: true }).fill("studio");
    await page.getByLabel("Name", { exact: true }).fill("Studio");
    await page.getByLabel("Application (receives releases)").check();
    await page.getByRole("button", { name: "Create product" }).click();
    await page.getByRole("heading", { name: "Studio (studio)" }).waitFor();
    productId = /#\/products\/(\d+)/.exec(page.url())![1]!;

    await page.getByRole("button", { name: "New release" }).click();
    await page.getByLabel("Version").fill("1.0.0");
    await page.getByLabel("Name", { exact: true }).fill("Studio 1.0");
    await page.getByRole("button", { name: "Create release" }).click();
    await page.getByRole("heading", { name: /Release 1\.0\.0/ }).waitFor();
    expect(await page.getByRole("heading", { name: /Release 1\.0\.0/ }).textContent()).toContain("hidden");

    // Record every value the progress bar takes while the file goes up.
    // (Browser code as a string: the test's TypeScript has no DOM types.)
    await page.evaluate(`(() => {
      const seen = (window.progressSeen = []);
      new MutationObserver(() => {
        const bar = document.querySelector("progress");
        if (bar) seen.push(Number(bar.value) / Number(bar.max));
      }).observe(document.body, { subtree: true, childList: true, attributes: true, attributeFilter: ["value"] });
    })()`);
    const size = 12 * 1024 * 1024;
    const upload = page.getByRole("form", { name: "Upload an installer" });
    await upload.getByLabel("Platform").selectOption("win-x64");
    await upload.getByLabel("Kind").selectOption("installer");
    await upload.getByLabel("File").setInputFiles({
      name: "Studio Setup 1.0.0.exe",
      mimeType: "application/octet-stream",
      buffer: Buffer.alloc(size, 7),
    });
    await page.getByRole("button", { name: "Upload", exact: true }).click();
    // The size in words (binary units), the exact byte count beside it in the viewer's locale.
    await page
      .getByText(/Uploaded Studio Setup 1\.0\.0\.exe: 12\.0 MiB \(12,582,912 bytes\), sha512 /)
      .waitFor({ timeout: 60_000 });
    const seen = (await page.evaluate("window.progressSeen")) as number[];
    expect(seen[0]).toBe(0);
    expect(seen.at(-1)).toBe(1);
    expect([...seen].sort((a, b) => a - b)).toEqual(seen);
    expect(await page.locator("progress").getAttribute("value")).toBe(String(size));
    await page.getByRole("cell", { name: "Studio Setup 1.0.0.exe" }).waitFor();
    const artifact = page.getByRole("region", { name: "Downloads" }).getByRole("row").filter({ hasText: "Setup" });
    await artifact.getByRole("cell", { name: "12.0 MiB", exact: true }).waitFor();

    await page.getByRole("button", { name: "Publish" }).click();
    await page.getByText("The release is published").waitFor();
    await page.getByLabel("Rollout %").fill("40");
    await page.getByRole("button", { name: "Set rollout" }).click();
    await page.getByText("Rollout set to 40 %").waitFor();
    const releases = await rest("GET", `/v1/products/${productId}/releases`, { key: KEY });
    expect(releases.body["productReleases"][0]).toMatchObject({
      version: "1.0.0",
      public: true,
      stagingPercentage: 40,
    });

    await page.getByRole("button", { name: "Verify artifacts" }).click();
    await page.getByText(/^Verified: /).waitFor();
    // The feed preview answers (its own test, at the end, goes through it).
    const feed = page.getByRole("region", { name: "Feed" });
    await feed.getByRole("button", { name: "Preview the feed" }).click();
    await expect.poll(() => feed.getByRole("status", { name: "Feed answer" }).textContent()).toMatch(/HTTP \d+/);
  });

  it("edits the release notes, and uploads a file above the single-request limit in parts (resumable)", async () => {
    // Release notes: written on the release page, read back through the API.
    const notes = page.getByRole("form", { name: "Release notes" });
    await notes.getByLabel(/What is new in 1\.0\.0/).fill("Faster start-up.\nFixes the export crash.");
    await notes.getByRole("button", { name: "Save release notes" }).click();
    await page.getByText("Release notes saved").waitFor();
    const saved = await rest("GET", `/v1/products/${productId}/releases`, { key: KEY });
    expect(saved.body["productReleases"][0]).toMatchObject({
      releaseNotes: "Faster start-up.\nFixes the export crash.",
    });

    // A file one byte above the console's single-request limit goes up in parts: create, PUT per part, complete.
    const source = readFileSync(join(root, "console/src/upload.ts"), "utf8");
    const [, mib] = /export const SINGLE_LIMIT = (\d+) \* 1024 \* 1024;/.exec(source)!;
    const size = Number(mib) * 1024 * 1024 + 1;
    const release = await rest("POST", `/v1/products/${productId}/releases`, {
      key: KEY,
      body: { productRelease: { version: "1.1.0-beta.1", channel: "insider" } },
    });
    expect(release.status, JSON.stringify(release.body)).toBeLessThan(300);
    const file = join(mkdtempSync(join(tmpdir(), "console-upload-")), "Studio-1.1.0-beta.1.zip");
    writeFileSync(file, Buffer.alloc(size, 3));
    const sent: string[] = [];
    const watch = (request: { method(): string; url(): string }) => {
      if (request.url().includes("/downloads")) sent.push(`${request.method()} ${new URL(request.url()).pathname}`);
    };
    page.on("request", watch);
    try {
      await page.goto(
        new URL(`/console/#/products/${productId}/releases/${release.body["productReleaseId"]}`, base).toString(),
      );
      await page.getByRole("heading", { name: /Release 1\.1\.0-beta\.1/ }).waitFor();
      const upload = page.getByRole("form", { name: "Upload an installer" });
      await upload.getByLabel("Platform").selectOption("linux-x64");
      await upload.getByLabel("Kind").selectOption("zip");
      await upload.getByLabel("File").setInputFiles(file);
      await page.getByRole("button", { name: "Upload", exact: true }).click();
      await page
        .getByText(
          new RegExp(
            `^Uploaded Studio-1\\.1\\.0-beta\\.1\\.zip: ${mib}\\.0 MiB \\(${size.toLocaleString("en-US")} bytes\\)`,
          ),
        )
        .waitFor({ timeout: 120_000 });
    } finally {
      page.off("request", watch);
      rmSync(file, { force: true });
    }
    const uploads = sent.filter((s) => s.includes("/uploads"));
    const parts = Math.ceil(size / (16 * 1024 * 1024));
    expect(uploads[0]).toMatch(/^POST .*\/downloads\/uploads$/);
    expect(uploads.filter((s) => /^PUT .*\/uploads\/[^/]+\/parts\/\d+$/.test(s))).toHaveLength(parts);
    expect(uploads.at(-1)).toMatch(/^POST .*\/uploads\/[^/]+\/complete$/);
    // Never the single multipart POST.
    expect(sent.filter((s) => /^POST .*\/downloads$/.test(s))).toEqual([]);
    const stored = await rest(
      "GET",
      `/v1/products/${productId}/releases/${release.body["productReleaseId"]}/downloads`,
      {
        key: KEY,
      },
    );
    expect(stored.body["releaseDownloads"]).toMatchObject([{ fileName: "Studio-1.1.0-beta.1.zip", size }]);
  }, 180_000);

  it("creates a license template and a Floating license from it", async () => {
    await page.getByRole("link", { name: "License templates" }).click();
    await page.getByRole("button", { name: "New license template" }).click();
    await page.getByLabel("Name", { exact: true }).fill("Studio floating, 2 seats");
    await page.getByLabel("Product id").fill(productId);
    await page.getByLabel("Licensing mode").selectOption("Floating");
    await page.getByLabel("Max clients").fill("2");
    await page.getByLabel("Expire days").fill("365");
    await page.getByRole("button", { name: "Create" }).click();
    await page.getByRole("cell", { name: "Studio floating, 2 seats" }).waitFor();

    await page.getByRole("link", { name: "Licenses" }).click();
    await page.getByRole("button", { name: "New license from a template" }).click();
    await page.getByLabel("Template", { exact: true }).selectOption({ label: "1: Studio floating, 2 seats" });
    await page.getByLabel("Licensee name").fill("Initech");
    await page.getByRole("button", { name: "Create license" }).click();
    const notice = await page.getByText(/^License lic\w+ created$/).textContent();
    floatingLicense = /License (lic\w+) created/.exec(notice!)![1]!;
    await page.getByRole("link", { name: floatingLicense }).click();
    await page.getByRole("heading", { name: new RegExp(`License ${floatingLicense} \\(Initech\\)`) }).waitFor();
    // Labels in words, enumerations and referenced records by name beside the id, dates in the viewer's locale.
    const fact = (label: string) => page.locator(`dl.facts dt:text-is("${label}") + dd`);
    expect(await fact("Licensee").textContent()).toBe("Initech");
    // A name comes from a lookup, asked again a second later when it failed (a busy service): poll past that retry.
    const named = { timeout: 10_000 };
    await expect.poll(() => fact("Product").textContent(), named).toBe(`Studio #${productId}`);
    await expect.poll(() => fact("Template").textContent(), named).toBe("Studio floating, 2 seats #1");
    expect(await fact("Licensing mode").textContent()).toBe("Floating");
    const license = await licenseByLicenseId(floatingLicense);
    const localDate = await page.evaluate(
      `new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "short" }).format(new Date(${JSON.stringify(license["expireDate"])}))`,
    );
    expect(await fact("Expires").textContent()).toBe(localDate);
    expect(await page.locator("dl.facts dt").allTextContents()).not.toContain("licenseeName");
    await page.getByRole("navigation", { name: "Console" }).getByRole("link", { name: "Licenses" }).click();
    const listed = page.getByRole("region", { name: "Licenses" }).getByRole("row").filter({ hasText: floatingLicense });
    await listed.getByRole("cell", { name: `Studio #${productId}`, exact: true }).waitFor();
    await listed.getByRole("cell", { name: "Floating", exact: true }).waitFor();
    await page.getByRole("link", { name: floatingLicense }).click();
    await page.getByRole("heading", { name: new RegExp(`License ${floatingLicense}`) }).waitFor();
    expect(await licenseByLicenseId(floatingLicense)).toMatchObject({
      licensingMode: 2 /* Floating */,
      maxClients: 2,
      licenseeName: "Initech",
      productId: Number(productId),
    });
  });

  it("shows a floating seat and an activation appear while applications call the licensing API, and frees a seat", async () => {
    // A floating seat: the application asks for one; the open license page reads seats again by itself.
    const floating = await licenseByLicenseId(floatingLicense);
    const token = await appToken(floating["userKey"]);
    for (const [machineId, clientId] of [
      ["DESK-7", "alice"],
      ["DESK-9", "bob"],
    ]) {
      const seat = await rest("POST", "/v1/license/request", {
        token,
        body: { userKey: floating["userKey"], machineId, clientId, clientName: `${clientId}'s desk` },
      });
      expect(seat.status, JSON.stringify(seat.body)).toBe(200);
    }
    const seats = page.getByRole("region", { name: "Activations and floating seats" });
    await seats.getByRole("cell", { name: "alice", exact: true }).waitFor({ timeout: 15_000 });
    await seats.getByRole("cell", { name: "bob", exact: true }).waitFor({ timeout: 15_000 });
    expect(await seats.getByRole("cell", { name: "Floating", exact: true }).count()).toBe(2);

    // An activation, on an Activation license made from a second template (through the API, to keep the test short).
    const template = await rest("POST", "/v1/license-templates", {
      key: KEY,
      body: {
        licenseTemplate: {
          name: "Studio Pro",
          productId: Number(productId),
          licensingMode: "Activation",
          maxClients: 2,
        },
      },
    });
    const created = await rest("POST", "/v1/licenses", {
      key: KEY,
      body: {
        license: {
          productId: Number(productId),
          templateId: template.body["licenseTemplateId"],
          licenseeName: "Globex",
        },
      },
    });
    const activation = await licenseByLicenseId(created.body["licenseId"]);
    await page.goto(new URL(`/console/#/licenses/${activation["licenseId"]}`, base).toString());
    await page.getByRole("heading", { name: new RegExp(`License ${activation["licenseId"]}`) }).waitFor();
    const activated = await rest("POST", "/v1/license/activate", {
      token: await appToken(activation["userKey"]),
      body: { userKey: activation["userKey"], machineId: "PC-0042", clientName: "Office PC" },
    });
    expect(activated.status, JSON.stringify(activated.body)).toBe(200);
    // A machine is shown by its name, its id beside it (shortened when long, with a copy button).
    await seats.getByRole("row").filter({ hasText: "PC-0042" }).waitFor({ timeout: 15_000 });
    await seats.getByRole("cell", { name: "Activation", exact: true }).waitFor();
    await page.getByRole("button", { name: "Free machine" }).waitFor();
    await page.locator(".badge", { hasText: "Activated" }).waitFor({ timeout: 15_000 });

    // Freeing bob's floating seat from the console ends it in the API; alice keeps hers.
    await page.goto(new URL(`/console/#/licenses/${floatingLicense}`, base).toString());
    await seats.getByRole("row").filter({ hasText: "bob" }).getByRole("button", { name: "Free seat" }).click();
    await seats.getByRole("cell", { name: "bob", exact: true }).waitFor({ state: "detached", timeout: 15_000 });
    const tokens = await rest("GET", `/v1/licenses/${floatingLicense}/tokens`, { key: KEY });
    expect(tokens.body["licenseTokens"].map((t: { clientId: string }) => t.clientId)).toEqual(["alice"]);

    // Offline (issue 29): carol borrows the free seat for a trip; the page lists her license file and the borrowed
    // seat, and Return frees it in the API at once. The license has checked in.
    const borrowed = await rest("POST", "/v1/license/borrow", {
      token,
      body: { userKey: floating["userKey"], machineId: "PC-TRIP", clientId: "carol", hours: 48 },
    });
    expect(borrowed.status, JSON.stringify(borrowed.body)).toBe(200);
    const files = page.getByRole("region", { name: "License files and borrowed seats" });
    const trip = files.getByRole("row").filter({ hasText: "PC-TRIP" });
    await trip.getByText(/^held until /).waitFor({ timeout: 15_000 });
    await page.getByText(/^Last check-in: (?!never)/).waitFor({ timeout: 15_000 });
    await trip.getByRole("button", { name: "Return" }).click();
    await trip.getByText(/^returned /).waitFor({ timeout: 15_000 });
    const after = await rest("GET", `/v1/licenses/${floatingLicense}/tokens`, { key: KEY });
    expect(after.body["licenseTokens"].map((t: { clientId: string }) => t.clientId)).toEqual(["alice"]);
  });

  it("extends a license's support and issues an offline activation token", async () => {
    const globex = (
      await rest("GET", `/v1/licenses?filter=${encodeURIComponent('licenseeName == "Globex"')}`, { key: KEY })
    ).body["licenses"][0];
    await page.goto(new URL(`/console/#/licenses/${globex["licenseId"]}`, base).toString());
    await page.getByRole("heading", { name: new RegExp(`License ${globex["licenseId"]} \\(Globex\\)`) }).waitFor();
    await page.getByLabel("Support until").fill("2031-06-30");
    await page.getByRole("button", { name: "Extend support" }).click();
    await expect
      .poll(async () => (await licenseByLicenseId(globex["licenseId"]))["supportExpireDate"])
      .toBe(new Date("2031-06-30").toISOString());
    const shownDate = await page.evaluate(
      `new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "short" }).format(new Date("2031-06-30"))`,
    );
    await expect.poll(() => page.locator('dl.facts dt:text-is("Support until") + dd').textContent()).toBe(shownDate);

    await page.getByLabel("Machine id").fill("LAB-OFFLINE-1");
    await page.getByRole("button", { name: "Issue offline activation token" }).click();
    const token = (await page
      .getByText(/^Offline activation token \(shown once\):/)
      .locator("code")
      .textContent())!;
    expect(token).toMatch(/^actk_/);
    const seats = page.getByRole("region", { name: "Activations and floating seats" });
    await seats.getByRole("row").filter({ hasText: "LAB-OFFLINE-1" }).waitFor({ timeout: 15_000 });
    const tokens = await rest("GET", `/v1/licenses/${globex["licenseId"]}/tokens`, { key: KEY });
    expect(tokens.body["licenseTokens"].map((t: { machineId: string }) => t.machineId).sort()).toEqual([
      "LAB-OFFLINE-1",
      "PC-0042",
    ]);
    // The README's second picture: a license with names beside ids, dates in words, the token just issued.
    await seats.locator(".machine-name", { hasText: "Office PC" }).waitFor();
    await screenshot(page, "console-license.png");
    // Back to the floating license for the next step.
    await page.goto(new URL(`/console/#/licenses/${floatingLicense}`, base).toString());
    await page.getByRole("heading", { name: new RegExp(`License ${floatingLicense}`) }).waitFor();
  });

  it("revokes the license", async () => {
    await page.getByRole("button", { name: "Revoke" }).click();
    await page.getByRole("button", { name: "Un-revoke" }).waitFor();
    expect(await licenseByLicenseId(floatingLicense)).toMatchObject({ revoked: true, status: "Revoked" });
    // The application is refused a seat from now on.
    const floating = await licenseByLicenseId(floatingLicense);
    const refused = await rest("POST", "/v1/license/request", {
      key: KEY,
      body: { userKey: floating["userKey"], machineId: "DESK-8", clientId: "bob" },
    });
    expect(refused.status, JSON.stringify(refused.body)).not.toBe(200);
  });

  it("reads a failed webhook delivery with its response and retries it", async () => {
    await page.getByRole("link", { name: "Webhooks" }).click();
    await page.getByRole("button", { name: "New subscription" }).click();
    await page.getByLabel("Name", { exact: true }).fill("CRM (down)");
    await page.getByLabel("URL").fill(`${receiver.url}/fail500/console`);
    await page.getByRole("group", { name: "Event types" }).getByLabel("license.revoked", { exact: true }).check();
    await page.getByLabel("Max retries").fill("1");
    await page.getByRole("button", { name: "Subscribe" }).click();
    await page.getByText(/Signing secret \(shown once\): whsec_/).waitFor();
    const subscriptions = await rest("GET", "/v1/webhooks/subscriptions", { key: KEY });
    expect(subscriptions.body["subscriptions"][0]).toMatchObject({
      name: "CRM (down)",
      eventTypes: ["license.revoked"],
      maxRetryCount: 1,
    });
    await page.getByRole("link", { name: "CRM (down)" }).click();
    await page.getByRole("button", { name: "Send a test delivery" }).click();
    await page.getByRole("status").filter({ hasText: /500/ }).first().waitFor();
    await page.getByRole("button", { name: "Details" }).first().click();
    await page.getByRole("region", { name: "Delivery details" }).getByText('{"error":"receiver failed"}').waitFor();
    const before = receiver.deliveries.filter((d) => d.path.startsWith("/fail500/console")).length;
    await page.getByRole("button", { name: "Retry now" }).first().click();
    await page.getByText(/^Retry of evt_\w+: .*500/).waitFor();
    expect(receiver.deliveries.filter((d) => d.path.startsWith("/fail500/console")).length).toBe(before + 1);
  });

  it("creates an API key, shown once with a copy button, and the key works", async () => {
    await page.getByRole("link", { name: "API keys" }).click();
    await page.getByRole("button", { name: "New API key" }).click();
    await page.getByLabel("Name", { exact: true }).fill("CI publisher");
    await page.getByLabel("Owner").selectOption("admin");
    // Permissions are checkboxes; none checked is refused before the API is asked.
    await page.getByRole("button", { name: "Create key" }).click();
    await page.getByText(/^Choose at least one permission/).waitFor();
    const permissions = page.getByRole("group", { name: "Permissions" });
    await permissions.getByLabel("Read", { exact: true }).check();
    await permissions.getByLabel("Create", { exact: true }).check();
    await page.getByRole("button", { name: "Create key" }).click();
    const key = (await page.locator("#new-key").textContent())!;
    expect(key).toMatch(/^api_[0-9A-Za-z]{32}$/);
    await page.getByRole("button", { name: "Copy key" }).waitFor();
    const session = await rest("GET", "/v1/auth/session", { key });
    // Read 1 + Create 8 (SPEC's bits).
    expect(session.body).toMatchObject({ user: "admin", permissions: 9, keyName: "CI publisher" });
    const row = page.getByRole("region", { name: "API keys" }).getByRole("row").filter({ hasText: "CI publisher" });
    await row.getByRole("cell", { name: "Read, Create", exact: true }).waitFor();
    await row.getByRole("cell", { name: "admin #", exact: false }).first().waitFor();
    ciKey = key;
  });

  it("revokes an API key: the key is refused from then on", async () => {
    const key = ciKey;
    expect((await rest("GET", "/v1/products", { key })).status).toBe(200);
    const row = page.getByRole("region", { name: "API keys" }).getByRole("row").filter({ hasText: "CI publisher" });
    await row.getByRole("button", { name: "Revoke" }).click();
    await row.getByRole("cell", { name: "yes", exact: true }).waitFor();
    expect(await row.getByRole("button", { name: "Revoke" }).count()).toBe(0);
    const listed = (await rest("GET", "/v1/api-keys", { key: KEY })).body["apiKeys"].find(
      (k: { name: string }) => k.name === "CI publisher",
    );
    expect(listed).toMatchObject({ revoked: true });
    // The revocation applies at once in this isolate (the service drops its cached copy of the key).
    expect((await rest("GET", "/v1/auth/session", { key })).status).toBe(401);
  });

  it("records a customer, an order and an order line", async () => {
    await page.getByRole("link", { name: "Customers" }).click();
    await page.getByRole("button", { name: "New customer" }).click();
    await page.getByLabel("Company").fill("Initech");
    await page.getByLabel("Email").fill("it@initech.example");
    await page.getByRole("button", { name: "Create" }).click();
    await page.getByRole("cell", { name: "Initech", exact: true }).waitFor();
    const customer = (await rest("GET", "/v1/customers", { key: KEY })).body["customers"][0];
    await page.getByRole("link", { name: "Orders" }).click();
    await page.getByRole("button", { name: "New order" }).click();
    await page.getByLabel("Customer id").fill(String(customer.id));
    // The id field names the record typed (and suggests customers by name).
    await page.locator("#f-customerId-hint").getByText(`Initech #${customer.id}`).waitFor();
    await page.getByRole("form", { name: "New order" }).getByLabel("Status", { exact: true }).selectOption("Completed");
    await page.getByLabel("Total").fill("298");
    await page.getByLabel("Currency").fill("EUR");
    await page.getByRole("button", { name: "Create" }).click();
    await page.getByRole("cell", { name: "EUR", exact: true }).waitFor();
    await page.getByRole("link", { name: "Order lines" }).click();
    await page.getByRole("button", { name: "Add a product" }).click();
    await page.getByLabel("Product id").fill(productId);
    await page.getByLabel("Quantity").fill("2");
    await page.getByLabel("Unit price").fill("149");
    await page.getByRole("button", { name: "Add line" }).click();
    await page.getByRole("region", { name: "Order lines" }).getByRole("cell", { name: "149", exact: true }).waitFor();
    const order = (await rest("GET", "/v1/orders", { key: KEY })).body["orders"][0];
    expect(order).toMatchObject({ customerId: customer.id, total: 298, currency: "EUR" });
    const lines = await rest("GET", `/v1/orders/${order.id}/products`, { key: KEY });
    expect(lines.body["orderProducts"]).toMatchObject([{ productId: Number(productId), quantity: 2, unitPrice: 149 }]);
  });

  it("edits a record and deletes one; lists name the records they reference", async () => {
    // The orders list names the customer beside its id.
    const customer = (await rest("GET", "/v1/customers", { key: KEY })).body["customers"][0];
    await page.getByRole("navigation", { name: "Console" }).getByRole("link", { name: "Orders" }).click();
    await page
      .getByRole("region", { name: "Orders" })
      .getByRole("cell", { name: `Initech #${customer.id}`, exact: true })
      .waitFor();
    await page.getByRole("region", { name: "Orders" }).getByRole("cell", { name: "Completed", exact: true }).waitFor();
    // Editing: the form starts with the record's values; only what changed is sent.
    await page.getByRole("link", { name: "Customers" }).click();
    const row = page.getByRole("region", { name: "Customers" }).getByRole("row").filter({ hasText: "Initech" });
    await row.getByRole("button", { name: "Edit" }).click();
    const form = page.getByRole("form", { name: `Edit customer ${customer.id}` });
    expect(await form.getByLabel("Email").inputValue()).toBe("it@initech.example");
    await form.getByLabel("Company").fill("Initech Ltd");
    await form.getByRole("button", { name: "Save" }).click();
    await page.getByRole("cell", { name: "Initech Ltd", exact: true }).waitFor();
    expect((await rest("GET", "/v1/customers", { key: KEY })).body["customers"][0]).toMatchObject({
      id: customer.id,
      company: "Initech Ltd",
      email: "it@initech.example",
    });
    // Deleting: a contact made for the occasion, after a confirmation.
    const contact = await rest("POST", "/v1/contacts", {
      key: KEY,
      body: { contact: { customerId: customer.id, lastName: "Lumbergh" } },
    });
    expect(contact.status, JSON.stringify(contact.body)).toBeLessThan(300);
    await page.getByRole("link", { name: "Contacts" }).click();
    const contacts = page.getByRole("region", { name: "Contacts" });
    const lumbergh = contacts.getByRole("row").filter({ hasText: "Lumbergh" });
    // The name was read again after the rename (the console's lookups forget what it wrote).
    await lumbergh.getByRole("cell", { name: `Initech Ltd #${customer.id}`, exact: true }).waitFor();
    await lumbergh.getByRole("button", { name: "Delete" }).click();
    await lumbergh.waitFor({ state: "detached" });
    expect((await rest("GET", "/v1/contacts", { key: KEY })).body["contacts"]).toEqual([]);
  });

  it("shows the overview (the README's screenshot), and the service log with the API's words for errors", async () => {
    // Update adoption: an application on Globex's license checks for updates from the versions it ran, and downloads
    // the release it was offered (the whole rollout, so this license is in it).
    const globex = (
      await rest("GET", `/v1/licenses?filter=${encodeURIComponent('licenseeName == "Globex"')}`, { key: KEY })
    ).body["licenses"][0];
    const releaseId = (await rest("GET", `/v1/products/${productId}/releases`, { key: KEY })).body["productReleases"][0]
      .id;
    const rollout = await rest("PUT", `/v1/products/${productId}/releases`, {
      key: KEY,
      body: { productRelease: { id: releaseId, stagingPercentage: 100 } },
    });
    expect(rollout.status, JSON.stringify(rollout.body)).toBe(200);
    const checkFrom = async (version: string) => {
      const res = await fetch(new URL(`/v1/updates/studio?platform=win-x64&version=${version}`, base), {
        headers: { "X-Service-User-Key": globex.userKey },
      });
      const body = (await res.json()) as { data: { latest: string; download: { url: string } } };
      expect(res.status, JSON.stringify(body)).toBe(200);
      return body.data;
    };
    const offered = await checkFrom("0.9.0");
    await checkFrom("0.9.0");
    await checkFrom("0.9.0");
    await checkFrom("0.8.2");
    expect(offered.latest).toBe("1.0.0");
    const download = await fetch(offered.download.url, { headers: { "X-Service-User-Key": globex.userKey } });
    expect(download.status).toBe(200);
    expect((await download.arrayBuffer()).byteLength).toBe(12 * 1024 * 1024);
    await checkFrom("1.0.0");
    // Traces are written by the queue consumer, after the responses.
    const adoption = new RegExp(
      "^Update checks and downloads per version \\(last 30 days\\): " +
        "0\\.8\\.2 Update checks 1 Downloads 0, 0\\.9\\.0 Update checks 3 Downloads 0, 1\\.0\\.0 Update checks 1 Downloads 1$",
    );
    for (let tries = 0; ; tries++) {
      await page.getByRole("link", { name: "Overview" }).click();
      await page.getByRole("heading", { name: "Overview" }).waitFor();
      await page.getByRole("img", { name: /^Update checks and downloads per version/ }).waitFor();
      if ((await page.getByRole("img", { name: adoption }).count()) === 1 || tries === 30) break;
      await page.getByRole("link", { name: "Licenses" }).click();
      await new Promise((r) => setTimeout(r, 500));
    }
    expect(await page.getByRole("img", { name: adoption }).count()).toBe(1);
    // The chart's text alternative: a table of the same numbers.
    const table = page.getByRole("table", { name: /^Update checks and downloads per version .*, as a table$/ });
    expect(await table.getByRole("row").allTextContents()).toEqual([
      "VersionUpdate checksDownloads",
      "0.8.210",
      "0.9.030",
      "1.0.011",
    ]);
    await page.getByRole("link", { name: "Overview" }).click();
    await page.getByRole("heading", { name: "Overview" }).waitFor();
    await page.getByText("Activations per day (last 14 days)").waitFor();
    await page.getByText("Failed webhook deliveries per day").waitFor();
    // Every list the overview reads answered (an API error would show as an alert).
    expect(await page.getByRole("alert").count()).toBe(0);
    // Today's bars: two activations (PC-0042 and the offline one), one floating seat in use (alice), one failed
    // delivery.
    // Days in the viewer's locale ("11/25"), as the page writes them.
    const today = (await page.evaluate(
      `new Intl.DateTimeFormat(undefined, { month: "numeric", day: "numeric", timeZone: "UTC" }).format(new Date())`,
    )) as string;
    // The owner's figures lead the page (test/node/console-owner.test.ts checks them); the charts follow.
    await page.getByRole("region", { name: "Key figures" }).getByText("Active licenses").waitFor();
    for (const [chart, n] of [
      ["Activations per day", 2],
      ["Floating seats in use per day", 1],
      ["Failed webhook deliveries per day", 1],
    ] as const) {
      expect(await page.getByRole("img", { name: new RegExp(`^${chart}.*${today} ${n}$`) }).count(), chart).toBe(1);
    }
    // The whole page, so the picture holds every chart (update adoption sits below the fold at 800 px).
    await screenshot(page, "console.png");
    // Downloads counted per artifact: the release page shows the count the API returns (written off the request
    // path, so wait for it).
    const artifacts = async () =>
      (await rest("GET", `/v1/products/${productId}/releases/${releaseId}/downloads`, { key: KEY })).body[
        "releaseDownloads"
      ] as { fileName: string; downloadCount?: number }[];
    await expect
      .poll(async () => (await artifacts()).find((a) => a.fileName === "Studio Setup 1.0.0.exe")?.downloadCount, {
        timeout: 15_000,
      })
      .toBe(1);
    await page.goto(new URL(`/console/#/products/${productId}/releases/${releaseId}`, base).toString());
    const setup = page.getByRole("region", { name: "Downloads" }).getByRole("row").filter({ hasText: "Setup" });
    // The table renders once its list has answered: wait for the row before reading the headers (they do not wait).
    await setup.getByRole("cell", { name: "1", exact: true }).waitFor();
    expect(await page.getByRole("region", { name: "Downloads" }).getByRole("columnheader").allTextContents()).toContain(
      "Downloads",
    );
    // The row counts moved to the Diagnostics page.
    await page.getByRole("link", { name: "Diagnostics" }).click();
    await page.getByRole("region", { name: "Counts" }).getByText("API keys", { exact: true }).waitFor();
    await page.getByRole("link", { name: "Service log" }).click();
    const entries = page.getByRole("region", { name: "Log entries" });
    await entries.waitFor();
    // A filter the API refuses: its message is shown as the API words it.
    await (await expressionBox(entries)).fill("nope ==");
    await entries.getByRole("button", { name: "Apply" }).click();
    const message = await page.getByRole("alert").textContent();
    const direct = await rest("GET", `/v1/log?filter=${encodeURIComponent("nope ==")}`, { key: KEY });
    expect(message).toBe(direct.body["message"] ?? direct.body["title"]);
  });

  it("changes a setting, and opens the audit trail", async () => {
    await page.getByRole("link", { name: "Settings" }).click();
    await page.getByLabel("Application:DefaultPageSize", { exact: true }).fill("50");
    await page
      .getByRole("row")
      .filter({ hasText: "Application:DefaultPageSize" })
      .getByRole("button", { name: "Save" })
      .click();
    await page.getByText("Application:DefaultPageSize saved").waitFor();
    const settings = await rest("GET", "/v1/settings", { key: KEY });
    expect(
      settings.body["settings"].find((x: { name: string }) => x.name === "Application:DefaultPageSize"),
    ).toMatchObject({ value: "50", source: "database" });
    // The audit trail reads the log's Audit category (its entries come with branch secauth; not asserted here).
    await page.getByRole("link", { name: "Audit trail" }).click();
    await page.getByRole("heading", { name: "Audit trail" }).waitFor();
    await page.getByRole("region", { name: "Audit entries" }).waitFor();
  });

  it("shows a delivery the dead-letter queue recorded as given up, with its last answer, and queues it again", async () => {
    // A subscription without retries whose receiver answers 500: an order's event goes through the real queues
    // (delivery, then dead letter) into the delivery history as given up. After the tests that count orders and
    // failed deliveries.
    const created = await rest("POST", "/v1/webhooks/subscriptions", {
      key: KEY,
      body: {
        subscription: {
          name: "ERP (down)",
          url: `${receiver.url}/fail500/given-up`,
          eventTypes: ["order.created"],
          maxRetryCount: 0,
        },
      },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const subscriptionId = created.body["subscription"]["id"] as number;
    const customer = await rest("POST", "/v1/customers", { key: KEY, body: { customer: { company: "Hooli" } } });
    await rest("POST", "/v1/orders", { key: KEY, body: { order: { customerId: customer.body["customerId"] } } });
    await expect
      .poll(
        async () =>
          (await rest("GET", `/v1/webhooks/subscriptions/${subscriptionId}/events`, { key: KEY })).body[
            "events"
          ]?.[0]?.["deadLetteredAt"],
        { timeout: 30_000, interval: 250 },
      )
      .toBeDefined();
    await page.getByRole("navigation", { name: "Console" }).getByRole("link", { name: "Webhooks" }).click();
    await page.getByRole("link", { name: "ERP (down)" }).click();
    const history = page.getByRole("region", { name: "Delivery history" });
    await history.getByText(/^Given up /).waitFor();
    await history.getByText("HTTP 500 Internal Server Error").waitFor();
    await history.getByRole("button", { name: "Queue again" }).click();
    await page.getByText(/^Queued for delivery: evt_\w+$/).waitFor();
    await expect
      .poll(() => receiver.deliveries.filter((d) => d.path.startsWith("/fail500/given-up")).length, {
        timeout: 30_000,
        interval: 250,
      })
      .toBe(2);
  }, 90_000);

  it("every list's filter placeholder is a filter that works on that list", async () => {
    const releases = (await rest("GET", `/v1/products/${productId}/releases`, { key: KEY })).body["productReleases"];
    const order = (await rest("GET", "/v1/orders", { key: KEY })).body["orders"].at(-1);
    const subscription = (await rest("GET", "/v1/webhooks/subscriptions", { key: KEY })).body["subscriptions"][0];
    const pages = [
      "#/products",
      `#/products/${productId}`,
      ...releases.map((r: { id: number }) => `#/products/${productId}/releases/${r.id}`),
      "#/customers",
      "#/contacts",
      "#/orders",
      `#/order-lines/${order.id}`,
      "#/templates",
      "#/licenses",
      `#/licenses/${floatingLicense}`,
      "#/webhooks",
      `#/webhooks/${subscription.id}`,
      "#/users",
      "#/api-keys",
      "#/log",
      "#/audit",
    ];
    let tried = 0;
    for (const hash of pages) {
      await page.goto(new URL(`/console/${hash}`, base).toString());
      await page.locator("search input").first().waitFor();
      const lists = page.locator("section.card:has(search)");
      for (let i = 0; i < (await lists.count()); i++) {
        const list = lists.nth(i);
        const name = await list.getAttribute("aria-label");
        const input = await expressionBox(list);
        const placeholder = (await input.getAttribute("placeholder")) ?? "";
        expect(placeholder, `${hash} ${name}: a placeholder`).not.toBe("");
        await input.fill(placeholder);
        await list.getByRole("button", { name: "Apply" }).click();
        // The list says which filter its last answer was for.
        await expect
          .poll(async () => `${await list.getAttribute("data-filter")} ${await list.getAttribute("aria-busy")}`, {
            timeout: 10_000,
          })
          .toBe(`${placeholder} false`);
        const alert = list.getByRole("alert");
        expect(
          (await alert.count()) === 0 ? "" : await alert.textContent(),
          `${hash} "${name}": the placeholder ${placeholder}`,
        ).toBe("");
        tried++;
      }
    }
    expect(tried).toBeGreaterThanOrEqual(pages.length);
  }, 120_000);

  it("a filter naming an unknown property shows SPEC's message, and the service log records no error for it", async () => {
    await page.getByRole("link", { name: "Customers" }).click();
    const list = page.getByRole("region", { name: "Customers" });
    await (await expressionBox(list)).fill('nickname == "Bob"');
    await list.getByRole("button", { name: "Apply" }).click();
    await expect.poll(() => list.getAttribute("data-filter")).toBe('nickname == "Bob"');
    // SPEC list rule 4 and CONTRACT: 500 with the parser's message, shown in the API's words.
    await expect
      .poll(() => list.getByRole("alert").textContent())
      .toBe("No property or field 'nickname' exists in type 'Customer'");
    const direct = await fetch(new URL(`/v1/customers?filter=${encodeURIComponent('nickname == "Bob"')}`, base), {
      headers: { "x-api-key": KEY },
    });
    expect(direct.status).toBe(500);
    // The log is written after the response: look for two seconds.
    const errors = async () =>
      (
        await rest("GET", `/v1/log?filter=${encodeURIComponent('level >= "Error" && message.Contains("nickname")')}`, {
          key: KEY,
        })
      ).body["logs"] as unknown[];
    for (let i = 0; i < 10; i++) {
      expect(await errors(), "an error entry for a refused filter").toEqual([]);
      await new Promise((r) => setTimeout(r, 200));
    }
    // Shown in the console's service log neither.
    await page.getByRole("link", { name: "Service log" }).click();
    const log = page.getByRole("region", { name: "Log entries" });
    await (await expressionBox(log)).fill('message.Contains("nickname")');
    await log.getByRole("button", { name: "Apply" }).click();
    await expect.poll(() => log.getAttribute("data-filter")).toBe('message.Contains("nickname")');
    await log.getByText("Nothing here yet.").waitFor();
  });

  it("signs out: the session's key is revoked and the sign-in form is back", async () => {
    const csrf = (await page.evaluate(
      `JSON.parse(sessionStorage.getItem("licensing-console-session") ?? "{}").csrfToken`,
    )) as string;
    const cookie = (await page.context().cookies()).find((c) => c.name === "__Host-console-key")!.value;
    await page.getByRole("button", { name: "Sign out" }).click();
    await page.getByRole("button", { name: "Sign in" }).waitFor();
    expect((await page.context().cookies()).find((c) => c.name === "__Host-console-key")).toBeUndefined();
    // The key and its token, replayed: refused.
    const res = await fetch(new URL("/v1/products", base), {
      headers: { cookie: `__Host-console-key=${cookie}`, "x-csrf-token": csrf },
    });
    expect(res.status).toBe(401);
  });

  it("shows a Sales user only what Sales may do", async () => {
    const user = await rest("POST", "/v1/users", {
      key: KEY,
      body: { user: { userName: "sam", password: "Sales-12345678", roles: ["Sales"] } },
    });
    expect(user.status, JSON.stringify(user.body)).toBe(200);
    await page.getByLabel("User name").fill("sam");
    await page.getByLabel("Password").fill("Sales-12345678");
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByText("sam (Sales)").waitFor();
    const nav = page.getByRole("navigation", { name: "Console" });
    for (const allowed of ["Products & releases", "Customers", "Licenses", "Service log"])
      await nav.getByRole("link", { name: allowed }).waitFor();
    for (const hidden of ["Webhooks", "Users", "API keys", "Settings", "Audit trail"])
      expect(await nav.getByRole("link", { name: hidden }).count(), hidden).toBe(0);
    // A page outside the roles, opened by its address, says so instead of calling the API.
    await page.goto(new URL("/console/#/api-keys", base).toString());
    expect(await page.getByRole("alert").textContent()).toBe("Your roles do not allow this page.");
    // Templates are the managers': the list is readable, the button to make one is not offered.
    await page.goto(new URL("/console/#/templates", base).toString());
    await page
      .getByRole("region", { name: "License templates" })
      .getByRole("cell", { name: "Studio floating, 2 seats" })
      .waitFor();
    expect(await page.getByRole("button", { name: "New license template" }).count()).toBe(0);
    await page.getByRole("button", { name: "Sign out" }).click();
    await page.getByRole("button", { name: "Sign in" }).waitFor();
  });
});

describe("the feed a client gets (issue 24: refusals that say why)", () => {
  it("previews the feed as a chosen license and platform, with the reason in words", async () => {
    const code = `preview-${Date.now()}`;
    const product = await rest("POST", "/v1/products", {
      key: KEY,
      body: { product: { code, name: "Preview", isApplication: true } },
    });
    const productId = product.body["productId"] as number;
    const release = await rest("POST", `/v1/products/${productId}/releases`, {
      key: KEY,
      body: { productRelease: { version: "1.0.0", public: true } },
    });
    const releaseId = release.body["productReleaseId"] as number;
    const form = new FormData();
    form.set("platform", "win-x64");
    form.set("kind", "installer");
    form.set("file", new Blob([new Uint8Array(600).fill(7)]), "Preview Setup.exe");
    const uploaded = await fetch(new URL(`/v1/products/${productId}/releases/${releaseId}/downloads`, base), {
      method: "POST",
      headers: { "x-api-key": KEY },
      body: form,
    });
    expect(uploaded.status, await uploaded.clone().text()).toBe(201);
    const license = await rest("POST", "/v1/licenses", {
      key: KEY,
      body: { license: { productId, licenseeName: "Preview Works" } },
    });
    const licenseId = license.body["licenseId"] as string;

    await page.goto(new URL("/console/", base).toString());
    await page.getByLabel("User name").fill("admin");
    await page.getByLabel("Password").fill(PASSWORD);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByRole("heading", { name: "Overview" }).waitFor();
    await page.goto(new URL(`/console/#/products/${productId}/releases/${releaseId}`, base).toString());
    const feed = page.getByRole("region", { name: "Feed" });
    // Anonymous: the release needs maintenance, so nothing to install, and the page says why.
    await feed.getByRole("button", { name: "Preview the feed" }).click();
    const answer = feed.getByRole("status", { name: "Feed answer" });
    await expect.poll(() => answer.textContent()).toContain("HTTP 204");
    expect(await answer.textContent()).toContain("licenseRequired: the release needs a license with maintenance");
    // As the license, found by its licensee: the installer.
    await feed.getByLabel("License (key, id or licensee)").fill("preview works");
    await feed.getByRole("button", { name: "Find licenses" }).click();
    await feed.getByRole("option", { name: new RegExp(licenseId) }).waitFor({ state: "attached" });
    await feed.getByLabel("Preview as").selectOption(licenseId);
    await feed.getByRole("button", { name: "Preview the feed" }).click();
    await expect.poll(() => answer.textContent()).toContain(`as ${licenseId}: HTTP 200`);
    expect(await answer.textContent()).toContain("Preview%20Setup.exe");
    expect(await answer.textContent()).not.toContain("Reason:");
    // macOS is open to the Ultimate edition only (default Updates:PlatformEditions): the license's edition is not.
    await feed.getByLabel("Platform").selectOption("darwin-arm64");
    await feed.getByRole("button", { name: "Preview the feed" }).click();
    await expect.poll(() => answer.textContent()).toContain("platformRequiresEdition");
  });
});
