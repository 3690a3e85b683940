/**
 * Serving one artifact (SPEC "Download", CONTRACT section 5): the platform rule first, then the maintenance gate
 * (single-use download tokens), a 302 for hosted artifacts, and the bytes of uploaded ones: whole (200), one range
 * (206 with Content-Range), several ranges (206 multipart/byteranges, parts in request order, neighbouring ranges
 * read as one span), or 416. Bodies stream from storage; nothing is buffered whole.
 */
import type { Bindings } from "../env";
import type { Db } from "../db/client";
import { randomString } from "../auth/crypto";
import { type Span, coalesce } from "./ranges";
import { readArtifact } from "./storage";
import type { DownloadRow } from "./catalog";

/** An artifact's entity tag: its SHA-256, strong (the bytes of an artifact id never change). */
export function artifactEtag(file: Pick<DownloadRow, "sha256">): string {
  return `"${file.sha256}"`;
}

/**
 * Headers every answer about an uploaded artifact carries. `cacheControl` is the route's choice: public for an
 * ungated artifact open to everyone, `private, no-store` when the answer depends on a token or a user key.
 */
export function artifactHeaders(file: DownloadRow, cacheControl = "private, no-store"): Record<string, string> {
  return {
    "Accept-Ranges": "bytes",
    ETag: artifactEtag(file),
    "X-Service-Sha256": file.sha256,
    "X-Service-Sha512": file.sha512,
    "Cache-Control": cacheControl,
  };
}

/** Whether an `If-None-Match` header matches an entity tag (weak comparison, RFC 9110 section 13.1.2; `*` matches). */
export function noneMatchHits(header: string | null | undefined, etag: string): boolean {
  if (!header) return false;
  const opaque = (tag: string) => tag.trim().replace(/^W\//, "");
  return header.split(",").some((tag) => tag.trim() === "*" || opaque(tag) === opaque(etag));
}

/**
 * Whether a Range request may be served as ranges under its `If-Range` (RFC 9110 section 13.1.5): no If-Range, or
 * one naming the current entity tag exactly (strong comparison). A date or another tag means the client's partial
 * copy is of other bytes, so it gets the whole representation.
 */
export function ifRangeHolds(header: string | null | undefined, etag: string): boolean {
  if (header === null || header === undefined) return true;
  return header.trim() === etag;
}

/** `Content-Disposition` with the file name, ASCII-safe and RFC 5987 encoded. */
export function contentDisposition(fileName: string): string {
  const ascii = fileName.replace(/[^\x20-\x7e]|["\\]/g, "_");
  return `attachment; filename="${ascii}"; filename*=UTF-8''${encodeURIComponent(fileName)}`;
}

/**
 * Copies the bytes [from, to] (absolute offsets) out of a forward-only stream positioned at `cursor.at`, into
 * `write`. Bytes before `from` are skipped; the stream is left just after `to`.
 */
async function copySlice(
  reader: ReadableStreamDefaultReader<Uint8Array>,
  cursor: { at: number; pending: Uint8Array | undefined },
  from: number,
  to: number,
  write: (bytes: Uint8Array) => Promise<void>,
): Promise<void> {
  while (cursor.at <= to) {
    let chunk = cursor.pending;
    cursor.pending = undefined;
    if (!chunk) {
      const next = await reader.read();
      if (next.done) throw new Error(`artifact stream ended at byte ${cursor.at}, before ${to}`);
      chunk = next.value;
    }
    const chunkStart = cursor.at;
    const chunkEnd = chunkStart + chunk.byteLength - 1;
    const sliceStart = Math.max(from, chunkStart);
    const sliceEnd = Math.min(to, chunkEnd);
    // Awaiting each write keeps backpressure: the client's pace decides how much is read from storage.
    if (sliceStart <= sliceEnd) await write(chunk.subarray(sliceStart - chunkStart, sliceEnd - chunkStart + 1));
    if (chunkEnd > to) {
      // Keep the rest for the next range of the same span.
      cursor.pending = chunk.subarray(to - chunkStart + 1);
      cursor.at = to + 1;
      return;
    }
    cursor.at = chunkEnd + 1;
  }
}

/**
 * A 206 multipart/byteranges body for several ranges, with its exact length; undefined when the artifact's bytes are
 * missing. The first span is opened before the answer is made, so missing bytes are a 404 rather than a 206 whose body
 * breaks off. `read` false (HEAD) makes only the boundary and length, reading nothing.
 */
export async function multipartBody(
  env: Bindings,
  db: Db,
  file: DownloadRow,
  ranges: readonly Span[],
  contentType = "application/octet-stream",
  read = true,
): Promise<{ body: ReadableStream<Uint8Array> | null; boundary: string; length: number } | undefined> {
  const boundary = `licensing-${randomString(24)}`;
  const encoder = new TextEncoder();
  const head = (r: Span, first: boolean) =>
    encoder.encode(`${first ? "" : "\r\n"}--${boundary}\r\nContent-Type: ${contentType}\r\nContent-Range: bytes ${r.start}-${r.end}/${file.size}\r\n\r\n`);
  const tail = encoder.encode(`\r\n--${boundary}--\r\n`);
  const length = ranges.reduce((n, r, i) => n + head(r, i === 0).byteLength + (r.end - r.start + 1), 0) + tail.byteLength;

  const groups = coalesce(ranges);
  if (!read) return { body: null, boundary, length };
  const opened = await readArtifact(env, db, file, groups[0]!.span);
  if (!opened) return undefined;
  // A byte-counted buffer between storage and client: small part writes do not each wait for the client to read.
  const { readable, writable } = new TransformStream<Uint8Array, Uint8Array>(
    undefined,
    { highWaterMark: 256 * 1024, size: (chunk) => chunk.byteLength },
    { highWaterMark: 256 * 1024, size: (chunk) => chunk.byteLength },
  );
  const writer = writable.getWriter();
  (async () => {
    let first = true;
    for (const [index, group] of groups.entries()) {
      const stream = index === 0 ? opened : await readArtifact(env, db, file, group.span);
      if (!stream) throw new Error(`artifact ${file.id} has no stored bytes`);
      const reader = stream.getReader();
      const cursor = { at: group.span.start, pending: undefined as Uint8Array | undefined };
      for (const index of group.members) {
        const range = ranges[index]!;
        await writer.write(head(range, first));
        first = false;
        await copySlice(reader, cursor, range.start, range.end, (bytes) => writer.write(bytes));
      }
      await reader.cancel().catch(() => undefined);
    }
    await writer.write(tail);
    await writer.close();
  })().catch((e: unknown) => writer.abort(e));
  return { body: readable, boundary, length };
}
