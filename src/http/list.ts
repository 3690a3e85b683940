/**
 * SPEC "List conventions" and CONTRACT section 2, implemented once: the query parameters a list route accepts,
 * filter + scope as one WHERE, sort (primary key as the final tie-breaker, so paging is stable and rule 2 holds),
 * skip/take with the configured default and maximum, select, include and countOnly, and the page + total counted
 * in one D1 round trip.
 */
import { z } from "@hono/zod-openapi";
import { type SQL, and, asc, count, desc, getTableColumns, getTableName, sql } from "drizzle-orm";
import type { SQLiteTable } from "drizzle-orm/sqlite-core";
import type { Config } from "../kernel/config";
import type { Db } from "../db/client";
import type { Entity } from "./entity";
import { type ApiError, RefusalError } from "../kernel/errors";
import { MAX_FILTER_LENGTH, compileFilter, resolveProperty } from "./filter";
import { INT32_MAX } from "./openapi";

export type ListParam = "select" | "filter" | "sort" | "take" | "skip" | "include" | "countOnly";

// Coerced from the query's text, so the document's type, format and bounds are stated by hand.
const int32 = z.coerce.number().int().min(0).max(INT32_MAX);
const int32Doc = { type: "integer", format: "int32", minimum: 0, maximum: INT32_MAX } as const;
/** Longest `sort`, `select` or `include`: far more than every property name of an entity. */
const MAX_NAMES_LENGTH = 2000;
const names = () => z.string().max(MAX_NAMES_LENGTH).optional();
const paramSchemas = {
  // The length is checked by compileFilter (400 with the envelope, CONTRACT's limit), not by the schema.
  filter: z.string().optional().openapi({
    maxLength: MAX_FILTER_LENGTH,
    description: 'Expression on the properties, e.g. `name.StartsWith("A") && id > 3`.',
  }),
  sort: names().openapi({ description: "Comma-separated properties; prefix `-` descending, `+` or none ascending." }),
  skip: int32.optional().openapi({ ...int32Doc, description: "Items to skip." }),
  take: int32.optional().openapi({
    ...int32Doc,
    description: "Maximum items returned (default Application:DefaultPageSize, at most Application:MaxPageSize).",
  }),
  select: names().openapi({ description: "Comma-separated properties to return." }),
  include: names().openapi({ description: "Comma-separated related entities to load." }),
  countOnly: z
    .enum(["true", "false"])
    .optional()
    .transform((v) => v === "true")
    .openapi({ type: "boolean", description: "Return only the total count." }),
} as const;

type ParamSchemas = typeof paramSchemas;

/** The zod object of a route's list parameters: exactly the subset SPEC gives that route. */
export function listQuery<const P extends readonly ListParam[]>(
  params: P,
): z.ZodObject<{ [K in P[number]]: ParamSchemas[K] }> {
  const shape: Record<string, z.ZodType> = {};
  for (const p of params) shape[p] = paramSchemas[p];
  return z.object(shape) as unknown as z.ZodObject<{ [K in P[number]]: ParamSchemas[K] }>;
}

/** Parsed list parameters (any subset). */
export interface ListParams {
  filter?: string;
  sort?: string;
  skip?: number;
  take?: number;
  select?: string;
  include?: string;
  countOnly?: boolean;
}

/** Loads a relation into the wire items of a page (`include`), setting the property the include is named for. */
export type IncludeLoader = (db: Db, items: Record<string, unknown>[], config: Config) => Promise<void>;

export interface ListOptions {
  /** Route scope ANDed with the filter (e.g. `customerId = ?` for `/customers/{id}/orders`). */
  scope?: SQL;
  includes?: Record<string, IncludeLoader>;
  /** Extra mapping after toWire (computed properties), given the page's rows; one batched query at most. */
  decorate?: (
    items: Record<string, unknown>[],
    rows: Record<string, unknown>[],
    context: { db: Db; config: Config },
  ) => Promise<void> | void;
  /**
   * The rows of a list the service computes rather than stores (the settings with their effective values, the
   * roles), each keyed like the entity's table: the list reads them in place of the table (computedRows).
   */
  rows?: readonly Record<string, unknown>[];
}

