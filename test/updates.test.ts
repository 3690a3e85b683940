/**
 * The update routes as auto-updaters and applications use them (SPEC "Update routes", "Update and maintenance
 * rules", CONTRACT section 5): the signed update check and each withheldReason, the feeds and their aliases with
 * caching, and downloads: the platform rule, single-use tokens, ranges, multipart/byteranges, 416, HEAD, 302.
 */
import { exports } from "cloudflare:workers";
import canonicalize from "canonicalize";
import { importJWK } from "jose";
import { beforeAll, describe, expect, it } from "vitest";
import { parse as parseYaml } from "yaml";
import { ADMIN, BASE, admin, call, movableClock, queuedTraces, setSetting } from "./helpers";
import { blockmapOf } from "./artifacts-kit";
import { UpdateCheckData } from "../src/delivery/update-check";
import type { JsonBody } from "./json-body.ts";

const clockAhead = (await movableClock()).move;

const bytesOf = (n: number, seed: number) => Uint8Array.from({ length: n }, (_, i) => (i * 31 + seed) % 251);

async function upload(
  productId: number,
  releaseId: number,
  file: { platform: string; kind: string; fileName: string; bytes: Uint8Array; sourceKind?: string },
): Promise<JsonBody> {
  const form = new FormData();
  form.set("platform", file.platform);
  form.set("kind", file.kind);
  form.set("fileName", file.fileName);
  if (file.sourceKind) form.set("sourceKind", file.sourceKind);
  form.set("file", new Blob([file.bytes]), file.fileName);
  const res = await exports.default.fetch(`${BASE}/v1/products/${productId}/releases/${releaseId}/downloads`, {
    method: "POST",
    headers: { "x-api-key": ADMIN.key },
    body: form,
  });
  const body = (await res.json()) as JsonBody;
  if (res.status !== 201) throw new Error(`upload ${file.fileName}: ${res.status} ${JSON.stringify(body)}`);
  return body;
}

async function release(productId: number, version: string, extra: Record<string, unknown> = {}): Promise<number> {
  const res = await admin("POST", `/v1/products/${productId}/releases`, {
    productRelease: { version, public: true, ...extra },
  });
  if (res.status !== 200) throw new Error(`release ${version}: ${res.text}`);
  return res.body["productReleaseId"];
}

async function license(productId: number, fields: Record<string, unknown>): Promise<{ id: number; userKey: string }> {
  const res = await admin("POST", "/v1/licenses", { license: { productId, ...fields } });
  if (res.status !== 200) throw new Error(`license: ${res.text}`);
  const listed = await admin(
    "GET",
    `/v1/licenses?filter=${encodeURIComponent(`id == ${res.body["id"]}`)}&select=userKey`,
  );
  return { id: res.body["id"], userKey: listed.body["licenses"][0].userKey };
}

const get = (path: string, headers: Record<string, string> = {}) =>
  exports.default.fetch(`${BASE}${path}`, { headers });

