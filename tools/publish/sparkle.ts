/**
 * Reading a Sparkle release, in either of the forms Sparkle's tools leave it:
 *
 * - `generate_appcast`'s folder: the archives (`.zip`, `.dmg`, `.pkg`, `.tar.xz`…), the delta files it made
 *   (`<App><new>-<old>.delta`), release notes beside the archives, and `appcast.xml`, an RSS feed whose items give
 *   `sparkle:version` (the bundle version, CFBundleVersion), `sparkle:shortVersionString`, optional
 *   `sparkle:channel`, `sparkle:minimumSystemVersion`, `sparkle:maximumSystemVersion`,
 *   `sparkle:informationalUpdate`, a `description` (HTML notes), and an `enclosure` with the archive's `url`,
 *   `length` and `sparkle:edSignature`. The newest item (highest sparkle:version by Sparkle's own comparator, or
 *   the one whose shortVersionString is --version) is published, and the release keeps what Sparkle decides with:
 *   its sparkle:version as `bundleVersion` (when it is not the release version: a build number such as 160, which
 *   Sparkle compares with the app's CFBundleVersion), the system versions, the informational flag, and the notes as
 *   HTML with their Markdown beside (notes.ts);
 * - a folder with the archive and `sign_update`'s output: the line `sparkle:edSignature="…" length="…"` (or the bare
 *   signature `sign_update -p` prints), given to --sparkle-signature as the text or a file holding it. The length
 *   picks the archive it signs.
 *
 * The archive is a `zip` (.zip), an `installer` (.dmg, .pkg) or an `archive` (.tar.*); its EdDSA signature goes to the
 * service untouched. Sparkle 2 refuses an update without one, so an archive without its edSignature is refused
 * before anything is sent. Deltas are left out (the service's appcast offers the full archive).
 */
import { readFile } from "node:fs/promises";
import { basename, join } from "node:path";
import type { Artifact, Dist, Kind, Platform, SparkleFields } from "./dist.ts";
import { markdownOf } from "./notes.ts";
import {
  archIn,
  compareSemver,
  entries,
  isSemver,
  platformOf,
  type ReadOptions,
  sizeOf,
  versionIn,
} from "./read-kit.ts";
import { compareSparkleVersions } from "./sparkle-version.ts";

/** An Ed25519 signature in standard base64: 64 bytes. */
const ED_SIGNATURE = /^[A-Za-z0-9+/]{86}==$/;

/** The kind of a Sparkle archive by its extension, or undefined for a file Sparkle does not install. */
export function sparkleKind(fileName: string): Kind | undefined {
  if (/\.zip$/i.test(fileName)) return "zip";
  if (/\.(dmg|pkg|mpkg)$/i.test(fileName)) return "installer";
  if (/\.(tar|tar\.gz|tgz|tar\.bz2|tbz|tar\.xz|txz|tar\.lzma|aar)$/i.test(fileName)) return "archive";
  return undefined;
}

/** One appcast item, as far as publishing needs it. */
export interface AppcastItem {
  title?: string;
  version?: string;
  shortVersionString?: string;
  channel?: string;
  pubDate?: string;
  description?: string;
  /** The description's `sparkle:format`: html (the default), markdown or plain-text. */
  descriptionFormat?: string;
  minimumSystemVersion?: string;
  maximumSystemVersion?: string;
  /** `sparkle:informationalUpdate`: the versions it is informational for, `<V` for belowVersion (none: every one). */
  informationalUpdate?: string[];
  enclosure?: Record<string, string>;
  deltas: Record<string, string>[];
}

