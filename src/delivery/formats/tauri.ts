/**
 * Tauri's updater (tauri-plugin-updater; CONTRACT section 9): which service platform a Tauri `{target}`/`{arch}` is,
 * which artifact of a release it installs (its updater bundle, else an installer, always with the minisign signature
 * `tauri build` wrote beside it), and the JSON it reads: the dynamic server's `{version, notes, pub_date, url,
 * signature}` and the static file's `{version, notes, pub_date, platforms: {"<target>-<arch>": {url, signature}}}`.
 */
import { ApiError } from "../../kernel/errors";
import type { DownloadRow, Offerable, Platform, ReleaseWithFiles } from "../catalog";
import { publishedAt } from "../catalog";
import { isSparkleSignature } from "../../updates/vendor-signatures";
import { notesText } from "./notes";

/** `{{target}}` of tauri-plugin-updater's endpoint template. */
export const TAURI_TARGETS = ["windows", "darwin", "linux"] as const;
/** `{{arch}}` of tauri-plugin-updater's endpoint template. */
export const TAURI_ARCHES = ["x86_64", "aarch64", "i686", "armv7"] as const;

/** The service's platform of each Tauri target and arch it serves (i686 and armv7 have none). */
const PLATFORM_OF: Readonly<Record<string, Platform>> = {
  "windows-x86_64": "win-x64",
  "windows-aarch64": "win-arm64",
  "darwin-x86_64": "darwin-x64",
  "darwin-aarch64": "darwin-arm64",
  "linux-x86_64": "linux-x64",
  "linux-aarch64": "linux-arm64",
};

/** The Tauri `<target>-<arch>` of each service platform (the static file's platform keys). */
export const TAURI_KEY_OF: Readonly<Record<Platform, string>> = Object.fromEntries(
  Object.entries(PLATFORM_OF).map(([key, platform]) => [platform, key]),
) as Record<Platform, string>;

/** The service platform of a Tauri target and arch; 404 naming what is served for anything else. */
export function tauriPlatform(target: string, arch: string): Platform {
  if (!(TAURI_TARGETS as readonly string[]).includes(target))
    throw new ApiError(404, `Unknown Tauri target '${target}': one of ${TAURI_TARGETS.join(", ")}`);
  if (!(TAURI_ARCHES as readonly string[]).includes(arch))
    throw new ApiError(404, `Unknown Tauri arch '${arch}': one of ${TAURI_ARCHES.join(", ")}`);
  const platform = PLATFORM_OF[`${target}-${arch}`];
  if (!platform)
    throw new ApiError(
      404,
      `No updates for ${target} ${arch}: this service serves ${Object.keys(PLATFORM_OF).join(", ")}`,
    );
  return platform;
}

/**
 * What Tauri installs: an updater bundle (archive), else an installer (Tauri 2's .exe, .msi, .AppImage), signed by
 * `tauri build` (its .sig text; a Sparkle edSignature is not one).
 */
export const TAURI_FILES: Offerable = {
  name: "tauri",
  serves: (f) =>
    (f.kind === "archive" || f.kind === "installer") && f.signature !== null && !isSparkleSignature(f.signature),
};

/** The artifact of a release Tauri installs (TAURI_FILES; the archive first). */
export function tauriFile(entry: ReleaseWithFiles): DownloadRow | undefined {
  const signed = entry.files.filter(TAURI_FILES.serves);
  return signed.find((f) => f.kind === "archive") ?? signed[0];
}

/** An instant as RFC 3339 in UTC without fractional seconds (what Tauri's `pub_date` parser and Go's time read). */
export function rfc3339(iso: string): string {
  return new Date(iso).toISOString().replace(/\.\d{3}Z$/, "Z");
}

/** The dynamic server's answer for a release and the URL of its file. */
export function tauriUpdate(entry: ReleaseWithFiles, file: DownloadRow, url: string) {
  const release = entry.release;
  return {
    version: release.version,
    notes: notesText(release),
    pub_date: rfc3339(publishedAt(release)),
    url,
    signature: file.signature ?? "",
  };
}

/** The static file: one version, and the platforms whose offered release is that version. */
export function tauriStatic(
  entry: ReleaseWithFiles,
  platforms: { platform: Platform; file: DownloadRow; url: string }[],
) {
  const release = entry.release;
  return {
    version: release.version,
    notes: notesText(release),
    pub_date: rfc3339(publishedAt(release)),
    platforms: Object.fromEntries(
      platforms.map((p) => [TAURI_KEY_OF[p.platform], { url: p.url, signature: p.file.signature ?? "" }]),
    ),
  };
}
