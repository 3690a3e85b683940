/**
 * The console's Import page (CONTRACT section 16), in Chromium (Debian's, driven by playwright-core) against the
 * bundled Worker under Miniflare (real D1, R2 and Queue): an Administrator signs in, opens Import licenses from the
 * navigation and uploads a CSV file of two good rows and a bad one. A dry run reports 2 licenses to create and the bad
 * row by its line and field, and the service holds no license afterwards (read through the API); the import creates
 * both, the report says so, and their keys validate as typed. Keygen's export as several page files (licenses-page-1.json
 * and the rest) is put together by its resources' types and judged by a dry run; an import of more than 1,000 rows
 * runs off the request path, and the page shows its progress until it is done. It takes the picture of the page
 * (docs/console-import.png, written with UPDATE_SCREENSHOTS=1).
 *
 * Needs `npm run console:build` first (`npm test` does it) and Chromium (scripts/ensure-chromium.mjs).
 */
import { existsSync, mkdtempSync, readFileSync, readdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Browser, type Page, chromium } from "playwright-core";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
// @ts-expect-error: plain JavaScript modules shared with the benchmark and the scripts
import { root, startLocalWorker } from "../../scripts/local-worker.mjs";
// @ts-expect-error: a plain JavaScript module
import { CHROMIUM_ARGS, ensureChromium } from "../../scripts/ensure-chromium.mjs";
import { keygenData as mergeKeygenFiles } from "../../console/src/import-files.ts";
import { KEYGEN_ROWS, keygenData } from "../fixtures/keygen/keygen-fixtures.ts";
import type { JsonBody } from "../json-body.ts";
import { screenshot } from "./console-kit.ts";

const KEY = "api_ConsoleImportKey0000000000000000";
const PASSWORD = "Console-12345";
const KEYGEN_DIR = join(root as string, "test/fixtures/keygen");
const HEADER = "legacyKey,product,customerEmail,customerName,edition,expireDate,maxActivations,machines";
let worker: { url: URL; dispose(): Promise<void> };
let browser: Browser;
let page: Page;
let base: string;

async function rest(method: string, path: string, body?: unknown) {
  const res = await fetch(new URL(path, base), {
    method,
    headers: { "content-type": "application/json", "x-api-key": KEY },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json().catch(() => ({}))) as JsonBody };
}

/** How many licenses the service holds, read through the API. */
async function licenseCount(): Promise<number> {
  const res = await rest("GET", "/v1/licenses?take=1");
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body["totalLicensesCount"];
}

beforeAll(async () => {
  const executablePath = ensureChromium();
  if (!existsSync(join(root, "console/dist/console/index.html")))
    throw new Error("The console is not built: run `npm run console:build` (npm test does).");
  worker = await startLocalWorker({
    bindings: {
      Application__JwtSecret: "console-import-jwt-secret-0123456789abcdef",
      Application__EncryptionKey: "console-import-encryption-key",
      Application__AdminUsername: "admin",
      Application__AdminPassword: PASSWORD,
      Application__AdminApiKey: KEY,
    },
  });
  base = worker.url.toString();
  // The page reads a running import every second: let those reads through the per-address request limit.
  const settings = await rest("PUT", "/v1/settings", {
    settings: [{ name: "IpFiltering:BruteForceProtection:Enabled", value: "false" }],
  });
  expect(settings.status, JSON.stringify(settings.body)).toBe(200);
  const product = await rest("POST", "/v1/products", {
    product: { code: "acme-desktop", name: "Acme Desktop", isApplication: true },
  });
  expect(product.status, JSON.stringify(product.body)).toBe(200);
  browser = await chromium.launch({ executablePath, args: CHROMIUM_ARGS });
  const context = await browser.newContext({ viewport: { width: 1366, height: 800 }, locale: "en-US" });
  page = await context.newPage();
}, 180_000);

afterEach(async (context) => {
  if (context.task.result?.state !== "fail" || !page) return;
  const file = join(mkdtempSync(join(tmpdir(), "console-import-")), "failure.png");
  await page.screenshot({ path: file, fullPage: true }).catch(() => undefined);
  console.error(`console test "${context.task.name}" failed on ${page.url()}; screenshot: ${file}`);
});

afterAll(async () => {
  await browser?.close();
  await worker?.dispose();
});

