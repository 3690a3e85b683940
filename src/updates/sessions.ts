/**
 * Release health (CONTRACT section 13): the sessions installs report (`POST /v1/updates/{productCode}/sessions`) and
 * the figures a release's health answer reads from them.
 *
 * Nothing is written to D1 on the request path: a ping's sessions, checked, become one message of the TRACES queue
 * (sent after the response), and the consumer writes them. A ping is rare (a session's start and end, batched by the
 * client), so it is one message per request rather than an isolate's gathering (adoption.ts, traces.ts).
 *
 * The consumer writes each session with one conditional statement, all of a queue batch in D1 batches run in order
 * (so each statement sees the rows of those before it). A row is a session, keyed by product, install id and session
 * id, so a session sent twice counts once; a later final status (exited, crashed, abnormal) replaces the stored one, a
 * later `started` changes nothing. The honest counts are that statement's condition: a new session is written only
 * while its install has fewer than Updates:HealthSessionsPerInstall sessions that day, and, unless a license credential
 * sent it, while its address (IPv4, or IPv6 /64) has fewer than Updates:HealthInstallsPerAddress unlicensed installs
 * on the release that day or its install is one of them. A session of a version no release has is not written.
 */
import { and, eq, gte, lt, lte, sql } from "drizzle-orm";
import type { Config } from "../kernel/config";
import type { Db } from "../db/client";
import { loadConfig } from "../db/settings-store";
import { releaseSessions } from "../db/schema";
import type { Job, JobOf } from "../kernel/jobs";

/** The statuses, by their stored number. The final ones are all but `started`. */
export const SESSION_STATUSES = ["started", "exited", "crashed", "abnormal"] as const;
export type SessionStatus = (typeof SESSION_STATUSES)[number];

/** The queue job carrying a ping's sessions (kernel/jobs.ts). */
export const SESSIONS_JOB = "release.sessions" as const;

/** Sessions in one ping, at most. */
export const MAX_SESSIONS_PER_PING = 100;
/** How far ahead of the service's clock a session may say it started (client clocks drift). */
export const SESSION_CLOCK_SKEW_MS = 5 * 60_000;
/** How long ago a session may have started: a client queues sessions while offline, for a week at most. */
export const SESSION_MAX_AGE_MS = 7 * 86_400_000;
/** The longest session a ping may report (`durationMs`). */
export const SESSION_MAX_DURATION_MS = 7 * 86_400_000;
/** A session still `started` this long after it started counts as `abnormal` (killed or hung). */
export const SESSION_ABNORMAL_AFTER_MS = 86_400_000;

/** One session as queued: `[productId, version, platform, install, sessionId, status, startedAt, durationMs, address, licensed]`. */
export type QueuedSession = [number, string, string, string, string, number, string, number | null, string, 0 | 1];

/** A ping, checked by its route: who sent it and its sessions. */
export interface SessionPing {
  productId: number;
  version: string;
  platform?: string | undefined;
  install: string;
  /** The sender's address as counted: IPv4, or its IPv6 /64 (protection/limits.ts limiterName). */
  address: string;
  /** Whether a license credential of the product sent it. */
  licensed: boolean;
  sessions: { id: string; status: SessionStatus; startedAt: string; durationMs?: number | undefined }[];
}

/**
 * The problem of a session's times, as `field -> message` (empty: none): `startedAt` not after now plus
 * SESSION_CLOCK_SKEW_MS nor before now minus SESSION_MAX_AGE_MS.
 */
export function sessionTimeProblems(sessions: SessionPing["sessions"], now: Date): Record<string, string[]> {
  const problems: Record<string, string[]> = {};
  sessions.forEach((s, i) => {
    const at = Date.parse(s.startedAt);
    if (at > now.getTime() + SESSION_CLOCK_SKEW_MS)
      problems[`sessions[${i}].startedAt`] = [
        `In the future (more than ${SESSION_CLOCK_SKEW_MS / 60_000} minutes ahead)`,
      ];
    else if (at < now.getTime() - SESSION_MAX_AGE_MS)
      problems[`sessions[${i}].startedAt`] = [`More than ${SESSION_MAX_AGE_MS / 86_400_000} days ago`];
  });
  return problems;
}

/** Queues a checked ping's sessions as one message, after the response; never throws. Answers how many were taken. */
export function queueSessions(ctx: { env: Bindings; waitUntil(p: Promise<unknown>): void }, ping: SessionPing): number {
  const sessions: QueuedSession[] = ping.sessions.map((s) => [
    ping.productId,
    ping.version,
    ping.platform ?? "",
    ping.install,
    s.id,
    SESSION_STATUSES.indexOf(s.status),
    new Date(s.startedAt).toISOString(),
    s.durationMs ?? null,
    ping.address,
    ping.licensed ? 1 : 0,
  ]);
  const message: JobOf<typeof SESSIONS_JOB> = { kind: SESSIONS_JOB, sessions };
  ctx.waitUntil(
    ctx.env.TRACES.send(message).catch((e: unknown) => console.error(`${sessions.length} sessions not queued`, e)),
  );
  return sessions.length;
}

