/**
 * A fixed-window request count with a block, on a Durable Object's SQLite storage: the per-IP request limit
 * (rate-limiter.ts) and the per-license budget (license-seats.ts) both count this way. The count lives in one row
 * (id 1) of `table`, which has the columns window_start, count and blocked_until; deciding and counting is one
 * synchronous step, so concurrent requests can never count past the limit.
 *
 * The row is read once per object instance and mirrored in memory: only this class writes those columns, and an
 * object runs one call at a time, so the mirror is the row. The row is written when a block starts and at every
 * tenth of the limit, not at every call: a write is most of what a count costs (docs/performance.md), and a limit
 * is there to stop floods, which are exactly the callers with many calls per window. An object that is evicted
 * (idle for over a minute on Cloudflare) or restarted reads the row again: a block survives whole, and the count of
 * the window forgets less than a tenth of the limit (docs/decisions.md).
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

/** How many counts go between two writes of the row: a tenth of the limit. */
export const writeEvery = (limit: number): number => Math.max(1, Math.ceil(limit / 10));

export class FixedWindow {
  private window: Window | undefined;

  constructor(
    private readonly sql: SqlStorage,
    private readonly table: "state" | "budget",
  ) {}

  private read(): Window {
    this.window ??= this.sql
      .exec<Window>(`SELECT window_start, count, blocked_until FROM ${this.table} WHERE id = 1`)
      .one();
    return this.window;
  }

  private write(next: Window): void {
    this.sql.exec(
      `UPDATE ${this.table} SET window_start = ?, count = ?, blocked_until = ? WHERE id = 1`,
      next.window_start,
      next.count,
      next.blocked_until,
    );
    // After the write: a failed write leaves the mirror as the row still is.
    this.window = next;
  }

  /**
   * Counts one request in a fixed time frame of `windowMs`; over `limit` the caller is blocked for `blockMs`. A
   * blocked caller's requests are not counted (the block runs from when the limit was passed).
   */
  count(now: number, limit: number, windowMs: number, blockMs: number): Verdict {
    const s = this.read();
    if (s.blocked_until > now) return { allowed: false, retryAfter: seconds(s.blocked_until - now) };
    const fresh = now >= s.window_start + windowMs;
    const count = (fresh ? 0 : s.count) + 1;
    if (count > limit) {
      this.write({ window_start: now, count: 0, blocked_until: now + blockMs });
      return { allowed: false, retryAfter: seconds(blockMs) };
    }
    const next = { window_start: fresh ? now : s.window_start, count, blocked_until: s.blocked_until };
    if (count % writeEvery(limit) === 0) this.write(next);
    else this.window = next;
    return { allowed: true };
  }
}