describe("Keygen's page files (console/src/import-files.ts)", () => {
  it("puts the pages together by their resources' type, in the order of the files' names", () => {
    const names = readdirSync(KEYGEN_DIR).filter((f) => f.endsWith(".json"));
    // Given in no particular order: page 2 of a list still follows page 1.
    const files = names.reverse().map((name) => ({ name, text: readFileSync(join(KEYGEN_DIR, name), "utf8") }));
    const read = mergeKeygenFiles(files);
    expect(read.problems).toEqual([]);
    const expected = keygenData();
    expect(read.data).toEqual({
      licenses: expected["licenses"],
      machines: expected["machines"],
      policies: [expected["policies"]],
      products: [expected["products"]],
      users: [expected["users"]],
    });
    expect(read.taken).toContain("licenses-page-1.json: 3 licenses");
    expect(read.taken).toContain("policies.json: 4 policies");
    // One file holding the whole export is taken as it is; a file that is neither is refused with its name.
    const whole = mergeKeygenFiles([{ name: "keygen.json", text: JSON.stringify(expected) }]);
    expect(whole.data).toEqual({
      ...expected,
      products: [expected["products"]],
      policies: [expected["policies"]],
      users: [expected["users"]],
    });
    expect(mergeKeygenFiles([{ name: "notes.json", text: '{"hello":1}' }]).problems[0]).toMatch(
      /^notes\.json is neither/,
    );
    expect(mergeKeygenFiles([{ name: "broken.json", text: "{" }]).problems[0]).toMatch(/^broken\.json is not JSON/);
  });
});