function isQueuedSession(v: unknown): v is QueuedSession {
  return (
    Array.isArray(v) &&
    v.length === 10 &&
    Number.isInteger(v[0]) &&
    typeof v[1] === "string" &&
    typeof v[2] === "string" &&
    typeof v[3] === "string" &&
    typeof v[4] === "string" &&
    Number.isInteger(v[5]) &&
    v[5] >= 0 &&
    v[5] < SESSION_STATUSES.length &&
    typeof v[6] === "string" &&
    !Number.isNaN(Date.parse(v[6])) &&
    (v[7] === null || Number.isInteger(v[7])) &&
    typeof v[8] === "string" &&
    (v[9] === 0 || v[9] === 1)
  );
}

/**
 * One session's conditional upsert (parameters numbered: ?1 product, ?2 version, ?3 platform, ?4 install, ?5 session,
 * ?6 status, ?7 startedAt, ?8 durationMs, ?9 address, ?10 licensed, ?11 day, ?12 installs per address, ?13 sessions
 * per install). A session already stored always passes (its status may change); a new one passes the honest counts.
 */
const UPSERT_SESSION = `INSERT INTO release_sessions
    (product_id, install, session_id, release_id, day, platform, status, started_at, duration_ms, address, licensed)
  SELECT ?1, ?4, ?5, r.id, ?11, ?3, ?6, ?7, ?8, ?9, ?10 FROM product_releases AS r
  WHERE r.product_id = ?1 AND r.version = ?2 AND (
    EXISTS (SELECT 1 FROM release_sessions WHERE product_id = ?1 AND install = ?4 AND session_id = ?5)
    OR (
      (SELECT count(*) FROM release_sessions WHERE product_id = ?1 AND install = ?4 AND day = ?11) < ?13
      AND (
        ?10 = 1
        OR EXISTS (SELECT 1 FROM release_sessions WHERE release_id = r.id AND day = ?11 AND install = ?4)
        OR (SELECT count(DISTINCT install) FROM release_sessions
          WHERE release_id = r.id AND day = ?11 AND address = ?9 AND licensed = 0) < ?12
      )
    )
  )
  ON CONFLICT (product_id, install, session_id) DO UPDATE SET
    status = excluded.status, duration_ms = coalesce(excluded.duration_ms, duration_ms)
  WHERE excluded.status <> 0`;

/** Statements per D1 batch: each batch runs in order, and the next starts after it. */
const STATEMENTS_PER_BATCH = 100;

/** Writes the sessions of a queue batch (in the order sent); malformed messages are logged and skipped. */
export async function writeSessions(messages: Message<Job>[], env: Bindings): Promise<void> {
  // The honest-count limits are settings (cached per isolate).
  const { config } = await loadConfig(env, env.DB);
  const statement = env.DB.prepare(UPSERT_SESSION);
  const statements: D1PreparedStatement[] = [];
  for (const message of messages) {
    const sessions = (message.body as { sessions?: unknown }).sessions;
    const list = Array.isArray(sessions) ? sessions : [];
    const valid = list.filter(isQueuedSession);
    if (!Array.isArray(sessions) || valid.length !== list.length)
      console.error(`sessions: message ${message.id} holds malformed sessions, skipped`);
    for (const s of valid)
      statements.push(
        statement.bind(
          ...s,
          s[6].slice(0, 10),
          config["Updates:HealthInstallsPerAddress"],
          config["Updates:HealthSessionsPerInstall"],
        ),
      );
  }
  for (let i = 0; i < statements.length; i += STATEMENTS_PER_BATCH)
    await env.DB.batch(statements.slice(i, i + STATEMENTS_PER_BATCH));
  for (const message of messages) message.ack();
}

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
 * The counts of a release's counted sessions, in all or grouped by day or platform: final ones, and those still
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

/** The statement removing session days older than Updates:AdoptionRetentionDays (app/housekeeping.ts), unexecuted. */
export function pruneSessions(db: Db, config: Config, now: Date) {
  const cutoff = new Date(now.getTime() - config["Updates:AdoptionRetentionDays"] * 86_400_000);
  return db.delete(releaseSessions).where(lt(releaseSessions.day, cutoff.toISOString().slice(0, 10)));
}
