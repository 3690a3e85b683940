/**
 * tools/publish reading each updater tool's own output (test/node/fixtures/publish/<tool>/, laid out as the tool
 * writes it; generate.mjs there writes them): the readers against their folders, the dry run per format, the refusal
 * of an unsigned Tauri or Sparkle artifact (nothing reaches the service), and one real upload per tool to the bundled
 * Worker, with the vendor's signature and the tool's declared hashes on the release's artifacts, and served by the
 * Tauri, Sparkle and Velopack feeds as published.
 */
import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { detectFormat, readFormat } from "../../tools/publish/formats.ts";
import { plan } from "../../tools/publish/publish.ts";
import { minisignProblem } from "../../tools/publish/tauri.ts";
// @ts-expect-error: a plain JavaScript module shared with the benchmark
import { root, startLocalWorker } from "../../scripts/local-worker.mjs";
import type { JsonBody } from "../json-body.ts";

const KEY = "api_PublishFormatsKey0000000000000000";
const run = promisify(execFile);
const FIXTURES = join(root as string, "test/node/fixtures/publish");
const TAURI = {
  windows: join(FIXTURES, "tauri/windows/src-tauri/target/release/bundle"),
  macos: join(FIXTURES, "tauri/macos/src-tauri/target/aarch64-apple-darwin/release/bundle"),
  linux: join(FIXTURES, "tauri/linux/src-tauri/target/release/bundle"),
  unsigned: join(FIXTURES, "tauri/unsigned/src-tauri/target/release/bundle"),
};
const SQUIRREL = join(FIXTURES, "squirrel-windows/dist/squirrel-windows");
const SQUIRREL_MAC = join(FIXTURES, "squirrel-mac/dist");
const VELOPACK = join(FIXTURES, "velopack/Releases");
const SPARKLE = {
  appcast: join(FIXTURES, "sparkle/appcast"),
  signUpdate: join(FIXTURES, "sparkle/sign-update"),
  output: join(FIXTURES, "sparkle/sign_update.txt"),
  unsigned: join(FIXTURES, "sparkle/unsigned"),
};

const text = (path: string) => readFileSync(path, "utf8");
const keys = JSON.parse(readFileSync(join(FIXTURES, "keys.json"), "utf8")) as { sparklePublicEdKey: string };
const bytes = (path: string) => readFileSync(path);
const hash = (algorithm: string, path: string, encoding: "hex" | "base64") =>
  createHash(algorithm).update(bytes(path)).digest(encoding);
const edSignature = (appcast: string, file: string) =>
  new RegExp(`${file.replace(/\./g, "\\.")}" length="\\d+" type="[^"]+" sparkle:edSignature="([^"]+)"`).exec(
    appcast,
  )![1];

/** The reader's artifacts as [platform, kind, fileName, signature?, sha1?]. */
async function read(dir: string, extra: { sparkleSignature?: string; version?: string } = {}) {
  const format = await detectFormat(dir);
  const dist = await readFormat(dir, format, extra);
  return {
    format,
    dist,
    rows: dist.artifacts.map((a) => [a.platform, a.kind, a.fileName, a.signature ?? null, a.sha1 ?? null]),
  };
}

/** A scratch copy of a fixture folder, to change one thing in it. */
function copy(dir: string): string {
  const to = mkdtempSync(join(tmpdir(), "publish-fixture-"));
  cpSync(dir, to, { recursive: true });
  scratch.push(to);
  return to;
}
const scratch: string[] = [];
afterAll(() => {
  for (const dir of scratch) rmSync(dir, { recursive: true, force: true });
});

