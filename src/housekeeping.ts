/**
 * The cron trigger's work: remove what has outlived its use so D1 stays small (DESIGN: keep traces, logs and
 * delivery history under retention). Each step is one statement and safe to repeat.
 */
import type { Bindings } from "./env";

export async function housekeeping(env: Bindings, now: Date): Promise<Record<string, number>> {
  const iso = now.toISOString();
  const steps = {
    revokedTokens: env.DB.prepare("DELETE FROM revoked_tokens WHERE expires_at < ?").bind(iso),
    downloadTokens: env.DB.prepare("DELETE FROM download_tokens WHERE expires_at < ?").bind(iso),
  };
  const results = await env.DB.batch(Object.values(steps));
  return Object.fromEntries(Object.keys(steps).map((name, i) => [name, results[i]?.meta.changes ?? 0]));
}
