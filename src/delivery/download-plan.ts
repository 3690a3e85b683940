/**
 * What the download route (routes/updates/updates.ts) serves, decided without HTTP (SPEC "Download", CONTRACT section 5): which
 * artifact a request names, whether it is gated, the platform rule, the user key's and the download token's verdicts.
 * The route renders the plan (entity tags, ranges, the bytes: artifact-download.ts) and records the token's use.
 *
 * Its D1 work is one round trip: the artifact and the license (the one the user key names, the one the token names:
 * one statement, one row when they are the same license) in one batch. The token's signature and expiry are checked
 * before it, so the batch can read the license the token names. The token's use is recorded by the route, in one
 * conditional statement (download-tokens.ts): a licensed download costs two round trips.
 */
import { and, eq, or, sql } from "drizzle-orm";
import { clock } from "../kernel/clock";
import { type Params, batchReads, compiled } from "../db/compiled";
import { licenses, productReleases, releaseDownloads } from "../db/schema";
import { ApiError } from "../kernel/errors";
import type { ServiceContext } from "../http/context";
import { judgedLicenseColumns } from "../licensing/license-core";
import { judgeLicense } from "../licensing/policy";
import { userKeyIs } from "../licensing/user-key";
import { servedAsBlockmap } from "../updates/blockmap";
import { badDownloadToken, callerKey, callerVerdict, licenseOf } from "./caller";
import { type DownloadRow, type Platform, type ProductRow, platformVerdict, requiresMaintenance } from "./catalog";
import { type DownloadClaim, readDownloadToken } from "./download-tokens";
import { updateRefusal } from "./reasons";
import { type RolloutOf, admits } from "./admission";
import { type WithAudience, matchedAudiences } from "./audience";

/** What a download request names (its path and query, validated by the route). */
export interface DownloadRequest {
  product: ProductRow;
  platform: Platform;
  version: string;
  fileName: string;
  /** Which artifact, when several of the release and platform share the file name. */
  kind: string | undefined;
  channel: string | undefined;
  token: string | undefined;
  userKey: string | undefined;
  /** X-Service-Install-Id: the caller's rollout cohort (release control, CONTRACT section 8). */
  installId?: string | undefined;
}

/** What the route serves. */
export interface DownloadPlan {
  file: DownloadRow;
  /** The release's version (the download's trace carries it). */
  version: string;
  /** The license the download is for (a user key's or a token's), undefined when anonymous. */
  license: DownloadLicense | undefined;
  /** The token whose use the route records; set only for a gated artifact. */
  claim: DownloadClaim | undefined;
  /** The answer is the same for everyone: ungated, and the platform open without a license. */
  shared: boolean;
}

/**
 * The artifacts of a public release with this version, platform and file name (and channel, when the request names
 * one), whether their release needs maintenance, and whether each is served as a blockmap (blockmap.ts).
 */
const artifactRows = compiled(
  (db, p: Params<{ productId: number; version: string; platform: string; fileName: string; channel: string | null }>) =>
    db
      .select({
        file: releaseDownloads,
        requiresMaintenance: productReleases.requiresMaintenance,
        blockmap: servedAsBlockmap,
        // Release control (admission.ts, audience.ts): the rollout, the halt and the audience of the release.
        // (The release's id is the file's releaseId: a batch keys its rows by column name, where `id` is the file's.)
        release: {
          stagingPercentage: productReleases.stagingPercentage,
          rolloutSchedule: productReleases.rolloutSchedule,
          halted: productReleases.halted,
          audience: productReleases.audience,
        },
      })
      .from(releaseDownloads)
      .innerJoin(productReleases, eq(productReleases.id, releaseDownloads.releaseId))
      .where(
        and(
          eq(productReleases.productId, p.productId),
          eq(productReleases.version, p.version),
          eq(productReleases.public, true),
          eq(releaseDownloads.platform, p.platform),
          eq(releaseDownloads.fileName, p.fileName),
          or(sql`${p.channel} IS NULL`, eq(productReleases.channel, p.channel)),
        ),
      ),
);

/**
 * The licenses a download names: the one with the user key (`byKey`), the one the token names (by id), in one
 * statement; one row when they are the same license. Null names nothing. What the license policy judges, and whether
 * the license traces.
 */
const namedLicenses = compiled((db, p: Params<{ key: string | null; legacy: string | null; id: number | null }>) =>
  db
    .select({
      license: { ...judgedLicenseColumns, trace: licenses.trace },
      byKey: sql<number>`coalesce(${userKeyIs(p.key, p.legacy)}, 0)`.mapWith(Number).as("by_key"),
    })
    .from(licenses)
    .where(or(eq(licenses.id, p.id), userKeyIs(p.key, p.legacy)))
    .limit(2),
);

/** A license as the download reads it. */
export type DownloadLicense = Awaited<ReturnType<typeof namedLicenses.run>>[number]["license"];

