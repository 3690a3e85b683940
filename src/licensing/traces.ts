/** License traces (CONTRACT section 3): what happened to a license, and when; free of HTTP. */
import { and, eq, lt } from "drizzle-orm";
import { clock } from "../kernel/clock";
import { fresh, memo } from "../kernel/memo";
import type { Db } from "../db/client";
import { licenseTraces } from "../db/schema";
import type { Job } from "../kernel/jobs";
import { defineEntity, f } from "../http/entity";
import { TRACE_ACTIONS } from "../records/vocabulary";
import { licenseReference } from "./license-records";

export { TRACE_ACTIONS } from "../records/vocabulary";

export interface TraceSelection {
  /** Only traces created before this ISO date. */
  before?: string;
  /** Only traces of this license (integer id). */
  licenseId?: number;
}

/** The statement deleting the selected traces (all of them when nothing is selected), unexecuted. */
export function deleteTracesQuery(db: Db, selection: TraceSelection) {
  return db
    .delete(licenseTraces)
    .where(
      and(
        selection.before !== undefined ? lt(licenseTraces.createdAt, selection.before) : undefined,
        selection.licenseId !== undefined ? eq(licenseTraces.licenseId, selection.licenseId) : undefined,
      ),
    );
}

/** Deletes the selected traces (all of them when nothing is selected); returns how many went. */
export async function deleteTraces(db: Db, selection: TraceSelection): Promise<number> {
  const result = await deleteTracesQuery(db, selection).run();
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
  /** JSON text of what the operation adds (e.g. `{"version":"1.2.3"}` for update checks and downloads). */
  meta?: string | null | undefined;
}

/** The queue job carrying traces to write (kernel/jobs.ts): the traces an isolate gathered, written many at a time. */
export const TRACE_JOB = "license.traces";

/** A trace as queued: TraceSubject with its time. */
type QueuedTrace = TraceSubject & { at: string };

/** How long an isolate gathers traces before it queues them as one message. */
export const TRACE_GATHER_MS = 200;
/** At most this many traces go in one message (a queue message holds at most 128 KB). */
export const MAX_TRACES_PER_MESSAGE = 100;
/** Nor more than this many bytes of them, as JSON. */
const MAX_MESSAGE_BYTES = 64 * 1024;

/** The traces (and check-ins) an isolate is gathering into one message. */
interface Gathering {
  traces: QueuedTrace[];
  /** License row id -> the latest check-in time gathered (CONTRACT 11 `lastCheckIn`). */
  checkIns: Map<number, string>;
  bytes: number;
  sent: boolean;
}

let gathering: Gathering | undefined;

function queueGathered(env: Bindings, batch: Gathering): Promise<void> {
  if (batch.sent) return Promise.resolve();
  batch.sent = true;
  if (gathering === batch) gathering = undefined;
  const checkIns = [...batch.checkIns];
  return env.TRACES.send({ kind: TRACE_JOB, traces: batch.traces, ...(checkIns.length ? { checkIns } : {}) }).then(
    () => undefined,
    (e: unknown) => console.error(`${batch.traces.length} license traces not queued`, e),
  );
}

type Gatherer = { env: Bindings; waitUntil(p: Promise<unknown>): void };

/** The isolate's gathering, begun (and queued after TRACE_GATHER_MS under this request's waitUntil) when none is. */
function gatheringFor(ctx: Gatherer, bytes: number): Gathering {
  if (gathering && gathering.bytes + bytes > MAX_MESSAGE_BYTES) ctx.waitUntil(queueGathered(ctx.env, gathering));
  if (!gathering) {
    const batch: Gathering = { traces: [], checkIns: new Map(), bytes: 0, sent: false };
    gathering = batch;
    ctx.waitUntil(
      new Promise((resolve) => setTimeout(resolve, TRACE_GATHER_MS)).then(() => queueGathered(ctx.env, batch)),
    );
  }
  return gathering;
}

/**
 * How finely a license's last check-in is kept: an isolate gathers a license's check-in at most once in this time.
 * Check-in intervals are counted in days (`checkInDays`), and a floating seat's heartbeat every few seconds would
 * otherwise keep a gathering open, and a queue message going, for nothing but a newer second.
 */
export const CHECK_IN_RESOLUTION_MS = 60_000;

/** When this isolate last gathered each license's check-in (ms since the epoch). */
const checkInsGathered = memo<number, number>("check-ins-gathered", {
  key: "license row id",
  max: 10_000,
  ttlMs: CHECK_IN_RESOLUTION_MS,
  lifetime: `${CHECK_IN_RESOLUTION_MS} ms: a license's check-in is gathered again after it`,
});

/**
 * Records that a license checked in (an online licensing operation, CONTRACT 11): gathered with the traces, off the
 * response path and off D1, whether or not the license traces; the consumer moves `licenses.last_check_in` forward.
 * At most once per CHECK_IN_RESOLUTION_MS per license and isolate, so `lastCheckIn` is exact to about a minute.
 */
export function recordCheckIn(ctx: Gatherer, licenseId: number, at: string): void {
  const now = clock.now().getTime();
  const gathered = checkInsGathered.get(licenseId);
  if (gathered !== undefined && fresh(gathered, now, CHECK_IN_RESOLUTION_MS)) return;
  checkInsGathered.keep(licenseId, now);
  const batch = gatheringFor(ctx, 40);
  const known = batch.checkIns.get(licenseId);
  if (known === undefined) batch.bytes += 40;
  if (known === undefined || known < at) batch.checkIns.set(licenseId, at);
}

