/**
 * Velopack (CONTRACT section 9): its feed `releases.{channel}.json`, `{"Assets":[{PackageId, Version, Type, FileName,
 * SHA1, SHA256, Size, NotesMarkdown, NotesHtml}]}` (Velopack's VelopackAssetFeed); FileName is a bare name the client
 * resolves against its feed URL and keeps as the local file name. Which packages it lists is the package plan's
 * decision (nupkg.ts).
 */
import { ApiError } from "../../kernel/errors";
import { CHANNELS, type Platform } from "../../records/vocabulary";
import { notesHtml, notesText } from "./notes";
import { type PackagePlan, listed } from "./nupkg";

/** One asset of Velopack's feed (VelopackAsset: field names and types as Velopack's own serde and TypeScript types). */
export interface VelopackAsset {
  PackageId: string;
  Version: string;
  Type: "Full" | "Delta";
  FileName: string;
  SHA1: string;
  SHA256: string;
  Size: number;
  NotesMarkdown: string;
  NotesHtml: string;
}

/** The package id Velopack's `vpk pack` puts before the version in a package's name (`MyApp-1.2.0-full.nupkg`). */
function packageIdOf(fileName: string, version: string, fallback: string): string {
  const at = fileName.indexOf(`-${version}`);
  return at > 0 ? fileName.slice(0, at) : fallback;
}

/**
 * Velopack's `releases.{channel}.json` for a plan. "No update" is an empty `Assets` (Velopack: "the remote feed is
 * empty", no update). The packages are named by bare file name: the client fetches them from its feed folder (the
 * folder route answers with the download route's URL, tokenised as every feed's). Velopack applies no rollout of its
 * own, so a rollout the server cannot decide (no install id, no license) offers nothing.
 */
export function velopackFeed(plan: PackagePlan, productCode: string): { Assets: VelopackAsset[] } {
  return {
    Assets: (plan.staged === undefined ? listed(plan) : []).map((step) => {
      const release = step.entry.release;
      const version = release.version;
      return {
        PackageId: packageIdOf(step.file.fileName, version, productCode),
        Version: version,
        Type: step.type,
        FileName: step.file.fileName,
        SHA1: step.file.sha1.toUpperCase(),
        SHA256: step.file.sha256,
        Size: step.file.size,
        NotesMarkdown: notesText(release),
        NotesHtml: notesHtml(release),
      };
    }),
  };
}

/** Velopack's operating system names, which its default channels are made of. */
const VELOPACK_OS: Record<string, string> = { win: "win", darwin: "osx", linux: "linux" };

/**
 * The channel a Velopack feed file names: `releases.<channel>.json`, stable or insider; Velopack's default channel of
 * the platform's operating system (a pack without `--channel`: `win`, `osx`, `linux`, or with the architecture,
 * `osx-arm64`) is the stable channel.
 */
export function velopackChannel(file: string, platform: Platform): string | undefined {
  const m = /^releases\.([A-Za-z0-9_-]{1,32})\.json$/.exec(file);
  if (!m) return undefined;
  const name = m[1]!;
  if ((CHANNELS as readonly string[]).includes(name)) return name;
  const [family, arch] = platform.split("-") as [string, string];
  const os = VELOPACK_OS[family]!;
  if (name === os || name === `${os}-${arch}`) return "stable";
  throw new ApiError(
    404,
    `No channel '${name}': releases.stable.json, releases.insider.json, or releases.${os}.json / releases.${os}-${arch}.json (stable)`,
  );
}
