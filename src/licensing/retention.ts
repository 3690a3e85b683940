/**
 * Retention of what licensed clients write (issue 14, "Abuse and growth"; DESIGN: keep traces under retention):
 * license traces older than Licensing:TraceRetentionDays and reports older than Licensing:ReportRetentionDays are
 * removed by the cron trigger (housekeeping.ts), a report's R2 body (large content) before its row, so no body is
 * left without its row; a body R2 fails to delete keeps its row for the next run.
 */
import type { Config } from "../config";

const DAY = 86_400_000;
/** Reports with an R2 body removed per run: one R2 delete call takes at most 1,000 keys. */
export const REPORT_BODIES_PER_RUN = 1000;

const cutoff = (days: number, now: Date) => new Date(now.getTime() - days * DAY).toISOString();

/** The statement removing old traces, for housekeeping's batch. */
export function pruneTracesStatement(d1: D1Database, config: Config, now: Date): D1PreparedStatement {
  return d1
    .prepare("DELETE FROM license_traces WHERE created_at < ?")
    .bind(cutoff(config["Licensing:TraceRetentionDays"], now));
}

/** The statement removing old reports whose content is in the row, for housekeeping's batch. */
export function pruneInlineReportsStatement(d1: D1Database, config: Config, now: Date): D1PreparedStatement {
  return d1
    .prepare("DELETE FROM reports WHERE created_at < ? AND content_key IS NULL")
    .bind(cutoff(config["Licensing:ReportRetentionDays"], now));
}

/** Removes old reports whose content is in R2 (up to REPORT_BODIES_PER_RUN): their bodies, then their rows. */
export async function pruneStoredReports(env: Bindings, config: Config, now: Date): Promise<number> {
  const { results } = await env.DB.prepare(
    "SELECT id, content_key FROM reports WHERE created_at < ? AND content_key IS NOT NULL ORDER BY id LIMIT ?",
  )
    .bind(cutoff(config["Licensing:ReportRetentionDays"], now), REPORT_BODIES_PER_RUN)
    .all<{ id: number; content_key: string }>();
  if (results.length === 0) return 0;
  // Without the bucket the bodies cannot be removed: the rows stay rather than orphan them.
  if (!env.ARTIFACTS) return 0;
  await env.ARTIFACTS.delete(results.map((r) => r.content_key));
  const removed = await env.DB.prepare("DELETE FROM reports WHERE id IN (SELECT value FROM json_each(?))")
    .bind(JSON.stringify(results.map((r) => r.id)))
    .run();
  return removed.meta.changes ?? 0;
}
