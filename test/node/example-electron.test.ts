/**
 * examples/electron without Electron: its licensing module (activation, the offline check, validation, the
 * updater's configuration) run as it is against the bundled Worker; a build folder laid out as electron-builder
 * writes 2.1.0-beta.1 published through the example's build/electron-publisher-licensing.js with the `publish`
 * entry of its electron-builder.yml, called as electron-builder calls a custom provider; and the real
 * electron-updater, configured by the example's code, finding and downloading that build.
 *
 * The example's dependencies are not installed by the repository's npm install: the test builds @licensing/client
 * (CommonJS) and @licensing/publish from this checkout into a copy of the example's node_modules, and links the
 * rest from the repository's.
 */
import { execFile } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { promisify } from "node:util";
import { gzipSync } from "node:zlib";
import { parse as loadYaml } from "yaml";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
// @ts-expect-error: a plain JavaScript module shared with the benchmark
import { root, startLocalWorker } from "../../scripts/local-worker.mjs";
import { type SeenRequest, nodeUpdater } from "./updater-kit.ts";
import type { JsonBody } from "../json-body.ts";

const run = promisify(execFile);
const KEY = "api_ExampleAdminKey00000000000000000";
const VERSION = "2.1.0-beta.1";
let worker: { url: URL; dispose(): Promise<void> };
let base: string;
let app: string;
let productId: number;
let userKey: string;
let licenseId: number;

const sha512 = (bytes: Buffer) => createHash("sha512").update(bytes).digest("base64");

/** The example's licensing.js, loaded by Node's require from the copy (so it resolves its own node_modules). */
interface Licensing {
  activate(userKey: string): Promise<{ licenseKey: string }>;
  licensed(): Promise<boolean>;
  refresh(): Promise<"valid" | "offline" | "dropped">;
  configureUpdates(updater: unknown, extra?: Record<string, unknown>): Promise<string>;
  decideUpdates(updater: unknown, extra?: Record<string, unknown>): Promise<{ required: boolean; rollback: boolean }>;
}
let example: {
  channelOf(version: string): string;
  createLicensing(options: Record<string, string>): Licensing;
};

async function api(method: string, path: string, body?: unknown): Promise<JsonBody> {
  const res = await fetch(new URL(path, worker.url), {
    method,
    headers: { "x-api-key": KEY, "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return (await res.json()) as JsonBody;
}

/** tsc of the repository, into `outDir`. */
const tsc = (project: string, outDir: string, ...extra: string[]) =>
  run(process.execPath, [join(root, "node_modules/typescript/bin/tsc"), "-p", project, "--outDir", outDir, ...extra], {
    cwd: root,
  });

/** A copy of the example with its dependencies in node_modules, as `npm install` would leave it. */
async function installExample(): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), "example-electron-"));
  cpSync(join(root, "examples/electron"), dir, { recursive: true });
  const modules = join(dir, "node_modules");
  const client = join(modules, "@licensing/client");
  const publisher = join(modules, "@licensing/publish");
  mkdirSync(join(client, "dist/cjs"), { recursive: true });
  mkdirSync(publisher, { recursive: true });
  cpSync(join(root, "client/package.json"), join(client, "package.json"));
  cpSync(join(root, "tools/publish/package.json"), join(publisher, "package.json"));
  await Promise.all([
    tsc("client/tsconfig.cjs.json", join(client, "dist/cjs"), "--declaration", "false"),
    tsc("tools/publish/tsconfig.json", join(publisher, "dist"), "--declaration", "false"),
  ]);
  writeFileSync(join(client, "dist/cjs/package.json"), '{ "type": "commonjs" }\n');
  // Their dependencies, and electron-updater, from the repository's node_modules.
  const deps = (file: string) => Object.keys(JSON.parse(readFileSync(join(root, file), "utf8")).dependencies ?? {});
  for (const name of new Set([
    ...deps("client/package.json"),
    ...deps("tools/publish/package.json"),
    "electron-updater",
  ])) {
    mkdirSync(dirname(join(modules, name)), { recursive: true });
    symlinkSync(join(root, "node_modules", name), join(modules, name), "dir");
  }
  return dir;
}

/** A folder as electron-builder writes `2.1.0-beta.1` for the licensing provider: beta.yml, beta-mac.yml, files. */
function betaBuild(dir: string): Record<string, Buffer> {
  mkdirSync(dir, { recursive: true });
  const bytes: Record<string, Buffer> = {
    [`Studio Setup ${VERSION}.exe`]: randomBytes(150_000),
    [`Studio Setup ${VERSION}.exe.blockmap`]: gzipSync(
      JSON.stringify({ version: "2", files: [{ name: "file", offset: 0, checksums: ["AAAA"], sizes: [150_000] }] }),
    ),
    [`Studio-${VERSION}-arm64-mac.zip`]: randomBytes(90_000),
    [`Studio-${VERSION}-arm64.dmg`]: randomBytes(70_000),
  };
  for (const [name, content] of Object.entries(bytes)) writeFileSync(join(dir, name), content);
  const info = (listed: string[]) =>
    [
      `version: ${VERSION}`,
      "files:",
      ...listed.flatMap((f) => [
        `  - url: ${f}`,
        `    sha512: ${sha512(bytes[f]!)}`,
        `    size: ${bytes[f]!.byteLength}`,
      ]),
      `path: ${listed[0]}`,
      `sha512: ${sha512(bytes[listed[0]!]!)}`,
      "releaseDate: '2026-11-25T08:00:00.000Z'",
      "",
    ].join("\n");
  writeFileSync(join(dir, "beta.yml"), info([`Studio Setup ${VERSION}.exe`]));
  writeFileSync(join(dir, "beta-mac.yml"), info([`Studio-${VERSION}-arm64-mac.zip`, `Studio-${VERSION}-arm64.dmg`]));
  return bytes;
}

