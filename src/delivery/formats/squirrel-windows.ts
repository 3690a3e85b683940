/**
 * Squirrel.Windows (CONTRACT section 9): its `RELEASES` file, lines `SHA1 URL size` (ReleaseEntry.ParseReleaseEntry:
 * 40 hex, no space in the name, an absolute URL whose last segment is the file name and whose query Squirrel keeps
 * for the download). Which packages it lists is the package plan's decision (nupkg.ts).
 */
import type { ServiceContext } from "../../http/context";
import { type UpdateCheckInput, downloadFor } from "../update-check";
import { type PackagePlan, type PackageStep, listed } from "./nupkg";

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
