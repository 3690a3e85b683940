/**
 * The real electron-updater (6.8.10) updating an application from the service, in plain Node: an NsisUpdater with
 * a Node HttpExecutor and an app adapter (no Electron). It reads the feed of a gated release with its user key,
 * downloads the installer in full through the tokenised URL, and, with the previous version's installer and
 * blockmap present, differentially through multipart range requests; electron-updater verifies sha512 each time.
 */
import { createHash } from "node:crypto";
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import type { NsisUpdater } from "electron-updater";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { configureAutoUpdater } from "../../client/src/electron-updater";
// @ts-expect-error: a plain JavaScript module shared with the benchmark
import { startLocalWorker } from "../../scripts/local-worker.mjs";
import { type SeenRequest, nodeUpdater } from "./updater-kit.ts";
import type { JsonBody } from "../json-body.ts";

const KEY = "api_UpdaterAdminKey00000000000000000";
const BLOCK = 64 * 1024;
let worker: { url: URL; dispose(): Promise<void> };
let base: string;
let userKey: string;

/** Every request electron-updater makes, with its Range header. */
const requests: SeenRequest[] = [];

/** A blockmap as electron-builder writes one (gzipped JSON, version 2), with fixed-size blocks. */
function blockmap(bytes: Buffer): Buffer {
  const sizes: number[] = [];
  const checksums: string[] = [];
  for (let at = 0; at < bytes.length; at += BLOCK) {
    const block = bytes.subarray(at, at + BLOCK);
    sizes.push(block.length);
    checksums.push(createHash("sha256").update(block).digest("base64"));
  }
  return gzipSync(JSON.stringify({ version: "2", files: [{ name: "file", offset: 0, checksums, sizes }] }));
}

/** The real NsisUpdater (updater-kit.ts) of an installed `version`, on a channel's win-x64 feed, with the user key. */
function updater(version: string, cache: string, channel = "stable"): NsisUpdater {
  const u = nodeUpdater(version, cache, requests);
  u.setFeedURL({ provider: "generic", url: `${base}/v1/updates/studio/feed/${channel}/win-x64/` });
  u.requestHeaders = { "X-Service-User-Key": userKey };
  return u;
}

