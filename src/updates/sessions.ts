/**
 * Release health (CONTRACT section 13): the sessions installs report (`POST /v1/updates/{productCode}/sessions`) and
 * what the consumer makes of them: the crash loops of installs (crash-loops.ts) and the health gates of releases
 * (health-gate.ts).
 *
 * Nothing is written to D1 on the request path: a ping's sessions, checked, join the isolate's gathering, sent as one
 * message of the TRACES queue with the other pings of the next 200 ms (kernel/gathering.ts), and the consumer writes
 * them. (One message per ping cost the queue, and the consumer's invocations, a third of the throughput.)
 *
 * The consumer writes each message (the pings an isolate gathered) with one conditional statement, all of a queue batch
 * in one D1 batch run in order (so each statement sees the rows of those before it). A row is a session, keyed by
 * product, install id and session id, so a session sent twice counts once; a later final status (exited, crashed,
 * abnormal) replaces the stored one, a later `started` changes nothing. The honest counts are that statement's
 * condition: a new session is written only while its install has fewer than Updates:HealthSessionsPerInstall sessions
 * that day, and counted in the figures only when a license credential sent it, or its address (IPv4, or IPv6 /64) has
 * fewer than Updates:HealthInstallsPerAddress counted unlicensed installs on the release that day, or its install is
 * one of them; a session beyond the address limit is kept for its install's crash loops alone. A session of a version
 * no release has is not written. The figures are health-figures.ts.
 */
import { lt } from "drizzle-orm";
import type { Config } from "../kernel/config";
import type { Db } from "../db/client";
import { loadConfig } from "../db/settings-store";
import { releaseSessions } from "../db/schema";
import type { Job, JobOf } from "../kernel/jobs";
import { clock } from "../kernel/clock";
import { type GatheringContext, gathering } from "../kernel/gathering";
import { type PingSessions, crashLoopStatements } from "./crash-loops";
import { judgeHealthGates } from "./health-gate";

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

/** How long an isolate gathers pings before it queues them as one message. */
export const SESSIONS_GATHER_MS = 200;
/**
 * Pings in one message, at most: the consumer writes a message with one statement, and adds one for each install of
 * it that enters a crash loop, so a queue batch of 10 messages stays below D1's 1,000 statements an invocation.
 */
const MAX_PINGS_PER_MESSAGE = 90;

/** The isolate's gathering of pings (kernel/gathering.ts): one queue message for many pings. */
const gathered = gathering<QueuedSession>({
  ms: SESSIONS_GATHER_MS,
  maxItems: MAX_PINGS_PER_MESSAGE,
  // A message holds 128 KB; a ping of 100 sessions is about 15 KB of JSON.
  maxBytes: 64 * 1024,
  send: (env, sessions) => env.TRACES.send({ kind: SESSIONS_JOB, sessions } satisfies JobOf<typeof SESSIONS_JOB>),
  what: "sessions",
});

/**
 * Queues a checked ping's sessions, off the response path: they join the isolate's gathering, sent as one message
 * with the pings of the next moments (kernel/gathering.ts); never throws. Answers how many were taken.
 */
export function queueSessions(ctx: GatheringContext, ping: SessionPing): number {
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
  gathered.add(ctx, sessions);
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
 * The sessions of one queue message (many installs' pings) as one conditional upsert (parameters: ?1 the message's
 * sessions as JSON, QueuedSession tuples in the order sent; ?2 installs per address; ?3 sessions per install). A
 * session already stored always passes (its status may change); a new one is written while its install has fewer
 * than ?3 sessions that day, counting the new ones of the message before it (their rank), and counted (the figures
 * and the gate read it) when a license credential sent it, its install is counted on the release that day already, or
 * its address's counted unlicensed installs there, those stored and the message's newcomers before it in order of
 * arrival, stay within ?2. The ranks are window functions over the message's rows, each computed once (a correlated
 * subquery over a CTE would compute it again for every row). The SELECT reads the table it writes, so SQLite computes it whole before inserting: the
 * counts are those before the message, and the ranks add the message's own. A second sending of a session in the same
 * message updates the first (ON CONFLICT sees the rows inserted before it).
 */
