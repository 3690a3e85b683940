/**
 * Crash loops (CONTRACT section 13; src/updates/crash-loops.ts), through the public routes: an install whose last
 * three sessions of a version all crashed within ten minutes of starting is offered the previous release as a
 * rollback (`rollback: true, rollbackReason: "crashLoop"`) by the signed update check and the electron-updater feed,
 * alone: another install on the same release keeps it. So by every other format, by the install id header, each read
 * as its updater reads it: Squirrel.Windows, Velopack, Tauri (dynamic and static), Squirrel.Mac list the previous
 * release; Sparkle's appcast names it too, which Sparkle does not install (only an item above CFBundleVersion), so it
 * cannot roll back. Crashes late after starting, or a clean end last, are no crash loop; the sessions of an address
 * beyond the honest counts still count for their install's own loop. Once back on the previous release, the install
 * is not offered the version it crashed on again (on any format), but is offered the next one; a session of that
 * version that did not crash ends the loop.
 */
import { exports } from "cloudflare:workers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse as parseYaml } from "yaml";
import { type UploadOptions, bytesOf, unique, upload } from "./artifacts-kit";
import { BASE, admin, setSetting } from "./helpers";
import { ago, ping } from "./health-kit";
import { readAppcast, sparkleFinds } from "./sparkle-reader";

const PLATFORM = "win-x64";
const MAC = "darwin-arm64";
/** A minisign text as `tauri build` writes it (the product has no tauriPublicKey: not verified). */
const TAURI_SIGNATURE = "dW50cnVzdGVkIGNvbW1lbnQ6IHRhdXJpIHNpZ25hdHVyZQ==";
/** An EdDSA signature's form as Sparkle's sign_update writes it: base64 of 64 bytes (no sparklePublicKey: not verified). */
const sparkleSignature = (seed: number) => btoa(String.fromCharCode(...bytesOf(64, seed)));

async function app(...versions: string[]) {
  const code = `loop-${unique()}`;
  const res = await admin("POST", "/v1/products", { product: { code, name: "Loop", isApplication: true } });
  expect(res.status, res.text).toBe(200);
  const productId = res.body["productId"] as number;
  for (const version of versions) await release(productId, version);
  return { productId, code };
}

/**
 * A public release anyone may install, with a Windows installer (the update check's and electron-updater's file);
 * `everyFormat` adds what each other updater installs: a Windows full package (Squirrel.Windows, Velopack; the
 * service takes its SHA-1), a macOS zip with a signature of Sparkle's form (Sparkle, Squirrel.Mac) and a macOS
 * archive with a Tauri signature (Tauri).
 */
async function release(productId: number, version: string, everyFormat = false): Promise<void> {
  const res = await admin("POST", `/v1/products/${productId}/releases`, {
    productRelease: { version, public: true, requiresMaintenance: false },
  });
  expect(res.status, res.text).toBe(200);
  const id = res.body["productReleaseId"] as number;
  const files: [UploadOptions, number][] = [[{ platform: PLATFORM, fileName: `Loop-${version}-setup.exe` }, 700]];
  if (everyFormat)
    files.push(
      [{ platform: PLATFORM, kind: "package", fileName: `Loop-${version}-full.nupkg` }, 800],
      [{ platform: MAC, kind: "zip", fileName: `Loop-${version}-arm64-mac.zip`, signature: sparkleSignature(id) }, 900],
      [
        { platform: MAC, kind: "archive", fileName: `Loop_${version}_aarch64.app.tar.gz`, signature: TAURI_SIGNATURE },
        1000,
      ],
    );
  for (const [options, size] of files) {
    const path = `/v1/products/${productId}/releases/${id}/downloads`;
    const up = await upload(path, bytesOf(size, id * 10 + size), { ...options, partName: options.fileName });
    expect(up.status, up.text).toBe(201);
  }
}

interface Check {
  release?: { version: string };
  updateAvailable: boolean;
  rollback: boolean;
  rollbackReason?: string;
}

/** The signed update check's data and electron-updater's feed (latest.yml) for an install running `version`. */
async function ask(code: string, install: string, version: string) {
  const get = (path: string, headers: Record<string, string>) =>
    exports.default.fetch(`${BASE}${path}`, { headers: { "X-Service-Install-Id": install, ...headers } });
  const checked = await get(`/v1/updates/${code}?platform=${PLATFORM}&version=${version}`, {});
  expect(checked.status).toBe(200);
  const check = ((await checked.json()) as { data: Check }).data;
  const fed = await get(`/v1/updates/${code}/feed/stable/${PLATFORM}/latest.yml`, {
    "X-Service-Current-Version": version,
  });
  const feed = fed.status === 200 ? (parseYaml(await fed.text()) as { version: string }) : null;
  return { check, feed: feed?.version ?? null };
}