/**
 * What electron-builder does with the example's `publish` entry: loads build/electron-publisher-licensing.js, lets
 * the class resolve the entry with the channel of the app's version (detectUpdateChannel), constructs it, uploads
 * the artifacts as they are built (concurrently) and the update-info files last. Prints the resolved entry.
 */
const DRIVER = `
const { readdirSync } = require("node:fs");
const { join } = require("node:path");
const loaded = require("./build/electron-publisher-licensing.js");
const Publisher = loaded.default || loaded;
(async () => {
  const config = JSON.parse(process.argv[2]);
  const version = require("./package.json").version;
  const prerelease = /^\\d+\\.\\d+\\.\\d+-([0-9A-Za-z-]+)/.exec(version);
  if (Publisher.checkAndResolveOptions) await Publisher.checkAndResolveOptions(config, prerelease ? prerelease[1].toLowerCase() : null, true);
  const publisher = new Publisher({ cancellationToken: null, progress: null }, config);
  const files = readdirSync("dist");
  await Promise.all(files.filter((f) => !f.endsWith(".yml")).map((f) => publisher.upload({ file: join("dist", f), arch: 3 })));
  for (const f of files.filter((f) => f.endsWith(".yml"))) await publisher.upload({ file: join("dist", f), arch: null });
  console.log(JSON.stringify(config));
})().catch((e) => { console.error(e.message); process.exit(1); });
`;

beforeAll(async () => {
  [worker, app] = await Promise.all([
    startLocalWorker({
      bindings: {
        Application__JwtSecret: "example-test-jwt-secret-0123456789abcdef",
        Application__EncryptionKey: "example-test-encryption-key",
        Application__AdminUsername: "admin",
        Application__AdminPassword: "Example-12345",
        Application__AdminApiKey: KEY,
      },
    }),
    installExample(),
  ]);
  base = worker.url.toString().replace(/\/$/, "");
  productId = (await api("POST", "/v1/products", { product: { code: "studio", name: "Studio", isApplication: true } }))[
    "productId"
  ];
  const created = await api("POST", "/v1/licenses", {
    license: { productId, licensingMode: "Activation", maxClients: 2, issueDate: "2026-11-01T00:00:00Z" },
  });
  licenseId = created["id"];
  userKey = (await api("GET", `/v1/licenses?filter=${encodeURIComponent(`id == ${licenseId}`)}&select=userKey`))[
    "licenses"
  ][0].userKey;
  example = createRequire(import.meta.url)(join(app, "licensing.js"));
}, 180_000);
afterAll(async () => {
  await worker?.dispose();
  if (app) rmSync(app, { recursive: true, force: true });
});

