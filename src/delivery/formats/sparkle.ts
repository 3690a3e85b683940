/**
 * Sparkle (macOS; CONTRACT section 9): the appcast it reads, RSS 2.0 with the Sparkle namespace, one item for the
 * release the caller is offered (an empty channel when there is none: Sparkle's "no update"), with the enclosure's
 * url, length, type and EdDSA signature as the vendor's `sign_update` made it, `sparkle:channel` for the insider
 * channel, `sparkle:phasedRolloutInterval` when Sparkle itself phases a staged release in (an anonymous caller the
 * server cannot place in a cohort), and the required-version tags of section 8: `sparkle:criticalUpdate` and
 * `sparkle:minimumAutoupdateVersion`.
 *
 * Sparkle offers an item when its `sparkle:version` is above the app's CFBundleVersion, so that is the release's
 * `bundleVersion` (a build number such as 300) when it has one, else its version; `sparkle:shortVersionString` is the
 * version shown. The versions Sparkle compares with CFBundleVersion (critical below, minimum autoupdate) are made
 * Sparkle versions the same way. `sparkle:minimumSystemVersion` and `sparkle:maximumSystemVersion` keep the update
 * from Macs it does not run on, `sparkle:informationalUpdate` announces it without installing it (Sparkle reads that
 * only with a `<link>`, the product's url, else the download), and the description is the notes as HTML (notes.ts).
 */
import { ApiError } from "../../kernel/errors";
import type { DownloadRow, Offerable, Platform, ReleaseWithFiles } from "../catalog";
import { publishedAt } from "../catalog";
import { compareVersions } from "../../records/versions";
import { isSparkleSignature } from "../../updates/vendor-signatures";
import { notesHtml } from "./notes";

export const SPARKLE_NAMESPACE = "http://www.andymatuschak.org/xml-namespaces/sparkle";

/** The seconds between Sparkle's rollout groups (7 groups: a staged release reaches everyone in a week). */
export const PHASED_ROLLOUT_INTERVAL = 86_400;

/** The platforms an appcast serves: macOS only. */
export const SPARKLE_PLATFORMS = ["darwin-arm64", "darwin-x64"] as const satisfies readonly Platform[];

/** The platform of an appcast request (default darwin-arm64); 400 for any other. */
export function sparklePlatform(value: string | undefined): Platform {
  const platform = value ?? "darwin-arm64";
  if (!(SPARKLE_PLATFORMS as readonly string[]).includes(platform))
    throw new ApiError(400, `Unknown Sparkle platform '${platform}': one of ${SPARKLE_PLATFORMS.join(", ")}`);
  return platform as Platform;
}

/**
 * What Sparkle installs: a zip, an archive (.tar.xz, .tar.gz, .tar.bz2) or an installer (.dmg, .pkg), always with its
 * EdDSA signature (base64 of 64 bytes: a Tauri archive's minisign text is not one).
 */
export const SPARKLE_FILES: Offerable = {
  name: "sparkle",
  serves: (f) =>
    (f.kind === "zip" || f.kind === "archive" || f.kind === "installer") &&
    f.signature !== null &&
    isSparkleSignature(f.signature),
};

/** The file of a release Sparkle installs: the zip first, then an archive, then an installer. */
export function sparkleFile(entry: ReleaseWithFiles): DownloadRow | undefined {
  const signed = entry.files.filter(SPARKLE_FILES.serves);
  return signed.find((f) => f.kind === "zip") ?? signed.find((f) => f.kind === "archive") ?? signed[0];
}

/** RFC 822 date as RSS wants it, in UTC with a numeric zone (what Sparkle's date formatter reads). */
export function rfc822(iso: string): string {
  return new Date(iso).toUTCString().replace("GMT", "+0000");
}

const ESCAPES: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&apos;" };
/** Drops the characters XML 1.0 cannot hold at all. */
const xmlChars = (value: string) =>
  // biome-ignore lint/suspicious/noControlCharactersInRegex: these are the control characters XML 1.0 keeps.
  value.replace(/[^\x09\x0A\x0D\x20-\uD7FF\uE000-\uFFFD\u{10000}-\u{10FFFF}]/gu, "");

