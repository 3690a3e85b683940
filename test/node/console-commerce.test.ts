/**
 * Payments to licenses in the admin console, in Chromium against the bundled Worker under Miniflare (issue 28): a
 * staff member maps a Lemon Squeezy variant to a license template on the Commerce mappings page, a signed purchase
 * arrives at the webhook, and the order and each of its licenses show the provider, a link to the order in the
 * provider's dashboard and the event history. Needs `npm run console:build` first and Chromium, as
 * test/node/console.test.ts.
 */
import { createHmac } from "node:crypto";
import { existsSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Browser, type Page, chromium } from "playwright-core";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
// @ts-expect-error: plain JavaScript modules shared with the benchmark and the scripts
import { root, startLocalWorker } from "../../scripts/local-worker.mjs";
// @ts-expect-error: a plain JavaScript module
import { CHROMIUM_ARGS, ensureChromium } from "../../scripts/ensure-chromium.mjs";
import type { JsonBody } from "../json-body.ts";

const KEY = "api_CommerceConsoleKey00000000000000";
const PASSWORD = "Commerce-12345";
const SECRET = "console-test-lemonsqueezy-secret";
let worker: { url: URL; dispose(): Promise<void> };
let browser: Browser;
let page: Page;
let base: string;

async function rest(method: string, path: string, body?: unknown, headers: Record<string, string> = {}) {
  const res = await fetch(new URL(path, base), {
    method,
    headers: { "content-type": "application/json", "x-api-key": KEY, ...headers },
    body: body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json().catch(() => ({}))) as JsonBody };
}

beforeAll(async () => {
  const executablePath = ensureChromium();
  if (!existsSync(join(root, "console/dist/console/index.html")))
    throw new Error("The console is not built: run `npm run console:build` (npm test does).");
  worker = await startLocalWorker({
    bindings: {
      Application__JwtSecret: "commerce-console-jwt-secret-0123456789abcdef",
      Application__EncryptionKey: "commerce-console-encryption-key",
      Application__AdminUsername: "admin",
      Application__AdminPassword: PASSWORD,
      Application__AdminApiKey: KEY,
      Commerce__LemonSqueezy__WebhookSecret: SECRET,
    },
  });
  base = worker.url.toString();
  browser = await chromium.launch({ executablePath, args: CHROMIUM_ARGS });
  page = await (await browser.newContext({ viewport: { width: 1366, height: 800 } })).newPage();
  page.on("dialog", (dialog) => void dialog.accept());
}, 180_000);

afterEach(async (context) => {
  if (context.task.result?.state !== "fail" || !page) return;
  const file = join(mkdtempSync(join(tmpdir(), "console-commerce-")), "failure.png");
  await page.screenshot({ path: file, fullPage: true }).catch(() => undefined);
  console.error(`console commerce test "${context.task.name}" failed on ${page.url()}; screenshot: ${file}`);
});

afterAll(async () => {
  await browser?.close();
  await worker?.dispose();
});

