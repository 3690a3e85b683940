/**
 * The packages Squirrel.Windows and Velopack install (CONTRACT section 9): `.nupkg` files, a full package per release
 * (kind `package`) and optionally a delta from the release before it (kind `delta`, a `-delta.nupkg` name), both
 * named by their SHA-1. The release comes from THE selection (electron-builder.ts feedRelease: platform rule, release
 * control, maintenance); this module decides which packages a client running `current` is given to reach it
 * (squirrel-windows.ts and velopack.ts write them as each updater reads them).
 *
 * A delta chain is given only when it is whole: the caller's version is a release of the list, and every release after
 * it up to the offered one has a delta the caller may see; otherwise the full package alone (both updaters fall back
 * to it, and a broken chain would fail on the client).
 */
import type { DownloadRow, Offerable, ReleaseWithFiles } from "../catalog";
import type { UpdateReason } from "../reasons";
import type { Selection } from "../selection";
import { compareVersions } from "../../records/versions";

/** A package artifact the feeds can name: it has the SHA-1 both updaters check. */
type Package = DownloadRow & { sha1: string };

const isFull = (f: DownloadRow): f is Package => f.kind === "package" && f.sha1 !== null;
const isDelta = (f: DownloadRow): f is Package =>
  f.kind === "delta" && f.sha1 !== null && f.fileName.toLowerCase().endsWith("-delta.nupkg");

/** The releases Squirrel.Windows and Velopack are offered: those with a full package (with its SHA-1) for the platform. */
export const PACKAGE: Offerable = { name: "package", serves: isFull };

/** One package a feed lists, with the release it belongs to. */
export interface PackageStep {
  entry: ReleaseWithFiles;
  file: Package;
  type: "Full" | "Delta";
}

/**
 * What a client is given: `target`, the full package of the release it should install (a newer one, or an older one
 * when release control rolls it back), with the deltas from its version to the target, oldest first; or no target
 * ("no update"), with `own`, the full package of the version it runs when the list has it.
 */
export interface PackagePlan {
  target?: PackageStep | undefined;
  deltas: PackageStep[];
  own?: PackageStep | undefined;
  /**
   * The target's rollout percentage when the server cannot decide (an anonymous caller without an install id):
   * Squirrel.Windows applies it itself (`# N%` on the line, with its own per-install staging id); Velopack cannot.
   */
  staged?: number | undefined;
}

function full(entry: ReleaseWithFiles): PackageStep | undefined {
  const file = entry.files.find(isFull);
  return file ? { entry, file, type: "Full" } : undefined;
}

/**
 * The packages a client running `current` (the updater's `localVersion`; undefined: a fresh install) is given, after
 * the selection. `releases` is every release of the list (newest first), so a chain can be checked link by link.
 */
export function packagePlan(
  releases: readonly ReleaseWithFiles[],
  selection: Selection,
  current: string | undefined,
): PackagePlan {
  const ownEntry = current === undefined ? undefined : releases.find((r) => r.release.version === current);
  const own = ownEntry ? full(ownEntry) : undefined;
  const entry = selection.entry;
  const target = entry ? full(entry) : undefined;
  if (!entry || !target) return { deltas: [], own };
  const staged = selection.staged !== undefined && selection.staged < 100 ? selection.staged : undefined;
  if (current === undefined) return { target, deltas: [], staged };
  const order = compareVersions(entry.release.version, current);
  if (order === 0 || (order < 0 && !selection.rollback)) return { deltas: [], own };
  if (order < 0) return { target, deltas: [], own, staged };
  return { target, deltas: deltaChain(releases, selection, current, entry), own, staged };
}

/** The deltas from `current` to `entry`, oldest first, or none when any link is missing or not the caller's to see. */
function deltaChain(
  releases: readonly ReleaseWithFiles[],
  selection: Selection,
  current: string,
  entry: ReleaseWithFiles,
): PackageStep[] {
  if (!releases.some((r) => r.release.version === current)) return [];
  const admitted = new Set(selection.admitted.map((r) => r.release.id));
  const between = releases
    .filter(
      (r) =>
        compareVersions(r.release.version, current) > 0 &&
        compareVersions(r.release.version, entry.release.version) <= 0,
    )
    .sort((a, b) => compareVersions(a.release.version, b.release.version));
  const steps: PackageStep[] = [];
  for (const r of between) {
    const file = r.files.find(isDelta);
    if (!file || !admitted.has(r.release.id)) return [];
    steps.push({ entry: r, file, type: "Delta" });
  }
  return steps;
}

/** The steps a plan lists, in the order the updaters write their own files: by version, a delta before its full. */
export function listed(plan: PackagePlan): PackageStep[] {
  return plan.target ? [...plan.deltas, plan.target] : [];
}

/**
 * Why a package feed offers nothing newer: the selection's reason, else "nothing newer" when it has no target (or,
 * for Velopack, "not offered" when a rollout it cannot apply withholds the target).
 */
export function planReason(selection: Selection, plan: PackagePlan, appliesStaging: boolean): UpdateReason | undefined {
  if (selection.reason) return selection.reason;
  if (!plan.target) return "nothingNewer";
  return plan.staged !== undefined && !appliesStaging ? "notOffered" : undefined;
}
