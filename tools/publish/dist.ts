/**
 * Reading an electron-builder output folder: its update-info files (`latest.yml`, `latest-mac.yml`,
 * `latest-linux.yml`, `latest-linux-arm64.yml`) and the artifacts beside them, classified into the service's
 * platforms and kinds. A release holds one artifact per platform and kind, so when a folder has several candidates
 * (an AppImage, a .deb and an .rpm are all Linux installers) the one an update-info file names wins, and the others
 * are reported as skipped.
 */
import { readFile, readdir, stat } from "node:fs/promises";
import { join } from "node:path";

export const PLATFORMS = ["win-x64", "win-arm64", "darwin-arm64", "darwin-x64", "linux-x64", "linux-arm64"] as const;
export type Platform = (typeof PLATFORMS)[number];
export type Kind = "installer" | "zip" | "blockmap";
type Family = "win" | "darwin" | "linux";

/** One file to publish. */
export interface Artifact {
  path: string;
  fileName: string;
  platform: Platform;
  kind: Kind;
  size: number;
}

/** What a folder holds: the version and notes of its update info, the artifacts, and what was left out and why. */
export interface Dist {
  version?: string;
  releaseName?: string;
  releaseNotes?: string;
  releaseDate?: string;
  /** sha512 (base64) of each file an update-info file lists, to cross-check the bytes. */
  listedSha512: Map<string, string>;
  artifacts: Artifact[];
  skipped: { fileName: string; reason: string }[];
}

/** Update info as electron-builder writes it: scalars, and a `files` list of `{url, sha512, size}`. */
export interface UpdateInfo {
  scalars: Record<string, string>;
  files: Record<string, string>[];
}

const INSTALLER_EXTENSIONS = [".exe", ".msi", ".dmg", ".AppImage", ".deb", ".rpm"];
const FAMILY_OF_EXTENSION: Record<string, Family> = {
  ".exe": "win",
  ".msi": "win",
  ".dmg": "darwin",
  ".AppImage": "linux",
  ".deb": "linux",
  ".rpm": "linux",
};
/** Which update-info file serves which platforms (CONTRACT section 5). */
const FEED_FILES: Record<string, { family: Family; arch?: "x64" | "arm64" }> = {
  "latest.yml": { family: "win" },
  "latest-mac.yml": { family: "darwin" },
  "latest-linux.yml": { family: "linux", arch: "x64" },
  "latest-linux-arm64.yml": { family: "linux", arch: "arm64" },
};

function unquote(value: string): string {
  const v = value.trim();
  if (v.startsWith("'") && v.endsWith("'") && v.length >= 2) return v.slice(1, -1).replace(/''/g, "'");
  if (v.startsWith('"') && v.endsWith('"') && v.length >= 2) return JSON.parse(v) as string;
  return v;
}

/**
 * Parses the YAML subset electron-builder writes for update info (top-level scalars, block scalars for release
 * notes, and the `files` list of flat maps). The tool uses only Node's built-ins, so no YAML library.
 */
export function parseUpdateInfo(text: string): UpdateInfo {
  const info: UpdateInfo = { scalars: {}, files: [] };
  const lines = text.replace(/\r\n/g, "\n").split("\n");
  let list: Record<string, string>[] | undefined;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    if (line.trim() === "" || line.trimStart().startsWith("#")) continue;
    const item = /^\s*-\s+([\w-]+):\s*(.*)$/.exec(line);
    const nested = /^\s+([\w-]+):\s*(.*)$/.exec(line);
    const top = /^([\w-]+):\s*(.*)$/.exec(line);
    if (list && item) list.push({ [item[1]!]: unquote(item[2]!) });
    else if (list && nested && list.length > 0) list[list.length - 1]![nested[1]!] = unquote(nested[2]!);
    else if (top) {
      const [, key, value] = top as unknown as [string, string, string];
      list = undefined;
      if (key === "files" && value === "") list = info.files;
      else if (/^[|>][-+]?$/.test(value)) {
        // A block scalar: the indented lines that follow.
        const block: string[] = [];
        while (i + 1 < lines.length && (lines[i + 1]!.startsWith(" ") || lines[i + 1]!.trim() === ""))
          block.push(lines[++i]!);
        const indent = Math.min(...block.filter((l) => l.trim()).map((l) => l.length - l.trimStart().length));
        const body = block.map((l) => l.slice(Number.isFinite(indent) ? indent : 0));
        // "|-" strips the final line break, "|" keeps one.
        info.scalars[key] =
          (value.startsWith(">") ? body.join(" ") : body.join("\n")).replace(/\s+$/, "") +
          (value.endsWith("-") ? "" : "\n");
      } else info.scalars[key] = unquote(value);
    }
  }
  return info;
}

