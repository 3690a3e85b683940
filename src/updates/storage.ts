/**
 * Where uploaded artifact bytes live and how they are read back. `local` artifacts are one R2 object in the bucket
 * bound as ARTIFACTS (key in `storageKey`, under `Extensions:DownloadRoot`); `resource` artifacts are rows of
 * `artifact_chunks`, 1 MiB each (DESIGN: D1 holds about 2 MB per value), numbered from 0. Hosted (`url`) artifacts
 * have no stored bytes. Reads stream: one ranged R2 read per call, or chunks fetched one D1 query at a time as the
 * consumer pulls, so a download never holds more than a chunk in memory.
 */
import { and, eq, inArray, sql } from "drizzle-orm";
import type { Db } from "../db/client";
import { artifactChunks, type releaseDownloads } from "../db/schema";

export type ReleaseDownloadRow = typeof releaseDownloads.$inferSelect;

/** Inclusive byte span. */
export interface ByteSpan {
  start: number;
  end: number;
}

/** Size of every `resource` chunk but the last, which holds the rest (1 to CHUNK_BYTES bytes). */
export const CHUNK_BYTES = 1024 * 1024;

function checkSpan(download: ReleaseDownloadRow, span: ByteSpan): void {
  if (
    !Number.isInteger(span.start) ||
    !Number.isInteger(span.end) ||
    span.start < 0 ||
    span.end < span.start ||
    span.end >= download.size
  ) {
    throw new RangeError(`Span ${span.start}-${span.end} is outside artifact ${download.id} (${download.size} bytes)`);
  }
}

/**
 * Streams an uploaded artifact's bytes (all, or one span) from R2 (`local`) or its D1 chunks (`resource`);
 * undefined when the bytes are missing. One R2 read per call; chunks read lazily, one D1 query per chunk or per few chunks.
 */
export async function readArtifact(
  env: Bindings,
  db: Db,
  download: ReleaseDownloadRow,
  span?: ByteSpan,
): Promise<ReadableStream<Uint8Array> | undefined> {
  if (span) checkSpan(download, span);
  if (download.sourceKind === "local") return readObject(env, download, span);
  if (download.sourceKind === "resource") return readChunks(db, download, span ?? { start: 0, end: download.size - 1 });
  return undefined;
}

/** Whether the stored bytes exist (R2 head / first chunk); false for hosted artifacts, which store none. */
export async function artifactExists(env: Bindings, db: Db, download: ReleaseDownloadRow): Promise<boolean> {
  if (download.sourceKind === "local") {
    if (!env.ARTIFACTS || !download.storageKey) return false;
    return (await env.ARTIFACTS.head(download.storageKey)) !== null;
  }
  if (download.sourceKind === "resource") {
    const row = await db
      .select({ seq: artifactChunks.seq })
      .from(artifactChunks)
      .where(and(eq(artifactChunks.downloadId, download.id), eq(artifactChunks.seq, 0)))
      .get();
    return row !== undefined;
  }
  return false;
}

/**
 * Deletes the stored bytes of artifacts (their R2 objects and chunks). Called after their rows are gone, so a
 * failure here leaves unreferenced bytes, never a row without bytes.
 */
export async function deleteArtifactBytes(
  env: Bindings,
  db: Db,
  downloads: readonly Pick<ReleaseDownloadRow, "id" | "sourceKind" | "storageKey">[],
): Promise<void> {
  const keys = downloads.filter((d) => d.sourceKind === "local" && d.storageKey).map((d) => d.storageKey as string);
  const chunked = downloads.filter((d) => d.sourceKind === "resource").map((d) => d.id);
  if (keys.length > 0 && env.ARTIFACTS) await env.ARTIFACTS.delete(keys);
  // The foreign key cascades chunks with their row; deleting them by id as well keeps this true without it.
  if (chunked.length > 0) await db.delete(artifactChunks).where(inArray(artifactChunks.downloadId, chunked));
}

