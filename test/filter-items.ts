/**
 * The filter tests' fixture: one table with a column of every field type of the filter language, and its query
 * schema. Each test file names its own table (`filter_items`, `prop_items`), since the SQL it asserts names it.
 */
import { integer, real, sqliteTable, text } from "drizzle-orm/sqlite-core";
import type { QuerySchema } from "../src/http/filter";

export const KINDS = ["Standard", "Demo", "Trial"] as const;

/** The table, its query schema (entity `Item`) and the statement that creates it. */
export function filterItems<const N extends string>(tableName: N) {
  const items = sqliteTable(tableName, {
    id: integer("id").primaryKey(),
    name: text("name"),
    code: text("code").notNull(),
    qty: integer("qty"),
    price: real("price"),
    active: integer("active", { mode: "boolean" }).notNull(),
    createdAt: text("created_at"),
    kind: integer("kind"),
    tags: text("tags", { mode: "json" }).$type<string[]>(),
  });
  const schema: QuerySchema = {
    entity: "Item",
    fields: {
      id: { column: items.id, type: "integer" },
      name: { column: items.name, type: "string" },
      code: { column: items.code, type: "string" },
      qty: { column: items.qty, type: "integer" },
      price: { column: items.price, type: "number" },
      active: { column: items.active, type: "boolean" },
      createdAt: { column: items.createdAt, type: "date" },
      kind: { column: items.kind, type: { enum: KINDS } },
      tags: { column: items.tags, type: "json" },
    },
  };
  const createTable =
    `CREATE TABLE IF NOT EXISTS ${tableName} (id INTEGER PRIMARY KEY, name TEXT, code TEXT NOT NULL, qty INTEGER, ` +
    "price REAL, active INTEGER NOT NULL, created_at TEXT, kind INTEGER, tags TEXT)";
  return { items, schema, createTable };
}
