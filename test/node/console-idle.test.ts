/**
 * The admin console after its session went idle (Application:ConsoleIdleTimeout, here two seconds), in Chromium
 * against the bundled Worker under Miniflare: the next page the user opens finds the session ended (the API answers
 * 401), and the console says so on its sign-in form instead of showing an empty or broken page; signing in again
 * works. The server side (what ends, what a request costs) is test/console-session.test.ts.
 *
 * Needs `npm run console:build` first (`npm test` does it) and Chromium (scripts/ensure-chromium.mjs).
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import { type Browser, chromium } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
// @ts-expect-error: a plain JavaScript module shared with the benchmark and the scripts
import { root, startLocalWorker } from "../../scripts/local-worker.mjs";
// @ts-expect-error: a plain JavaScript module
import { CHROMIUM_ARGS, ensureChromium } from "../../scripts/ensure-chromium.mjs";

const PASSWORD = "Console-idle-12345";
let worker: { url: URL; dispose(): Promise<void> };
let browser: Browser;

beforeAll(async () => {
  const executablePath = ensureChromium();
  if (!existsSync(join(root, "console/dist/console/index.html")))
    throw new Error("The console is not built: run `npm run console:build` (npm test does).");
  worker = await startLocalWorker({
    bindings: {
      Application__JwtSecret: "console-idle-test-jwt-secret-0123456789ab",
      Application__EncryptionKey: "console-idle-test-encryption-key",
      Application__AdminUsername: "admin",
      Application__AdminPassword: PASSWORD,
      Application__ConsoleIdleTimeout: "00:00:02",
    },
  });
  browser = await chromium.launch({ executablePath, args: CHROMIUM_ARGS });
}, 180_000);

afterAll(async () => {
  await browser?.close();
  await worker?.dispose();
});

describe("an idle console session", () => {
  it("ends, and the console says so and asks to sign in again", async () => {
    const page = await (await browser.newContext()).newPage();
    const signIn = async (landsOn: string) => {
      await page.getByLabel("User name").fill("admin");
      await page.getByLabel("Password").fill(PASSWORD);
      await page.getByRole("button", { name: "Sign in" }).click();
      await page.getByRole("heading", { name: landsOn, exact: true }).first().waitFor();
    };
    await page.goto(new URL("/console/", worker.url).toString());
    await signIn("Overview");
    // Used within the timeout, the session stays open.
    await page.waitForTimeout(1000);
    await page.evaluate("location.hash = '#/products'");
    await page.getByRole("heading", { name: "Products", exact: true }).first().waitFor();
    // Left alone for longer than the timeout: the next page finds the session ended.
    await page.waitForTimeout(2500);
    await page.evaluate("location.hash = '#/customers'");
    await expect.poll(() => page.getByRole("alert").textContent(), { timeout: 10_000 }).toMatch(/session ended/i);
    await expect(page.getByRole("button", { name: "Sign in" }).isVisible()).resolves.toBe(true);
    // Signing in again opens the page the user asked for.
    await signIn("Customers");
  });
});
