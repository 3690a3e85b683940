/**
 * Names beside ids: a referenced product, customer, order, template or user is shown by name. One cached
 * lookup per table: the ids a page asks for in one turn are read together, in one list request per table
 * (`filter=id == 1 || id == 2 …`, `select` of the name's properties), and kept until the console writes anything.
 */
import { useEffect, useState } from "preact/hooks";
import { ApiFailure, call, onWrite } from "./api/client";

type Row = Record<string, unknown>;

interface TableDef {
  path: string;
  /** The property the reference holds (the record's id). */
  key: string;
  select: string;
  name: (row: Row) => string;
  /** A filter value: numbers as they are, strings quoted. */
  quote?: boolean;
}

const text = (v: unknown) => (typeof v === "string" ? v.trim() : "");

export const TABLES = {
  products: { path: "/v1/products", key: "id", select: "id,name", name: (r: Row) => text(r["name"]) },
  customers: {
    path: "/v1/customers",
    key: "id",
    select: "id,company,firstName,lastName,email",
    name: (r: Row) => text(r["company"]) || `${text(r["firstName"])} ${text(r["lastName"])}`.trim() || text(r["email"]),
  },
  orders: { path: "/v1/orders", key: "id", select: "id,orderNumber", name: (r: Row) => text(r["orderNumber"]) },
  templates: { path: "/v1/license-templates", key: "id", select: "id,name", name: (r: Row) => text(r["name"]) },
  users: { path: "/v1/users", key: "id", select: "id,userName", name: (r: Row) => text(r["userName"]), quote: true },
} satisfies Record<string, TableDef>;
export type Table = keyof typeof TABLES;

/** Per table: id -> name ("" when the record has no name, null when it does not exist or cannot be read). */
const known = new Map<Table, Map<string, string | null>>();
const waiting = new Map<Table, Set<string>>();
/** Ids asked for and not answered yet, so that a redraw meanwhile does not ask again. */
const asked = new Set<string>();
const listeners = new Set<() => void>();
/** Ids per request: the filter language allows 50 terms. */
const CHUNK = 40;

// Anything the console writes may rename a record: the next look-up reads again.
onWrite(() => known.clear());

async function read(table: Table, ids: string[]): Promise<void> {
  const def: TableDef = TABLES[table];
  const names = known.get(table) ?? new Map<string, string | null>();
  known.set(table, names);
  let transient = false;
  for (let i = 0; i < ids.length; i += CHUNK) {
    const chunk = ids.slice(i, i + CHUNK);
    const filter = chunk.map((id) => `${def.key} == ${def.quote ? JSON.stringify(id) : Number(id)}`).join(" || ");
    try {
      const data = await call("GET", def.path, { query: { filter, select: def.select, take: chunk.length } });
      const rows = (Object.values(data).find(Array.isArray) ?? []) as Row[];
      for (const id of chunk) names.set(id, null);
      for (const row of rows) names.set(String(row[def.key]), def.name(row));
    } catch (e) {
      // The user's roles may not read that table: the id alone is shown. Any other failure (a busy service, a lost
      // connection) is not remembered: the ids are asked again a moment later.
      if (e instanceof ApiFailure && (e.status === 401 || e.status === 403))
        for (const id of chunk) names.set(id, null);
      else transient = true;
    }
  }
  const settle = () => {
    for (const id of ids) asked.delete(`${table}:${id}`);
    for (const listener of listeners) listener();
  };
  if (transient) setTimeout(settle, 1000);
  else settle();
}

function ask(table: Table, id: string): void {
  let set = waiting.get(table);
  if (!set) {
    set = new Set();
    waiting.set(table, set);
    // Every id the page renders in this turn goes into the same request.
    setTimeout(() => {
      waiting.delete(table);
      void read(table, [...set!]);
    }, 0);
  }
  set.add(id);
  asked.add(`${table}:${id}`);
}

/** The name of record `id` of `table`: undefined while it is read, "" when it has none, null when unknown. */
export function useName(table: Table, id: unknown): string | null | undefined {
  const [, redraw] = useState(0);
  useEffect(() => {
    const listener = () => redraw((n) => n + 1);
    listeners.add(listener);
    return () => void listeners.delete(listener);
  }, []);
  if (id === undefined || id === null || id === "") return null;
  const key = String(id);
  const names = known.get(table);
  if (names?.has(key)) return names.get(key);
  if (!asked.has(`${table}:${key}`)) ask(table, key);
  return undefined;
}

/** Per table: the newest records' ids and names (suggestions for an id field), read once until the console writes. */
const choices = new Map<Table, Promise<{ id: string; name: string }[]>>();
onWrite(() => choices.clear());
/** Suggestions per field: the newest records (an id field still takes any id). */
const CHOICES = 100;

/** The newest records of `table` by name, for an id field's suggestions; [] while read or when not readable. */
export function useChoices(table: Table | undefined): { id: string; name: string }[] {
  const [list, setList] = useState<{ id: string; name: string }[]>([]);
  useEffect(() => {
    if (!table) return;
    let live = true;
    const def: TableDef = TABLES[table];
    let pending = choices.get(table);
    if (!pending) {
      pending = call("GET", def.path, { query: { select: def.select, sort: `-${def.key}`, take: CHOICES } }).then(
        (data) =>
          ((Object.values(data).find(Array.isArray) ?? []) as Row[]).map((r) => ({
            id: String(r[def.key]),
            name: def.name(r),
          })),
        () => [],
      );
      choices.set(table, pending);
    }
    void pending.then((l) => live && setList(l));
    return () => {
      live = false;
    };
  }, [table]);
  return list;
}
