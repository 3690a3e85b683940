/**
 * Swagger UI works offline (issues 14 and 16): opened in Chromium against the bundled Worker, the page renders the
 * service's OpenAPI document while every request to another origin is refused, and it never asks for one.
 * Needs `npm run console:build` first (npm test does it: Swagger UI's files are among the Worker's static assets).
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import { type Browser, chromium } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
// @ts-expect-error: a plain JavaScript module
import { CHROMIUM_ARGS, ensureChromium } from "../../scripts/ensure-chromium.mjs";
// @ts-expect-error: plain JavaScript modules shared with the benchmark and the scripts
import { root, startLocalWorker } from "../../scripts/local-worker.mjs";

let worker: { url: URL; dispose(): Promise<void> };
let browser: Browser;

beforeAll(async () => {
  const executablePath = ensureChromium();
  if (!existsSync(join(root, "console/dist/swagger/assets/swagger-ui-bundle.js")))
    throw new Error("Swagger UI's files are not built: run `npm run console:build` (npm test does).");
  worker = await startLocalWorker();
  browser = await chromium.launch({
    executablePath,
    args: CHROMIUM_ARGS,
  });
}, 180_000);

afterAll(async () => {
  await browser?.close();
  await worker?.dispose();
});

describe("Swagger UI in Chromium", () => {
  for (const path of ["/swagger", "/swagger/"]) {
    it(`renders the API document at ${path} with no other origin reachable`, async () => {
      const origin = new URL(worker.url).origin;
      const page = await browser.newPage();
      const elsewhere: string[] = [];
      // Offline: anything not on the service's own origin fails, as it would without a network.
      await page.route("**/*", (route) => {
        const url = route.request().url();
        if (url.startsWith(origin) || url.startsWith("data:")) return route.continue();
        elsewhere.push(url);
        return route.abort("internetdisconnected");
      });
      await page.goto(new URL(path, origin).toString());
      await page.locator(".swagger-ui .info .title", { hasText: "Licensing Service API" }).waitFor({ timeout: 30_000 });
      // An operation of the document is listed, so the document itself was fetched and read.
      const operations = page.locator(".opblock .opblock-summary-path");
      await operations.first().waitFor({ timeout: 30_000 });
      await expect
        .poll(async () => (await operations.allTextContents()).map((text) => text.replace(/\u200b/g, "")), {
          timeout: 30_000,
        })
        .toContain("/v1/api-keys");
      expect(elsewhere).toEqual([]);
      await page.close();
    });
  }
});