/** The last segment of a download URL: the file an updater downloads. */
const fileOf = (url: string) => decodeURIComponent(new URL(url).pathname.split("/").pop()!);

/**
 * What each other updater is answered for an install running `version`, read as it reads its feed, each offer as
 * `version file` (the file the updater would download):
 * - Squirrel.Windows: RELEASES' `SHA1 URL size` lines, the version from the package name as Squirrel takes it, and
 *   `takes`, UpdateInfo's choice (the newest full package when its version is not the running one, else nothing);
 * - Velopack: releases.win.json's Full and Delta assets;
 * - Tauri: the dynamic route's `version` and `url` (null for 204), and the static tauri.json's `version` with its
 *   platforms;
 * - Squirrel.Mac: the zip its JSON's `url` names (null for 204);
 * - Sparkle: the appcast's items, and `finds`, the item Sparkle installs on an app whose CFBundleVersion is `version`.
 * Each gets the install id header (and the running version in the URL, or in X-Service-Current-Version where the
 * URL does not say it).
 */
async function formats(code: string, install: string, version: string) {
  const get = async (path: string, current = false) => {
    const headers: Record<string, string> = { "X-Service-Install-Id": install };
    if (current) headers["X-Service-Current-Version"] = version;
    const res = await exports.default.fetch(`${BASE}/v1/updates/${code}/${path}`, { headers });
    expect([200, 204], `${path}: ${res.status}`).toContain(res.status);
    return res.status === 204 ? null : res.text();
  };
  const releases = (await get(`squirrel-win/${PLATFORM}/RELEASES?localVersion=${version}`)) ?? "";
  const lines = releases.split("\n").filter((l) => l.trim() !== "");
  const squirrel = lines.map((line) => {
    const m = /^([0-9A-F]{40}) (\S+) (\d+)$/.exec(line);
    expect(m, line).not.toBeNull();
    const file = fileOf(m![2]!);
    const full = /-(\d+\.\d+\.\d+)-full\.nupkg$/.exec(file);
    return { offer: `${full?.[1] ?? "?"} ${file}`, version: full?.[1] };
  });
  const newestFull = squirrel
    .map((e) => e.version)
    .filter((v) => v !== undefined)
    .sort((a, b) => a.localeCompare(b, "en", { numeric: true }))
    .at(-1);
  const velopack = JSON.parse((await get(`velopack/${PLATFORM}/releases.win.json?localVersion=${version}`))!) as {
    Assets: { Version: string; Type: string; FileName: string }[];
  };
  const tauri = await get(`tauri/darwin/aarch64/${version}`);
  const tauriDynamic = tauri === null ? null : (JSON.parse(tauri) as { version: string; url: string });
  const tauriJson = await get("tauri.json", true);
  const tauriStatic =
    tauriJson === null
      ? null
      : (JSON.parse(tauriJson) as { version: string; platforms: Record<string, { url: string }> });
  const mac = await get(`squirrel-mac/${MAC}/${version}`);
  const appcast = (await get(`appcast.xml?platform=${MAC}`, true))!;
  const found = sparkleFinds(appcast, { bundleVersion: version, osVersion: "14.5" });
  return {
    squirrelWindows: {
      lists: squirrel.map((e) => e.offer),
      takes: newestFull !== undefined && newestFull !== version ? newestFull : null,
    },
    velopack: velopack.Assets.map((a) => `${a.Version} ${a.FileName} ${a.Type}`),
    tauri: tauriDynamic && `${tauriDynamic.version} ${fileOf(tauriDynamic.url)}`,
    tauriStatic:
      tauriStatic &&
      `${tauriStatic.version} ${Object.entries(tauriStatic.platforms)
        .map(([key, p]) => `${key}:${fileOf(p.url)}`)
        .join(",")}`,
    squirrelMac: mac && fileOf((JSON.parse(mac) as { url: string }).url),
    sparkle: {
      items: readAppcast(appcast).items.map((i) => `${i.version} ${fileOf(i.enclosure!.url!)}`),
      finds: found ? found.item.version : null,
    },
  };
}

