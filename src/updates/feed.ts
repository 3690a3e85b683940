/**
 * Update feeds (SPEC "Feed", CONTRACT section 5): electron-builder's `UpdateInfo` YAML listing the highest release
 * the caller may install for a platform, with absolute download URLs (tokenised for a licensed caller of a gated
 * release). Nothing installable answers 204, or with Updates:EmptyFeedAsYaml a 200 with the newest visible version
 * and `stagingPercentage: 0`, which every electron-updater reads as "no update".
 */
import { stringify } from "yaml";
import type { ServiceContext } from "../http/context";
import { type Caller, licenseOf } from "./caller";
import { type Platform, type ReleaseWithFiles, coveredByMaintenance, platformVerdict, publishedAt } from "./catalog";
import { type UpdateCheckInput, downloadFor } from "./update-check";

export interface FeedInput {
  platform: Platform;
  caller: Caller;
  releases: ReleaseWithFiles[];
  downloadUrl: UpdateCheckInput["downloadUrl"];
}

/** The feed's release for the caller, or undefined when nothing is installable (the platform rule comes first). */
export function feedRelease(
  ctx: ServiceContext,
  input: Pick<FeedInput, "platform" | "caller" | "releases">,
): ReleaseWithFiles | undefined {
  const license = licenseOf(input.caller);
  if (!platformVerdict(ctx.config, input.platform, license).allowed) return undefined;
  return input.releases.find((r) => coveredByMaintenance(license, r.release));
}

/** The installers and zips a feed lists for a release; macOS updaters want the zip first. */
function feedFiles(entry: ReleaseWithFiles, platform: Platform) {
  const files = entry.files.filter((f) => f.kind === "installer" || f.kind === "zip");
  const zipFirst = platform.startsWith("darwin");
  return files.sort((a, b) =>
    a.kind === b.kind ? a.fileName.localeCompare(b.fileName) : (a.kind === "zip") === zipFirst ? -1 : 1,
  );
}

/**
 * The YAML of a feed. Serialized with YAML 1.1 rules so that js-yaml (electron-updater's parser) reads every
 * version and date as a string.
 */
export async function feedYaml(
  ctx: ServiceContext,
  input: FeedInput,
  entry: ReleaseWithFiles,
  options: { staged?: number } = {},
): Promise<string> {
  const files = await Promise.all(
    feedFiles(entry, input.platform).map(async (file) => {
      const info = await downloadFor(ctx, input, entry, file);
      return { url: info.url, sha512: info.sha512, size: info.size };
    }),
  );
  const release = entry.release;
  const stagingPercentage = options.staged ?? release.stagingPercentage ?? undefined;
  const info = {
    version: release.version,
    files,
    ...(files[0] ? { path: files[0].url, sha512: files[0].sha512 } : {}),
    releaseDate: publishedAt(release),
    ...(release.name ? { releaseName: release.name } : {}),
    ...(release.releaseNotes ? { releaseNotes: release.releaseNotes } : {}),
    ...(stagingPercentage !== undefined ? { stagingPercentage } : {}),
  };
  return stringify(info, { version: "1.1", defaultStringType: "QUOTE_DOUBLE", defaultKeyType: "PLAIN", lineWidth: 0 });
}

/** The feed for "nothing installable" when Updates:EmptyFeedAsYaml is on: the newest visible release, staged at 0 %. */
export async function emptyFeedYaml(ctx: ServiceContext, input: FeedInput): Promise<string | undefined> {
  const newest = input.releases[0];
  if (!newest) return undefined;
  return feedYaml(ctx, { ...input, caller: { kind: "anonymous" } }, newest, { staged: 0 });
}
