/**
 * Retention of webhook delivery history (DESIGN: keep delivery history under retention, D1 holds at most 10 GB):
 * the cron trigger deletes delivery events created more than `Webhooks:EventRetentionDays` ago. A delivery is
 * settled within a day of its event (the retry schedule spans about 23 hours), so only settled history is pruned.
 */
import type { Config } from "../config";

const DAY_MS = 86_400_000;

/** The DELETE of delivery events older than the retention (one statement, for the housekeeping batch). */
export function pruneDeliveriesStatement(d1: D1Database, config: Config, now: Date): D1PreparedStatement {
  const cutoff = new Date(now.getTime() - config["Webhooks:EventRetentionDays"] * DAY_MS).toISOString();
  return d1.prepare("DELETE FROM webhook_events WHERE created_at < ?").bind(cutoff);
}
