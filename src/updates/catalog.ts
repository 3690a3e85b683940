/**
 * What the update routes read: a product by code, and its releases with their artifacts for one platform, in one
 * query (DESIGN: one D1 round trip on a cache miss). Plus the platform families and the rules of SPEC "Update and
 * maintenance rules" as pure functions over a license and a release.
 */
import { and, eq } from "drizzle-orm";
import type { PlatformEditions } from "../config";
import type { Config } from "../config";
import type { Db } from "../db/client";
import { productReleases, products, releaseDownloads } from "../db/schema";
import type { LicenseRow } from "../licensing/licenses";
import { compareVersions, isReleaseVersion } from "./versions";

export const PLATFORMS = ["win-x64", "win-arm64", "darwin-arm64", "darwin-x64", "linux-x64", "linux-arm64"] as const;
export type Platform = (typeof PLATFORMS)[number];
export const CHANNELS = ["stable", "insider"] as const;

export type ProductRow = typeof products.$inferSelect;
export type ReleaseRow = typeof productReleases.$inferSelect;
export type DownloadRow = typeof releaseDownloads.$inferSelect;

export interface ReleaseWithFiles {
  release: ReleaseRow;
  /** The platform's artifacts of this release. */
  files: DownloadRow[];
}

/** The platform family whose feed file and edition rule apply. */
export function family(platform: Platform): keyof PlatformEditions {
  return platform.startsWith("win") ? "windows" : platform.startsWith("darwin") ? "mac" : "linux";
}

/** The feed files a platform's auto-updater asks for (CONTRACT section 5). */
export function feedFiles(platform: Platform): string[] {
  if (platform.startsWith("win")) return ["latest.yml"];
  if (platform.startsWith("darwin")) return ["latest-mac.yml"];
  return platform === "linux-arm64" ? ["latest-linux.yml", "latest-linux-arm64.yml"] : ["latest-linux.yml"];
}

export async function productByCode(db: Db, code: string): Promise<ProductRow | undefined> {
  return db.select().from(products).where(eq(products.code, code)).get();
}

/**
 * The releases a feed may offer for a platform, newest version first: public, on the channel (any channel when
 * none is given), with a `major.minor.patch` version and at least one installer or zip for the platform (SPEC rule 6).
 */
export async function offeredReleases(db: Db, productId: number, platform: Platform, channel: string | undefined): Promise<ReleaseWithFiles[]> {
  const rows = await db
    .select({ release: productReleases, file: releaseDownloads })
    .from(productReleases)
    .innerJoin(releaseDownloads, and(eq(releaseDownloads.releaseId, productReleases.id), eq(releaseDownloads.platform, platform)))
    .where(and(eq(productReleases.productId, productId), eq(productReleases.public, true), channel ? eq(productReleases.channel, channel) : undefined));
  const byRelease = new Map<number, ReleaseWithFiles>();
  for (const { release, file } of rows) {
    let entry = byRelease.get(release.id);
    if (!entry) byRelease.set(release.id, (entry = { release, files: [] }));
    entry.files.push(file);
  }
  return [...byRelease.values()]
    .filter((r) => isReleaseVersion(r.release.version) && r.files.some((f) => f.kind === "installer" || f.kind === "zip"))
    .sort((a, b) => compareVersions(b.release.version, a.release.version));
}

/** When a release was published: its release date, else when it was created. */
export function publishedAt(release: ReleaseRow): string {
  return release.releaseDate ?? release.createdAt;
}

// ---------------------------------------------------------------------------------------------------------------
// SPEC "Update and maintenance rules"

const DEMO = 1;

/** Rule 1: the support expiration date, or one year after the issue date. */
export function maintenanceEnd(license: Pick<LicenseRow, "supportExpireDate" | "issueDate">): string {
  if (license.supportExpireDate) return license.supportExpireDate;
  const end = new Date(license.issueDate);
  end.setUTCFullYear(end.getUTCFullYear() + 1);
  return end.toISOString();
}

/** Rule 2 (and 4): whether the license's maintenance covers the release (by day), or the release needs none. */
export function coveredByMaintenance(license: LicenseRow | undefined, release: ReleaseRow): boolean {
  if (!release.requiresMaintenance) return true;
  if (!license) return false;
  if (license.licenseType === DEMO) return true;
  return publishedAt(release).slice(0, 10) <= maintenanceEnd(license).slice(0, 10);
}

export type PlatformVerdict = { allowed: true } | { allowed: false; reason: "platformRequiresLicense" } | { allowed: false; reason: "platformRequiresEdition"; requiredEdition: string };

/** Rule 3 (and 4): whether the platform's family is open to the caller's license edition. */
export function platformVerdict(config: Config, platform: Platform, license: LicenseRow | undefined): PlatformVerdict {
  const editions = config["Updates:PlatformEditions"][family(platform)];
  if (!config["Updates:EnforcePlatformEditions"] || editions.length === 0) return { allowed: true };
  if (!license) return { allowed: false, reason: "platformRequiresLicense" };
  if (license.licenseType === DEMO) return { allowed: true };
  const edition = (license.edition ?? "").toLowerCase();
  if (editions.some((e) => e.toLowerCase() === edition)) return { allowed: true };
  return { allowed: false, reason: "platformRequiresEdition", requiredEdition: editions[0]! };
}

/** The file an update check names and a feed lists first: the installer, else the zip. */
export function mainFile(files: readonly DownloadRow[]): DownloadRow | undefined {
  return files.find((f) => f.kind === "installer") ?? files.find((f) => f.kind === "zip");
}
