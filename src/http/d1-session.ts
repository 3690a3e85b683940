/**
 * Each request's D1 session and its report (db/work.ts): the session starts from the bookmark the client sends back
 * (read-your-writes across requests), else anywhere for a read-only request (`first-unconstrained`: a replica may
 * answer) and at the primary for the others (`first-primary`). The answer carries the session's bookmark in
 * `x-d1-bookmark`, and, when `Application:ServerTiming` is on, the request's D1 work in a `Server-Timing` header.
 */
import type { Context } from "hono";
import type { AppEnv } from "./app-env";
import { type D1Work, type RequestDb, requestDb } from "../db/work";
import type { Config } from "../kernel/config";

/** Whether answers carry their D1 work in Server-Timing: always in development, by setting elsewhere. */
export function serverTimingOn(config: Config): boolean {
  return config["Application:ServerTiming"] || config["Application:Environment"] === "Development";
}

/** The Server-Timing value (W3C) of a request's D1 work: the time waited on D1 as `dur`, the counts as `desc`. */
export function serverTiming(w: Pick<D1Work, "ms" | "statements" | "roundTrips" | "rowsWritten" | "rowsRead">): string {
  return `d1;dur=${w.ms.toFixed(1)};desc="D1", d1-statements;desc="${w.statements}", d1-round-trips;desc="${w.roundTrips}", d1-rows-written;desc="${w.rowsWritten}", d1-rows-read;desc="${w.rowsRead}"`;
}

/** Request and response header carrying a D1 session bookmark. */
export const BOOKMARK_HEADER = "x-d1-bookmark";

// D1's bookmarks are hex groups joined by dashes; anything else is ignored rather than sent on to D1.
const BOOKMARK = /^[0-9a-f-]{1,128}$/i;

/** A request that only reads: its first query may go to a replica. */
const readOnly = (method: string) => method === "GET" || method === "HEAD" || method === "OPTIONS";

/** Opens the request's D1 session (from the client's bookmark when it sent a well-formed one). */
export function openRequestDb(c: Context<AppEnv>): RequestDb {
  const bookmark = c.req.header(BOOKMARK_HEADER);
  if (bookmark && BOOKMARK.test(bookmark)) return requestDb(c.env.DB, { bookmark });
  return requestDb(c.env.DB, { constraint: readOnly(c.req.method) ? "first-unconstrained" : "first-primary" });
}

/** Adds the bookmark and (when on) the D1 work to the answer. */
export function reportRequestDb(c: Context<AppEnv>, rdb: RequestDb, timing: boolean): void {
  const bookmark = rdb.bookmark();
  if (!bookmark && !timing) return;
  const w = rdb.work;
  const set = (headers: Headers) => {
    if (bookmark) headers.set(BOOKMARK_HEADER, bookmark);
    if (timing) headers.append("Server-Timing", serverTiming(w));
  };
  try {
    set(c.res.headers);
  } catch {
    // An answer with immutable headers (from a fetch or the Cache API) is copied once to carry them.
    c.res = new Response(c.res.body, c.res);
    set(c.res.headers);
  }
}
