/**
 * Squirrel.Windows' RELEASES and Velopack's releases.{channel}.json (CONTRACT section 9), read the way the updaters
 * read them: RELEASES through a port of Squirrel.Windows' ReleaseEntry.ParseReleaseEntry / ParseReleaseFileAndApplyStaging
 * and UpdateInfo.Create (src/Squirrel/ReleaseEntry.cs, UpdateInfo.cs), checked first against the fixture lines of
 * Squirrel's own ReleaseEntryTests; Velopack's feed against its VelopackAsset fields (the real Velopack client reads
 * it in test/node/velopack.test.ts). Every package URL's bytes match the SHA-1, SHA-256 and size the feed names.
 * Gating, revoked keys, a 0 % rollout, a halt, a platform the license is not entitled to, "no update", bad input, and
 * the declared hashes of an upload.
 */
import { exports } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { bytesOf } from "./artifacts-kit";
import { ADMIN, BASE, admin, setSetting } from "./helpers";
import type { JsonBody } from "./json-body.ts";

// ---------------------------------------------------------------------------------------------------------------
// Squirrel.Windows' parser (ReleaseEntry.cs, 2.0.x), line for line.

interface ReleaseEntry {
  sha1: string;
  baseUrl: string | null;
  filename: string;
  query: string | null;
  filesize: number;
  isDelta: boolean;
  version: string;
  stagingPercentage: number | null;
}

const entryRegex = /^([0-9a-fA-F]{40})\s+(\S+)\s+(\d+)[\r]*$/;
const commentRegex = /\s*#.*$/;
const stagingRegex = /#\s+(\d{1,3})%$/;
/** Windows' Path.GetInvalidFileNameChars: control characters and `"<>|:*?\/`. */
const hasInvalidFileNameChar = (name: string) =>
  [...name].some((ch) => ch.charCodeAt(0) < 0x20 || '"<>|:*?\\/'.includes(ch));

/** Squirrel's ToSemanticVersion of a package name: the suffix (`-full`, `-delta`, `.nupkg`) off, the version at the end. */
function versionOf(filename: string): string {
  const name = filename.replace(/(-full|-delta)?\.nupkg$/, "");
  const m = /\d+(\.\d+){0,3}(-[A-Za-z][0-9A-Za-z-]*)?$/.exec(name);
  if (!m) throw new Error(`no version in ${filename}`);
  return m[0];
}

function parseReleaseEntry(line: string): ReleaseEntry | null {
  let stagingPercentage: number | null = null;
  const staging = stagingRegex.exec(line);
  if (staging) stagingPercentage = Number.parseFloat(staging[1]!) / 100;
  const entry = line.replace(commentRegex, "");
  if (entry.trim() === "") return null;
  const m = entryRegex.exec(entry);
  if (!m) throw new Error(`Invalid release entry: ${entry}`);
  let filename = m[2]!;
  let baseUrl: string | null = null;
  let query: string | null = null;
  if (/^https?:\/\//i.test(filename)) {
    const uri = new URL(filename);
    const path = decodeURIComponent(uri.pathname);
    const authority = uri.origin;
    if (!path || !authority) throw new Error("Invalid URL");
    const last = path.lastIndexOf("/") + 1;
    baseUrl = authority + path.slice(0, last);
    filename = path.slice(last);
    if (uri.search) query = uri.search;
  }
  if (hasInvalidFileNameChar(filename))
    throw new Error("Filename can either be an absolute HTTP[s] URL, *or* a file name");
  return {
    sha1: m[1]!,
    baseUrl,
    filename,
    query,
    filesize: Number.parseInt(m[3]!, 10),
    isDelta: filename.toLowerCase().endsWith("-delta.nupkg"),
    version: /\.nupkg$/i.test(filename) && /-\d/.test(filename) ? versionOf(filename) : "",
    stagingPercentage,
  };
}

/** ParseReleaseFileAndApplyStaging without a staging id (`userToken` null): a staged entry is left out. */
function parseReleaseFile(contents: string, stagingMatch: (e: ReleaseEntry) => boolean = () => false): ReleaseEntry[] {
  if (!contents) return [];
  return contents
    .replace(/^\uFEFF/, "")
    .split("\n")
    .filter((x) => x.trim() !== "")
    .map(parseReleaseEntry)
    .filter((x): x is ReleaseEntry => x !== null && (x.stagingPercentage === null || stagingMatch(x)));
}

const cmp = (a: string, b: string) => {
  const pa = a.split(/[.-]/).map(Number);
  const pb = b.split(/[.-]/).map(Number);
  for (let i = 0; i < Math.max(pa.length, pb.length); i++) {
    const d = (pa[i] ?? 0) - (pb[i] ?? 0);
    if (d !== 0) return d;
  }
  return 0;
};