// A product with three releases:
//   1.0.0 (2026-01-10)  gated   win-x64 installer + blockmap, darwin-arm64 zip + installer
//   1.1.0 (2026-06-01)  gated   win-x64 installer (resource-stored, 1.5 MiB) + blockmap
//   2.0.0 (2026-10-01)  gated   win-x64 installer, linux-x64 installer
// and a free product whose 3.0.0 needs no maintenance and is hosted elsewhere (url artifact).
let productId = 0;
const files: Record<string, Uint8Array> = {};
beforeAll(async () => {
  productId = (
    await admin("POST", "/v1/products", {
      product: {
        code: "studio",
        name: "Studio",
        isApplication: true,
        purchaseUrl: "https://example.com/buy",
        renewalUrl: "https://example.com/renew",
        supportEmail: "help@example.com",
      },
    })
  ).body["productId"];
  const r1 = await release(productId, "1.0.0", { releaseDate: "2026-01-10T00:00:00Z", name: "Studio 1.0" });
  const r11 = await release(productId, "1.1.0", { releaseDate: "2026-06-01T00:00:00Z" });
  const r2 = await release(productId, "2.0.0", {
    releaseDate: "2026-10-01T00:00:00Z",
    name: "Studio 2",
    releaseNotes: "New engine",
  });
  files["win1"] = bytesOf(300_000, 1);
  files["win11"] = bytesOf(1_572_864, 2);
  files["win2"] = bytesOf(400_000, 3);
  await upload(productId, r1, {
    platform: "win-x64",
    kind: "installer",
    fileName: "Studio Setup 1.0.0.exe",
    bytes: files["win1"],
  });
  await upload(productId, r1, {
    platform: "win-x64",
    kind: "blockmap",
    fileName: "Studio Setup 1.0.0.exe.blockmap",
    bytes: await blockmapOf(files["win1"]),
  });
  await upload(productId, r1, {
    platform: "darwin-arm64",
    kind: "installer",
    fileName: "Studio-1.0.0-arm64.dmg",
    bytes: bytesOf(5000, 5),
  });
  await upload(productId, r1, {
    platform: "darwin-arm64",
    kind: "zip",
    fileName: "Studio-1.0.0-arm64-mac.zip",
    bytes: bytesOf(4000, 6),
  });
  await upload(productId, r11, {
    platform: "win-x64",
    kind: "installer",
    fileName: "Studio Setup 1.1.0.exe",
    bytes: files["win11"],
    sourceKind: "resource",
  });
  await upload(productId, r2, {
    platform: "win-x64",
    kind: "installer",
    fileName: "Studio Setup 2.0.0.exe",
    bytes: files["win2"],
  });
  await upload(productId, r2, {
    platform: "linux-x64",
    kind: "installer",
    fileName: "Studio-2.0.0.AppImage",
    bytes: bytesOf(2000, 7),
  });
});

/**
 * An update check. Every answer's `data` is exactly what the OpenAPI document's UpdateCheckData schema (the one
 * schema its type comes from) describes: parsing keeps every property (no undocumented one is stripped) and refuses
 * none.
 */
async function check(query: string, headers: Record<string, string> = {}) {
  const res = await get(`/v1/updates/studio?${query}`, headers);
  const body = (await res.json()) as JsonBody;
  if (res.status === 200) expect(UpdateCheckData.parse(body.data)).toEqual(body.data);
  return { status: res.status, headers: res.headers, body };
}