/** What `formats` reads when each format offers `version` to an install running another one. */
const offering = (version: string) => ({
  squirrelWindows: { lists: [`${version} Loop-${version}-full.nupkg`], takes: version },
  velopack: [`${version} Loop-${version}-full.nupkg Full`],
  tauri: `${version} Loop_${version}_aarch64.app.tar.gz`,
  tauriStatic: `${version} darwin-aarch64:Loop_${version}_aarch64.app.tar.gz`,
  squirrelMac: `Loop-${version}-arm64-mac.zip`,
  sparkle: { items: [`${version} Loop-${version}-arm64-mac.zip`], finds: version as string | null },
});

/**
 * What `formats` reads when no format offers anything newer to an install running `version`: Squirrel.Windows lists
 * the install's own package (it refuses an empty RELEASES) and takes nothing, Velopack's Assets are empty, Tauri's
 * dynamic route and Squirrel.Mac answer 204, the static tauri.json and Sparkle's appcast name the running version,
 * which neither installs.
 */
const nothingNewer = (version: string) => ({
  ...offering(version),
  squirrelWindows: { lists: [`${version} Loop-${version}-full.nupkg`], takes: null },
  velopack: [],
  tauri: null,
  squirrelMac: null,
  sparkle: { items: [`${version} Loop-${version}-arm64-mac.zip`], finds: null },
});