/**
 * UpdateManager.CheckForUpdate's decision: refuses an empty file ("Remote release File is empty or corrupted"), then
 * UpdateInfo.Create: nothing when the newest full is the current version, else the deltas newer than the current
 * version when they are smaller than the newest full, else the newest full.
 */
function squirrelUpdate(contents: string, current: string | null): { packages: ReleaseEntry[]; update: boolean } {
  const remote = parseReleaseFile(contents);
  if (remote.length === 0) throw new Error("Remote release File is empty or corrupted");
  const maxVersion = remote
    .map((x) => x.version)
    .sort(cmp)
    .at(-1)!;
  const latestFull = remote.find((x) => x.version === maxVersion && !x.isDelta);
  if (!latestFull) throw new Error("There should always be at least one full release");
  if (current === null) return { packages: [latestFull], update: true };
  if (cmp(current, latestFull.version) === 0) return { packages: [], update: false };
  const newer = remote.filter((x) => cmp(x.version, current) > 0).sort((a, b) => cmp(a.version, b.version));
  const deltasSize = newer.filter((x) => x.isDelta).reduce((n, x) => n + x.filesize, 0);
  return deltasSize < latestFull.filesize && deltasSize > 0
    ? { packages: newer.filter((x) => x.isDelta), update: true }
    : { packages: [latestFull], update: true };
}

// ---------------------------------------------------------------------------------------------------------------

const hex = (buf: ArrayBuffer) => [...new Uint8Array(buf)].map((b) => b.toString(16).padStart(2, "0")).join("");
const sha1Of = async (bytes: Uint8Array) => hex(await crypto.subtle.digest("SHA-1", bytes));
const sha256Of = async (bytes: Uint8Array) => hex(await crypto.subtle.digest("SHA-256", bytes));

const get = (url: string, headers: Record<string, string> = {}) =>
  exports.default.fetch(url.startsWith("http") ? url : `${BASE}${url}`, { headers, redirect: "manual" });

/** GET following redirects (the updaters' HTTP clients do), the final answer. */
async function follow(url: string, headers: Record<string, string> = {}): Promise<Response> {
  let res = await get(url, headers);
  for (let i = 0; i < 5 && res.status === 302; i++) res = await get(res.headers.get("Location")!, headers);
  return res;
}

async function upload(
  productId: number,
  releaseId: number,
  file: { platform?: string; kind: string; fileName: string; bytes: Uint8Array; declared?: Record<string, string> },
): Promise<{ status: number; body: JsonBody }> {
  const form = new FormData();
  form.set("platform", file.platform ?? "win-x64");
  form.set("kind", file.kind);
  form.set("fileName", file.fileName);
  for (const [name, value] of Object.entries(file.declared ?? {})) form.set(name, value);
  form.set("file", new Blob([file.bytes]), file.fileName);
  const res = await exports.default.fetch(`${BASE}/v1/products/${productId}/releases/${releaseId}/downloads`, {
    method: "POST",
    headers: { "x-api-key": ADMIN.key },
    body: form,
  });
  return { status: res.status, body: (await res.json()) as JsonBody };
}

async function product(code: string, isApplication: boolean): Promise<number> {
  const res = await admin("POST", "/v1/products", { product: { code, name: code, isApplication } });
  if (res.status !== 200) throw new Error(res.text);
  return res.body["productId"];
}

async function release(productId: number, version: string, extra: Record<string, unknown> = {}): Promise<number> {
  const res = await admin("POST", `/v1/products/${productId}/releases`, {
    productRelease: { version, public: true, releaseDate: "2026-02-01T00:00:00Z", ...extra },
  });
  if (res.status !== 200) throw new Error(`release ${version}: ${res.text}`);
  return res.body["productReleaseId"];
}

async function license(productId: number, fields: Record<string, unknown> = {}) {
  const res = await admin("POST", "/v1/licenses", {
    license: { productId, issueDate: "2026-01-15T00:00:00Z", ...fields },
  });
  if (res.status !== 200) throw new Error(`license: ${res.text}`);
  const listed = await admin(
    "GET",
    `/v1/licenses?filter=${encodeURIComponent(`id == ${res.body["id"]}`)}&select=userKey`,
  );
  return { id: res.body["id"] as number, userKey: listed.body["licenses"][0].userKey as string };
}

/** The bytes of every package uploaded, by file name. */
const bytes: Record<string, Uint8Array> = {};
let freeId = 0;
let gatedId = 0;
let gatedRelease = 0;

