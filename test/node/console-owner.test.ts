/**
 * The console for the business (issue 37), in Chromium at 1280 × 800 against the bundled Worker under Miniflare:
 * the overview an owner reads first (licenses active and expiring, seats, revenue and refunds per month and
 * currency, releases rolling out, a delivery given up through the real queues), the Diagnostics page with the row
 * counts, the licenses list's simple filters writing the expression, the license page fitting 1280 px (a machine's
 * name, its 64-character id shortened with a copy button, dates on one line, the actions in view), and the Outbox:
 * the license email and the portal's sign-in link as development has them (no EMAIL binding), rendered, their links
 * followed, sent again, and a template previewed.
 *
 * Takes the README's pictures (UPDATE_SCREENSHOTS=1 writes them to docs/): console-overview.png,
 * console-filters.png, console-license-1280.png, console-outbox.png. Needs `npm run console:build` first and
 * Chromium, as test/node/console.test.ts.
 */
import { existsSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Browser, type BrowserContext, type Page, chromium } from "playwright-core";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
// @ts-expect-error: plain JavaScript modules shared with the benchmark and the scripts
import { root, startLocalWorker } from "../../scripts/local-worker.mjs";
// @ts-expect-error: a plain JavaScript module
import { CHROMIUM_ARGS, ensureChromium } from "../../scripts/ensure-chromium.mjs";
import { type WebhookReceiver, startWebhookReceiver } from "../webhook-receiver";
import type { JsonBody } from "../json-body.ts";
import { expressionBox, screenshot } from "./console-kit.ts";

const KEY = "api_OwnerConsoleKey00000000000000000";
const PASSWORD = "Owner-12345678";
const WIDTH = 1280;
/** A machine id as applications send them: a 64-character hash. */
const MACHINE = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";
const DAY = 86_400_000;
let worker: { url: URL; dispose(): Promise<void> };
let receiver: WebhookReceiver;
let browser: Browser;
let context: BrowserContext;
let page: Page;
let base: string;
const world = { floating: "", activation: "", hooli: "", globex: "", userKey: "" };

