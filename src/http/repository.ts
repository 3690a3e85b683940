/**
 * Record storage for declared entities, free of HTTP: find, insert, update, delete with timestamps, referenced-id
 * checks in one round trip, and SQLite constraint failures turned into the client's 400 instead of a 500.
 *
 * Writes of rows that feed the update answers (an entity with `releaseGeneration`: products, releases, artifacts)
 * bump their product's release generation here, in the same batch as the write where it can be, and make this
 * isolate forget its release memos (kernel/memo.ts, "releases"): the one place the generation changes, so no writer of
 * those rows can forget it (docs/architecture.md, "Per-isolate memos").
 */
import { type SQL, and, count, eq, sql } from "drizzle-orm";
import type { SQLiteColumn } from "drizzle-orm/sqlite-core";
import { CROCKFORD32, randomString } from "../kernel/crypto";
import { nowIso } from "../kernel/clock";
import type { Entity } from "./entity";
import { ApiError, notFound400 } from "../kernel/errors";
import type { Db } from "../db/client";
import { products } from "../db/schema";
import { forgetAll } from "../kernel/memo";

export type Row = Record<string, unknown>;
export type Id = number | string;

function columnsOf(entity: Entity): Record<string, SQLiteColumn | undefined> {
  return entity.table as unknown as Record<string, SQLiteColumn | undefined>;
}

/** Only the values that are columns of the table: hooks may carry other values (a secret shown once) beside them. */
function columnValues(entity: Entity, values: Row): Row {
  const cols = columnsOf(entity);
  return Object.fromEntries(Object.entries(values).filter(([k, v]) => cols[k] !== undefined && v !== undefined));
}

function whereId(entity: Entity, id: Id, scope?: SQL): SQL | undefined {
  return and(eq(entity.idColumn, id), scope);
}

/** The row with this id (inside `scope` when given), or undefined. */
export async function findById(db: Db, entity: Entity, id: Id, scope?: SQL): Promise<Row | undefined> {
  return (await db
    .select()
    .from(entity.table)
    .where(whereId(entity, id, scope))
    .get()) as Row | undefined;
}

/** The row with this id, or 400 `<Thing> <id> not found` (CONTRACT section 2). */
export async function requireById(db: Db, entity: Entity, id: Id, scope?: SQL): Promise<Row> {
  const row = await findById(db, entity, id, scope);
  if (!row) throw notFound400(entity.name, id);
  return row;
}

/**
 * The id a path names. Entities with a public identifier (a license's `lic…`) are addressed by it or by the integer
 * id (CONTRACT section 7): digits are the id, anything else is looked up (400 `<Thing> <value> not found`). Other
 * entities' path values are their ids as they are. `absent` makes the refusal (a GET by id answers 404).
 */
export async function resolveId(
  db: Db,
  entity: Entity,
  value: Id,
  absent: (thing: string, id: Id) => ApiError = notFound400,
): Promise<Id> {
  const column = entity.publicIdColumn;
  if (!column || typeof value === "number") return value;
  if (/^\d{1,10}$/.test(value)) return Number(value);
  const row = (await db.select({ id: entity.idColumn }).from(entity.table).where(eq(column, value)).get()) as
    | { id: Id }
    | undefined;
  if (!row) throw absent(entity.name, value);
  return row.id;
}

/** Checks that every referenced id exists, in one batch; 400 naming the first that does not. */
export async function checkReferences(
  db: Db,
  references: readonly { entity: Entity; id: Id; field: string }[],
): Promise<void> {
  if (references.length === 0) return;
  const queries = references.map((r) =>
    db.select({ id: r.entity.idColumn }).from(r.entity.table).where(eq(r.entity.idColumn, r.id)).limit(1),
  );
  const results = (await db.batch(
    queries as unknown as [(typeof queries)[number], ...(typeof queries)[number][]],
  )) as unknown[][];
  references.forEach((r, i) => {
    if ((results[i] ?? []).length === 0) throw new ApiError(400, `${r.entity.name} ${r.id} not found (${r.field})`);
  });
}

const camelCase = (column: string) => column.replace(/_(\w)/g, (_, ch: string) => ch.toUpperCase());

/** Turns SQLite constraint failures into 400 answers that say what clashed. */
export function constraintError(entity: Entity, error: unknown): unknown {
  const text = [
    error instanceof Error ? error.message : "",
    error instanceof Error && error.cause instanceof Error ? error.cause.message : "",
  ].join(" ");
  const unique = /UNIQUE constraint failed: ([\w.]+(?:, [\w.]+)*)/.exec(text);
  if (unique?.[1]) {
    const names = unique[1].split(", ").map((c) => camelCase((c.split(".").pop() ?? c).replace(/^normalized_/, "")));
    return new ApiError(400, `A ${entity.name} with the same ${names.join(", ")} already exists`);
  }
  if (/FOREIGN KEY constraint failed/.test(text))
    return new ApiError(400, `The ${entity.name} refers to, or is referred to by, records that prevent this change`);
  const notNull = /NOT NULL constraint failed: \w+\.(\w+)/.exec(text);
  if (notNull?.[1]) return new ApiError(400, `${entity.name} ${camelCase(notNull[1])} is required`);
  return error;
}

