/**
 * What the update routes read: a product by code, and its releases with their artifacts for one platform, in one
 * D1 round trip (DESIGN: one round trip on a cache miss). Plus the platform families and the rules of SPEC "Update and
 * maintenance rules" as pure functions over a license and a release.
 */
import { and, eq, getTableColumns, inArray, sql } from "drizzle-orm";
import type { PlatformEditions, Config } from "../kernel/config";
import type { Db } from "../db/client";
import { productReleases, products, releaseDownloads } from "../db/schema";
import type { LicenseRow } from "../licensing/license-core";
import { CHANNELS, LicenseTypeCode, PLATFORMS, type Platform, editionIn } from "../records/vocabulary";
import { compareVersions, isReleaseVersion } from "../records/versions";
import { CRASH_LOOPS_REMEMBERED, type CrashLoops } from "../updates/crash-loops";

export { CHANNELS, PLATFORMS, type Platform };

/** A product as the update routes read it: with its installs' crash loops (updates/crash-loops.ts) when it has any. */
export type ProductRow = typeof products.$inferSelect & { crashLoops?: CrashLoops };
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

/**
 * The product with this code, and its crash loops: how many, and the newest CRASH_LOOPS_REMEMBERED of them (install
 * id -> version), in the same statement (two index reads when it has none).
 */
export async function productByCode(db: Db, code: string): Promise<ProductRow | undefined> {
  const loops = sql.raw(`install_crash_loops WHERE product_id = "products"."id"`);
  const row = await db
    .select({
      ...getTableColumns(products),
      crashLoopCount: sql<number>`(SELECT count(*) FROM ${loops})`.mapWith(Number),
      crashLoopInstalls: sql<string | null>`(SELECT json_group_object(install, version) FROM (
        SELECT install, version FROM ${loops} ORDER BY since DESC LIMIT ${sql.raw(String(CRASH_LOOPS_REMEMBERED))}))`,
    })
    .from(products)
    .where(eq(products.code, code))
    .get();
  if (!row) return undefined;
  const { crashLoopCount, crashLoopInstalls, ...product } = row;
  if (crashLoopCount === 0) return product;
  const installs = JSON.parse(crashLoopInstalls ?? "{}") as Record<string, string>;
  return { ...product, crashLoops: { count: crashLoopCount, installs } };
}

/**
 * The reads of offeredReleases, unexecuted, so a route can send them in one D1 batch with its other reads: the
 * releases in scope, and the platform's artifacts of those releases. Two single-table reads rather than a join,
 * because a D1 batch hands rows back as objects keyed by column name, where a join's same-named columns (id,
 * created_at) would overwrite each other.
 */
export function offeredReleaseReads(db: Db, productId: number, platform: Platform, channel: string | undefined) {
  const inScope = and(
    eq(productReleases.productId, productId),
    eq(productReleases.public, true),
    channel ? eq(productReleases.channel, channel) : undefined,
  );
  return [
    db.select().from(productReleases).where(inScope),
    db
      .select()
      .from(releaseDownloads)
      .where(
        and(
          eq(releaseDownloads.platform, platform),
          inArray(
            releaseDownloads.releaseId,
            db.select({ id: productReleases.id }).from(productReleases).where(inScope),
          ),
        ),
      ),
  ] as const;
}

/**
 * The releases a feed may offer for a platform, newest version first: public, on the channel (any channel when
 * none is given), with a `major.minor.patch` version and at least one installer or zip for the platform (SPEC rule 6).
 */
export async function offeredReleases(
  db: Db,
  productId: number,
  platform: Platform,
  channel: string | undefined,
): Promise<ReleaseWithFiles[]> {
  const [releases, files] = await db.batch(offeredReleaseReads(db, productId, platform, channel));
  return groupOfferedReleases(releases, files);
}

/**
 * Which artifacts a feed format serves (a release none of whose artifacts it serves is not offered in that format).
 * `name` keys the remembered lists (release-memo.ts).
 */
export interface Offerable {
  name: string;
  serves(file: DownloadRow): boolean;
}
/** electron-builder's feeds and the update check: an installer or a zip (SPEC rule 6). */
export const INSTALLER_OR_ZIP: Offerable = {
  name: "installer-zip",
  serves: (f) => f.kind === "installer" || f.kind === "zip",
};

