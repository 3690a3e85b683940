/**
 * Reading `vpk pack`'s Releases folder: per channel (`win`, `osx`, `linux` by default, or the `--channel` given to
 * vpk) a release index `releases.<channel>.json` (`{"Assets":[{PackageId, Version, Type: "Full"|"Delta", FileName,
 * SHA1, SHA256, Size, NotesMarkdown, NotesHTML}]}`, every version the folder holds), the packages it names
 * (`<id>-<version>-full.nupkg` on Windows' default channel, `<id>-<version>-<channel>-full.nupkg` otherwise, and
 * `-delta.nupkg`), `assets.<channel>.json` (`{"Files":[…]}`, the newest pack's files), the legacy `RELEASES-<channel>`,
 * and the installers `<id>-<channel>-Setup.exe` / `-Setup.pkg`, `<id>-<channel>-Portable.zip`, `<id>.AppImage`.
 *
 * Each channel's newest version is published: its full package as `package`, its delta as `delta`, each checked
 * against the SHA1, SHA256 and size the index gives and sent with that SHA1; the Setup as `installer`, the Portable
 * zip as `zip`, the AppImage as `installer`. The channel's platform comes from its name (`win`, `osx-arm64`,
 * `linux-x64`…), its installer, or --platform.
 */
import { readFile } from "node:fs/promises";
import { basename, join } from "node:path";
import type { Arch, Artifact, Dist, Listing, Platform } from "./dist.ts";
import { archIn, compareSemver, entries, platformOf, type ReadOptions, sizeOf } from "./read-kit.ts";

/** One entry of a Velopack release index (VelopackAsset, as vpk serialises it). */
export interface VelopackAsset {
  PackageId?: string;
  Version: string;
  Type: "Full" | "Delta" | number;
  FileName: string;
  SHA1?: string;
  SHA256?: string;
  Size?: number;
  NotesMarkdown?: string;
  NotesHTML?: string;
}

const isDelta = (a: VelopackAsset) => a.Type === "Delta" || a.Type === 2;

/** The operating system family of a Velopack channel name or file, when it names one. */
function familyIn(name: string): "win" | "darwin" | "linux" | undefined {
  const word = (pattern: string) => new RegExp(`(^|[-_.])(${pattern})([-_.]|$)`, "i").test(name);
  if (word("win|windows")) return "win";
  if (word("osx|mac|macos")) return "darwin";
  if (word("linux")) return "linux";
  return undefined;
}

