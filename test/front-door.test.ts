/**
 * The front door (src/app/app.ts): an anonymous feed poll or update check whose answer the isolate keeps is answered
 * before the app is entered. These tests prove it answers as the app does, and that every rule the app applies
 * before the route still holds for a kept answer: the IP blacklist and request limit, a closed API, CORS.
 */
import { exports } from "cloudflare:workers";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { BASE, admin, setSetting } from "./helpers";
import { bytesOf, newProduct, upload } from "./artifacts-kit";

let code = "";

beforeAll(async () => {
  // An application whose public releases anyone may install.
  await setSetting("Updates:AllowPublicApplicationReleases", "true");
  const product = await newProduct();
  code = product.code;
  const release = await admin("POST", `/v1/products/${product.id}/releases`, {
    productRelease: { version: "1.0.0", public: true, requiresMaintenance: false },
  });
  expect(release.status, release.text).toBe(200);
  const path = `/v1/products/${product.id}/releases/${release.body["productReleaseId"]}/downloads`;
  const uploaded = await upload(path, bytesOf(64, 3), { partName: "Free Setup 1.0.0.exe" });
  expect(uploaded.status, JSON.stringify(uploaded)).toBe(201);
});

afterAll(() => setSetting("Updates:AllowPublicApplicationReleases", null));

const settings: string[] = [];
async function set(name: string, value: string): Promise<void> {
  settings.push(name);
  await setSetting(name, value);
}
afterEach(async () => {
  for (const name of settings.splice(0)) await setSetting(name, null);
});

const poll = (query = "", headers: Record<string, string> = {}) =>
  exports.default.fetch(`${BASE}/v1/updates/${code}/latest.yml${query}`, { headers });

describe("the front door", () => {
  it("answers a kept poll as the app does: the same body and headers, 304 for its entity tag, query noise ignored", async () => {
    const first = await poll("?noCache=a1");
    expect(first.status).toBe(200);
    const body = await first.text();
    expect(body).toContain('version: "1.0.0"');
    const again = await poll("?noCache=b2");
    expect(again.status).toBe(200);
    expect(await again.text()).toBe(body);
    for (const name of ["content-type", "etag", "cache-control"])
      expect(again.headers.get(name), name).toBe(first.headers.get(name));
    expect(again.headers.get("cache-control")).toMatch(/^public, max-age=\d+$/);
    // Development: the D1 work is reported, none for a kept answer.
    expect(again.headers.get("server-timing")).toContain('d1-statements;desc="0"');
    const etag = first.headers.get("etag")!;
    const notModified = await poll("?noCache=c3", { "if-none-match": etag });
    expect(notModified.status).toBe(304);
    expect(notModified.headers.get("etag")).toBe(etag);
    expect(await notModified.text()).toBe("");
  });

  it("still refuses a blacklisted IP and counts an IP that is not whitelisted", async () => {
    const ip = "198.51.100.23";
    expect((await poll("", { "cf-connecting-ip": ip })).status).toBe(200);
    await set("IpFiltering:Blacklist", ip);
    expect((await poll("", { "cf-connecting-ip": ip })).status).toBe(403);
    await setSetting("IpFiltering:Blacklist", null);

    const counted = "198.51.100.24";
    await set("IpFiltering:BruteForceProtection:MaxRequestsPerTimeFrame", "2");
    expect((await poll("", { "cf-connecting-ip": counted })).status).toBe(200);
    expect((await poll("", { "cf-connecting-ip": counted })).status).toBe(200);
    const limited = await poll("", { "cf-connecting-ip": counted });
    expect(limited.status).toBe(429);
    expect(Number(limited.headers.get("retry-after"))).toBeGreaterThan(0);
  });

  it("honours a closed REST API and answers CORS when origins are allowed", async () => {
    expect((await poll()).status).toBe(200);
    await set("Application:EnableWebApi", "false");
    expect((await poll()).status).toBe(404);
    await setSetting("Application:EnableWebApi", null);

    expect((await poll()).status).toBe(200);
    await set("Application:CorsOrigins", "https://app.example.com");
    const res = await poll("", { origin: "https://app.example.com" });
    expect(res.status).toBe(200);
    expect(res.headers.get("access-control-allow-origin")).toBe("https://app.example.com");
  });

  it("leaves a caller with a user key to the app: an unknown key is not served the anonymous answer", async () => {
    expect((await poll()).status).toBe(200);
    const res = await exports.default.fetch(`${BASE}/v1/updates/${code}/latest.yml`, {
      headers: { "X-Service-User-Key": "NO-SUCH-KEY" },
    });
    // An unknown key is "anonymous" to the rules, but its answer is private, never the shared public one.
    expect(res.headers.get("cache-control")).toBe("private, no-store");
    // In the query too, whatever its order, and with its name percent-encoded (caller.ts namesUserKey reads the query's
    // text before parsing it), each after the same URL without it was answered and kept.
    for (const query of [
      "?userKey=NO-SUCH-KEY",
      "?a=1&us%65rKey=NO-SUCH-KEY",
      "?feed=nope",
      "?f%65ed=nope&noCache=1",
    ]) {
      expect((await poll(query.replace(/(userKey|%65rKey|feed|%65ed)=[^&]*/, "x=1"))).status, query).toBe(200);
      const named = await poll(query);
      expect(named.headers.get("cache-control"), query).toBe("private, no-store");
    }
  });
});