/** A property name that can stand in a JSON path literal as it is. */
const PLAIN_KEY = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * A computed list's rows as the source its queries read: one JSON value, read by SQLite's `json_each` in a common
 * table expression named like the entity's table, with one column per column of the table. So such a list takes
 * filter, sort, skip, take and select with exactly the meaning they have on a stored list: the same compiler, the
 * same SQL. The rows are one bound value; the paths are literals (the table's own keys), so the filter keeps its
 * share of D1's 100.
 */
function computedRows(db: Db, table: SQLiteTable, rows: readonly Record<string, unknown>[]) {
  const columns = getTableColumns(table);
  const read = Object.entries(columns).map(([key, column]) => {
    if (!PLAIN_KEY.test(key)) throw new Error(`${getTableName(table)}.${key}: not a plain property name`);
    return sql`json_extract(value, ${sql.raw(`'$.${key}'`)}) AS ${sql.identifier(column.name)}`;
  });
  return db
    .$with(getTableName(table), columns)
    .as(sql`SELECT ${sql.join(read, sql`, `)} FROM json_each(${JSON.stringify(rows)})`);
}

function splitNames(raw: string | undefined): string[] {
  return (raw ?? "")
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean);
}

function unknownProperty(name: string, entity: string): ApiError {
  // The client's mistake, answered 500 as SPEC asks: not written to the service log (RefusalError).
  return new RefusalError(500, `No property or field '${name}' exists in type '${entity}'`);
}

/** Parses `sort` into ORDER BY terms; unknown names answer 500 like the filter. */
export function orderBy(entity: Entity, sort: string | undefined): SQL[] {
  const terms: SQL[] = [];
  for (const item of splitNames(sort)) {
    const descending = item.startsWith("-");
    const name = item.replace(/^[-+]\s*/, "");
    const key = resolveProperty(entity.query, name);
    const field = entity.query.fields[key];
    if (!field) throw unknownProperty(name, entity.name);
    terms.push(descending ? desc(field.column) : asc(field.column));
  }
  terms.push(asc(entity.idColumn));
  return terms;
}

/** Resolves `select` against the properties a record returns, plus included relations (case-insensitive). */
export function selectKeys(
  entity: Entity,
  select: string | undefined,
  included: readonly string[] = [],
): string[] | undefined {
  const names = splitNames(select);
  if (names.length === 0) return undefined;
  const keys = [...Object.keys(entity.record.shape), ...included];
  return names.map((name) => {
    const key = keys.find((k) => k.toLowerCase() === name.toLowerCase());
    if (!key) throw unknownProperty(name, entity.name);
    return key;
  });
}

function pick(item: Record<string, unknown>, keys: string[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const k of keys) out[k] = item[k];
  return out;
}

/** The page size to use: the default when omitted, clamped to the maximum. */
export function pageSize(take: number | undefined, config: Config): number {
  return Math.min(take ?? config["Application:DefaultPageSize"], config["Application:MaxPageSize"]);
}

/**
 * Runs a list query and returns the response body: `{ <plural>: [...], total<Plural>Count }` (or only the total
 * with countOnly). One D1 round trip for page and count.
 */
export async function listBody(
  db: Db,
  entity: Entity,
  params: ListParams,
  config: Config,
  options: ListOptions = {},
): Promise<Record<string, unknown>> {
  const filter = params.filter?.trim() ? compileFilter(entity.query, params.filter) : undefined;
  const where = and(options.scope, filter);
  const includes = splitNames(params.include).map((name) => {
    const entry = Object.entries(options.includes ?? {}).find(([k]) => k.toLowerCase() === name.toLowerCase());
    if (!entry) throw unknownProperty(name, entity.name);
    return entry;
  });
  const keys = selectKeys(
    entity,
    params.select,
    includes.map(([name]) => name),
  );
  const computed = options.rows ? computedRows(db, entity.table, options.rows) : undefined;
  const countQuery = (
    computed ? db.with(computed).select({ n: count() }).from(computed) : db.select({ n: count() }).from(entity.table)
  ).where(where);
  if (params.countOnly) {
    const [row] = await countQuery;
    return { [entity.totalName]: row?.n ?? 0 };
  }
  const pageQuery = (
    computed ? db.with(computed).select(getTableColumns(entity.table)).from(computed) : db.select().from(entity.table)
  )
    .where(where)
    .orderBy(...orderBy(entity, params.sort))
    .limit(pageSize(params.take, config))
    .offset(params.skip ?? 0);
  const [rows, counted] = await db.batch([pageQuery, countQuery]);
  const items = (rows as Record<string, unknown>[]).map((row) => entity.toWire(row, config) as Record<string, unknown>);
  await options.decorate?.(items, rows as Record<string, unknown>[], { db, config });
  for (const [, load] of includes) await load(db, items, config);
  return {
    [entity.plural]: keys ? items.map((item) => pick(item, keys)) : items,
    [entity.totalName]: counted[0]?.n ?? 0,
  };
}