describe("the update check", () => {
  it("signs its data over the canonical JSON with a key from the published set", async () => {
    const res = await check("platform=win-x64&version=1.0.0");
    expect(res.status).toBe(200);
    const { data, signature, keyId, success } = res.body;
    expect(success).toBe(true);
    const { keys } = (await call("GET", "/v1/extensions/keys")).body as { keys: (JsonWebKey & { kid: string })[] };
    const jwk = keys.find((k) => k.kid === keyId)!;
    const key = (await importJWK(jwk as Parameters<typeof importJWK>[0], "ES256")) as CryptoKey;
    const raw = Uint8Array.from(atob(signature), (ch) => ch.charCodeAt(0));
    expect(raw.byteLength).toBe(64);
    const verify = (d: unknown) =>
      crypto.subtle.verify({ name: "ECDSA", hash: "SHA-256" }, key, raw, new TextEncoder().encode(canonicalize(d)!));
    expect(await verify(data)).toBe(true);
    expect(await verify({ ...data, installable: true })).toBe(false);
  });

  it("withholds a gated release from a caller without a license: licenseRequired with the purchase URL", async () => {
    const { data } = (await check("platform=win-x64&version=1.0.0")).body;
    expect(data).toMatchObject({
      format: 2,
      product: { code: "studio", name: "Studio" },
      channel: "stable",
      platform: "win-x64",
      current: "1.0.0",
      latest: "2.0.0",
    });
    expect(data).toMatchObject({
      release: { version: "2.0.0", publishedAt: "2026-10-01T00:00:00.000Z", name: "Studio 2" },
      updateAvailable: true,
      installable: false,
    });
    expect(data).toMatchObject({ withheldReason: "licenseRequired", purchaseUrl: "https://example.com/buy" });
    expect(data.download).toBeUndefined();
    expect(data.maintenance).toBeUndefined();
  });

  it("offers a licensed caller the release with a tokenised download and its maintenance", async () => {
    const lic = await license(productId, {
      issueDate: "2026-03-01T00:00:00Z",
      supportExpireDate: "2027-03-01T00:00:00Z",
      licenseeName: "Initech",
    });
    const res = await check("platform=win-x64&version=1.0.0", { "X-Service-User-Key": lic.userKey });
    expect(res.headers.get("cache-control")).toBe("private, no-store");
    const { data } = res.body;
    expect(data).toMatchObject({
      installable: true,
      updateAvailable: true,
      download: { fileName: "Studio Setup 2.0.0.exe", kind: "installer", size: 400_000 },
    });
    expect(data.withheldReason).toBeUndefined();
    expect(data.download.url).toMatch(
      /^https:\/\/licensing\.test\/v1\/updates\/studio\/download\/win-x64\/2\.0\.0\/Studio%20Setup%202\.0\.0\.exe\?token=[0-9a-z]+\.[0-9a-z]+\.[0-9a-z]+\.[0-9A-Za-z]{8}\.[0-9A-Za-z_-]{22}$/,
    );
    expect(data.maintenance).toMatchObject({
      until: "2027-03-01T00:00:00.000Z",
      expired: false,
      noticeDays: 30,
      renewalUrl: "https://example.com/renew",
      supportEmail: "help@example.com",
      licensee: "Initech",
    });
    expect(data.maintenance.expiresInDays).toBeGreaterThan(0);
  });

  it("says maintenanceExpired and names the newest release the license can still install", async () => {
    const lic = await license(productId, { issueDate: "2025-07-01T00:00:00Z" }); // maintenance ends 2026-07-01
    const { data } = (await check("platform=win-x64&version=1.0.0", { "X-Service-User-Key": lic.userKey })).body;
    expect(data).toMatchObject({
      installable: false,
      withheldReason: "maintenanceExpired",
      latestInstallable: "1.1.0",
      maintenance: { until: "2026-07-01T00:00:00.000Z" },
    });
    expect(data.download).toBeUndefined();
    const current = (await check("platform=win-x64&version=1.1.0", { "X-Service-User-Key": lic.userKey })).body.data;
    expect(current.latestInstallable).toBeUndefined();
  });

  it("applies the platform rule: macOS and Linux need the Ultimate edition unless switched off; Demo licenses are exempt", async () => {
    expect((await check("platform=linux-x64&version=1.0.0")).body.data).toMatchObject({
      installable: false,
      withheldReason: "platformRequiresLicense",
    });
    const standard = await license(productId, { edition: "Standard" });
    expect(
      (await check("platform=linux-x64&version=1.0.0", { "X-Service-User-Key": standard.userKey })).body.data,
    ).toMatchObject({
      withheldReason: "platformRequiresEdition",
      requiredEdition: "Ultimate",
    });
    const ultimate = await license(productId, { edition: "Ultimate" });
    expect(
      (await check("platform=linux-x64&version=1.0.0", { "X-Service-User-Key": ultimate.userKey })).body.data,
    ).toMatchObject({ installable: true });
    const demo = await license(productId, { licenseType: "Demo", issueDate: "2020-01-01T00:00:00Z" });
    expect(
      (await check("platform=linux-x64&version=1.0.0", { "X-Service-User-Key": demo.userKey })).body.data,
    ).toMatchObject({ installable: true });
    await setSetting("Updates:EnforcePlatformEditions", "false");
    try {
      expect((await check(`platform=linux-x64&version=1.0.0&userKey=${standard.userKey}`)).body.data).toMatchObject({
        installable: true,
      });
    } finally {
      await setSetting("Updates:EnforcePlatformEditions", null);
    }
  });

  it("reports no update when the caller is current", async () => {
    const lic = await license(productId, {});
    expect(
      (await check("platform=win-x64&version=2.0.0", { "X-Service-User-Key": lic.userKey })).body.data,
    ).toMatchObject({ updateAvailable: false, installable: true, latest: "2.0.0" });
  });

  it("refuses a revoked or expired license with 403, and bad input with 400/404", async () => {
    const lic = await license(productId, {});
    await admin("PUT", "/v1/licenses", { license: { id: lic.id, revoked: true } });
    const revoked = await check("platform=win-x64&version=1.0.0", { "X-Service-User-Key": lic.userKey });
    expect(revoked.status).toBe(403);
    expect(revoked.body).toEqual({ success: false, code: 403, message: "License revoked or expired" });
    expect((await check("platform=amiga&version=1.0.0")).status).toBe(400);
    expect((await check("platform=win-x64&version=1.0")).status).toBe(400);
    expect((await check("platform=win-x64&version=1.0.0&channel=nightly")).status).toBe(400);
    expect((await get("/v1/updates/nope?platform=win-x64&version=1.0.0")).status).toBe(404);
  });
});