/** Text or attribute value escaped for XML; characters XML 1.0 cannot hold at all are dropped. */
export function xmlText(value: string): string {
  return xmlChars(value).replace(/[&<>"']/g, (ch) => ESCAPES[ch]!);
}

/** Markup as character data, as Sparkle's documentation embeds HTML notes (a `]]>` inside is split across two). */
export function cdata(value: string): string {
  return `<![CDATA[${xmlChars(value).replaceAll("]]>", "]]]]><![CDATA[>")}]]>`;
}

export interface AppcastItem {
  entry: ReleaseWithFiles;
  file: DownloadRow;
  url: string;
  channel: string;
  /** The percentage Sparkle phases in (0 < staged < 100), when the server does not decide. */
  staged?: number | undefined;
  /** Callers below this version must take the update (sparkle:criticalUpdate sparkle:version). */
  criticalBelow?: string | undefined;
  /** The product's minimumVersion. */
  minimumVersion?: string | null | undefined;
  /** The releases the caller is admitted to: their bundleVersions make criticalBelow and minimumVersion Sparkle's. */
  admitted?: readonly ReleaseWithFiles[] | undefined;
}

/**
 * The sparkle:version that stands for a semantic version where Sparkle compares with CFBundleVersion: the
 * bundleVersion of the oldest release at or above it (the app below it runs an older release, whose CFBundleVersion
 * is lower), else the version itself (releases without bundleVersion are the semantic version in Sparkle's eyes).
 */
export function sparkleVersionOf(version: string, releases: readonly ReleaseWithFiles[]): string {
  let oldest: ReleaseWithFiles["release"] | undefined;
  for (const { release } of releases)
    if (
      compareVersions(release.version, version) >= 0 &&
      (!oldest || compareVersions(release.version, oldest.version) < 0)
    )
      oldest = release;
  return oldest?.bundleVersion ?? version;
}

/**
 * The version below which the offered release is critical: the newest critical release the caller is admitted to, up
 * to the offered one, or the product's minimumVersion when it is higher (capped at the offered release).
 */
export function criticalBelow(
  offered: ReleaseWithFiles,
  admitted: readonly ReleaseWithFiles[],
  minimumVersion: string | null | undefined,
): string | undefined {
  const version = offered.release.version;
  let below: string | undefined;
  for (const r of admitted) {
    if (!r.release.critical || compareVersions(r.release.version, version) > 0) continue;
    if (below === undefined || compareVersions(r.release.version, below) > 0) below = r.release.version;
  }
  if (minimumVersion) {
    const capped = compareVersions(minimumVersion, version) > 0 ? version : minimumVersion;
    if (below === undefined || compareVersions(capped, below) > 0) below = capped;
  }
  return below;
}

function itemXml(item: AppcastItem, link: string | null | undefined): string {
  const release = item.entry.release;
  const known = [item.entry, ...(item.admitted ?? [])];
  const notes = notesHtml(release);
  // Sparkle takes an item as informational only when it has a link to send the user to.
  const info = link || (release.informationalUpdate ? item.url : undefined);
  const lines = [
    "    <item>",
    `      <title>${xmlText(release.name ?? `Version ${release.version}`)}</title>`,
    ...(info ? [`      <link>${xmlText(info)}</link>`] : []),
    `      <pubDate>${rfc822(publishedAt(release))}</pubDate>`,
    `      <sparkle:version>${xmlText(release.bundleVersion ?? release.version)}</sparkle:version>`,
    `      <sparkle:shortVersionString>${xmlText(release.version)}</sparkle:shortVersionString>`,
  ];
  if (release.minimumSystemVersion)
    lines.push(
      `      <sparkle:minimumSystemVersion>${xmlText(release.minimumSystemVersion)}</sparkle:minimumSystemVersion>`,
    );
  if (release.maximumSystemVersion)
    lines.push(
      `      <sparkle:maximumSystemVersion>${xmlText(release.maximumSystemVersion)}</sparkle:maximumSystemVersion>`,
    );
  if (release.informationalUpdate) lines.push("      <sparkle:informationalUpdate/>");
  if (notes) lines.push(`      <description>${cdata(notes)}</description>`);
  if (item.channel !== "stable") lines.push(`      <sparkle:channel>${xmlText(item.channel)}</sparkle:channel>`);
  if (item.criticalBelow)
    lines.push(
      `      <sparkle:criticalUpdate sparkle:version="${xmlText(sparkleVersionOf(item.criticalBelow, known))}"></sparkle:criticalUpdate>`,
    );
  if (item.minimumVersion)
    lines.push(
      `      <sparkle:minimumAutoupdateVersion>${xmlText(sparkleVersionOf(item.minimumVersion, known))}</sparkle:minimumAutoupdateVersion>`,
    );
  if (item.staged !== undefined && item.staged > 0 && item.staged < 100)
    lines.push(`      <sparkle:phasedRolloutInterval>${PHASED_ROLLOUT_INTERVAL}</sparkle:phasedRolloutInterval>`);
  lines.push(
    `      <enclosure url="${xmlText(item.url)}" length="${item.file.size}" type="application/octet-stream" sparkle:edSignature="${xmlText(item.file.signature ?? "")}"/>`,
    "    </item>",
  );
  return lines.join("\n");
}

/** The appcast: the product's channel, with the offered release's item when there is one. */
export function appcastXml(
  product: { name: string; url?: string | null },
  channel: string,
  item: AppcastItem | undefined,
): string {
  return [
    '<?xml version="1.0" encoding="utf-8"?>',
    `<rss version="2.0" xmlns:sparkle="${SPARKLE_NAMESPACE}" xmlns:dc="http://purl.org/dc/elements/1.1/">`,
    "  <channel>",
    `    <title>${xmlText(product.name)}${channel === "stable" ? "" : ` (${xmlText(channel)})`}</title>`,
    `    <description>${xmlText(`Updates of ${product.name}`)}</description>`,
    "    <language>en</language>",
    ...(item ? [itemXml(item, product.url)] : []),
    "  </channel>",
    "</rss>",
    "",
  ].join("\n");
}