async function rest(method: string, path: string, body?: unknown, token?: string): Promise<JsonBody> {
  const res = await fetch(new URL(path, base), {
    method,
    headers: {
      "content-type": "application/json",
      ...(token ? { authorization: `Bearer ${token}` } : { "x-api-key": KEY }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const answer = (await res.json().catch(() => ({}))) as JsonBody;
  expect(res.status, `${method} ${path}: ${JSON.stringify(answer)}`).toBeLessThan(300);
  return answer;
}

/** A license made through the API, with its user key. */
async function license(
  productId: number,
  values: Record<string, unknown>,
): Promise<{ licenseId: string; userKey: string }> {
  const created = await rest("POST", "/v1/licenses", { license: { productId, ...values } });
  const listed = await rest("GET", `/v1/licenses?filter=${encodeURIComponent(`id == ${created["id"]}`)}`);
  return { licenseId: created["licenseId"], userKey: listed["licenses"][0].userKey };
}

/** The UTC month `back` months before this one, as an ISO instant in its middle. */
function midMonth(back: number): string {
  const now = new Date();
  return new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - back, 15, 12)).toISOString();
}

/** Known data through the API: licenses, seats, an activation, paid and refunded orders, releases, mail. */
async function seed(): Promise<void> {
  const productId = (
    await rest("POST", "/v1/products", {
      product: { code: "studio", name: "Studio", isApplication: true, url: "https://example.com/studio/download" },
    })
  )["productId"] as number;
  const customerId = (
    await rest("POST", "/v1/customers", { customer: { company: "Initech", email: "it@initech.example" } })
  )["customerId"] as number;
  const floating = await license(productId, {
    licensingMode: "Floating",
    maxClients: 3,
    licenseeName: "Initech",
    customerId,
  });
  const activation = await license(productId, {
    licensingMode: "Activation",
    maxClients: 2,
    licenseeName: "Umbrella",
    licenseeEmail: "ops@umbrella.example",
  });
  world.floating = floating.licenseId;
  world.activation = activation.licenseId;
  world.userKey = activation.userKey;
  world.hooli = (
    await license(productId, { licenseeName: "Hooli", expireDate: new Date(Date.now() + 5 * DAY).toISOString() })
  ).licenseId;
  world.globex = (
    await license(productId, { licenseeName: "Globex", expireDate: new Date(Date.now() + 20 * DAY).toISOString() })
  ).licenseId;
  await license(productId, { licenseeName: "Soylent", expireDate: new Date(Date.now() + 200 * DAY).toISOString() });
  await license(productId, { licenseeName: "Wayne", expireDate: new Date(Date.now() - 3 * DAY).toISOString() });
  await license(productId, { licenseeName: "Acme", revoked: true });

  // Two floating seats held by an application, one machine activated with the long id applications send.
  const token = (await rest("POST", "/v1/auth/login", { userKey: floating.userKey }))["token"] as string;
  for (const [clientId, clientName] of [
    ["alice", "Alice's desk"],
    ["bob", "Bob's laptop"],
  ])
    await rest(
      "POST",
      "/v1/license/request",
      { userKey: floating.userKey, machineId: `DESK-${clientId}`, clientId, clientName },
      token,
    );
  const appToken = (await rest("POST", "/v1/auth/login", { userKey: activation.userKey }))["token"] as string;
  await rest(
    "POST",
    "/v1/license/activate",
    { userKey: activation.userKey, machineId: MACHINE, clientName: "Build server" },
    appToken,
  );

  // Orders: this month 1,200 + 300 EUR (the 300 refunded) and 450 USD; last month 800 EUR; one unpaid.
  const order = (values: Record<string, unknown>) => rest("POST", "/v1/orders", { order: { customerId, ...values } });
  await order({ paymentStatus: "Paid", total: 1200, currency: "EUR", paymentDate: new Date().toISOString() });
  const refunded = await order({
    paymentStatus: "Paid",
    total: 300,
    currency: "EUR",
    paymentDate: new Date().toISOString(),
  });
  await rest("PUT", "/v1/orders", { order: { id: refunded["orderId"], paymentStatus: "Refunded" } });
  await order({ paymentStatus: "Paid", total: 450, currency: "USD", paymentDate: new Date().toISOString() });
  await order({ paymentStatus: "Paid", total: 800, currency: "EUR", paymentDate: midMonth(1) });
  await order({ paymentStatus: "Unpaid", total: 99, currency: "EUR" });

  // Releases: everyone on 1.0.0, 1.1.0 staged at 25 %, 1.2.0-beta scheduled, 1.0.5 halted.
  const release = async (values: Record<string, unknown>) =>
    (await rest("POST", `/v1/products/${productId}/releases`, { productRelease: { public: true, ...values } }))[
      "productReleaseId"
    ];
  await release({ version: "1.0.0" });
  await release({ version: "1.1.0", stagingPercentage: 25 });
  await release({
    version: "1.2.0",
    channel: "insider",
    stagingPercentage: 10,
    rolloutSchedule: [{ percentage: 50, at: new Date(Date.now() + 2 * DAY).toISOString() }],
  });
  const halted = await release({ version: "1.0.5" });
  await rest("POST", `/v1/products/${productId}/releases/${halted}/halt`, { reason: "Crashes at start on Windows 10" });

  // A CRM that is down: the next order's event is given up through the real queues (no retries).
  await rest("POST", "/v1/webhooks/subscriptions", {
    subscription: {
      name: "CRM (down)",
      url: `${receiver.url}/fail500/owner`,
      eventTypes: ["order.created"],
      maxRetryCount: 0,
    },
  });
  await order({ paymentStatus: "Paid", total: 250, currency: "GBP", paymentDate: midMonth(2) });

  // Mail: the license email template (HTML, with a download link), the license email, a portal sign-in link.
  await rest("POST", "/v1/resources", {
    resource: {
      name: "Your {ProductName} license",
      type: "EmailTemplate",
      dataFormat: "html",
      data: '<p>Dear {CustomerName},</p><p>Your key: <b>{UserKey}</b> (license {LicenseId}).</p><p><a href="{ProductDownload}">Download {ProductName}</a></p>',
    },
  });
  await rest("POST", "/v1/email/license", { licenseId: activation.licenseId });
  const signIn = await fetch(new URL("/v1/portal/sign-in", base), {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ email: "it@initech.example" }),
  });
  expect(signIn.status).toBe(200);
}

