/**
 * The bytes of an artifact as the download route (routes/updates/updates.ts) serves them, once download-plan.ts has decided
 * what it serves: entity tags and preconditions, the whole file, byte ranges (one, or several as
 * multipart/byteranges) streamed from storage, and the download counted when its last byte has gone out.
 */
import type { Db } from "../db/client";
import { randomString } from "../kernel/crypto";
import { type RangeRequest, type Span, coalesce } from "../http/ranges";
import { readArtifact, artifactExists } from "../updates/storage";
import type { DownloadRow } from "./catalog";
import type { ServiceContext } from "../http/context";
import { ApiError } from "../kernel/errors";
import { countDownload } from "../updates/download-counts";

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
    encoder.encode(
      `${first ? "" : "\r\n"}--${boundary}\r\nContent-Type: ${contentType}\r\nContent-Range: bytes ${r.start}-${r.end}/${file.size}\r\n\r\n`,
    );
  const tail = encoder.encode(`\r\n--${boundary}--\r\n`);
  const length =
    ranges.reduce((n, r, i) => n + head(r, i === 0).byteLength + (r.end - r.start + 1), 0) + tail.byteLength;

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

/**
 * Counts a download of the artifact once the client has taken the body's last byte (download-counts.ts): the body
 * is passed through a FixedLengthStream of its exact length, and the pipe ends when the client read everything; a
 * client that goes away first ends it with an error, which counts nothing.
 */
function countedWhenSent(ctx: ServiceContext, file: DownloadRow, body: ReadableStream<Uint8Array>, length: number) {
  const { readable, writable } = new FixedLengthStream(length);
  ctx.waitUntil(
    body.pipeTo(writable).then(
      () => countDownload(ctx.env, file.id),
      () => undefined,
    ),
  );
  return readable;
}

/**
 * The answer serving an artifact's bytes (GET or HEAD) once the download route has decided to serve it
 * (download-plan.ts): a redirect to a hosted artifact, else the whole file, one range or several as
 * multipart/byteranges, or 416; 404 when the bytes are missing from storage. A download counts once the client has
 * the file's last byte: a whole GET, or the range that finishes a resumed (or segmented) one. Ranges short of the end
 * continue a download that is counted when it ends, so one download resumed any number of times counts once; HEAD
 * and 416 count nothing.
 */
export async function artifactAnswer(
  ctx: ServiceContext,
  file: DownloadRow,
  answer: { head: boolean; range: RangeRequest; cacheControl: string },
): Promise<Response> {
  const { head, range } = answer;
  if (file.sourceKind === "url" && file.url) {
    // A hosted artifact's bytes are served elsewhere: handing out its address is the download the service sees.
    if (!head) {
      const queued = countDownload(ctx.env, file.id);
      if (queued) ctx.waitUntil(queued);
    }
    return new Response(null, { status: 302, headers: { Location: file.url, "Cache-Control": "private, no-store" } });
  }
  const counts =
    !head && (range.kind === "all" || (range.kind === "ranges" && range.ranges.some((r) => r.end === file.size - 1)));
  const sent = (body: ReadableStream<Uint8Array>, length: number) =>
    counts ? countedWhenSent(ctx, file, body, length) : body;

  const headers = {
    ...artifactHeaders(file, answer.cacheControl),
    "Content-Disposition": contentDisposition(file.fileName),
  };
  // HEAD reads no bytes, so it asks storage whether they are there: it must not promise what GET would answer 404.
  if (head && !(await artifactExists(ctx.env, ctx.db, file)))
    throw new ApiError(404, "The artifact's bytes are missing");
  if (range.kind === "unsatisfiable")
    return new Response(null, { status: 416, headers: { ...headers, "Content-Range": `bytes */${file.size}` } });
  if (range.kind === "all") {
    const body = head ? null : await readArtifact(ctx.env, ctx.db, file);
    if (!head && !body) throw new ApiError(404, "The artifact's bytes are missing");
    return new Response(body && sent(body, file.size), {
      status: 200,
      headers: { ...headers, "Content-Type": "application/octet-stream", "Content-Length": String(file.size) },
    });
  }
  if (range.ranges.length === 1) {
    const r = range.ranges[0]!;
    const body = head ? null : await readArtifact(ctx.env, ctx.db, file, r);
    if (!head && !body) throw new ApiError(404, "The artifact's bytes are missing");
    return new Response(body && sent(body, r.end - r.start + 1), {
      status: 206,
      headers: {
        ...headers,
        "Content-Type": "application/octet-stream",
        "Content-Range": `bytes ${r.start}-${r.end}/${file.size}`,
        "Content-Length": String(r.end - r.start + 1),
      },
    });
  }
  const multipart = await multipartBody(ctx.env, ctx.db, file, range.ranges, undefined, !head);
  if (!multipart) throw new ApiError(404, "The artifact's bytes are missing");
  return new Response(multipart.body && sent(multipart.body, multipart.length), {
    status: 206,
    headers: {
      ...headers,
      "Content-Type": `multipart/byteranges; boundary=${multipart.boundary}`,
      "Content-Length": String(multipart.length),
    },
  });
}
