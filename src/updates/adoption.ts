/**
 * Release adoption (CONTRACT section 8): how many distinct installs were `offered` a release (a feed or an update
 * check answered with it), `downloaded` it (the download route delivered one of its artifacts) and are `running` it
 * (an update check, a feed poll or a validation reported its version), by UTC day and platform.
 *
 * Gathered off the request path and off D1, as license traces are (licensing/traces.ts): each isolate gathers the
 * sightings of its requests for ADOPTION_GATHER_MS into one message of the TRACES queue, and the consumer writes a
 * whole queue batch with multi-row `INSERT OR IGNORE` statements in one D1 batch. A row is one install, release, day,
 * stage and platform (the primary key of release_adoption), so counting rows counts distinct installs, and a message
 * delivered twice (queues deliver at least once), or an install seen twice, adds nothing. The isolate also remembers
 * the sightings it queued (`adoption-seen`), so an install polling every few minutes is queued once a day per stage.
 *
 * An install is its install id (`X-Service-Install-Id`) when it sends one, else its license and machine; an anonymous
 * caller without an install id cannot be told apart from others and is not counted.
 */
import { and, count, countDistinct, eq, gte, lt, lte } from "drizzle-orm";
import { clock } from "../kernel/clock";
import type { Config } from "../kernel/config";
import type { Db } from "../db/client";
import { releaseAdoption } from "../db/schema";
import type { Job, JobOf } from "../kernel/jobs";
import { memo } from "../kernel/memo";

/** The stages, by their stored number. */
export const ADOPTION_STAGES = ["offered", "downloaded", "running"] as const;
export type AdoptionStage = (typeof ADOPTION_STAGES)[number];

/** The queue job carrying gathered sightings (kernel/jobs.ts). */
export const ADOPTION_JOB = "release.adoption" as const;

/** How long an isolate gathers sightings before it queues them as one message. */
export const ADOPTION_GATHER_MS = 200;
/** At most this many sightings in one message (each well under 512 bytes: far below a message's 128 KB). */
const MAX_SIGHTINGS_PER_MESSAGE = 200;

/**
 * One sighting as queued: `[productId, version, stage, day, platform, install]`. The release is named by its product
 * and version (unique per product), so a running version is counted without a read on the request path: the consumer
 * finds the release.
 */
export type Sighting = [number, string, number, string, string, string];

/** Who was seen: an install id, else a license (and the machine, when the request names one). */
export interface AdoptionInstall {
  installId?: string | undefined;
  licenseId?: number | undefined;
  machineId?: string | null | undefined;
}

/** The install's key as stored, or undefined for a caller that cannot be told apart (anonymous, no install id). */
export function installKey(who: AdoptionInstall): string | undefined {
  if (who.installId) return `i:${who.installId}`;
  if (who.licenseId !== undefined) return `l:${who.licenseId}:${who.machineId ?? ""}`;
  return undefined;
}

/** Sightings this isolate has queued (as their JSON): each is queued once, not once per poll. */
const seen = memo<string, true>("adoption-seen", {
  key: "a queued sighting: product, version, stage, UTC day, platform, install",
  max: 20_000,
  lifetime: "while kept (a sighting names its day, so a new day is a new entry)",
});

/** The sightings an isolate is gathering into one message, by their JSON. */
interface Gathering {
  sightings: Map<string, Sighting>;
  sending: Promise<void> | undefined;
}

let gathering: Gathering | undefined;

function queueSightings(env: Bindings, batch: Gathering): Promise<void> {
  if (batch.sending) return batch.sending;
  if (gathering === batch) gathering = undefined;
  const message: JobOf<typeof ADOPTION_JOB> = { kind: ADOPTION_JOB, sightings: [...batch.sightings.values()] };
  batch.sending = env.TRACES.send(message).then(
    () => {
      for (const key of batch.sightings.keys()) seen.keep(key, true);
    },
    (e: unknown) => console.error(`${batch.sightings.size} adoption sightings not queued`, e),
  );
  return batch.sending;
}