/**
 * offeredReleases from the rows of offeredReleaseReads: releases without an artifact for the platform that the
 * format serves (default: an installer or a zip) are left out.
 */
export function groupOfferedReleases(
  releases: readonly ReleaseRow[],
  files: readonly DownloadRow[],
  offerable: Offerable = INSTALLER_OR_ZIP,
): ReleaseWithFiles[] {
  const byRelease = new Map<number, ReleaseWithFiles>(releases.map((release) => [release.id, { release, files: [] }]));
  for (const file of files) byRelease.get(file.releaseId)?.files.push(file);
  return [...byRelease.values()]
    .filter((r) => isReleaseVersion(r.release.version) && r.files.some(offerable.serves))
    .sort((a, b) => compareVersions(b.release.version, a.release.version));
}

/** When a release was published: its release date, else when it was created. */
export function publishedAt(release: ReleaseRow): string {
  return release.releaseDate ?? release.createdAt;
}

// ---------------------------------------------------------------------------------------------------------------
// SPEC "Update and maintenance rules"

const DEMO = LicenseTypeCode.Demo;

/** Rule 1: the support expiration date, or one year after the issue date. */
export function maintenanceEnd(license: Pick<LicenseRow, "supportExpireDate" | "issueDate">): string {
  if (license.supportExpireDate) return license.supportExpireDate;
  const end = new Date(license.issueDate);
  end.setUTCFullYear(end.getUTCFullYear() + 1);
  return end.toISOString();
}

/**
 * Whether a release needs maintenance (and so its artifacts a download token), decided from the release and its product
 * as they are now: its own `requiresMaintenance`, or its product being an application while
 * Updates:AllowPublicApplicationReleases is off. The release routes refuse `requiresMaintenance: false` on an
 * application product, but a release can get that value while its product is not one and keep it when the product
 * becomes one again; deciding here, at every read, means no sequence of edits ungates an application's installer.
 */
export function requiresMaintenance(
  config: Config,
  product: Pick<ProductRow, "isApplication">,
  release: Pick<ReleaseRow, "requiresMaintenance">,
): boolean {
  return release.requiresMaintenance || (product.isApplication && !config["Updates:AllowPublicApplicationReleases"]);
}

/** Releases as the update routes judge them: `requiresMaintenance` as requiresMaintenance decides it now. */
export function withCurrentGates(
  config: Config,
  product: Pick<ProductRow, "isApplication">,
  releases: readonly ReleaseWithFiles[],
): ReleaseWithFiles[] {
  return releases.map((r) =>
    r.release.requiresMaintenance || !requiresMaintenance(config, product, r.release)
      ? r
      : { ...r, release: { ...r.release, requiresMaintenance: true } },
  );
}

/** Rule 2 (and 4): whether the license's maintenance covers the release (by day), or the release needs none. */
export function coveredByMaintenance(license: LicenseRow | undefined, release: ReleaseRow): boolean {
  if (!release.requiresMaintenance) return true;
  if (!license) return false;
  if (license.licenseType === DEMO) return true;
  return publishedAt(release).slice(0, 10) <= maintenanceEnd(license).slice(0, 10);
}

export type PlatformVerdict =
  | { allowed: true }
  | { allowed: false; reason: "platformRequiresLicense" }
  | { allowed: false; reason: "platformRequiresEdition"; requiredEdition: string };

/** Rule 3 (and 4): whether the platform's family is open to the caller's license edition. */
export function platformVerdict(
  config: Config,
  platform: Platform,
  license: Pick<LicenseRow, "licenseType" | "edition"> | undefined,
): PlatformVerdict {
  const editions = config["Updates:PlatformEditions"][family(platform)];
  if (!config["Updates:EnforcePlatformEditions"] || editions.length === 0) return { allowed: true };
  if (!license) return { allowed: false, reason: "platformRequiresLicense" };
  if (license.licenseType === DEMO) return { allowed: true };
  if (editionIn(license.edition, editions)) return { allowed: true };
  return { allowed: false, reason: "platformRequiresEdition", requiredEdition: editions[0]! };
}

/** The file an update check names and a feed lists first: the installer, else the zip. */
export function mainFile(files: readonly DownloadRow[]): DownloadRow | undefined {
  return files.find((f) => f.kind === "installer") ?? files.find((f) => f.kind === "zip");
}