function extensionOf(fileName: string): string {
  const m = /(\.[A-Za-z0-9]+)$/.exec(fileName);
  return m ? (m[1] === ".appimage" ? ".AppImage" : m[1]!) : "";
}

/** arm64 or x64 from the file name (electron-builder appends `-arm64`; x64 is its unmarked default). */
function archOf(fileName: string): "x64" | "arm64" | "ia32" | "universal" {
  if (/(^|[-_. ])(arm64|aarch64)([-_. ]|$)/i.test(fileName)) return "arm64";
  if (/(^|[-_. ])(ia32|x86|i386|i686)([-_. ]|$)/i.test(fileName)) return "ia32";
  if (/(^|[-_. ])universal([-_. ]|$)/i.test(fileName)) return "universal";
  return "x64";
}

/** The family of a zip (or anything else) from its name, when the update info does not say. */
function familyOfName(fileName: string): Family | undefined {
  if (/(^|[-_. ])(mac|macos|darwin|osx)([-_. ]|$)/i.test(fileName)) return "darwin";
  if (/(^|[-_. ])(win|win32|windows)([-_. ]|$)/i.test(fileName)) return "win";
  if (/(^|[-_. ])linux([-_. ]|$)/i.test(fileName)) return "linux";
  return undefined;
}

interface Candidate extends Artifact {
  listed: boolean;
}

/** Platform and kind of one file, or why it is left out. */
function classify(
  fileName: string,
  listedIn: Map<string, string>,
  forced: Platform | undefined,
): { platform: Platform; kind: Kind } | { reason: string } {
  if (fileName.endsWith(".blockmap")) {
    const base = classify(fileName.slice(0, -".blockmap".length), listedIn, forced);
    return "reason" in base ? base : { platform: base.platform, kind: "blockmap" };
  }
  const extension = extensionOf(fileName);
  const kind: Kind | undefined =
    extension === ".zip" ? "zip" : INSTALLER_EXTENSIONS.includes(extension) ? "installer" : undefined;
  if (!kind) return { reason: "not an installer, zip or blockmap" };
  if (forced) return { platform: forced, kind };
  const feed = listedIn.has(fileName) ? FEED_FILES[listedIn.get(fileName)!] : undefined;
  const family = feed?.family ?? FAMILY_OF_EXTENSION[extension] ?? familyOfName(fileName);
  if (!family) return { reason: "its platform is unknown (name it in an update-info file, or pass --platform)" };
  const arch = feed?.arch ?? archOf(fileName);
  if (arch === "ia32") return { reason: "32-bit builds have no platform here" };
  if (arch === "universal") return { reason: "a universal build fits two platforms; pass --platform" };
  return { platform: `${family}-${arch}` as Platform, kind };
}

/** Files of update-info files, by name: which update-info file lists each one, and its sha512. */
async function readUpdateInfos(
  dir: string,
  names: string[],
): Promise<{ infos: UpdateInfo[]; listedIn: Map<string, string>; sha512: Map<string, string> }> {
  const infos: UpdateInfo[] = [];
  const listedIn = new Map<string, string>();
  const sha512 = new Map<string, string>();
  for (const name of names.filter((n) => /^latest.*\.yml$/.test(n)).sort()) {
    const info = parseUpdateInfo(await readFile(join(dir, name), "utf8"));
    infos.push(info);
    const entries = [
      ...info.files,
      ...(info.scalars["path"] ? [{ url: info.scalars["path"], sha512: info.scalars["sha512"] ?? "" }] : []),
    ];
    for (const file of entries) {
      const fileName = decodeURIComponent(file["url"] ?? "");
      if (!fileName) continue;
      if (FEED_FILES[name]) listedIn.set(fileName, name);
      if (file["sha512"]) sha512.set(fileName, file["sha512"]);
    }
  }
  return { infos, listedIn, sha512 };
}