describe("the folder readers read each tool's output as it writes it", () => {
  it("tauri build: v2 installers signed directly, the macOS updater archive (arch from the target triple), v1Compatible archives and latest.json", async () => {
    const windows = await read(TAURI.windows);
    expect(windows.format).toBe("tauri");
    expect(windows.dist.version).toBe("1.4.0");
    expect(windows.rows).toEqual([
      [
        "win-x64",
        "installer",
        "Studio_1.4.0_x64-setup.exe",
        text(join(TAURI.windows, "nsis/Studio_1.4.0_x64-setup.exe.sig")),
        null,
      ],
    ]);
    expect(windows.dist.skipped).toEqual([
      {
        fileName: "msi/Studio_1.4.0_x64_en-US.msi",
        reason: "one installer per platform: Studio_1.4.0_x64-setup.exe is the win-x64 installer",
      },
    ]);

    const macos = await read(TAURI.macos);
    expect(macos.rows).toEqual([
      ["darwin-arm64", "archive", "Studio.app.tar.gz", text(join(TAURI.macos, "macos/Studio.app.tar.gz.sig")), null],
      ["darwin-arm64", "installer", "Studio_1.4.0_aarch64.dmg", null, null],
    ]);

    const linux = await read(TAURI.linux);
    const latest = JSON.parse(text(join(TAURI.linux, "latest.json")));
    expect(linux.rows).toEqual([
      ["linux-x64", "archive", "studio_1.4.0_amd64.AppImage.tar.gz", latest.platforms["linux-x86_64"].signature, null],
      ["linux-x64", "installer", "studio_1.4.0_amd64.AppImage", null, null],
    ]);
    expect(linux.dist).toMatchObject({
      version: "1.4.0",
      releaseNotes: "Faster start.",
      releaseDate: "2026-11-20T10:00:00.000Z",
    });
    // The parent of the bundle folder (target/release) is read as its bundle folder.
    expect((await read(join(TAURI.linux, ".."))).rows).toEqual(linux.rows);
  });

  it("tauri build: a .sig that signs another file, or that latest.json contradicts, is refused", async () => {
    const swapped = copy(TAURI.windows);
    cpSync(join(swapped, "msi/Studio_1.4.0_x64_en-US.msi.sig"), join(swapped, "nsis/Studio_1.4.0_x64-setup.exe.sig"));
    await expect(read(swapped)).rejects.toThrow(
      "nsis/Studio_1.4.0_x64-setup.exe.sig signs Studio_1.4.0_x64_en-US.msi, not Studio_1.4.0_x64-setup.exe",
    );
    const garbled = copy(TAURI.windows);
    writeFileSync(join(garbled, "nsis/Studio_1.4.0_x64-setup.exe.sig"), Buffer.from("not minisign").toString("base64"));
    await expect(read(garbled)).rejects.toThrow("is not a minisign signature");
    // A trusted comment may carry more tab-separated fields after the file name (minisign allows any text).
    const sig = Buffer.from(text(join(TAURI.macos, "macos/Studio.app.tar.gz.sig")), "base64").toString("utf8");
    const extended = Buffer.from(sig.replace("file:Studio.app.tar.gz", "file:Studio.app.tar.gz\tbuild:42")).toString(
      "base64",
    );
    expect(minisignProblem(extended, "Studio.app.tar.gz")).toBeUndefined();
    expect(minisignProblem(extended, "Other.app.tar.gz")).toBe("signs Studio.app.tar.gz, not Other.app.tar.gz");
    const stale = copy(TAURI.linux);
    const latest = JSON.parse(text(join(stale, "latest.json")));
    latest.platforms["linux-x86_64"].signature = text(join(TAURI.macos, "macos/Studio.app.tar.gz.sig"));
    writeFileSync(join(stale, "latest.json"), JSON.stringify(latest));
    await expect(read(stale)).rejects.toThrow(
      /latest\.json gives studio_1\.4\.0_amd64\.AppImage\.tar\.gz another signature/,
    );
  });

  it("Squirrel.Windows (electron-builder's squirrel target): the newest version's full and delta packages with RELEASES' SHA1, the Setup", async () => {
    const { format, dist, rows } = await read(SQUIRREL);
    expect(format).toBe("squirrel-windows");
    const releases = text(join(SQUIRREL, "RELEASES"));
    const sha1Of = (name: string) => new RegExp(`([0-9A-F]{40}) ${name}`).exec(releases)![1];
    expect(rows).toEqual([
      ["win-x64", "package", "studio-1.5.0-full.nupkg", null, sha1Of("studio-1.5.0-full.nupkg")],
      ["win-x64", "delta", "studio-1.5.0-delta.nupkg", null, sha1Of("studio-1.5.0-delta.nupkg")],
      ["win-x64", "installer", "Studio Setup 1.5.0.exe", null, null],
    ]);
    expect(dist.version).toBe("1.5.0");
    expect(dist.skipped.map((s) => s.fileName)).toEqual(["studio-1.4.0-full.nupkg"]);
    expect(dist.listed).toContainEqual({
      fileName: "studio-1.5.0-full.nupkg",
      algorithm: "sha1",
      digest: hash("sha1", join(SQUIRREL, "studio-1.5.0-full.nupkg"), "hex").toUpperCase(),
      listedBy: "RELEASES",
    });
    // The arm64 build's folder is squirrel-windows-arm64.
    const arm = join(copy(SQUIRREL), "..", "squirrel-windows-arm64");
    cpSync(SQUIRREL, arm, { recursive: true });
    scratch.push(arm);
    expect((await read(arm)).rows.map((r) => r[0])).toEqual(["win-arm64", "win-arm64", "win-arm64"]);
  });

  it("vpk pack's Releases folder: the channel's newest full and delta packages with the index's SHA1 and SHA256, Setup and Portable", async () => {
    const { format, dist, rows } = await read(VELOPACK);
    expect(format).toBe("velopack");
    const index = JSON.parse(text(join(VELOPACK, "releases.win.json"))).Assets as JsonBody[];
    const of = (name: string) => index.find((a) => a.FileName === name)!;
    expect(rows).toEqual([
      ["win-x64", "package", "Studio-1.7.0-full.nupkg", null, of("Studio-1.7.0-full.nupkg").SHA1],
      ["win-x64", "delta", "Studio-1.7.0-delta.nupkg", null, of("Studio-1.7.0-delta.nupkg").SHA1],
      ["win-x64", "installer", "Studio-win-Setup.exe", null, null],
      ["win-x64", "zip", "Studio-win-Portable.zip", null, null],
    ]);
    expect(dist.artifacts[0]!.sha256).toBe(of("Studio-1.7.0-full.nupkg").SHA256);
    expect(dist).toMatchObject({ version: "1.7.0", releaseNotes: "Smaller updates." });
    expect(dist.listed.filter((l) => l.fileName === "Studio-1.7.0-full.nupkg").map((l) => l.algorithm)).toEqual([
      "sha1",
      "sha256",
    ]);
  });

  it("Sparkle: generate_appcast's folder (the newest item, its edSignature) and an archive with sign_update's output", async () => {
    const appcast = text(join(SPARKLE.appcast, "appcast.xml"));
    const fromAppcast = await read(SPARKLE.appcast);
    expect(fromAppcast.format).toBe("sparkle");
    const signature = edSignature(appcast, "Studio-1.6.0.zip");
    expect(fromAppcast.rows).toEqual([
      ["darwin-arm64", "zip", "Studio-1.6.0.zip", signature, null],
      ["darwin-x64", "zip", "Studio-1.6.0.zip", signature, null],
    ]);
    expect(fromAppcast.dist).toMatchObject({
      version: "1.6.0",
      // The appcast's HTML description, and its Markdown for the updaters that show text.
      releaseNotesHtml: "<ul><li>Faster sync.</li></ul>",
      releaseNotes: "-   Faster sync.",
      releaseDate: "2026-11-20T10:00:00.000Z",
      sparkle: { bundleVersion: "160", minimumSystemVersion: "11.0" },
    });
    expect(fromAppcast.dist.skipped.map((s) => s.fileName).sort()).toEqual([
      "Studio-1.5.0.zip",
      "Studio-1.6.0.html",
      "Studio160-150.delta",
    ]);

    const signed = /edSignature="([^"]+)"/.exec(text(SPARKLE.output))![1];
    for (const given of [SPARKLE.output, text(SPARKLE.output).trim(), signed!]) {
      const dist = await readFormat(SPARKLE.signUpdate, "sparkle", {
        sparkleSignature: given,
        platform: "darwin-arm64",
      });
      expect(dist.artifacts.map((a) => [a.platform, a.kind, a.fileName, a.signature])).toEqual([
        ["darwin-arm64", "installer", "Studio-1.6.0.dmg", signed],
      ]);
      expect(dist.version).toBe("1.6.0");
    }
    // The length sign_update printed picks the archive: another length matches none.
    await expect(
      readFormat(SPARKLE.signUpdate, "sparkle", { sparkleSignature: `sparkle:edSignature="${signed}" length="12"` }),
    ).rejects.toThrow("holds no archive of 12 bytes");
  });

  it("electron-builder's mac zip target for Squirrel.Mac: the macOS zip only", async () => {
    const dist = await readFormat(SQUIRREL_MAC, "squirrel-mac", {});
    expect(dist.artifacts.map((a) => [a.platform, a.kind, a.fileName])).toEqual([
      ["darwin-arm64", "zip", "Studio-1.8.0-arm64-mac.zip"],
    ]);
    expect(dist.version).toBe("1.8.0");
    expect(await detectFormat(SQUIRREL_MAC)).toBe("electron-builder");
  });

  it("a package whose bytes differ from the SHA1 or size the tool declared is refused before anything is sent", async () => {
    const squirrel = copy(SQUIRREL);
    const releases = text(join(squirrel, "RELEASES"));
    const line = /([0-9A-F]{40}) studio-1\.5\.0-full\.nupkg/.exec(releases)![1]!;
    writeFileSync(join(squirrel, "RELEASES"), releases.replace(line, "0".repeat(40)));
    const options = { product: "studio", url: "http://127.0.0.1:9", apiKey: "", log: () => undefined };
    await expect(plan({ ...options, dir: squirrel })).rejects.toThrow(
      "studio-1.5.0-full.nupkg: its sha1 differs from the one RELEASES gives",
    );
    const velopack = copy(VELOPACK);
    writeFileSync(join(velopack, "Studio-1.7.0-delta.nupkg"), "changed after the build");
    await expect(plan({ ...options, dir: velopack })).rejects.toThrow(
      /Studio-1\.7\.0-delta\.nupkg is 23 bytes but releases\.win\.json says \d+/,
    );
  });
});

