/**
 * Legacy keys (CONTRACT 16): a key another system issued, given to a license when it is created, works exactly as
 * typed wherever the user key works (sign-in, the licensing operations, the update routes, the portal), is stored as
 * a digest and shown as its last 4 characters, and is refused when malformed, taken, or given by someone who may not.
 */
import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { ADMIN, admin, call, keyFor } from "./helpers";
import { bytesOf, newProduct, upload } from "./artifacts-kit";
import { verifyLicenseFile } from "../client/src/license-file";
import type { JwkSet } from "../client/src/types";

// As Keygen issues them (a key of its default scheme), and one a spreadsheet might hold.
const KEYGEN_KEY = "C1B6DE-39A6E3-DE1529-8559A0-4AF593-V3";
const SHEET_KEY = "acme/pro 2019 #00042";

let product: { id: number; code: string };
let licenseId = "";

const create = (license: Record<string, unknown>, key = ADMIN.key) =>
  call("POST", "/v1/licenses", { key, body: { license: { productId: product.id, ...license } } });

beforeAll(async () => {
  product = await newProduct();
  const release = await admin("POST", `/v1/products/${product.id}/releases`, {
    productRelease: { version: "2.0.0", public: true, requiresMaintenance: true },
  });
  expect(release.status, release.text).toBe(200);
  const path = `/v1/products/${product.id}/releases/${release.body["productReleaseId"]}/downloads`;
  expect((await upload(path, bytesOf(64, 3), { partName: "Legacy Setup 2.0.0.exe" })).status).toBe(201);
  const res = await create({
    licensingMode: "Activation",
    maxClients: 2,
    supportExpireDate: "2099-01-01T00:00:00Z",
    legacyKey: `  ${KEYGEN_KEY} `,
  });
  expect(res.status, res.text).toBe(200);
  licenseId = res.body["licenseId"];
});

