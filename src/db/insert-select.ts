/**
 * The row of a conditional insert (INSERT … SELECT … WHERE guard), D1's way to check and write in ONE statement
 * (DESIGN "Reliability": no interactive transactions): drizzle's `insert(table).select(query)` takes a select of every
 * column of the table, in the table's order. `insertedRow` makes those fields from the values given: a value is bound,
 * a column or SQL fragment (another table's column, `excluded.…`) is used as it is, a column not given gets what
 * drizzle's values() would give it: its default, else NULL (SQLite numbers a NULL integer primary key).
 *
 *     db.insert(traces).select(
 *       db.select(insertedRow(traces, { licenseId: licenses.id, action: 9 })).from(licenses).where(…));
 */
import { Column, SQL, getTableColumns, is, sql } from "drizzle-orm";
import type { SQLiteTable } from "drizzle-orm/sqlite-core";

type Given<T extends SQLiteTable> = { [K in keyof T["$inferInsert"]]?: T["$inferInsert"][K] | SQL | Column };

export function insertedRow<T extends SQLiteTable>(
  table: T,
  values: Given<T>,
): { [K in keyof T["$inferInsert"]]-?: SQL.Aliased<T["$inferInsert"][K]> } {
  const given = values as Record<string, unknown>;
  return Object.fromEntries(
    Object.entries(getTableColumns(table)).map(([key, column]) => {
      const value = given[key];
      return [key, (value === undefined ? defaultOf(column) : stored(value, column)).as(column.name)];
    }),
  ) as { [K in keyof T["$inferInsert"]]-?: SQL.Aliased<T["$inferInsert"][K]> };
}

/** A given value: a column or SQL as it is, anything else bound as the column stores it (a boolean as 0 or 1). */
function stored(value: unknown, column: Column): SQL {
  return is(value, SQL) || is(value, Column) ? sql`${value}` : sql`${sql.param(value, column)}`;
}

/** What drizzle's values() inserts for a column not given: its default (value, SQL or function), else NULL. */
function defaultOf(column: Column): SQL {
  if (column.default !== undefined && column.default !== null) return stored(column.default, column);
  if (column.defaultFn) return stored(column.defaultFn(), column);
  return sql`NULL`;
}
