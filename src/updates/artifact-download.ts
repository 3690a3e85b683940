import type { Db } from "../db/client";
import { randomString } from "../crypto";
import { type Span, coalesce, parseRange } from "./ranges";
import { readArtifact, artifactExists } from "./storage";
import type { DownloadRow } from "./catalog";
import { and, eq } from "drizzle-orm";
import type { Context } from "hono";
import type { AppEnv } from "../http/app-env";
import { productReleases, releaseDownloads } from "../db/schema";
import { type ServiceContext, serviceContext, clientInfo } from "../http/context";
import { ApiError } from "../errors";
import type { LicenseRow } from "../licensing/license-core";
import { recordTrace } from "../licensing/traces";
import { TraceAction } from "../licensing/vocabulary";
import {
  type Caller,
  REVOKED_OR_EXPIRED,
  badDownloadToken,
  licenseOf,
  requireTokenLicense,
  resolveCaller,
} from "./caller";
import { CHANNELS, PLATFORMS, type Platform, type ProductRow, platformVerdict, requiresMaintenance } from "./catalog";
import { type DownloadClaim, coversWholeFile, recordTokenUse, verifyDownloadToken } from "./download-tokens";
import { productByCodeMemo } from "./product-memo";
import { updateRefusal } from "./reasons";
import { servedAsBlockmap } from "./blockmap";
import { isReleaseVersion } from "./versions";
import { countDownload } from "./download-counts";
import { nowIso } from "../clock";

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

export const USER_KEY_HEADER = "X-Service-User-Key";

const TRACE_DOWNLOAD = TraceAction.Download;

export function requirePlatform(value: string | undefined, fallback?: Platform): Platform {
  const platform = value ?? fallback;
  if (!platform || !(PLATFORMS as readonly string[]).includes(platform))
    throw new ApiError(400, `Unknown platform '${value}': one of ${PLATFORMS.join(", ")}`);
  return platform as Platform;
}

export function requireChannel(value: string | undefined): string {
  const channel = value ?? "stable";
  if (!(CHANNELS as readonly string[]).includes(channel))
    throw new ApiError(400, `Unknown channel '${value}': stable or insider`);
  return channel;
}

export async function requireProduct(ctx: ServiceContext, code: string): Promise<ProductRow> {
  const product = await productByCodeMemo(ctx.db, code);
  if (!product) throw new ApiError(404, `Unknown product '${code}'`);
  return product;
}

export function userKeyOf(c: Context<AppEnv>): string | undefined {
  return c.req.header(USER_KEY_HEADER) ?? c.req.query("userKey") ?? undefined;
}

/** Whether a request names a user key at all (userKeyOf, before the app: the front door, app.ts). */
export function namesUserKey(headers: Headers, url: URL): boolean {
  return headers.has(USER_KEY_HEADER) || url.searchParams.has("userKey");
}

/**
 * Traces an update check or a download for a license that traces; `version` (the client's current version for a
 * check, the release's for a download) goes into the trace's meta, where the console reads update adoption from.
 */
export function traceFor(c: Context<AppEnv>, caller: Caller, action: number, version?: string): void {
  const license = licenseOf(caller);
  if (!license?.trace) return;
  const client = clientInfo(c);
  recordTrace(
    serviceContext(c),
    {
      licenseId: license.id,
      action,
      address: client.address,
      geoLocation: client.geoLocation,
      meta: version === undefined ? null : JSON.stringify({ version }),
    },
    nowIso(),
  );
}

/** 403 naming the platform rule when the platform's family is not open to this license (SPEC rule 3). */
function refuseByPlatform(ctx: ServiceContext, platform: Platform, license: LicenseRow | undefined): void {
  const verdict = platformVerdict(ctx.config, platform, license);
  if (!verdict.allowed) {
    throw updateRefusal(
      verdict.reason === "platformRequiresEdition"
        ? `${platform} needs a license of the ${verdict.requiredEdition} edition`
        : `${platform} needs a license`,
      verdict.reason,
    );
  }
}

/** The caller behind a user key on the download route, where a revoked or expired license gets the token's message (SPEC rule 5). */
async function downloadCaller(ctx: ServiceContext, productId: number, userKey: string | undefined): Promise<Caller> {
  try {
    return await resolveCaller(ctx, productId, userKey);
  } catch (e) {
    if (e instanceof ApiError && e.message === REVOKED_OR_EXPIRED) throw badDownloadToken();
    throw e;
  }
}