const decodeXml = (s: string) =>
  s
    .replace(/<!\[CDATA\[([\s\S]*?)\]\]>/g, "$1")
    .replace(/&lt;/g, "<")
    .replace(/&gt;/g, ">")
    .replace(/&quot;/g, '"')
    .replace(/&apos;/g, "'")
    .replace(/&#(\d+);/g, (_, n: string) => String.fromCodePoint(Number(n)))
    .replace(/&amp;/g, "&");

function attributes(tag: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const m of tag.matchAll(/([\w:.-]+)\s*=\s*(?:"([^"]*)"|'([^']*)')/g)) out[m[1]!] = decodeXml(m[2] ?? m[3] ?? "");
  return out;
}

/** The items of an appcast (RSS 2.0 with Sparkle's namespace), read with Node's built-ins only. */
export function parseAppcast(xml: string): AppcastItem[] {
  const items: AppcastItem[] = [];
  for (const [, body] of xml.matchAll(/<item\b[^>]*>([\s\S]*?)<\/item>/g)) {
    const deltasBlock = /<sparkle:deltas>([\s\S]*?)<\/sparkle:deltas>/.exec(body!)?.[1] ?? "";
    // The versions inside sparkle:informationalUpdate are not the item's own.
    const informational = /<sparkle:informationalUpdate\b[^>]*?(?:\/>|>([\s\S]*?)<\/sparkle:informationalUpdate>)/.exec(
      body!,
    );
    const outside = body!
      .replace(/<sparkle:deltas>[\s\S]*?<\/sparkle:deltas>/, "")
      .replace(informational?.[0] ?? "", "");
    const text = (tag: string) => {
      const m = new RegExp(`<${tag}\\b[^>]*>([\\s\\S]*?)</${tag}>`).exec(outside);
      return m ? decodeXml(m[1]!).trim() : undefined;
    };
    const enclosure = /<enclosure\b([^>]*)\/?>/.exec(outside)?.[1];
    const enclosureAttributes = enclosure ? attributes(enclosure) : undefined;
    const item: AppcastItem = {
      deltas: [...deltasBlock.matchAll(/<enclosure\b([^>]*)\/?>/g)].map((m) => attributes(m[1]!)),
    };
    if (informational)
      item.informationalUpdate = [
        ...(informational[1] ?? "").matchAll(/<sparkle:(version|belowVersion)>([\s\S]*?)<\/sparkle:\1>/g),
      ].map((m) => `${m[1] === "belowVersion" ? "<" : ""}${decodeXml(m[2]!).trim()}`);
    const descriptionTag = /<description\b([^>]*)>/.exec(outside)?.[1];
    const format = descriptionTag ? attributes(descriptionTag)["sparkle:format"] : undefined;
    if (format) item.descriptionFormat = format.toLowerCase();
    // Sparkle 1 wrote the versions as enclosure attributes; Sparkle 2 as elements.
    const version = text("sparkle:version") ?? enclosureAttributes?.["sparkle:version"];
    const short = text("sparkle:shortVersionString") ?? enclosureAttributes?.["sparkle:shortVersionString"];
    const fields: [keyof AppcastItem, string | undefined][] = [
      ["title", text("title")],
      ["version", version],
      ["shortVersionString", short],
      ["channel", text("sparkle:channel")],
      ["pubDate", text("pubDate")],
      ["description", text("description")],
      ["minimumSystemVersion", text("sparkle:minimumSystemVersion")],
      ["maximumSystemVersion", text("sparkle:maximumSystemVersion")],
    ];
    for (const [key, value] of fields)
      if (value !== undefined) (item as unknown as Record<string, string>)[key] = value;
    if (enclosureAttributes) item.enclosure = enclosureAttributes;
    items.push(item);
  }
  return items;
}

/** `sign_update`'s output: the line, a bare signature, or a file holding either. */
async function signUpdateOutput(value: string): Promise<{ signature: string; length?: number }> {
  let text = value.trim();
  if (!text.includes("edSignature=") && !ED_SIGNATURE.test(text)) {
    try {
      text = (await readFile(value, "utf8")).trim();
    } catch (e) {
      throw new Error(
        `--sparkle-signature ${value}: neither sign_update's output (sparkle:edSignature="…" length="…") nor a file holding it (${(e as Error).message})`,
      );
    }
  }
  const signature = /edSignature="([^"]*)"/.exec(text)?.[1] ?? text;
  const length = /length="(\d+)"/.exec(text)?.[1];
  if (!ED_SIGNATURE.test(signature))
    throw new Error(
      `--sparkle-signature: ${signature.slice(0, 40)} is not an EdDSA signature (88 characters of base64); pass sign_update's output`,
    );
  return { signature, ...(length ? { length: Number(length) } : {}) };
}

/**
 * The platforms of a macOS archive: --platform, the architecture its name gives, else both (Sparkle apps are
 * usually universal; the same archive serves either Mac).
 */
function platformsOf(fileName: string, options: ReadOptions): Platform[] {
  if (options.platform) return [options.platform];
  const arch = archIn(fileName);
  if (!arch || arch === "universal") return ["darwin-arm64", "darwin-x64"];
  const platform = platformOf("darwin", arch);
  if (typeof platform !== "string") throw new Error(`${fileName}: ${platform.reason}`);
  return [platform];
}

/** A macOS version as the release record takes it (and Sparkle's docs write it): major[.minor[.patch]]. */
const SYSTEM_VERSION = /^\d+(\.\d+){0,2}$/;

/**
 * The item of appcast.xml to publish: the one whose shortVersionString (else sparkle:version) is --version, or one
 * Sparkle holds equal to it (`1.6` for 1.6.0); without --version the one Sparkle takes, the highest sparkle:version.
 */