describe("a license's legacy key", () => {
  it("is stored as a digest and shown as its last 4 characters, never in full", async () => {
    const list = await admin("GET", `/v1/licenses?filter=${encodeURIComponent(`licenseId == "${licenseId}"`)}`);
    expect(list.body["licenses"][0].legacyKey).toBe(`…${KEYGEN_KEY.slice(-4)}`);
    expect(list.text).not.toContain(KEYGEN_KEY);
    const row = await env.DB.prepare("SELECT * FROM licenses WHERE license_id = ?").bind(licenseId).first();
    expect(JSON.stringify(row)).not.toContain(KEYGEN_KEY);
    expect(row?.["legacy_key_digest"]).toMatch(/^[0-9a-f]{64}$/);
  });

  it("works as typed on every path a user key works, and only as typed", async () => {
    // The licensing operations: validate, then activate on a machine.
    const validated = await call("POST", "/v1/license/validate", { key: ADMIN.key, body: { userKey: KEYGEN_KEY } });
    expect(validated.status, validated.text).toBe(200);
    const activated = await call("POST", "/v1/license/activate", {
      key: ADMIN.key,
      body: { userKey: KEYGEN_KEY, machineId: "PC-1" },
    });
    expect(activated.status, activated.text).toBe(200);
    expect(activated.body["licenseToken"]).toMatch(/^actk_/);
    // An encrypted license file for the machine opens with the legacy key, as the client package opens it.
    const checkout = await call("POST", "/v1/license/checkout", {
      key: ADMIN.key,
      body: { userKey: KEYGEN_KEY, machineId: "PC-1", encrypt: true },
    });
    expect(checkout.status, checkout.text).toBe(200);
    const jwks = (await call("GET", "/v1/extensions/keys")).body as JwkSet;
    const file = await verifyLicenseFile(checkout.body["licenseFile"], {
      jwks,
      machineId: "PC-1",
      userKey: KEYGEN_KEY,
    });
    expect(file.license).toMatchObject({ licenseId });
    // Exactly as typed: another case, or the dashes gone, names no license (the service's own keys forgive both).
    for (const typed of [KEYGEN_KEY.toLowerCase(), KEYGEN_KEY.replaceAll("-", "")]) {
      const res = await call("POST", "/v1/license/validate", { key: ADMIN.key, body: { userKey: typed } });
      expect(res.status, typed).toBe(525);
    }
    // Sign-in with the key: a bearer token for the license.
    const login = await call("POST", "/v1/auth/login", { body: { userKey: ` ${KEYGEN_KEY}` } });
    expect(login.status, login.text).toBe(200);
    const session = await call("GET", "/v1/auth/session", { token: login.body["token"] });
    expect(session.body).toMatchObject({ success: true });
    // The update check: licensed, so the installer is offered with its download.
    const check = await call("GET", `/v1/updates/${product.code}?platform=win-x64&version=1.0.0`, {
      headers: { "X-Service-User-Key": KEYGEN_KEY },
    });
    expect(check.status, check.text).toBe(200);
    expect(check.body["data"]).toMatchObject({ installable: true, download: { fileName: "Legacy Setup 2.0.0.exe" } });
    const unknown = await call("GET", `/v1/updates/${product.code}?platform=win-x64&version=1.0.0`, {
      headers: { "X-Service-User-Key": KEYGEN_KEY.toLowerCase() },
    });
    expect(unknown.body["data"]).toMatchObject({ installable: false });
    // electron-updater's feed, with the key in its query, and with the license's feed token: the installer is offered
    // with its download token (a licensed caller's).
    const feed = await call(
      "GET",
      `/v1/updates/${product.code}/feed/stable/win-x64/latest.yml?userKey=${encodeURIComponent(KEYGEN_KEY)}`,
    );
    expect(feed.status, feed.text).toBe(200);
    expect(feed.text).toContain("Legacy%20Setup%202.0.0.exe?token=");
    const listed = await admin(
      "GET",
      `/v1/licenses?filter=${encodeURIComponent(`licenseId == "${licenseId}"`)}&select=feedToken`,
    );
    const byToken = await call(
      "GET",
      `/v1/updates/${product.code}/feed/stable/win-x64/latest.yml?feed=${listed.body["licenses"][0].feedToken}`,
    );
    expect(byToken.text).toContain("Legacy%20Setup%202.0.0.exe?token=");
    // The customer portal signs in with it.
    const portal = await call("POST", "/v1/portal/sign-in", { body: { userKey: KEYGEN_KEY } });
    expect(portal.status, portal.text).toBe(200);
  });

  it("takes any printable key a spreadsheet held", async () => {
    const res = await create({ licensingMode: "File", legacyKey: SHEET_KEY });
    expect(res.status, res.text).toBe(200);
    const validated = await call("POST", "/v1/license/validate", { key: ADMIN.key, body: { userKey: SHEET_KEY } });
    expect(validated.status, validated.text).toBe(200);
    expect(validated.body).toMatchObject({ licenseId: res.body["licenseId"] });
  });

  it("is refused when malformed, taken, readable as another license's user key, changed, or given by Sales", async () => {
    const before = (await env.DB.prepare("SELECT count(*) AS n FROM licenses").first<{ n: number }>())?.n;
    for (const legacyKey of ["short", "x".repeat(257), "tab\tin the key"]) {
      const res = await create({ legacyKey });
      expect(res.status, legacyKey).toBe(400);
      expect(res.text).toContain("legacyKey");
    }
    const taken = await create({ legacyKey: KEYGEN_KEY });
    expect(taken.status).toBe(400);
    expect(taken.text).toContain("Another license already answers to this key");
    // A legacy key that reads as a license's own user key would make one typed key name two licenses.
    const own = await admin(
      "GET",
      `/v1/licenses?filter=${encodeURIComponent(`licenseId == "${licenseId}"`)}&select=userKey`,
    );
    const userKey = own.body["licenses"][0].userKey as string;
    const shadow = await create({ legacyKey: userKey.toLowerCase() });
    expect(shadow.status).toBe(400);
    expect(shadow.text).toContain("Another license already answers to this key");
    const sales = await keyFor(["Sales"]);
    const bySales = await create({ legacyKey: "sales-made-key-1" }, sales);
    expect(bySales.status).toBe(403);
    expect((await env.DB.prepare("SELECT count(*) AS n FROM licenses").first<{ n: number }>())?.n).toBe(before);
    const id = Number(
      (await env.DB.prepare("SELECT id FROM licenses WHERE license_id = ?").bind(licenseId).first())?.["id"],
    );
    const changed = await admin("PUT", "/v1/licenses", { license: { id, legacyKey: "another-key-123" } });
    expect(changed.status).toBe(400);
    expect(changed.text).toContain("legacyKey");
  });
});