async function api(method: string, path: string, body?: unknown): Promise<JsonBody> {
  const res = await fetch(new URL(path, worker.url), {
    method,
    headers: { "x-api-key": KEY, "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return (await res.json()) as JsonBody;
}

async function upload(
  productId: number,
  releaseId: number,
  kind: string,
  fileName: string,
  bytes: Buffer,
): Promise<void> {
  const form = new FormData();
  form.set("platform", "win-x64");
  form.set("kind", kind);
  form.set("file", new Blob([bytes]), fileName);
  const res = await fetch(new URL(`/v1/products/${productId}/releases/${releaseId}/downloads`, worker.url), {
    method: "POST",
    headers: { "x-api-key": KEY },
    body: form,
  });
  if (res.status !== 201) throw new Error(`upload ${fileName}: ${res.status} ${await res.text()}`);
}

// Version 1.0.0 and 2.0.0 installers share most 64 KiB blocks: 2.0.0 changes three of them and grows by one.
const oldInstaller = Buffer.from(Uint8Array.from({ length: 40 * BLOCK + 1234 }, (_, i) => (i * 7 + (i >> 13)) % 256));
const newInstaller = Buffer.concat([oldInstaller, Buffer.alloc(BLOCK, 9)]);
for (const block of [3, 17, 30]) newInstaller.fill(block, block * BLOCK + 100, block * BLOCK + 200);
const insiderInstaller = Buffer.concat([newInstaller, Buffer.alloc(1000, 7)]);

beforeAll(async () => {
  worker = await startLocalWorker({
    bindings: {
      Application__JwtSecret: "updater-test-jwt-secret-0123456789abcdef",
      Application__EncryptionKey: "updater-test-encryption-key",
      Application__AdminUsername: "admin",
      Application__AdminPassword: "Updater-12345",
      Application__AdminApiKey: KEY,
    },
  });
  base = worker.url.toString().replace(/\/$/, "");
  const productId = (
    await api("POST", "/v1/products", { product: { code: "studio", name: "Studio", isApplication: true } })
  )["productId"];
  for (const [version, bytes, date] of [
    ["1.0.0", oldInstaller, "2026-01-01T00:00:00Z"],
    ["2.0.0", newInstaller, "2026-10-01T00:00:00Z"],
  ] as const) {
    const releaseId = (
      await api("POST", `/v1/products/${productId}/releases`, {
        productRelease: { version, public: true, releaseDate: date },
      })
    )["productReleaseId"];
    await upload(productId, releaseId, "installer", `Studio Setup ${version}.exe`, bytes);
    await upload(productId, releaseId, "blockmap", `Studio Setup ${version}.exe.blockmap`, blockmap(bytes));
  }
  // An insider build: electron-updater finds it through `autoUpdater.channel = "insider"` (insider.yml).
  const insiderId = (
    await api("POST", `/v1/products/${productId}/releases`, {
      productRelease: {
        version: "2.1.0-beta.1",
        channel: "insider",
        public: true,
        releaseDate: "2026-10-15T00:00:00Z",
      },
    })
  )["productReleaseId"];
  await upload(productId, insiderId, "installer", "Studio Setup 2.1.0-beta.1.exe", insiderInstaller);
  const created = await api("POST", "/v1/licenses", { license: { productId, issueDate: "2026-06-01T00:00:00Z" } });
  userKey = (await api("GET", `/v1/licenses?filter=${encodeURIComponent(`id == ${created["id"]}`)}&select=userKey`))[
    "licenses"
  ][0].userKey;
}, 180_000);
afterAll(() => worker?.dispose());

const sha512 = (bytes: Buffer) => createHash("sha512").update(bytes).digest("base64");

describe("electron-updater against the service", () => {
  it("finds the update in the feed and downloads it in full through the tokenised URL", async () => {
    const cache = mkdtempSync(join(tmpdir(), "updater-full-"));
    const u = updater("1.0.0", cache);
    u.disableDifferentialDownload = true;
    const check = await u.checkForUpdates();
    expect(check?.isUpdateAvailable).toBe(true);
    expect(check?.updateInfo.version).toBe("2.0.0");
    expect(check?.updateInfo.files[0]?.url).toContain("?token=");
    requests.length = 0;
    const [file] = await u.downloadUpdate();
    expect(sha512(readFileSync(file!))).toBe(sha512(newInstaller));
    const installerGets = requests.filter((r) => r.path.includes("Studio%20Setup%202.0.0.exe?token=") && !r.range);
    expect(installerGets).toHaveLength(1);
  });

  it("downloads differentially, asking for the changed blocks in multipart range requests", async () => {
    const cache = mkdtempSync(join(tmpdir(), "updater-diff-"));
    const u = updater("1.0.0", cache);
    // What electron-updater keeps after installing 1.0.0: the installer it ran.
    const helperDir = join(cache, "studio-updater");
    mkdirSync(helperDir, { recursive: true });
    writeFileSync(join(helperDir, "installer.exe"), oldInstaller);
    expect((await u.checkForUpdates())?.updateInfo.version).toBe("2.0.0");
    requests.length = 0;
    const [file] = await u.downloadUpdate();
    expect(sha512(readFileSync(file!))).toBe(sha512(newInstaller));
    const blockmaps = requests.filter((r) => r.path.includes(".blockmap"));
    expect(
      blockmaps.map((r) => decodeURIComponent(r.path.split("?")[0]!.split("/").slice(-2).join("/"))).sort(),
    ).toEqual(["1.0.0/Studio Setup 1.0.0.exe.blockmap", "2.0.0/Studio Setup 2.0.0.exe.blockmap"]);
    const ranged = requests.filter((r) => r.range);
    expect(ranged.length).toBeGreaterThan(0);
    expect(ranged.some((r) => r.range!.includes(","))).toBe(true);
    expect(requests.some((r) => r.path.includes("2.0.0.exe?token=") && !r.range)).toBe(false);
  });

  it("follows autoUpdater.channel: the insider feed directory answers insider.yml", async () => {
    const cache = mkdtempSync(join(tmpdir(), "updater-channel-"));
    const u = updater("2.0.0", cache, "insider");
    u.channel = "insider";
    u.disableDifferentialDownload = true;
    requests.length = 0;
    const check = await u.checkForUpdates();
    expect(requests.map((r) => decodeURIComponent(r.path.split("?")[0]!))).toContain(
      "/v1/updates/studio/feed/insider/win-x64/insider.yml",
    );
    expect(check?.updateInfo.version).toBe("2.1.0-beta.1");
    expect(check?.isUpdateAvailable).toBe(true);
    const [file] = await u.downloadUpdate();
    expect(sha512(readFileSync(file!))).toBe(sha512(insiderInstaller));
  });

  it("is configured by the client library's configureAutoUpdater: feed directory and user-key header", async () => {
    const cache = mkdtempSync(join(tmpdir(), "updater-helper-"));
    const u = updater("1.0.0", cache);
    u.requestHeaders = null;
    u.disableDifferentialDownload = true;
    const url = configureAutoUpdater(u, { baseUrl: base, productCode: "studio", userKey, platform: "win-x64" });
    expect(url).toBe(`${base}/v1/updates/studio/feed/stable/win-x64/`);
    const check = await u.checkForUpdates();
    expect(check?.updateInfo.version).toBe("2.0.0");
    const [file] = await u.downloadUpdate();
    expect(sha512(readFileSync(file!))).toBe(sha512(newInstaller));
    // Without the user key the gated release is not offered: the header is what licenses the feed. The feed answers
    // 204, which electron-updater reports as an error (docs/electron.md: Updates:EmptyFeedAsYaml avoids it).
    const anonymous = updater("1.0.0", mkdtempSync(join(tmpdir(), "updater-anon-")));
    configureAutoUpdater(anonymous, { baseUrl: base, productCode: "studio", platform: "win-x64" });
    expect(anonymous.requestHeaders).toEqual({ "X-Service-Current-Version": "1.0.0" });
    await expect(anonymous.checkForUpdates()).rejects.toThrow(/Cannot parse update info from latest.yml/);
  });
});
