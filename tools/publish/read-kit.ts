/**
 * What the folder readers share: listing a folder, sizes, architectures and platforms from file names, and the order
 * of semantic versions (the newest version a tool's metadata lists is the one to publish).
 */
import { readdir, stat } from "node:fs/promises";
import { basename } from "node:path";
import { type Arch, PLATFORMS, type Platform } from "./dist.ts";

/** What a reader needs besides the folder. */
export interface ReadOptions {
  /** Put every artifact on this platform (--platform). */
  platform?: Platform;
  /** The release version asked for (--version), when the folder does not say. */
  version?: string;
  /** Sparkle's `sign_update` output: the `sparkle:edSignature="…" length="…"` line, a bare signature, or a file. */
  sparkleSignature?: string;
}

/** The entries of a folder: files (symbolic links count) and subfolders. */
export async function entries(dir: string): Promise<{ files: string[]; folders: string[] }> {
  const all = await readdir(dir, { withFileTypes: true });
  return {
    files: all
      .filter((e) => (e.isFile() || e.isSymbolicLink()) && !e.name.startsWith("."))
      .map((e) => e.name)
      .sort(),
    folders: all
      .filter((e) => e.isDirectory())
      .map((e) => e.name)
      .sort(),
  };
}

export const sizeOf = async (path: string) => (await stat(path)).size;

/**
 * The architecture a file name or path names, in the spellings the tools use (Tauri: x64, amd64, x86_64, aarch64,
 * arm64, universal; Velopack runtime ids: win-x64, osx-arm64), or undefined when it names none.
 */
export function archIn(name: string): Arch | undefined {
  const word = (pattern: string) => new RegExp(`(^|[-_. /])(${pattern})([-_. /]|$)`, "i").test(name);
  if (word("aarch64|arm64")) return "arm64";
  if (word("x86_64|amd64|x64")) return "x64";
  if (word("universal")) return "universal";
  if (word("armv7l?|armhf")) return "armv7l";
  if (word("x86|i386|i686|ia32")) return "ia32";
  return undefined;
}

/** The service platform of a family and architecture, or why there is none. */
export function platformOf(family: "win" | "darwin" | "linux", arch: Arch): Platform | { reason: string } {
  if (arch === "ia32") return { reason: "32-bit builds have no platform here" };
  if (arch === "armv7l") return { reason: "32-bit ARM builds have no platform here" };
  if (arch === "universal") return { reason: "a universal build fits two platforms; pass --platform" };
  const platform = `${family}-${arch}`;
  return (PLATFORMS as readonly string[]).includes(platform)
    ? (platform as Platform)
    : { reason: `${platform} is not a platform here` };
}

/** A semantic version's parts, for ordering the versions a tool's metadata lists (newest is the one to publish). */
const SEMVER = /^v?(\d+)\.(\d+)\.(\d+)(?:-([0-9A-Za-z.-]+))?(?:\+[0-9A-Za-z.-]+)?$/;
export const isSemver = (v: string) => SEMVER.test(v);

/** Orders semantic versions (SemVer 2 precedence; a release above its prereleases). Non-semver sorts first. */
export function compareSemver(a: string, b: string): number {
  const x = SEMVER.exec(a);
  const y = SEMVER.exec(b);
  if (!x || !y) return x ? 1 : y ? -1 : a.localeCompare(b);
  for (let i = 1; i <= 3; i++) if (Number(x[i]) !== Number(y[i])) return Number(x[i]) - Number(y[i]);
  if (x[4] === undefined || y[4] === undefined) return x[4] === y[4] ? 0 : x[4] === undefined ? 1 : -1;
  const p = x[4].split(".");
  const q = y[4].split(".");
  for (let i = 0; i < Math.max(p.length, q.length); i++) {
    if (p[i] === undefined) return -1;
    if (q[i] === undefined) return 1;
    const [m, n] = [p[i]!, q[i]!];
    const numeric = /^\d+$/.test(m) && /^\d+$/.test(n);
    const order = numeric ? Number(m) - Number(n) : /^\d+$/.test(m) ? -1 : /^\d+$/.test(n) ? 1 : m.localeCompare(n);
    if (order !== 0) return order;
  }
  return 0;
}

/** A version written in a file name (`Studio_1.2.3_x64-setup.exe`, `MyApp-2.0.1.zip`), or undefined. */
export function versionIn(fileName: string): string | undefined {
  return /(?:^|[-_ ])v?(\d+\.\d+\.\d+(?:-[0-9A-Za-z][0-9A-Za-z.]*?)?)(?=[-_ ]|\.(?:[A-Za-z]|$))/.exec(
    basename(fileName),
  )?.[1];
}

/** The one version a folder's files name, or an error naming the files that disagree. */
export function oneVersion(dir: string, found: { fileName: string; version: string }[]): string | undefined {
  const versions = [...new Set(found.map((f) => f.version))];
  if (versions.length > 1)
    throw new Error(
      `${dir} mixes builds: ${found.map((f) => `${f.fileName} is version ${f.version}`).join(", ")}; publish one build's output`,
    );
  return versions[0];
}
