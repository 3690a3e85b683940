/**
 * The customer portal (`/portal/`, issue 30) in a real browser: Debian's Chromium driven by playwright-core against the
 * bundled Worker under Miniflare (real D1, R2, Durable Objects; the page from the static assets binding). A customer
 * of "Acme" signs in with a user key (after a malformed one), frees machines until the monthly limit and sees its
 * reset date, changes the licensee name, downloads a build and checks its SHA-256, reads the orders, signs out, then
 * signs in again with the emailed link (read from the outbox), which works once. The vendor's title, colour and logo
 * are on the page, and the page asks nothing of another origin: the logo comes through the Worker's /portal/logo.
 * It also takes the README's screenshot (docs/portal.png, with UPDATE_SCREENSHOTS=1).
 *
 * Needs `npm run console:build` first (`npm test` does it) and Chromium (scripts/ensure-chromium.mjs).
 */
import { createHash, randomBytes } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Browser, type Page, chromium } from "playwright-core";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
// @ts-expect-error: plain JavaScript modules shared with the benchmark and the scripts
import { root, startLocalWorker } from "../../scripts/local-worker.mjs";
// @ts-expect-error: a plain JavaScript module
import { CHROMIUM_ARGS, ensureChromium } from "../../scripts/ensure-chromium.mjs";
import type { JsonBody } from "../json-body.ts";

const KEY = "api_PortalPageAdminKey00000000000000";
const LOGO_URL = "https://brand.acme.example/logo.svg";
const LOGO =
  '<svg xmlns="http://www.w3.org/2000/svg" width="44" height="44" viewBox="0 0 44 44"><rect width="44" height="44" rx="10" fill="#0f766e"/><path d="M10 32 22 10l12 22h-7l-5-9-5 9z" fill="#fff"/></svg>';
const INSTALLER = randomBytes(300 * 1024);

let worker: { url: URL; mf: { getD1Database(name: string): Promise<D1Like> }; dispose(): Promise<void> };
let browser: Browser;
let page: Page;
let base: string;
let origin: string;
/** Every URL the page requested, and every URL the Worker fetched from another origin. */
const requested: string[] = [];
const outbound: string[] = [];

interface D1Like {
  prepare(sql: string): { bind(...values: unknown[]): { first<T>(): Promise<T | null> } };
}