async function readObject(
  env: Bindings,
  download: ReleaseDownloadRow,
  span: ByteSpan | undefined,
): Promise<ReadableStream<Uint8Array> | undefined> {
  if (!env.ARTIFACTS || !download.storageKey) return undefined;
  return readObjectSpan(env.ARTIFACTS, download.storageKey, span);
}

/** An R2 object's bytes, or an inclusive span of them (also a staged upload's, before its row exists). */
export async function readObjectSpan(
  bucket: R2Bucket,
  key: string,
  span?: ByteSpan,
): Promise<ReadableStream<Uint8Array> | undefined> {
  const range = span ? { range: { offset: span.start, length: span.end - span.start + 1 } } : undefined;
  return (await bucket.get(key, range))?.body ?? undefined;
}

/** One chunk's bytes [from, to] (offsets inside the chunk), or undefined when the chunk is missing. */
async function readChunk(
  db: Db,
  downloadId: number,
  seq: number,
  from: number,
  to: number,
): Promise<Uint8Array | undefined> {
  // hex() crosses the D1 boundary as one string; a BLOB would arrive as an array of a million numbers.
  const row = await db
    .select({ hex: sql<string>`hex(substr(${artifactChunks.data}, ${from + 1}, ${to - from + 1}))` })
    .from(artifactChunks)
    .where(and(eq(artifactChunks.downloadId, downloadId), eq(artifactChunks.seq, seq)))
    .get();
  if (!row) return undefined;
  const bytes = fromHex(row.hex);
  if (bytes.byteLength !== to - from + 1)
    throw new Error(`Chunk ${seq} of artifact ${downloadId} is shorter than its artifact's size says`);
  return bytes;
}

/** The chunks covering `span`, fetched as the consumer reads; undefined when the first one is missing. */
async function readChunks(
  db: Db,
  download: ReleaseDownloadRow,
  span: ByteSpan,
): Promise<ReadableStream<Uint8Array> | undefined> {
  const first = Math.floor(span.start / CHUNK_BYTES);
  const last = Math.floor(span.end / CHUNK_BYTES);
  const bounds = (seq: number) => ({
    from: seq === first ? span.start - seq * CHUNK_BYTES : 0,
    to: seq === last ? span.end - seq * CHUNK_BYTES : CHUNK_BYTES - 1,
  });
  const head = bounds(first);
  const opening = await readChunk(db, download.id, first, head.from, head.to);
  if (!opening) return undefined;
  let next = first + 1;
  return new ReadableStream<Uint8Array>(
    {
      start(controller) {
        controller.enqueue(opening);
        if (first === last) controller.close();
      },
      async pull(controller) {
        const seq = next++;
        const { from, to } = bounds(seq);
        const bytes = await readChunk(db, download.id, seq, from, to);
        if (!bytes) throw new Error(`Chunk ${seq} of artifact ${download.id} is missing`);
        controller.enqueue(bytes);
        if (seq === last) controller.close();
      },
    },
    // Nothing is read ahead of the consumer: a slow client holds at most one chunk.
    new CountQueuingStrategy({ highWaterMark: 0 }),
  );
}

const HEX_VALUES = (() => {
  const table = new Int8Array(128).fill(-1);
  for (let i = 0; i < 16; i++) {
    table["0123456789abcdef".charCodeAt(i)] = i;
    table["0123456789ABCDEF".charCodeAt(i)] = i;
  }
  return table;
})();

/** Decodes hex text (as SQLite's hex() writes it). */
function fromHex(text: string): Uint8Array {
  const out = new Uint8Array(text.length >> 1);
  for (let i = 0; i < out.length; i++) {
    const hi = HEX_VALUES[text.charCodeAt(2 * i)] ?? -1;
    const lo = HEX_VALUES[text.charCodeAt(2 * i + 1)] ?? -1;
    if (hi < 0 || lo < 0) throw new Error("Invalid hex from the database");
    out[i] = (hi << 4) | lo;
  }
  return out;
}
