/**
 * What the update routes offer and let download (SPEC "Update routes", "Update and maintenance rules"):
 * - an installer and a zip of one release and platform that share a file name: the feed's and the update check's
 *   URLs carry `kind`, so each one downloads (a name that names one artifact ignores a carried-over `kind`, as a
 *   blockmap URL derived from an installer URL carries it);
 * - only public releases are offered, by the feed and by the update check (rule 6);
 * - the platform rule holds on ungated downloads: an ungated release never bypasses it.
 */
import { exports } from "cloudflare:workers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse as parseYaml } from "yaml";
import { BASE, admin, setSetting } from "./helpers";
import { blockmapOf, bytesOf, unique, upload } from "./artifacts-kit";

const get = (path: string, userKey?: string) =>
  exports.default.fetch(path.startsWith("http") ? path : `${BASE}${path}`, {
    headers: userKey ? { "X-Service-User-Key": userKey } : {},
  });

async function application(): Promise<{ id: number; code: string }> {
  const code = `offers-${unique()}`;
  const res = await admin("POST", "/v1/products", { product: { code, name: "Offers", isApplication: true } });
  expect(res.status, res.text).toBe(200);
  return { id: res.body["productId"], code };
}

async function release(productId: number, version: string, extra: Record<string, unknown> = {}): Promise<number> {
  const res = await admin("POST", `/v1/products/${productId}/releases`, {
    productRelease: { version, public: true, ...extra },
  });
  expect(res.status, res.text).toBe(200);
  return res.body["productReleaseId"];
}

async function artifact(
  productId: number,
  releaseId: number,
  bytes: Uint8Array,
  o: { platform: string; kind: string; fileName: string },
): Promise<void> {
  const res = await upload(`/v1/products/${productId}/releases/${releaseId}/downloads`, bytes, {
    ...o,
    partName: o.fileName,
  });
  expect(res.status, res.text).toBe(201);
}

async function userKeyOf(productId: number, fields: Record<string, unknown> = {}): Promise<string> {
  const res = await admin("POST", "/v1/licenses", { license: { productId, ...fields } });
  expect(res.status, res.text).toBe(200);
  const listed = await admin(
    "GET",
    `/v1/licenses?filter=${encodeURIComponent(`id == ${res.body["id"]}`)}&select=userKey`,
  );
  return listed.body["licenses"][0].userKey;
}

async function bytesAt(url: string, userKey?: string): Promise<{ status: number; bytes: Uint8Array }> {
  const res = await get(url, userKey);
  return { status: res.status, bytes: new Uint8Array(await res.arrayBuffer()) };
}

async function feedUrls(code: string, platform: string, file: string, userKey?: string): Promise<string[]> {
  const res = await get(`/v1/updates/${code}/feed/stable/${platform}/${file}`, userKey);
  expect(res.status).toBe(200);
  const feed = parseYaml(await res.text()) as { files: { url: string }[] };
  return feed.files.map((f) => f.url);
}

describe("an installer and a zip that share a file name", () => {
  const installer = bytesOf(3000, 11);
  const zip = bytesOf(2000, 12);
  let gated = { id: 0, code: "" };
  let open = { id: 0, code: "" };
  const name = "Offers-1.0.0-win.bin";

  beforeAll(async () => {
    gated = await application();
    const r = await release(gated.id, "1.0.0");
    await artifact(gated.id, r, installer, { platform: "win-x64", kind: "installer", fileName: name });
    await artifact(gated.id, r, zip, { platform: "win-x64", kind: "zip", fileName: name });
    await artifact(gated.id, r, await blockmapOf(installer), {
      platform: "win-x64",
      kind: "blockmap",
      fileName: `${name}.blockmap`,
    });
    await setSetting("Updates:AllowPublicApplicationReleases", "true");
    open = await application();
    const o = await release(open.id, "1.0.0", { requiresMaintenance: false });
    await artifact(open.id, o, installer, { platform: "win-x64", kind: "installer", fileName: name });
    await artifact(open.id, o, zip, { platform: "win-x64", kind: "zip", fileName: name });
  });
  afterAll(() => setSetting("Updates:AllowPublicApplicationReleases", null));

  it("downloads each from the feed's URLs, with a licensed caller's tokens (gated release)", async () => {
    const userKey = await userKeyOf(gated.id);
    const urls = await feedUrls(gated.code, "win-x64", "latest.yml", userKey);
    expect(urls).toHaveLength(2);
    for (const url of urls) expect(new URL(url).searchParams.get("kind"), url).toMatch(/^(installer|zip)$/);
    const got = await Promise.all(urls.map((url) => bytesAt(url)));
    expect(got.map((g) => g.status)).toEqual([200, 200]);
    const byKind = Object.fromEntries(urls.map((url, i) => [new URL(url).searchParams.get("kind"), got[i]!.bytes]));
    expect(byKind["installer"]).toEqual(installer);
    expect(byKind["zip"]).toEqual(zip);
  });

  it("downloads the update check's file, and each from an anonymous feed (ungated release)", async () => {
    const userKey = await userKeyOf(gated.id);
    const checked = await get(`/v1/updates/${gated.code}?platform=win-x64&version=0.9.0`, userKey);
    const data = ((await checked.json()) as { data: { download: { url: string; kind: string } } }).data;
    expect(data.download.kind).toBe("installer");
    expect(new URL(data.download.url).searchParams.get("kind")).toBe("installer");
    const fromCheck = await bytesAt(data.download.url);
    expect(fromCheck.status).toBe(200);
    expect(fromCheck.bytes).toEqual(installer);

    const urls = await feedUrls(open.code, "win-x64", "latest.yml");
    const got = await Promise.all(urls.map((url) => bytesAt(url)));
    expect(got.map((g) => g.status)).toEqual([200, 200]);
    expect(got.map((g) => g.bytes.byteLength).sort()).toEqual([zip.byteLength, installer.byteLength].sort());
    const anonymousCheck = await get(`/v1/updates/${open.code}?platform=win-x64&version=0.9.0`);
    const url = ((await anonymousCheck.json()) as { data: { download: { url: string } } }).data.download.url;
    expect((await bytesAt(url)).bytes).toEqual(installer);
  });

  it("serves the blockmap an auto-updater derives from the installer's URL, its query (and kind) carried over", async () => {
    const urls = await feedUrls(open.code, "win-x64", "latest.yml");
    const installerUrl = new URL(urls.find((u) => new URL(u).searchParams.get("kind") === "installer")!);
    // The open product has no blockmap: its derived URL is unknown (404), never another artifact.
    expect(
      (await bytesAt(`${installerUrl.origin}${installerUrl.pathname}.blockmap${installerUrl.search}`)).status,
    ).toBe(404);
    const userKey = await userKeyOf(gated.id);
    const gatedUrls = await feedUrls(gated.code, "win-x64", "latest.yml", userKey);
    const gatedInstaller = new URL(gatedUrls.find((u) => new URL(u).searchParams.get("kind") === "installer")!);
    const blockmap = await bytesAt(
      `${gatedInstaller.origin}${gatedInstaller.pathname}.blockmap${gatedInstaller.search}`,
    );
    expect(blockmap.status).toBe(200);
    expect(blockmap.bytes).toEqual(await blockmapOf(installer));
  });

  it("still answers 400 to an ambiguous name without kind", async () => {
    const res = await get(`/v1/updates/${open.code}/download/win-x64/1.0.0/${name}`);
    expect(res.status).toBe(400);
  });
});

