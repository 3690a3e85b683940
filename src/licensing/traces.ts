/** License traces (CONTRACT section 3): what happened to a license, and when; free of HTTP. */
import { and, eq, lt } from "drizzle-orm";
import type { Db } from "../db/client";
import { licenseTraces } from "../db/schema";

/** `action` of a trace, index = stored number. */
export const TRACE_ACTIONS = ["Activate", "Deactivate", "Validate", "Request", "Release", "Heartbeat", "Report", "UpdateCheck", "Download", "TokenExpired"] as const;

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
