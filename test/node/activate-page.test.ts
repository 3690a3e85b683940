/**
 * The air-gapped activation page (`/activate/`, issue 29) in a real browser: Debian's Chromium driven by playwright-core
 * against the bundled Worker under Miniflare. A request code made by the client package is entered; the page shows the
 * response code (`LRS2-…`, at most 400 characters), its QR code and the license file to download, and the client
 * package verifies both offline for its machine and nonce. A mistyped code, a response code in the request box and
 * another product's license get their messages. Every request the page makes goes to the service's own origin, and its CSP forbids any other.
 *
 * Needs `npm run console:build` first (`npm test` does it) and Chromium (scripts/ensure-chromium.mjs).
 */
import { existsSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Browser, type Page, chromium } from "playwright-core";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import {
  type JwkSet,
  LicensingClient,
  createActivationRequest,
  encodeRequestCode,
  qrCodeSvg,
  verifyActivationResponse,
  verifyLicenseFile,
} from "../../client/src/index.ts";
// @ts-expect-error: plain JavaScript modules shared with the benchmark and the scripts
import { root, startLocalWorker } from "../../scripts/local-worker.mjs";
// @ts-expect-error: a plain JavaScript module
import { CHROMIUM_ARGS, ensureChromium } from "../../scripts/ensure-chromium.mjs";
import type { JsonBody } from "../json-body.ts";

const KEY = "api_ActivatePageAdminKey000000000000";
let worker: { url: URL; dispose(): Promise<void> };
let browser: Browser;
let page: Page;
let base: string;
let jwks: JwkSet;
/** Every URL the page requested. */
const requested: string[] = [];

