/**
 * THE selection of every update answer (CONTRACT sections 5, 8 and 9): of the releases offered to a platform, the one
 * a caller is offered, by the same rules for the update check and each updater's feed: visible (not halted, its
 * audience matched), the platform rule and maintenance, release control (a rollout's admission, a rollback, a minimum
 * version), and what release adoption hears of the answer. Each format then writes the selection as its updater
 * reads it (delivery/formats/).
 */
import { clock } from "../kernel/clock";
import type { ServiceContext } from "../http/context";
import { admits, effectivePercentage } from "./admission";
import { adoptionAnswered } from "../updates/adoption";
import { type Caller, licenseOf } from "./caller";
import { type Platform, type ReleaseWithFiles, coveredByMaintenance, platformVerdict } from "./catalog";
import type { DownloadUrl } from "./download-info";
import type { UpdateReason } from "./reasons";
import { compareVersions, isReleaseVersion } from "../records/versions";

/**
 * Who asks, as release control reads it (CONTRACT section 8): the caller, its install id and running version when it
 * says them, and which audiences its license matches. The update routes' `asking` (routes/updates/updates.ts) builds it from a
 * request; every feed format and the update check hand it to feedRelease.
 */
export interface Asking {
  caller: Caller;
  /** `X-Service-Install-Id`: the install's own random id, its cohort id before the license's. */
  installId?: string | undefined;
  /** The version the caller runs: the update check's `version`, a feed's `X-Service-Current-Version`. */
  currentVersion?: string | undefined;
  /** The ids of the releases with an `audience` that the caller's license matches (audience.ts). */
  audienceMatched?: ReadonlySet<number> | undefined;
  /** The product's `minimumVersion`: a caller below it must update (`required`). */
  minimumVersion?: string | null | undefined;
  /** The version the install crashes on, when it is in a crash loop (updates/crash-loops.ts). */
  crashLoop?: string | undefined;
}

export interface FeedInput extends Asking {
  platform: Platform;
  releases: ReleaseWithFiles[];
  downloadUrl: DownloadUrl;
}

/** What feedRelease decides for a caller: the release it is offered and what release control says around it. */
export type Selection = (
  | { entry: ReleaseWithFiles; reason?: UpdateReason }
  | { entry?: undefined; reason: UpdateReason }
) & {
  /** The newest release the caller may see (halted releases and audiences it does not match left out). */
  newest: ReleaseWithFiles | undefined;
  /** The releases the caller may see and is admitted to, newest first (`entry` is the first its license covers). */
  admitted: ReleaseWithFiles[];
  /** The newest release's rollout for this caller; `admitted` is true when the server does not decide (no cohort id). */
  rollout: { percentage: number; admitted: boolean } | undefined;
  /** The `stagingPercentage` the answer carries: set only when the server does not decide (anonymous, no install id). */
  staged: number | undefined;
  /**
   * The caller is offered the previous admissible release (a downgrade): it runs a halted release with `rollback`, or
   * the version its install crashes on (a crash loop).
   */
  rollback: boolean;
  /** Why, when `rollback`: `halted` (the release's own rollback) or `crashLoop` (this install's). */
  rollbackReason?: "halted" | "crashLoop";
  /** The caller runs a version below the product's minimumVersion, or a newer critical release is admissible. */
  required: boolean;
};

/**
 * Whether the caller may see a release at all: not halted, not the version its install crashes on, and its audience
 * (if any) matches the caller's license.
 */
function visible(input: Asking, entry: ReleaseWithFiles): boolean {
  const release = entry.release;
  if (release.halted || release.version === input.crashLoop) return false;
  if (release.audience === null || release.audience === undefined) return true;
  return input.caller.kind === "licensed" && (input.audienceMatched?.has(release.id) ?? false);
}

/**
 * THE selection of every update answer (the feeds of every format, the update check; the download route applies the
 * same rules to one release): the release the caller is offered, or why nothing is installable. The platform rule
 * comes first; then release control (CONTRACT section 8): halted releases and audiences the license does not match
 * are left out, a caller with a cohort id (install id, else license) is offered the newest release it is admitted to
 * (never nothing because of a rollout alone), and the maintenance rule picks among those. A user key that names no
 * license is the reason whatever else holds: it is what a vendor looking at a 204 wants to know first.
 */