/** Three releases of Free (ungated), each with a full package and (after the first) a delta from the one before. */
beforeAll(async () => {
  // Free's releases need no maintenance: an application's may, with this setting (SPEC "Update routes").
  await setSetting("Updates:AllowPublicApplicationReleases", "true");
  freeId = await product("free", true);
  let seed = 1;
  for (const version of ["1.0.0", "1.1.0", "1.2.0"]) {
    const releaseId = await release(freeId, version, {
      requiresMaintenance: false,
      releaseNotes: "Faster & <better>\n\nSecond paragraph",
    });
    const full = `Free-${version}-full.nupkg`;
    bytes[full] = bytesOf(40_000 + seed * 1000, seed++);
    expect((await upload(freeId, releaseId, { kind: "package", fileName: full, bytes: bytes[full] })).status).toBe(201);
    if (version !== "1.0.0") {
      const delta = `Free-${version}-delta.nupkg`;
      bytes[delta] = bytesOf(3_000 + seed * 10, seed++);
      expect((await upload(freeId, releaseId, { kind: "delta", fileName: delta, bytes: bytes[delta] })).status).toBe(
        201,
      );
    }
  }
  gatedId = await product("gated", true);
  for (const version of ["2.0.0", "2.1.0"]) {
    const releaseId = await release(gatedId, version, {
      releaseDate: version === "2.0.0" ? "2026-03-01T00:00:00Z" : "2026-04-01T00:00:00Z",
    });
    if (version === "2.1.0") gatedRelease = releaseId;
    const full = `Gated-${version}-full.nupkg`;
    bytes[full] = bytesOf(30_000, seed++);
    expect((await upload(gatedId, releaseId, { kind: "package", fileName: full, bytes: bytes[full] })).status).toBe(
      201,
    );
  }
});

/** Every package a RELEASES names downloads with the bytes its line names (SHA-1, size). */
async function expectSquirrelBytes(entries: ReleaseEntry[]): Promise<void> {
  for (const e of entries) {
    const res = await follow(`${e.baseUrl}${e.filename}${e.query ?? ""}`);
    expect(res.status, `${e.filename}: ${res.status === 200 ? "" : await res.clone().text()}`).toBe(200);
    const body = new Uint8Array(await res.arrayBuffer());
    expect(body).toEqual(bytes[e.filename]);
    expect(await sha1Of(body)).toBe(e.sha1.toLowerCase());
    expect(body.byteLength).toBe(e.filesize);
  }
}

describe("Squirrel.Windows RELEASES", () => {
  it("is parsed by the port of Squirrel's ReleaseEntry as Squirrel's own tests parse their fixtures", () => {
    // ReleaseEntryTests.ParseValidReleaseEntryLines and ParseStagingPercentageTest (Squirrel.Windows).
    const cases: [string, string, number, string | null, string | null][] = [
      [
        "94689fede03fed7ab59c24337673a27837f0c3ec MyCoolApp-1.0.nupkg 1004502",
        "MyCoolApp-1.0.nupkg",
        1004502,
        null,
        null,
      ],
      [
        "3a2eadd15dd984e4559f2b4d790ec8badaeb6a39   MyCoolApp-1.1.nupkg   1040561",
        "MyCoolApp-1.1.nupkg",
        1040561,
        null,
        null,
      ],
      [
        "0000000000000000000000000000000000000000  http://test.org/Folder/MyCoolApp-1.2.nupkg?query=param  2569",
        "MyCoolApp-1.2.nupkg",
        2569,
        "http://test.org/Folder/",
        "?query=param",
      ],
      [
        "0000000000000000000000000000000000000000  https://www.test.org/Folder/MyCoolApp-1.2-delta.nupkg?query=param  1231953",
        "MyCoolApp-1.2-delta.nupkg",
        1231953,
        "https://www.test.org/Folder/",
        "?query=param",
      ],
    ];
    for (const [line, filename, size, baseUrl, query] of cases)
      expect(parseReleaseEntry(line)).toMatchObject({ filename, filesize: size, baseUrl, query });
    expect(
      parseReleaseEntry("0000000000000000000000000000000000000000  MyCoolApp-1.2-delta.nupkg 123 # 5%"),
    ).toMatchObject({
      isDelta: true,
      stagingPercentage: 0.05,
    });
    expect(() =>
      parseReleaseEntry("0000000000000000000000000000000000000000  ../OtherFolder/MyCoolApp-0.0.nupkg  0"),
    ).toThrow();
  });

  it("gives a client on an older release the delta chain and the full package, whose bytes match", async () => {
    const res = await get("/v1/updates/free/squirrel-win/win-x64/RELEASES?id=Free&localVersion=1.0.0&arch=amd64");
    expect(res.status).toBe(200);
    expect(res.headers.get("Cache-Control")).toMatch(/^public, max-age=/);
    const text = await res.text();
    const entries = parseReleaseFile(text);
    expect(entries.map((e) => e.filename)).toEqual([
      "Free-1.1.0-delta.nupkg",
      "Free-1.2.0-delta.nupkg",
      "Free-1.2.0-full.nupkg",
    ]);
    for (const e of entries) {
      expect(e.baseUrl).toBe(`${BASE}/v1/updates/free/download/win-x64/${e.version}/`);
      expect(e.sha1).toBe((await sha1Of(bytes[e.filename]!)).toUpperCase());
    }
    // Squirrel takes the deltas (smaller than the full package), oldest first.
    expect(squirrelUpdate(text, "1.0.0").packages.map((e) => e.filename)).toEqual([
      "Free-1.1.0-delta.nupkg",
      "Free-1.2.0-delta.nupkg",
    ]);
    await expectSquirrelBytes(entries);
    // From 1.1.0, one delta; a fresh install (no localVersion), the full package alone.
    const from11 = await (await get("/v1/updates/free/squirrel-win/win-x64/RELEASES?localVersion=1.1.0")).text();
    expect(parseReleaseFile(from11).map((e) => e.filename)).toEqual([
      "Free-1.2.0-delta.nupkg",
      "Free-1.2.0-full.nupkg",
    ]);
    // The cached answer is keyed by the origin its URLs are made of: another scheme and host get their own URLs.
    const elsewhere = await (
      await get(
        "http://mirror.test/v1/updates/free/squirrel-win/win-x64/RELEASES?id=Free&localVersion=1.0.0&arch=amd64",
      )
    ).text();
    expect(parseReleaseFile(elsewhere).map((e) => e.baseUrl?.split("/v1/")[0])).toEqual([
      "http://mirror.test",
      "http://mirror.test",
      "http://mirror.test",
    ]);
    const fresh = await (await get("/v1/updates/free/squirrel-win/win-x64/RELEASES")).text();
    expect(squirrelUpdate(fresh, null).packages.map((e) => e.filename)).toEqual(["Free-1.2.0-full.nupkg"]);
  });

  it("answers 'no update' to the newest version with its own package (Squirrel refuses an empty RELEASES)", async () => {
    const res = await get("/v1/updates/free/squirrel-win/win-x64/RELEASES?localVersion=1.2.0");
    expect(res.headers.get("X-Service-Reason")).toBe("nothingNewer");
    expect(squirrelUpdate(await res.text(), "1.2.0")).toEqual({ packages: [], update: false });
  });

  it("redirects a package named in the folder to its download", async () => {
    const res = await follow("/v1/updates/free/squirrel-win/win-x64/Free-1.2.0-full.nupkg");
    expect(new Uint8Array(await res.arrayBuffer())).toEqual(bytes["Free-1.2.0-full.nupkg"]);
    expect((await get("/v1/updates/free/squirrel-win/win-x64/Other-9.9.9-full.nupkg")).status).toBe(404);
  });
});

