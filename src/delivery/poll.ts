/**
 * The poll pipeline, free of HTTP: what every update answer (the update check, each updater's feed, the package
 * folders, the customer portal's downloads) does before its format renders it. The request's parameters are checked
 * (platform, channel, version, product), then the caller behind the credential and the releases offered to the
 * platform are read in one D1 round trip (or none, from the isolate's memos), and the caller is judged. Release
 * control's selection (admission, audience, rollback) follows in delivery/selection.ts `feedRelease`.
 */
import type { ServiceContext } from "../http/context";
import { ApiError } from "../kernel/errors";
import { batchReads } from "../db/compiled";
import { CHANNELS, PLATFORMS, type Platform } from "../records/vocabulary";
import { isReleaseVersion } from "../records/versions";
import { feedTokenLicenseId } from "../licensing/feed-token";
import type { Caller, judgeCaller } from "./caller";
import { type Credential, credentialQuery, judgeCredential } from "./credential";
import { type AudienceLicense, audienceReads, matchedAudiences } from "./audience";
import {
  INSTALLER_OR_ZIP,
  type Offerable,
  type ProductRow,
  type ReleaseWithFiles,
  groupOfferedReleases,
  offeredReleaseReads,
  withCurrentGates,
} from "./catalog";
import { productByCodeMemo } from "./product-memo";
import { keepReleases, recallReleases } from "./release-memo";

export function requirePlatform(value: string | undefined, fallback?: Platform): Platform {
  const platform = value ?? fallback;
  if (!platform || !(PLATFORMS as readonly string[]).includes(platform))
    throw new ApiError(400, `Unknown platform '${value}': one of ${PLATFORMS.join(", ")}`);
  return platform as Platform;
}

export function requireChannel(value: string | undefined): string {
  const channel = value ?? "stable";
  if (!(CHANNELS as readonly string[]).includes(channel))
    throw new ApiError(400, `Unknown channel '${value}': stable or insider`);
  return channel;
}

export function requireVersion(value: string | undefined): string {
  const version = value ?? "";
  if (!isReleaseVersion(version)) throw new ApiError(400, `Unknown version '${version}': major.minor.patch`);
  return version;
}

export async function requireProduct(ctx: ServiceContext, code: string): Promise<ProductRow> {
  const product = await productByCodeMemo(ctx.db, code);
  if (!product) throw new ApiError(404, `Unknown product '${code}'`);
  return product;
}

/**
 * The caller behind a user key and the releases offered to the platform. The releases of the product's current
 * release generation are remembered by the isolate (release-memo.ts), so a licensed caller usually costs one
 * statement, its license, and an anonymous one none; when they must be read, they come in the same D1 round trip
 * as the license (DESIGN: at most one round trip on a cache miss).
 */
export async function callerAndReleases(
  ctx: ServiceContext,
  product: ProductRow,
  credential: Credential,
  platform: Platform,
  channel: string,
  offerable: Offerable = INSTALLER_OR_ZIP,
): Promise<{ caller: Caller; releases: ReleaseWithFiles[]; audienceMatched?: ReadonlySet<number> }> {
  const licenseQuery = credentialQuery(product.id, credential);
  const offered = (releases: readonly ReleaseWithFiles[]) => withCurrentGates(ctx.config, product, releases);
  let releases = recallReleases(product, platform, channel, offerable.name);
  let licenseRows: Parameters<typeof judgeCaller>[1][] = [];
  let audienceMatched: ReadonlySet<number> | undefined;
  if (releases) {
    if (licenseQuery) {
      // The audiences of the releases (release control, audience.ts) are matched in the license's own statement:
      // their first read is the license read with one more column.
      const audiences = audienceReads(
        credentialLicense(credential!),
        releases.map((r) => r.release),
        product.id,
      );
      const [first, ...rest] = audiences.queries;
      if (first) {
        const rows = await batchReads(ctx.db, [first, ...rest]);
        licenseRows = rows[0];
        audienceMatched = audiences.matched(rows);
      } else {
        [licenseRows] = await batchReads(ctx.db, [licenseQuery]);
        audienceMatched = new Set();
      }
    }
  } else {
    const [releasesQuery, filesQuery] = offeredReleaseReads(ctx.db, product.id, platform, channel);
    let releaseRows, fileRows;
    if (licenseQuery)
      [licenseRows, releaseRows, fileRows] = await batchReads(ctx.db, [licenseQuery, releasesQuery, filesQuery]);
    else [releaseRows, fileRows] = await batchReads(ctx.db, [releasesQuery, filesQuery]);
    releases = groupOfferedReleases(releaseRows, fileRows, offerable);
    keepReleases(product, platform, channel, releases, offerable.name);
  }
  if (!credential) return { caller: { kind: "anonymous" }, releases: offered(releases) };
  // The caller is judged first, as when the reads were sequential: a refused key answers 403 whatever the releases.
  const caller = await judgeCredential(ctx, credential, licenseRows[0]);
  // Releases read just now (a cold isolate, a new release generation): their audiences cost a second round trip.
  if (caller.kind === "licensed" && audienceMatched === undefined)
    audienceMatched = await matchedAudiences(
      ctx.db,
      caller.license.id,
      releases.map((r) => r.release),
    );
  return { caller, releases: offered(releases), ...(audienceMatched ? { audienceMatched } : {}) };
}

/** The license a credential names, for its audiences to be matched beside it (audience.ts). */
function credentialLicense(credential: NonNullable<Credential>): AudienceLicense {
  return "key" in credential ? { key: credential.key } : { id: feedTokenLicenseId(credential.feedToken) ?? 0 };
}
