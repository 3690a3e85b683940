/**
 * A crash loop (CONTRACT section 13) from the application's side, end to end: a real application process (a child
 * Node process on the project's Node, running the client package's session tracking from its source) records its
 * run with `trackSessions` and dies of an uncaught exception soon after starting, three times; its fourth start sends
 * the crashes. The queue consumer then puts that install in a crash loop on 1.1.0: its signed update check says
 * `rollback: true, rollbackReason: "crashLoop"`, the client helper turns on allowDowngrade, and the real
 * electron-updater (updater-kit.ts), configured by the helper, downloads 1.0.0 and runs its installer. Another
 * install of 1.1.0 that exited cleanly keeps 1.1.0, and the release is not halted: the rollback is that install's
 * alone. One Worker for the file; the steps build on each other in order.
 */
import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import type { NsisUpdater } from "electron-updater";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LicensingClient } from "../../client/src/client";
import { type AutoUpdaterOptions, configureAutoUpdater, signedUpdateCheck } from "../../client/src/electron-updater";
import { SESSIONS_FILE, installId } from "../../client/src/node";
// @ts-expect-error: a plain JavaScript module shared with the benchmark
import { root, startLocalWorker } from "../../scripts/local-worker.mjs";
import type { JsonBody } from "../json-body.ts";
import { nodeUpdater } from "./updater-kit.ts";

const KEY = "api_CrashLoopAdminKey000000000000000";
let worker: { url: URL; dispose(): Promise<void> };
let base: string;
let client: LicensingClient;
let productId: number;
const releaseIds: Record<string, number> = {};
const dir = mkdtempSync(join(tmpdir(), "crash-loop-"));

// 1.0.0's "installer" is a script that records how electron-updater ran it (the test machine is not Windows).
const marker = join(dir, "installed");
const installers: Record<string, Buffer> = {
  "1.0.0": Buffer.from(`#!/bin/sh\necho "1.0.0 $*" > '${marker}'\n${"#".repeat(3000)}\n`),
  "1.1.0": Buffer.alloc(5000, 2),
};
const sha512 = (bytes: Buffer) => createHash("sha512").update(bytes).digest("base64");

/**
 * The application's main process, as far as its sessions go: it starts tracking this run (which sends the sessions
 * earlier runs left), then either dies of an uncaught exception soon after starting (`crash`) or quits cleanly
 * (`quit`). The client's sessions module runs from its source on the project's Node (which strips its types).
 */
const APP = join(dir, "app.mjs");
writeFileSync(
  APP,
  `const [sessionsModule, options, mode] = process.argv.slice(2);
const { trackSessions } = await import(sessionsModule);
const run = await trackSessions(JSON.parse(options));
process.stdout.write(run.sessionId + "\\n");
if (mode === "crash") setTimeout(() => { throw new Error("Cannot read properties of undefined (reading 'window')"); }, 50);
`,
);
const NODE = join(root, "node_modules/.bin/node");
const SESSIONS_MODULE = pathToFileURL(join(root, "client/src/sessions.ts")).href;

/** One run of the application of install `id` at `version`, its user data in `userData`: how it ended. */
function runApp(
  id: string,
  userData: string,
  version: string,
  mode: "crash" | "quit",
): Promise<{ code: number | null; sessionId: string; stderr: string }> {
  const options = {
    baseUrl: base,
    productCode: "studio",
    version,
    platform: "win-x64",
    installId: id,
    directory: userData,
  };
  return new Promise((resolve) => {
    execFile(
      NODE,
      ["--disable-warning=ExperimentalWarning", APP, SESSIONS_MODULE, JSON.stringify(options), mode],
      { cwd: dir, timeout: 60_000 },
      (error, stdout, stderr) =>
        resolve({
          code: error ? (typeof error.code === "number" ? error.code : null) : 0,
          sessionId: stdout.trim(),
          stderr,
        }),
    );
  });
}

/** The sessions waiting in an install's user data: id and status. */
const waiting = (userData: string) =>
  (JSON.parse(readFileSync(join(userData, SESSIONS_FILE), "utf8")) as { id: string; status: string }[]).map(
    ({ id, status }) => ({ id, status }),
  );