const preference = (c: Candidate) =>
  [c.listed ? 0 : 1, [...INSTALLER_EXTENSIONS, ".zip"].indexOf(extensionOf(c.fileName)), c.fileName] as const;
function compare(a: Candidate, b: Candidate): number {
  const [x, y] = [preference(a), preference(b)];
  return x[0] - y[0] || x[1] - y[1] || (x[2] < y[2] ? -1 : x[2] > y[2] ? 1 : 0);
}

/** The update file of a platform, whose blockmap electron-updater's differential download reads. */
function updateFileOf(platform: Platform, chosen: Map<string, Candidate>): Candidate | undefined {
  const zip = chosen.get(`${platform}/zip`);
  const installer = chosen.get(`${platform}/installer`);
  return platform.startsWith("darwin") ? (zip ?? installer) : (installer ?? zip);
}

/** Reads `dir`: see the file comment. `platform` forces every artifact onto one platform. */
export async function readDist(dir: string, platform?: Platform): Promise<Dist> {
  // Symbolic links count: the electron-builder publisher stages files as links.
  const names = (await readdir(dir, { withFileTypes: true }))
    .filter((e) => e.isFile() || e.isSymbolicLink())
    .map((e) => e.name);
  const { infos, listedIn, sha512 } = await readUpdateInfos(dir, names);
  const scalars = Object.assign({}, ...infos.map((i) => i.scalars)) as Record<string, string>;
  const skipped: Dist["skipped"] = [];
  const candidates: Candidate[] = [];
  for (const fileName of names.sort()) {
    if (/^latest.*\.yml$/.test(fileName) || fileName.endsWith(".yaml") || fileName.startsWith(".")) continue;
    const verdict = classify(fileName, listedIn, platform);
    if ("reason" in verdict) {
      skipped.push({ fileName, reason: verdict.reason });
      continue;
    }
    const path = join(dir, fileName);
    candidates.push({ path, fileName, ...verdict, size: (await stat(path)).size, listed: listedIn.has(fileName) });
  }
  // One installer and one zip per platform first, then the blockmap of the platform's update file.
  const chosen = new Map<string, Candidate>();
  for (const c of candidates.filter((c) => c.kind !== "blockmap").sort(compare)) {
    const slot = `${c.platform}/${c.kind}`;
    const winner = chosen.get(slot);
    if (winner)
      skipped.push({
        fileName: c.fileName,
        reason: `one ${c.kind} per platform: ${winner.fileName} is the ${c.platform} ${c.kind}`,
      });
    else chosen.set(slot, c);
  }
  for (const p of PLATFORMS) {
    const blockmaps = candidates.filter((c) => c.kind === "blockmap" && c.platform === p);
    const base = updateFileOf(p, chosen);
    const pick =
      blockmaps.find((b) => base && b.fileName === `${base.fileName}.blockmap`) ??
      blockmaps.find((b) => [...chosen.values()].some((c) => `${c.fileName}.blockmap` === b.fileName));
    for (const b of blockmaps) {
      if (b === pick) chosen.set(`${p}/blockmap`, b);
      else
        skipped.push({
          fileName: b.fileName,
          reason: pick
            ? `one blockmap per platform: ${pick.fileName} is the ${p} blockmap`
            : "no chosen artifact of its platform matches it",
        });
    }
  }
  const artifacts = [...chosen.values()]
    .map(({ listed: _listed, ...a }) => a)
    .sort((a, b) => PLATFORMS.indexOf(a.platform) - PLATFORMS.indexOf(b.platform) || a.kind.localeCompare(b.kind));
  return {
    ...(scalars["version"] ? { version: scalars["version"] } : {}),
    ...(scalars["releaseName"] ? { releaseName: scalars["releaseName"] } : {}),
    ...(scalars["releaseNotes"] ? { releaseNotes: scalars["releaseNotes"] } : {}),
    ...(scalars["releaseDate"] ? { releaseDate: scalars["releaseDate"] } : {}),
    listedSha512: sha512,
    artifacts,
    skipped,
  };
}
