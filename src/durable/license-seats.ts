/**
 * Floating seats of one license (CONTRACT section 4): one Durable Object per license, addressed by the license's
 * integer id, holds its seats in SQLite storage, so an eviction or restart loses nothing. Every decision is made
 * synchronously on that storage (no await between reading and writing the seats), so concurrent requests can never
 * grant more seats than `maxClients`. A seat lives until `expiresAt`; heartbeats move it (never earlier: a borrowed
 * seat, CONTRACT 11, is a seat whose lease is the borrow's hours, held with no heartbeat); an alarm reclaims dead
 * seats (and every seat of a license the license policy no longer finds usable: deleted, tampered, revoked or
 * expired), has the licensing domain write that through to D1 (the token rows go, a trace is written when the license
 * traces; the object itself writes no domain table) and hands the seats to the `license.seats.expired` queue job,
 * whose consumer emits license.seat.expired for each.
 *
 * The object also keeps the license's request budget (licensing/license-limit.ts): the calls that reach it (floating
 * request, heartbeat, release, and reports through `spend`) are counted in the same step that serves them, so a
 * heartbeat costs one Durable Object call, not one for the budget and one for the seat.
 *
 * This class knows seats only: which license may still be used and what a reclaimed seat changes in D1 are the
 * licensing domain's, given by its subclass (licensing/seat-object.ts, the class the Worker exports). A seat is live
 * by the rule of every license token (db/rules.ts).
 */
import { DurableObject } from "cloudflare:workers";
import { clock } from "../kernel/clock";
import { lapsedText, liveText } from "../db/rules";
import type { JobOf } from "../kernel/jobs";
import { FixedWindow } from "./fixed-window";

// A seat follows the rule of every license token (db/rules.ts): live while its expiry is ahead, lapsed otherwise.
const SEAT_LIVE = liveText("expires_at", "?");
const SEAT_LAPSED = lapsedText("expires_at", "?");

/** A license's request budget: at most `limit` calls per `windowMs`; over it, refused until the window ends. */
export interface Budget {
  limit: number;
  windowMs: number;
}

/** The answer of a call over the license's budget. */
export interface OverBudget {
  overBudget: true;
  retryAfter: number;
}

export interface SeatRequest {
  tokenDigest: string;
  tokenPrefix: string;
  machineId: string;
  clientId: string;
  clientName?: string | null;
  address?: string | null;
  /** 0 = unlimited. */
  maxClients: number;
  leaseMs: number;
  now: number;
}

export type SeatGrant =
  | { granted: true; renewed: boolean; expiresAt: number; active: number }
  | { granted: false; active: number };
export type SeatBeat =
  | { found: false }
  | { found: true; expired: true }
  | { found: true; expired: false; expiresAt: number; active: number };
export type SeatRelease = { released: boolean; active: number };
/** A seat the alarm reclaims. */
export interface ReclaimedSeat {
  tokenDigest: string;
  machineId: string;
  clientId: string;
}

interface SeatRow extends Record<string, SqlStorageValue> {
  token_digest: string;
  machine_id: string;
  client_id: string;
  expires_at: number;
}

/** A seat read with whether it is live at the moment bound first. */
interface HeldSeat extends SeatRow {
  live: number;
}

export abstract class SeatStore extends DurableObject<Bindings> {
  private readonly sql: SqlStorage;
  private readonly budget: FixedWindow;

  constructor(ctx: DurableObjectState, env: Bindings) {
    super(ctx, env);
    this.sql = ctx.storage.sql;
    this.budget = new FixedWindow(this.sql, "budget");
    this.sql.exec(`CREATE TABLE IF NOT EXISTS seats (
      token_digest TEXT PRIMARY KEY,
      token_prefix TEXT NOT NULL,
      license_id INTEGER NOT NULL,
      machine_id TEXT NOT NULL,
      client_id TEXT NOT NULL,
      client_name TEXT,
      address TEXT,
      granted_at INTEGER NOT NULL,
      expires_at INTEGER NOT NULL
    )`);
    this.sql.exec(`CREATE TABLE IF NOT EXISTS budget (
      id INTEGER PRIMARY KEY CHECK (id = 1),
      window_start INTEGER NOT NULL, count INTEGER NOT NULL, blocked_until INTEGER NOT NULL
    )`);
    this.sql.exec("INSERT OR IGNORE INTO budget VALUES (1, 0, 0, 0)");
    // Deactivations the customer portal made, per calendar month (`yyyy-mm`, UTC): Licensing:MaxDeactivationsPerMonth.
    this.sql.exec("CREATE TABLE IF NOT EXISTS deactivations (month TEXT PRIMARY KEY, count INTEGER NOT NULL)");
  }