describe("Velopack releases.{channel}.json", () => {
  it("lists Velopack's assets (full and the delta chain) with exact fields, and the packages download with those bytes", async () => {
    const res = await get("/v1/updates/free/velopack/win-x64/releases.stable.json?localVersion=1.0.0&id=Free");
    expect(res.status).toBe(200);
    expect(res.headers.get("Content-Type")).toBe("application/json; charset=utf-8");
    const feed = (await res.json()) as { Assets: Record<string, unknown>[] };
    expect(feed.Assets.map((a) => [a["Type"], a["FileName"]])).toEqual([
      ["Delta", "Free-1.1.0-delta.nupkg"],
      ["Delta", "Free-1.2.0-delta.nupkg"],
      ["Full", "Free-1.2.0-full.nupkg"],
    ]);
    const full = feed.Assets[2]!;
    expect(Object.keys(full).sort()).toEqual(
      ["FileName", "NotesHtml", "NotesMarkdown", "PackageId", "SHA1", "SHA256", "Size", "Type", "Version"].sort(),
    );
    expect(full).toMatchObject({
      PackageId: "Free",
      Version: "1.2.0",
      NotesMarkdown: "Faster & <better>\n\nSecond paragraph",
      NotesHtml: "<p>Faster &amp; &lt;better&gt;</p>\n<p>Second paragraph</p>",
    });
    for (const asset of feed.Assets) {
      // Velopack resolves FileName against its feed folder.
      const got = await follow(`/v1/updates/free/velopack/win-x64/${asset["FileName"]}`);
      const body = new Uint8Array(await got.arrayBuffer());
      expect(await sha1Of(body)).toBe(String(asset["SHA1"]).toLowerCase());
      expect(await sha256Of(body)).toBe(asset["SHA256"]);
      expect(body.byteLength).toBe(asset["Size"]);
    }
    // Velopack's default channel name of the OS is the stable channel.
    expect(await (await get("/v1/updates/free/velopack/win-x64/releases.win.json?localVersion=1.0.0")).json()).toEqual(
      feed,
    );
    expect(
      await (await get("/v1/updates/free/velopack/win-x64/releases.win-x64.json?localVersion=1.0.0")).json(),
    ).toEqual(feed);
  });

  it("serves the insider channel's feed, and its packages by bare name from the same folder", async () => {
    const id = await release(freeId, "2.0.0-beta.1", { channel: "insider", requiresMaintenance: false });
    const full = "Free-2.0.0-beta.1-full.nupkg";
    bytes[full] = bytesOf(20_000, 77);
    expect((await upload(freeId, id, { kind: "package", fileName: full, bytes: bytes[full] })).status).toBe(201);
    const feed = (await (
      await get("/v1/updates/free/velopack/win-x64/releases.insider.json?localVersion=1.2.0")
    ).json()) as {
      Assets: { FileName: string; Version: string }[];
    };
    expect(feed.Assets.map((a) => [a.FileName, a.Version])).toEqual([[full, "2.0.0-beta.1"]]);
    const got = await follow(`/v1/updates/free/velopack/win-x64/${full}`);
    expect(new Uint8Array(await got.arrayBuffer())).toEqual(bytes[full]);
    // The stable feed does not offer it.
    expect(
      (await (await get("/v1/updates/free/velopack/win-x64/releases.stable.json?localVersion=1.2.0")).json()) as object,
    ).toEqual({ Assets: [] });
  });

  it("answers 'no update' with empty Assets", async () => {
    const res = await get("/v1/updates/free/velopack/win-x64/releases.stable.json?localVersion=1.2.0");
    expect(await res.json()).toEqual({ Assets: [] });
    expect(res.headers.get("X-Service-Reason")).toBe("nothingNewer");
  });
});

