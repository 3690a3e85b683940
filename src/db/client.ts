import { drizzle } from "drizzle-orm/d1";
import { weakMemo } from "../kernel/memo";
/**
 * The drizzle client over D1. Queries name their tables from ./schema; no relational schema is given, because the
 * service does not use drizzle's relational queries (`db.query`) and their builders would be made per client.
 */
export type Db = ReturnType<typeof makeDb>;

function makeDb(d1: D1Database) {
  return drizzle(d1);
}

const clients = weakMemo<D1Database, Db>("db-clients", "D1 binding");

/** One drizzle client per D1 binding per isolate: nothing is built per request. */
export function getDb(d1: D1Database): Db {
  let db = clients.get(d1);
  if (!db) {
    db = makeDb(d1);
    clients.set(d1, db);
  }
  return db;
}
