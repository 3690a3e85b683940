/**
 * Downloads counted per artifact (issue 24; src/updates/download-counts.ts): `downloadCount` on the artifact record
 * grows by one for each answer of the public download route that delivered the file through its last byte to the
 * client, or redirected to a hosted artifact; gated (token) and ungated downloads alike. Ranges short of the end
 * continue a download and count nothing, so a download broken off and resumed, or fetched in pieces, counts once;
 * HEAD, 304, refused requests and a client that goes away count nothing. Counts travel through the TRACES queue, so
 * the test reads them once a sentinel download counted after them has arrived (`settled`); each test ends settled,
 * so the next one starts from exact counts.
 */
import { exports } from "cloudflare:workers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MiB, bytesOf, hashesOf, newRelease, upload } from "./artifacts-kit";
import { BASE, admin, call, setSetting } from "./helpers";

const SIZE = 10_000;
const installer = bytesOf(SIZE, 21);
const big = bytesOf(3 * MiB, 22);

/** A release and its artifacts: ids by name. */
interface Release {
  productId: number;
  releaseId: number;
  code: string;
  path: string;
  ids: Record<string, number>;
}
let gated: Release;
let open: Release;

const get = (path: string, headers: Record<string, string> = {}, method = "GET") =>
  exports.default.fetch(`${BASE}${path}`, { method, headers, redirect: "manual" });

/** GETs and reads the whole body; the status. */
async function fetched(path: string, headers: Record<string, string> = {}, method = "GET"): Promise<number> {
  const res = await get(path, headers, method);
  await res.arrayBuffer();
  return res.status;
}

/** A public release 1.0.0 with a hosted artifact (the sentinel) besides the given uploads. */
async function release(): Promise<Release> {
  const r = await newRelease("1.0.0");
  const put = await admin("PUT", `/v1/products/${r.productId}/releases`, {
    productRelease: { id: r.releaseId, public: true, releaseDate: "2026-01-01T00:00:00Z" },
  });
  expect(put.status, put.text).toBe(200);
  const hosted = await admin("POST", r.path, {
    releaseDownload: {
      platform: "win-x64",
      kind: "zip",
      fileName: "App.zip",
      url: "https://cdn.example.com/App.zip",
      ...(await hashesOf(bytesOf(100, 23))),
    },
  });
  expect(hosted.status, hosted.text).toBe(201);
  return { ...r, ids: { hosted: hosted.body["releaseDownloadId"] } };
}

/** The artifacts' counts as the release downloads list answers them. */
async function counts(r: Release): Promise<Record<string, number>> {
  const list = await admin("GET", r.path);
  expect(list.status, list.text).toBe(200);
  const byId = new Map<number, number>(
    (list.body["releaseDownloads"] as { id: number; downloadCount: number }[]).map((d) => [d.id, d.downloadCount]),
  );
  return Object.fromEntries(Object.entries(r.ids).map(([name, id]) => [name, byId.get(id)!]));
}

const artifactUrl = (r: Release, platform: string, file: string, query = "") =>
  `/v1/updates/${r.code}/download/${platform}/1.0.0/${encodeURIComponent(file)}${query}`;

/**
 * A release's counts once everything counted before has arrived: a download of the open release's hosted artifact
 * (the sentinel, counted when answered) is queued after them, so when its count shows, so have theirs.
 */