describe("only public releases are offered", () => {
  it("never offers a newer release that is not public, by feed or update check, until it is made public", async () => {
    await setSetting("Updates:AllowPublicApplicationReleases", "true");
    try {
      const product = await application();
      const r1 = await release(product.id, "1.0.0", { requiresMaintenance: false });
      await artifact(product.id, r1, bytesOf(100, 1), { platform: "win-x64", kind: "installer", fileName: "A1.exe" });
      const r2 = await release(product.id, "2.0.0", { requiresMaintenance: false, public: false });
      await artifact(product.id, r2, bytesOf(100, 2), { platform: "win-x64", kind: "installer", fileName: "A2.exe" });

      const offered = async () => {
        const feed = await get(`/v1/updates/${product.code}/feed/stable/win-x64/latest.yml`);
        const check = await get(`/v1/updates/${product.code}?platform=win-x64&version=0.1.0`);
        const data = ((await check.json()) as { data: { latest: string; download?: { fileName: string } } }).data;
        return { feed: (parseYaml(await feed.text()) as { version: string }).version, check: data.latest };
      };
      expect(await offered()).toEqual({ feed: "1.0.0", check: "1.0.0" });
      // Its artifact is not downloadable either.
      expect((await get(`/v1/updates/${product.code}/download/win-x64/2.0.0/A2.exe`)).status).toBe(404);

      const published = await admin("PUT", `/v1/products/${product.id}/releases`, {
        productRelease: { id: r2, public: true },
      });
      expect(published.status, published.text).toBe(200);
      expect(await offered()).toEqual({ feed: "2.0.0", check: "2.0.0" });
    } finally {
      await setSetting("Updates:AllowPublicApplicationReleases", null);
    }
  });
});

describe("the platform rule on ungated downloads", () => {
  it("refuses an ungated macOS artifact without an Ultimate license, and serves Windows to anyone", async () => {
    await setSetting("Updates:AllowPublicApplicationReleases", "true");
    try {
      const product = await application();
      const r = await release(product.id, "1.0.0", { requiresMaintenance: false });
      const mac = bytesOf(500, 3);
      await artifact(product.id, r, mac, { platform: "darwin-arm64", kind: "zip", fileName: "M.zip" });
      await artifact(product.id, r, bytesOf(500, 4), { platform: "win-x64", kind: "installer", fileName: "W.exe" });
      const macPath = `/v1/updates/${product.code}/download/darwin-arm64/1.0.0/M.zip`;

      expect((await bytesAt(`/v1/updates/${product.code}/download/win-x64/1.0.0/W.exe`)).status).toBe(200);
      const anonymous = await bytesAt(macPath);
      expect(anonymous.status).toBe(403);
      expect(anonymous.bytes).not.toEqual(mac);
      const standard = await bytesAt(macPath, await userKeyOf(product.id, { edition: "Standard" }));
      expect(standard.status).toBe(403);
      expect(standard.bytes).not.toEqual(mac);
      const ultimate = await bytesAt(macPath, await userKeyOf(product.id, { edition: "Ultimate" }));
      expect(ultimate.status).toBe(200);
      expect(ultimate.bytes).toEqual(mac);
    } finally {
      await setSetting("Updates:AllowPublicApplicationReleases", null);
    }
  });
});
