/**
 * The real Velopack update client (the `velopack` npm package: Velopack's Rust core through Node) against the
 * service's Velopack feed (CONTRACT section 9): an installed app described by a locator (its manifest, its packages
 * folder) reads `releases.stable.json` with its own parser (serde over VelopackAssetFeed), picks the newest full
 * package with its own rules, and downloads it from the feed folder (the folder redirects to the download route);
 * the bytes it keeps are the uploaded ones, whose SHA-1 the feed names. (This version of the Node package reports no
 * delta chain in its UpdateInfo: the chain is checked in the feed it read.)
 */
import { createHash } from "node:crypto";
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { UpdateManager, type UpdateOptions } from "velopack";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
// @ts-expect-error: a plain JavaScript module shared with the benchmark
import { startLocalWorker } from "../../scripts/local-worker.mjs";
import type { JsonBody } from "../json-body.ts";

const KEY = "api_VelopackAdminKey0000000000000000";
let worker: { url: URL; dispose(): Promise<void> };
let base: string;

// ---------------------------------------------------------------------------------------------------------------
// Real .nupkg packages (zip archives with a .nuspec, as `vpk pack` writes them), so Velopack can read the one installed.

const CRC_TABLE = Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});
function crc32(bytes: Buffer): number {
  let c = 0xffffffff;
  for (const b of bytes) c = CRC_TABLE[(c ^ b) & 0xff]! ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

/** A zip of stored (uncompressed) entries. */
function zip(entries: Record<string, Buffer>): Buffer {
  const locals: Buffer[] = [];
  const centrals: Buffer[] = [];
  let offset = 0;
  for (const [name, data] of Object.entries(entries)) {
    const nameBytes = Buffer.from(name, "utf8");
    const crc = crc32(data);
    const local = Buffer.alloc(30);
    local.writeUInt32LE(0x04034b50, 0);
    local.writeUInt16LE(20, 4);
    local.writeUInt32LE(crc, 14);
    local.writeUInt32LE(data.length, 18);
    local.writeUInt32LE(data.length, 22);
    local.writeUInt16LE(nameBytes.length, 26);
    const central = Buffer.alloc(46);
    central.writeUInt32LE(0x02014b50, 0);
    central.writeUInt16LE(20, 4);
    central.writeUInt16LE(20, 6);
    central.writeUInt32LE(crc, 16);
    central.writeUInt32LE(data.length, 20);
    central.writeUInt32LE(data.length, 24);
    central.writeUInt16LE(nameBytes.length, 28);
    central.writeUInt32LE(offset, 42);
    locals.push(local, nameBytes, data);
    centrals.push(central, nameBytes);
    offset += local.length + nameBytes.length + data.length;
  }
  const centralSize = centrals.reduce((n, b) => n + b.length, 0);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(Object.keys(entries).length, 8);
  end.writeUInt16LE(Object.keys(entries).length, 10);
  end.writeUInt32LE(centralSize, 12);
  end.writeUInt32LE(offset, 16);
  return Buffer.concat([...locals, ...centrals, end]);
}

function nuspec(version: string): string {
  return `<?xml version="1.0" encoding="utf-8"?>
<package xmlns="http://schemas.microsoft.com/packaging/2010/07/nuspec.xsd">
  <metadata>
    <id>Studio</id>
    <version>${version}</version>
    <title>Studio</title>
    <authors>Vendor</authors>
    <description>Studio</description>
    <channel>stable</channel>
    <mainExe>Studio</mainExe>
  </metadata>
</package>`;
}

/** A full package of `version`: the manifest and a payload that changes with the version. */
const fullPackage = (version: string) =>
  zip({
    "Studio.nuspec": Buffer.from(nuspec(version)),
    "lib/app/Studio": Buffer.from(`#!/bin/sh\necho Studio ${version}\n`.repeat(200)),
  });
/** A delta package's bytes (Velopack only downloads them here; a broken delta falls back to the full package). */
const deltaPackage = (version: string) =>
  zip({ "Studio.nuspec": Buffer.from(nuspec(version)), "lib/app/Studio.diff": Buffer.from(`delta ${version}`) });

const sha1 = (b: Buffer) => createHash("sha1").update(b).digest("hex");

async function api(method: string, path: string, body?: unknown): Promise<JsonBody> {
  const res = await fetch(new URL(path, worker.url), {
    method,
    headers: { "x-api-key": KEY, "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return (await res.json()) as JsonBody;
}

async function upload(productId: number, releaseId: number, kind: string, fileName: string, bytes: Buffer) {
  const form = new FormData();
  form.set("platform", "linux-x64");
  form.set("kind", kind);
  form.set("sha1", sha1(bytes));
  form.set("file", new Blob([bytes]), fileName);
  const res = await fetch(new URL(`/v1/products/${productId}/releases/${releaseId}/downloads`, worker.url), {
    method: "POST",
    headers: { "x-api-key": KEY },
    body: form,
  });
  if (res.status !== 201) throw new Error(`upload ${fileName}: ${res.status} ${await res.text()}`);
}

const packages: Record<string, Buffer> = {};
/** The feed token of a license of Gated, whose one release needs maintenance. */
let feedToken = "";
let gatedLicenseId = 0;

beforeAll(async () => {
  worker = await startLocalWorker({
    bindings: {
      Application__JwtSecret: "velopack-test-jwt-secret-0123456789abcdef",
      Application__EncryptionKey: "velopack-test-encryption-key",
      Application__AdminUsername: "admin",
      Application__AdminPassword: "Velopack-12345",
      Application__AdminApiKey: KEY,
      // Linux open to every edition, and public releases of an application product.
      Updates__EnforcePlatformEditions: "false",
      Updates__AllowPublicApplicationReleases: "true",
    },
  });
  base = worker.url.toString().replace(/\/$/, "");
  const productId = (
    await api("POST", "/v1/products", { product: { code: "studio", name: "Studio", isApplication: true } })
  )["productId"];
  for (const version of ["1.0.0", "1.1.0", "1.2.0"]) {
    const releaseId = (
      await api("POST", `/v1/products/${productId}/releases`, {
        productRelease: { version, public: true, requiresMaintenance: false, releaseNotes: `Notes of ${version}` },
      })
    )["productReleaseId"];
    const full = `Studio-${version}-full.nupkg`;
    packages[full] = fullPackage(version);
    await upload(productId, releaseId, "package", full, packages[full]);
    if (version !== "1.0.0") {
      const delta = `Studio-${version}-delta.nupkg`;
      packages[delta] = deltaPackage(version);
      await upload(productId, releaseId, "delta", delta, packages[delta]);
    }
  }
  // Gated: a release that needs maintenance, and a license whose feed token the app keeps.
  const gatedId = (
    await api("POST", "/v1/products", { product: { code: "gated", name: "Gated", isApplication: true } })
  )["productId"];
  const gatedRelease = (
    await api("POST", `/v1/products/${gatedId}/releases`, {
      productRelease: {
        version: "2.0.0",
        public: true,
        requiresMaintenance: true,
        releaseDate: "2026-03-01T00:00:00Z",
      },
    })
  )["productReleaseId"];
  packages["Studio-2.0.0-full.nupkg"] = fullPackage("2.0.0");
  await upload(gatedId, gatedRelease, "package", "Studio-2.0.0-full.nupkg", packages["Studio-2.0.0-full.nupkg"]);
  gatedLicenseId = (
    await api("POST", "/v1/licenses", { license: { productId: gatedId, issueDate: "2026-01-01T00:00:00Z" } })
  )["id"];
  feedToken = (
    await api("GET", `/v1/licenses?filter=${encodeURIComponent(`id == ${gatedLicenseId}`)}&select=feedToken`)
  )["licenses"][0].feedToken;
}, 180_000);
afterAll(() => worker?.dispose());

/** An installed Studio at `version`, as Velopack's locator describes one; `withPackage` keeps its full package. */
function installed(version: string, withPackage: boolean, feed = `${base}/v1/updates/studio/velopack/linux-x64`) {
  const root = mkdtempSync(join(tmpdir(), "velopack-"));
  const packagesDir = join(root, "packages");
  mkdirSync(packagesDir, { recursive: true });
  const manifest = join(root, "sq.version");
  writeFileSync(manifest, nuspec(version));
  if (withPackage) writeFileSync(join(packagesDir, `Studio-${version}-full.nupkg`), fullPackage(version));
  const options: UpdateOptions = {
    AllowVersionDowngrade: false,
    ExplicitChannel: null,
  };
  const manager = new UpdateManager(feed, options, {
    RootAppDir: root,
    UpdateExePath: join(root, "Update"),
    PackagesDir: packagesDir,
    ManifestPath: manifest,
    CurrentBinaryDir: root,
    IsPortable: true,
  });
  return { manager, packagesDir };
}

describe("the Velopack client against the service", () => {
  it("finds the update in the feed and downloads the package from the feed folder, the bytes the feed names", async () => {
    const { manager, packagesDir } = installed("1.0.0", true);
    const update = await manager.checkForUpdatesAsync();
    expect(update?.TargetFullRelease).toMatchObject({
      PackageId: "Studio",
      Version: "1.2.0",
      Type: "Full",
      FileName: "Studio-1.2.0-full.nupkg",
      SHA1: sha1(packages["Studio-1.2.0-full.nupkg"]!).toUpperCase(),
      NotesMarkdown: "Notes of 1.2.0",
    });
    expect(Number(update?.TargetFullRelease.Size)).toBe(packages["Studio-1.2.0-full.nupkg"]!.length);
    expect(update?.IsDowngrade).toBe(false);
    await manager.downloadUpdateAsync(update!);
    expect(readdirSync(packagesDir)).toContain("Studio-1.2.0-full.nupkg");
    expect(readFileSync(join(packagesDir, "Studio-1.2.0-full.nupkg"))).toEqual(packages["Studio-1.2.0-full.nupkg"]);
    // The feed the client read (the URL it asks, with its own query) names the delta chain from 1.0.0 beside it.
    const feed = (await (
      await fetch(`${base}/v1/updates/studio/velopack/linux-x64/releases.stable.json?localVersion=1.0.0&id=Studio`)
    ).json()) as { Assets: { Type: string; FileName: string; SHA1: string }[] };
    expect(feed.Assets.map((a) => [a.Type, a.FileName])).toEqual([
      ["Delta", "Studio-1.1.0-delta.nupkg"],
      ["Delta", "Studio-1.2.0-delta.nupkg"],
      ["Full", "Studio-1.2.0-full.nupkg"],
    ]);
    for (const a of feed.Assets) expect(a.SHA1).toBe(sha1(packages[a.FileName]!).toUpperCase());
  });

  it("takes a gated release with the license's feed token as a folder of the feed URL, and not once revoked", async () => {
    const gated = (token: string) =>
      installed("1.0.0", false, `${base}/v1/updates/gated/velopack/linux-x64/feed/${token}`);
    // Without the license (no token), nothing is offered.
    expect(
      await installed("1.0.0", false, `${base}/v1/updates/gated/velopack/linux-x64`).manager.checkForUpdatesAsync(),
    ).toBeNull();
    const { manager, packagesDir } = gated(feedToken);
    const update = await manager.checkForUpdatesAsync();
    expect(update?.TargetFullRelease.FileName).toBe("Studio-2.0.0-full.nupkg");
    await manager.downloadUpdateAsync(update!);
    expect(readFileSync(join(packagesDir, "Studio-2.0.0-full.nupkg"))).toEqual(packages["Studio-2.0.0-full.nupkg"]);
    await api("PUT", "/v1/licenses", { license: { id: gatedLicenseId, revoked: true } });
    await expect(gated(feedToken).manager.checkForUpdatesAsync()).rejects.toThrow(/403/);
  });

  it("finds no update on the newest version (empty Assets)", async () => {
    const { manager } = installed("1.2.0", true);
    expect(await manager.checkForUpdatesAsync()).toBeNull();
  });
});