/** What an install is answered once `reached` holds (the queue writes the sessions within moments), or the last. */
async function answered(code: string, install: string, version: string, reached: (c: Check) => boolean) {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const answer = await ask(code, install, version);
    if (reached(answer.check) || Date.now() > deadline) return answer;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/** Sessions start in the order they are sent: ten seconds apart, from an hour ago. */
let started = 0;

/** One ping of an install's sessions of `version`: each `[status, durationMs]`, oldest first. */
async function sessions(code: string, install: string, version: string, list: [string, number][], ip?: string) {
  const body = {
    version,
    platform: PLATFORM,
    sessions: list.map(([status, durationMs]) => ({
      id: `s-${unique()}`,
      status,
      startedAt: ago(3_600_000 - ++started * 10_000),
      durationMs,
    })),
  };
  const res = await ping(code, body, { install, ...(ip ? { ip } : {}) });
  expect(res.status, res.text).toBe(202);
}

const crash = (ms = 5_000): [string, number] => ["crashed", ms];
const quiet = (): [string, number] => ["exited", 3_600_000];

beforeAll(async () => {
  await setSetting("Updates:AllowPublicApplicationReleases", "true");
  await setSetting("IpFiltering:BruteForceProtection:Enabled", "false");
  // macOS open to every edition (the default asks Ultimate for mac), for the Mac feeds' anonymous callers.
  await setSetting("Updates:PlatformEditions", JSON.stringify({ windows: [], mac: [], linux: [] }));
});
afterAll(async () => {
  await setSetting("Updates:AllowPublicApplicationReleases", null);
  await setSetting("IpFiltering:BruteForceProtection:Enabled", null);
  await setSetting("Updates:PlatformEditions", null);
});

describe("crash loops", () => {
  it("roll back the install whose last three sessions crashed on start, alone, on the check and the feed", async () => {
    const { productId, code } = await app("1.0.0", "1.1.0");
    const [looping, steady, late, recovered] = ["A", "B", "C", "D"].map((n) => `${n}-${unique()}`) as [
      string,
      string,
      string,
      string,
    ];
    await sessions(code, steady, "1.1.0", [quiet(), crash(), quiet()]);
    await sessions(code, late, "1.1.0", [crash(), crash(), crash(20 * 60_000)]);
    await sessions(code, recovered, "1.1.0", [crash(), crash(), quiet()]);
    // The looping install's crashes come one a start (each sent with the next start), the last with an abnormal end.
    await sessions(code, looping, "1.1.0", [quiet()]);
    await sessions(code, looping, "1.1.0", [crash()]);
    await sessions(code, looping, "1.1.0", [crash(9 * 60_000)]);
    await sessions(code, looping, "1.1.0", [["abnormal", 2_000]]);

    const back = await answered(code, looping, "1.1.0", (c) => c.rollback);
    expect(back.check).toMatchObject({ rollback: true, rollbackReason: "crashLoop", release: { version: "1.0.0" } });
    expect(back.feed).toBe("1.0.0");
    for (const other of [steady, late, recovered]) {
      const kept = await ask(code, other, "1.1.0");
      expect(kept.check, other).toMatchObject({ rollback: false, updateAvailable: false });
      expect(kept.check).not.toHaveProperty("rollbackReason");
      expect(kept.feed, other).toBe("1.1.0");
    }

    // Back on 1.0.0, the install is not offered 1.1.0 again (it would loop); everyone else on 1.0.0 is.
    const onOld = await ask(code, looping, "1.0.0");
    expect(onOld.check).toMatchObject({ updateAvailable: false, rollback: false });
    expect(onOld.feed).toBe("1.0.0");
    expect((await ask(code, `E-${unique()}`, "1.0.0")).check).toMatchObject({
      updateAvailable: true,
      release: { version: "1.1.0" },
    });
    // The vendor's fix, 1.1.1, is offered to it as to anyone.
    await release(productId, "1.1.1");
    const fixed = await answered(code, looping, "1.0.0", (c) => c.updateAvailable);
    expect(fixed.check).toMatchObject({ updateAvailable: true, release: { version: "1.1.1" } });
    expect(fixed.feed).toBe("1.1.1");
  });

  it("roll the install back alone on every updater format, each as its updater can take it", async () => {
    const { productId, code } = await app();
    for (const version of ["1.0.0", "1.1.0"]) await release(productId, version, true);
    const [looping, steady] = ["A", "B"].map((n) => `${n}-${unique()}`) as [string, string];
    await sessions(code, steady, "1.1.0", [quiet(), crash(), quiet()]);
    await sessions(code, looping, "1.1.0", [crash(), crash(), crash()]);
    const back = await answered(code, looping, "1.1.0", (c) => c.rollback);
    expect(back.check).toMatchObject({ rollback: true, rollbackReason: "crashLoop", release: { version: "1.0.0" } });
    expect(back.feed).toBe("1.0.0");

    // Every format offers the looping install 1.0.0 and only 1.0.0: Squirrel.Windows lists its full package alone (and
    // takes it, its version not being the running one), Velopack its Full asset, Tauri (both routes) and Squirrel.Mac
    // the 1.0.0 files. Sparkle's appcast names 1.0.0 too, but Sparkle installs only an item above CFBundleVersion: it
    // cannot roll back, and at least is not offered 1.1.0 again.
    const rolledBack = offering("1.0.0");
    // Velopack's own clients send no headers: its stagingId (the install id, docs/updaters/velopack.md) reaches the loop.
    const byStagingId = await exports.default.fetch(
      `${BASE}/v1/updates/${code}/velopack/${PLATFORM}/releases.win.json?localVersion=1.1.0&stagingId=${looping}`,
    );
    const staged = (await byStagingId.json()) as { Assets: { Version: string; Type: string }[] };
    expect(staged.Assets.map((a) => `${a.Version} ${a.Type}`)).toEqual(["1.0.0 Full"]);
    expect(await formats(code, looping, "1.1.0")).toEqual({
      ...rolledBack,
      sparkle: { ...rolledBack.sparkle, finds: null },
    });
    // Another install on 1.1.0 keeps it on every format.
    expect(await formats(code, steady, "1.1.0")).toEqual(nothingNewer("1.1.0"));
    // Back on 1.0.0, no format offers the looping install 1.1.0 again; a fresh install on 1.0.0 is offered it by each.
    expect(await formats(code, looping, "1.0.0")).toEqual(nothingNewer("1.0.0"));
    expect(await formats(code, `E-${unique()}`, "1.0.0")).toEqual(offering("1.1.0"));
  });

  it("end when the install runs the version without crashing, and count beyond the address limit", async () => {
    const { code } = await app("2.0.0", "2.1.0");
    const ip = "192.0.2.77";
    // Five other installs of the address fill its count of installs for the day: the sixth is not counted in the
    // figures, but its own crash loop still holds.
    for (let i = 0; i < 5; i++) await sessions(code, `F${i}-${unique()}`, "2.1.0", [quiet()], ip);
    const install = `G-${unique()}`;
    await sessions(code, install, "2.1.0", [crash(), crash(), crash()], ip);
    expect((await answered(code, install, "2.1.0", (c) => c.rollback)).check).toMatchObject({
      rollback: true,
      rollbackReason: "crashLoop",
      release: { version: "2.0.0" },
    });
    // It ran 2.1.0 once more, and it did not crash: the loop is over.
    await sessions(code, install, "2.1.0", [quiet()], ip);
    const over = await answered(code, install, "2.1.0", (c) => !c.rollback);
    expect(over.check).toMatchObject({ rollback: false, updateAvailable: false });
    expect(over.feed).toBe("2.1.0");
  });
});
