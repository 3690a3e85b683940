/** Reading the API from a page: a load hook, one record, a whole list, a list page by page. */
import { useEffect, useState } from "preact/hooks";
import { call } from "./api/client";
import { listOf } from "./ui";

type Row = Record<string, unknown>;

/** Loads once (and again when `deps` change); the error is the API's. */
export function useLoad<T>(load: () => Promise<T>, deps: unknown[]): { data?: T; error?: string; reload: () => void } {
  const [state, setState] = useState<{ data?: T; error?: string }>({});
  const [tick, setTick] = useState(0);
  useEffect(() => {
    let live = true;
    load().then(
      (data) => live && setState({ data }),
      (e: Error) => live && setState({ error: e.message }),
    );
    return () => {
      live = false;
    };
  }, [...deps, tick]);
  return { ...state, reload: () => setTick((t) => t + 1) };
}

/** One record, read from its list with a filter (the API has no single-record GET for these). */
export async function one(path: string, filter: string): Promise<Row> {
  const row = listOf(await call("GET", path, { query: { filter, take: 1 } })).rows[0];
  if (!row) throw new Error(`Nothing matches ${filter}`);
  return row;
}

/** Every row of a list, up to 1000. */
export async function all(path: string, query: Record<string, unknown> = {}): Promise<Row[]> {
  return listOf(await call("GET", path, { query: { take: 1000, ...query } })).rows;
}

/** The rows of a list read page by page (the list's `skip`/`take`), up to `limit` rows. */
export async function allPages(path: string, query: Record<string, unknown>, limit: number): Promise<Row[]> {
  const rows: Row[] = [];
  for (;;) {
    const page = listOf(await call("GET", path, { query: { ...query, skip: rows.length, take: 1000 } }));
    rows.push(...page.rows);
    if (page.rows.length === 0 || rows.length >= page.total || rows.length >= limit) return rows;
  }
}

/** The UTC day of an ISO instant, `yyyy-MM-dd`. */
export const dayKey = (iso: unknown) => (typeof iso === "string" ? iso.slice(0, 10) : "");
/** The last `n` UTC days, oldest first, as `yyyy-MM-dd`. */
export function lastDays(n: number): string[] {
  const days: string[] = [];
  for (let i = n - 1; i >= 0; i--) days.push(new Date(Date.now() - i * 86_400_000).toISOString().slice(0, 10));
  return days;
}