export async function feedRelease(
  ctx: ServiceContext,
  input: Asking & {
    platform: Platform;
    releases: readonly ReleaseWithFiles[];
    /** false: not the caller's platform (a file listing every platform), so adoption does not count this selection. */
    sight?: false;
  },
): Promise<Selection> {
  const selection = await select(ctx, input);
  if (input.sight !== false) sightAnswer(ctx, input, selection);
  return selection;
}

/**
 * Release adoption (adoption.ts, off the request path): the caller runs its current version, and is offered the
 * selected release when it is newer than that version (or a rollback, or the version is not known).
 */
function sightAnswer(
  ctx: ServiceContext,
  input: Asking & { platform: Platform; releases: readonly ReleaseWithFiles[] },
  selection: Selection,
): void {
  const productId = input.releases[0]?.release.productId;
  if (productId === undefined) return;
  const current = input.currentVersion;
  const offered = selection.entry?.release.version;
  adoptionAnswered(ctx, {
    productId,
    platform: input.platform,
    installId: input.installId,
    licenseId: licenseOf(input.caller)?.id,
    currentVersion: current,
    offered:
      offered !== undefined && (current === undefined || selection.rollback || compareVersions(offered, current) > 0)
        ? offered
        : undefined,
  });
}

async function select(
  ctx: ServiceContext,
  input: Asking & { platform: Platform; releases: readonly ReleaseWithFiles[] },
): Promise<Selection> {
  const now = clock.now().getTime();
  const license = licenseOf(input.caller);
  const cohort = input.installId ?? license?.licenseId;
  const seen = input.releases.filter((r) => visible(input, r));
  const newest = seen[0];
  const admitted: ReleaseWithFiles[] = [];
  let newestAdmitted = false;
  for (const r of seen) {
    if (await admits(r.release, cohort, now)) {
      admitted.push(r);
      if (r === newest) newestAdmitted = true;
    }
  }
  const rollout = newest
    ? { percentage: effectivePercentage(newest.release, now) ?? 100, admitted: newestAdmitted }
    : undefined;
  const control = { newest, admitted, rollout, staged: undefined, rollback: false, required: false };

  const unknownKey = input.caller.kind === "unknown" ? input.caller.reason : undefined;
  const platformRule = platformVerdict(ctx.config, input.platform, license);
  if (!platformRule.allowed) return { ...control, reason: unknownKey ?? platformRule.reason };

  const current =
    input.currentVersion !== undefined && isReleaseVersion(input.currentVersion) ? input.currentVersion : undefined;
  const newer = (version: string) => current === undefined || compareVersions(version, current) > 0;
  const required =
    current !== undefined &&
    ((input.minimumVersion ? compareVersions(current, input.minimumVersion) < 0 : false) ||
      admitted.some((r) => r.release.critical && newer(r.release.version) && coveredByMaintenance(license, r.release)));

  const entry = admitted.find((r) => coveredByMaintenance(license, r.release));
  if (!entry) {
    const withheld =
      input.releases.length === 0
        ? "noRelease"
        : admitted.length === 0
          ? "notOffered"
          : license
            ? "maintenanceExpired"
            : "licenseRequired";
    return { ...control, required, reason: unknownKey ?? withheld };
  }
  // A caller running a halted release that rolls back, or the version its install crashes on, is offered the
  // previous admissible release, older than it.
  const running = current === undefined ? undefined : input.releases.find((r) => r.release.version === current);
  const older = current !== undefined && compareVersions(entry.release.version, current) < 0;
  const rollbackReason: Selection["rollbackReason"] =
    older && current === input.crashLoop
      ? "crashLoop"
      : older && running?.release.halted === true && running.release.rollback
        ? "halted"
        : undefined;
  const staged = cohort === undefined ? effectivePercentage(entry.release, now) : undefined;
  const chosen = {
    ...control,
    entry,
    staged,
    rollback: rollbackReason !== undefined,
    ...(rollbackReason ? { rollbackReason } : {}),
    required,
  };
  return unknownKey ? { ...chosen, reason: unknownKey } : chosen;
}

/** The selection's release when it is newer than the running version (or a rollback to an older one). */
export function newerOffer(selection: Selection, version: string): ReleaseWithFiles | undefined {
  const entry = selection.entry;
  if (!entry) return undefined;
  return selection.rollback || compareVersions(entry.release.version, version) > 0 ? entry : undefined;
}
