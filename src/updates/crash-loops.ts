/**
 * Crash loops (CONTRACT section 13): an install whose last Updates:CrashLoopSessions sessions all ran one version and
 * all crashed (or ended abnormally) within Updates:CrashLoopMinutes of starting is in a crash loop on that version.
 * Its update answers (the update check and every feed, delivery/selection.ts) then offer it the previous admissible
 * release as a rollback, for that install alone, while the release goes on for everyone else; and they no longer
 * offer it the version it crashed on (else it would update to it again, crash again and loop between the two) until
 * it reports a session of that version that did not crash soon: the vendor's next release is offered as usual.
 *
 * The consumer of session pings (sessions.ts) keeps the loops in `install_crash_loops`, from the sessions it stored,
 * with one statement a batch leaving loops and one for each install entering one. The update routes read them with the product
 * (catalog.ts productByCode: the newest CRASH_LOOPS_REMEMBERED of the product, with the product's count), so an update
 * answer costs no statement for them; an install beyond them costs one point read.
 */
import { and, eq } from "drizzle-orm";
import type { Config } from "../kernel/config";
import type { Db } from "../db/client";
import { installCrashLoops } from "../db/schema";

/** The crash loops read with a product, newest first; beyond them, an install's own is a point read. */
export const CRASH_LOOPS_REMEMBERED = 1000;

/**
 * Enters the install's crash loop on the ping's release (parameters: ?1 product, ?2 install, ?3 version, ?4 the number
 * of sessions, ?5 the limit in milliseconds, ?6 now) when its last ?4 final sessions (any version, newest first) are
 * all of that release, crashed or abnormal, each within ?5 of starting. A loop on another release is replaced.
 */
const ENTER = `INSERT INTO install_crash_loops (product_id, install, release_id, version, since)
  SELECT ?1, ?2, r.id, ?3, ?6 FROM product_releases AS r
  WHERE r.product_id = ?1 AND r.version = ?3 AND ?4 = (
    SELECT count(*) FROM (
      SELECT release_id, status, duration_ms FROM release_sessions
      WHERE product_id = ?1 AND install = ?2 AND status <> 0 ORDER BY started_at DESC LIMIT ?4
    ) AS last WHERE last.release_id = r.id AND last.status IN (2, 3) AND last.duration_ms < ?5
  )
  ON CONFLICT (product_id, install) DO UPDATE SET
    release_id = excluded.release_id, version = excluded.version, since = excluded.since
  WHERE release_id <> excluded.release_id`;

/** A ping as the crash loops see it: one install's sessions of one version. */
export interface PingSessions {
  productId: number;
  version: string;
  install: string;
  /** `[id, status, startedAt, durationMs]`, statuses by their number. */
  sessions: [string, number, string, number | null][];
}

/**
 * Leaves the crash loops of the pings' installs (parameters: ?1 the pings as JSON `[[product, install, version], …]`,
 * ?2 the limit in milliseconds) where the install's newest final session of the loop's release did not crash soon: it
 * exited, or ended after ?2.
 */
const LEAVE = `DELETE FROM install_crash_loops
  WHERE (product_id, install, version) IN (
    SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]'), json_extract(value, '$[2]') FROM json_each(?1)
  ) AND (
    SELECT s.status = 1 OR s.duration_ms >= ?2 FROM release_sessions AS s
    JOIN product_releases AS r ON r.id = s.release_id
    WHERE s.product_id = install_crash_loops.product_id AND s.install = install_crash_loops.install
      AND r.version = install_crash_loops.version AND s.status <> 0
    ORDER BY s.started_at DESC LIMIT 1
  ) = 1`;

/**
 * The statements that follow a batch's pings into their installs' crash loops, or out of them, run after the
 * sessions are written: one leaving the loops of the installs whose ping holds a session that ended calmly (exited, or
 * after the limit), and one entering for each ping that holds a quick crash. A batch of clean exits costs one
 * statement here, whatever its number of pings.
 */
export function crashLoopStatements(
  db: D1Database,
  config: Config,
  pings: readonly PingSessions[],
  now: Date,
): D1PreparedStatement[] {
  const limit = config["Updates:CrashLoopMinutes"] * 60_000;
  const crashed = (status: number) => status === 2 || status === 3;
  const calm = pings.filter((ping) =>
    ping.sessions.some(([, status, , ms]) => status === 1 || (crashed(status) && ms !== null && ms >= limit)),
  );
  const quick = pings.filter((ping) =>
    ping.sessions.some(([, status, , ms]) => crashed(status) && ms !== null && ms < limit),
  );
  const enter = db.prepare(ENTER);
  return [
    ...(calm.length > 0
      ? [db.prepare(LEAVE).bind(JSON.stringify(calm.map((p) => [p.productId, p.install, p.version])), limit)]
      : []),
    ...quick.map((p) =>
      enter.bind(p.productId, p.install, p.version, config["Updates:CrashLoopSessions"], limit, now.toISOString()),
    ),
  ];
}

/** A product's crash loops as read with it: install id -> the version it crashes on, and how many there are. */
export interface CrashLoops {
  installs: Readonly<Record<string, string>>;
  count: number;
}

/**
 * The version an install crashes on (undefined: it is in no crash loop): from the loops read with the product, or,
 * when the product has more than those and the install is not among them, its own row.
 */
export async function crashLoopOf(
  db: Db,
  productId: number,
  loops: CrashLoops | undefined,
  installId: string | undefined,
): Promise<string | undefined> {
  if (!installId || !loops || loops.count === 0) return undefined;
  const known = loops.installs[installId];
  if (known !== undefined || loops.count <= Object.keys(loops.installs).length) return known;
  const row = await db
    .select({ version: installCrashLoops.version })
    .from(installCrashLoops)
    .where(and(eq(installCrashLoops.productId, productId), eq(installCrashLoops.install, installId)))
    .get();
  return row?.version;
}