describe("commerce in the console", () => {
  it("maps a variant to a template; a purchase's order and licenses show the provider, its dashboard link and events", async () => {
    const product = await rest("POST", "/v1/products", { product: { name: "Studio", code: "studio-commerce" } });
    expect(product.status, JSON.stringify(product.body)).toBe(200);
    const template = await rest("POST", "/v1/license-templates", {
      licenseTemplate: { name: "Studio yearly", productId: product.body["productId"], maxClients: 2, expireDays: 365 },
    });
    expect(template.status, JSON.stringify(template.body)).toBe(200);
    const templateId = String(template.body["licenseTemplateId"]);

    // Sign in and create the mapping on the Commerce mappings page.
    await page.goto(new URL("/console/", base).toString());
    await page.getByLabel("User name").fill("admin");
    await page.getByLabel("Password").fill(PASSWORD);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByRole("navigation", { name: "Console" }).getByRole("link", { name: "Commerce mappings" }).click();
    await page.getByRole("button", { name: "New commerce mapping" }).click();
    await page.getByLabel("Provider").selectOption("lemonsqueezy");
    await page.getByLabel("Price, product or variant id").fill("22");
    await page.getByLabel("License template id").fill(templateId);
    await page.getByLabel("Quantity makes").selectOption("licenses");
    await page.getByLabel("Description").fill("Studio, yearly");
    // The first Create reaches the service but its answer is lost (the page sees a network error): Create again
    // sends the same Idempotency-Key, and the service answers the first answer rather than make a second mapping.
    const keys: string[] = [];
    let lose = true;
    await page.route("**/v1/commerce/mappings", async (route) => {
      const request = route.request();
      if (request.method() !== "POST") return route.continue();
      keys.push(request.headers()["idempotency-key"] ?? "");
      if (!lose) return route.continue();
      lose = false;
      await route.fetch();
      return route.abort("failed");
    });
    await page.getByRole("button", { name: "Create" }).click();
    await expect.poll(() => keys.length).toBe(1);
    await page.getByRole("alert").first().waitFor();
    await page.getByRole("button", { name: "Create" }).click();
    const row = page.getByRole("row").filter({ hasText: "Studio, yearly" });
    await row.getByRole("cell", { name: "Lemon Squeezy" }).waitFor();
    await row.getByRole("cell", { name: "22", exact: true }).waitFor();
    await page.unroute("**/v1/commerce/mappings");
    expect(keys).toHaveLength(2);
    expect(keys[0]).toMatch(/^[0-9a-f-]{36}$/);
    expect(keys[1]).toBe(keys[0]);
    const mappings = await rest("GET", "/v1/commerce/mappings");
    expect(mappings.body["mappings"]).toHaveLength(1);
    expect(mappings.body["mappings"]).toMatchObject([
      { provider: "lemonsqueezy", externalId: "22", templateId: Number(templateId), quantityMode: "licenses" },
    ]);

    // Lemon Squeezy's order_created for two units of variant 22, signed as Lemon Squeezy signs it.
    const orderRef = "778899";
    const body = JSON.stringify({
      meta: { event_name: "order_created", custom_data: {} },
      data: {
        type: "orders",
        id: orderRef,
        attributes: {
          store_id: 1,
          customer_id: 4242,
          identifier: "9b0f3f6e-1f4e-4d8e-9a57-0c1d2e3f4a5b",
          order_number: 778899,
          user_name: "Ada Lovelace",
          user_email: "ada@example.com",
          currency: "USD",
          status: "paid",
          total: 9800,
          created_at: "2026-11-26T10:00:00.000000Z",
          first_order_item: {
            order_id: 778899,
            product_id: 11,
            variant_id: 22,
            product_name: "Studio",
            variant_name: "Yearly",
            price: 4900,
            quantity: 2,
          },
        },
      },
    });
    const signature = createHmac("sha256", SECRET).update(body).digest("hex");
    const delivered = await rest("POST", "/v1/commerce/lemonsqueezy/webhook", body, { "x-signature": signature });
    expect(delivered.status, JSON.stringify(delivered.body)).toBe(200);
    const purchase = (
      await rest("GET", `/v1/commerce/purchases?filter=${encodeURIComponent(`purchaseRef == "${orderRef}"`)}`)
    ).body["purchases"][0] as JsonBody;
    const orderId = purchase["orderId"] as number;
    expect(orderId).toBeGreaterThan(0);

    // The order's page: provider, the order in Lemon Squeezy's dashboard, the event that made it.
    const dashboard = `https://app.lemonsqueezy.com/orders/${orderRef}`;
    await page.goto(new URL(`/console/#/order-lines/${orderId}`, base).toString());
    const provider = page.getByRole("region", { name: "Payment provider" });
    await provider.getByText("Lemon Squeezy", { exact: true }).waitFor();
    expect(await provider.getByRole("link", { name: new RegExp(orderRef) }).getAttribute("href")).toBe(dashboard);
    expect(await provider.getByRole("link", { name: /4242/ }).getAttribute("href")).toBe(
      "https://app.lemonsqueezy.com/customers/4242",
    );
    const event = provider.getByRole("row").filter({ hasText: "order_created" });
    await event.getByRole("cell", { name: "applied", exact: true }).waitFor();
    await event.getByRole("cell", { name: "purchase", exact: true }).waitFor();

    // Each license of the order shows the same.
    const licenses = (await rest("GET", `/v1/licenses?filter=${encodeURIComponent(`orderId == ${orderId}`)}`)).body[
      "licenses"
    ] as JsonBody[];
    expect(licenses).toHaveLength(2);
    await page.goto(new URL(`/console/#/licenses/${String(licenses[0]!["licenseId"])}`, base).toString());
    const onLicense = page.getByRole("region", { name: "Payment provider" });
    await onLicense.getByText("Lemon Squeezy", { exact: true }).waitFor();
    expect(await onLicense.getByRole("link", { name: new RegExp(orderRef) }).getAttribute("href")).toBe(dashboard);
    await onLicense.getByRole("row").filter({ hasText: "order_created" }).waitFor();

    // Each new list's filter placeholder is a filter that works on it (as console.test.ts holds the others).
    let tried = 0;
    for (const [hash, name] of [
      ["#/commerce-mappings", "Commerce mappings"],
      [`#/order-lines/${orderId}`, "Provider events"],
    ]) {
      await page.goto(new URL(`/console/${hash}`, base).toString());
      const list = page.locator(`section.card[aria-label="${name}"]:has(search)`);
      await list.waitFor();
      const input = list.getByLabel("Filter");
      const placeholder = (await input.getAttribute("placeholder")) ?? "";
      expect(placeholder).not.toBe("");
      await input.fill(placeholder);
      await list.getByRole("button", { name: "Apply" }).click();
      await expect
        .poll(async () => `${await list.getAttribute("data-filter")} ${await list.getAttribute("aria-busy")}`)
        .toBe(`${placeholder} false`);
      const alert = list.getByRole("alert");
      expect((await alert.count()) === 0 ? "" : await alert.textContent(), `${hash} ${name}: ${placeholder}`).toBe("");
      tried++;
    }
    expect(tried).toBe(2);

    // The mapping is edited (seats) and deleted on its page.
    await page.goto(new URL("/console/#/commerce-mappings", base).toString());
    const mapping = page.getByRole("row").filter({ hasText: "Studio, yearly" });
    await mapping.getByRole("button", { name: "Edit" }).click();
    await page.getByLabel("Quantity makes").selectOption("seats");
    await page.getByRole("button", { name: "Save" }).click();
    await mapping.getByRole("cell", { name: "seats", exact: true }).waitFor();
    expect((await rest("GET", "/v1/commerce/mappings")).body["mappings"][0]).toMatchObject({ quantityMode: "seats" });
    await mapping.getByRole("button", { name: "Delete" }).click();
    await expect.poll(async () => (await rest("GET", "/v1/commerce/mappings")).body["mappings"]).toEqual([]);
  });
});