async function settled(r: Release): Promise<Record<string, number>> {
  // Downloads the test just read to their end are counted as their pipes close: a moment for that first.
  await new Promise((resolve) => setTimeout(resolve, 50));
  const before = (await counts(open))["hosted"]!;
  expect(await fetched(artifactUrl(open, "win-x64", "App.zip"))).toBe(302);
  const deadline = Date.now() + 20_000;
  for (;;) {
    const now = await counts(open);
    if (now["hosted"] === before + 1) return counts(r);
    if (Date.now() > deadline) throw new Error(`the sentinel's count did not arrive: ${JSON.stringify(now)}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

async function license(productId: number): Promise<string> {
  const res = await admin("POST", "/v1/licenses", { license: { productId, trace: false } });
  expect(res.status, res.text).toBe(200);
  const listed = await admin(
    "GET",
    `/v1/licenses?filter=${encodeURIComponent(`id == ${res.body["id"]}`)}&select=userKey`,
  );
  return listed.body["licenses"][0].userKey;
}

/** A fresh download token's URL for the gated installer (path and query), from a licensed update check. */
async function tokenUrl(userKey: string): Promise<string> {
  const res = await call("GET", `/v1/updates/${gated.code}?platform=win-x64&version=0.0.1`, {
    headers: { "X-Service-User-Key": userKey },
  });
  expect(res.body["data"]?.download, res.text).toBeDefined();
  return (res.body["data"].download.url as string).replace(BASE, "");
}

// The open release is ungated (requiresMaintenance false, public application releases allowed); the gated one keeps
// requiresMaintenance, so its downloads need a token.
afterAll(() => setSetting("Updates:AllowPublicApplicationReleases", null));
beforeAll(async () => {
  await setSetting("Updates:AllowPublicApplicationReleases", "true");
  gated = await release();
  gated.ids["win"] = (await upload(gated.path, big, { fileName: "App Setup.exe" })).body["releaseDownloadId"];
  open = await release();
  const put = await admin("PUT", `/v1/products/${open.productId}/releases`, {
    productRelease: { id: open.releaseId, requiresMaintenance: false },
  });
  expect(put.status, put.text).toBe(200);
  open.ids["local"] = (await upload(open.path, installer, { fileName: "Free.exe" })).body["releaseDownloadId"];
  open.ids["resource"] = (
    await upload(open.path, installer, {
      platform: "win-arm64",
      fileName: "Free-arm64.exe",
      sourceKind: "resource",
    })
  ).body["releaseDownloadId"];
  for (const id of Object.values({ ...gated.ids, ...open.ids })) expect(id).toBeGreaterThan(0);
});

describe("downloadCount on the artifact record", () => {
  it("starts at 0, is read-only, and sorts and filters like other numbers", async () => {
    expect(await counts(gated)).toEqual({ hosted: 0, win: 0 });
    const put = await admin("PUT", gated.path, { releaseDownload: { id: gated.ids["win"], downloadCount: 1000 } });
    expect(put.status, put.text).toBeLessThan(500);
    expect((await counts(gated))["win"]).toBe(0);
    const sorted = await admin(
      "GET",
      `${gated.path}?sort=-downloadCount&filter=${encodeURIComponent("downloadCount >= 0")}`,
    );
    expect(sorted.status, sorted.text).toBe(200);
    expect(sorted.body["releaseDownloads"]).toHaveLength(2);
  });
});

describe("a download through a token", () => {
  it("counts once when it completes; HEAD, a refused second use and 304 count nothing", async () => {
    const start = await counts(gated);
    const userKey = await license(gated.productId);
    const url = await tokenUrl(userKey);
    expect(await fetched(url, {}, "HEAD")).toBe(200);
    const full = await get(url);
    expect(full.status).toBe(200);
    expect(new Uint8Array(await full.arrayBuffer())).toEqual(big);
    // The token is used up: refused, and not counted.
    expect(await fetched(url)).toBe(403);
    // A revalidation with a fresh token sends no bytes.
    const fresh = await tokenUrl(userKey);
    expect(await fetched(fresh, { "if-none-match": full.headers.get("etag")! })).toBe(304);
    const end = await settled(gated);
    expect(end["win"]! - start["win"]!).toBe(1);
  });

  it("counts a download fetched in pieces once, when the piece with the last byte is sent", async () => {
    const start = await counts(gated);
    const url = await tokenUrl(await license(gated.productId));
    expect(await fetched(url, { range: "bytes=0-999999" })).toBe(206);
    expect(await fetched(url, { range: "bytes=1000000-1999999" })).toBe(206);
    expect((await settled(gated))["win"]).toBe(start["win"]);
    expect(await fetched(url, { range: "bytes=2000000-" })).toBe(206);
    expect((await settled(gated))["win"]! - start["win"]!).toBe(1);
  });

  it("counts a download broken off and resumed once: the broken answer counts nothing, the resume counts", async () => {
    const start = await counts(gated);
    const url = await tokenUrl(await license(gated.productId));
    const res = await get(url);
    expect(res.status).toBe(200);
    // The client takes the first bytes and goes away.
    const reader = res.body!.getReader();
    const first = await reader.read();
    const got = first.value!.byteLength;
    expect(got).toBeLessThan(big.byteLength);
    await reader.cancel();
    expect((await settled(gated))["win"]).toBe(start["win"]);
    // It resumes where it stopped (the token allows ranges after its complete download began).
    const rest = await get(url, { range: `bytes=${got}-` });
    expect(rest.status).toBe(206);
    expect((await rest.arrayBuffer()).byteLength).toBe(big.byteLength - got);
    expect((await settled(gated))["win"]! - start["win"]!).toBe(1);
  });
});

describe("an ungated download", () => {
  it("counts every completed download, from R2 and from the database, and never a HEAD or a 304", async () => {
    const start = await counts(open);
    const local = artifactUrl(open, "win-x64", "Free.exe");
    const resource = artifactUrl(open, "win-arm64", "Free-arm64.exe");
    const whole = await get(local);
    expect(whole.headers.get("cache-control")).toMatch(/^public/);
    expect(new Uint8Array(await whole.arrayBuffer())).toEqual(installer);
    expect(await fetched(local)).toBe(200);
    expect(await fetched(local, {}, "HEAD")).toBe(200);
    expect(await fetched(local, { "if-none-match": whole.headers.get("etag")! })).toBe(304);
    expect(await fetched(resource)).toBe(200);
    const end = await settled(open);
    expect([end["local"]! - start["local"]!, end["resource"]! - start["resource"]!]).toEqual([2, 1]);
  });

  it("counts ranges only when they reach the end: several ranges in one answer included", async () => {
    const start = await counts(open);
    const local = artifactUrl(open, "win-x64", "Free.exe");
    expect(await fetched(local, { range: "bytes=0-99,200-299" })).toBe(206);
    expect(await fetched(local, { range: "bytes=-100" })).toBe(206);
    expect(await fetched(local, { range: "bytes=0-99,9000-" })).toBe(206);
    expect(await fetched(local, { range: `bytes=${SIZE}-` })).toBe(416);
    const end = await settled(open);
    // The suffix range and the multi-range answer reaching the end; not the pieces before it, nor the 416.
    expect(end["local"]! - start["local"]!).toBe(2);
  });

  it("counts a hosted artifact's redirect, and nothing for an unknown file", async () => {
    const start = await counts(open);
    expect(await fetched(artifactUrl(open, "win-x64", "Nope.exe"))).toBe(404);
    const end = await settled(open);
    // settled() itself fetched the hosted artifact once: its count grew by exactly that one.
    expect((await counts(open))["hosted"]! - start["hosted"]!).toBe(1);
    expect(end["local"]).toBe(start["local"]);
  });
});
