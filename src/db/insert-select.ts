/**
 * The row of a conditional insert (INSERT … SELECT … WHERE guard), D1's way to check and write in ONE statement
 * (DESIGN "Reliability": no interactive transactions): drizzle's `insert(table).select(query)` takes a select of every
 * column of the table, in the table's order. `insertedRow` makes those fields from the values given: a value is bound,
 * a column or SQL fragment (another table's column, `excluded.…`) is used as it is, a column not given is NULL (its
 * default, for an id; SQLite numbers a NULL integer primary key).
 *
 *     db.insert(traces).select(
 *       db.select(insertedRow(traces, { licenseId: licenses.id, action: 9 })).from(licenses).where(…));
 */
import { type SQL, type SQLWrapper, getTableColumns, sql } from "drizzle-orm";
import type { SQLiteTable } from "drizzle-orm/sqlite-core";

type Given<T extends SQLiteTable> = { [K in keyof T["$inferInsert"]]?: T["$inferInsert"][K] | SQLWrapper };

export function insertedRow<T extends SQLiteTable>(
  table: T,
  values: Given<T>,
): { [K in keyof T["$inferInsert"]]-?: SQL.Aliased<T["$inferInsert"][K]> } {
  const given = values as Record<string, unknown>;
  return Object.fromEntries(
    Object.entries(getTableColumns(table)).map(([key, column]) => {
      const value = given[key];
      return [key, (value === undefined ? sql`NULL` : sql`${value}`).as(column.name)];
    }),
  ) as { [K in keyof T["$inferInsert"]]-?: SQL.Aliased<T["$inferInsert"][K]> };
}
