/**
 * Electron's built-in autoUpdater on macOS (Squirrel.Mac; CONTRACT section 9): the platform names its feed URLs use,
 * the artifact it installs (the release's zip: Squirrel.Mac installs nothing else) and the JSON it reads, `{url, name,
 * notes, pub_date}` (Electron's "Update server JSON format"; 204 when there is no update).
 */
import { ApiError } from "../../kernel/errors";
import type { DownloadRow, Offerable, Platform, ReleaseWithFiles } from "../catalog";
import { publishedAt } from "../catalog";
import { notesText } from "./notes";
import { rfc3339 } from "./tauri";

/**
 * The platform names of a Squirrel.Mac feed URL: the service's own, and those of the usual Electron update servers
 * (update.electronjs.org's `darwin-x64`/`darwin-arm64`, Hazel's and Nuts' `darwin`, `darwin_arm64`, `osx`, `mac`).
 */
const PLATFORM_OF: Readonly<Record<string, Platform>> = {
  "darwin-arm64": "darwin-arm64",
  darwin_arm64: "darwin-arm64",
  "mac-arm64": "darwin-arm64",
  "darwin-x64": "darwin-x64",
  darwin_x64: "darwin-x64",
  darwin: "darwin-x64",
  osx: "darwin-x64",
  mac: "darwin-x64",
};
export const SQUIRREL_MAC_PLATFORMS = Object.keys(PLATFORM_OF);

/** The service platform of a Squirrel.Mac feed's platform name; 404 naming the accepted ones otherwise. */
export function squirrelMacPlatform(name: string): Platform {
  const platform = PLATFORM_OF[name];
  if (!platform)
    throw new ApiError(404, `Unknown Squirrel.Mac platform '${name}': one of ${SQUIRREL_MAC_PLATFORMS.join(", ")}`);
  return platform;
}

/** What Squirrel.Mac installs: a zip of the app. */
export const SQUIRREL_MAC_FILES: Offerable = { name: "squirrel-mac", serves: (f) => f.kind === "zip" };

export function squirrelMacFile(entry: ReleaseWithFiles): DownloadRow | undefined {
  return entry.files.find(SQUIRREL_MAC_FILES.serves);
}

/** The answer for a release and the URL of its zip. */
export function squirrelMacUpdate(entry: ReleaseWithFiles, url: string) {
  const release = entry.release;
  return {
    url,
    name: release.name ?? release.version,
    notes: notesText(release),
    pub_date: rfc3339(publishedAt(release)),
  };
}