  /**
   * Counts one deactivation of `month` when fewer than `limit` were counted (0 = no limit), in one synchronous step
   * (no await between reading and writing), so concurrent deactivations are counted exactly and never pass the limit.
   * `count` is the month's count after the call.
   */
  async countDeactivation(month: string, limit: number): Promise<{ allowed: boolean; count: number }> {
    const counted = this.sql
      .exec<{ count: number }>(
        `INSERT INTO deactivations (month, count) SELECT ?, 1 WHERE true
         ON CONFLICT (month) DO UPDATE SET count = count + 1 WHERE ? = 0 OR count < ?
         RETURNING count`,
        month,
        limit,
        limit,
      )
      .toArray()[0];
    if (counted) return { allowed: true, count: counted.count };
    const row = this.sql.exec<{ count: number }>("SELECT count FROM deactivations WHERE month = ?", month).toArray()[0];
    return { allowed: false, count: row?.count ?? 0 };
  }

  /** Gives back a counted deactivation of `month` that changed nothing (the machine was freed meanwhile). */
  async uncountDeactivation(month: string): Promise<void> {
    this.sql.exec("UPDATE deactivations SET count = count - 1 WHERE month = ? AND count > 0", month);
  }

  /** The deactivations counted in `month`. */
  async deactivations(month: string): Promise<number> {
    return (
      this.sql.exec<{ count: number }>("SELECT count FROM deactivations WHERE month = ?", month).toArray()[0]?.count ??
      0
    );
  }

  /** Counts one call against the license's budget; the refusal when it is spent. */
  private overBudget(budget: Budget, now: number): OverBudget | undefined {
    const verdict = this.budget.count(now, budget.limit, budget.windowMs, budget.windowMs);
    return verdict.allowed ? undefined : { overBudget: true, retryAfter: verdict.retryAfter ?? 1 };
  }

  /** Counts one call against the license's budget (a call that needs no seat: a report). */
  async spend(budget: Budget, now: number): Promise<OverBudget | { overBudget: false }> {
    return this.overBudget(budget, now) ?? { overBudget: false };
  }

  /** This object's license: the name it was addressed by. */
  private licenseId(): number {
    return Number(this.ctx.id.name);
  }

  /** The seat of a token, if any, and whether it is live at `now`. */
  private held(tokenDigest: string, now: number): HeldSeat | undefined {
    return this.sql
      .exec<HeldSeat>(`SELECT *, ${SEAT_LIVE} AS live FROM seats WHERE token_digest = ?`, now, tokenDigest)
      .toArray()[0];
  }

  private live(now: number): number {
    return this.sql.exec<{ n: number }>(`SELECT count(*) AS n FROM seats WHERE ${SEAT_LIVE}`, now).one().n;
  }

  /**
   * Grants a seat, or renews the one this machine and client already hold; refuses when the license is full. Counts
   * against the budget first.
   */
  async request(input: SeatRequest, budget: Budget): Promise<SeatGrant | OverBudget> {
    const over = this.overBudget(budget, input.now);
    if (over) return over;
    const expiresAt = input.now + input.leaseMs;
    if (this.held(input.tokenDigest, input.now)?.live) {
      // A renewal never shortens a seat: a borrowed seat (its lease the borrow's hours) keeps its end.
      const renewed = this.sql
        .exec<{ expires_at: number }>(
          "UPDATE seats SET expires_at = max(expires_at, ?), client_name = coalesce(?, client_name), address = coalesce(?, address) WHERE token_digest = ? RETURNING expires_at",
          expiresAt,
          input.clientName ?? null,
          input.address ?? null,
          input.tokenDigest,
        )
        .one();
      await this.scheduleAlarm();
      return { granted: true, renewed: true, expiresAt: renewed.expires_at, active: this.live(input.now) };
    }
    const active = this.live(input.now);
    if (input.maxClients > 0 && active >= input.maxClients) return { granted: false, active };
    this.sql.exec(
      `INSERT INTO seats (token_digest, token_prefix, license_id, machine_id, client_id, client_name, address, granted_at, expires_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (token_digest) DO UPDATE SET granted_at = excluded.granted_at, expires_at = excluded.expires_at`,
      input.tokenDigest,
      input.tokenPrefix,
      this.licenseId(),
      input.machineId,
      input.clientId,
      input.clientName ?? null,
      input.address ?? null,
      input.now,
      expiresAt,
    );
    await this.scheduleAlarm();
    return { granted: true, renewed: false, expiresAt, active: active + 1 };
  }