/** What a request tells about a release and an install. */
export interface AdoptionSighting extends AdoptionInstall {
  productId: number;
  /** The release's version. */
  version: string;
  /** The platform the request named; undefined when it named none (a validation). */
  platform?: string | undefined;
}

/**
 * Records a sighting, off the response path and off D1: joins the isolate's gathering (kept alive by `waitUntil`
 * of the request that began it). Never throws, never touches D1; an install that cannot be told apart is skipped.
 */
function sight(
  ctx: { env: Bindings; waitUntil(p: Promise<unknown>): void },
  stage: AdoptionStage,
  s: AdoptionSighting,
): void {
  const install = installKey(s);
  if (install === undefined) return;
  const day = clock.now().toISOString().slice(0, 10);
  const sighting: Sighting = [s.productId, s.version, ADOPTION_STAGES.indexOf(stage), day, s.platform ?? "", install];
  const key = JSON.stringify(sighting);
  if (seen.has(key)) return;
  if (!gathering) {
    const batch: Gathering = { sightings: new Map(), sending: undefined };
    gathering = batch;
    ctx.waitUntil(
      new Promise((resolve) => setTimeout(resolve, ADOPTION_GATHER_MS)).then(() => queueSightings(ctx.env, batch)),
    );
  }
  gathering.sightings.set(key, sighting);
  if (gathering.sightings.size >= MAX_SIGHTINGS_PER_MESSAGE) ctx.waitUntil(queueSightings(ctx.env, gathering));
}

type Ctx = Parameters<typeof sight>[0];

/** A feed or an update check answered with this release. */
export const adoptionOffered = (ctx: Ctx, s: AdoptionSighting): void => sight(ctx, "offered", s);
/** The download route delivered an artifact of this release. */
export const adoptionDownloaded = (ctx: Ctx, s: AdoptionSighting): void => sight(ctx, "downloaded", s);
/** An update check, a feed poll or a validation reported running this version. */
export const adoptionRunning = (ctx: Ctx, s: AdoptionSighting): void => sight(ctx, "running", s);

/**
 * What an update answer (a feed of any format, the update check) tells: the caller runs its current version, and was
 * offered `offered` (the caller decides whether the selection counts as an offer: delivery/selection.ts feedRelease, the one
 * selection of every update answer, counts it when newer than the running version or a rollback).
 */
export function adoptionAnswered(
  ctx: Ctx,
  answer: {
    productId: number;
    platform: string;
    installId?: string | undefined;
    licenseId?: number | undefined;
    currentVersion?: string | undefined;
    offered?: string | undefined;
  },
): void {
  const { currentVersion, offered, ...who } = answer;
  if (currentVersion !== undefined) adoptionRunning(ctx, { ...who, version: currentVersion });
  if (offered !== undefined) adoptionOffered(ctx, { ...who, version: offered });
}

function isSighting(v: unknown): v is Sighting {
  return (
    Array.isArray(v) &&
    v.length === 6 &&
    Number.isInteger(v[0]) &&
    typeof v[1] === "string" &&
    Number.isInteger(v[2]) &&
    v[2] >= 0 &&
    v[2] < ADOPTION_STAGES.length &&
    typeof v[3] === "string" &&
    /^\d{4}-\d{2}-\d{2}$/.test(v[3]) &&
    typeof v[4] === "string" &&
    typeof v[5] === "string"
  );
}

const COLUMNS = 6;
/** Rows per INSERT: D1 binds at most 100 parameters per statement. */
export const ADOPTION_ROWS_PER_STATEMENT = Math.floor(100 / COLUMNS);

/**
 * One multi-row INSERT OR IGNORE: each sighting's release found by product and version (a version no release has,
 * or a release deleted since, writes nothing); a row already there is left as it is.
 */
function insertSightings(db: D1Database, rows: Sighting[]): D1PreparedStatement {
  const values = rows.map(() => "(?, ?, ?, ?, ?, ?)").join(", ");
  const sql = `INSERT OR IGNORE INTO release_adoption (release_id, day, stage, platform, install)
    SELECT r.id, v.column4, v.column3, v.column5, v.column6 FROM (VALUES ${values}) AS v
    JOIN product_releases AS r ON r.product_id = v.column1 AND r.version = v.column2`;
  return db.prepare(sql).bind(...rows.flat());
}

