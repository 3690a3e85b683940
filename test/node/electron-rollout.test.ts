/**
 * Release control (CONTRACT section 8) with the real electron-updater (updater-kit.ts), configured by the client
 * package's helper (@licensing/client/electron-updater): installs 1.0.0 on a product with 1.1.0 out to everyone and
 * 2.0.0 rolling out. At 10 % a fixed set of install ids gets 2.0.0 and the rest 1.1.0, on every poll, and the signed
 * update check agrees; a scheduled step turns on when the service's clock passes it (the test entry
 * test/node/clock-worker.ts moves it); after a halt every install is offered 1.1.0; with rollback an install on 2.0.0
 * is told so by the signed check, the helper turns on allowDowngrade, and electron-updater downloads 1.1.0 and runs
 * its installer; below the product's minimum version, or with a newer critical release admissible, the check says
 * `required`. One Worker for the file; the steps build on each other in order.
 */
import { createHash } from "node:crypto";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { NsisUpdater } from "electron-updater";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LicensingClient } from "../../client/src/client";
import { type AutoUpdaterOptions, configureAutoUpdater, signedUpdateCheck } from "../../client/src/electron-updater";
import { INSTALL_ID_FILE, installId } from "../../client/src/node";
// @ts-expect-error: a plain JavaScript module shared with the benchmark
import { startLocalWorker } from "../../scripts/local-worker.mjs";
import type { JsonBody } from "../json-body.ts";
import { CLOCK_ENTRY, moveClock } from "./clock.ts";
import { nodeUpdater } from "./updater-kit.ts";

const KEY = "api_RolloutAdminKey00000000000000000";
const HOUR = 3_600_000;
let worker: { url: URL; dispose(): Promise<void> };
let base: string;
let userKey: string;
let client: LicensingClient;
let productId: number;
const releaseIds: Record<string, number> = {};
const root = mkdtempSync(join(tmpdir(), "rollout-"));

/** The installs: fixed ids, so each lands in the same cohort on every run. */
const INSTALLS = Array.from({ length: 60 }, (_, i) => `00000000-0000-4000-8000-${String(i).padStart(12, "0")}`);

/** CONTRACT section 8's cohort: the first 4 bytes of SHA-256("<releaseId>:<id>"), big-endian, mod 100. */
function bucket(releaseId: number, id: string): number {
  return createHash("sha256").update(`${releaseId}:${id}`).digest().readUInt32BE(0) % 100;
}

// 1.1.0's "installer" is a script that records how electron-updater ran it (the test machine is not Windows).
const marker = join(root, "installed");
const installers: Record<string, Buffer> = {
  "1.0.0": Buffer.alloc(3000, 1),
  "1.1.0": Buffer.from(`#!/bin/sh\necho "1.1.0 $*" > '${marker}'\n${"#".repeat(3000)}\n`),
  "2.0.0": Buffer.alloc(5000, 2),
};
const sha512 = (bytes: Buffer) => createHash("sha512").update(bytes).digest("base64");