function chosenItem(items: AppcastItem[], version: string | undefined): AppcastItem | undefined {
  let wanted = items;
  if (version !== undefined) {
    wanted = items.filter((i) => i.shortVersionString === version || i.version === version);
    if (wanted.length === 0)
      wanted = items.filter((i) => compareSparkleVersions(i.shortVersionString ?? i.version ?? "", version) === 0);
  }
  // Sparkle's own choice: the highest sparkle:version, the first of equals.
  return wanted.reduce<AppcastItem | undefined>(
    (best, i) => (!best || compareSparkleVersions(best.version ?? "", i.version ?? "") < 0 ? i : best),
    undefined,
  );
}

/**
 * What the release keeps of the item besides its files: the version (--version, else shortVersionString, else a
 * semantic sparkle:version), what Sparkle decides with (sparkle.ts SparkleFields), and the notes in both forms. What
 * disagrees without being wrong is a warning; what the service would refuse is an error, before anything is sent.
 */
function itemRelease(item: AppcastItem, archive: string, options: ReadOptions) {
  const warnings: string[] = [];
  const short = item.shortVersionString;
  const version = options.version ?? short ?? (item.version && isSemver(item.version) ? item.version : undefined);
  if (options.version !== undefined && short !== undefined && short !== options.version)
    warnings.push(
      `appcast.xml's sparkle:shortVersionString is ${short}, but ${options.version} is published: the service's appcast shows ${options.version}, and your app's CFBundleShortVersionString should say the same`,
    );
  const sparkle: SparkleFields = {};
  if (item.version !== undefined && item.version !== version) {
    if (!/^\S{1,64}$/.test(item.version))
      throw new Error(
        `${archive}: sparkle:version '${item.version}' is not a build version the service keeps (at most 64 characters, no spaces)`,
      );
    sparkle.bundleVersion = item.version;
  }
  for (const key of ["minimumSystemVersion", "maximumSystemVersion"] as const) {
    const value = item[key];
    if (value === undefined) continue;
    if (!SYSTEM_VERSION.test(value))
      throw new Error(`${archive}: sparkle:${key} '${value}' is not a macOS version (major.minor.patch, e.g. 12.0)`);
    sparkle[key] = value;
  }
  if (item.informationalUpdate?.length === 0) sparkle.informationalUpdate = true;
  else if (item.informationalUpdate)
    warnings.push(
      `appcast.xml's sparkle:informationalUpdate names versions (${item.informationalUpdate.join(", ")}); the release is informational for every version or none, so it is published as an update to install (set informationalUpdate on the release to announce it only)`,
    );
  // HTML unless the item says otherwise (Sparkle's own default); Markdown and plain text are releaseNotes as they are.
  const html = item.description && (item.descriptionFormat ?? "html") === "html" ? item.description : undefined;
  const notes = html ? markdownOf(html) : item.description;
  return {
    version,
    sparkle,
    warnings,
    ...(notes ? { releaseNotes: notes } : {}),
    ...(html ? { releaseNotesHtml: html } : {}),
  };
}

