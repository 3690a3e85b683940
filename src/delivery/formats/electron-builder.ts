/**
 * Update feeds (SPEC "Feed", CONTRACT section 5): electron-builder's `UpdateInfo` YAML listing the highest release
 * the caller may install for a platform, with absolute download URLs (tokenised for a licensed caller of a gated
 * release). Nothing installable answers 204, or with Updates:EmptyFeedAsYaml a 200 with the newest visible version
 * and `stagingPercentage: 0`, which every electron-updater reads as "no update".
 */
import { stringify } from "yaml";
import type { ServiceContext } from "../../http/context";
import { memo } from "../../kernel/memo";
import { type Platform, type ReleaseWithFiles, publishedAt } from "../catalog";
import { downloadFor } from "../download-info";
import { notesText } from "./notes";
import type { FeedInput, Selection } from "../selection";

/** The installers and zips a feed lists for a release; macOS updaters want the zip first. */
function feedFiles(entry: ReleaseWithFiles, platform: Platform) {
  const files = entry.files.filter((f) => f.kind === "installer" || f.kind === "zip");
  const zipFirst = platform.startsWith("darwin");
  return files.sort((a, b) =>
    a.kind === b.kind ? a.fileName.localeCompare(b.fileName) : (a.kind === "zip") === zipFirst ? -1 : 1,
  );
}

/** YAML 1.1 rules, so that js-yaml (electron-updater's parser) reads every version and date as a string. */
const YAML_OPTIONS = {
  version: "1.1",
  defaultStringType: "QUOTE_DOUBLE",
  defaultKeyType: "PLAIN",
  lineWidth: 0,
} as const;
/** Feeds' YAML by their content with the URLs left out: a release's feed is written once per isolate, not per poll. */
const yamlMemo = memo<string, string>("feed-yaml", {
  key: "the feed's content as JSON, URLs replaced by marks",
  max: 256,
});
/** What a URL stands in for in the remembered YAML; a URL holds neither `<` nor `>` (they are percent-encoded). */
const urlMark = (i: number) => `<url ${i}>`;
/** URL text that YAML writes double-quoted as it is, so it can take a mark's place without being escaped. */
const PLAIN_URL = /^[A-Za-z0-9\-._~:/?#[\]@!$&'()*+,;=%]*$/;

/**
 * The YAML of a feed. Its text, but for the download URLs (which carry a caller's token), is the same for every
 * poll of a release: it is remembered with a mark in each URL's place, and the URLs are put in.
 */
export async function feedYaml(
  ctx: ServiceContext,
  input: FeedInput,
  entry: ReleaseWithFiles,
  options: { staged?: number | undefined } = {},
): Promise<string> {
  const files = await Promise.all(
    feedFiles(entry, input.platform).map(async (file) => {
      const info = await downloadFor(ctx, input, entry, file);
      return { url: info.url, sha512: info.sha512, size: info.size };
    }),
  );
  const urls = files.map((f) => f.url);
  if (!urls.every((url) => PLAIN_URL.test(url))) return stringify(feedInfo(entry, files, options), YAML_OPTIONS);
  const marked = files.map((f, i) => ({ ...f, url: urlMark(i) }));
  const info = feedInfo(entry, marked, options);
  const key = JSON.stringify(info);
  let yaml = yamlMemo.get(key);
  if (yaml === undefined) {
    yaml = yamlMemo.keep(key, stringify(info, YAML_OPTIONS));
  }
  return yaml.replace(/<url (\d+)>/g, (_, i: string) => urls[Number(i)] ?? "");
}

function feedInfo(
  entry: ReleaseWithFiles,
  files: { url: string; sha512: string; size: number }[],
  options: { staged?: number | undefined },
) {
  const release = entry.release;
  const notes = notesText(release);
  // Only what the selection says: a caller the server admitted (a cohort id) gets no percentage to apply again.
  const stagingPercentage = options.staged;
  return {
    version: release.version,
    files,
    ...(files[0] ? { path: files[0].url, sha512: files[0].sha512 } : {}),
    releaseDate: publishedAt(release),
    ...(release.name ? { releaseName: release.name } : {}),
    ...(notes ? { releaseNotes: notes } : {}),
    ...(stagingPercentage !== undefined ? { stagingPercentage } : {}),
  };
}

/** The feed for "nothing installable" when Updates:EmptyFeedAsYaml is on: the newest visible release, staged at 0 %. */
export async function emptyFeedYaml(
  ctx: ServiceContext,
  input: FeedInput,
  selection?: Pick<Selection, "newest">,
): Promise<string | undefined> {
  // The newest the caller may see: a halted release, or one for another audience, is not named to it.
  const newest = selection ? selection.newest : input.releases[0];
  if (!newest) return undefined;
  return feedYaml(ctx, { ...input, caller: { kind: "anonymous" } }, newest, { staged: 0 });
}
