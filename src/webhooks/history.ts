/**
 * Retention of webhook delivery history (DESIGN: keep delivery history under retention, D1 holds at most 10 GB):
 * the cron trigger deletes delivery events created more than `Webhooks:EventRetentionDays` ago. A delivery is
 * settled within a day of its event (the retry schedule spans about 23 hours), so only settled history is pruned.
 */
import { lt } from "drizzle-orm";
import type { Config } from "../kernel/config";
import type { Db } from "../db/client";
import { webhookEvents } from "../db/schema";

const DAY_MS = 86_400_000;

/** The DELETE of delivery events older than the retention (one statement, for the housekeeping batch). */
export function pruneDeliveries(db: Db, config: Config, now: Date) {
  const cutoff = new Date(now.getTime() - config["Webhooks:EventRetentionDays"] * DAY_MS).toISOString();
  return db.delete(webhookEvents).where(lt(webhookEvents.createdAt, cutoff));
}
