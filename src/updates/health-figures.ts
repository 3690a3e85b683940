/**
 * Release health's figures (CONTRACT section 13): a release's counted sessions (updates/sessions.ts writes them) as
 * crash-free sessions and installs, in all, by day and by platform, beside its baseline's. The health route and the
 * health gate read them here.
 */
import { and, eq, gte, lte, sql } from "drizzle-orm";
import type { Db } from "../db/client";
import { releaseSessions } from "../db/schema";

/** A session still `started` this long after it started counts as `abnormal` (killed or hung). */
export const SESSION_ABNORMAL_AFTER_MS = 86_400_000;

/** A release's health figures over a span (CONTRACT section 13); rates are null with nothing to divide by. */
export interface HealthFigures {
  sessions: number;
  crashedSessions: number;
  crashFreeSessions: number | null;
  installs: number;
  crashedInstalls: number;
  crashFreeInstalls: number | null;
}

function figures(row: { sessions: number; crashed: number; installs: number; crashedInstalls: number }): HealthFigures {
  return {
    sessions: row.sessions,
    crashedSessions: row.crashed,
    crashFreeSessions: row.sessions === 0 ? null : 1 - row.crashed / row.sessions,
    installs: row.installs,
    crashedInstalls: row.crashedInstalls,
    crashFreeInstalls: row.installs === 0 ? null : 1 - row.crashedInstalls / row.installs,
  };
}

/**
 * The counts of a release's counted sessions (within the honest counts: sessions.ts), in all or grouped by day or platform: final ones, and those still
 * `started` after SESSION_ABNORMAL_AFTER_MS, which count as abnormal (so as crashed, as `crashed` and `abnormal` do).
 */
function healthRows(db: Db, releaseId: number, span: Span, by?: "day" | "platform") {
  const s = releaseSessions;
  const cutoff = new Date(span.now.getTime() - SESSION_ABNORMAL_AFTER_MS).toISOString();
  const crashed = sql`(${s.status} <> 1)`;
  const counts = {
    sessions: sql<number>`count(*)`.mapWith(Number),
    crashed: sql<number>`coalesce(sum(${crashed}), 0)`.mapWith(Number),
    installs: sql<number>`count(DISTINCT ${s.install})`.mapWith(Number),
    crashedInstalls: sql<number>`count(DISTINCT CASE WHEN ${crashed} THEN ${s.install} END)`.mapWith(Number),
  };
  const where = and(
    eq(s.releaseId, releaseId),
    eq(s.counted, true),
    gte(s.day, span.from),
    lte(s.day, span.to),
    sql`(${s.status} <> 0 OR ${s.startedAt} < ${cutoff})`,
  );
  if (by === undefined)
    return db
      .select({ key: sql<string>`''`, ...counts })
      .from(s)
      .where(where);
  const column = by === "day" ? s.day : s.platform;
  return db
    .select({ key: column, ...counts })
    .from(s)
    .where(where)
    .groupBy(column)
    .orderBy(column);
}

/** The UTC days `from` to `to` (`YYYY-MM-DD`, inclusive) and the instant the answer is made at. */
export interface Span {
  from: string;
  to: string;
  now: Date;
}

/** A release's health over a span, by day and by platform, and its baseline's. */
export interface Health extends HealthFigures {
  from: string;
  to: string;
  /** Only days with counted sessions, in order. */
  days: (HealthFigures & { day: string })[];
  /** Only platforms with counted sessions (a ping naming none: absent `platform`). */
  platforms: (HealthFigures & { platform?: string })[];
  /** The previous admissible release's figures over the same span; null when there is none. */
  baseline: (HealthFigures & { releaseId: number; version: string }) | null;
}

const NONE = { sessions: 0, crashed: 0, installs: 0, crashedInstalls: 0 };

/** Reads a release's health, and its baseline release's figures, in one D1 round trip. */
export async function readHealth(
  db: Db,
  releaseId: number,
  baseline: { id: number; version: string } | undefined,
  span: Span,
): Promise<Health> {
  const [totals, perDay, perPlatform, baseTotals] = await db.batch([
    healthRows(db, releaseId, span),
    healthRows(db, releaseId, span, "day"),
    healthRows(db, releaseId, span, "platform"),
    healthRows(db, baseline?.id ?? 0, span),
  ]);
  return {
    from: span.from,
    to: span.to,
    ...figures(totals[0] ?? NONE),
    days: perDay.map((row) => ({ day: row.key, ...figures(row) })),
    platforms: perPlatform.map((row) => ({ ...(row.key === "" ? {} : { platform: row.key }), ...figures(row) })),
    baseline: baseline
      ? { releaseId: baseline.id, version: baseline.version, ...figures(baseTotals[0] ?? NONE) }
      : null,
  };
}

/** The whole of what is kept: a release's figures since it was published (the health gate's). */
export const ALL_DAYS = { from: "0000-00-00", to: "9999-12-31" } as const;

/** The figures of releases over all kept days, in one D1 round trip, in the order of `releaseIds`. */
export async function releaseTotals(db: Db, releaseIds: number[], now: Date): Promise<HealthFigures[]> {
  if (releaseIds.length === 0) return [];
  const [first, ...rest] = releaseIds.map((id) => healthRows(db, id, { ...ALL_DAYS, now }));
  const rows = await db.batch([first!, ...rest]);
  return rows.map((r) => figures(r[0] ?? NONE));
}
