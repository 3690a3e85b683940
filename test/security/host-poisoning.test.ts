/**
 * "Trust at the edges", caches and URLs: the absolute URLs of feeds and update checks come from
 * Application:PublicUrl (required outside Development), or, in Development without it, from the request's own
 * origin, which every kept or cached answer's key then carries. A reader who polls with one Host (and an
 * X-Forwarded-Host of its choosing) never makes another reader, polling with another Host, see its host: not in the
 * feed's YAML, not in the update check's JSON, not in the download URLs they hand out. X-Forwarded-Host is never
 * believed.
 */
import { exports } from "cloudflare:workers";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { parse as parseYaml } from "yaml";
import { bytesOf, newProduct, upload } from "../artifacts-kit";
import { admin, setSetting } from "../helpers";
import { fetchAs, production } from "../production-kit";

const FIRST = "https://first.licensing.test";
const SECOND = "https://second.licensing.test";
const FORWARDED = "forwarded.attacker.test";
const PUBLIC = "https://updates.example.com";

/** A product with a public, ungated release 1.0.0 and its Windows installer; the product's code. */
async function publicRelease(): Promise<string> {
  const product = await newProduct();
  const release = await admin("POST", `/v1/products/${product.id}/releases`, {
    productRelease: { version: "1.0.0", public: true, requiresMaintenance: false },
  });
  expect(release.status, release.text).toBe(200);
  const path = `/v1/products/${product.id}/releases/${release.body["productReleaseId"]}/downloads`;
  const uploaded = await upload(path, bytesOf(128, 5), { partName: "Setup 1.0.0.exe" });
  expect(uploaded.status, JSON.stringify(uploaded)).toBe(201);
  return product.code;
}

/** Headers of a request that names `origin`'s host, and a forwarded host nobody should believe. */
const hostHeaders = (origin: string) => ({ host: new URL(origin).host, "x-forwarded-host": FORWARDED });

/** What one reader at `origin` is told: the feed's URLs, the update check's download URL, and both answers' text. */
async function read(
  code: string,
  origin: string,
  fetcher: (url: string, init: RequestInit) => Promise<{ status: number; text: string }>,
): Promise<{ urls: string[]; text: string }> {
  const init = { headers: hostHeaders(origin) };
  const feed = await fetcher(`${origin}/v1/updates/${code}/latest.yml?noCache=${crypto.randomUUID()}`, init);
  expect(feed.status, feed.text).toBe(200);
  const yaml = parseYaml(feed.text) as { path: string; files: { url: string }[] };
  const check = await fetcher(`${origin}/v1/updates/${code}?platform=win-x64&version=0.9.0`, init);
  expect(check.status, check.text).toBe(200);
  const data = (JSON.parse(check.text) as { data: { download?: { url: string } } }).data;
  expect(data.download, check.text).toBeDefined();
  return { urls: [yaml.path, ...yaml.files.map((f) => f.url), data.download!.url], text: feed.text + check.text };
}

/** The app of the suite (Development), front door included. */
async function suite(url: string, init: RequestInit): Promise<{ status: number; text: string }> {
  const res = await exports.default.fetch(url, init);
  return { status: res.status, text: await res.text() };
}

afterEach(() => setSetting("Application:PublicUrl", null));

