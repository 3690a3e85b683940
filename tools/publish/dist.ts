/**
 * Reading an electron-builder output folder: its update-info files and the artifacts beside them, classified into
 * the service's platforms and kinds. electron-builder names an update-info file after its channel and platform:
 * `latest.yml` (Windows), `latest-mac.yml`, `latest-linux.yml`, `latest-linux-arm64.yml`, and for a prerelease
 * version (`2.1.0-beta.1`, channel detection) `beta.yml`, `beta-mac.yml`, `alpha-linux.yml`… The channel maps to
 * the service's (UPDATE_CHANNELS); every file an update-info file lists is checked against the folder's bytes by
 * the publisher. A release holds one artifact per platform and kind, so when a folder has several candidates (an
 * AppImage, a .deb and an .rpm are all Linux installers) the one an update-info file names wins, and the others
 * are reported as skipped.
 */
import { readFile, readdir, stat } from "node:fs/promises";
import { join } from "node:path";

export const PLATFORMS = ["win-x64", "win-arm64", "darwin-arm64", "darwin-x64", "linux-x64", "linux-arm64"] as const;
export type Platform = (typeof PLATFORMS)[number];
/**
 * The service's artifact kinds (src/updates/release-download.ts KINDS): electron-builder's installer, zip and
 * blockmap; `delta` (a Squirrel.Windows or Velopack delta .nupkg), `package` (their full .nupkg) and `archive`
 * (Tauri's updater bundle, a Sparkle .tar.* archive).
 */
export type Kind = "installer" | "zip" | "blockmap" | "delta" | "package" | "archive";
type Family = "win" | "darwin" | "linux";

/** One file to publish. */
export interface Artifact {
  path: string;
  fileName: string;
  platform: Platform;
  kind: Kind;
  size: number;
  /** The vendor's signature, passed to the service untouched (Tauri's .sig text, Sparkle's EdDSA base64). */
  signature?: string;
  /** The SHA1 the tool declared (Squirrel RELEASES, Velopack), uppercase hex as written: the service checks it. */
  sha1?: string;
  /** The SHA256 the tool declared (Velopack), hex as written: the service checks it. */
  sha256?: string;
}

/** The service's release channels. */
export type Channel = "stable" | "insider";

/**
 * electron-builder's channel (the update-info file's name up to its platform suffix) -> the service's channel.
 * `latest` is electron-builder's stable channel; `beta` and `alpha` (a prerelease version's first identifier) are
 * prereleases, which the service offers on `insider`; the service's own names map to themselves (what
 * electron-builder writes when `publish.channel` names one). Any other name (`rc`, `nightly`) has no channel here:
 * the publisher refuses it unless told the channel (--channel, publish.channel).
 */
export const UPDATE_CHANNELS: Readonly<Record<string, Channel>> = {
  latest: "stable",
  beta: "insider",
  alpha: "insider",
  stable: "stable",
  insider: "insider",
};
/** Most stable first: with generateUpdatesFilesForAllChannels a build also writes the less stable channels' files. */
const STABILITY = ["latest", "stable", "beta", "insider", "alpha"];

/** The service channel of an electron-builder channel name, or undefined when it has none. */
export function serviceChannel(updateChannel: string): Channel | undefined {
  return Object.hasOwn(UPDATE_CHANNELS, updateChannel) ? UPDATE_CHANNELS[updateChannel] : undefined;
}

/**
 * One file a tool's metadata lists, with the hash it gives (electron-builder: sha512 base64; Squirrel: SHA1 hex;
 * Velopack: SHA1 and SHA256 hex), to cross-check the folder's bytes before anything is sent.
 */
export interface Listing {
  fileName: string;
  algorithm: "sha1" | "sha256" | "sha512";
  /** As the tool wrote it: base64 for sha512, hex (either case) for sha1 and sha256. */
  digest: string;
  /** The metadata file that lists it. */
  listedBy: string;
}

/**
 * What Sparkle decides with, kept on the release under the same names: `bundleVersion` (the item's sparkle:version,
 * CFBundleVersion, when it is not the release version), the macOS versions it runs on, and whether it is only
 * announced (sparkle:informationalUpdate).
 */
export interface SparkleFields {
  bundleVersion?: string;
  minimumSystemVersion?: string;
  maximumSystemVersion?: string;
  informationalUpdate?: boolean;
}