async function api(method: string, path: string, body?: unknown): Promise<JsonBody> {
  const res = await fetch(new URL(path, base), {
    method,
    headers: { "x-api-key": KEY, "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const json = (await res.json()) as JsonBody;
  if (res.status !== 200) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(json)}`);
  return json;
}

async function newLicense(productCode: string, maxClients = 2): Promise<{ id: number; userKey: string }> {
  const productId = (await api("POST", "/v1/products", { product: { code: productCode, name: productCode } }))[
    "productId"
  ];
  const created = await api("POST", "/v1/licenses", {
    license: { productId, licensingMode: "Activation", maxClients },
  });
  const listed = await api("GET", `/v1/licenses?filter=${encodeURIComponent(`id == ${created["id"]}`)}&select=userKey`);
  return { id: created["id"], userKey: listed["licenses"][0].userKey };
}

/** Enters a request code on the page and returns what the page says (its message) or shows (the answer). */
async function enter(code: string): Promise<void> {
  await page.goto(new URL("/activate/", base).href);
  await page.fill("#request-code", code);
  await page.click("#activate");
  await page.waitForSelector("#message:not([hidden]), #answer:not([hidden])");
}

const message = () => page.textContent("#message");

beforeAll(async () => {
  const executablePath = ensureChromium();
  if (!existsSync(join(root, "console/dist/activate/index.html")))
    throw new Error("The activation page is not built: run `npm run console:build` (npm test does).");
  worker = await startLocalWorker({
    bindings: {
      Application__JwtSecret: "activate-page-test-jwt-secret-0123456789",
      Application__EncryptionKey: "activate-page-test-encryption-key",
      Application__AdminUsername: "admin",
      Application__AdminPassword: "Activate-12345",
      Application__AdminApiKey: KEY,
    },
  });
  base = worker.url.toString();
  jwks = await new LicensingClient({ baseUrl: base }).getSigningKeys();
  browser = await chromium.launch({ executablePath, args: CHROMIUM_ARGS });
  const context = await browser.newContext({ viewport: { width: 1100, height: 900 }, acceptDownloads: true });
  page = await context.newPage();
  page.on("request", (request) => requested.push(request.url()));
}, 180_000);
afterEach(async (context) => {
  if (context.task.result?.state !== "fail" || !page) return;
  const file = join(mkdtempSync(join(tmpdir(), "activate-page-")), "failure.png");
  await page.screenshot({ path: file, fullPage: true }).catch(() => undefined);
  console.error(`activation page test "${context.task.name}" failed on ${page.url()}; screenshot: ${file}`);
});
afterAll(async () => {
  await browser?.close();
  await worker?.dispose();
});

describe("the /activate/ page", () => {
  it("activates the machine of a request code and answers a response code, its QR code and a license file the application verifies offline", async () => {
    const lic = await newLicense("lab-suite");
    // The application on the offline machine: a request code, its QR code, a nonce it keeps.
    const request = createActivationRequest({ userKey: lic.userKey, machineId: "LAB-PC-7", productCode: "lab-suite" });
    expect(request.requestCode).toMatch(/^LRQ1-[0-9A-Z]{5}(-[0-9A-Z]{1,5})+$/);
    expect(request.qrSvg).toMatch(/^<svg xmlns="http:\/\/www.w3.org\/2000\/svg"/);

    await enter(request.requestCode);
    expect(await page.isVisible("#message")).toBe(false);
    expect(await page.textContent("#summary")).toContain("1 of 2 machines activated");
    const responseCode = await page.inputValue("#response-code");
    // Short enough to type: the compact signed code, not the license file's 2,000-odd characters.
    expect(responseCode).toMatch(/^LRS2-[0-9A-Z]{5}(-[0-9A-Z]{1,5})+$/);
    expect(responseCode.length).toBeLessThanOrEqual(400);
    // The QR code is the response code's, drawn in the page: version 12 at most, 73 modules with its quiet zone.
    const svg = qrCodeSvg(responseCode);
    expect(await page.getAttribute("#qr", "src")).toBe(`data:image/svg+xml,${encodeURIComponent(svg)}`);
    expect(Number(/viewBox="0 0 (\d+)/.exec(svg)?.[1]) / 4).toBeLessThanOrEqual(73);
    // The image decoded: a real SVG picture, not a broken image.
    expect(await page.$eval("#qr", (img) => (img as unknown as { naturalWidth: number }).naturalWidth)).toBeGreaterThan(
      0,
    );

    // The application verifies the response offline: signature, its machine, its nonce, its product.
    const verified = await verifyActivationResponse(responseCode, {
      jwks,
      machineId: "LAB-PC-7",
      nonce: request.nonce,
      productCode: "lab-suite",
    });
    expect(verified.machine.machineId).toBe("LAB-PC-7");
    expect(verified.license.licensingMode).toBe("Activation");
    expect(verified.licenseFile).toBe(responseCode);

    // The license file download: <licenseId>.lic, a signed file of the same license, machine and nonce.
    const [download] = await Promise.all([page.waitForEvent("download"), page.click("#download")]);
    expect(download.suggestedFilename()).toBe(`${verified.license.licenseId}.lic`);
    const saved = readFileSync((await download.path())!, "utf8");
    expect(saved.trim()).toMatch(/^[\w-]+\.[\w-]+\.[\w-]+$/);
    const file = await verifyLicenseFile(saved, { jwks, machineId: "LAB-PC-7", nonce: request.nonce });
    expect(file.license.licenseId).toBe(verified.license.licenseId);
    expect(file.entitlements.features).toEqual(verified.entitlements.features);

    // It counted against the license's machines, as an online activation does.
    const validated = await new LicensingClient({ baseUrl: base, userKey: lic.userKey }).validate({
      machineId: "LAB-PC-7",
    });
    expect(validated.status).toBe("Activated");

    if (process.env["UPDATE_SCREENSHOTS"] === "1")
      await page.screenshot({ path: join(root, "docs", "activate-page.png"), fullPage: true });
  });

  it("fills in the request code of a QR code that holds the page's address (a phone scanning the application's screen)", async () => {
    const lic = await newLicense("lab-phone");
    const request = createActivationRequest({
      userKey: lic.userKey,
      machineId: "LAB-PC-9",
      activationPageUrl: new URL("/activate/", base).href,
    });
    expect(request.qrText).toBe(`${new URL("/activate/", base).href}#${request.requestCode}`);
    expect(request.qrSvg).toBe(qrCodeSvg(request.qrText));
    await page.goto(request.qrText);
    expect(await page.inputValue("#request-code")).toBe(request.requestCode);
    await page.click("#activate");
    await page.waitForSelector("#answer:not([hidden])");
    await verifyActivationResponse(await page.inputValue("#response-code"), {
      jwks,
      machineId: "LAB-PC-9",
      nonce: request.nonce,
    });
  });

  it("says what is wrong with a mistyped code, a response code in the request box and another product's license", async () => {
    const lic = await newLicense("lab-viewer");
    const other = await newLicense("lab-other");
    const good = createActivationRequest({ userKey: lic.userKey, machineId: "LAB-PC-8", productCode: "lab-viewer" });

    const groups = good.requestCode.split("-");
    groups[4] = `${groups[4]![0] === "7" ? "8" : "7"}${groups[4]!.slice(1)}`;
    await enter(groups.join("-"));
    expect(await message()).toMatch(/checksum does not match: a character was mistyped or part of the code is missing/);
    expect(await page.isVisible("#answer")).toBe(false);

    await enter(good.requestCode);
    const responseCode = await page.inputValue("#response-code");
    await enter(responseCode);
    expect(await message()).toMatch(/This is a response code \(LRS2-…\), not a request code \(LRQ1-…\)/);

    await enter(
      encodeRequestCode({ userKey: other.userKey, machineId: "LAB-PC-8", nonce: "n-1", productCode: "lab-viewer" }),
    );
    expect(await message()).toMatch(
      /This license is for another product than the application that made the request code/,
    );

    // Nothing was activated for the refused codes: the other license has no machine.
    const refused = await new LicensingClient({ baseUrl: base, userKey: other.userKey })
      .validate({ machineId: "LAB-PC-8" })
      .catch((e: unknown) => e);
    expect(refused).toMatchObject({ reason: "notActivated" });
  });

  it("loads nothing from another origin, and its CSP forbids it", async () => {
    const origin = new URL(base).origin;
    expect(requested.length).toBeGreaterThan(0);
    const elsewhere = requested.filter(
      (url) => !url.startsWith(`${origin}/`) && !url.startsWith("data:") && !url.startsWith("blob:"),
    );
    expect(elsewhere).toEqual([]);
    // The page's own files and the one API route it calls.
    expect(requested).toContain(`${origin}/v1/license/offline-activation`);
    const res = await fetch(new URL("/activate/", base));
    expect(res.status).toBe(200);
    const csp = res.headers.get("content-security-policy") ?? "";
    for (const directive of [
      "default-src 'self'",
      "script-src 'self'",
      "style-src 'self'",
      "connect-src 'self'",
      "frame-ancestors 'none'",
    ])
      expect(csp).toContain(directive);
    expect((await fetch(new URL("/activate", base), { redirect: "manual" })).headers.get("location")).toBe(
      "/activate/",
    );
  });
});
