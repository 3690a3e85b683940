/**
 * Queries of the hot paths, built once per isolate. drizzle turns a query's description into SQL text every time it
 * runs, and on a licensing call or a licensed feed poll that building cost more of the isolate's time than the rest
 * of the request (docs/performance.md). A compiled query is described once, with `sql.placeholder("name")` where a
 * request's values go; each request binds its values to the SQL text drizzle made the first time, runs it on its own
 * D1 session (db/work.ts counts it like any other statement), and drizzle maps the rows as it would have:
 *
 *     const byKey = compiled((db, p: Params<{ key: string }>) =>
 *       db.select().from(licenses).where(eq(licenses.userKey, p.key)));
 *     const rows = await byKey.run(ctx.db, { key });
 *
 * A compiled query runs alone (`run`) or in a batch with other reads (`batchReads`, where drizzle's own queries may
 * stand beside it): a batch hands rows back as objects keyed by column name, so a compiled query, like any batched
 * query, aliases same-named columns of joined tables.
 */
import { type Placeholder, type SQL, fillPlaceholders, sql } from "drizzle-orm";
import type { BatchItem } from "drizzle-orm/batch";
import { drizzle } from "drizzle-orm/d1";
import type { Db } from "./client";
import { pendingChecksOf } from "./work";

/** What drizzle's prepared query offers that a compiled query needs: its SQL and params, and its row mapping. */
interface Prepared {
  getQuery(): { sql: string; params: unknown[] };
  mapResult(response: unknown, isFromBatch?: boolean): unknown;
}

/** A drizzle query that can be prepared: every select builder. */
interface Preparable {
  prepare(): Prepared;
}

// The client compiled queries are described on: it builds SQL and never runs anything (drizzle's prepared query asks
// its client for a statement up front; this one hands back an empty one).
const builder = drizzle({ prepare: () => ({}) } as unknown as D1Database);

/** A D1 statement ready to send, with drizzle's prepared query, which maps what D1 answers to the query's rows. */
interface Statement {
  statement: D1PreparedStatement;
  query: Prepared;
}

/**
 * Sends one statement alone, its rows as arrays (as drizzle does: no column of a join can hide another), or several
 * in one batch, where D1 answers rows as objects.
 */
async function send(db: Db, statements: readonly Statement[]): Promise<unknown[]> {
  if (statements.length === 1) {
    const [only] = statements as [Statement];
    return [only.query.mapResult(await only.statement.raw(), false)];
  }
  const results = await db.$client.batch(statements.map((s) => s.statement));
  return results.map((result, i) => statements[i]!.query.mapResult(result, true));
}

/** A compiled query with its values: an item of `batchReads`. */
export class BoundQuery<R> {
  constructor(
    private readonly query: CompiledQuery<Record<string, unknown>, R>,
    private readonly values: Record<string, unknown>,
  ) {}

  /** The statement on `db`'s session. */
  statement(db: Db): Statement {
    return this.query.statement(db, this.values);
  }
}

export class CompiledQuery<P extends Record<string, unknown>, R> {
  private prepared?: { sql: string; params: unknown[]; query: Prepared };

  constructor(private readonly describe: (db: Db, params: Params<P>) => Preparable) {}

  /** drizzle's prepared query, made the first time it is needed. */
  private shape() {
    if (!this.prepared) {
      const query = this.describe(builder as unknown as Db, placeholders as Params<P>).prepare();
      const { sql, params } = query.getQuery();
      this.prepared = { sql, params, query };
    }
    return this.prepared;
  }

  /** The SQL text (tests and docs). */
  get sql(): string {
    return this.shape().sql;
  }

  /** The SQL text and the values it is bound to (tests, and the benchmark's floors that run the same statement). */
  text(values: P): { sql: string; params: unknown[] } {
    const { sql, params } = this.shape();
    return { sql, params: fillPlaceholders(params, values) };
  }

  statement(db: Db, values: P): Statement {
    const { sql, params, query } = this.shape();
    return { statement: db.$client.prepare(sql).bind(...fillPlaceholders(params, values)), query };
  }

  /** The query with its values, for a batch. */
  with(values: P): BoundQuery<R> {
    return new BoundQuery(this as unknown as CompiledQuery<Record<string, unknown>, R>, values);
  }

  /** Runs the query alone: one D1 round trip. */
  async run(db: Db, values: P): Promise<R> {
    const [rows] = await send(db, [this.statement(db, values)]);
    return rows as R;
  }
}

/** The placeholders of a compiled query's values: `p.key` stands for the value named `key`. */
export type Params<P extends Record<string, unknown>> = { readonly [K in keyof P & string]: Placeholder<K, P[K]> };

const placeholders = new Proxy({}, { get: (_, name) => sql.placeholder(String(name)) });

/**
 * A query described once (see the file comment): `describe` builds it on a client that only builds, with the
 * placeholders of `params` where the values go. Its rows are those of the described query.
 */
