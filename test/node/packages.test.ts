/**
 * The packages install and run as a vendor uses them: `npm pack` of client/ (@licensing/client) and tools/publish
 * (@licensing/publish), `npm install` of both tarballs into a clean directory, then the documented examples from
 * there against the bundled Worker: the client over REST and gRPC-Web from ES modules and CommonJS, the machine id
 * and electron-updater helpers, and the licensing-publish command from node_modules/.bin.
 */
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
// @ts-expect-error: a plain JavaScript module shared with the benchmark
import { root, startLocalWorker } from "../../scripts/local-worker.mjs";
import type { JsonBody } from "../json-body.ts";
import { type Certificates, type LocalServer, forward, httpsServer, makeCertificates } from "./tls-kit.ts";

const run = promisify(execFile);
const KEY = "api_PackagesAdminKey0000000000000000";
const npm = (args: string[], cwd: string) =>
  run("npm", [...args, "--no-audit", "--no-fund", "--loglevel=error"], { cwd, maxBuffer: 16 * 1024 * 1024 });
let worker: { url: URL; dispose(): Promise<void> };
let app: string;
let base: string;
let userKey: string;

async function api(method: string, path: string, body?: unknown): Promise<JsonBody> {
  const res = await fetch(new URL(path, worker.url), {
    method,
    headers: { "x-api-key": KEY, "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return (await res.json()) as JsonBody;
}

beforeAll(async () => {
  worker = await startLocalWorker({
    bindings: {
      Application__JwtSecret: "packages-test-jwt-secret-0123456789abcdef",
      Application__EncryptionKey: "packages-test-encryption-key",
      Application__AdminUsername: "admin",
      Application__AdminPassword: "Packages-12345",
      Application__AdminApiKey: KEY,
    },
  });
  base = worker.url.toString().replace(/\/$/, "");
  const productId = (
    await api("POST", "/v1/products", { product: { code: "studio", name: "Studio", isApplication: true } })
  )["productId"];
  const created = await api("POST", "/v1/licenses", {
    license: { productId, licensingMode: "Activation", maxClients: 3, edition: "Ultimate" },
  });
  userKey = (await api("GET", `/v1/licenses?filter=${encodeURIComponent(`id == ${created["id"]}`)}&select=userKey`))[
    "licenses"
  ][0].userKey;

  // A clean directory, as a vendor's app: the two tarballs and nothing of this repository.
  app = mkdtempSync(join(tmpdir(), "vendor-app-"));
  await npm(["pack", "--pack-destination", app], join(root, "client"));
  await npm(["pack", "--pack-destination", app], join(root, "tools/publish"));
  const tarballs = readdirSync(app).filter((f) => f.endsWith(".tgz"));
  expect(tarballs.sort()).toEqual([
    expect.stringMatching(/^licensing-client-.*\.tgz$/),
    expect.stringMatching(/^licensing-publish-.*\.tgz$/),
  ]);
  writeFileSync(
    join(app, "package.json"),
    JSON.stringify({ name: "vendor-app", version: "1.0.0", private: true, type: "module" }),
  );
  await npm(["install", "--prefer-offline", ...tarballs.map((t) => `./${t}`)], app);
}, 240_000);
afterAll(async () => {
  await worker?.dispose();
  if (app) rmSync(app, { recursive: true, force: true });
});

describe("@licensing/client installed from its tarball", () => {
  it("runs from ES modules: REST, gRPC-Web from its own entry point, reasons, machine id and the autoUpdater helper", async () => {
    writeFileSync(
      join(app, "example.mjs"),
      `
import { LicensingClient, LicensingError } from "@licensing/client";
import { grpcWeb } from "@licensing/client/grpc-web";
import { installId, machineId } from "@licensing/client/node";
import { configureAutoUpdater } from "@licensing/client/electron-updater";
const [baseUrl, userKey] = process.argv.slice(2);
const install = await installId("user-data");
const id = await machineId({ salt: "studio" });
const rest = new LicensingClient({ baseUrl, userKey });
const activated = await rest.activate({ machineId: id, clientName: "Vendor app" });
const grpc = new LicensingClient({ baseUrl, userKey, transport: grpcWeb });
const validated = await grpc.validate({ machineId: id });
let reason;
try { await rest.validate({ machineId: "never-activated" }); } catch (e) { reason = e instanceof LicensingError ? e.reason : String(e); }
const updater = { requestHeaders: null, setFeedURL(o) { this.feed = o; } };
configureAutoUpdater(updater, { baseUrl, productCode: "studio", userKey, platform: "darwin-arm64", installId: install, currentVersion: "1.0.0" });
console.log(JSON.stringify({ idLength: id.length, activated: activated.activeClientCount, transport: grpc.transport, status: validated.status, reason, feed: updater.feed, headers: updater.requestHeaders, kept: install === await installId("user-data"), allowDowngrade: updater.allowDowngrade }));
`,
    );
    const { stdout } = await run(process.execPath, ["example.mjs", base, userKey], { cwd: app });
    expect(JSON.parse(stdout)).toEqual({
      idLength: 64,
      activated: 1,
      transport: "grpc-web",
      status: "Activated",
      reason: "notActivated",
      feed: { provider: "generic", url: `${base}/v1/updates/studio/feed/stable/darwin-arm64/` },
      headers: {
        "X-Service-User-Key": userKey,
        "X-Service-Install-Id": readFileSync(join(app, "user-data/licensing-install-id"), "utf8").trim(),
        "X-Service-Current-Version": "1.0.0",
      },
      kept: true,
      allowDowngrade: false,
    });
  });

  it("runs from CommonJS, and REST users do not load the gRPC-Web code", async () => {
    writeFileSync(
      join(app, "example.cjs"),
      `
const { LicensingClient } = require("@licensing/client");
const { machineId } = require("@licensing/client/node");
(async () => {
  const [baseUrl, userKey] = process.argv.slice(2);
  const client = new LicensingClient({ baseUrl, userKey });
  const { status } = await client.validate({ machineId: await machineId({ salt: "studio" }) });
  let refused;
  try { new LicensingClient({ baseUrl, transport: "grpc-web" }); } catch (e) { refused = e.message; }
  const loaded = Object.keys(require.cache).some((f) => f.includes("connect-web") || f.endsWith("grpc.js"));
  console.log(JSON.stringify({ status, refused, loaded }));
})();
`,
    );
    const { stdout } = await run(process.execPath, ["example.cjs", base, userKey], { cwd: app });
    expect(JSON.parse(stdout)).toEqual({
      status: "Activated",
      refused: expect.stringContaining("@licensing/client/grpc-web"),
      loaded: false,
    });
  });

  it("runs the offline helpers from ES modules and CommonJS: an air-gapped request code with its QR code, its LRS2 response verified with no network, a license file checked out and verified", async () => {
    const script = (load: string) => `
${load}
(async () => {
  const [baseUrl, userKey] = process.argv.slice(2);
  const request = createActivationRequest({ userKey, machineId: "PC-OFF", productCode: "studio" });
  const decoded = decodeRequestCode(request.requestCode.toLowerCase());
  const client = new LicensingClient({ baseUrl, userKey });
  await client.activate({ machineId: "PC-OFF" });
  const { licenseFile } = await client.checkout({ machineId: "PC-OFF", encrypt: true });
  const jwks = await client.getSigningKeys();
  const file = await verifyLicenseFile(licenseFile, { jwks, machineId: "PC-OFF", userKey });
  const answer = await (await fetch(baseUrl + "/v1/license/offline-activation", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ requestCode: request.requestCode }),
  })).json();
  globalThis.fetch = () => { throw new Error("the response code was verified with the network"); };
  const options = { jwks, machineId: "PC-OFF", nonce: request.nonce, productCode: "studio" };
  const response = await verifyActivationResponse(answer.responseCode, options);
  const refused = await verifyActivationResponse(answer.responseCode, { ...options, machineId: "PC-2" }).catch((e) => e.reason);
  console.log(JSON.stringify({ machine: decoded.machineId, nonce: decoded.nonce === request.nonce, svg: request.qrSvg.startsWith("<svg"), opened: file.machine.machineId, product: file.entitlements.productCode, code: answer.responseCode.slice(0, 5), short: answer.responseCode.length <= 400, edition: response.license.edition, refused }));
})();
`;
    writeFileSync(
      join(app, "offline.mjs"),
      script(
        'import { LicensingClient, createActivationRequest, decodeRequestCode, verifyActivationResponse, verifyLicenseFile } from "@licensing/client";',
      ),
    );
    writeFileSync(
      join(app, "offline.cjs"),
      script(
        'const { LicensingClient, createActivationRequest, decodeRequestCode, verifyActivationResponse, verifyLicenseFile } = require("@licensing/client");',
      ),
    );
    for (const file of ["offline.mjs", "offline.cjs"]) {
      const { stdout } = await run(process.execPath, [file, base, userKey], { cwd: app });
      expect(JSON.parse(stdout), file).toEqual({
        machine: "PC-OFF",
        nonce: true,
        svg: true,
        opened: "PC-OFF",
        product: "studio",
        code: "LRS2-",
        short: true,
        edition: "Ultimate",
        refused: "machine",
      });
    }
  });

  it("ships types, a license and dependency ranges", async () => {
    const manifest = JSON.parse(
      (
        await run(
          process.execPath,
          ["-e", 'process.stdout.write(JSON.stringify(require("@licensing/client/package.json")))'],
          { cwd: app },
        )
      ).stdout,
    );
    expect(manifest.license).toBe("MIT");
    for (const range of Object.values(manifest.dependencies as Record<string, string>)) expect(range).toMatch(/^\^/);
    expect(readdirSync(join(app, "node_modules/@licensing/client/dist/esm"))).toEqual(
      expect.arrayContaining(["index.d.ts", "grpc-web.d.ts", "node.d.ts", "electron-updater.d.ts"]),
    );
    expect(readdirSync(join(app, "node_modules/@licensing/client/dist/cjs"))).toEqual(
      expect.arrayContaining(["index.d.ts", "index.js", "package.json"]),
    );
  });
});

describe("both packages behind a self-signed certificate", () => {
  let certs: Certificates;
  let tls: LocalServer;
  beforeAll(async () => {
    certs = makeCertificates();
    tls = await httpsServer(certs.selfSigned, (req, res) => forward(req, res, worker.url));
  });
  afterAll(async () => {
    await tls?.close();
    certs?.dispose();
  });

  it("name the certificate and its fix, and get through with trustingFetch({ ca }) and licensing-publish --ca", async () => {
    writeFileSync(
      join(app, "tls.mjs"),
      `
import { readFileSync } from "node:fs";
import { LicensingClient, NetworkError } from "@licensing/client";
import { trustingFetch } from "@licensing/client/node";
const [baseUrl, caFile] = process.argv.slice(2);
let refused;
try { await new LicensingClient({ baseUrl }).getSigningKeys(); } catch (e) { refused = e instanceof NetworkError ? [e.code, e.message] : String(e); }
const fetch = trustingFetch({ ca: readFileSync(caFile, "utf8") });
const { keys } = await new LicensingClient({ baseUrl, fetch }).getSigningKeys();
await fetch.close();
console.log(JSON.stringify({ refused, keys: keys.length }));
`,
    );
    const env = { ...process.env, NODE_EXTRA_CA_CERTS: "" };
    const { stdout } = await run(process.execPath, ["tls.mjs", tls.url, certs.selfSigned.certFile], { cwd: app, env });
    const result = JSON.parse(stdout) as { refused: [string, string]; keys: number };
    expect(result.refused[0]).toBe("DEPTH_ZERO_SELF_SIGNED_CERT");
    expect(result.refused[1]).toContain("self-signed certificate: pass fetch: trustingFetch({ ca })");
    expect(result.keys).toBeGreaterThan(0);

    const bin = join(app, "node_modules/.bin/licensing-publish");
    const dist = join(app, "dist-tls");
    await run(process.execPath, [join(root, "scripts/sample-dist.mjs"), "--out", dist, "--version", "1.3.0"]);
    const publish = (...extra: string[]) =>
      run(bin, ["--url", tls.url, "--product", "studio", "--dir", dist, "--json", ...extra], {
        cwd: app,
        env: { ...env, LICENSING_API_KEY: KEY },
      });
    await expect(publish()).rejects.toMatchObject({
      code: 1,
      stderr: expect.stringContaining("self-signed certificate: pass --ca FILE or set NODE_EXTRA_CA_CERTS"),
    });
    const { stdout: published } = await publish("--ca", certs.selfSigned.certFile);
    expect(JSON.parse(published)).toMatchObject({
      created: true,
      uploaded: expect.arrayContaining(["Studio Setup 1.3.0.exe"]),
    });
  });
});

describe("@licensing/publish installed from its tarball", () => {
  it("runs licensing-publish from node_modules/.bin: help, a usage error, then a real publish as JSON", async () => {
    const bin = join(app, "node_modules/.bin/licensing-publish");
    expect((await run(bin, ["--help"], { cwd: app })).stdout).toContain("Usage: licensing-publish");
    await expect(
      run(bin, ["--product", "studio"], { cwd: app, env: { ...process.env, LICENSING_URL: "" } }),
    ).rejects.toMatchObject({ code: 2 });
    const dist = join(app, "dist");
    await run(process.execPath, [join(root, "scripts/sample-dist.mjs"), "--out", dist, "--version", "1.1.0"]);
    const { stdout } = await run(bin, ["--url", base, "--product", "studio", "--dir", dist, "--public", "--json"], {
      cwd: app,
      env: { ...process.env, LICENSING_API_KEY: KEY },
    });
    expect(JSON.parse(stdout)).toMatchObject({
      created: true,
      uploaded: expect.arrayContaining(["Studio Setup 1.1.0.exe", "Studio-1.1.0-arm64-mac.zip"]),
    });
    const feed = await fetch(`${base}/v1/updates/studio/feed/stable/darwin-arm64/latest-mac.yml`, {
      headers: { "X-Service-User-Key": userKey },
    });
    expect(feed.status).toBe(200);
    expect(await feed.text()).toContain('version: "1.1.0"');
  });

  it("publishes through electron-builder's custom-provider interface: loaded as electron-builder loads it, upload per file", async () => {
    // What electron-builder does for `publish: {provider: "licensing"}`: require build/electron-publisher-licensing.js,
    // take its default export, construct it with (context, publishConfig), and upload each file as it is built.
    writeFileSync(
      join(app, "electron-publisher-licensing.cjs"),
      'module.exports = require("@licensing/publish/electron-builder");\n',
    );
    writeFileSync(
      join(app, "package.json"),
      JSON.stringify({ name: "vendor-app", version: "1.2.0", private: true, type: "module" }),
    );
    const dist = join(app, "dist-eb");
    await run(process.execPath, [join(root, "scripts/sample-dist.mjs"), "--out", dist, "--version", "1.2.0"]);
    writeFileSync(
      join(app, "electron-builder-publish.cjs"),
      `
const { readdirSync } = require("node:fs");
const { join } = require("node:path");
const module_ = require("./electron-publisher-licensing.cjs");
const Publisher = module_.default || module_;
(async () => {
  const publisher = new Publisher({ cancellationToken: null, progress: null }, { provider: "licensing", url: process.argv[2], product: "studio", public: true });
  const dir = process.argv[3];
  // Artifacts first (concurrently, as electron-builder does), then the update-info files.
  const files = readdirSync(dir);
  await Promise.all(files.filter((f) => !f.endsWith(".yml")).map((f) => publisher.upload({ file: join(dir, f), arch: 1 })));
  for (const f of files.filter((f) => f.endsWith(".yml"))) await publisher.upload({ file: join(dir, f), arch: null });
  console.log(String(publisher));
})().catch((e) => { console.error(e); process.exit(1); });
`,
    );
    const { stdout } = await run(process.execPath, ["electron-builder-publish.cjs", base, dist], {
      cwd: app,
      env: { ...process.env, LICENSING_API_KEY: KEY },
    });
    expect(stdout).toContain("Licensing service (product: studio");
    expect(stdout, stdout).toContain("release 1.2.0 is public");
    const feed = await fetch(`${base}/v1/updates/studio/feed/stable/darwin-x64/latest-mac.yml`, {
      headers: { "X-Service-User-Key": userKey },
    });
    expect(feed.status).toBe(200);
    const yaml = await feed.text();
    expect(yaml).toContain('version: "1.2.0"');
    expect(yaml).toContain("Studio-1.2.0-mac.zip?token=");
    const releases = await api("GET", `/v1/products?filter=${encodeURIComponent('code == "studio"')}&select=id`);
    const productId = releases["products"][0].id;
    const list = await api(
      "GET",
      `/v1/products/${productId}/releases?filter=${encodeURIComponent('version == "1.2.0"')}`,
    );
    const downloads = await api(
      "GET",
      `/v1/products/${productId}/releases/${list["productReleases"][0].id}/downloads?take=100`,
    );
    expect(downloads["releaseDownloads"].map((d: { fileName: string }) => d.fileName).sort()).toEqual(
      [
        "Studio Setup 1.2.0.exe",
        "Studio Setup 1.2.0.exe.blockmap",
        "Studio-1.2.0-arm64-mac.zip",
        "Studio-1.2.0-arm64-mac.zip.blockmap",
        "Studio-1.2.0-mac.zip",
        "Studio-1.2.0-mac.zip.blockmap",
        "Studio-1.2.0.AppImage",
      ].sort(),
    );
  });
});