async function api(method: string, path: string, body?: unknown, raw?: BodyInit): Promise<JsonBody> {
  const res = await fetch(new URL(path, base), {
    method,
    headers: { "x-api-key": KEY, ...(raw ? {} : { "content-type": "application/json" }) },
    body: raw ?? (body === undefined ? undefined : JSON.stringify(body)),
  });
  const json = (await res.json()) as JsonBody;
  if (res.status !== 200 && res.status !== 201)
    throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(json)}`);
  return json;
}

/** The customer's world: Acme Studio 2.4.0 for Windows, one order, a license with four machines. */
const world = {
  customerId: 0,
  productId: 0,
  email: "dana@customer.example",
  licenseId: "",
  userKey: "",
  orderNumber: "",
  machines: ["DANA-OLD-LAPTOP", "DANA-DESKTOP", "OFFICE-PC-2", "STUDIO-MAC"],
};

async function makeWorld(): Promise<void> {
  const product = await api("POST", "/v1/products", {
    product: {
      code: "acme-studio",
      name: "Acme Studio",
      isApplication: true,
      renewalUrl: "https://shop.acme.example/renew",
    },
  });
  const productId = product["productId"] as number;
  world.productId = productId;
  const release = await api("POST", `/v1/products/${productId}/releases`, { productRelease: { version: "2.4.0" } });
  const releaseId = release["productReleaseId"] as number;
  const form = new FormData();
  form.set("platform", "win-x64");
  form.set("kind", "installer");
  form.set("file", new Blob([INSTALLER]), "AcmeStudioSetup-2.4.0.exe");
  await api("POST", `/v1/products/${productId}/releases/${releaseId}/downloads`, undefined, form);
  await api("PUT", `/v1/products/${productId}/releases`, { productRelease: { id: releaseId, public: true } });

  const customer = await api("POST", "/v1/customers", {
    customer: { firstName: "Dana", lastName: "Whitfield", email: world.email, company: "Whitfield Design" },
  });
  const customerId = customer["customerId"] as number;
  world.customerId = customerId;
  const order = await api("POST", "/v1/orders", { order: { customerId, total: 249, currency: "EUR" } });
  const orders = await api("GET", `/v1/orders?filter=${encodeURIComponent(`id == ${order["orderId"]}`)}`);
  world.orderNumber = orders["orders"][0].orderNumber;
  const created = await api("POST", "/v1/licenses", {
    license: {
      productId,
      customerId,
      licensingMode: "Activation",
      maxClients: 5,
      edition: "Standard",
      licenseeName: "Dana Whitfield",
    },
  });
  world.licenseId = created["licenseId"];
  const listed = await api("GET", `/v1/licenses?filter=${encodeURIComponent(`id == ${created["id"]}`)}&select=userKey`);
  world.userKey = listed["licenses"][0].userKey;
  for (const machineId of world.machines)
    await api("POST", "/v1/license/activate", { userKey: world.userKey, machineId });

  // A floating license of another product, two seats taken by the studio's render nodes right now.
  const render = await api("POST", "/v1/products", { product: { code: "acme-render", name: "Acme Render Node" } });
  const floating = await api("POST", "/v1/licenses", {
    license: { productId: render["productId"], customerId, licensingMode: "Floating", maxClients: 8 },
  });
  const floatingKey = (
    await api("GET", `/v1/licenses?filter=${encodeURIComponent(`id == ${floating["id"]}`)}&select=userKey`)
  )["licenses"][0].userKey;
  const login = await fetch(new URL("/v1/auth/login", base), {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ userKey: floatingKey }),
  });
  const token = ((await login.json()) as JsonBody)["token"];
  for (const [machineId, clientName] of <[string, string][]>[
    ["RENDER-01", "Render node 1"],
    ["RENDER-02", "Render node 2"],
  ]) {
    const seat = await fetch(new URL("/v1/license/request", base), {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
      body: JSON.stringify({ userKey: floatingKey, machineId, clientId: machineId.toLowerCase(), clientName }),
    });
    expect(seat.status, await seat.clone().text()).toBe(200);
  }
}

/** The license as the vendor's staff sees it (management API). */
async function staffView(): Promise<JsonBody> {
  const res = await api("GET", `/v1/licenses?filter=${encodeURIComponent(`licenseId == "${world.licenseId}"`)}`);
  return res["licenses"][0];
}

/** The link of the sign-in email most recently queued to `to` (the outbox: no EMAIL binding here). */
async function linkSentTo(to: string): Promise<string> {
  const db = await worker.mf.getD1Database("DB");
  let link: string | undefined;
  await expect
    .poll(
      async () => {
        const row = await db
          .prepare("SELECT body FROM email_outbox WHERE to_address = ? ORDER BY id DESC LIMIT 1")
          .bind(to)
          .first<{ body: string }>();
        link = /https?:\/\/\S+\/v1\/portal\/sign-in\/[0-9A-Za-z]{32}/.exec(row?.body ?? "")?.[0];
        return link;
      },
      { timeout: 10_000 },
    )
    .toBeDefined();
  return link!;
}

const card = () => page.locator("section.card", { has: page.getByRole("heading", { name: /Acme Studio/ }) });
const firstDayOfNextMonth = () => {
  const now = new Date();
  return new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1)).toISOString().slice(0, 10);
};

beforeAll(async () => {
  const executablePath = ensureChromium();
  if (!existsSync(join(root, "console/dist/portal/index.html")))
    throw new Error("The portal page is not built: run `npm run console:build` (npm test does).");
  worker = await startLocalWorker({
    bindings: {
      Application__JwtSecret: "portal-page-test-jwt-secret-0123456789ab",
      Application__EncryptionKey: "portal-page-test-encryption-key",
      Application__AdminUsername: "admin",
      Application__AdminPassword: "Portal-12345",
      Application__AdminApiKey: KEY,
      Portal__AccentColor: "#0f766e",
      Portal__LogoUrl: LOGO_URL,
    },
    // The vendor's web server, as far as the Worker can tell: it serves the logo.
    outbound: (request: Request) => {
      outbound.push(request.url);
      if (request.url === LOGO_URL) return new Response(LOGO, { headers: { "content-type": "image/svg+xml" } });
      if (request.url.endsWith("/about.html"))
        return new Response("<script>alert(1)</script>", { headers: { "content-type": "text/html" } });
      return new Response("not here", { status: 404 });
    },
  });
  base = worker.url.toString();
  origin = new URL(base).origin;
  // The title as a vendor sets it in the console's settings (a database setting; the last test changes it there).
  await api("PUT", "/v1/settings", { settings: [{ name: "Portal:Title", value: "Acme Software customer portal" }] });
  await makeWorld();
  browser = await chromium.launch({ executablePath, args: CHROMIUM_ARGS });
  const context = await browser.newContext({ viewport: { width: 1180, height: 900 }, acceptDownloads: true });
  page = await context.newPage();
  page.on("request", (request) => requested.push(request.url()));
  page.on("dialog", (dialog) => void dialog.accept());
}, 180_000);

afterEach(async (context) => {
  if (context.task.result?.state !== "fail" || !page) return;
  const file = join(mkdtempSync(join(tmpdir(), "portal-page-")), "failure.png");
  await page.screenshot({ path: file, fullPage: true }).catch(() => undefined);
  console.error(`portal page test "${context.task.name}" failed on ${page.url()}; screenshot: ${file}`);
});

afterAll(async () => {
  await browser?.close();
  await worker?.dispose();
});

describe("the customer portal in Chromium", () => {
  it("wears the vendor's title, colour and logo; a malformed user key or email is refused in the page", async () => {
    await page.goto(new URL("/portal/", base).href);
    await expect.poll(() => page.textContent("h1")).toBe("Acme Software customer portal");
    expect(await page.title()).toBe("Acme Software customer portal");
    const signIn = page.getByRole("button", { name: "Sign in", exact: true });
    expect(
      await signIn.evaluate(
        (b) =>
          (globalThis as unknown as { getComputedStyle(e: unknown): { backgroundColor: string } }).getComputedStyle(b)
            .backgroundColor,
      ),
    ).toBe("rgb(15, 118, 110)");
    // The logo drew, from the portal's own origin.
    const logo = page.locator(".brand img");
    await expect
      .poll(() => logo.evaluate((img) => (img as unknown as { naturalWidth: number }).naturalWidth))
      .toBeGreaterThan(0);
    expect(await logo.getAttribute("src")).toBe("/portal/logo");
    expect(outbound).toContain(LOGO_URL);

    // Too short for a user key or a legacy key (8 characters at least): what could be a legacy key is looked up.
    await page.getByLabel("User key").fill("AB-1");
    await signIn.click();
    await expect.poll(() => page.getByRole("alert").textContent()).toMatch(/^The user key is malformed/);
    await page.getByLabel("Email").fill("dana at customer");
    await page.getByRole("button", { name: "Email me a sign-in link" }).click();
    await expect.poll(() => page.getByRole("alert").nth(1).textContent()).toMatch(/^The email address is malformed/);
    expect((await page.context().cookies()).some((c) => c.name === "__Host-portal-session")).toBe(false);
  });

  it("signs in with a user key and shows the license: dates, renewal link, machines, deactivations left", async () => {
    await page.getByLabel("User key").fill(world.userKey);
    await page.getByRole("button", { name: "Sign in", exact: true }).click();
    await card().waitFor();
    const text = await card().textContent();
    for (const expected of [
      "Acme Studio",
      "Standard",
      world.userKey,
      "4 of 5 in use",
      "3 of 3 deactivations left this month.",
      ...world.machines,
    ])
      expect(text).toContain(expected);
    expect(await card().getByRole("link", { name: "Renew" }).getAttribute("href")).toBe(
      "https://shop.acme.example/renew",
    );
    // The floating license: its live seats, with the names the application gave them.
    const seats = page
      .locator("section.card", { has: page.getByRole("heading", { name: /Acme Render Node/ }) })
      .getByRole("table", { name: "Floating seats in use now" });
    await seats.waitFor();
    expect(await seats.textContent()).toMatch(/RENDER-01Render node 1.*RENDER-02Render node 2/);
    const session = (await page.context().cookies()).find((c) => c.name === "__Host-portal-session");
    expect(session).toMatchObject({ httpOnly: true, secure: true, sameSite: "Strict" });
  });

  it("frees machines until the monthly limit, then shows the date it resets and frees no more", async () => {
    const count = card().locator(".count");
    await card().getByRole("button", { name: "Deactivate DANA-OLD-LAPTOP" }).click();
    await expect.poll(() => count.textContent()).toBe("2 of 3 deactivations left this month.");
    expect(await card().getByRole("status").textContent()).toContain("DANA-OLD-LAPTOP is deactivated");
    expect(await card().getByRole("button", { name: "Deactivate DANA-OLD-LAPTOP" }).count()).toBe(0);
    await card().getByRole("button", { name: "Deactivate OFFICE-PC-2" }).click();
    await expect.poll(() => count.textContent()).toBe("1 of 3 deactivations left this month.");
    await card().getByRole("button", { name: "Deactivate STUDIO-MAC" }).click();
    const reset = firstDayOfNextMonth();
    await expect.poll(() => count.textContent()).toBe(`No deactivations left this month: more from ${reset} (UTC).`);

    // One more: the service refuses it (429) and says when; the machine stays.
    await card().getByRole("button", { name: "Deactivate DANA-DESKTOP" }).click();
    await expect
      .poll(() => card().getByRole("alert").textContent())
      .toBe(
        `License ${world.licenseId} has used its 3 machine deactivations this month; more are possible from ${reset} (UTC).`,
      );
    await expect.poll(() => card().getByRole("button", { name: "Deactivate DANA-DESKTOP" }).count()).toBe(1);
    expect(await card().textContent()).toContain("1 of 5 in use");
    if (process.env["UPDATE_SCREENSHOTS"] === "1")
      await page.screenshot({ path: join(root, "docs", "portal.png"), fullPage: true });
  });

  it("changes the licensee name on the license, and says why an empty one is refused", async () => {
    const field = card().getByLabel("Licensee name");
    await field.fill("");
    await card().getByRole("button", { name: "Save name" }).click();
    await expect
      .poll(() => card().getByRole("alert").textContent())
      .toBe("The licensee name must be 1 to 256 characters.");
    expect((await staffView())["licenseeName"]).toBe("Dana Whitfield");
    await card().getByLabel("Licensee name").fill("Whitfield Design Ltd");
    await card().getByRole("button", { name: "Save name" }).click();
    await expect
      .poll(() => card().getByRole("status").textContent())
      .toBe("The licensee name is now Whitfield Design Ltd.");
    expect((await staffView())["licenseeName"]).toBe("Whitfield Design Ltd");
  });

  it("downloads the newest Windows build with its one-time token: the very bytes uploaded", async () => {
    await page.getByRole("link", { name: "Downloads" }).click();
    const link = page.getByRole("link", { name: "Download AcmeStudioSetup-2.4.0.exe for Windows (x64)" });
    await link.waitFor();
    expect(await link.getAttribute("href")).toMatch(/\?token=/);
    const sha256 = createHash("sha256").update(INSTALLER).digest("hex");
    expect(await card().locator("code.hash").first().textContent()).toBe(sha256);
    const [download] = await Promise.all([page.waitForEvent("download"), link.click()]);
    const saved = readFileSync((await download.path())!);
    expect(saved.length).toBe(INSTALLER.length);
    expect(createHash("sha256").update(saved).digest("hex")).toBe(sha256);
    // A platform the Standard edition is not entitled to says so.
    const linux = card().getByRole("row", { name: /Linux \(x64\)/ });
    expect(await linux.textContent()).toMatch(/not entitled/);
  });

  it("lists the customer's orders", async () => {
    await page.getByRole("link", { name: "Orders" }).click();
    const row = page.getByRole("row", { name: new RegExp(world.orderNumber) });
    await row.waitFor();
    expect(await row.textContent()).toContain("249.00 EUR");
  });

  it("signs out: the session is gone", async () => {
    await page.getByRole("button", { name: "Sign out" }).click();
    await expect.poll(() => page.getByRole("alert").first().textContent()).toBe("You signed out.");
    const me = await page.evaluate(async () => (await fetch("/v1/portal/me")).status);
    expect(me).toBe(401);
  });

  it("signs in with an emailed link that works once", async () => {
    await page.getByLabel("Email").fill(world.email);
    await page.getByRole("button", { name: "Email me a sign-in link" }).click();
    await expect.poll(() => page.getByRole("status").textContent()).toMatch(/^Check your inbox\./);
    const link = await linkSentTo(world.email);
    expect(new URL(link).origin).toBe(origin);
    await page.goto(link);
    // Opening the link signs in no one: the page shows whose account it opens and asks.
    const confirm = page.getByRole("button", { name: "Continue as Whitfield Design" });
    await confirm.waitFor();
    expect(new URL(page.url()).hash).toBe("");
    expect(await page.locator("main").textContent()).toContain("(dana@customer.example)");
    expect(await page.evaluate(async () => (await fetch("/v1/portal/me")).status)).toBe(401);
    await confirm.click();
    await card().waitFor();
    expect(new URL(page.url()).pathname).toBe("/portal/");
    expect(await page.locator(".who").textContent()).toContain("Whitfield Design");
    expect(await card().textContent()).toContain("Whitfield Design Ltd");

    // Signed out again, the same link signs in to nothing.
    await page.getByRole("button", { name: "Sign out" }).click();
    await page.getByLabel("User key").waitFor();
    await page.goto(link);
    await expect
      .poll(() => page.getByRole("alert").first().textContent())
      .toBe("This sign-in link is unknown, expired or already used: ask for a new one.");
    expect(new URL(page.url()).hash).toBe("");
    expect(await page.evaluate(async () => (await fetch("/v1/portal/me")).status)).toBe(401);
  });

  it("a page of another site cannot sign a visitor in to its own account with its link (login CSRF)", async () => {
    const mallory = "mallory@attacker.example";
    await api("POST", "/v1/customers", { customer: { firstName: "Mallory", lastName: "Vance", email: mallory } });
    const asked = await fetch(new URL("/v1/portal/sign-in", base), {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ email: mallory }),
    });
    expect(asked.status).toBe(200);
    const link = await linkSentTo(mallory);
    const token = link.split("/").pop()!;
    // The victim's browser visits the attacker's page, which posts the link's token to the portal in a form (what a
    // page of another site can send without the portal's consent), then opens the link.
    const victim = await browser.newContext();
    await victim.route("http://attacker.example/**", (route) =>
      route.fulfill({
        contentType: "text/html",
        body: `<!doctype html><form id="f" method="POST" action="${origin}/v1/portal/sign-in" enctype="text/plain"><input name='{"linkToken":"${token}","x":"' value='"}'></form><script>document.getElementById("f").submit()</script>`,
      }),
    );
    const tab = await victim.newPage();
    const posted = tab.waitForResponse((r) => r.url() === `${origin}/v1/portal/sign-in`);
    await tab.goto("http://attacker.example/");
    const refused = await posted;
    expect(refused.request().method()).toBe("POST");
    expect(refused.status()).toBe(415);
    await tab.goto(link);
    await tab.getByRole("button", { name: "Continue as Mallory Vance" }).waitFor();
    await tab.getByRole("button", { name: "Not me" }).click();
    await tab.getByLabel("User key").waitFor();
    expect((await victim.cookies()).some((c) => c.name === "__Host-portal-session")).toBe(false);
    expect(await tab.evaluate(async () => (await fetch("/v1/portal/me")).status)).toBe(401);
    // The link is still Mallory's to use: nothing above spent it.
    const still = await fetch(link, { headers: { accept: "application/json" } });
    expect(still.status).toBe(200);
    await victim.close();
  });

  it("loads nothing from another origin, under the console's CSP", async () => {
    expect(requested.length).toBeGreaterThan(0);
    const elsewhere = requested.filter(
      (url) => !url.startsWith(`${origin}/`) && !url.startsWith("data:") && !url.startsWith("blob:"),
    );
    expect(elsewhere).toEqual([]);
    expect(requested).toContain(`${origin}/portal/logo`);
    const res = await fetch(new URL("/portal/", base));
    expect(res.status).toBe(200);
    const csp = res.headers.get("content-security-policy") ?? "";
    for (const directive of [
      "default-src 'self'",
      "script-src 'self'",
      "style-src 'self'",
      "img-src 'self' data:",
      "connect-src 'self'",
      "frame-ancestors 'none'",
    ])
      expect(csp).toContain(directive);
    expect(res.headers.get("x-frame-options")).toBe("DENY");
    const logo = await fetch(new URL("/portal/logo", base));
    expect(logo.headers.get("content-type")).toBe("image/svg+xml");
    expect(logo.headers.get("content-security-policy")).toContain("sandbox");
    expect(await logo.text()).toBe(LOGO);

    // A logo URL that is not a picture, or not there, is passed on as nothing but a 502 naming the setting.
    for (const [url, words] of [
      ["https://brand.acme.example/about.html", "is not a picture (Content-Type text/html)"],
      ["https://brand.acme.example/gone.png", "answered HTTP 404"],
    ]) {
      await api("PUT", "/v1/settings", { settings: [{ name: "Portal:LogoUrl", value: url }] });
      const refused = await fetch(new URL("/portal/logo", base));
      expect(refused.status).toBe(502);
      expect(((await refused.json()) as JsonBody)["message"]).toBe(`The logo at Portal:LogoUrl ${words}`);
    }
    await api("PUT", "/v1/settings", { settings: [{ name: "Portal:LogoUrl", value: null }] });
    expect((await fetch(new URL("/portal/logo", base))).status).toBe(200);
  });

  it("the console shows the customer's portal activity, and edits the portal's settings", async () => {
    // Another customer signs in to the portal too: their entry is theirs, not Dana's.
    const other = await api("POST", "/v1/customers", { customer: { firstName: "Olu", lastName: "Other" } });
    const otherLicense = await api("POST", "/v1/licenses", {
      license: { productId: world.productId, customerId: other["customerId"], licensingMode: "Activation" },
    });
    const otherKey = (
      await api("GET", `/v1/licenses?filter=${encodeURIComponent(`id == ${otherLicense["id"]}`)}&select=userKey`)
    )["licenses"][0].userKey;
    const signedIn = await fetch(new URL("/v1/portal/sign-in", base), {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ userKey: otherKey }),
    });
    expect(signedIn.status).toBe(200);

    await page.goto(new URL("/console/", base).href);
    await page.getByLabel("User name").fill("admin");
    await page.getByLabel("Password").fill("Portal-12345");
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByRole("heading", { name: "Overview" }).waitFor();
    await page.goto(new URL(`/console/#/customers/${world.customerId}/portal`, base).href);
    await page.getByRole("heading", { name: `Customer ${world.customerId}: portal activity` }).waitFor();
    const table = page.getByRole("table", { name: /Portal activity/ });
    await expect.poll(() => table.getByRole("row").count()).toBeGreaterThan(1);
    const text = await table.textContent();
    for (const done of [
      `Machine DANA-OLD-LAPTOP of ${world.licenseId} deactivated in the customer portal`,
      `Machine STUDIO-MAC of ${world.licenseId} deactivated in the customer portal`,
      `Licensee of ${world.licenseId} changed in the customer portal`,
      `Customer portal sign-in with the user key of ${world.licenseId}`,
      "Customer portal sign-in with an emailed link",
    ])
      expect(text).toContain(done);
    // The refused fourth deactivation changed nothing and is not among the customer's doings.
    expect(text).not.toContain("Machine DANA-DESKTOP");
    expect(text).not.toContain(otherLicense["licenseId"]);

    await page.goto(new URL("/console/#/settings", base).href);
    const accent = page.getByRole("row", { name: /Portal:AccentColor/ });
    await accent.waitFor();
    expect(await accent.textContent()).toContain("The customer portal's accent colour");
    const title = page.getByRole("row", { name: /Portal:Title/ });
    await title.getByLabel("Portal:Title").fill("Acme Help Centre");
    await title.getByRole("button", { name: "Save" }).click();
    await expect.poll(() => page.getByRole("status").first().textContent()).toContain("Portal:Title saved");
    await page.goto(new URL("/portal/", base).href);
    await expect.poll(() => page.textContent("h1")).toBe("Acme Help Centre");
  });

  it("is gone while Portal:Enabled is off", async () => {
    await api("PUT", "/v1/settings", { settings: [{ name: "Portal:Enabled", value: "false" }] });
    try {
      await expect.poll(async () => (await fetch(new URL("/portal/", base))).status).toBe(404);
      expect((await fetch(new URL("/portal/logo", base))).status).toBe(404);
    } finally {
      await api("PUT", "/v1/settings", { settings: [{ name: "Portal:Enabled", value: "true" }] });
    }
  });
});