/** Writes the sightings of a queue batch in one D1 batch; malformed messages are logged and skipped. */
export async function writeAdoption(messages: Message<Job>[], env: Bindings): Promise<void> {
  const rows = new Map<string, Sighting>();
  for (const message of messages) {
    const sightings = (message.body as { sightings?: unknown }).sightings;
    const list = Array.isArray(sightings) ? sightings : [];
    const valid = list.filter(isSighting);
    if (!Array.isArray(sightings) || valid.length !== list.length)
      console.error(`adoption: message ${message.id} holds malformed sightings, skipped`);
    for (const s of valid) rows.set(JSON.stringify(s), s);
  }
  const all = [...rows.values()];
  const statements: D1PreparedStatement[] = [];
  for (let i = 0; i < all.length; i += ADOPTION_ROWS_PER_STATEMENT)
    statements.push(insertSightings(env.DB, all.slice(i, i + ADOPTION_ROWS_PER_STATEMENT)));
  if (statements.length > 0) await env.DB.batch(statements);
  for (const message of messages) message.ack();
}

/** Distinct installs per stage. */
export type StageCounts = Record<AdoptionStage, number>;

/** A release's adoption over the UTC days `from` to `to` (both `YYYY-MM-DD`, inclusive). */
export interface Adoption {
  from: string;
  to: string;
  /** Distinct installs over the whole span (an install seen on two days counts once). */
  totals: StageCounts;
  /** Per day and platform (absent: not known, a validation), in order; only days and platforms with sightings. */
  days: (StageCounts & { day: string; platform?: string })[];
}

const zero = (): StageCounts => ({ offered: 0, downloaded: 0, running: 0 });

/** Reads a release's adoption: two grouped counts in one D1 round trip. */
export async function readAdoption(db: Db, releaseId: number, from: string, to: string): Promise<Adoption> {
  const within = and(
    eq(releaseAdoption.releaseId, releaseId),
    gte(releaseAdoption.day, from),
    lte(releaseAdoption.day, to),
  );
  const [perDay, perStage] = await db.batch([
    db
      .select({
        day: releaseAdoption.day,
        platform: releaseAdoption.platform,
        stage: releaseAdoption.stage,
        n: count(),
      })
      .from(releaseAdoption)
      .where(within)
      .groupBy(releaseAdoption.day, releaseAdoption.platform, releaseAdoption.stage)
      .orderBy(releaseAdoption.day, releaseAdoption.platform),
    db
      .select({ stage: releaseAdoption.stage, n: countDistinct(releaseAdoption.install) })
      .from(releaseAdoption)
      .where(within)
      .groupBy(releaseAdoption.stage),
  ]);
  const totals = zero();
  for (const row of perStage) {
    const stage = ADOPTION_STAGES[row.stage];
    if (stage) totals[stage] = row.n;
  }
  const days: Adoption["days"] = [];
  for (const row of perDay) {
    const stage = ADOPTION_STAGES[row.stage];
    if (!stage) continue;
    const platform = row.platform === "" ? undefined : row.platform;
    let last = days.at(-1);
    if (!last || last.day !== row.day || last.platform !== platform) {
      last = { day: row.day, ...(platform === undefined ? {} : { platform }), ...zero() };
      days.push(last);
    }
    last[stage] = row.n;
  }
  return { from, to, totals, days };
}

/** The statement removing adoption days older than Updates:AdoptionRetentionDays (app/housekeeping.ts), unexecuted. */
export function pruneAdoption(db: Db, config: Config, now: Date) {
  const cutoff = new Date(now.getTime() - config["Updates:AdoptionRetentionDays"] * 86_400_000);
  return db.delete(releaseAdoption).where(lt(releaseAdoption.day, cutoff.toISOString().slice(0, 10)));
}
