/**
 * One object per client IP (SPEC "Limits"): its request count in the current time frame and its block, and its
 * failed logins and login block. State lives in the object's SQLite storage, so an eviction forgets nothing; each
 * method decides in one synchronous step on that storage, so concurrent requests can never count past the limit.
 * The caller passes the time and the settings, so the object follows run-time setting changes and test clocks.
 */
import { DurableObject } from "cloudflare:workers";
import type { Bindings } from "../env";

export interface Verdict {
  allowed: boolean;
  /** Seconds until a blocked client may try again. */
  retryAfter?: number;
}

interface State extends Record<string, SqlStorageValue> {
  window_start: number;
  count: number;
  blocked_until: number;
  failed: number;
  last_failure: number;
  login_blocked_until: number;
}

const seconds = (ms: number) => Math.max(1, Math.ceil(ms / 1000));

export class RateLimiter extends DurableObject<Bindings> {
  private readonly sql: SqlStorage;

  constructor(ctx: DurableObjectState, env: Bindings) {
    super(ctx, env);
    this.sql = ctx.storage.sql;
    this.sql.exec(`CREATE TABLE IF NOT EXISTS state (
      id INTEGER PRIMARY KEY CHECK (id = 1),
      window_start INTEGER NOT NULL, count INTEGER NOT NULL, blocked_until INTEGER NOT NULL,
      failed INTEGER NOT NULL, last_failure INTEGER NOT NULL, login_blocked_until INTEGER NOT NULL
    )`);
    this.sql.exec("INSERT OR IGNORE INTO state VALUES (1, 0, 0, 0, 0, 0, 0)");
  }

  private state(): State {
    return this.sql.exec<State>("SELECT * FROM state WHERE id = 1").one();
  }

  /**
   * Counts one request in a fixed time frame of `windowMs`; over `limit` the client is blocked for `blockMs`.
   * A blocked client's requests are not counted (the block runs from when the limit was passed).
   */
  async hit(now: number, limit: number, windowMs: number, blockMs: number): Promise<Verdict> {
    const s = this.state();
    if (s.blocked_until > now) return { allowed: false, retryAfter: seconds(s.blocked_until - now) };
    const fresh = now >= s.window_start + windowMs;
    const count = (fresh ? 0 : s.count) + 1;
    const windowStart = fresh ? now : s.window_start;
    if (count > limit) {
      this.sql.exec("UPDATE state SET window_start = ?, count = 0, blocked_until = ? WHERE id = 1", now, now + blockMs);
      return { allowed: false, retryAfter: seconds(blockMs) };
    }
    this.sql.exec("UPDATE state SET window_start = ?, count = ? WHERE id = 1", windowStart, count);
    return { allowed: true };
  }

  /** Whether this client may try to log in now. */
  async loginAllowed(now: number): Promise<Verdict> {
    const s = this.state();
    return s.login_blocked_until > now ? { allowed: false, retryAfter: seconds(s.login_blocked_until - now) } : { allowed: true };
  }

  /**
   * Counts a failed login (or an unknown, revoked or expired user key on the update routes). The count forgets
   * failures older than `blockMs`; at `maxAttempts` logins are blocked for `blockMs`.
   */
  async loginFailed(now: number, maxAttempts: number, blockMs: number): Promise<Verdict> {
    const s = this.state();
    const failed = (now - s.last_failure > blockMs ? 0 : s.failed) + 1;
    if (failed >= maxAttempts) {
      this.sql.exec("UPDATE state SET failed = 0, last_failure = ?, login_blocked_until = ? WHERE id = 1", now, now + blockMs);
      return { allowed: false, retryAfter: seconds(blockMs) };
    }
    this.sql.exec("UPDATE state SET failed = ?, last_failure = ? WHERE id = 1", failed, now);
    return { allowed: true };
  }

  /** A successful login clears the failures. */
  async loginSucceeded(): Promise<void> {
    this.sql.exec("UPDATE state SET failed = 0 WHERE id = 1");
  }
}