describe("the Import page", () => {
  it("judges a CSV file with a dry run that writes nothing, then imports its good rows", async () => {
    await page.goto(new URL("/console/", base).toString());
    await page.getByLabel("User name").fill("admin");
    await page.getByLabel("Password").fill(PASSWORD);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByRole("heading", { name: "Overview" }).waitFor();
    await page.getByRole("navigation", { name: "Console" }).getByRole("link", { name: "Import", exact: true }).click();
    await page.getByRole("heading", { name: "Import licenses" }).waitFor();

    const before = await licenseCount();
    expect(before).toBe(0);
    await page.getByLabel("CSV file").check();
    // Line 1 the header; lines 2 and 4 good; line 3's expiry is written as a day of another locale.
    const csv = [
      HEADER,
      "SHEET-KEY-0001,acme-desktop,ann@example.com,Ann Smith,Pro,2030-01-01,2,PC-1;PC-2",
      "SHEET-KEY-0002,acme-desktop,bob@example.com,Bob Jones,,31/12/2030,1,",
      "SHEET-KEY-0003,acme-desktop,cleo@example.com,Cleo Park,,,1,LAPTOP-9",
    ].join("\n");
    await page
      .getByLabel("File to import")
      .setInputFiles({ name: "licenses.csv", mimeType: "text/csv", buffer: Buffer.from(csv) });
    await expect.poll(() => page.getByTestId("import-taken").textContent()).toMatch(/^licenses\.csv: /);

    await page.getByRole("button", { name: "Dry run" }).click();
    const report = page.getByRole("region", { name: "Report" });
    await expect.poll(() => report.getAttribute("data-dry-run")).toBe("true");
    expect(await report.getByRole("heading").first().textContent()).toBe("Dry run: done");
    expect(await report.getByTestId("import-licenses").textContent()).toBe("2Licenses to create");
    expect(await report.getByTestId("import-customers").textContent()).toBe("2Customers to create");
    expect(await report.getByTestId("import-activations").textContent()).toBe("3Activations to create");
    expect(await report.getByTestId("import-errors").textContent()).toBe("1Problems (their rows left out)");
    expect(await report.getByTestId("import-summary").textContent()).toBe(
      "A dry run of 3 rows, nothing written: 2 to import, 1 left out for a problem (below).",
    );
    const problems = report.getByRole("region", { name: "Problems" });
    expect(await problems.getByRole("columnheader").allTextContents()).toEqual(["Line", "Field", "Problem"]);
    const cells = await problems.locator("tbody tr").first().getByRole("cell").allTextContents();
    expect(cells.slice(0, 2)).toEqual(["3", "expireDate"]);
    expect(cells[2]).toContain('"31/12/2030" is not a date');
    // Nothing was written.
    expect(await licenseCount()).toBe(before);

    await page.getByRole("button", { name: "Import", exact: true }).click();
    await expect.poll(() => report.getAttribute("data-dry-run")).toBe("false");
    expect(await report.getByRole("heading").first().textContent()).toBe("Import: done");
    expect(await report.getByTestId("import-licenses").textContent()).toBe("2Licenses created");
    expect(await report.getByTestId("import-customers").textContent()).toBe("2Customers created");
    expect(await report.getByTestId("import-activations").textContent()).toBe("3Activations created");
    expect(await problems.locator("tbody tr").count()).toBe(1);
    await report.getByRole("link", { name: "See the licenses" }).waitFor();
    expect(await licenseCount()).toBe(before + 2);
    // The keys work as the sheet wrote them; the bad row's is not there.
    for (const [key, status] of [
      ["SHEET-KEY-0001", 200],
      ["SHEET-KEY-0003", 200],
      ["SHEET-KEY-0002", 525],
    ] as const) {
      const validated = await rest("POST", "/v1/license/validate", { userKey: key });
      expect(validated.status, `${key}: ${JSON.stringify(validated.body)}`).toBe(status);
    }
    await screenshot(page, "console-import.png");
  });

  it("takes Keygen's export as page files, put together by their types", async () => {
    await page.getByLabel("Keygen export (JSON)").check();
    const names = readdirSync(KEYGEN_DIR).filter((f) => f.endsWith(".json"));
    await page.getByLabel("Files to import").setInputFiles(names.map((name) => join(KEYGEN_DIR, name)));
    const taken = page.getByTestId("import-taken");
    await expect.poll(() => taken.locator("li").count()).toBe(names.length);
    expect(await taken.textContent()).toContain("machines-page-2.json: 3 machines");

    await page.getByRole("button", { name: "Dry run" }).click();
    const report = page.getByRole("region", { name: "Report" });
    await expect.poll(() => report.getAttribute("data-source")).toBe("keygen");
    // The service has the desktop product only: the server's licenses (rows 3 and 5) are refused for their product.
    const desktop = KEYGEN_ROWS.filter((r) => r.product === "acme-desktop");
    expect(await report.getByTestId("import-licenses").textContent()).toBe(`${desktop.length}Licenses to create`);
    expect(await report.getByTestId("import-activations").textContent()).toBe(
      `${desktop.reduce((n, r) => n + r.machines.length, 0)}Activations to create`,
    );
    const rows = await report.getByRole("region", { name: "Problems" }).locator("tbody tr").all();
    const refused = await Promise.all(rows.map(async (r) => (await r.getByRole("cell").allTextContents()).slice(0, 2)));
    expect(refused).toEqual([
      ["3", "product"],
      ["5", "product"],
    ]);
    expect((await report.getByTestId("import-unsupported").locator("li").count()) > 0).toBe(true);
  });

  it("follows an import of more than 1,000 rows, run off the request path, until it is done", async () => {
    await page.getByLabel("CSV file").check();
    const lines = Array.from({ length: 1100 }, (_, i) => `BULK-KEY-${String(i + 1).padStart(5, "0")},acme-desktop`);
    await page.getByLabel("File to import").setInputFiles({
      name: "bulk.csv",
      mimeType: "text/csv",
      buffer: Buffer.from(["legacyKey,product", ...lines].join("\n")),
    });
    await expect.poll(() => page.getByTestId("import-taken").textContent()).toMatch(/^bulk\.csv: /);
    const answered = page.waitForResponse((r) => r.url().endsWith("/v1/imports") && r.request().method() === "POST");
    const reads: string[] = [];
    page.on("request", (r) => r.url().includes("/v1/imports/imp") && reads.push(r.url()));
    await page.getByRole("button", { name: "Dry run" }).click();
    expect((await answered).status()).toBe(202);

    const report = page.getByRole("region", { name: "Report" });
    // The queue consumer writes the chunks within seconds: the progress shows meanwhile.
    await report.getByRole("progressbar").waitFor();
    expect(await report.getByTestId("import-progress").textContent()).toMatch(/^\d+ of 1,100 rows \(\d+ %\)$/);
    await expect.poll(() => report.getAttribute("data-status"), { timeout: 60_000 }).toBe("done");
    expect(await report.getByRole("progressbar").count()).toBe(0);
    expect(await report.getByTestId("import-licenses").textContent()).toBe("1,100Licenses to create");
    expect(reads.length).toBeGreaterThan(0);
    expect(await licenseCount()).toBe(2);
  });
});