beforeAll(async () => {
  const executablePath = ensureChromium();
  if (!existsSync(join(root, "console/dist/console/index.html")))
    throw new Error("The console is not built: run `npm run console:build` (npm test does).");
  receiver = await startWebhookReceiver();
  worker = await startLocalWorker({
    bindings: {
      Application__JwtSecret: "owner-console-jwt-secret-0123456789abcdef",
      Application__EncryptionKey: "owner-console-encryption-key",
      Application__AdminUsername: "admin",
      Application__AdminPassword: PASSWORD,
      Application__AdminApiKey: KEY,
      Webhooks__AllowInsecureUrls: "true",
    },
  });
  base = worker.url.toString();
  await seed();
  browser = await chromium.launch({ executablePath, args: CHROMIUM_ARGS });
  context = await browser.newContext({ viewport: { width: WIDTH, height: 800 } });
  await context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: new URL(base).origin });
  page = await context.newPage();
  page.on("dialog", (dialog) => void dialog.accept());
}, 180_000);

afterEach(async (test) => {
  if (test.task.result?.state !== "fail" || !page) return;
  const file = join(mkdtempSync(join(tmpdir(), "console-owner-")), "failure.png");
  await page.screenshot({ path: file, fullPage: true }).catch(() => undefined);
  console.error(`console owner test "${test.task.name}" failed on ${page.url()}; screenshot: ${file}`);
});

afterAll(async () => {
  await browser?.close();
  await worker?.dispose();
  await receiver?.close();
});