async function api(method: string, path: string, body?: unknown): Promise<{ status: number; body: JsonBody }> {
  const res = await fetch(new URL(path, worker.url), {
    method,
    headers: { "x-api-key": KEY, "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: text ? (JSON.parse(text) as JsonBody) : {} };
}

/** A write the test needs to succeed: its answer's body, or the failure with the service's message. */
async function ok(method: string, path: string, body?: unknown): Promise<JsonBody> {
  const res = await api(method, path, body);
  if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body;
}

const putRelease = (version: string, changes: object) =>
  ok("PUT", `/v1/products/${productId}/releases`, { productRelease: { id: releaseIds[version], ...changes } });

/** The helper's options for one install. */
const options = (id: string): AutoUpdaterOptions => ({
  baseUrl: base,
  productCode: "studio",
  userKey,
  platform: "win-x64",
  installId: id,
});

/** The real NsisUpdater of install `id` at `version`, configured by the client helper (its cache kept per install). */
function updater(id: string, version: string): NsisUpdater {
  const cache = join(root, `${id}-${version}`);
  mkdirSync(cache, { recursive: true });
  const u = nodeUpdater(version, cache);
  u.disableDifferentialDownload = true;
  configureAutoUpdater(u, options(id));
  return u;
}

/** What electron-updater offers install `id` at `version`: the feed's version, and whether it would update. */
async function offered(id: string, version = "1.0.0"): Promise<string> {
  const check = await updater(id, version).checkForUpdates();
  return `${check?.updateInfo.version}${check?.isUpdateAvailable ? "" : " (no update)"}`;
}

/** Every install's offer, polled one after another. */
async function offers(version = "1.0.0"): Promise<string[]> {
  const seen: string[] = [];
  for (const id of INSTALLS) seen.push(await offered(id, version));
  return seen;
}

beforeAll(async () => {
  worker = await startLocalWorker({
    entry: CLOCK_ENTRY,
    bindings: {
      Application__JwtSecret: "rollout-test-jwt-secret-0123456789abcdef",
      Application__EncryptionKey: "rollout-test-encryption-key",
      Application__AdminUsername: "admin",
      Application__AdminPassword: "Rollout-12345",
      Application__AdminApiKey: KEY,
    },
  });
  base = worker.url.toString().replace(/\/$/, "");
  productId = (await ok("POST", "/v1/products", { product: { code: "studio", name: "Studio", isApplication: true } }))[
    "productId"
  ];
  for (const [version, date, staging] of [
    ["1.0.0", "2026-01-01T00:00:00Z", 100],
    ["1.1.0", "2026-05-01T00:00:00Z", 100],
    ["2.0.0", "2026-10-01T00:00:00Z", 10],
  ] as const) {
    const id = (
      await ok("POST", `/v1/products/${productId}/releases`, {
        productRelease: { version, public: true, releaseDate: date, stagingPercentage: staging },
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
  const created = await ok("POST", "/v1/licenses", { license: { productId, issueDate: "2026-06-01T00:00:00Z" } });
  userKey = (await ok("GET", `/v1/licenses?filter=${encodeURIComponent(`id == ${created["id"]}`)}&select=userKey`))[
    "licenses"
  ][0].userKey;
  client = new LicensingClient({ baseUrl: base, userKey });
}, 180_000);
afterAll(async () => {
  await worker?.dispose();
  rmSync(root, { recursive: true, force: true });
});

/** The installs admitted to 2.0.0 at `percentage`, by CONTRACT's cohort rule. */
const admittedAt = (percentage: number) => INSTALLS.filter((id) => bucket(releaseIds["2.0.0"]!, id) < percentage);

/** What each install is offered when those admitted to 2.0.0 at `percentage` get it and the rest 1.1.0. */
const expectedAt = (percentage: number) =>
  INSTALLS.map((id) => (admittedAt(percentage).includes(id) ? "2.0.0" : "1.1.0"));

describe("release control with electron-updater", () => {
  it("keeps one random install id per user-data directory", async () => {
    const dir = join(root, "user-data");
    const id = await installId(dir);
    expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(await installId(dir)).toBe(id);
    expect(readFileSync(join(dir, INSTALL_ID_FILE), "utf8").trim()).toBe(id);
    expect(await installId(join(root, "other-user-data"))).not.toBe(id);
    writeFileSync(join(dir, INSTALL_ID_FILE), "not an id");
    const replaced = await installId(dir);
    expect(replaced).not.toBe(id);
    expect(await installId(dir)).toBe(replaced);
    // The helper sends it with the running version, besides the user key.
    const u = updater(replaced, "1.0.0");
    expect(u.requestHeaders).toEqual({
      "X-Service-User-Key": userKey,
      "X-Service-Install-Id": replaced,
      "X-Service-Current-Version": "1.0.0",
    });
    expect(u.allowDowngrade).toBe(false);
  });

  it("at 10 % offers 2.0.0 to a fixed set of installs and 1.1.0 to the rest, on every poll, as the signed check", async () => {
    const admitted = admittedAt(10);
    // The fixed ids fall on both sides (else the test would prove nothing).
    expect(admitted.length).toBeGreaterThan(0);
    expect(admitted.length).toBeLessThan(INSTALLS.length);
    expect(await offers()).toEqual(expectedAt(10));
    expect(await offers()).toEqual(expectedAt(10));
    // The signed update check offers each install the same release and says whether it is admitted.
    for (const id of INSTALLS) {
      const { data, required, rollback } = await signedUpdateCheck(updater(id, "1.0.0"), client, options(id));
      const inside = admitted.includes(id);
      expect([data.release?.version, data.rollout, required, rollback]).toEqual([
        inside ? "2.0.0" : "1.1.0",
        { percentage: 10, admitted: inside },
        false,
        false,
      ]);
      if (!inside) expect(data.latest).toBe("2.0.0");
    }
  });

  it("turns a scheduled step on when the service's clock passes it", async () => {
    const now = await moveClock(worker.url, 0);
    await putRelease("2.0.0", {
      rolloutSchedule: [{ percentage: 50, at: new Date(now.getTime() + HOUR).toISOString() }],
    });
    expect(await offers()).toEqual(expectedAt(10));
    await moveClock(worker.url, 2 * HOUR);
    expect(admittedAt(50).length).toBeGreaterThan(admittedAt(10).length);
    expect(await offers()).toEqual(expectedAt(50));
  });

  it("after a halt offers every install the previous release", async () => {
    await ok("POST", `/v1/products/${productId}/releases/${releaseIds["2.0.0"]}/halt`, { reason: "crashes on start" });
    expect(await offers()).toEqual(INSTALLS.map(() => "1.1.0"));
    // An install already on 2.0.0 keeps it: without rollback, nothing older is installed.
    const [onIt] = admittedAt(50);
    const u = updater(onIt!, "2.0.0");
    const decision = await signedUpdateCheck(u, client, options(onIt!));
    expect([decision.rollback, u.allowDowngrade]).toEqual([false, false]);
    expect((await u.checkForUpdates())?.isUpdateAvailable).toBe(false);
  });

  it("with rollback an install on 2.0.0 downloads 1.1.0 and electron-updater installs it with allowDowngrade", async () => {
    await putRelease("2.0.0", { rollback: true });
    const [onIt] = admittedAt(50);
    // Configured alone (allowDowngrade off), electron-updater refuses the older version the feed now serves.
    const plain = updater(onIt!, "2.0.0");
    const refused = await plain.checkForUpdates();
    expect([refused?.updateInfo.version, refused?.isUpdateAvailable]).toEqual(["1.1.0", false]);
    // The signed check says rollback: the helper allows the downgrade, electron-updater downloads and installs 1.1.0.
    const u = updater(onIt!, "2.0.0");
    const decision = await signedUpdateCheck(u, client, options(onIt!));
    expect([decision.rollback, decision.data.release?.version, decision.data.download?.fileName]).toEqual([
      true,
      "1.1.0",
      "Studio Setup 1.1.0.exe",
    ]);
    expect(u.allowDowngrade).toBe(true);
    const check = await u.checkForUpdates();
    expect([check?.updateInfo.version, check?.isUpdateAvailable]).toEqual(["1.1.0", true]);
    const [file] = await u.downloadUpdate();
    expect(sha512(readFileSync(file!))).toBe(sha512(installers["1.1.0"]!));
    chmodSync(file!, 0o755); // Windows runs an installer without an executable bit; this machine needs one.
    expect(u.install(true, false)).toBe(true);
    await expect
      .poll(() => existsSync(marker) && readFileSync(marker, "utf8"), { timeout: 10_000 })
      .toBe("1.1.0 --updated /S\n");
    // Only a rollback allows it: an install on 1.0.0 is offered 1.1.0 as an ordinary update.
    const older = updater(onIt!, "1.0.0");
    expect((await signedUpdateCheck(older, client, options(onIt!))).rollback).toBe(false);
    expect(older.allowDowngrade).toBe(false);
  });

  it("says required below the minimum version, and for a newer critical release the install is admitted to", async () => {
    await ok("PUT", "/v1/products", { product: { id: productId, minimumVersion: "1.1.0" } });
    const [first, second] = INSTALLS;
    const required = async (id: string, version: string) =>
      (await signedUpdateCheck(updater(id, version), client, options(id))).required;
    expect(await required(first!, "1.0.0")).toBe(true);
    expect(await required(first!, "1.1.0")).toBe(false);
    expect(await required(second!, "1.1.0")).toBe(false);
    // 2.0.0 fixed and critical: required for the installs admitted to it, not for the others.
    await ok("POST", `/v1/products/${productId}/releases/${releaseIds["2.0.0"]}/resume`);
    await putRelease("2.0.0", { rollback: false, critical: true });
    const inside = admittedAt(50)[0]!;
    const outside = INSTALLS.find((id) => !admittedAt(50).includes(id))!;
    expect(await required(inside, "1.1.0")).toBe(true);
    expect(await required(outside, "1.1.0")).toBe(false);
    expect(await offered(inside, "1.1.0")).toBe("2.0.0");
    expect(await offered(outside, "1.1.0")).toBe("1.1.0 (no update)");
  });
});
