/**
 * What makes an artifact a blockmap. Blockmaps are the one kind served without a download token (auto-updaters fetch
 * them beside the installer without its token), so the label `blockmap` must never turn a gated file into an open
 * one: the kind is accepted on stored bytes only when those bytes are a blockmap as electron-builder writes one
 * (gzip-compressed JSON `{version, files: [{name, offset, checksums, sizes}]}`), checked whenever the kind is set
 * (upload, resumable upload, PUT relabel); and the download route serves one ungated only beside the artifact it
 * describes (`<that file name>.blockmap` in the same release and platform). The bytes of an artifact id never change,
 * so a check when the kind is set holds for every later download, which reads nothing more than the bytes it serves.
 */
import { sql } from "drizzle-orm";
import { releaseDownloads } from "../db/schema";
import { ApiError } from "../kernel/errors";

/** The file name suffix a blockmap carries: electron-updater derives a blockmap's URL as the installer's + this. */
export const BLOCKMAP_SUFFIX = ".blockmap";
/**
 * Whether an artifact row is served as a blockmap, without a token: its kind is blockmap, its bytes are stored with
 * the service (checked to be a blockmap when the kind was set; a hosted file's never were), and it lies beside the
 * artifact it describes: another artifact of its release and platform is named as it is without `.blockmap`. One
 * expression of the download route's own statement (no extra D1 round trip; the unique index on release, platform
 * and kind finds the neighbours).
 */
export const servedAsBlockmap = sql<number>`(${releaseDownloads.kind} = 'blockmap' AND ${releaseDownloads.sourceKind} <> 'url' AND EXISTS (SELECT 1 FROM ${releaseDownloads} AS described WHERE described.release_id = ${releaseDownloads.releaseId} AND described.platform = ${releaseDownloads.platform} AND described.kind <> 'blockmap' AND described.file_name || ${BLOCKMAP_SUFFIX} = ${releaseDownloads.fileName}))`;

/** The largest stored blockmap the service checks (a blockmap of a 2 GB installer is well under 1 MiB). */
export const MAX_BLOCKMAP_BYTES = 8 * 1024 * 1024;
/** The largest JSON a blockmap may inflate to (bounds memory against a gzip bomb). */
export const MAX_BLOCKMAP_JSON_BYTES = 32 * 1024 * 1024;

/** Reads a stream whole, or undefined as soon as it grows past `max` bytes. */
async function readAtMost(stream: ReadableStream<Uint8Array>, max: number): Promise<Uint8Array | undefined> {
  const pieces: Uint8Array[] = [];
  let size = 0;
  const reader = stream.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > max) {
      await reader.cancel().catch(() => undefined);
      return undefined;
    }
    pieces.push(value);
  }
  const out = new Uint8Array(size);
  let at = 0;
  for (const piece of pieces) {
    out.set(piece, at);
    at += piece.byteLength;
  }
  return out;
}

const isCount = (n: unknown) => typeof n === "number" && Number.isSafeInteger(n) && n >= 0;

/** Why parsed JSON is not a blockmap's, or undefined when it is one. */
function shapeProblem(data: unknown): string | undefined {
  if (typeof data !== "object" || data === null || Array.isArray(data)) return "its JSON is not an object";
  const { version, files } = data as { version?: unknown; files?: unknown };
  if (typeof version !== "string" && typeof version !== "number") return "its JSON has no version";
  if (!Array.isArray(files) || files.length === 0) return "its JSON has no files";
  for (const file of files as unknown[]) {
    const f = (file ?? {}) as { name?: unknown; offset?: unknown; checksums?: unknown; sizes?: unknown };
    if (typeof f.name !== "string" || !isCount(f.offset)) return "a file of its JSON has no name or offset";
    if (!Array.isArray(f.checksums) || !Array.isArray(f.sizes) || f.checksums.length !== f.sizes.length)
      return "a file of its JSON has no checksums and sizes of one length";
    if (!f.checksums.every((c) => typeof c === "string") || !f.sizes.every(isCount))
      return "a file of its JSON has checksums that are not strings or sizes that are not byte counts";
  }
  return undefined;
}

/**
 * Why the stored bytes of an artifact of `size` bytes are not a blockmap, or undefined when they are one. `read` opens
 * the artifact's bytes (undefined when they are missing); a file too large to be a blockmap is never read.
 */
export async function blockmapProblem(
  read: () => Promise<ReadableStream<Uint8Array> | undefined>,
  size: number,
): Promise<string | undefined> {
  if (size > MAX_BLOCKMAP_BYTES) return `it has ${size} bytes, more than a blockmap's ${MAX_BLOCKMAP_BYTES}`;
  const stream = await read();
  if (!stream) return "its bytes are missing";
  const bytes = await readAtMost(stream, MAX_BLOCKMAP_BYTES);
  if (!bytes) return `it has more than a blockmap's ${MAX_BLOCKMAP_BYTES} bytes`;
  if (bytes[0] !== 0x1f || bytes[1] !== 0x8b) return "its bytes are not gzip-compressed";
  let json: Uint8Array | undefined;
  try {
    json = await readAtMost(
      new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip")),
      MAX_BLOCKMAP_JSON_BYTES,
    );
  } catch {
    return "its bytes are not a complete gzip stream";
  }
  if (!json) return `it inflates to more than ${MAX_BLOCKMAP_JSON_BYTES} bytes`;
  let data: unknown;
  try {
    data = JSON.parse(new TextDecoder("utf-8", { fatal: true, ignoreBOM: false }).decode(json));
  } catch {
    return "it does not inflate to JSON";
  }
  return shapeProblem(data);
}

/** 400 naming `kind` when stored bytes are not a blockmap's (see blockmapProblem). */
export async function requireBlockmap(
  read: () => Promise<ReadableStream<Uint8Array> | undefined>,
  size: number,
  fileName: string,
): Promise<void> {
  const problem = await blockmapProblem(read, size);
  if (problem)
    throw new ApiError(
      400,
      `kind blockmap is for electron-builder blockmaps (gzip-compressed JSON with version and files); ${fileName} is not one: ${problem}`,
    );
}