async function api(method: string, path: string, body?: unknown): Promise<{ status: number; body: JsonBody }> {
  const res = await fetch(new URL(path, worker.url), {
    method,
    headers: { "x-api-key": KEY, "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: text ? (JSON.parse(text) as JsonBody) : {} };
}

async function ok(method: string, path: string, body?: unknown): Promise<JsonBody> {
  const res = await api(method, path, body);
  if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body;
}

/** 1.1.0's health figures: sessions, crashed sessions, installs. */
async function health(version: string): Promise<[number, number, number]> {
  const data = (await ok("GET", `/v1/products/${productId}/releases/${releaseIds[version]}/health`))["data"];
  return [data["sessions"] ?? 0, data["crashedSessions"] ?? 0, data["installs"] ?? 0];
}

/** The helper's options for one install (anonymous: the releases are open to everyone). */
const options = (id: string): AutoUpdaterOptions => ({
  baseUrl: base,
  productCode: "studio",
  platform: "win-x64",
  installId: id,
});

/** The real NsisUpdater of install `id` at `version`, configured by the client helper (its cache kept per install). */
function updater(id: string, version: string): NsisUpdater {
  const cache = join(dir, `${id}-${version}`);
  mkdirSync(cache, { recursive: true });
  const u = nodeUpdater(version, cache);
  u.disableDifferentialDownload = true;
  configureAutoUpdater(u, options(id));
  return u;
}

/** What electron-updater, configured by the helper alone, offers install `id` at `version`. */
async function offered(id: string, version: string): Promise<string> {
  const check = await updater(id, version).checkForUpdates();
  return `${check?.updateInfo.version}${check?.isUpdateAvailable ? "" : " (no update)"}`;
}

beforeAll(async () => {
  worker = await startLocalWorker({
    bindings: {
      Application__JwtSecret: "crash-loop-test-jwt-secret-0123456789abcd",
      Application__EncryptionKey: "crash-loop-test-encryption-key",
      Application__AdminUsername: "admin",
      Application__AdminPassword: "CrashLoop-12345",
      Application__AdminApiKey: KEY,
      // Releases anyone may install: the installs here update and report without a license.
      Updates__AllowPublicApplicationReleases: "true",
    },
  });
  base = worker.url.toString().replace(/\/$/, "");
  productId = (await ok("POST", "/v1/products", { product: { code: "studio", name: "Studio", isApplication: true } }))[
    "productId"
  ];
  for (const [version, date] of [
    ["1.0.0", "2026-01-01T00:00:00Z"],
    ["1.1.0", "2026-02-01T00:00:00Z"],
  ] as const) {
    const id = (
      await ok("POST", `/v1/products/${productId}/releases`, {
        productRelease: { version, public: true, requiresMaintenance: false, releaseDate: date },
      })
    )["productReleaseId"] as number;
    releaseIds[version] = id;
    const form = new FormData();
    form.set("platform", "win-x64");
    form.set("kind", "installer");
    form.set("file", new Blob([installers[version]!]), `Studio Setup ${version}.exe`);
    const res = await fetch(new URL(`/v1/products/${productId}/releases/${id}/downloads`, worker.url), {
      method: "POST",
      headers: { "x-api-key": KEY },
      body: form,
    });
    if (res.status !== 201) throw new Error(`upload ${version}: ${res.status} ${await res.text()}`);
  }
  client = new LicensingClient({ baseUrl: base });
}, 180_000);
afterAll(async () => {
  await worker?.dispose();
  rmSync(dir, { recursive: true, force: true });
});

describe("a crash loop with the client package and electron-updater", () => {
  const userDataA = join(dir, "user-data-a");
  const userDataB = join(dir, "user-data-b");
  let a: string;
  let b: string;

  it("an install of 1.1.0 that crashes on start three times is rolled back to 1.0.0 by electron-updater", async () => {
    a = await installId(userDataA);
    // On 1.1.0, before any crash: nothing to install.
    expect(await offered(a, "1.1.0")).toBe("1.1.0 (no update)");

    // Three starts, each dying of an uncaught exception soon after: each crash is on disk when the process is gone.
    const crashed: string[] = [];
    for (let i = 0; i < 3; i++) {
      const run = await runApp(a, userDataA, "1.1.0", "crash");
      expect(run.code, run.stderr).toBe(1);
      expect(run.stderr).toContain("Cannot read properties of undefined (reading 'window')");
      crashed.push(run.sessionId);
      expect(waiting(userDataA)).toEqual([{ id: run.sessionId, status: "crashed" }]);
    }
    expect(new Set(crashed).size).toBe(3);
    // The fourth start sends the last crash (the first two went with the second and third starts) and quits cleanly:
    // only its own end waits, for the next start.
    const fourth = await runApp(a, userDataA, "1.1.0", "quit");
    expect(fourth.code, fourth.stderr).toBe(0);
    expect(waiting(userDataA)).toEqual([{ id: fourth.sessionId, status: "exited" }]);

    // The queue consumer counts the three crashes for 1.1.0 (the fourth run is not final as the service sees it).
    await expect.poll(() => health("1.1.0"), { timeout: 30_000, interval: 500 }).toEqual([3, 3, 1]);

    // Within seconds the signed update check says rollback, for the crash loop, offering 1.0.0.
    const u = updater(a, "1.1.0");
    await expect
      .poll(
        async () => {
          const decision = await signedUpdateCheck(u, client, options(a));
          return [decision.rollback, decision.rollbackReason, decision.data.rollbackReason];
        },
        { timeout: 30_000, interval: 500 },
      )
      .toEqual([true, "crashLoop", "crashLoop"]);
    const decision = await signedUpdateCheck(u, client, options(a));
    expect([decision.data.release?.version, decision.data.download?.fileName, decision.required]).toEqual([
      "1.0.0",
      "Studio Setup 1.0.0.exe",
      false,
    ]);
    expect(u.allowDowngrade).toBe(true);

    // The feed offers the install 1.0.0 too; configured alone (allowDowngrade off), electron-updater refuses it.
    expect(await offered(a, "1.1.0")).toBe("1.0.0 (no update)");
    // With the helper's signed decision it downloads 1.0.0 and runs its installer.
    const check = await u.checkForUpdates();
    expect([check?.updateInfo.version, check?.isUpdateAvailable]).toEqual(["1.0.0", true]);
    const [file] = await u.downloadUpdate();
    expect(sha512(readFileSync(file!))).toBe(sha512(installers["1.0.0"]!));
    chmodSync(file!, 0o755); // Windows runs an installer without an executable bit; this machine needs one.
    expect(u.install(true, false)).toBe(true);
    await expect
      .poll(() => existsSync(marker) && readFileSync(marker, "utf8"), { timeout: 10_000 })
      .toBe("1.0.0 --updated /S\n");

    // Back on 1.0.0, the install is not offered the version it crashed on again (decision 0037).
    const back = updater(a, "1.0.0");
    const after = await signedUpdateCheck(back, client, options(a));
    expect([after.rollback, after.rollbackReason, back.allowDowngrade]).toEqual([false, undefined, false]);
    expect(await offered(a, "1.0.0")).toBe("1.0.0 (no update)");
  });

  it("another install of 1.1.0 that exited cleanly keeps it, and the release goes on for everyone else", async () => {
    b = await installId(userDataB);
    expect(b).not.toBe(a);
    // A clean run, then a start that sends its end.
    const first = await runApp(b, userDataB, "1.1.0", "quit");
    expect(first.code, first.stderr).toBe(0);
    expect(waiting(userDataB)).toEqual([{ id: first.sessionId, status: "exited" }]);
    const second = await runApp(b, userDataB, "1.1.0", "quit");
    expect(second.code, second.stderr).toBe(0);
    expect(waiting(userDataB)).toEqual([{ id: second.sessionId, status: "exited" }]);
    await expect.poll(() => health("1.1.0"), { timeout: 30_000, interval: 500 }).toEqual([4, 3, 2]);

    // Its signed check and electron-updater: nothing to install, no downgrade.
    const u = updater(b, "1.1.0");
    const decision = await signedUpdateCheck(u, client, options(b));
    expect([decision.rollback, decision.rollbackReason, decision.data.updateAvailable, u.allowDowngrade]).toEqual([
      false,
      undefined,
      false,
      false,
    ]);
    const check = await u.checkForUpdates();
    expect([check?.updateInfo.version, check?.isUpdateAvailable]).toEqual(["1.1.0", false]);
    // The release is not halted: a new install on 1.0.0 is offered 1.1.0, while install A still is not.
    const filter = encodeURIComponent(`id == ${releaseIds["1.1.0"]}`);
    const [release] = (await ok("GET", `/v1/products/${productId}/releases?filter=${filter}`))["productReleases"];
    expect(release).toMatchObject({ version: "1.1.0", halted: false });
    expect(await offered(crypto.randomUUID(), "1.0.0")).toBe("1.1.0");
    expect(await offered(a, "1.0.0")).toBe("1.0.0 (no update)");
  });
});
