/**
 * The cron trigger's work: remove what has outlived its use so D1 stays small (DESIGN: keep traces, logs and
 * delivery history under retention). Each step is one statement and safe to repeat.
 */
import { pruneConsoleSessionsStatement } from "./auth/console-session";
import { loadConfig } from "./config";
import { pruneLogsStatement } from "./logging";
import { pruneDeliveriesStatement } from "./webhooks/history";
import { pruneInlineReportsStatement, pruneStoredReports, pruneTracesStatement } from "./licensing/retention";
import { pruneOutboxStatement } from "./mail/send";
import { sealPlainPasswords } from "./management/resource-passwords";
import { sealPlainHeaders } from "./webhooks/subscriptions";

export async function housekeeping(env: Bindings, now: Date): Promise<Record<string, number>> {
  const iso = now.toISOString();
  const { config } = await loadConfig(env, env.DB);
  const steps = {
    revokedTokens: env.DB.prepare("DELETE FROM revoked_tokens WHERE expires_at < ?").bind(iso),
    downloadTokens: env.DB.prepare("DELETE FROM download_tokens WHERE expires_at < ?").bind(iso),
    // Service log entries older than Application:LogRetentionDays.
    logs: pruneLogsStatement(env.DB, config, now),
    // Webhook delivery events older than Webhooks:EventRetentionDays.
    webhookEvents: pruneDeliveriesStatement(env.DB, config, now),
    // License traces, reports kept in their row, and the email outbox, past their retention settings.
    licenseTraces: pruneTracesStatement(env.DB, config, now),
    reports: pruneInlineReportsStatement(env.DB, config, now),
    emailOutbox: pruneOutboxStatement(env.DB, config, now),
    // Admin console sessions past their expiry or their idle timeout (their API keys can no longer be used).
    consoleSessions: pruneConsoleSessionsStatement(env.DB, config, now),
  };
  const results = await env.DB.batch(Object.values(steps));
  const counts = Object.fromEntries(Object.keys(steps).map((name, i) => [name, results[i]?.meta.changes ?? 0]));
  // Reports with a body in R2: the bodies first, then the rows (licensing/retention.ts).
  counts["reportBodies"] = await pruneStoredReports(env, config, now);
  // Secrets stored in plain text before they were encrypted at rest: sealed in place, a bounded number per run.
  counts["sealedHeaders"] = await sealPlainHeaders(env.DB, config);
  counts["sealedPasswords"] = await sealPlainPasswords(env.DB, config);
  return counts;
}