describe("feeds", () => {
  const feed = async (path: string, headers: Record<string, string> = {}) => {
    const res = await get(path, headers);
    return { status: res.status, headers: res.headers, text: await res.text() };
  };

  it("lists the highest installable release in electron-builder's format, strings quoted for js-yaml", async () => {
    const lic = await license(productId, {});
    const res = await feed("/v1/updates/studio/feed/stable/win-x64/latest.yml", { "X-Service-User-Key": lic.userKey });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toContain("text/yaml");
    expect(res.text).toContain('version: "2.0.0"');
    const info = parseYaml(res.text);
    expect(info).toMatchObject({
      version: "2.0.0",
      releaseDate: "2026-10-01T00:00:00.000Z",
      releaseName: "Studio 2",
      releaseNotes: "New engine",
    });
    expect(info.files).toEqual([
      {
        url: expect.stringMatching(/\/download\/win-x64\/2\.0\.0\/Studio%20Setup%202\.0\.0\.exe\?token=/),
        sha512: expect.any(String),
        size: 400_000,
      },
    ]);
    expect(info.path).toBe(info.files[0].url);
    const digest = btoa(String.fromCharCode(...new Uint8Array(await crypto.subtle.digest("SHA-512", files["win2"]!))));
    expect(info.sha512).toBe(digest);
  });

  it("puts the zip first for macOS and serves the alias files with their default platforms", async () => {
    const ultimate = await license(productId, { edition: "Ultimate" });
    const mac = parseYaml(
      (await feed("/v1/updates/studio/latest-mac.yml", { "X-Service-User-Key": ultimate.userKey })).text,
    );
    expect(mac.version).toBe("1.0.0");
    expect(mac.files.map((f: { url: string }) => decodeURIComponent(f.url.split("/").pop()!.split("?")[0]!))).toEqual([
      "Studio-1.0.0-arm64-mac.zip",
      "Studio-1.0.0-arm64.dmg",
    ]);
    expect(
      parseYaml((await feed("/v1/updates/studio/latest-linux.yml", { "X-Service-User-Key": ultimate.userKey })).text)
        .version,
    ).toBe("2.0.0");
    expect(parseYaml((await feed(`/v1/updates/studio/latest.yml?userKey=${ultimate.userKey}`)).text).version).toBe(
      "2.0.0",
    );
  });

  it("serves only the platform family's file", async () => {
    expect((await feed("/v1/updates/studio/feed/stable/win-x64/latest-mac.yml")).status).toBe(404);
    expect((await feed("/v1/updates/studio/latest.yml?platform=darwin-arm64")).status).toBe(404);
    expect((await feed("/v1/updates/studio/feed/stable/commodore/latest.yml")).status).toBe(400);
  });

  it("answers 204 when nothing is installable, or a 0 % staged feed with Updates:EmptyFeedAsYaml", async () => {
    expect((await feed("/v1/updates/studio/feed/stable/win-x64/latest.yml")).status).toBe(204);
    expect((await feed("/v1/updates/studio/feed/stable/linux-x64/latest-linux.yml")).status).toBe(204);
    await setSetting("Updates:EmptyFeedAsYaml", "true");
    try {
      const staged = await feed("/v1/updates/studio/feed/insider/win-x64/latest.yml?noCache=1");
      expect(staged.status).toBe(204);
      const empty = await feed("/v1/updates/studio/feed/stable/win-x64/latest.yml?noCache=2");
      expect(empty.status).toBe(200);
      expect(parseYaml(empty.text)).toMatchObject({ version: "2.0.0", stagingPercentage: 0 });
    } finally {
      await setSetting("Updates:EmptyFeedAsYaml", null);
    }
  });

  it("caches anonymous feeds, ignores query noise, and never serves a stale release after a change", async () => {
    const product = (
      await admin("POST", "/v1/products", { product: { code: "free", name: "Free", isApplication: true } })
    ).body["productId"];
    await setSetting("Updates:AllowPublicApplicationReleases", "true");
    try {
      const r = await release(product, "1.0.0", { requiresMaintenance: false });
      await upload(product, r, {
        platform: "win-x64",
        kind: "installer",
        fileName: "Free 1.0.0.exe",
        bytes: bytesOf(100, 9),
      });
      const first = await feed("/v1/updates/free/latest.yml?noCache=abc");
      expect(first.status).toBe(200);
      expect(first.headers.get("cache-control")).toBe("public, max-age=60");
      expect(parseYaml(first.text).version).toBe("1.0.0");
      expect((await feed("/v1/updates/free/latest.yml?noCache=def")).text).toBe(first.text);
      const r2 = await release(product, "1.0.1", { requiresMaintenance: false });
      await upload(product, r2, {
        platform: "win-x64",
        kind: "installer",
        fileName: "Free 1.0.1.exe",
        bytes: bytesOf(100, 10),
      });
      expect(parseYaml((await feed("/v1/updates/free/latest.yml?noCache=ghi")).text).version).toBe("1.0.1");
    } finally {
      await setSetting("Updates:AllowPublicApplicationReleases", null);
    }
  });
});

