/**
 * Downloads counted per artifact (issue 24): `release_downloads.download_count`, shown as `downloadCount` on the
 * artifact record. What counts is decided by the download route (artifact-download.ts): an answer that delivered the
 * file through its last byte to the client, or redirected to a hosted artifact.
 *
 * The count is written off the request path and off D1, the way license traces are (licensing/traces.ts): the
 * isolate gathers the counts of its completed downloads for COUNT_GATHER_MS into one message of the TRACES queue,
 * and the consumer adds a whole queue batch up and writes it in one D1 batch (one UPDATE per artifact). A download
 * therefore costs no D1 write of its own, and a release going out to many clients at once costs one write per
 * artifact per queue batch. Queue delivery is at least once: a batch retried after its write succeeded would count
 * twice, which the queue makes rare; a failure to queue loses those counts and never fails a download.
 */
import { eq, sql } from "drizzle-orm";
import { getDb } from "../db/client";
import { releaseDownloads } from "../db/schema";
import type { Job, JobOf } from "../kernel/jobs";

/** The queue job carrying gathered download counts (kernel/jobs.ts). */
export const DOWNLOAD_COUNT_JOB = "release.downloads.counted" as const;

/** How long an isolate gathers counts before it queues them as one message. */
export const COUNT_GATHER_MS = 200;
/** At most this many artifacts in one message (pairs of integers: far below a queue message's 128 KB). */
const MAX_ARTIFACTS_PER_MESSAGE = 1000;

/** The counts an isolate is gathering into one message: artifact id to completed downloads. */
interface Gathering {
  counts: Map<number, number>;
  sending: Promise<void> | undefined;
}

let gathering: Gathering | undefined;

function queueCounts(env: Bindings, batch: Gathering): Promise<void> {
  if (batch.sending) return batch.sending;
  if (gathering === batch) gathering = undefined;
  const counts = [...batch.counts];
  const message: JobOf<typeof DOWNLOAD_COUNT_JOB> = { kind: DOWNLOAD_COUNT_JOB, counts };
  batch.sending = env.TRACES.send(message).then(
    () => undefined,
    (e: unknown) => console.error(`download counts of ${counts.length} artifacts not queued`, e),
  );
  return batch.sending;
}

/**
 * Counts one completed download of an artifact. Returns the promise the caller must keep alive (`waitUntil`) when
 * this count began a gathering (its timer, then the message) or filled one; undefined when the count joined a
 * gathering another request keeps alive. Never throws, never touches D1.
 */
export function countDownload(env: Bindings, downloadId: number): Promise<void> | undefined {
  let started: Promise<void> | undefined;
  if (!gathering) {
    const batch: Gathering = { counts: new Map(), sending: undefined };
    gathering = batch;
    started = new Promise((resolve) => setTimeout(resolve, COUNT_GATHER_MS)).then(() => queueCounts(env, batch));
  }
  const batch = gathering;
  batch.counts.set(downloadId, (batch.counts.get(downloadId) ?? 0) + 1);
  if (batch.counts.size >= MAX_ARTIFACTS_PER_MESSAGE) return queueCounts(env, batch);
  return started;
}

/** The `[artifact id, count]` pairs of a message, or undefined when it is malformed. */
function countsOf(body: unknown): [number, number][] | undefined {
  const counts = (body as { counts?: unknown }).counts;
  if (!Array.isArray(counts)) return undefined;
  const valid = counts.filter(
    (p): p is [number, number] =>
      Array.isArray(p) && p.length === 2 && Number.isInteger(p[0]) && Number.isInteger(p[1]) && p[1] > 0,
  );
  return valid.length === counts.length ? valid : undefined;
}

/**
 * Writes the counts of a queue batch: added up per artifact, one UPDATE each, all in one D1 batch (one round trip).
 * An artifact deleted since its download is updated nowhere. Malformed messages are logged and skipped.
 */
export async function writeDownloadCounts(messages: Message<Job>[], env: Bindings): Promise<void> {
  const totals = new Map<number, number>();
  for (const message of messages) {
    const counts = countsOf(message.body);
    if (!counts) {
      console.error(`download counts: message ${message.id} is malformed, skipped`);
      continue;
    }
    for (const [id, n] of counts) totals.set(id, (totals.get(id) ?? 0) + n);
  }
  const db = getDb(env.DB);
  const [first, ...rest] = [...totals].map(([id, n]) =>
    db
      .update(releaseDownloads)
      .set({ downloadCount: sql`${releaseDownloads.downloadCount} + ${n}` })
      .where(eq(releaseDownloads.id, id)),
  );
  if (first) await db.batch([first, ...rest]);
  for (const message of messages) message.ack();
}