export function compiled<P extends Record<string, unknown>, Q extends Preparable & PromiseLike<unknown>>(
  describe: (db: Db, params: Params<P>) => Q,
): CompiledQuery<P, Awaited<Q>> {
  return new CompiledQuery<P, Awaited<Q>>(describe);
}

/** An item of a batch: a compiled query with its values, or a drizzle query. */
export type ReadItem = BoundQuery<unknown> | BatchItem<"sqlite">;

/** The rows each item of a batch answers. */
export type ReadResults<Q extends readonly ReadItem[]> = {
  [K in keyof Q]: Q[K] extends BoundQuery<infer R> ? R : Q[K] extends BatchItem<"sqlite"> ? Q[K]["_"]["result"] : never;
};

function statementOf(db: Db, item: ReadItem): Statement {
  if (item instanceof BoundQuery) return item.statement(db);
  // A drizzle query: prepared on the request's session, as drizzle's own batch does.
  const query = (item as unknown as Preparable).prepare();
  const { sql, params } = query.getQuery();
  return { statement: db.$client.prepare(sql).bind(...params), query };
}

/**
 * A drizzle query as a D1 statement, for one D1 batch beside statements drizzle did not build (the cron's steps,
 * app/housekeeping.ts). The statement answers as D1 does (meta.changes), not as drizzle maps it.
 */
export function d1Statement(db: Db, query: BatchItem<"sqlite">): D1PreparedStatement {
  return statementOf(db, query).statement;
}

/**
 * Runs `items` in one D1 round trip (one statement alone, else a batch) and answers each item's rows. The first such
 * round trip of a request carries the checks its session holds (db/first-batch.ts: a bearer token's logout check),
 * settled before any row is answered, so no query has to say it is the first.
 */
export async function batchReads<const Q extends readonly [ReadItem, ...ReadItem[]]>(
  db: Db,
  items: Q,
): Promise<ReadResults<Q>> {
  const pending = pendingChecksOf(db);
  if (pending?.waiting()) return (await pending.run(db, items)) as ReadResults<Q>;
  return sendReads(db, items);
}

/** batchReads without the session's pending checks: the first batch itself sends through this. */
export async function sendReads<const Q extends readonly [ReadItem, ...ReadItem[]]>(
  db: Db,
  items: Q,
): Promise<ReadResults<Q>> {
  return (await send(
    db,
    items.map((item) => statementOf(db, item)),
  )) as ReadResults<Q>;
}

/**
 * A check a request's first read can carry as a column of its own (db/first-batch.ts): an SQL expression, true
 * when the check refuses, over placeholders of its own (named `check…`, apart from the read's), and their values.
 */
export interface CheckColumn {
  /** The expression's shape: each shape of check is compiled once per read. */
  shape: string;
  /** The expression (called once per shape and read, when the variant is compiled). */
  expression(): SQL;
  values: Record<string, unknown>;
}

/** The column a checkable read answers its check in: 1 when the check refuses. */
export type Checked = { checked: number };

/**
 * A first read that can carry a check's column: described with `checked`, the SQL to select as the `checked`
 * column (0 when no check comes along), and compiled once per shape of check.
 */
export class CheckableQuery<P extends Record<string, unknown>, R> {
  private readonly variants = new Map<string, CompiledQuery<Record<string, unknown>, R>>();

  constructor(private readonly describe: (db: Db, params: Params<P>, checked: SQL) => Preparable) {}

  variant(check: CheckColumn | undefined): CompiledQuery<Record<string, unknown>, R> {
    const shape = check?.shape ?? "";
    let query = this.variants.get(shape);
    if (!query) {
      query = new CompiledQuery((db, p) =>
        this.describe(db, p as Params<P>, check ? sql`(${check.expression()})` : sql`0`),
      );
      this.variants.set(shape, query);
    }
    return query;
  }

  /** The read with its values: a batch item, or a first read that carries a check (FirstBatch). */
  with(values: P): CheckableBound<R> {
    return new CheckableBound(this as unknown as CheckableQuery<Record<string, unknown>, R>, values);
  }
}

export class CheckableBound<R> extends BoundQuery<R> {
  constructor(
    private readonly checkable: CheckableQuery<Record<string, unknown>, R>,
    private readonly own: Record<string, unknown>,
  ) {
    super(checkable.variant(undefined), own);
  }

  /** Runs the read alone with the check's column. */
  withCheck(db: Db, check: CheckColumn): Promise<R> {
    return this.checkable.variant(check).run(db, { ...this.own, ...check.values });
  }
}

/**
 * A first read that can carry a check (see CheckableQuery): `describe` selects `checked` as the `checked` column.
 */
export function checkable<P extends Record<string, unknown>, Q extends Preparable & PromiseLike<unknown>>(
  describe: (db: Db, params: Params<P>, checked: SQL) => Q,
): CheckableQuery<P, Awaited<Q>> {
  return new CheckableQuery<P, Awaited<Q>>(describe);
}
