/**
 * Admission to a release's rollout (CONTRACT section 8), decided by the server and pure: the effective percentage of
 * a release at an instant (the last `rolloutSchedule` step whose `at` has passed, else `stagingPercentage`, else 100)
 * and the caller's cohort bucket for the release, `(first 4 bytes of SHA-256("<releaseId>:<id>") as an unsigned
 * big-endian integer) mod 100`, where `<id>` is the install id (X-Service-Install-Id), else the license's `licenseId`.
 * A caller is admitted when its bucket is below the effective percentage. A caller with neither (anonymous, no install
 * id) is not decided here: its answer carries the percentage and electron-updater decides, as before.
 */
import { memo } from "../kernel/memo";
import type { ReleaseRow } from "./catalog";

/** A rollout step: `percentage` applies from `at` (an ISO instant) on. */
export interface RolloutStep {
  percentage: number;
  at: string;
}

/** What admission reads of a release. */
export type RolloutOf = Pick<ReleaseRow, "id" | "stagingPercentage" | "rolloutSchedule">;

/**
 * The release's percentage at `now` (ms since the epoch): the last step of the schedule whose `at` has passed, else
 * `stagingPercentage`; undefined when the release has neither (everyone is admitted).
 */
export function effectivePercentage(release: RolloutOf, now: number): number | undefined {
  let percentage = release.stagingPercentage ?? undefined;
  let at = Number.NEGATIVE_INFINITY;
  for (const step of release.rolloutSchedule ?? []) {
    const stepAt = Date.parse(step.at);
    if (stepAt <= now && stepAt >= at) {
      at = stepAt;
      percentage = step.percentage;
    }
  }
  return percentage;
}

/** Whether the release's rollout admits only some callers at `now` (a percentage below 100). */
export function isStaged(release: RolloutOf, now: number): boolean {
  const percentage = effectivePercentage(release, now);
  return percentage !== undefined && percentage < 100;
}

/**
 * Cohort buckets worked out by this isolate: an install polls every few minutes, and its bucket for a release never
 * changes, so its digest is taken once.
 */
const buckets = memo<string, number>("cohort-buckets", {
  key: "release id and cohort id (`<releaseId>:<id>`)",
  max: 10_000,
  lifetime: "while kept (a bucket never changes)",
});

/** The cohort bucket (0-99) of `id` (an install id, else a license's `licenseId`) for a release. */
export async function cohortBucket(releaseId: number, id: string): Promise<number> {
  const key = `${releaseId}:${id}`;
  const known = buckets.get(key);
  if (known !== undefined) return known;
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(key));
  return buckets.keep(key, new DataView(digest).getUint32(0, false) % 100);
}

/**
 * Whether the caller whose cohort id is `id` is admitted to the release at `now`. Without an id (anonymous, no install
 * id) the server does not decide: true, and the answer carries the percentage for the client to apply.
 */
export async function admits(release: RolloutOf, id: string | undefined, now: number): Promise<boolean> {
  const percentage = effectivePercentage(release, now);
  if (percentage === undefined || percentage >= 100) return true;
  if (id === undefined) return true;
  if (percentage <= 0) return false;
  return (await cohortBucket(release.id, id)) < percentage;
}