/**
 * Records a licensing operation, off the response path and off D1 (CONTRACT section 3: every operation but heartbeat
 * writes one when the license traces). The isolate gathers the traces of its requests for TRACE_GATHER_MS (or until
 * a message is full) and queues them as one message, under the `waitUntil` of the request that began the gathering;
 * the consumer writes a whole queue batch in one D1 round trip. So a licensed poll costs neither a D1 write nor a
 * queue operation of its own (on Cloudflare, a queue takes about 5,000 messages a second: one per poll would cap
 * the deployment there, docs/capacity.md). A failure to queue never fails the operation.
 */
export function recordTrace(
  ctx: { env: Bindings; waitUntil(p: Promise<unknown>): void },
  t: TraceSubject,
  at: string,
): void {
  const trace: QueuedTrace = { ...t, at };
  const bytes = JSON.stringify(trace).length;
  const batch = gatheringFor(ctx, bytes);
  batch.traces.push(trace);
  batch.bytes += bytes;
  if (batch.traces.length >= MAX_TRACES_PER_MESSAGE) ctx.waitUntil(queueGathered(ctx.env, batch));
}

const COLUMNS = 9;
/** Rows per INSERT: D1 binds at most 100 parameters per statement. */
export const TRACE_ROWS_PER_STATEMENT = Math.floor(100 / COLUMNS);

function isTrace(t: unknown): t is QueuedTrace {
  const v = t as QueuedTrace;
  return (
    typeof v === "object" &&
    v !== null &&
    Number.isInteger(v.licenseId) &&
    Number.isInteger(v.action) &&
    typeof v.at === "string"
  );
}

/** One multi-row INSERT; rows of a license deleted since the operation are skipped (the FK would refuse them). */
function insertTraces(db: D1Database, rows: QueuedTrace[]): D1PreparedStatement {
  const values = rows.map(() => "(?, ?, ?, ?, ?, ?, ?, ?, ?)").join(", ");
  const sql = `INSERT INTO license_traces (license_id, action, client_ip, client_id, client_name, machine_id, geo_location, meta, created_at)
    SELECT * FROM (VALUES ${values}) AS v WHERE EXISTS (SELECT 1 FROM licenses WHERE licenses.id = v.column1)`;
  const params = rows.flatMap((t) => [
    t.licenseId,
    t.action,
    t.address ?? null,
    t.clientId ?? null,
    t.clientName ?? null,
    t.machineId ?? null,
    t.geoLocation ?? null,
    typeof t.meta === "string" ? t.meta : null,
    t.at,
  ]);
  return db.prepare(sql).bind(...params);
}

function isCheckIn(c: unknown): c is [number, string] {
  return Array.isArray(c) && c.length === 2 && Number.isInteger(c[0]) && typeof c[1] === "string";
}

/**
 * Moves each license's last check-in forward to the latest of the batch, never back (messages arrive in any order):
 * one statement over the check-ins as one JSON parameter.
 */
function writeCheckIns(db: D1Database, checkIns: [number, string][]): D1PreparedStatement {
  return db
    .prepare(
      `UPDATE licenses SET last_check_in = c.at
       FROM (SELECT json_extract(value, '$[0]') AS id, max(json_extract(value, '$[1]')) AS at FROM json_each(?) GROUP BY 1) AS c
       WHERE licenses.id = c.id AND (licenses.last_check_in IS NULL OR licenses.last_check_in < c.at)`,
    )
    .bind(JSON.stringify(checkIns));
}

/**
 * Writes the traces of a queue batch: multi-row INSERTs within D1's parameter limit, and the licenses' check-ins,
 * all in one D1 batch.
 */
export async function writeTraces(messages: Message<Job>[], env: Bindings): Promise<void> {
  const rows: QueuedTrace[] = [];
  const checkIns: [number, string][] = [];
  for (const message of messages) {
    const body = message.body as { traces?: unknown; checkIns?: unknown };
    const traces = body.traces;
    const valid = Array.isArray(traces) ? traces.filter(isTrace) : [];
    if (valid.length !== (Array.isArray(traces) ? traces.length : 1))
      console.error(`license traces: message ${message.id} holds malformed traces, skipped`);
    rows.push(...valid);
    if (Array.isArray(body.checkIns)) checkIns.push(...body.checkIns.filter(isCheckIn));
  }
  const statements: D1PreparedStatement[] = [];
  for (let i = 0; i < rows.length; i += TRACE_ROWS_PER_STATEMENT)
    statements.push(insertTraces(env.DB, rows.slice(i, i + TRACE_ROWS_PER_STATEMENT)));
  if (checkIns.length > 0) statements.push(writeCheckIns(env.DB, checkIns));
  if (statements.length > 0) await env.DB.batch(statements);
  for (const message of messages) message.ack();
}

const ro = { readOnly: true } as const;

export const LicenseTrace = defineEntity({
  name: "LicenseTrace",
  singular: "licenseTrace",
  plural: "licenseTraces",
  table: licenseTraces,
  fields: {
    id: f.id(),
    licenseId: licenseReference(licenseTraces.licenseId),
    action: f.enumOf("TraceAction", TRACE_ACTIONS, ro),
    clientIp: f.string(ro),
    clientId: f.string(ro),
    clientName: f.string(ro),
    machineId: f.string(ro),
    geoLocation: f.string({ ...ro, description: "JSON text: country, region, city, latitude, longitude, timezone." }),
    meta: f.string(ro),
    createdAt: f.date(ro),
  },
});
