/**
 * Sparkle's reading of an appcast, for the tests (in workerd and in Node): strict, namespace-aware XML (sax), the
 * elements of an item as SUAppcast and SUAppcastItem take them, and the choice SUAppcastDriver makes for an app: items
 * for another OS or an unlisted channel are dropped, so are items whose `sparkle:minimumSystemVersion` is above the
 * running macOS or `sparkle:maximumSystemVersion` below it, the highest `sparkle:version` wins (the first of equals),
 * and it is an update only when above the app's CFBundleVersion, all by SUStandardVersionComparator
 * (tools/publish/sparkle-version.ts, checked against Sparkle's own test vectors in test/node/publish-sparkle.test.ts).
 */
import sax from "sax";
import { compareSparkleVersions } from "../tools/publish/sparkle-version.ts";

export const SPARKLE_NS = "http://www.andymatuschak.org/xml-namespaces/sparkle";

/** An appcast item as Sparkle reads one (SUAppcastItem): its elements, and the enclosure's attributes. */
export interface SparkleItem {
  title?: string;
  link?: string;
  pubDate?: string;
  description?: string;
  /** The description's sparkle:format (html when absent). */
  descriptionFormat?: string;
  version?: string;
  shortVersionString?: string;
  channel?: string;
  phasedRolloutInterval?: string;
  criticalUpdate?: { version?: string };
  minimumAutoupdateVersion?: string;
  minimumSystemVersion?: string;
  maximumSystemVersion?: string;
  /** sparkle:informationalUpdate: its sparkle:version children, and `<V` for each sparkle:belowVersion. */
  informationalUpdate?: string[];
  enclosure?: { url?: string; length?: string; type?: string; edSignature?: string; os?: string };
}

const TEXT_FIELDS: Record<string, keyof SparkleItem> = {
  title: "title",
  link: "link",
  pubDate: "pubDate",
  description: "description",
  "sparkle:version": "version",
  "sparkle:shortVersionString": "shortVersionString",
  "sparkle:channel": "channel",
  "sparkle:phasedRolloutInterval": "phasedRolloutInterval",
  "sparkle:minimumAutoupdateVersion": "minimumAutoupdateVersion",
  "sparkle:minimumSystemVersion": "minimumSystemVersion",
  "sparkle:maximumSystemVersion": "maximumSystemVersion",
};

/**
 * Reads an appcast as Sparkle does: `rss/channel/item`, Sparkle's elements by their namespace URI (not their
 * prefix), the version from `sparkle:version` (else the enclosure's attribute), strict XML (a malformed appcast
 * throws).
 */
export function readAppcast(xml: string): { rssVersion?: string; title?: string; items: SparkleItem[] } {
  const parser = sax.parser(true, { xmlns: true });
  const stack: string[] = [];
  const items: SparkleItem[] = [];
  let rssVersion: string | undefined;
  let title: string | undefined;
  let item: SparkleItem | undefined;
  let text = "";
  parser.onerror = (e) => {
    throw e;
  };
  parser.onopentag = (tag) => {
    const name =
      tag.uri === SPARKLE_NS ? `sparkle:${tag.local}` : tag.uri === "" ? tag.local : `{${tag.uri}}${tag.local}`;
    stack.push(name);
    text = "";
    const attr = (uri: string, local: string) =>
      Object.values(tag.attributes).find((a) => a.uri === uri && a.local === local)?.value;
    const path = stack.join("/");
    if (name === "rss") rssVersion = attr("", "version");
    if (path === "rss/channel/item") item = {};
    if (!item) return;
    if (path === "rss/channel/item/enclosure") {
      item.enclosure = {
        url: attr("", "url"),
        length: attr("", "length"),
        type: attr("", "type"),
        edSignature: attr(SPARKLE_NS, "edSignature"),
        ...(attr(SPARKLE_NS, "os") ? { os: attr(SPARKLE_NS, "os") } : {}),
      };
      item.version ??= attr(SPARKLE_NS, "version");
      item.shortVersionString ??= attr(SPARKLE_NS, "shortVersionString");
    }
    if (name === "sparkle:criticalUpdate") item.criticalUpdate = { version: attr(SPARKLE_NS, "version") };
    if (name === "sparkle:informationalUpdate") item.informationalUpdate = [];
    if (name === "description" && attr(SPARKLE_NS, "format")) item.descriptionFormat = attr(SPARKLE_NS, "format");
  };
  parser.ontext = (t) => {
    text += t;
  };
  parser.oncdata = (t) => {
    text += t;
  };
  parser.onclosetag = () => {
    const path = stack.join("/");
    stack.pop();
    const value = text.trim();
    if (path === "rss/channel/title") title = value;
    if (path === "rss/channel/item" && item) {
      items.push(item);
      item = undefined;
      return;
    }
    if (!item) return;
    const field = path.slice("rss/channel/item/".length);
    if (field === "sparkle:informationalUpdate/sparkle:version") item.informationalUpdate?.push(value);
    if (field === "sparkle:informationalUpdate/sparkle:belowVersion") item.informationalUpdate?.push(`<${value}`);
    const key = TEXT_FIELDS[field];
    if (key) (item as Record<string, unknown>)[key] = value;
  };
  parser.write(xml).close();
  return { ...(rssVersion ? { rssVersion } : {}), ...(title ? { title } : {}), items };
}