export async function readSparkle(dir: string, options: ReadOptions): Promise<Dist> {
  const { files } = await entries(dir);
  const skipped: Dist["skipped"] = [];
  const unsignedFix =
    "Sparkle refuses an update without its EdDSA signature: run sign_update on the archive and pass its output with --sparkle-signature, or publish generate_appcast's folder";
  let archive: string;
  let signature: string;
  let version: string | undefined;
  let release: Omit<ReturnType<typeof itemRelease>, "version"> = { sparkle: {}, warnings: [] };
  let date: string | undefined;
  let channel: string | undefined;
  if (options.sparkleSignature !== undefined) {
    const signed = await signUpdateOutput(options.sparkleSignature);
    const archives = files.filter((f) => sparkleKind(f));
    const sized = await Promise.all(archives.map(async (f) => ({ f, size: await sizeOf(join(dir, f)) })));
    const matching = signed.length === undefined ? sized : sized.filter((a) => a.size === signed.length);
    if (matching.length !== 1)
      throw new Error(
        matching.length === 0
          ? `${dir} holds no archive${signed.length !== undefined ? ` of ${signed.length} bytes (the length sign_update gave)` : ""}: pass the folder holding the archive you signed`
          : `${dir} holds several archives (${matching.map((a) => a.f).join(", ")}); put the one you signed in a folder of its own`,
      );
    archive = matching[0]!.f;
    signature = signed.signature;
    version = options.version ?? versionIn(archive);
  } else if (files.includes("appcast.xml")) {
    const items = parseAppcast(await readFile(join(dir, "appcast.xml"), "utf8"));
    const item = chosenItem(items, options.version);
    if (!item?.enclosure?.["url"])
      throw new Error(
        `${dir}/appcast.xml has no item${options.version ? ` of version ${options.version}` : ""} with an enclosure`,
      );
    archive = decodeURIComponent(basename(new URL(item.enclosure["url"], "https://x/").pathname));
    if (!files.includes(archive))
      throw new Error(
        `appcast.xml's newest item points at ${archive}, which is not in ${dir}; publish generate_appcast's folder`,
      );
    const length = Number(item.enclosure["length"]);
    const size = await sizeOf(join(dir, archive));
    if (item.enclosure["length"] !== undefined && length !== size)
      throw new Error(
        `${archive} is ${size} bytes but appcast.xml says ${length}: the file changed after signing; run generate_appcast again`,
      );
    const ed = item.enclosure["sparkle:edSignature"];
    if (!ed) throw new Error(`${archive}: appcast.xml gives no sparkle:edSignature. ${unsignedFix}`);
    if (!ED_SIGNATURE.test(ed))
      throw new Error(`${archive}: appcast.xml's sparkle:edSignature is not an EdDSA signature`);
    signature = ed;
    ({ version, ...release } = itemRelease(item, archive, options));
    if (item.pubDate && !Number.isNaN(Date.parse(item.pubDate))) date = new Date(item.pubDate).toISOString();
    channel = item.channel;
    for (const d of item.deltas)
      if (d["url"])
        skipped.push({
          fileName: decodeURIComponent(basename(new URL(d["url"], "https://x/").pathname)),
          reason: "a Sparkle delta: the service's appcast offers the full archive",
        });
    for (const other of items.filter((i) => i !== item && i.enclosure?.["url"]))
      skipped.push({
        fileName: decodeURIComponent(basename(new URL(other.enclosure!["url"]!, "https://x/").pathname)),
        reason: `version ${other.shortVersionString ?? other.version}: appcast.xml keeps earlier versions; ${version} is published`,
      });
  } else {
    const archives = files.filter((f) => sparkleKind(f));
    throw new Error(
      archives.length > 0
        ? `${archives.join(", ")}: no EdDSA signature (no appcast.xml, no --sparkle-signature), so nothing was published. ${unsignedFix}`
        : `${dir} holds no Sparkle archive (.zip, .dmg, .pkg, .tar.*) and no appcast.xml`,
    );
  }
  if (version !== undefined && !isSemver(version))
    throw new Error(
      `${archive}: version ${version} (sparkle:shortVersionString) is not a semantic version: pass --version as major.minor.patch`,
    );
  const path = join(dir, archive);
  const size = await sizeOf(path);
  const kind = sparkleKind(archive)!;
  const artifacts: Artifact[] = platformsOf(archive, options).map((platform) => ({
    path,
    fileName: archive,
    platform,
    kind,
    size,
    signature,
  }));
  const listedNames = new Set([archive, "appcast.xml", ...skipped.map((s) => s.fileName)]);
  for (const f of files.filter((f) => !listedNames.has(f)))
    skipped.push({ fileName: f, reason: sparkleKind(f) ? "not the signed archive" : "not a Sparkle archive" });
  return {
    ...(version ? { version } : {}),
    ...release,
    ...(date ? { releaseDate: date } : {}),
    ...(channel ? { suggestedChannel: { channel: "insider", from: `appcast.xml's sparkle:channel ${channel}` } } : {}),
    updateInfoFiles: [],
    listed: [],
    artifacts,
    skipped,
  };
}

/** A release as the order check needs it: its version and its sparkle:version when that is not the version. */
export interface SparkleRelease {
  version: string;
  bundleVersion?: string | null | undefined;
}

/**
 * Why Sparkle would never offer a build, or never offer past it: the releases just below and just above it by
 * semantic version must have a lower and a higher sparkle:version (bundleVersion, else version) by Sparkle's own
 * comparator, since Sparkle offers an item only when its sparkle:version is above the app's CFBundleVersion.
 */
export function sparkleOrderProblems(published: SparkleRelease, others: readonly SparkleRelease[]): string[] {
  const own = (r: SparkleRelease) => r.bundleVersion ?? r.version;
  const sorted = others
    .filter((r) => r.version !== published.version)
    .sort((a, b) => compareSemver(a.version, b.version));
  const below = sorted.filter((r) => compareSemver(r.version, published.version) < 0).at(-1);
  const above = sorted.find((r) => compareSemver(r.version, published.version) > 0);
  const problems: string[] = [];
  if (below && compareSparkleVersions(own(published), own(below)) <= 0)
    problems.push(
      `sparkle:version ${own(published)} of ${published.version} is not above ${own(below)}, the sparkle:version of ${below.version}: Sparkle on ${below.version} never offers ${published.version} (raise its CFBundleVersion)`,
    );
  if (above && compareSparkleVersions(own(above), own(published)) <= 0)
    problems.push(
      `sparkle:version ${own(above)} of ${above.version} is not above ${own(published)}, the sparkle:version of ${published.version}: Sparkle on ${published.version} never offers ${above.version}`,
    );
  return problems;
}