describe("bad input", () => {
  it("answers 400 or 404 with a message, never 500", async () => {
    for (const [path, status, message] of [
      ["/v1/updates/free/squirrel-win/linux-x64/RELEASES", 404, /Windows platforms/],
      ["/v1/updates/free/squirrel-win/win-x99/RELEASES", 400, /Unknown platform/],
      ["/v1/updates/free/squirrel-win/win-x64/RELEASES?localVersion=banana", 400, /Unknown version/],
      ["/v1/updates/free/squirrel-win/win-x64/RELEASES?channel=nightly", 400, /Unknown channel/],
      ["/v1/updates/free/velopack/win-x64/releases.beta.json", 404, /No channel 'beta'/],
      ["/v1/updates/free/velopack/win-x64/releases.stable.json?localVersion=1.x", 400, /Unknown version/],
      ["/v1/updates/free/velopack/mac-x64/releases.stable.json", 400, /Unknown platform/],
      ["/v1/updates/free/velopack/win-x64/index.html", 404, /No file/],
      ["/v1/updates/nope/velopack/win-x64/releases.stable.json", 404, /Unknown product/],
    ] as const) {
      const res = await get(path);
      expect(res.status, path).toBe(status);
      expect(((await res.json()) as JsonBody)["message"], path).toMatch(message);
    }
  });
});

