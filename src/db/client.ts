import { drizzle } from "drizzle-orm/d1";
import * as schema from "./schema";

/** The drizzle client over D1 with the whole schema. */
export type Db = ReturnType<typeof makeDb>;

function makeDb(d1: D1Database) {
  return drizzle(d1, { schema });
}

const clients = new WeakMap<D1Database, Db>();

/** One drizzle client per D1 binding per isolate: nothing is built per request. */
export function getDb(d1: D1Database): Db {
  let db = clients.get(d1);
  if (!db) {
    db = makeDb(d1);
    clients.set(d1, db);
  }
  return db;
}