async function guarded<T>(entity: Entity, run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (e) {
    throw constraintError(entity, e);
  }
}

/** The statement bumping the release generation of the product the row `id` feeds; undefined for other entities. */
function generationBump(db: Db, entity: Entity, id: Id) {
  const productOf = entity.releaseGeneration;
  if (!productOf) return undefined;
  return db
    .update(products)
    .set({ releaseGeneration: sql`${products.releaseGeneration} + 1` })
    .where(eq(products.id, productOf(sql`${id}`)));
}

/** The id of a stored row (the property of the entity's id column). */
function idOf(entity: Entity, row: Row): Id {
  const cols = columnsOf(entity);
  const name = Object.keys(cols).find((key) => cols[key] === entity.idColumn);
  return row[name ?? "id"] as Id;
}

/** Inserts a row, stamping createdAt/updatedAt when the table has them; returns the stored row. */
export async function insertRow(db: Db, entity: Entity, values: Row): Promise<Row> {
  const now = nowIso();
  const cols = columnsOf(entity);
  const stamped = {
    ...(cols["createdAt"] ? { createdAt: now } : {}),
    ...(cols["updatedAt"] ? { updatedAt: now } : {}),
    ...columnValues(entity, values),
  };
  const row = await guarded(entity, async () => {
    const [row] = (await db.insert(entity.table).values(stamped).returning()) as Row[];
    if (!row) throw new Error(`insert into ${entity.name} returned no row`);
    return row;
  });
  const bump = generationBump(db, entity, idOf(entity, row));
  if (bump) {
    await bump;
    forgetAll("releases");
  }
  return row;
}

/** Updates the given columns of one row (partial update), stamping updatedAt; 400 when the id is unknown. */
export async function updateRow(db: Db, entity: Entity, id: Id, values: Row, scope?: SQL): Promise<Row> {
  const cols = columnsOf(entity);
  const stamped = { ...columnValues(entity, values), ...(cols["updatedAt"] ? { updatedAt: nowIso() } : {}) };
  return guarded(entity, async () => {
    const update = db
      .update(entity.table)
      .set(stamped)
      .where(whereId(entity, id, scope))
      .returning();
    const bump = generationBump(db, entity, id);
    const [row] = (bump ? (await db.batch([update, bump]))[0] : await update) as Row[];
    if (bump) forgetAll("releases");
    if (!row) throw notFound400(entity.name, id);
    return row;
  });
}

/** Deletes one row; 400 when the id is unknown. */
export async function deleteRow(db: Db, entity: Entity, id: Id, scope?: SQL): Promise<void> {
  await guarded(entity, async () => {
    const remove = db
      .delete(entity.table)
      .where(whereId(entity, id, scope))
      .returning({ id: entity.idColumn });
    // The bump goes first: the row that names the product is gone after the delete.
    const bump = generationBump(db, entity, id);
    const deleted = bump ? (await db.batch([bump, remove]))[1] : await remove;
    if (bump) forgetAll("releases");
    if (deleted.length === 0) throw notFound400(entity.name, id);
  });
}

export interface Dependent {
  /** Plural label for the message ("orders"). */
  label: string;
  table: Entity["table"];
  column: SQLiteColumn;
}

/**
 * Refuses (400) to delete a record that other records still point at, saying which and how many; counted in one
 * round trip. Collections the route documents as deleted with the record are not listed here.
 */
export async function refuseIfReferenced(
  db: Db,
  entity: Entity,
  id: Id,
  dependents: readonly Dependent[],
): Promise<void> {
  if (dependents.length === 0) return;
  const queries = dependents.map((d) => db.select({ n: count() }).from(d.table).where(eq(d.column, id)));
  const results = (await db.batch(queries as unknown as [(typeof queries)[number], ...(typeof queries)[number][]])) as {
    n: number;
  }[][];
  const found = dependents.map((d, i) => ({ label: d.label, n: results[i]?.[0]?.n ?? 0 })).filter((d) => d.n > 0);
  if (found.length > 0) {
    throw new ApiError(
      400,
      `${entity.name} ${id} still has ${found.map((d) => `${d.n} ${d.label}`).join(" and ")}; delete or reassign them first`,
    );
  }
}

/** A generated public code such as `C-7K2M9QXA` (Crockford base32, no ambiguous letters). */
export function generateCode(prefix: string): string {
  return `${prefix}-${randomString(8, CROCKFORD32)}`;
}
