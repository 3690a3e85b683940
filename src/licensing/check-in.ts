/**
 * Check-in intervals (CONTRACT section 11): a license whose template gave it `checkInDays` is expected to be seen
 * online (its `lastCheckIn`, written off the request path by the trace writer, traces.ts) at least that often. The
 * cron (app/housekeeping.ts) finds the licenses overdue and emits `license.check-in-overdue` once per overdue period:
 * the statement that finds them also marks them (`check_in_overdue_for` = the check-in they are overdue from), so a
 * later run, or two runs at once, never emits the same period again; the next check-in opens a new period. A license
 * that never checked in, is revoked or has expired is not expected to check in. Free of HTTP.
 */
import { and, eq, gt, inArray, isNotNull, isNull, ne, or, sql } from "drizzle-orm";
import type { Config } from "../kernel/config";
import type { Db } from "../db/client";
import { licenses } from "../db/schema";
import { emit } from "../webhooks/emit";
import { licenseRecords } from "./license-records";

/** At most this many licenses are marked and emitted per cron run; the rest wait for the next run. */
export const CHECK_IN_BATCH = 100;

/**
 * Marks the licenses overdue at `now` (not marked for their current check-in yet) and emits license.check-in-overdue
 * for each; answers how many.
 */
export async function emitOverdueCheckIns(env: Bindings, db: Db, config: Config, now: Date): Promise<number> {
  const iso = now.toISOString();
  const overdue = and(
    gt(licenses.checkInDays, 0),
    isNotNull(licenses.lastCheckIn),
    sql`julianday(${iso}) - julianday(${licenses.lastCheckIn}) > ${licenses.checkInDays}`,
    or(isNull(licenses.checkInOverdueFor), ne(licenses.checkInOverdueFor, licenses.lastCheckIn)),
    eq(licenses.revoked, false),
    or(isNull(licenses.expireDate), gt(licenses.expireDate, iso)),
  );
  const marked = await db
    .update(licenses)
    .set({ checkInOverdueFor: sql`${licenses.lastCheckIn}` })
    .where(
      inArray(
        licenses.id,
        db.select({ id: licenses.id }).from(licenses).where(overdue).orderBy(licenses.id).limit(CHECK_IN_BATCH),
      ),
    )
    .returning();
  if (marked.length === 0 || !config["Webhooks:Enabled"]) return marked.length;
  const records = await licenseRecords(db, config, marked);
  const pending: Promise<unknown>[] = [];
  const ctx = { db, config, env, waitUntil: (p: Promise<unknown>) => void pending.push(p) };
  await Promise.all(
    marked.map((license, i) =>
      emit(ctx, "license.check-in-overdue", () => ({
        data: {
          ...records[i],
          checkIn: {
            lastCheckIn: license.lastCheckIn,
            checkInDays: license.checkInDays,
            overdueSince: new Date(Date.parse(license.lastCheckIn!) + license.checkInDays * 86_400_000).toISOString(),
          },
        },
      })),
    ),
  );
  await Promise.allSettled(pending);
  return marked.length;
}