/** 403 naming the platform rule when the platform's family is not open to this license (SPEC rule 3). */
function refuseByPlatform(ctx: ServiceContext, platform: Platform, license: DownloadLicense | undefined): void {
  const verdict = platformVerdict(ctx.config, platform, license);
  if (!verdict.allowed) {
    throw updateRefusal(
      verdict.reason === "platformRequiresEdition"
        ? `${platform} needs a license of the ${verdict.requiredEdition} edition`
        : `${platform} needs a license`,
      verdict.reason,
    );
  }
}

/**
 * 403 `notOffered` when release control keeps the release from the caller, by the rules feedRelease (delivery/formats/electron-builder.ts) applies
 * to every answer: halted; an audience the license does not match (anonymous callers never match one: one statement
 * when the release has one); a rollout whose cohort (install id, else license) is outside the percentage.
 */
async function refuseUnoffered(
  ctx: ServiceContext,
  release: WithAudience & RolloutOf & { halted: boolean },
  license: DownloadLicense | undefined,
  installId: string | undefined,
): Promise<void> {
  const refuse = () => updateRefusal("This release is not offered to this caller", "notOffered");
  if (release.halted) throw refuse();
  if (release.audience) {
    if (!license || !(await matchedAudiences(ctx.db, license.id, [release])).has(release.id)) throw refuse();
  }
  if (!(await admits(release, installId ?? license?.licenseId, clock.now().getTime()))) throw refuse();
}

/** The download a request names, and whether (and for which license) it may be served; throws the refusals. */
export async function planDownload(ctx: ServiceContext, request: DownloadRequest): Promise<DownloadPlan> {
  const { product, platform, token } = request;
  const key = await callerKey(request.userKey);
  // Its signature and expiry, without D1: which license it names, for the batch to read.
  const claim = token === undefined ? undefined : await readDownloadToken(ctx, token);
  const artifacts = artifactRows.with({
    productId: product.id,
    version: request.version,
    platform,
    fileName: request.fileName,
    channel: request.channel ?? null,
  });
  const [rows, named] =
    key || claim
      ? await batchReads(ctx.db, [
          artifacts,
          namedLicenses.with({ key: key?.compact ?? null, legacy: key?.legacy ?? null, id: claim?.licenseId ?? null }),
        ])
      : [...(await batchReads(ctx.db, [artifacts])), []];

  // `kind` tells apart the artifacts of one release and platform that share a file name (an installer and a zip; the
  // feed's and the update check's URLs carry it for them). A name that names one artifact is that artifact whatever
  // `kind` says: auto-updaters carry an installer URL's query over to the blockmap URL they derive from it.
  const { kind } = request;
  const matching = rows.length > 1 && kind ? rows.filter((r) => r.file.kind === kind) : rows;
  if (matching.length === 0) throw new ApiError(404, "Unknown artifact");
  if (matching.length > 1) throw new ApiError(400, "Several artifacts have this file name: say which with `kind`");
  const { file, blockmap, requiresMaintenance: releaseGated, release } = matching[0]!;

  // A user key whose license is revoked, expired or tampered gets the token's message here (SPEC rule 5).
  const keyed = named.find((r) => r.byKey);
  const caller = key
    ? await callerVerdict(ctx, keyed ? { license: keyed.license, askedProductId: product.id } : undefined)
    : ({ kind: "anonymous" } as const);
  if (caller.kind === "refused") throw badDownloadToken();
  // Blockmaps describe, they do not install: auto-updaters fetch them beside the installer without its token. Only a
  // real one is open (blockmap.ts: its bytes checked when the kind was set, and beside the file it describes), so a
  // relabelled installer stays gated. Whether the rest needs a token is decided from the release and product as they
  // are now.
  const gated = requiresMaintenance(ctx.config, product, { requiresMaintenance: releaseGated }) && !blockmap;
  // The platform rule comes before the token is used, and before it is looked at whenever the license is known
  // without it (a user key) or there is no token to look at.
  const early = licenseOf(caller);
  if (early || !gated || !token) refuseByPlatform(ctx, platform, early);
  let license = early;
  // Only a gated artifact looks at the token: auto-updaters carry the installer's query (and so its token) over to
  // the blockmap URLs they derive from it, where the token names another artifact.
  if (gated) {
    if (!claim || claim.downloadId !== file.id) throw badDownloadToken();
    if (early && early.id !== claim.licenseId) throw badDownloadToken();
    // The license the token was issued to must still be usable, as the license policy decides.
    const issuedTo = named.find((r) => r.license.id === claim.licenseId)?.license;
    const verdict = await judgeLicense(ctx.config["Application:EncryptionKey"], issuedTo, clock.now());
    if (!verdict.usable) throw badDownloadToken();
    license = verdict.license;
    if (!early) refuseByPlatform(ctx, platform, license);
  }
  // Release control: what the caller would not be offered (halted, outside its audience or its rollout) is not
  // served either. Blockmaps describe, they do not install (and a differential download reads the running one's).
  if (!blockmap) await refuseUnoffered(ctx, { ...release, id: file.releaseId }, license, request.installId);
  return {
    file,
    version: request.version,
    license,
    claim: gated ? claim : undefined,
    shared: !gated && platformVerdict(ctx.config, platform, undefined).allowed,
  };
}