export async function downloadResponse(c: Context<AppEnv>): Promise<Response> {
  const ctx = serviceContext(c);
  const params = c.req.param();
  const query = c.req.query();
  const platform = requirePlatform(params["platform"]);
  const version = params["version"] ?? "";
  if (!isReleaseVersion(version)) throw new ApiError(400, `Unknown version '${version}': major.minor.patch`);
  const channel = query["channel"] !== undefined ? requireChannel(query["channel"]) : undefined;
  const product = await requireProduct(ctx, params["productCode"] ?? "");
  const rows = await ctx.db
    .select({ release: productReleases, file: releaseDownloads, blockmap: servedAsBlockmap })
    .from(releaseDownloads)
    .innerJoin(productReleases, eq(productReleases.id, releaseDownloads.releaseId))
    .where(
      and(
        eq(productReleases.productId, product.id),
        eq(productReleases.version, version),
        eq(productReleases.public, true),
        eq(releaseDownloads.platform, platform),
        eq(releaseDownloads.fileName, params["fileName"] ?? ""),
        channel ? eq(productReleases.channel, channel) : undefined,
      ),
    );
  // `kind` tells apart the artifacts of one release and platform that share a file name (an installer and a zip; the
  // feed's and the update check's URLs carry it for them). A name that names one artifact is that artifact whatever
  // `kind` says: auto-updaters carry an installer URL's query over to the blockmap URL they derive from it.
  const kind = query["kind"];
  const named = rows.length > 1 && kind ? rows.filter((r) => r.file.kind === kind) : rows;
  if (named.length === 0) throw new ApiError(404, "Unknown artifact");
  if (named.length > 1) throw new ApiError(400, "Several artifacts have this file name: say which with `kind`");
  const { release, file, blockmap } = named[0]!;

  const head = c.req.method === "HEAD";
  const etag = artifactEtag(file);
  // A Range whose If-Range names other bytes is answered with the whole file (RFC 9110 section 13.1.5).
  const range = ifRangeHolds(c.req.header("if-range"), etag)
    ? parseRange(c.req.header("range"), file.size)
    : parseRange(undefined, file.size);
  const caller = await downloadCaller(ctx, product.id, userKeyOf(c));
  const token = query["token"];
  // Blockmaps describe, they do not install: auto-updaters fetch them beside the installer without its token. Only a
  // real one is open (blockmap.ts: its bytes checked when the kind was set, and beside the file it describes), so a
  // relabelled installer stays gated. Whether the rest needs a token is decided from the release and product as they
  // are now.
  const gated = requiresMaintenance(ctx.config, product, release) && !blockmap;
  // The platform rule comes before the token is used, and before it is looked at whenever the license is known
  // without it (a user key) or there is no token to look at.
  const early = licenseOf(caller);
  if (early || !gated || !token) refuseByPlatform(ctx, platform, early);
  // Only a gated artifact looks at the token: auto-updaters carry the installer's query (and so its token) over to
  // the blockmap URLs they derive from it, where the token names another artifact.
  let claim: DownloadClaim | undefined;
  let license = early;
  if (gated) {
    // Its signature, expiry and artifact, without D1: whose token it is, so the platform rule can judge that license.
    claim = await verifyDownloadToken(ctx, token, file.id);
    if (early && early.id !== claim.licenseId) throw badDownloadToken();
    license = await requireTokenLicense(ctx, claim.licenseId);
    if (!early) refuseByPlatform(ctx, platform, license);
  }
  // Public and the same for everyone: ungated, and the platform open without a license. Never `immutable`, even
  // under the artifact's id: any release can be gated later (requiresMaintenance, isApplication, a setting), so a
  // shared cache keeps an ungated answer no longer than a feed's (Updates:FeedCacheSeconds), then revalidates it
  // with its ETag.
  const cacheControl =
    gated || !platformVerdict(ctx.config, platform, undefined).allowed
      ? "private, no-store"
      : `public, max-age=${ctx.config["Updates:FeedCacheSeconds"]}`;
  const hosted = file.sourceKind === "url" && file.url;
  if (!hosted && noneMatchHits(c.req.header("if-none-match"), etag))
    return new Response(null, { status: 304, headers: { ETag: etag, "Cache-Control": cacheControl } });

  // What this answer serves; a token records it in one statement (download-tokens.ts) before any byte is sent.
  const complete =
    hosted || range.kind === "all" || (range.kind === "ranges" && coversWholeFile(range.ranges, file.size));
  if (claim && !head && range.kind !== "unsatisfiable") {
    const bytes =
      range.kind === "ranges" && !hosted ? range.ranges.reduce((n, r) => n + r.end - r.start + 1, 0) : file.size;
    await recordTokenUse(ctx, claim, { bytes, complete: Boolean(complete), size: file.size });
  }
  if (complete && !head) traceFor(c, license ? { kind: "licensed", license } : caller, TRACE_DOWNLOAD, release.version);

  if (hosted) {
    // A hosted artifact's bytes are served elsewhere: handing out its address is the download the service sees.
    if (!head) {
      const queued = countDownload(ctx.env, file.id);
      if (queued) ctx.waitUntil(queued);
    }
    return new Response(null, { status: 302, headers: { Location: file.url!, "Cache-Control": "private, no-store" } });
  }
  // A download counts once the client has the file's last byte: a whole GET, or the range that finishes a resumed
  // (or segmented) one. Ranges short of the end continue a download that is counted when it ends, so one download
  // resumed any number of times counts once; HEAD, 304 and 416 count nothing.
  const counts =
    !head && (range.kind === "all" || (range.kind === "ranges" && range.ranges.some((r) => r.end === file.size - 1)));
  const sent = (body: ReadableStream<Uint8Array>, length: number) =>
    counts ? countedWhenSent(ctx, file, body, length) : body;

  const headers = { ...artifactHeaders(file, cacheControl), "Content-Disposition": contentDisposition(file.fileName) };
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