/** What a folder holds: the version and notes of its update info, the artifacts, and what was left out and why. */
export interface Dist {
  /** The channel the tool's own metadata suggests (a Sparkle item's sparkle:channel), when not electron-builder's. */
  suggestedChannel?: { channel: Channel; from: string };
  version?: string;
  releaseName?: string;
  /** Markdown or plain text (made from the HTML with turndown when the tool wrote HTML: notes.ts). */
  releaseNotes?: string;
  /** The notes as HTML, when the tool wrote them so (a Sparkle appcast's description). */
  releaseNotesHtml?: string;
  releaseDate?: string;
  /** The Sparkle item's own fields (sparkle.ts). */
  sparkle?: SparkleFields;
  /** What disagrees without stopping the publication (printed on stderr). */
  warnings?: string[];
  /** The update-info files, by name, with electron-builder's channel each is named after. */
  updateInfoFiles: { name: string; channel: string }[];
  /**
   * The folder's electron-builder channel: the most stable one its update-info files are named after (a build
   * with generateUpdatesFilesForAllChannels also writes the less stable channels' files, as copies).
   */
  updateChannel?: string;
  /** Every file the update-info files list. */
  listed: Listing[];
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
export type Arch = "x64" | "arm64" | "ia32" | "armv7l" | "universal";
/**
 * Which platforms an update-info file serves, by the suffix after its channel (CONTRACT section 5): none for
 * Windows (both architectures in one file), `-mac`, `-linux` (x64) and `-linux-<arch>` for another Linux arch
 * (`-arm` is armv7l).
 */
const FEED_SUFFIXES: Record<string, { family: Family; arch?: Arch }> = {
  "": { family: "win" },
  "-mac": { family: "darwin" },
  "-linux": { family: "linux", arch: "x64" },
  "-linux-arm64": { family: "linux", arch: "arm64" },
  "-linux-arm": { family: "linux", arch: "armv7l" },
  "-linux-armv7l": { family: "linux", arch: "armv7l" },
  "-linux-ia32": { family: "linux", arch: "ia32" },
};

/** Channel and platforms of an update-info file name (`beta-mac.yml`: beta, darwin), or undefined. */
export function updateInfoName(name: string): { channel: string; family: Family; arch?: Arch } | undefined {
  const m = /^([0-9A-Za-z-]+?)(-mac|-linux(?:-arm64|-armv7l|-arm|-ia32)?)?\.yml$/.exec(name);
  if (!m) return undefined;
  return { channel: m[1]!, ...FEED_SUFFIXES[m[2] ?? ""]! };
}

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
export function archOf(fileName: string): Arch {
  if (/(^|[-_. ])(arm64|aarch64)([-_. ]|$)/i.test(fileName)) return "arm64";
  if (/(^|[-_. ])(armv7l|armhf|arm)([-_. ]|$)/i.test(fileName)) return "armv7l";
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
  const feed = listedIn.has(fileName) ? updateInfoName(listedIn.get(fileName)!) : undefined;
  const family = feed?.family ?? FAMILY_OF_EXTENSION[extension] ?? familyOfName(fileName);
  if (!family) return { reason: "its platform is unknown (name it in an update-info file, or pass --platform)" };
  const arch = feed?.arch ?? archOf(fileName);
  if (arch === "ia32") return { reason: "32-bit builds have no platform here" };
  if (arch === "armv7l") return { reason: "32-bit ARM builds have no platform here" };
  if (arch === "universal") return { reason: "a universal build fits two platforms; pass --platform" };
  return { platform: `${family}-${arch}` as Platform, kind };
}

/**
 * The folder's update-info files: a `.yml` named like one (`<channel>[-mac|-linux[-arch]].yml`) that holds a
 * `version` (electron-builder's own `builder-debug.yml` holds none). Which file lists each artifact, and every
 * listing with its sha512.
 */
async function readUpdateInfos(
  dir: string,
  names: string[],
): Promise<{
  infos: { name: string; channel: string; info: UpdateInfo }[];
  listedIn: Map<string, string>;
  listed: Listing[];
}> {
  const infos: { name: string; channel: string; info: UpdateInfo }[] = [];
  const listedIn = new Map<string, string>();
  const listed: Listing[] = [];
  for (const name of names.sort()) {
    const named = updateInfoName(name);
    if (!named) continue;
    const info = parseUpdateInfo(await readFile(join(dir, name), "utf8"));
    if (!info.scalars["version"]) continue;
    infos.push({ name, channel: named.channel, info });
    const entries = [
      ...info.files,
      ...(info.scalars["path"] ? [{ url: info.scalars["path"], sha512: info.scalars["sha512"] ?? "" }] : []),
    ];
    for (const file of entries) {
      const fileName = decodeURIComponent(file["url"] ?? "");
      if (!fileName) continue;
      // The most stable channel's file classifies (its copies for less stable channels say the same).
      const before = listedIn.get(fileName);
      if (!before || rank(named.channel) < rank(updateInfoName(before)!.channel)) listedIn.set(fileName, name);
      if (file["sha512"]) listed.push({ fileName, algorithm: "sha512", digest: file["sha512"], listedBy: name });
    }
  }
  return { infos, listedIn, listed };
}

/** Stability rank of an electron-builder channel: known ones by STABILITY, unknown ones after them. */
function rank(channel: string): number {
  const at = STABILITY.indexOf(channel);
  return at < 0 ? STABILITY.length : at;
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
  const { infos, listedIn, listed } = await readUpdateInfos(dir, names);
  // One build's files: every update-info file names the same version.
  const versions = new Set(infos.map((i) => i.info.scalars["version"]));
  if (versions.size > 1)
    throw new Error(
      `${dir} mixes builds: ${infos.map((i) => `${i.name} is version ${i.info.scalars["version"]}`).join(", ")}; publish one build's output`,
    );
  const scalars = Object.assign({}, ...infos.map((i) => i.info.scalars)) as Record<string, string>;
  const updateInfoNames = new Set(infos.map((i) => i.name));
  const skipped: Dist["skipped"] = [];
  const candidates: Candidate[] = [];
  for (const fileName of names.sort()) {
    if (updateInfoNames.has(fileName) || fileName.endsWith(".yaml") || fileName.startsWith(".")) continue;
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
    updateInfoFiles: infos.map(({ name, channel }) => ({ name, channel })),
    ...(infos.length > 0
      ? { updateChannel: infos.map((i) => i.channel).sort((a, b) => rank(a) - rank(b) || a.localeCompare(b))[0]! }
      : {}),
    listed,
    artifacts,
    skipped,
  };
}
