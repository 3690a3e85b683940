/**
 * A request's view of D1: one D1 session (read replication through the Sessions API) and a count of the D1 work
 * done through it, kept at this one place so every query of the request is counted the same way, whether it came
 * from drizzle or from a prepared statement. The count is what the `Server-Timing` header reports
 * (http/server-timing.ts) and the benchmark reads.
 */
import { DrizzleD1Database, SQLiteD1Session } from "drizzle-orm/d1";
import { SQLiteAsyncDialect } from "drizzle-orm/sqlite-core";
import type { Db } from "./client";

/** D1 work of one request, up to the moment it is read. */
export class D1Work {
  /** Statements sent (each statement of a batch counts). */
  statements = 0;
  /** Calls that went to D1 and back: a statement on its own, or a whole batch. */
  roundTrips = 0;
  /** Rows changed (meta.changes; for a write read with raw(), the rows its RETURNING answered). */
  rowsWritten = 0;
  /** Rows read (meta.rows_read), where D1 reports it. */
  rowsRead = 0;
  /** Milliseconds spent waiting for D1, round trips summed. */
  ms = 0;
}

interface Meta {
  changes?: number;
  rows_read?: number;
}

const WRITE = /^\s*(?:insert|update|delete|replace)\b/i;

/** A prepared statement that counts its own execution; `inner` is the runtime's statement, for batches. */
class CountedStatement {
  constructor(
    readonly inner: D1PreparedStatement,
    private readonly sql: string,
    private readonly work: D1Work,
  ) {}

  bind(...values: unknown[]): CountedStatement {
    return new CountedStatement(this.inner.bind(...values), this.sql, this.work);
  }

  private async timed<T>(call: () => Promise<T>): Promise<T> {
    const started = performance.now();
    this.work.statements++;
    this.work.roundTrips++;
    try {
      return await call();
    } finally {
      this.work.ms += performance.now() - started;
    }
  }

  private count(meta: Meta | undefined): void {
    this.work.rowsWritten += meta?.changes ?? 0;
    this.work.rowsRead += meta?.rows_read ?? 0;
  }

  async run(): Promise<D1Result> {
    const result = await this.timed(() => this.inner.run());
    this.count(result.meta);
    return result;
  }

  async all(): Promise<D1Result> {
    const result = await this.timed(() => this.inner.all());
    this.count(result.meta);
    return result;
  }

  async first(column?: string): Promise<unknown> {
    // first() gives no meta: its rows are read through all(), which D1 answers the same way.
    const result = await this.timed(() => this.inner.all());
    this.count(result.meta);
    const row = (result.results[0] ?? null) as Record<string, unknown> | null;
    return column === undefined || row === null ? row : row[column];
  }

  async raw(options?: { columnNames?: boolean }): Promise<unknown[]> {
    const rows = await this.timed(() =>
      options?.columnNames ? this.inner.raw({ columnNames: true }) : this.inner.raw(),
    );
    // raw() gives no meta: a write read this way (RETURNING) answers one row per row it changed.
    if (WRITE.test(this.sql))
      this.work.rowsWritten += options?.columnNames ? Math.max(0, rows.length - 1) : rows.length;
    return rows;
  }
}

/**
 * Checks a request left for its first D1 round trip (db/first-batch.ts FirstBatch): the session holds them, so the
 * first batch of reads sent through it carries them, whichever query sends it (db/compiled.ts batchReads).
 */
export interface PendingChecks {
  /** Whether a check waits. */
  waiting(): boolean;
  /** Sends `items` with the waiting checks in one round trip; settles the checks before answering the items' rows. */
  run(db: Db, items: readonly unknown[]): Promise<unknown>;
}

/** The pending checks of a request's D1 session, when it has any (a queue consumer's D1 has none). */
export function pendingChecksOf(db: Db): PendingChecks | undefined {
  return (db.$client as { pending?: PendingChecks }).pending;
}

/** The request's D1 session, which holds its pending checks; undefined for a D1 that is no request's session. */
export function requestSession(db: Db): { pending: PendingChecks | undefined } | undefined {
  return db.$client instanceof CountedD1 ? db.$client : undefined;
}

/** The D1 API drizzle and the services use (prepare, batch), over a session, counting into `work`. */
class CountedD1 {
  /** The request's checks waiting for its first batch of reads (set by db/first-batch.ts leaveCheck). */
  pending: PendingChecks | undefined;

  constructor(
    private readonly target: D1Database | D1DatabaseSession,
    readonly work: D1Work,
  ) {}

  prepare(sql: string): CountedStatement {
    return new CountedStatement(this.target.prepare(sql), sql, this.work);
  }

  async batch<T = unknown>(statements: CountedStatement[]): Promise<D1Result<T>[]> {
    const started = performance.now();
    this.work.statements += statements.length;
    this.work.roundTrips++;
    try {
      const results = await this.target.batch<T>(
        statements.map((s) => (s instanceof CountedStatement ? s.inner : (s as D1PreparedStatement))),
      );
      for (const r of results) {
        this.work.rowsWritten += r.meta?.changes ?? 0;
        this.work.rowsRead += (r.meta as Meta | undefined)?.rows_read ?? 0;
      }
      return results;
    } finally {
      this.work.ms += performance.now() - started;
    }
  }

  /** The session's bookmark after the queries so far (null before the first, or on a binding without sessions). */
  bookmark(): string | null {
    return "getBookmark" in this.target ? this.target.getBookmark() : null;
  }
}

// drizzle's dialect is built once per isolate; a request only gets its own session over it. No relational schema:
// the service never uses drizzle's relational queries (`db.query`), whose builders drizzle would otherwise make for
// every table on every request.
const dialect = new SQLiteAsyncDialect();

/** The D1 session a request reads from: a client's bookmark, or where the first query may go. */
export type SessionStart = { bookmark: string } | { constraint: D1SessionConstraint };

/** What a request works with: its drizzle client (whose `$client` is the counted session), the count and the bookmark. */
export interface RequestDb {
  db: Db;
  work: D1Work;
  /** The bookmark to hand back to the client (null when no query ran). */
  bookmark(): string | null;
}

/**
 * A request's D1: one session of `d1` (Sessions API; a binding without `withSession` is used as it is), counted.
 * Every write of the request goes to the primary (D1 routes writes there whatever the session), and every read after
 * it in the same session sees it; a client that sends back the bookmark it was given reads its own writes on the next
 * request too, wherever that request is served.
 */
export function requestDb(d1: D1Database, start: SessionStart): RequestDb {
  const target =
    typeof d1.withSession === "function" ? d1.withSession("bookmark" in start ? start.bookmark : start.constraint) : d1;
  const work = new D1Work();
  const client = new CountedD1(target, work);
  const session = new SQLiteD1Session(client as unknown as D1Database, dialect, undefined, {});
  const db = new DrizzleD1Database("async", dialect, session, undefined) as unknown as Db;
  (db as { $client: unknown }).$client = client;
  return { db, work, bookmark: () => client.bookmark() };
}
