/**
 * Reading a Squirrel.Windows releases folder, as electron-builder's `squirrel` target writes it
 * (dist/squirrel-windows/ for x64, dist/squirrel-windows-arm64/, dist/squirrel-windows-ia32/; electron-winstaller's
 * output) or `Squirrel.exe --releasify` does: `RELEASES`, one line per package `SHA1 FILENAME SIZE`, the packages
 * `<id>-<version>-full.nupkg` and `<id>-<version>-delta.nupkg` (a delta only with remoteReleases), and the
 * installer `<productName> Setup <version>.exe` (`Setup.exe` for Squirrel.exe; `.msi` too with `msi: true`).
 *
 * RELEASES lists every version the folder has held; the newest version's full package becomes the `package`
 * artifact and its delta the `delta` one, each checked against the SHA1 and size RELEASES gives and sent with that
 * SHA1, so the service serves RELEASES lines that match the bytes. The service writes RELEASES itself.
 */
import { readFile } from "node:fs/promises";
import { basename, join, resolve } from "node:path";
import type { Artifact, Dist, Listing, Platform } from "./dist.ts";
import { archIn, compareSemver, entries, platformOf, type ReadOptions, sizeOf } from "./read-kit.ts";

/** One line of RELEASES. */
export interface ReleasesEntry {
  sha1: string;
  fileName: string;
  size: number;
  /** The package id and version from the file name, and whether it is a delta. */
  id: string;
  version: string;
  delta: boolean;
}

/**
 * Parses RELEASES (Squirrel's ReleaseEntry lines: `SHA1 filename size`, a UTF-8 byte order mark allowed, `#`
 * comments ignored; a file name may be a URL or carry a query, as Squirrel allows).
 */
export function parseReleases(text: string): ReleasesEntry[] {
  const out: ReleasesEntry[] = [];
  for (const raw of text.replace(/^\uFEFF/, "").split(/\r?\n/)) {
    const line = raw.replace(/#.*$/, "").trim();
    if (!line) continue;
    const m = /^([0-9A-Fa-f]{40})\s+(\S+)\s+(\d+)$/.exec(line);
    if (!m) throw new Error(`RELEASES: "${line}" is not a line "SHA1 FILENAME SIZE"`);
    const fileName = decodeURIComponent(basename(m[2]!.replace(/[?#].*$/, "")));
    const named = /^(.+?)-(\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+?)?)-(full|delta)\.nupkg$/i.exec(fileName);
    if (!named) throw new Error(`RELEASES: ${fileName} is not named <id>-<version>-full.nupkg or -delta.nupkg`);
    out.push({
      sha1: m[1]!,
      fileName,
      size: Number(m[3]),
      id: named[1]!,
      version: named[2]!,
      delta: named[3]!.toLowerCase() === "delta",
    });
  }
  return out;
}

/** The version as electron-winstaller writes it into package names (NuGet: `1.2.0-beta.1` -> `1.2.0-beta1`). */
export function nugetVersion(version: string): string {
  const [main, ...pre] = version.split("+")[0]!.split("-");
  return pre.length > 0 ? `${main}-${pre.join("-").replace(/\./g, "")}` : main!;
}

export async function readSquirrelWindows(dir: string, options: ReadOptions): Promise<Dist> {
  const { files } = await entries(dir);
  if (!files.includes("RELEASES"))
    throw new Error(`${dir} has no RELEASES file: pass the Squirrel.Windows output folder (dist/squirrel-windows)`);
  const releases = parseReleases(await readFile(join(dir, "RELEASES"), "utf8"));
  const newest = releases
    .map((r) => r.version)
    .sort(compareSemver)
    .at(-1);
  if (!newest) throw new Error(`${dir}/RELEASES lists no package`);
  // The folder's architecture: electron-builder's folder suffix (squirrel-windows-arm64), x64 without one.
  let platform: Platform | { reason: string };
  if (options.platform) platform = options.platform;
  else {
    const suffix = /squirrel-windows-([a-z0-9]+)$/i.exec(basename(resolve(dir)))?.[1];
    platform = platformOf("win", (suffix && archIn(suffix)) || "x64");
  }
  if (typeof platform !== "string") throw new Error(`${dir}: ${platform.reason}`);
  const skipped: Dist["skipped"] = [];
  const listed: Listing[] = [];
  const artifacts: Artifact[] = [];
  const current = releases.filter((r) => r.version === newest);
  for (const r of releases.filter((r) => r.version !== newest))
    skipped.push({
      fileName: r.fileName,
      reason: `version ${r.version}: RELEASES keeps earlier versions; ${newest} is published`,
    });
  for (const kind of ["package", "delta"] as const) {
    const entry = current.find((r) => r.delta === (kind === "delta"));
    if (!entry) continue;
    if (!files.includes(entry.fileName))
      throw new Error(`RELEASES lists ${entry.fileName}, which is not in ${dir}; publish the whole Squirrel output`);
    const path = join(dir, entry.fileName);
    const size = await sizeOf(path);
    if (size !== entry.size)
      throw new Error(
        `${entry.fileName} is ${size} bytes but RELEASES says ${entry.size}: the file changed after the build; rebuild the folder`,
      );
    listed.push({ fileName: entry.fileName, algorithm: "sha1", digest: entry.sha1, listedBy: "RELEASES" });
    artifacts.push({ path, fileName: entry.fileName, platform, kind, size, sha1: entry.sha1.toUpperCase() });
  }
  if (!artifacts.some((a) => a.kind === "package"))
    throw new Error(`${dir}/RELEASES lists no full package of version ${newest}`);
  // The installer: electron-builder's `<productName> Setup <version>.exe`, Squirrel.exe's `Setup.exe`.
  const setups = files.filter((f) => /setup.*\.exe$/i.test(f));
  const setup = setups.find((f) => f.includes(newest)) ?? setups.find((f) => /^setup\.exe$/i.test(f)) ?? setups[0];
  if (setup)
    artifacts.push({
      path: join(dir, setup),
      fileName: setup,
      platform,
      kind: "installer",
      size: await sizeOf(join(dir, setup)),
    });
  const used = new Set([...artifacts.map((a) => a.fileName), ...releases.map((r) => r.fileName), "RELEASES"]);
  for (const f of files.filter((f) => !used.has(f)))
    skipped.push({
      fileName: f,
      reason:
        f.endsWith(".exe") || f.endsWith(".msi")
          ? `one installer per platform: ${setup} is the installer`
          : "not a Squirrel package or installer",
    });
  return {
    // The package names carry the NuGet form of the version; --version may give the semantic one it came from.
    version: options.version && nugetVersion(options.version) === newest ? options.version : newest,
    updateInfoFiles: [],
    listed,
    artifacts,
    skipped,
  };
}