const UPSERT_SESSIONS = `WITH v AS (
    SELECT json_extract(value, '$[0]') AS product_id, json_extract(value, '$[1]') AS version,
      json_extract(value, '$[2]') AS platform, json_extract(value, '$[3]') AS install,
      json_extract(value, '$[4]') AS session_id, json_extract(value, '$[5]') AS status,
      json_extract(value, '$[6]') AS started_at, json_extract(value, '$[7]') AS duration_ms,
      json_extract(value, '$[8]') AS address, json_extract(value, '$[9]') AS licensed,
      substr(json_extract(value, '$[6]'), 1, 10) AS day, key AS position
    FROM json_each(?1)
  ), k AS (
    SELECT v.*, r.id AS release_id, EXISTS (SELECT 1 FROM release_sessions AS s
      WHERE s.product_id = v.product_id AND s.install = v.install AND s.session_id = v.session_id) AS stored
    FROM v JOIN product_releases AS r ON r.product_id = v.product_id AND r.version = v.version
  ), ranked AS (
    SELECT k.*, dense_rank() OVER (PARTITION BY product_id, install, day, stored ORDER BY session_id) AS rank FROM k
  ), taken AS (
    SELECT ranked.*, licensed = 1 OR EXISTS (SELECT 1 FROM release_sessions AS s
        WHERE s.product_id = ranked.product_id AND s.install = ranked.install AND s.release_id = ranked.release_id
          AND s.day = ranked.day AND s.counted = 1) AS known
    FROM ranked
    WHERE stored OR (SELECT count(*) FROM release_sessions AS s
        WHERE s.product_id = ranked.product_id AND s.install = ranked.install AND s.day = ranked.day) + rank <= ?3
  ), firsts AS (
    SELECT taken.*, min(position) OVER (PARTITION BY release_id, day, address, install, known) AS first FROM taken
  ), arrived AS (
    SELECT firsts.*, dense_rank() OVER (PARTITION BY release_id, day, address, known ORDER BY first) AS arrival
    FROM firsts
  )
  INSERT INTO release_sessions (product_id, install, session_id, release_id, day, platform, status, started_at,
    duration_ms, address, licensed, counted)
  SELECT a.product_id, a.install, a.session_id, a.release_id, a.day, a.platform, a.status, a.started_at,
    a.duration_ms, a.address, a.licensed,
    a.known OR (SELECT count(DISTINCT install) FROM release_sessions AS s
      WHERE s.release_id = a.release_id AND s.day = a.day AND s.address = a.address AND s.licensed = 0
        AND s.counted = 1) + a.arrival <= ?2
  FROM arrived AS a
  ORDER BY a.position
  ON CONFLICT (product_id, install, session_id) DO UPDATE SET
    status = excluded.status, duration_ms = coalesce(excluded.duration_ms, duration_ms)
  WHERE excluded.status <> 0`;

/** A queue message's well-formed sessions (malformed ones are logged and skipped). */
function sessionsOf(message: Message<Job>): QueuedSession[] {
  const sessions = (message.body as { sessions?: unknown }).sessions;
  const list = Array.isArray(sessions) ? sessions : [];
  const valid = list.filter(isQueuedSession);
  if (!Array.isArray(sessions) || valid.length !== list.length)
    console.error(`sessions: message ${message.id} holds malformed sessions, skipped`);
  return valid;
}

/** The pings of a batch's sessions: grouped by product, version and install, in the order sent. */
function pingsOf(sessions: QueuedSession[]): PingSessions[] {
  const pings = new Map<string, PingSessions>();
  for (const s of sessions) {
    const name = JSON.stringify([s[0], s[1], s[3]]);
    const ping = pings.get(name) ?? { productId: s[0], version: s[1], install: s[3], sessions: [] };
    ping.sessions.push([s[4], s[5], s[6], s[7]]);
    pings.set(name, ping);
  }
  return [...pings.values()];
}

/**
 * Writes the sessions of a queue batch, then what they change: the crash loops of their installs (crash-loops.ts)
 * and the health gates of their releases (health-gate.ts). One statement a message for the sessions, whatever the
 * number of pings it gathered, one for the crash loops left and one for each install entering one, all in one D1
 * batch (D1 allows a Worker invocation 1,000 statements); malformed sessions are logged and skipped.
 */
export async function writeSessions(messages: Message<Job>[], env: Bindings, ctx: ExecutionContext): Promise<void> {
  // The honest-count and crash-loop limits are settings (cached per isolate).
  const { config } = await loadConfig(env, env.DB);
  const upsert = env.DB.prepare(UPSERT_SESSIONS);
  const perMessage = messages.map(sessionsOf).filter((sessions) => sessions.length > 0);
  const pings = pingsOf(perMessage.flat());
  const statements = [
    ...perMessage.map((sessions) =>
      upsert.bind(
        JSON.stringify(sessions),
        config["Updates:HealthInstallsPerAddress"],
        config["Updates:HealthSessionsPerInstall"],
      ),
    ),
    ...crashLoopStatements(env.DB, config, pings, clock.now()),
  ];
  if (statements.length > 0) await env.DB.batch(statements);
  for (const message of messages) message.ack();
  const released = [...new Map(pings.map((p) => [`${p.productId}\n${p.version}`, [p.productId, p.version]])).values()];
  if (released.length === 0) return;
  // The sessions are written: a gate that fails to judge now judges with the release's next sessions.
  try {
    await judgeHealthGates(env, ctx, released as [number, string][]);
  } catch (e) {
    console.error("sessions: judging the health gates failed", e);
  }
}

/** The statement removing session days older than Updates:AdoptionRetentionDays (app/housekeeping.ts), unexecuted. */
export function pruneSessions(db: Db, config: Config, now: Date) {
  const cutoff = new Date(now.getTime() - config["Updates:AdoptionRetentionDays"] * 86_400_000);
  return db.delete(releaseSessions).where(lt(releaseSessions.day, cutoff.toISOString().slice(0, 10)));
}
