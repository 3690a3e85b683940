/**
 * A fixed-window request count with a block, on a Durable Object's SQLite storage: the per-IP request limit
 * (rate-limiter.ts) and the per-license budget (license-seats.ts) both count this way. The count lives in one row
 * (id 1) of `table`, which has the columns window_start, count and blocked_until; deciding and counting is one
 * synchronous step on that storage, so concurrent requests can never count past the limit.
 */

export interface Verdict {
  allowed: boolean;
  /** Seconds until a blocked client may try again. */
  retryAfter?: number;
}

export const seconds = (ms: number) => Math.max(1, Math.ceil(ms / 1000));

interface Window extends Record<string, SqlStorageValue> {
  window_start: number;
  count: number;
  blocked_until: number;
}

/**
 * Counts one request in a fixed time frame of `windowMs`; over `limit` the caller is blocked for `blockMs`. A
 * blocked caller's requests are not counted (the block runs from when the limit was passed).
 */
export function countInWindow(
  sql: SqlStorage,
  table: "state" | "budget",
  now: number,
  limit: number,
  windowMs: number,
  blockMs: number,
): Verdict {
  const s = sql.exec<Window>(`SELECT window_start, count, blocked_until FROM ${table} WHERE id = 1`).one();
  if (s.blocked_until > now) return { allowed: false, retryAfter: seconds(s.blocked_until - now) };
  const fresh = now >= s.window_start + windowMs;
  const count = (fresh ? 0 : s.count) + 1;
  const windowStart = fresh ? now : s.window_start;
  if (count > limit) {
    sql.exec(`UPDATE ${table} SET window_start = ?, count = 0, blocked_until = ? WHERE id = 1`, now, now + blockMs);
    return { allowed: false, retryAfter: seconds(blockMs) };
  }
  sql.exec(`UPDATE ${table} SET window_start = ?, count = ? WHERE id = 1`, windowStart, count);
  return { allowed: true };
}