describe("the console for the business", () => {
  it("leads the overview with licenses, seats, revenue and refunds, releases rolling out and deliveries given up", async () => {
    await page.goto(new URL("/console/", base).toString());
    await page.getByLabel("User name").fill("admin");
    await page.getByLabel("Password").fill(PASSWORD);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByRole("heading", { name: "Overview" }).waitFor();
    const tiles = page.getByRole("region", { name: "Key figures" });
    const tile = (label: string) => tiles.locator(".tile", { hasText: label }).locator(".n");
    // The delivery is given up by the queues after the answer: read the overview again until it is counted.
    for (let tries = 0; (await tile("Webhook deliveries given up").textContent()) !== "1" && tries < 60; tries++) {
      await page.waitForTimeout(500);
      await page.reload();
      await tiles.waitFor();
    }
    expect(await tile("Active licenses").textContent()).toBe("5");
    expect(await tile("Expiring in 30 days").textContent()).toBe("2");
    expect(await tiles.locator(".tile", { hasText: "Expiring in 30 days" }).textContent()).toContain(
      "1 expired, 1 revoked",
    );
    expect(await tile("Floating seats in use").textContent()).toBe("2 of 3");
    expect(await tiles.locator(".tile", { hasText: "Floating seats" }).textContent()).toContain("1 machines activated");
    expect(await tile("Releases rolling out").textContent()).toBe("2");
    expect(await tile("Webhook deliveries given up").textContent()).toBe("1");

    const money = page.getByRole("region", { name: "Revenue and refunds" });
    const rows = await money.getByRole("row").allTextContents();
    const thisMonth = new Intl.DateTimeFormat("en-US", { month: "long", year: "numeric", timeZone: "UTC" }).format(
      new Date(),
    );
    expect(rows).toContain(`${thisMonth}EUR€1,500.00 (2)€300.00 (1)€1,200.00`);
    expect(rows).toContain(`${thisMonth}USD$450.00 (1)$0.00 (0)$450.00`);
    expect(rows.some((r) => r.includes("EUR€800.00 (1)"))).toBe(true);
    expect(rows.some((r) => r.includes("GBP£250.00 (1)"))).toBe(true);
    expect(rows.join()).not.toContain("99");

    const expiring = page.getByRole("region", { name: "Licenses expiring soon" });
    expect((await expiring.getByRole("row").allTextContents()).slice(1).map((r) => r.slice(0, 11))).toEqual([
      world.hooli,
      world.globex,
    ]);
    const releases = page.getByRole("region", { name: "Releases rolling out" });
    await releases.getByRole("row").filter({ hasText: "Studio 1.1.0" }).getByText("25 %").waitFor();
    await releases
      .getByRole("row")
      .filter({ hasText: "Studio 1.2.0" })
      .getByText(/^50 % from /)
      .waitFor();
    await releases
      .getByRole("row")
      .filter({ hasText: "Studio 1.0.5" })
      .getByText(/^Crashes at start on Windows 10 \(since /)
      .waitFor();
    const failed = page.getByRole("region", { name: "Failed webhook deliveries" });
    await failed.getByRole("row").filter({ hasText: "CRM (down)" }).getByText("order.created").waitFor();
    expect(await page.getByRole("alert").count()).toBe(0);
    // The row counts are no longer the overview's.
    expect(await page.getByRole("region", { name: "Counts" }).count()).toBe(0);
    await screenshot(page, "console-overview.png");
  }, 60_000);

  it("shows the row counts and what is running on the Diagnostics page", async () => {
    await page.getByRole("navigation", { name: "Console" }).getByRole("link", { name: "Diagnostics" }).click();
    await page.getByRole("heading", { name: "Diagnostics" }).waitFor();
    const counts = page.getByRole("region", { name: "Counts" });
    await counts.locator(".count", { hasText: "Licenses" }).first().waitFor();
    expect(await counts.textContent()).toContain("API keys");
    expect(await page.getByRole("region", { name: "Feature switches" }).textContent()).toContain("outbox");
  });

  it("filters licenses with simple fields that write the expression, the expression kept as the advanced option", async () => {
    await page.getByRole("navigation", { name: "Console" }).getByRole("link", { name: "Licenses" }).click();
    const list = page.getByRole("region", { name: "Licenses" });
    await list.getByRole("cell", { name: world.hooli }).waitFor();
    expect(await list.getByRole("row").count()).toBe(8);
    await list.getByLabel("State").selectOption("Expiring in 30 days");
    await list.getByRole("button", { name: "Apply" }).click();
    await expect
      .poll(() => list.getAttribute("data-filter"))
      .toMatch(/^revoked == false && expireDate > "[^"]+" && expireDate <= "[^"]+"$/);
    await expect.poll(async () => (await list.getByRole("row").count()) - 1).toBe(2);
    await list.getByRole("cell", { name: world.globex }).waitFor();
    await list.getByLabel("Search").fill("HOO");
    await list.getByLabel("Search").press("Enter");
    await expect.poll(async () => (await list.getByRole("row").count()) - 1).toBe(1);
    await list.getByRole("cell", { name: world.hooli }).waitFor();
    // The fields wrote the expression the list applied; it is there to read and change.
    const expression = await expressionBox(list);
    const written = await expression.inputValue();
    expect(written).toMatch(
      /^\(licenseId\.ToLower\(\)\.Contains\("hoo"\) \|\| licenseeName\.ToLower\(\)\.Contains\("hoo"\) \|\| .*\) && revoked == false && /,
    );
    expect(await list.getAttribute("data-filter")).toBe(written);
    await screenshot(page, "console-filters.png");
    // By hand: the expression as the advanced option.
    await expression.fill('licenseeName == "Wayne"');
    await list.getByRole("button", { name: "Apply" }).click();
    await expect.poll(() => list.getAttribute("data-filter")).toBe('licenseeName == "Wayne"');
    await expect.poll(async () => (await list.getByRole("row").count()) - 1).toBe(1);
    // A product and a mode, chosen by name.
    await list.getByRole("button", { name: "Clear" }).click();
    await list.getByLabel("Mode").selectOption("Floating");
    await list.getByLabel("Product").selectOption({ label: "Studio #1" });
    await list.getByRole("button", { name: "Apply" }).click();
    await expect.poll(() => list.getAttribute("data-filter")).toBe('productId == 1 && licensingMode == "Floating"');
    await expect.poll(async () => (await list.getByRole("row").count()) - 1).toBe(1);
    await list.getByRole("cell", { name: world.floating }).waitFor();
  });

  it("fits a license page in 1280 px: the machine's name, a short id with copy, dates on one line, actions in view", async () => {
    await page.goto(new URL(`/console/#/licenses/${world.activation}`, base).toString());
    const seats = page.getByRole("region", { name: "Activations and floating seats" });
    const row = seats.getByRole("row").filter({ hasText: "Build server" });
    await row.waitFor();
    // No horizontal scrolling of the page, and the row's action is inside the window.
    expect(await page.evaluate("document.documentElement.scrollWidth")).toBeLessThanOrEqual(WIDTH);
    const free = (await row.getByRole("button", { name: "Free machine" }).boundingBox())!;
    expect(free.x + free.width).toBeLessThanOrEqual(WIDTH);
    // Dates on one line: the text of each date cell of the row lies on one line (its line boxes share one top).
    // (Browser code typed loosely: the test's TypeScript has no DOM types.)
    // biome-ignore lint/suspicious/noExplicitAny: DOM nodes in a Node program's types
    const lines = await row.locator("td.date").evaluateAll((cells: any[]) =>
      cells.map((td) => {
        // biome-ignore lint/suspicious/noExplicitAny: the browser's document
        const range = (globalThis as any).document.createRange();
        range.selectNodeContents(td);
        return new Set([...range.getClientRects()].map((b: { top: number }) => Math.round(b.top))).size;
      }),
    );
    expect(lines.length).toBeGreaterThanOrEqual(1);
    expect(
      lines.every((n) => n === 1),
      `lines per date cell: ${lines}`,
    ).toBe(true);
    const id = row.locator(".machine-id code");
    expect(await id.textContent()).toBe(`${MACHINE.slice(0, 8)}…${MACHINE.slice(-4)}`);
    expect(await id.getAttribute("title")).toBe(MACHINE);
    await row.getByRole("button", { name: "Copy id" }).click();
    await row.getByText("Copied").waitFor();
    expect(await page.evaluate("navigator.clipboard.readText()")).toBe(MACHINE);
    await screenshot(page, "console-license-1280.png");
    // The other wide lists: every row's actions are in the window, and the page does not scroll sideways.
    const subscription = (await rest("GET", "/v1/webhooks/subscriptions"))["subscriptions"][0];
    for (const hash of ["#/orders", "#/customers", "#/api-keys", `#/webhooks/${subscription.id}`]) {
      await page.goto(new URL(`/console/${hash}`, base).toString());
      await page.locator("td.row-actions").first().waitFor();
      expect(await page.evaluate("document.documentElement.scrollWidth"), hash).toBeLessThanOrEqual(WIDTH);
      for (const box of await page.locator("td.row-actions button").all()) {
        const { x, width } = (await box.boundingBox())!;
        expect(x + width, `${hash}: ${await box.textContent()}`).toBeLessThanOrEqual(WIDTH);
      }
    }
  });

  it("lists every message in the Outbox, renders it with its links, sends one again and previews a template", async () => {
    await page.getByRole("navigation", { name: "Console" }).getByRole("link", { name: "Outbox" }).click();
    await page.getByRole("heading", { name: "Outbox" }).waitFor();
    await page
      .getByRole("note")
      .getByText(/^No EMAIL binding/)
      .waitFor();
    const list = page.getByRole("region", { name: "Messages" });
    const licenseMail = list.getByRole("row").filter({ hasText: "Your Studio license" });
    await licenseMail.getByRole("cell", { name: "ops@umbrella.example" }).waitFor();
    await licenseMail.getByRole("cell", { name: "queued", exact: true }).waitFor();
    // The license email: HTML, rendered in a sandboxed frame, with the user key it carries.
    await licenseMail.getByRole("button", { name: "Open" }).click();
    const message = page.getByRole("region", { name: "Message" });
    const body = message.frameLocator("iframe.mail-html");
    await body.getByText(world.userKey).waitFor();
    expect(await body.getByRole("link", { name: "Download Studio" }).getAttribute("href")).toBe(
      "https://example.com/studio/download",
    );
    // The portal's sign-in link: plain text, its link clickable, and it opens the portal's confirmation.
    const signIn = list.getByRole("row").filter({ hasText: "your sign-in link" });
    await signIn.getByRole("button", { name: "Open" }).click();
    const link = message.getByRole("link", { name: /\/v1\/portal\/sign-in\// });
    const [portal] = await Promise.all([context.waitForEvent("page"), link.click()]);
    await portal.getByRole("button", { name: "Continue as Initech" }).waitFor();
    await portal.close();
    // Sent again: a new message, the same text.
    const before = await list.getByRole("row").count();
    await signIn.getByRole("button", { name: "Resend" }).click();
    await page.getByText(/^Message \d+ queued again as message \d+$/).waitFor();
    await expect.poll(() => list.getByRole("row").count()).toBe(before + 1);
    await licenseMail.getByRole("button", { name: "Open" }).click();
    await body.getByText(world.userKey).waitFor();
    await screenshot(page, "console-outbox.png");
    // A template previewed for a sample license: nothing is sent.
    const preview = page.getByRole("region", { name: "Preview a license email" });
    await preview.getByRole("button", { name: "Preview" }).click();
    await preview
      .getByRole("region", { name: "Preview" })
      .frameLocator("iframe")
      .getByText("Dear Ada Lovelace,")
      .waitFor();
    expect(await list.getByRole("row").count()).toBe(before + 1);
  });
});