describe("downloads", () => {
  async function tokenUrl(version: string, userKey: string): Promise<string> {
    const { data } = (await check(`platform=win-x64&version=0.0.1`, { "X-Service-User-Key": userKey })).body;
    expect(data.download, JSON.stringify(data)).toBeDefined();
    expect(data.latest).toBe(version);
    return (data.download.url as string).replace(BASE, "");
  }

  it("refuses a gated artifact without a token, serves it once with one, then only ranges until expiry", async () => {
    const lic = await license(productId, {});
    const path = "/v1/updates/studio/download/win-x64/2.0.0/Studio%20Setup%202.0.0.exe";
    const refused = await get(path);
    expect(refused.status).toBe(403);
    expect(await refused.json()).toEqual({
      success: false,
      code: 403,
      message: "Download token invalid, expired or already used",
    });

    const url = await tokenUrl("2.0.0", lic.userKey);
    const head = await exports.default.fetch(`${BASE}${url}`, { method: "HEAD" });
    expect(head.status).toBe(200);
    expect(head.headers.get("content-length")).toBe("400000");
    const full = await get(url);
    expect(full.status).toBe(200);
    expect(new Uint8Array(await full.arrayBuffer())).toEqual(files["win2"]);
    expect(full.headers.get("etag")).toMatch(/^"[0-9a-f]{64}"$/);
    expect(full.headers.get("x-service-sha256")).toBe(full.headers.get("etag")!.slice(1, -1));
    expect(full.headers.get("x-service-sha512")).toMatch(/^[A-Za-z0-9+/]{86}==$/);
    expect(full.headers.get("accept-ranges")).toBe("bytes");

    expect((await get(url)).status).toBe(403);
    const resumed = await get(url, { range: "bytes=100-199" });
    expect(resumed.status).toBe(206);
    expect(new Uint8Array(await resumed.arrayBuffer())).toEqual(files["win2"]!.slice(100, 200));

    clockAhead(11 * 60_000);
    expect((await get(url, { range: "bytes=0-9" })).status).toBe(403);
  });

  it("lets exactly one of two simultaneous complete downloads use a token", async () => {
    const lic = await license(productId, {});
    const url = await tokenUrl("2.0.0", lic.userKey);
    const [a, b] = await Promise.all([get(url), get(url)]);
    expect([a.status, b.status].sort()).toEqual([200, 403]);
    await a.arrayBuffer();
    await b.arrayBuffer();
  });

  it("answers one range with 206, several with multipart/byteranges in request order, and 416 past the end", async () => {
    const lic = await license(productId, { issueDate: "2025-07-01T00:00:00Z" }); // can install 1.1.0 (resource-stored)
    const { data } = (await check("platform=win-x64&version=1.0.0", { "X-Service-User-Key": lic.userKey })).body;
    expect(data.latestInstallable).toBe("1.1.0");
    const feedText = await (
      await get("/v1/updates/studio/feed/stable/win-x64/latest.yml", { "X-Service-User-Key": lic.userKey })
    ).text();
    const url = (parseYaml(feedText).files[0].url as string).replace(BASE, "");
    const bytes = files["win11"]!;
    const chunk = 1024 * 1024;

    const single = await get(url, { range: `bytes=${chunk - 5}-${chunk + 4}` });
    expect(single.status).toBe(206);
    expect(single.headers.get("content-range")).toBe(`bytes ${chunk - 5}-${chunk + 4}/${bytes.byteLength}`);
    expect(new Uint8Array(await single.arrayBuffer())).toEqual(bytes.slice(chunk - 5, chunk + 5));

    const ranges = [
      [0, 9],
      [chunk - 2, chunk + 1],
      [500, 509],
      [bytes.byteLength - 3, bytes.byteLength - 1],
    ] as const;
    const multi = await get(url, { range: `bytes=${ranges.map(([s, e]) => `${s}-${e}`).join(", ")}` });
    expect(multi.status).toBe(206);
    const boundary = /boundary=(\S+)/.exec(multi.headers.get("content-type")!)![1]!;
    const body = new Uint8Array(await multi.arrayBuffer());
    expect(Number(multi.headers.get("content-length"))).toBe(body.byteLength);
    // Byte for byte (TextDecoder's "latin1" is windows-1252 and would remap 0x80-0x9F).
    let text = "";
    for (let i = 0; i < body.byteLength; i += 8192) text += String.fromCharCode(...body.subarray(i, i + 8192));
    const parts = text.split(`--${boundary}`).slice(1, -1);
    expect(parts).toHaveLength(4);
    parts.forEach((part, i) => {
      const [s, e] = ranges[i]!;
      expect(part).toContain(`Content-Range: bytes ${s}-${e}/${bytes.byteLength}`);
      const payload = part.slice(part.indexOf("\r\n\r\n") + 4).replace(/\r\n$/, "");
      expect(Uint8Array.from(payload, (ch) => ch.charCodeAt(0))).toEqual(bytes.slice(s, e + 1));
    });

    const past = await get(url, { range: `bytes=${bytes.byteLength}-` });
    expect(past.status).toBe(416);
    expect(past.headers.get("content-range")).toBe(`bytes */${bytes.byteLength}`);
  });

  it("serves blockmaps without a token, and applies the platform rule to downloads", async () => {
    const blockmap = await get("/v1/updates/studio/download/win-x64/1.0.0/Studio%20Setup%201.0.0.exe.blockmap");
    expect(blockmap.status).toBe(200);
    await blockmap.arrayBuffer();
    const standard = await license(productId, { edition: "Standard" });
    const mac = await get("/v1/updates/studio/download/darwin-arm64/1.0.0/Studio-1.0.0-arm64.dmg", {
      "X-Service-User-Key": standard.userKey,
    });
    expect(mac.status).toBe(403);
    expect((await get("/v1/updates/studio/download/win-x64/9.9.9/none.exe")).status).toBe(404);
  });

  it("refuses the token of a license revoked since, with the token's message", async () => {
    const lic = await license(productId, {});
    const url = await tokenUrl("2.0.0", lic.userKey);
    await admin("PUT", "/v1/licenses", { license: { id: lic.id, revoked: true } });
    const res = await get(url);
    expect(res.status).toBe(403);
    expect(((await res.json()) as { message: string }).message).toBe("Download token invalid, expired or already used");
  });

  it("redirects to a hosted artifact", async () => {
    const product = (
      await admin("POST", "/v1/products", { product: { code: "hosted", name: "Hosted", isApplication: true } })
    ).body["productId"];
    await setSetting("Updates:AllowPublicApplicationReleases", "true");
    try {
      const r = await release(product, "3.0.0", { requiresMaintenance: false });
      const created = await admin("POST", `/v1/products/${product}/releases/${r}/downloads`, {
        releaseDownload: {
          platform: "win-x64",
          kind: "installer",
          fileName: "Hosted.exe",
          sourceKind: "url",
          url: "https://cdn.example.com/Hosted.exe",
          size: 10,
          sha256: "a".repeat(64),
          sha512: `${"A".repeat(86)}==`,
        },
      });
      expect(created.status, created.text).toBe(201);
      const res = await exports.default.fetch(`${BASE}/v1/updates/hosted/download/win-x64/3.0.0/Hosted.exe`, {
        redirect: "manual",
      });
      expect(res.status).toBe(302);
      expect(res.headers.get("location")).toBe("https://cdn.example.com/Hosted.exe");
    } finally {
      await setSetting("Updates:AllowPublicApplicationReleases", null);
    }
  });

  it("keeps a download trace for licenses that trace", async () => {
    const lic = await license(productId, {});
    const url = await tokenUrl("2.0.0", lic.userKey);
    await (await get(url)).arrayBuffer();
    expect(await queuedTraces(lic.id, 2)).toEqual([7, 8]);
  });

  it("records the version on update check and download traces: the caller's for a check, the artifact's for a download", async () => {
    const lic = await license(productId, {});
    const url = await tokenUrl("2.0.0", lic.userKey);
    await (await get(url)).arrayBuffer();
    expect(await queuedTraces(lic.id, 2)).toEqual([7, 8]);
    // Read back as the console does: the list conventions, only the fields the chart needs (actions are numbers).
    const publicId = (
      await admin("GET", `/v1/licenses?filter=${encodeURIComponent(`id == ${lic.id}`)}&select=licenseId`)
    ).body["licenses"][0].licenseId;
    const filter = `licenseId == "${publicId}" && (action == "UpdateCheck" || action == "Download")`;
    const listed = await admin(
      "GET",
      `/v1/license-traces?filter=${encodeURIComponent(filter)}&select=action,meta&sort=id`,
    );
    expect(listed.status, listed.text).toBe(200);
    expect(
      listed.body["licenseTraces"].map((t: Record<string, unknown>) => [t["action"], JSON.parse(String(t["meta"]))]),
    ).toEqual([
      [7, { version: "0.0.1" }],
      [8, { version: "2.0.0" }],
    ]);
  });
});