describe("gated releases", () => {
  it("offers nothing without a license, and tokenised packages with the user key", async () => {
    const anonymous = await get("/v1/updates/gated/squirrel-win/win-x64/RELEASES?localVersion=2.0.0");
    expect(anonymous.status).toBe(200);
    // Only the caller's own package (no token): Squirrel finds nothing to update to.
    const own = await anonymous.text();
    expect(parseReleaseFile(own).map((e) => [e.filename, e.query])).toEqual([
      ["Gated-2.0.0-full.nupkg", expect.stringMatching(/^\?artifact=/)],
    ]);
    expect(squirrelUpdate(own, "2.0.0")).toEqual({ packages: [], update: false });
    expect(anonymous.headers.get("X-Service-Reason")).toBe("licenseRequired");
    // A fresh install without a license: nothing at all.
    expect(await (await get("/v1/updates/gated/squirrel-win/win-x64/RELEASES")).text()).toBe("");
    const velo = await get("/v1/updates/gated/velopack/win-x64/releases.stable.json?localVersion=2.0.0");
    expect(await velo.json()).toEqual({ Assets: [] });

    const lic = await license(gatedId);
    const key = { "X-Service-User-Key": lic.userKey };
    const res = await get("/v1/updates/gated/squirrel-win/win-x64/RELEASES?localVersion=2.0.0", key);
    expect(res.headers.get("Cache-Control")).toBe("private, no-store");
    const entries = parseReleaseFile(await res.text());
    expect(entries.map((e) => e.filename)).toEqual(["Gated-2.1.0-full.nupkg"]);
    expect(entries[0]!.query).toMatch(/^\?token=/);
    await expectSquirrelBytes(entries);
    // The same URL without its token is refused.
    expect((await get(`${entries[0]!.baseUrl}${entries[0]!.filename}`)).status).toBe(403);

    const feed = (await (
      await get("/v1/updates/gated/velopack/win-x64/releases.stable.json?localVersion=2.0.0", key)
    ).json()) as {
      Assets: Record<string, unknown>[];
    };
    expect(feed.Assets.map((a) => a["FileName"])).toEqual(["Gated-2.1.0-full.nupkg"]);
    // The folder hands the key's caller a tokenised download; without the key, the bare one is refused.
    const redirect = await get("/v1/updates/gated/velopack/win-x64/Gated-2.1.0-full.nupkg", key);
    expect(redirect.status).toBe(302);
    expect(redirect.headers.get("Location")).toMatch(/\?token=/);
    const got = await follow("/v1/updates/gated/velopack/win-x64/Gated-2.1.0-full.nupkg", key);
    expect(await sha1Of(new Uint8Array(await got.arrayBuffer()))).toBe(String(feed.Assets[0]!["SHA1"]).toLowerCase());
    expect((await follow("/v1/updates/gated/velopack/win-x64/Gated-2.1.0-full.nupkg")).status).toBe(403);
  });

  it("takes the license's feed token in the URL (Squirrel.Windows sends no header), and refuses it once revoked", async () => {
    const lic = await license(gatedId);
    const listed = await admin("GET", `/v1/licenses?filter=${encodeURIComponent(`id == ${lic.id}`)}&select=feedToken`);
    const token = listed.body["licenses"][0].feedToken as string;
    // `<license id in base 36>.<16-byte mac in base64url>` (licensing/feed-token.ts), naming this license.
    expect(token).toMatch(new RegExp(`^${lic.id.toString(36)}\\.[0-9A-Za-z_-]{22}$`));
    const url = `/v1/updates/gated/squirrel-win/win-x64/RELEASES?feed=${encodeURIComponent(token)}&id=Gated&localVersion=2.0.0&arch=amd64`;
    const res = await get(url);
    expect(res.headers.get("Cache-Control")).toBe("private, no-store");
    const entries = parseReleaseFile(await res.text());
    expect(entries.map((e) => [e.filename, e.query?.startsWith("?token=")])).toEqual([
      ["Gated-2.1.0-full.nupkg", true],
    ]);
    await admin("PUT", "/v1/licenses", { license: { id: lic.id, revoked: true } });
    expect((await get(url)).status).toBe(403);
  });

  it("hands out a package only of a release the license's maintenance covers", async () => {
    // Maintenance ended between 2.0.0 (March) and 2.1.0 (April): 2.0.0 is this license's newest.
    const lic = await license(gatedId, { supportExpireDate: "2026-03-15T00:00:00Z" });
    const key = { "X-Service-User-Key": lic.userKey };
    const releases = await get("/v1/updates/gated/squirrel-win/win-x64/RELEASES?localVersion=1.0.0", key);
    expect(parseReleaseFile(await releases.text()).map((e) => e.filename)).toEqual(["Gated-2.0.0-full.nupkg"]);
    const covered = await get("/v1/updates/gated/velopack/win-x64/Gated-2.0.0-full.nupkg", key);
    expect(covered.headers.get("Location")).toMatch(/\?token=/);
    const newer = await get("/v1/updates/gated/velopack/win-x64/Gated-2.1.0-full.nupkg", key);
    expect(newer.headers.get("Location")).toMatch(/\?artifact=\d+$/);
    expect((await follow("/v1/updates/gated/velopack/win-x64/Gated-2.1.0-full.nupkg", key)).status).toBe(403);
  });

  it("refuses a revoked key with 403", async () => {
    const lic = await license(gatedId);
    await admin("PUT", "/v1/licenses", { license: { id: lic.id, revoked: true } });
    for (const path of [
      "/v1/updates/gated/squirrel-win/win-x64/RELEASES?localVersion=2.0.0",
      "/v1/updates/gated/velopack/win-x64/releases.stable.json?localVersion=2.0.0",
    ]) {
      const res = await get(path, { "X-Service-User-Key": lic.userKey });
      expect(res.status, path).toBe(403);
      expect(((await res.json()) as JsonBody)["message"]).toBe("License revoked or expired");
    }
  });

  it("holds back a release at a 0 % rollout and a halted release: the previous one is offered", async () => {
    const lic = await license(gatedId);
    const key = { "X-Service-User-Key": lic.userKey };
    const offered = async () => {
      const squirrel = parseReleaseFile(
        await (await get("/v1/updates/gated/squirrel-win/win-x64/RELEASES?localVersion=1.0.0", key)).text(),
      );
      const velopack = (await (
        await get("/v1/updates/gated/velopack/win-x64/releases.stable.json?localVersion=1.0.0", key)
      ).json()) as { Assets: { Version: string }[] };
      return [squirrel.map((e) => e.version), velopack.Assets.map((a) => a.Version)];
    };
    expect(await offered()).toEqual([["2.1.0"], ["2.1.0"]]);
    const rollout = await admin("PUT", `/v1/products/${gatedId}/releases`, {
      productRelease: { id: gatedRelease, stagingPercentage: 0 },
    });
    expect(rollout.status, rollout.text).toBe(200);
    expect(await offered()).toEqual([["2.0.0"], ["2.0.0"]]);
    await admin("PUT", `/v1/products/${gatedId}/releases`, {
      productRelease: { id: gatedRelease, stagingPercentage: 100 },
    });
    expect(await offered()).toEqual([["2.1.0"], ["2.1.0"]]);
    const halt = await admin("POST", `/v1/products/${gatedId}/releases/${gatedRelease}/halt`, {});
    expect(halt.status, halt.text).toBe(200);
    expect(await offered()).toEqual([["2.0.0"], ["2.0.0"]]);
    expect((await admin("POST", `/v1/products/${gatedId}/releases/${gatedRelease}/resume`, {})).status).toBe(200);
    expect(await offered()).toEqual([["2.1.0"], ["2.1.0"]]);
  });

  it("never downgrades a caller on a halted release, unless the halt rolls back", async () => {
    const lic = await license(gatedId);
    const key = { "X-Service-User-Key": lic.userKey };
    const onHalted = async () => {
      const text = await (await get("/v1/updates/gated/squirrel-win/win-x64/RELEASES?localVersion=2.1.0", key)).text();
      const velo = (await (
        await get("/v1/updates/gated/velopack/win-x64/releases.stable.json?localVersion=2.1.0", key)
      ).json()) as { Assets: { Version: string }[] };
      return { squirrel: parseReleaseFile(text).map((e) => e.filename), velopack: velo.Assets.map((a) => a.Version) };
    };
    expect((await admin("POST", `/v1/products/${gatedId}/releases/${gatedRelease}/halt`, {})).status).toBe(200);
    try {
      // Halted without rollback: the caller keeps what it runs (Squirrel reads its own package: no update).
      expect(await onHalted()).toEqual({ squirrel: ["Gated-2.1.0-full.nupkg"], velopack: [] });
      const rollback = await admin("PUT", `/v1/products/${gatedId}/releases`, {
        productRelease: { id: gatedRelease, rollback: true },
      });
      expect(rollback.status, rollback.text).toBe(200);
      // Rolled back: the previous release's full package, which the updaters install as a downgrade.
      expect(await onHalted()).toEqual({ squirrel: ["Gated-2.0.0-full.nupkg"], velopack: ["2.0.0"] });
    } finally {
      await admin("PUT", `/v1/products/${gatedId}/releases`, { productRelease: { id: gatedRelease, rollback: false } });
      await admin("POST", `/v1/products/${gatedId}/releases/${gatedRelease}/resume`, {});
    }
  });

  it("writes an anonymous rollout as Squirrel's own staging comment; Velopack, which cannot apply one, gets none", async () => {
    const id = await release(freeId, "1.3.0", { stagingPercentage: 0, requiresMaintenance: false });
    const full = "Free-1.3.0-full.nupkg";
    bytes[full] = bytesOf(41_000, 99);
    expect((await upload(freeId, id, { kind: "package", fileName: full, bytes: bytes[full] })).status).toBe(201);
    const text = await (await get("/v1/updates/free/squirrel-win/win-x64/RELEASES?localVersion=1.2.0")).text();
    expect(text).toMatch(/Free-1\.3\.0-full\.nupkg\?artifact=\d+ 41000 # 0%$/m);
    // Squirrel leaves the staged line out for every install at 0 %, and finds its own version: no update.
    expect(squirrelUpdate(text, "1.2.0")).toEqual({ packages: [], update: false });
    const velo = await get("/v1/updates/free/velopack/win-x64/releases.stable.json?localVersion=1.2.0");
    expect(await velo.json()).toEqual({ Assets: [] });
    expect(velo.headers.get("X-Service-Reason")).toBe("notOffered");
    // With an install id the server decides: outside the 0 % cohort, the newest admitted release (nothing newer).
    const withId = await get("/v1/updates/free/velopack/win-x64/releases.stable.json?localVersion=1.1.0&stagingId=abc");
    expect(((await withId.json()) as { Assets: { Version: string }[] }).Assets.map((a) => a.Version)).toEqual([
      "1.2.0",
      "1.2.0",
    ]);
    await admin("DELETE", `/v1/products/${freeId}/releases/${id}`);
  });

  it("offers nothing on a platform the license's edition is not entitled to", async () => {
    const lic = await license(gatedId, { edition: "Standard" });
    await setSetting("Updates:PlatformEditions", JSON.stringify({ windows: ["Ultimate"], mac: [], linux: [] }));
    try {
      const key = { "X-Service-User-Key": lic.userKey };
      const res = await get("/v1/updates/gated/squirrel-win/win-x64/RELEASES?localVersion=2.0.0", key);
      expect(squirrelUpdate(await res.text(), "2.0.0")).toEqual({ packages: [], update: false });
      expect(res.headers.get("X-Service-Reason")).toBe("platformRequiresEdition");
      const velo = await get("/v1/updates/gated/velopack/win-x64/releases.stable.json?localVersion=2.0.0", key);
      expect(await velo.json()).toEqual({ Assets: [] });
      expect(velo.headers.get("X-Service-Reason")).toBe("platformRequiresEdition");
    } finally {
      await setSetting("Updates:PlatformEditions", null);
    }
  });
});

describe("hosted packages", () => {
  it("are listed with the SHA-1 their publisher declared, and only then", async () => {
    const productId = await product("hosted", true);
    const hosted = async (version: string, sha1?: string) => {
      const releaseId = await release(productId, version, { requiresMaintenance: false });
      const res = await admin("POST", `/v1/products/${productId}/releases/${releaseId}/downloads`, {
        releaseDownload: {
          platform: "win-x64",
          kind: "package",
          fileName: `Hosted-${version}-full.nupkg`,
          url: `https://cdn.example.com/Hosted-${version}-full.nupkg`,
          size: 1234,
          sha256: "a".repeat(64),
          sha512: `${"A".repeat(86)}==`,
          ...(sha1 ? { sha1 } : {}),
        },
      });
      expect(res.status, res.text).toBe(201);
    };
    await hosted("1.0.0");
    const none = await get("/v1/updates/hosted/velopack/win-x64/releases.stable.json");
    expect(await none.json()).toEqual({ Assets: [] });
    expect(none.headers.get("X-Service-Reason")).toBe("noRelease");
    await hosted("1.1.0", "b".repeat(40));
    const feed = (await (await get("/v1/updates/hosted/velopack/win-x64/releases.stable.json")).json()) as {
      Assets: Record<string, unknown>[];
    };
    expect(feed.Assets).toMatchObject([{ Version: "1.1.0", SHA1: "B".repeat(40), SHA256: "a".repeat(64), Size: 1234 }]);
    // The folder's redirect leads to the download route, which sends the client to the host.
    const download = await get(
      (await get("/v1/updates/hosted/velopack/win-x64/Hosted-1.1.0-full.nupkg")).headers.get("Location")!,
    );
    expect([download.status, download.headers.get("Location")]).toEqual([
      302,
      "https://cdn.example.com/Hosted-1.1.0-full.nupkg",
    ]);
  });
});

describe("package hashes at upload", () => {
  it("keeps the SHA-1 and refuses a file whose declared hash differs", async () => {
    const releaseId = await release(freeId, "9.0.0", { public: false });
    const file = bytesOf(5000, 7);
    const wrong = await upload(freeId, releaseId, {
      kind: "package",
      fileName: "Free-9.0.0-full.nupkg",
      bytes: file,
      declared: { sha1: "0".repeat(40) },
    });
    expect(wrong.status).toBe(400);
    expect(wrong.body["message"]).toMatch(/sha1 is [0-9a-f]{40}, not the declared 0{40}/);
    const listed = await admin("GET", `/v1/products/${freeId}/releases/${releaseId}/downloads`);
    expect(listed.body["releaseDownloads"]).toEqual([]);
    const right = await upload(freeId, releaseId, {
      kind: "package",
      fileName: "Free-9.0.0-full.nupkg",
      bytes: file,
      declared: { sha1: (await sha1Of(file)).toUpperCase(), sha256: await sha256Of(file) },
    });
    expect(right.status, JSON.stringify(right.body)).toBe(201);
    const row = (await admin("GET", `/v1/products/${freeId}/releases/${releaseId}/downloads`)).body[
      "releaseDownloads"
    ][0];
    expect(row.sha1).toBe(await sha1Of(file));
  });

  it("checks the hashes declared when a resumable upload starts, when it completes", async () => {
    const releaseId = await release(freeId, "9.1.0", { public: false });
    const path = `/v1/products/${freeId}/releases/${releaseId}/downloads`;
    const file = bytesOf(6000, 8);
    const attempt = async (declared: Record<string, string>) => {
      const started = await admin("POST", `${path}/uploads`, {
        upload: { platform: "win-x64", kind: "package", fileName: "Free-9.1.0-full.nupkg", ...declared },
      });
      expect(started.status, started.text).toBe(201);
      const id = started.body["uploadId"];
      const part = await exports.default.fetch(`${BASE}${path}/uploads/${id}/parts/1`, {
        method: "PUT",
        headers: { "x-api-key": ADMIN.key, "content-type": "application/octet-stream" },
        body: file,
      });
      expect(part.status).toBe(200);
      return admin("POST", `${path}/uploads/${id}/complete`);
    };
    const wrong = await attempt({ sha256: "f".repeat(64) });
    expect(wrong.status).toBe(400);
    expect(wrong.body["message"]).toMatch(/sha256 is [0-9a-f]{64}, not the declared f{64}/);
    expect((await admin("GET", path)).body["releaseDownloads"]).toEqual([]);
    const right = await attempt({ sha1: await sha1Of(file) });
    expect(right.status, right.text).toBe(201);
  });
});