  /**
   * Moves a live seat's expiry forward, after counting against the budget. The alarm stays as it is: it is set at
   * or before the earliest expiry, which a heartbeat only moves later, and when it fires it sets the next one.
   */
  async heartbeat(tokenDigest: string, leaseMs: number, now: number, budget: Budget): Promise<SeatBeat | OverBudget> {
    const over = this.overBudget(budget, now);
    if (over) return over;
    // One statement for a live seat: moved, and the live seats counted (the moved one is live before and after).
    // Never earlier: a borrowed seat needs no heartbeat, and one keeps its end.
    const moved = this.sql
      .exec<{ active: number; expires_at: number }>(
        `UPDATE seats SET expires_at = max(expires_at, ?) WHERE token_digest = ? AND ${SEAT_LIVE}
         RETURNING expires_at, (SELECT count(*) FROM seats WHERE ${SEAT_LIVE}) AS active`,
        now + leaseMs,
        tokenDigest,
        now,
        now,
      )
      .toArray()[0];
    if (moved) return { found: true, expired: false, expiresAt: moved.expires_at, active: moved.active };
    const held = this.sql.exec("SELECT 1 FROM seats WHERE token_digest = ?", tokenDigest).toArray().length > 0;
    return held ? { found: true, expired: true } : { found: false };
  }

  /** Whether the seat of this token is live, until when, and whose it is (the key a validate signs names them). */
  async seat(
    tokenDigest: string,
    now: number,
  ): Promise<{ live: boolean; expiresAt?: number; machineId?: string; clientId?: string; active: number }> {
    const seat = this.held(tokenDigest, now);
    return {
      live: Boolean(seat?.live),
      ...(seat?.live ? { expiresAt: seat.expires_at, machineId: seat.machine_id, clientId: seat.client_id } : {}),
      active: this.live(now),
    };
  }

  /** Frees a seat, after counting against the budget; false when the token holds none. */
  async release(tokenDigest: string, now: number, budget: Budget): Promise<SeatRelease | OverBudget> {
    const over = this.overBudget(budget, now);
    if (over) return over;
    const released = this.sql.exec("DELETE FROM seats WHERE token_digest = ?", tokenDigest).rowsWritten > 0;
    return { released, active: this.live(now) };
  }

  /** Frees the seats of these tokens, or every seat (the license or its tokens were deleted by an administrator). */
  async drop(tokenDigests?: string[]): Promise<number> {
    if (!tokenDigests) return this.sql.exec("DELETE FROM seats").rowsWritten;
    let dropped = 0;
    for (const digest of tokenDigests)
      dropped += this.sql.exec("DELETE FROM seats WHERE token_digest = ?", digest).rowsWritten;
    return dropped;
  }

  /** Live seats now. */
  async count(now: number): Promise<number> {
    return this.live(now);
  }

  private async scheduleAlarm(): Promise<void> {
    const next = this.sql.exec<{ at: number | null }>("SELECT min(expires_at) AS at FROM seats").one().at;
    if (next === null) return;
    const current = await this.ctx.storage.getAlarm();
    if (current === null || current > next) await this.ctx.storage.setAlarm(next);
  }

  /** Whether the license policy still lets the license of this object (its integer id) be used. */
  protected abstract licenseUsable(licenseId: number, now: Date): Promise<boolean>;

  /**
   * Writes reclaimed seats through to the licensing domain's tables (D1), in one batch that succeeds or fails whole:
   * their token rows go, a trace is written when the license traces.
   */
  protected abstract writeThrough(licenseId: number, seats: readonly ReclaimedSeat[], now: Date): Promise<void>;

  /**
   * Reclaims dead seats, and every seat when the license may no longer be used, and writes them through to D1
   * (writeThrough).
   */
  override async alarm(): Promise<void> {
    const now = clock.now().getTime();
    const reclaimAll = !(await this.licenseUsable(this.licenseId(), new Date(now)));
    const dead = reclaimAll
      ? this.sql.exec<SeatRow>("SELECT * FROM seats").toArray()
      : this.sql.exec<SeatRow>(`SELECT * FROM seats WHERE ${SEAT_LAPSED}`, now).toArray();
    if (dead.length > 0) {
      const licenseId = this.licenseId();
      // D1 first: if it fails, the alarm is retried and the seats are still here to be reclaimed.
      await this.writeThrough(
        licenseId,
        dead.map((seat) => ({ tokenDigest: seat.token_digest, machineId: seat.machine_id, clientId: seat.client_id })),
        new Date(now),
      );
      for (const seat of dead)
        this.sql.exec(
          `DELETE FROM seats WHERE token_digest = ? AND (${SEAT_LAPSED} OR ?)`,
          seat.token_digest,
          now,
          reclaimAll ? 1 : 0,
        );
      // After the write-through, so a subscriber hears of a seat only once it is gone. The events are licensing's
      // (license.seat.expired): a queue job hands them over. A failed send is logged, never thrown, so the alarm
      // does not reclaim the seats again.
      const job: JobOf<"license.seats.expired"> = {
        kind: "license.seats.expired",
        licenseRowId: licenseId,
        seats: dead.map((seat) => ({ machineId: seat.machine_id, clientId: seat.client_id })),
      };
      await this.env.WEBHOOKS.send(job).catch((e: unknown) =>
        console.error(`license seats: handing over the expired seats of license ${licenseId} failed`, e),
      );
    }
    await this.scheduleAlarm();
  }
}
