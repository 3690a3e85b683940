/**
 * Retention of what licensed clients write (issue 14, "Abuse and growth"; DESIGN: keep traces under retention):
 * license traces older than Licensing:TraceRetentionDays and reports older than Licensing:ReportRetentionDays are
 * removed by the cron trigger (app/housekeeping.ts), a report's R2 body (large content) before its row, so no body is
 * left without its row; a body R2 fails to delete keeps its row for the next run. drizzle queries, as every query
 * off the hot paths (db/rules.ts); the first two are unexecuted, for the cron's one batch.
 */
import { and, asc, isNotNull, isNull, lt, sql } from "drizzle-orm";
import type { Config } from "../kernel/config";
import type { Db } from "../db/client";
import { licenseFiles, reports } from "../db/schema";
import { deleteTracesQuery } from "./traces";

const DAY = 86_400_000;
/** Reports with an R2 body removed per run: one R2 delete call takes at most 1,000 keys. */
export const REPORT_BODIES_PER_RUN = 1000;

const cutoff = (days: number, now: Date) => new Date(now.getTime() - days * DAY).toISOString();

/** Reports past Licensing:ReportRetentionDays. */
const oldReport = (config: Config, now: Date) =>
  lt(reports.createdAt, cutoff(config["Licensing:ReportRetentionDays"], now));

/** The statement removing old traces (the Management API's trace deletion, before the retention's cutoff). */
export function pruneTraces(db: Db, config: Config, now: Date) {
  return deleteTracesQuery(db, { before: cutoff(config["Licensing:TraceRetentionDays"], now) });
}

/**
 * The statement removing the records of license files (license_files, CONTRACT 11) that expired longer than
 * Licensing:TraceRetentionDays ago: an expired file no longer verifies, and the console lists what is recent.
 */
export function pruneLicenseFiles(db: Db, config: Config, now: Date) {
  return db.delete(licenseFiles).where(lt(licenseFiles.expiresAt, cutoff(config["Licensing:TraceRetentionDays"], now)));
}

/** The statement removing old reports whose content is in the row. */
export function pruneInlineReports(db: Db, config: Config, now: Date) {
  return db.delete(reports).where(and(oldReport(config, now), isNull(reports.contentKey)));
}

/** Removes old reports whose content is in R2 (up to REPORT_BODIES_PER_RUN): their bodies, then their rows. */
export async function pruneStoredReports(env: Bindings, db: Db, config: Config, now: Date): Promise<number> {
  const stored = await db
    .select({ id: reports.id, contentKey: reports.contentKey })
    .from(reports)
    .where(and(oldReport(config, now), isNotNull(reports.contentKey)))
    .orderBy(asc(reports.id))
    .limit(REPORT_BODIES_PER_RUN);
  if (stored.length === 0) return 0;
  // Without the bucket the bodies cannot be removed: the rows stay rather than orphan them.
  if (!env.ARTIFACTS) return 0;
  await env.ARTIFACTS.delete(stored.flatMap((r) => (r.contentKey ? [r.contentKey] : [])));
  const removed = await db
    .delete(reports)
    .where(sql`${reports.id} IN (SELECT value FROM json_each(${JSON.stringify(stored.map((r) => r.id))}))`)
    .run();
  return removed.meta.changes ?? 0;
}
