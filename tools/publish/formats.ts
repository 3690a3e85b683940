/**
 * The build tools whose output folders the publisher reads, how a folder's tool is recognised, and what the readers
 * share. Each reader (dist.ts for electron-builder, tauri.ts, squirrel-windows.ts, sparkle.ts, velopack.ts) reads
 * the folder exactly as its tool writes it and yields a `Dist`: the version, the artifacts with their platform and
 * kind, the vendor's signature and the hashes the tool declared, and what it left out and why.
 */
import { type Dist, type Platform, readDist } from "./dist.ts";
import { entries, type ReadOptions } from "./read-kit.ts";
import { readSparkle } from "./sparkle.ts";
import { readSquirrelWindows } from "./squirrel-windows.ts";
import { readTauri, TAURI_BUNDLE_FOLDERS } from "./tauri.ts";
import { readVelopack } from "./velopack.ts";

/** The tools (and updaters) a folder can come from. */
export const FORMATS = [
  "electron-builder",
  "squirrel-mac",
  "squirrel-windows",
  "tauri",
  "sparkle",
  "velopack",
] as const;
export type Format = (typeof FORMATS)[number];

/** The tool that wrote `dir`, from the files only that tool writes; electron-builder when none matches. */
export async function detectFormat(dir: string): Promise<Format> {
  const { files, folders } = await entries(dir);
  if (files.some((f) => /^releases\.[^/]+\.json$/.test(f))) return "velopack";
  if (files.includes("RELEASES") && files.some((f) => f.endsWith(".nupkg"))) return "squirrel-windows";
  if (files.includes("appcast.xml")) return "sparkle";
  if (folders.includes("bundle") || folders.some((f) => TAURI_BUNDLE_FOLDERS.includes(f))) return "tauri";
  return "electron-builder";
}

/** Reads `dir` as `format` wrote it. */
export async function readFormat(dir: string, format: Format, options: ReadOptions): Promise<Dist> {
  switch (format) {
    case "electron-builder":
      return readDist(dir, options.platform);
    case "squirrel-mac":
      return readSquirrelMac(dir, options.platform);
    case "squirrel-windows":
      return readSquirrelWindows(dir, options);
    case "tauri":
      return readTauri(dir, options);
    case "sparkle":
      return readSparkle(dir, options);
    case "velopack":
      return readVelopack(dir, options);
  }
}

/**
 * Electron's built-in autoUpdater on macOS (Squirrel.Mac) installs the zip of electron-builder's `zip` mac target:
 * the electron-builder folder, its macOS zips only (the app's own code signature is what Squirrel.Mac checks).
 */
async function readSquirrelMac(dir: string, platform: Platform | undefined): Promise<Dist> {
  const dist = await readDist(dir, platform);
  const zips = dist.artifacts.filter((a) => a.kind === "zip" && a.platform.startsWith("darwin"));
  const others = dist.artifacts.filter((a) => !zips.includes(a));
  if (zips.length === 0)
    throw new Error(
      `${dir} holds no macOS zip: Squirrel.Mac installs the zip of electron-builder's mac "zip" target (mac.target: [dmg, zip])`,
    );
  return {
    ...dist,
    artifacts: zips,
    skipped: [
      ...dist.skipped,
      ...others.map((a) => ({ fileName: a.fileName, reason: "Squirrel.Mac reads only the macOS zip" })),
    ],
  };
}