describe("absolute URLs of the update routes", () => {
  let code = "";
  beforeAll(async () => {
    // Applications whose public releases anyone may install: the answers are anonymous, and so kept and cached.
    await setSetting("Updates:AllowPublicApplicationReleases", "true");
    code = await publicRelease();
  });
  afterAll(() => setSetting("Updates:AllowPublicApplicationReleases", null));

  it("in Development without PublicUrl, are the reader's own origin: another Host never sees the first's", async () => {
    // The first reader fills every memo and cache (twice: the second poll is the front door's).
    for (let i = 0; i < 2; i++) {
      const first = await read(code, FIRST, suite);
      for (const url of first.urls) expect(url.startsWith(`${FIRST}/v1/updates/${code}/download/`), url).toBe(true);
      expect(first.text).not.toContain(FORWARDED);
    }
    // The second reader, with another Host, is told its own origin, from the app and then from the front door.
    for (let i = 0; i < 2; i++) {
      const second = await read(code, SECOND, suite);
      for (const url of second.urls) expect(url.startsWith(`${SECOND}/v1/updates/${code}/download/`), url).toBe(true);
      expect(second.text).not.toContain(new URL(FIRST).host);
      expect(second.text).not.toContain(FORWARDED);
      // The URL it was handed downloads.
      const download = await exports.default.fetch(second.urls[0]!, { headers: hostHeaders(SECOND) });
      expect(download.status).toBe(200);
      expect((await download.arrayBuffer()).byteLength).toBe(128);
    }
    // And the first reader still sees only its own.
    const again = await read(code, FIRST, suite);
    expect(again.text).not.toContain(new URL(SECOND).host);
  });

  it("with PublicUrl set (Development too), are PublicUrl's whatever the Host or X-Forwarded-Host", async () => {
    const fresh = await publicRelease();
    await setSetting("Application:PublicUrl", `${PUBLIC}/`);
    for (const origin of [FIRST, SECOND, FIRST]) {
      const answer = await read(fresh, origin, suite);
      for (const url of answer.urls) expect(url.startsWith(`${PUBLIC}/v1/updates/${fresh}/download/`), url).toBe(true);
      expect(answer.text).not.toContain(new URL(FIRST).host);
      expect(answer.text).not.toContain(new URL(SECOND).host);
      expect(answer.text).not.toContain(FORWARDED);
    }
  });

  it("outside Development, are PublicUrl's whatever the Host or X-Forwarded-Host", async () => {
    const fresh = await publicRelease();
    const vars = production({ Application__PublicUrl: PUBLIC });
    const asProduction = (url: string, init: RequestInit) => fetchAs(vars, url, init);
    for (const origin of [FIRST, SECOND]) {
      const answer = await read(fresh, origin, asProduction);
      for (const url of answer.urls) expect(url.startsWith(`${PUBLIC}/v1/updates/${fresh}/download/`), url).toBe(true);
      expect(answer.text).not.toContain(new URL(origin).host);
      expect(answer.text).not.toContain(FORWARDED);
    }
  });
});

describe("Application:PublicUrl", () => {
  it("is required outside Development: without it every route answers 500 naming it", async () => {
    const vars = production({ Application__PublicUrl: undefined });
    for (const path of ["/health", "/v1/updates/any/latest.yml"]) {
      const res = await fetchAs(vars, path);
      expect(res.status, `${path}: ${res.text}`).toBe(500);
      expect(res.text, path).toContain("Application:PublicUrl");
    }
    // The same variables run as Development (the request's origin is used there).
    expect((await fetchAs({ ...vars, Application__Environment: "Development" }, "/health")).status).toBe(200);
  });

  it("must be an https origin without path, query or credentials", async () => {
    for (const value of [
      "http://updates.example.com",
      "https://updates.example.com/v1",
      "https://updates.example.com/?a=1",
      "https://user:pass@updates.example.com",
      "updates.example.com",
    ]) {
      const res = await fetchAs(production({ Application__PublicUrl: value }), "/health");
      expect(res.status, value).toBe(500);
      expect(res.text, value).toContain("Application:PublicUrl");
    }
    const put = await admin("PUT", "/v1/settings", {
      settings: [{ name: "Application:PublicUrl", value: "http://updates.example.com" }],
    });
    expect(put.status, put.text).toBe(400);
    expect(put.text).toContain("Application:PublicUrl");
    // An origin with a port, and a trailing slash, are fine.
    expect(
      (await fetchAs(production({ Application__PublicUrl: "https://updates.example.com:8443/" }), "/health")).status,
    ).toBe(200);
  });
});
