/**
 * A request's first D1 round trip, shared, and owned by the request's D1 session (db/work.ts). A check that would
 * cost a round trip of its own before the route runs (the guard's bearer-token logout check, a cached API key's
 * existence check) is left with the session instead, and the first batch of reads sent through it carries the check
 * (db/compiled.ts batchReads), so a licensing call costs one round trip with a bearer token as with an API key.
 * Services know no check and no "first read": every pending check is settled (and throws its refusal) before
 * anything read is used. An error raised before that settles the pending checks first (`settleFirst`, called by the
 * app's error handler), and the guard settles them alone if the route never batched (`flush`), so a check's refusal
 * always wins, as if it had run up front.
 */
import type { Db } from "./client";
import { type CheckColumn, type Checked, type ReadItem, type ReadResults, CheckableBound, sendReads } from "./compiled";
import { type PendingChecks, requestSession } from "./work";

/** A check waiting for the request's first batch. */
export interface PendingCheck {
  /** The check's query, unexecuted (a drizzle query, or a compiled one with its values). */
  query(db: Db): ReadItem;
  /** Takes the query's rows; throws the refusal. */
  settle(rows: readonly unknown[]): void;
  /**
   * The check as a column of the route's first read, when that read can carry one (db/compiled.ts CheckableQuery):
   * then the whole first round trip is one statement.
   */
  column?: CheckColumn;
}

type Queries = readonly [ReadItem, ...ReadItem[]];

export class FirstBatch implements PendingChecks {
  private pending: PendingCheck[] = [];

  /** Adds a check to the first batch of the request. */
  add(check: PendingCheck): void {
    this.pending.push(check);
  }

  waiting(): boolean {
    return this.pending.length > 0;
  }

  /** The pending checks, handed out once: whoever takes them settles them. */
  private take(): PendingCheck[] {
    const taken = this.pending;
    this.pending = [];
    return taken;
  }

  /** Runs `queries` with the pending checks in one batch; settles the checks before returning the queries' rows. */
  async run<const Q extends Queries>(db: Db, queries: Q): Promise<ReadResults<Q>> {
    const checks = this.take();
    if (checks.length === 0) return sendReads(db, queries);
    const [read] = queries;
    const [check] = checks as [PendingCheck];
    if (checks.length === 1 && queries.length === 1 && read instanceof CheckableBound && check.column) {
      const rows = (await read.withCheck(db, check.column)) as readonly Checked[];
      // No row carries the check's answer: it is asked on its own (a second round trip, on this path only).
      if (rows.length === 0) await this.settleAlone(db, [check]);
      else check.settle(rows[0]!.checked ? rows.slice(0, 1) : []);
      return [rows] as unknown as ReadResults<Q>;
    }
    const rows = (await sendReads(db, [
      ...checks.map((check) => check.query(db)),
      ...queries,
    ] as unknown as Q)) as readonly unknown[];
    checks.forEach((check, i) => check.settle(rows[i] as readonly unknown[]));
    return rows.slice(checks.length) as unknown as ReadResults<Q>;
  }

  /** Settles one check on its own, now. */
  settleNow(db: Db, check: PendingCheck): Promise<void> {
    return this.settleAlone(db, [check]);
  }

  /** Settles the pending checks on their own (the route sent no batch). */
  async flush(db: Db): Promise<void> {
    await this.settleAlone(db, this.take());
  }

  private async settleAlone(db: Db, checks: readonly PendingCheck[]): Promise<void> {
    if (checks.length === 0) return;
    const queries = checks.map((check) => check.query(db)) as unknown as Queries;
    const rows = (await sendReads(db, queries)) as readonly unknown[];
    checks.forEach((check, i) => check.settle(rows[i] as readonly unknown[]));
  }
}

/**
 * Leaves `check` for the first batch of the request's D1 session. A D1 that is no request's session (a client over
 * the binding itself, shared by whatever uses it) cannot hold it for one request: the check is settled at once.
 */
export async function leaveCheck(db: Db, check: PendingCheck): Promise<void> {
  const session = requestSession(db);
  if (!session) {
    await new FirstBatch().settleNow(db, check);
    return;
  }
  if (!(session.pending instanceof FirstBatch)) session.pending = new FirstBatch();
  (session.pending as FirstBatch).add(check);
}

/** The first batch a request's session holds, if one was made. */
export function heldFirstBatch(db: Db): FirstBatch | undefined {
  const pending = requestSession(db)?.pending;
  return pending instanceof FirstBatch ? pending : undefined;
}
