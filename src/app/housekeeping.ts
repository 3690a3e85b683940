/**
 * The cron trigger's work: remove what has outlived its use so D1 stays small (DESIGN: keep traces, logs and
 * delivery history under retention). Each step is one statement and safe to repeat; the steps, drizzle queries each
 * module builds, go in one D1 batch as D1 statements (d1Statement), so each answers how many rows it removed.
 */
import { lt } from "drizzle-orm";
import { pruneConsoleSessions } from "../auth/console-session";
import { loadConfig } from "../db/settings-store";
import { getDb } from "../db/client";
import { d1Statement } from "../db/compiled";
import { downloadTokens, revokedTokens } from "../db/schema";
import { pruneIdempotencyKeys } from "../http/idempotency";
import { pruneLogs } from "../db/logging";
import { pruneDeliveries } from "../webhooks/history";
import { pruneInlineReports, pruneLicenseFiles, pruneStoredReports, pruneTraces } from "../licensing/retention";
import { pruneOutbox } from "../mail/send";
import { pruneAdoption } from "../updates/adoption";
import { pruneSessions } from "../updates/sessions";
import { prunePortalCredentials } from "../portal/portal-session";
import { sealPlainPasswords } from "../records/resource-passwords";
import { sealPlainHeaders } from "../webhooks/subscriptions";
import { emitOverdueCheckIns } from "../licensing/check-in";

export async function housekeeping(env: Bindings, now: Date): Promise<Record<string, number>> {
  const iso = now.toISOString();
  const { config } = await loadConfig(env, env.DB);
  const db = getDb(env.DB);
  const steps = {
    // Logged-out bearer tokens and download tokens past their expiry.
    revokedTokens: d1Statement(db, db.delete(revokedTokens).where(lt(revokedTokens.expiresAt, iso))),
    downloadTokens: d1Statement(db, db.delete(downloadTokens).where(lt(downloadTokens.expiresAt, iso))),
    // Service log entries older than Application:LogRetentionDays.
    logs: d1Statement(db, pruneLogs(db, config, now)),
    // Webhook delivery events older than Webhooks:EventRetentionDays.
    webhookEvents: d1Statement(db, pruneDeliveries(db, config, now)),
    // License traces, reports kept in their row, and the email outbox, past their retention settings.
    licenseTraces: d1Statement(db, pruneTraces(db, config, now)),
    // Release adoption days older than Updates:AdoptionRetentionDays.
    releaseAdoption: d1Statement(db, pruneAdoption(db, config, now)),
    // Release health sessions of days older than Updates:AdoptionRetentionDays.
    releaseSessions: d1Statement(db, pruneSessions(db, config, now)),
    // Records of license files expired longer than Licensing:TraceRetentionDays ago.
    licenseFiles: d1Statement(db, pruneLicenseFiles(db, config, now)),
    reports: d1Statement(db, pruneInlineReports(db, config, now)),
    emailOutbox: d1Statement(db, pruneOutbox(db, config, now)),
    // Admin console sessions past their expiry or their idle timeout (their API keys can no longer be used).
    consoleSessions: d1Statement(db, pruneConsoleSessions(db, config, now)),
    // Idempotency-Key claims and kept answers past their 24 hours.
    idempotencyKeys: d1Statement(db, pruneIdempotencyKeys(db, now)),
    // Customer portal sign-in links and sessions past their expiry.
    portalCredentials: d1Statement(db, prunePortalCredentials({ db }, now)),
  };
  const results = await env.DB.batch(Object.values(steps));
  const counts = Object.fromEntries(Object.keys(steps).map((name, i) => [name, results[i]?.meta.changes ?? 0]));
  // Reports with a body in R2: the bodies first, then the rows (licensing/retention.ts).
  counts["reportBodies"] = await pruneStoredReports(env, db, config, now);
  // Secrets stored in plain text before they were encrypted at rest: sealed in place, a bounded number per run.
  counts["sealedHeaders"] = await sealPlainHeaders(db, config);
  counts["sealedPasswords"] = await sealPlainPasswords(db, config);
  // Licenses past their check-in interval: license.check-in-overdue, once per overdue period (licensing/check-in.ts).
  counts["checkInOverdue"] = await emitOverdueCheckIns(env, db, config, now);
  return counts;
}
