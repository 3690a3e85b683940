/**
 * One object per client IP (SPEC "Limits"; IPv6 per /64): its request count in the current time frame and its
 * block, and its failed logins (each with the account it was for) and login block. State lives in the object's SQLite storage, so an eviction forgets nothing; each
 * method decides in one synchronous step on that storage, so concurrent requests can never count past the limit.
 * The caller passes the time and the settings, so the object follows run-time setting changes and test clocks.
 */
import { DurableObject } from "cloudflare:workers";
import { FixedWindow, type Verdict, seconds } from "./fixed-window";

export type { Verdict } from "./fixed-window";

// `failed` and `last_failure` are no longer used (login_attempts holds the failures); objects made before keep them.
interface State extends Record<string, SqlStorageValue> {
  window_start: number;
  count: number;
  blocked_until: number;
  failed: number;
  last_failure: number;
  login_blocked_until: number;
}

/** The answer of `loginBegin`: refused (blocked), or allowed with the id of the attempt to settle. */
export type LoginGate = { allowed: false; retryAfter: number } | { allowed: true; attempt: number };

/** The answer of `loginEnd` and `loginFailed`: whether this failure started a block. */
export interface LoginOutcome {
  blocked: boolean;
  /** The failures that caused the block. */
  failures?: number;
}

/** Longest a pending attempt counts (a Worker that died mid-check never settles it); a check takes well under this. */
const PENDING_MS = 30_000;

export class RateLimiter extends DurableObject<Bindings> {
  private readonly sql: SqlStorage;
  private readonly requests: FixedWindow;

  constructor(ctx: DurableObjectState, env: Bindings) {
    super(ctx, env);
    this.sql = ctx.storage.sql;
    this.requests = new FixedWindow(this.sql, "state");
    this.sql.exec(`CREATE TABLE IF NOT EXISTS state (
      id INTEGER PRIMARY KEY CHECK (id = 1),
      window_start INTEGER NOT NULL, count INTEGER NOT NULL, blocked_until INTEGER NOT NULL,
      failed INTEGER NOT NULL, last_failure INTEGER NOT NULL, login_blocked_until INTEGER NOT NULL
    )`);
    this.sql.exec("INSERT OR IGNORE INTO state VALUES (1, 0, 0, 0, 0, 0, 0)");
    // One row per failed login, and per attempt still being checked (pending = 1), with the account it was for.
    this.sql.exec(`CREATE TABLE IF NOT EXISTS login_attempts (
      id INTEGER PRIMARY KEY AUTOINCREMENT, at INTEGER NOT NULL, account TEXT, pending INTEGER NOT NULL
    )`);
  }

  private state(): State {
    return this.sql.exec<State>("SELECT * FROM state WHERE id = 1").one();
  }

  /**
   * Counts one request in a fixed time frame of `windowMs`; over `limit` the client is blocked for `blockMs`.
   * A blocked client's requests are not counted (the block runs from when the limit was passed).
   */
  async hit(now: number, limit: number, windowMs: number, blockMs: number): Promise<Verdict> {
    return this.requests.count(now, limit, windowMs, blockMs);
  }

  /**
   * Decides and counts one login attempt in one step (issue 14: a parallel burst cannot slip past the limit): while
   * the client is blocked, or when its failures plus the attempts still being checked reach `maxAttempts`, the
   * attempt is refused; otherwise it is recorded as pending (it counts as a failure until `loginEnd` says otherwise)
   * and its id is returned. Failures older than `blockMs` are forgotten.
   */
  async loginBegin(now: number, maxAttempts: number, blockMs: number): Promise<LoginGate> {
    const s = this.state();
    if (s.login_blocked_until > now) return { allowed: false, retryAfter: seconds(s.login_blocked_until - now) };
    this.sql.exec(
      "DELETE FROM login_attempts WHERE at <= ? OR (pending = 1 AND at <= ?)",
      now - blockMs,
      now - PENDING_MS,
    );
    const { n } = this.sql.exec<{ n: number }>("SELECT count(*) AS n FROM login_attempts").one();
    if (n >= maxAttempts) {
      // Only attempts still being checked can fill the count here (failures alone would have blocked): the client
      // may try again once the oldest of them is settled or forgotten.
      const { oldest } = this.sql.exec<{ oldest: number }>("SELECT min(at) AS oldest FROM login_attempts").one();
      return { allowed: false, retryAfter: seconds(Math.min(PENDING_MS, oldest + blockMs - now)) };
    }
    const { id } = this.sql
      .exec<{ id: number }>("INSERT INTO login_attempts (at, account, pending) VALUES (?, NULL, 1) RETURNING id", now)
      .one();
    return { allowed: true, attempt: id };
  }

  /**
   * Settles an attempt of `loginBegin`. `failed`: it stays counted, for `account` (the normalized user name, or
   * null); at `maxAttempts` failures logins are blocked for `blockMs`. `succeeded`: it and every failure of `account`
   * are cleared (the failures of other accounts stay). `neutral`: only the attempt is cleared (a user-key sign-in,
   * an error that is no verdict on the credential). Returns whether this call started a block.
   */
  async loginEnd(
    now: number,
    attempt: number,
    outcome: "failed" | "succeeded" | "neutral",
    account: string | null,
    maxAttempts: number,
    blockMs: number,
  ): Promise<LoginOutcome> {
    if (outcome !== "failed") {
      this.sql.exec("DELETE FROM login_attempts WHERE id = ?", attempt);
      if (outcome === "succeeded" && account !== null)
        this.sql.exec("DELETE FROM login_attempts WHERE pending = 0 AND account = ?", account);
      return { blocked: false };
    }
    this.sql.exec("DELETE FROM login_attempts WHERE id = ?", attempt);
    return this.countFailure(now, account, maxAttempts, blockMs);
  }

  /**
   * Counts a failure that was not a login attempt (an unknown, revoked or expired user key on the update routes, an
   * unknown API key). Returns whether this call started a block.
   */
  async loginFailed(now: number, maxAttempts: number, blockMs: number): Promise<LoginOutcome> {
    return this.countFailure(now, null, maxAttempts, blockMs);
  }

  private countFailure(now: number, account: string | null, maxAttempts: number, blockMs: number): LoginOutcome {
    // A failure settled while a block runs changes nothing: the block already stands.
    if (this.state().login_blocked_until > now) return { blocked: false };
    this.sql.exec("DELETE FROM login_attempts WHERE at <= ?", now - blockMs);
    this.sql.exec("INSERT INTO login_attempts (at, account, pending) VALUES (?, ?, 0)", now, account);
    const { n } = this.sql.exec<{ n: number }>("SELECT count(*) AS n FROM login_attempts WHERE pending = 0").one();
    if (n < maxAttempts) return { blocked: false };
    this.sql.exec("UPDATE state SET login_blocked_until = ? WHERE id = 1", now + blockMs);
    this.sql.exec("DELETE FROM login_attempts WHERE pending = 0");
    return { blocked: true, failures: n };
  }
}