/** The Mac and app that read the appcast. */
export interface SparkleHost {
  /** The app's CFBundleVersion. */
  bundleVersion: string;
  /** The running macOS (SUOperatingSystem systemVersionString), e.g. 13.4.1. */
  osVersion: string;
  /** The channels the app's delegate allows besides the default one. */
  channels?: string[];
}

/** What Sparkle found: the item, and how it treats it. */
export interface SparkleFound {
  item: SparkleItem;
  /** Shown with a link to the website, never installed (SPUAppcastItemStateResolver). */
  informational: boolean;
  /** Shown promptly, and cannot be skipped. */
  critical: boolean;
}

/** Whether an item runs on the host's macOS (SPUAppcastItemStateResolver's minimum and maximum checks). */
function runsOn(item: SparkleItem, osVersion: string): boolean {
  const min = item.minimumSystemVersion;
  const max = item.maximumSystemVersion;
  return (!min || compareSparkleVersions(min, osVersion) <= 0) && (!max || compareSparkleVersions(max, osVersion) >= 0);
}

/** SUAppcastItem's informational rule: a link to send the user to, and no enclosure or the informational element. */
function informationalFor(item: SparkleItem, bundleVersion: string): boolean {
  if (!item.link) return false;
  if (!item.enclosure) return true;
  const versions = item.informationalUpdate;
  if (!versions) return false;
  if (versions.length === 0 || versions.includes(bundleVersion)) return true;
  return versions.some((v) => v.startsWith("<") && compareSparkleVersions(bundleVersion, v.slice(1)) < 0);
}

/** The update Sparkle finds in an appcast for the host, or undefined when it finds none. */
export function sparkleFinds(xml: string, host: SparkleHost): SparkleFound | undefined {
  const candidates = readAppcast(xml).items.filter(
    (i) =>
      (i.enclosure?.os === undefined || i.enclosure.os === "macos") &&
      (i.channel === undefined || (host.channels ?? []).includes(i.channel)) &&
      runsOn(i, host.osVersion),
  );
  let best: SparkleItem | undefined;
  for (const candidate of candidates)
    if (!best || compareSparkleVersions(best.version ?? "", candidate.version ?? "") < 0) best = candidate;
  if (!best?.version || compareSparkleVersions(host.bundleVersion, best.version) >= 0) return undefined;
  const critical =
    best.criticalUpdate !== undefined &&
    (best.criticalUpdate.version === undefined ||
      compareSparkleVersions(host.bundleVersion, best.criticalUpdate.version) < 0);
  return { item: best, informational: informationalFor(best, host.bundleVersion), critical };
}
