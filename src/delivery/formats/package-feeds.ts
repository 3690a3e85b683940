/**
 * The package feeds of Squirrel.Windows and Velopack (CONTRACT section 9): both updaters install `.nupkg` packages, a
 * full package per release (kind `package`) and optionally a delta from the release before it (kind `delta`, a
 * `-delta.nupkg` name), and both name each package by its SHA-1. The release comes from THE selection (feed.ts
 * feedRelease: platform rule, release control, maintenance); this module decides which packages a client running
 * `current` is given to reach it, and writes them as each updater reads them:
 *
 * - Squirrel.Windows `RELEASES`: lines `SHA1 URL size` (ReleaseEntry.ParseReleaseEntry: 40 hex, no space in the
 *   name, an absolute URL whose last segment is the file name and whose query Squirrel keeps for the download).
 * - Velopack `releases.{channel}.json`: `{"Assets":[{PackageId, Version, Type, FileName, SHA1, SHA256, Size,
 *   NotesMarkdown, NotesHtml}]}` (Velopack's VelopackAssetFeed); FileName is a bare name the client resolves against
 *   its feed URL and keeps as the local file name.
 *
 * A delta chain is given only when it is whole: the caller's version is a release of the list, and every release after
 * it up to the offered one has a delta the caller may see; otherwise the full package alone (both updaters fall back
 * to it, and a broken chain would fail on the client).
 */
import type { ServiceContext } from "../../http/context";
import { escapeHtml } from "../../mail/license-mail";
import type { DownloadRow, Offerable, ReleaseWithFiles } from "../catalog";
import type { Selection } from "./electron-builder";
import { type UpdateCheckInput, downloadFor } from "../update-check";
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
function listed(plan: PackagePlan): PackageStep[] {
  return plan.target ? [...plan.deltas, plan.target] : [];
}

/**
 * Squirrel.Windows' RELEASES for a plan: one `SHA1 URL size` line per package, the URL absolute on the download route
 * (tokenised for a licensed caller of a gated release, exactly as downloadFor makes it for every feed). Squirrel
 * refuses an empty RELEASES ("Remote release File is empty or corrupted"), so "no update" lists the caller's own
 * full package when the list has it (Squirrel finds nothing newer than what it runs); otherwise the body is empty. A
 * rollout the server cannot decide is written as Squirrel's own staging comment (`# 10%`), and the caller's own
 * package is listed beside it, so a caller Squirrel leaves out still reads a RELEASES that is not empty.
 */
export async function squirrelReleases(
  ctx: ServiceContext,
  input: Pick<UpdateCheckInput, "caller" | "downloadUrl">,
  plan: PackagePlan,
): Promise<string> {
  const line = async (step: PackageStep, staged?: number) => {
    const info = await downloadFor(ctx, input, step.entry, step.file);
    const staging = staged === undefined ? "" : ` # ${staged}%`;
    return `${step.file.sha1.toUpperCase()} ${info.url} ${step.file.size}${staging}`;
  };
  const own = plan.own && (!plan.target || plan.staged !== undefined) ? [plan.own] : [];
  const lines = await Promise.all([
    ...own.map((step) => line(step)),
    ...listed(plan).map((step) => line(step, plan.staged)),
  ]);
  return lines.join("\n");
}

/** One asset of Velopack's feed (VelopackAsset: field names and types as Velopack's own serde and TypeScript types). */
export interface VelopackAsset {
  PackageId: string;
  Version: string;
  Type: "Full" | "Delta";
  FileName: string;
  SHA1: string;
  SHA256: string;
  Size: number;
  NotesMarkdown: string;
  NotesHtml: string;
}

/** The package id Velopack's `vpk pack` puts before the version in a package's name (`MyApp-1.2.0-full.nupkg`). */
function packageIdOf(fileName: string, version: string, fallback: string): string {
  const at = fileName.indexOf(`-${version}`);
  return at > 0 ? fileName.slice(0, at) : fallback;
}

/** HTML of release notes given as text: escaped, one paragraph per blank-line-separated block. */
function notesHtml(notes: string): string {
  return notes
    .split(/\n\s*\n/)
    .map((block) => block.trim())
    .filter(Boolean)
    .map((block) => `<p>${escapeHtml(block).replace(/\n/g, "<br>")}</p>`)
    .join("\n");
}

/**
 * Velopack's `releases.{channel}.json` for a plan. "No update" is an empty `Assets` (Velopack: "the remote feed is
 * empty", no update). The packages are named by bare file name: the client fetches them from its feed folder (the
 * folder route answers with the download route's URL, tokenised as every feed's). Velopack applies no rollout of its
 * own, so a rollout the server cannot decide (no install id, no license) offers nothing.
 */
export function velopackFeed(plan: PackagePlan, productCode: string): { Assets: VelopackAsset[] } {
  return {
    Assets: (plan.staged === undefined ? listed(plan) : []).map((step) => {
      const version = step.entry.release.version;
      const notes = step.entry.release.releaseNotes ?? "";
      return {
        PackageId: packageIdOf(step.file.fileName, version, productCode),
        Version: version,
        Type: step.type,
        FileName: step.file.fileName,
        SHA1: step.file.sha1.toUpperCase(),
        SHA256: step.file.sha256,
        Size: step.file.size,
        NotesMarkdown: notes,
        NotesHtml: notesHtml(notes),
      };
    }),
  };
}