export async function readVelopack(dir: string, options: ReadOptions): Promise<Dist> {
  const { files } = await entries(dir);
  const channels = files.map((f) => /^releases\.(.+)\.json$/.exec(f)?.[1]).filter((c): c is string => c !== undefined);
  if (channels.length === 0) throw new Error(`${dir} has no releases.<channel>.json: pass vpk pack's Releases folder`);
  const skipped: Dist["skipped"] = [];
  const listed: Listing[] = [];
  const artifacts: Artifact[] = [];
  const used = new Set<string>();
  const versions = new Map<string, string>();
  let notes: string | undefined;
  for (const channel of channels) {
    const index = `releases.${channel}.json`;
    used.add(index);
    const feed = JSON.parse(await readFile(join(dir, index), "utf8")) as { Assets?: VelopackAsset[] };
    const assets = feed.Assets ?? [];
    const newest = assets
      .map((a) => a.Version)
      .sort(compareSemver)
      .at(-1);
    if (!newest) {
      skipped.push({ fileName: index, reason: "lists no package" });
      continue;
    }
    // The newest pack's other files: assets.<channel>.json names them; else vpk's names for the channel.
    const assetsFile = `assets.${channel}.json`;
    used.add(assetsFile);
    used.add(`RELEASES-${channel}`);
    const built = files.includes(assetsFile)
      ? ((JSON.parse(await readFile(join(dir, assetsFile), "utf8")) as { Files?: string[] }).Files ?? []).map((f) =>
          basename(f.replace(/\\/g, "/")),
        )
      : files;
    const installers = built.filter((f) => files.includes(f) && /-Setup\.(exe|pkg)$|\.AppImage$/.test(f));
    const portable = built.find((f) => files.includes(f) && f.endsWith("-Portable.zip"));
    const setup =
      installers.find((f) => f.endsWith(`-${channel}-Setup.exe`) || f.endsWith(`-${channel}-Setup.pkg`)) ??
      installers.find((f) => f.endsWith(".AppImage")) ??
      installers[0];
    // The channel's platform: --platform, else the OS its name or installer names, and the arch its name gives.
    let platform: Platform | { reason: string };
    if (options.platform) platform = options.platform;
    else {
      const family =
        familyIn(channel) ??
        (setup?.endsWith(".exe") ? "win" : setup?.endsWith(".pkg") ? "darwin" : setup ? "linux" : undefined);
      const arch: Arch | undefined = archIn(channel) ?? (family !== "darwin" ? "x64" : undefined);
      platform = !family
        ? {
            reason: `channel ${channel} names no operating system (win, osx, linux) and has no installer: pass --platform`,
          }
        : !arch
          ? { reason: `channel ${channel} names no architecture (osx-arm64, osx-x64): pass --platform` }
          : platformOf(family, arch);
    }
    const current = assets.filter((a) => a.Version === newest);
    for (const a of assets.filter((a) => a.Version !== newest)) {
      used.add(a.FileName);
      skipped.push({
        fileName: a.FileName,
        reason: `version ${a.Version}: ${index} keeps earlier versions; ${newest} is published`,
      });
    }
    if (typeof platform !== "string") {
      for (const a of current) skipped.push({ fileName: a.FileName, reason: platform.reason });
      continue;
    }
    if (artifacts.some((a) => a.platform === platform)) {
      for (const a of current)
        skipped.push({
          fileName: a.FileName,
          reason: `another channel already publishes ${platform}: pass --platform`,
        });
      continue;
    }
    versions.set(channel, newest);
    for (const asset of current) {
      used.add(asset.FileName);
      const kind = isDelta(asset) ? "delta" : "package";
      if (artifacts.some((a) => a.platform === platform && a.kind === kind)) {
        skipped.push({ fileName: asset.FileName, reason: `one ${kind} per platform` });
        continue;
      }
      if (!files.includes(asset.FileName))
        throw new Error(`${index} lists ${asset.FileName}, which is not in ${dir}; publish the whole Releases folder`);
      const path = join(dir, asset.FileName);
      const size = await sizeOf(path);
      if (asset.Size !== undefined && size !== asset.Size)
        throw new Error(
          `${asset.FileName} is ${size} bytes but ${index} says ${asset.Size}: the file changed after the build; rebuild the folder`,
        );
      if (!asset.SHA1 && !asset.SHA256) throw new Error(`${index} gives ${asset.FileName} no SHA1 or SHA256`);
      if (asset.SHA1) listed.push({ fileName: asset.FileName, algorithm: "sha1", digest: asset.SHA1, listedBy: index });
      if (asset.SHA256)
        listed.push({ fileName: asset.FileName, algorithm: "sha256", digest: asset.SHA256, listedBy: index });
      if (!isDelta(asset) && asset.NotesMarkdown) notes = asset.NotesMarkdown;
      artifacts.push({
        path,
        fileName: asset.FileName,
        platform,
        kind,
        size,
        ...(asset.SHA1 ? { sha1: asset.SHA1.toUpperCase() } : {}),
        ...(asset.SHA256 ? { sha256: asset.SHA256 } : {}),
      });
    }
    for (const [file, kind] of [
      [setup, "installer"],
      [portable, "zip"],
    ] as const) {
      if (!file) continue;
      used.add(file);
      artifacts.push({ path: join(dir, file), fileName: file, platform, kind, size: await sizeOf(join(dir, file)) });
    }
    for (const f of installers.filter((f) => f !== setup)) {
      used.add(f);
      skipped.push({ fileName: f, reason: `one installer per platform: ${setup} is the ${platform} installer` });
    }
  }
  const distinct = [...new Set(versions.values())];
  if (distinct.length > 1)
    throw new Error(
      `${dir} holds channels of different versions (${[...versions].map(([c, v]) => `${c}: ${v}`).join(", ")}); publish each version on its own`,
    );
  for (const f of files.filter((f) => !used.has(f)))
    skipped.push({ fileName: f, reason: "not the newest pack's package, installer or portable zip" });
  return {
    ...(distinct[0] ? { version: distinct[0] } : {}),
    ...(notes ? { releaseNotes: notes } : {}),
    updateInfoFiles: [],
    listed,
    artifacts,
    skipped,
  };
}