let worker: { url: URL; dispose(): Promise<void> };
let productId: number;

async function rest(method: string, path: string, body?: unknown): Promise<JsonBody> {
  const res = await fetch(new URL(path, worker.url), {
    method,
    headers: { "x-api-key": KEY, "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return (await res.json()) as JsonBody;
}

/** Runs the CLI as a user would; never throws: the exit code, stdout and stderr. */
async function cli(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, ["tools/publish/main.ts", "--product", "studio", ...args], {
      cwd: root,
      env: { ...process.env, LICENSING_API_KEY: KEY, LICENSING_URL: worker.url.toString() },
    });
    return { code: 0, stdout, stderr };
  } catch (e) {
    const failure = e as { code: number; stdout: string; stderr: string };
    return { code: failure.code, stdout: failure.stdout, stderr: failure.stderr };
  }
}

/** The release of a version and its artifacts, as the API lists them. */
async function published(version: string): Promise<{ release?: JsonBody; downloads: JsonBody[] }> {
  const filter = encodeURIComponent(`version == "${version}"`);
  const release = (await rest("GET", `/v1/products/${productId}/releases?filter=${filter}`)).productReleases[0];
  if (!release) return { downloads: [] };
  const { releaseDownloads } = await rest("GET", `/v1/products/${productId}/releases/${release.id}/downloads?sort=id`);
  return { release, downloads: releaseDownloads };
}

describe("licensing-publish with each tool's folder, against the Worker", () => {
  beforeAll(async () => {
    worker = await startLocalWorker({
      bindings: {
        Application__JwtSecret: "publish-formats-jwt-secret-0123456789abcdef",
        Application__EncryptionKey: "publish-formats-encryption-key",
        Application__AdminUsername: "admin",
        Application__AdminPassword: "Publish-12345",
        Application__AdminApiKey: KEY,
        // The feeds are read anonymously at the end: public releases of an application product.
        Updates__AllowPublicApplicationReleases: "true",
        Updates__EnforcePlatformEditions: "false",
      },
    });
    productId = (
      await rest("POST", "/v1/products", {
        // The Sparkle key the fixtures' edSignatures were made with: the service verifies each upload under it.
        product: { code: "studio", name: "Studio", isApplication: true, sparklePublicKey: keys.sparklePublicEdKey },
      })
    )["productId"];
  }, 180_000);
  afterAll(async () => {
    await worker?.dispose();
  });

  it("--dry-run lists, per format, each file with its platform, kind, size and whether it is signed, and sends nothing", async () => {
    const dry = await cli("--dry-run", "--dir", TAURI.windows, "--dir", TAURI.macos, "--dir", TAURI.linux);
    expect(dry.code, dry.stderr).toBe(0);
    const lines = dry.stdout.split("\n");
    const header = (dir: string) => lines.indexOf(lines.find((l) => l.startsWith(`tauri (${dir}):`))!);
    expect(lines[header(TAURI.windows)]).toBe(`tauri (${TAURI.windows}): 1 artifact`);
    expect(lines[header(TAURI.macos)]).toBe(`tauri (${TAURI.macos}): 2 artifacts`);
    expect(dry.stdout).toContain(
      "  would upload win-x64 installer Studio_1.4.0_x64-setup.exe (4000 bytes); signature: yes",
    );
    expect(dry.stdout).toContain("  would upload darwin-arm64 archive Studio.app.tar.gz (3500 bytes); signature: yes");
    expect(dry.stdout).toContain(
      "  would upload darwin-arm64 installer Studio_1.4.0_aarch64.dmg (5000 bytes); signature: no",
    );
    expect(dry.stdout).toContain("dry run: 5 artifacts");
    expect(dry.stdout).toContain("nothing was sent");

    const json = await cli("--dry-run", "--json", "--dir", VELOPACK, "--dir", SPARKLE.appcast);
    expect(json.code).toBe(1);
    expect(json.stderr).toContain("the folders name different versions");
    const velopack = await cli("--dry-run", "--json", "--dir", VELOPACK);
    expect(JSON.parse(velopack.stdout).artifacts).toEqual([
      expect.objectContaining({ format: "velopack", kind: "package", signature: false, sha1: expect.any(String) }),
      expect.objectContaining({ format: "velopack", kind: "delta", signature: false }),
      expect.objectContaining({ format: "velopack", kind: "installer", fileName: "Studio-win-Setup.exe" }),
      expect.objectContaining({ format: "velopack", kind: "zip", fileName: "Studio-win-Portable.zip" }),
    ]);
    expect((await rest("GET", `/v1/products/${productId}/releases`)).productReleases).toEqual([]);
  });

  it("refuses an unsigned Tauri or Sparkle artifact with a clear message, and uploads nothing", async () => {
    const tauri = await cli("--dir", TAURI.unsigned, "--public");
    expect(tauri.code).toBe(1);
    expect(tauri.stderr).toContain(
      "macos/Studio.app.tar.gz: no .sig beside it; Tauri's updater refuses unsigned updates, so nothing was published",
    );
    const sparkle = await cli("--dir", SPARKLE.unsigned, "--format", "sparkle", "--public");
    expect(sparkle.code).toBe(1);
    expect(sparkle.stderr).toContain("Studio-1.6.0.zip: no EdDSA signature");
    expect(sparkle.stderr).toContain("run sign_update on the archive and pass its output with --sparkle-signature");
    expect((await rest("GET", `/v1/products/${productId}/releases`)).productReleases).toEqual([]);
  });

  it("publishes each tool's folder; the release's artifacts keep the vendor's signature and the tool's hashes", async () => {
    // Tauri: three hosts' bundle folders into one release.
    const tauri = await cli("--dir", TAURI.windows, "--dir", TAURI.macos, "--dir", TAURI.linux);
    expect(tauri.code, tauri.stderr).toBe(0);
    expect(tauri.stdout).toContain("done: 5 uploaded, 0 replaced, 0 unchanged");
    const t = await published("1.4.0");
    expect(t.release).toMatchObject({ channel: "stable", releaseNotes: "Faster start." });
    expect(t.downloads.map((d) => [d.platform, d.kind, d.fileName, d.signature ?? null])).toEqual(
      expect.arrayContaining([
        [
          "win-x64",
          "installer",
          "Studio_1.4.0_x64-setup.exe",
          text(`${TAURI.windows}/nsis/Studio_1.4.0_x64-setup.exe.sig`),
        ],
        ["darwin-arm64", "archive", "Studio.app.tar.gz", text(`${TAURI.macos}/macos/Studio.app.tar.gz.sig`)],
        ["darwin-arm64", "installer", "Studio_1.4.0_aarch64.dmg", null],
        [
          "linux-x64",
          "archive",
          "studio_1.4.0_amd64.AppImage.tar.gz",
          text(`${TAURI.linux}/appimage/studio_1.4.0_amd64.AppImage.tar.gz.sig`),
        ],
        ["linux-x64", "installer", "studio_1.4.0_amd64.AppImage", null],
      ]),
    );
    expect(t.downloads).toHaveLength(5);
    const again = await cli("--dir", TAURI.windows, "--dir", TAURI.macos, "--dir", TAURI.linux);
    expect(again.stdout).toContain("done: 0 uploaded, 0 replaced, 5 unchanged");
    // Signed again (minisign's trusted comment carries the time): same bytes, the new signature replaces the old.
    const resigned = copy(TAURI.macos);
    const sig = Buffer.from(text(join(resigned, "macos/Studio.app.tar.gz.sig")), "base64").toString("utf8");
    const newer = Buffer.from(sig.replace(/timestamp:\d+/, "timestamp:1763999999")).toString("base64");
    writeFileSync(join(resigned, "macos/Studio.app.tar.gz.sig"), newer);
    const third = await cli("--dir", resigned);
    expect(third.stdout).toContain("done: 0 uploaded, 0 replaced, 1 unchanged, 1 re-signed");
    expect((await published("1.4.0")).downloads.find((d) => d.fileName === "Studio.app.tar.gz")!.signature).toBe(newer);

    // Squirrel.Windows: the packages with RELEASES' SHA1 (the service computed the same).
    const squirrel = await cli("--dir", SQUIRREL);
    expect(squirrel.code, squirrel.stderr).toBe(0);
    const s = await published("1.5.0");
    const releases = text(join(SQUIRREL, "RELEASES"));
    for (const name of ["studio-1.5.0-full.nupkg", "studio-1.5.0-delta.nupkg"]) {
      const row = s.downloads.find((d) => d.fileName === name)!;
      expect(row.sha1.toUpperCase()).toBe(new RegExp(`([0-9A-F]{40}) ${name}`).exec(releases)![1]);
      expect(row.sha512).toBe(hash("sha512", join(SQUIRREL, name), "base64"));
    }
    expect(s.downloads.map((d) => [d.platform, d.kind])).toEqual([
      ["win-x64", "package"],
      ["win-x64", "delta"],
      ["win-x64", "installer"],
    ]);

    // Velopack: SHA1 and SHA256 of the index on the packages.
    const velopack = await cli("--dir", VELOPACK);
    expect(velopack.code, velopack.stderr).toBe(0);
    const v = await published("1.7.0");
    expect(v.release).toMatchObject({ releaseNotes: "Smaller updates." });
    for (const asset of JSON.parse(text(join(VELOPACK, "releases.win.json"))).Assets.filter(
      (a: JsonBody) => a.Version === "1.7.0",
    )) {
      const row = v.downloads.find((d) => d.fileName === asset.FileName)!;
      expect([row.kind, row.sha1.toUpperCase(), row.sha256.toUpperCase(), row.size]).toEqual([
        asset.Type === "Full" ? "package" : "delta",
        asset.SHA1,
        asset.SHA256,
        asset.Size,
      ]);
    }
    expect(v.downloads).toHaveLength(4);

    // Sparkle: the appcast's edSignature on the zip, for both Macs.
    const sparkle = await cli("--dir", SPARKLE.appcast);
    expect(sparkle.code, sparkle.stderr).toBe(0);
    const signature = edSignature(text(join(SPARKLE.appcast, "appcast.xml")), "Studio-1.6.0.zip");
    expect(
      (await published("1.6.0")).downloads.map((d) => [d.platform, d.kind, d.fileName, d.signature ?? null]),
    ).toEqual([
      ["darwin-arm64", "zip", "Studio-1.6.0.zip", signature],
      ["darwin-x64", "zip", "Studio-1.6.0.zip", signature],
    ]);

    // Squirrel.Mac: electron-builder's mac zip.
    const mac = await cli("--dir", SQUIRREL_MAC, "--format", "squirrel-mac");
    expect(mac.code, mac.stderr).toBe(0);
    expect((await published("1.8.0")).downloads.map((d) => [d.platform, d.kind, d.fileName])).toEqual([
      ["darwin-arm64", "zip", "Studio-1.8.0-arm64-mac.zip"],
    ]);

    // What was published is what each updater's feed serves: the kinds and signatures the feeds read.
    for (const version of ["1.4.0", "1.6.0", "1.7.0"]) {
      const { release } = await published(version);
      const put = await rest("PUT", `/v1/products/${productId}/releases`, {
        productRelease: { id: release!.id, public: true, requiresMaintenance: false },
      });
      expect(put, JSON.stringify(put)).toMatchObject({ success: true });
    }
    const feed = async (path: string) => {
      const res = await fetch(new URL(path, worker.url));
      const body = await res.text();
      expect(res.status, `${path}: ${res.headers.get("x-service-reason")} ${body}`).toBe(200);
      return body;
    };
    const tauriJson = JSON.parse(await feed("/v1/updates/studio/tauri.json")) as JsonBody;
    expect(tauriJson.version, JSON.stringify(tauriJson)).toBe("1.4.0");
    expect(tauriJson.platforms["linux-x86_64"].signature).toBe(
      text(`${TAURI.linux}/appimage/studio_1.4.0_amd64.AppImage.tar.gz.sig`),
    );
    expect(tauriJson.platforms["darwin-aarch64"].signature).toBe(newer);
    expect(tauriJson.platforms["windows-x86_64"].signature).toBe(
      text(`${TAURI.windows}/nsis/Studio_1.4.0_x64-setup.exe.sig`),
    );
    const appcast = await (
      await fetch(new URL("/v1/updates/studio/appcast.xml?platform=darwin-x64", worker.url))
    ).text();
    expect(appcast).toContain(`sparkle:edSignature="${signature}"`);
    expect(appcast).toContain("<sparkle:shortVersionString>1.6.0</sparkle:shortVersionString>");
    const velopackFeed = JSON.parse(await feed("/v1/updates/studio/velopack/win-x64/releases.win.json")) as JsonBody;
    const full = JSON.parse(text(join(VELOPACK, "releases.win.json"))).Assets[0];
    expect(velopackFeed.Assets[0]).toMatchObject({ Version: "1.7.0", FileName: full.FileName, SHA1: full.SHA1 });
  });
});
