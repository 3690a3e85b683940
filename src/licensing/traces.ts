/** License traces (CONTRACT section 3): what happened to a license, and when; free of HTTP. */
import { and, eq, lt } from "drizzle-orm";
import type { Db } from "../db/client";
import { licenseTraces } from "../db/schema";

export { TRACE_ACTIONS } from "./vocabulary";

export interface TraceSelection {
  /** Only traces created before this ISO date. */
  before?: string;
  /** Only traces of this license (integer id). */
  licenseId?: number;
}

/** Deletes the selected traces (all of them when nothing is selected); returns how many went. */
export async function deleteTraces(db: Db, selection: TraceSelection): Promise<number> {
  const where = and(
    selection.before !== undefined ? lt(licenseTraces.createdAt, selection.before) : undefined,
    selection.licenseId !== undefined ? eq(licenseTraces.licenseId, selection.licenseId) : undefined,
  );
  const result = await db.delete(licenseTraces).where(where).run();
  return result.meta.changes;
}

/** Who a trace is about. */
export interface TraceSubject {
  licenseId: number;
  action: number;
  address: string;
  geoLocation?: string | null | undefined;
  machineId?: string | null | undefined;
  clientId?: string | null | undefined;
  clientName?: string | null | undefined;
}

/**
 * Records a licensing operation, off the response path (CONTRACT section 3: every operation but heartbeat writes
 * one when the license traces). A failure to write it never fails the operation.
 */
export function recordTrace(ctx: { db: Db; waitUntil(p: Promise<unknown>): void }, t: TraceSubject, at: string): void {
  ctx.waitUntil(
    ctx.db.$client
      .prepare(
        `INSERT INTO license_traces (license_id, action, client_ip, client_id, client_name, machine_id, geo_location, created_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
      )
      .bind(t.licenseId, t.action, t.address, t.clientId ?? null, t.clientName ?? null, t.machineId ?? null, t.geoLocation ?? null, at)
      .run()
      .catch((e: unknown) => console.error("license trace not written", e)),
  );
}