describe("examples/electron", () => {
  it("activates with the user key, then starts offline on the stored license key, and validates online", async () => {
    const dataDir = join(app, "userData");
    const licensing = example.createLicensing({
      baseUrl: base,
      dataDir,
      appName: "Studio",
      appVersion: "2.1.0-beta.0",
    });
    expect(await licensing.licensed()).toBe(false);
    await expect(licensing.activate("not-a-user-key")).rejects.toMatchObject({
      name: "AuthenticationError",
      message: "Invalid user key.",
    });
    const license = await licensing.activate(userKey);
    expect(license.licenseKey.split(".")).toHaveLength(3);
    expect(await licensing.licensed()).toBe(true);
    expect(statSync(join(dataDir, "license.json")).mode & 0o777).toBe(0o600);
    // The service holds this machine's activation, under the app's name.
    const tokens = await api("GET", `/v1/licenses/${licenseId}/tokens`);
    expect(JSON.stringify(tokens)).toContain('"Studio"');
    // A license key of another product does not pass the offline check.
    const other = example.createLicensing({
      baseUrl: base,
      dataDir,
      appName: "Studio",
      appVersion: "1.0.0",
      productCode: "other",
    });
    expect(await other.licensed()).toBe(false);
    expect(await licensing.refresh()).toBe("valid");
    // The service out of reach: the stored key keeps the app running.
    const offline = example.createLicensing({
      baseUrl: "http://127.0.0.1:9",
      dataDir,
      appName: "Studio",
      appVersion: "2.1.0-beta.0",
    });
    expect(await offline.refresh()).toBe("offline");
    expect(await offline.licensed()).toBe(true);
  });

  it("publishes a 2.1.0-beta.1 build with the example's electron-builder.yml: beta.yml read, on insider, no version given", async () => {
    const config = loadYaml(readFileSync(join(app, "electron-builder.yml"), "utf8")) as {
      publish: Record<string, unknown>;
    };
    expect(config.publish).toMatchObject({ provider: "licensing", product: "studio" });
    expect(config.publish).not.toHaveProperty("channel");
    expect(config.publish).not.toHaveProperty("version");
    const pkg = JSON.parse(readFileSync(join(app, "package.json"), "utf8"));
    writeFileSync(join(app, "package.json"), JSON.stringify({ ...pkg, version: VERSION }));
    betaBuild(join(app, "dist"));
    writeFileSync(join(app, "electron-builder-publish.cjs"), DRIVER);
    const { stdout } = await run(process.execPath, ["electron-builder-publish.cjs", JSON.stringify(config.publish)], {
      cwd: app,
      env: { ...process.env, LICENSING_URL: base, LICENSING_API_KEY: KEY },
    });
    expect(stdout).toContain(`studio ${VERSION}: release`);
    expect(stdout).toContain("(insider)");
    expect(stdout).toContain(`release ${VERSION} is public`);
    const filter = encodeURIComponent(`version == "${VERSION}"`);
    const { productReleases } = await api("GET", `/v1/products/${productId}/releases?filter=${filter}`);
    expect(productReleases).toMatchObject([{ version: VERSION, channel: "insider", public: true }]);
    const { releaseDownloads } = await api(
      "GET",
      `/v1/products/${productId}/releases/${productReleases[0].id}/downloads?take=100`,
    );
    expect(
      releaseDownloads.map((d: { platform: string; fileName: string }) => `${d.platform} ${d.fileName}`).sort(),
    ).toEqual([
      `darwin-arm64 Studio-${VERSION}-arm64-mac.zip`,
      `darwin-arm64 Studio-${VERSION}-arm64.dmg`,
      `win-x64 Studio Setup ${VERSION}.exe`,
      `win-x64 Studio Setup ${VERSION}.exe.blockmap`,
    ]);
  });

  it("drops the stored license key when the service says the license ended", async () => {
    const dataDir = join(app, "userData-revoked");
    const created = await api("POST", "/v1/licenses", {
      license: { productId, licensingMode: "Activation", maxClients: 1, issueDate: "2026-11-01T00:00:00Z" },
    });
    const key = (
      await api("GET", `/v1/licenses?filter=${encodeURIComponent(`id == ${created["id"]}`)}&select=userKey`)
    )["licenses"][0].userKey;
    const licensing = example.createLicensing({ baseUrl: base, dataDir, appName: "Studio", appVersion: "2.0.0" });
    await licensing.activate(key);
    expect(await licensing.licensed()).toBe(true);
    await api("PUT", "/v1/licenses", { license: { id: created["id"], revoked: true } });
    expect(await licensing.refresh()).toBe("dropped");
    expect(await licensing.licensed()).toBe(false);
  });

  it("updates an installed beta with the real electron-updater, configured by the example's code", async () => {
    const bytes = readFileSync(join(app, "dist", `Studio Setup ${VERSION}.exe`));
    const cache = mkdtempSync(join(tmpdir(), "example-updater-"));
    const requests: SeenRequest[] = [];
    const updater = nodeUpdater("2.1.0-beta.0", cache, requests);
    updater.disableDifferentialDownload = true;
    const licensing = example.createLicensing({
      baseUrl: base,
      dataDir: join(app, "userData"),
      appName: "Studio",
      appVersion: "2.1.0-beta.0",
    });
    const feed = await licensing.configureUpdates(updater, { platform: "win-x64" });
    expect(feed).toBe(`${base}/v1/updates/studio/feed/insider/win-x64/`);
    // The install's id, kept in the data folder, and the running version travel with the user key.
    expect(updater.requestHeaders).toEqual({
      "X-Service-User-Key": userKey,
      "X-Service-Install-Id": readFileSync(join(app, "userData", "licensing-install-id"), "utf8").trim(),
      "X-Service-Current-Version": "2.1.0-beta.0",
    });
    // The signed check: an ordinary update, neither required nor a rollback, so no downgrade is allowed.
    expect(await licensing.decideUpdates(updater, { platform: "win-x64" })).toEqual({
      required: false,
      rollback: false,
    });
    expect(updater.allowDowngrade).toBe(false);
    const check = await updater.checkForUpdates();
    expect(check?.isUpdateAvailable).toBe(true);
    expect(check?.updateInfo.version).toBe(VERSION);
    const [file] = await updater.downloadUpdate();
    // electron-updater checked the sha512 the feed gives (the publisher checked it against beta.yml's).
    expect(sha512(readFileSync(file!))).toBe(sha512(bytes));
    expect(requests.some((r) => r.path.startsWith("/v1/updates/studio/feed/insider/win-x64/latest.yml"))).toBe(true);
    // A stable build follows stable, which has no release: the beta is not offered there.
    expect(example.channelOf("2.0.0")).toBe("stable");
    expect(example.channelOf(VERSION)).toBe("insider");
  });
});
