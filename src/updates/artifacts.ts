/**
 * Adding, checking and removing release artifacts, free of HTTP (DESIGN house style). The rules of SPEC "Release
 * download routes": only releases of application products with a `major.minor.patch[-prerelease]` version take
 * downloads; one artifact per (release, platform, kind); hosted artifacts bring their own size and hashes, uploaded
 * ones get them computed while they stream into R2 (`local`) or D1 chunks (`resource`). Every path that stores
 * bytes first leaves the artifact invisible and removes those bytes again when anything fails.
 */
import { refuseUnsignedArchive } from "./vendor-signatures";
import {
  type SignedFile,
  type SigningKeys,
  type StreamedIdentity,
  checkSigning,
  recordSignerChange,
  spanSource,
  streamedIdentity,
} from "./signer-check";
import { and, eq, inArray, like, lt } from "drizzle-orm";
import { randomString } from "../kernel/crypto";
import { clock } from "../kernel/clock";
import type { Config } from "../kernel/config";
import type { Db } from "../db/client";
import { type Row, insertRow, updateRow } from "../http/repository";
import { type SignerChange, artifactChunks, productReleases, products, releaseDownloads } from "../db/schema";
import type { ServiceContext } from "../http/context";
import { ApiError, notFound400 } from "../kernel/errors";
import { ChunkSink, type Digests, R2Sink, digestStream, storeStream } from "./artifact-writer";
import {
  PENDING_PLATFORM,
  PLATFORMS,
  ReleaseDownload,
  UPLOAD_SOURCE_KINDS,
  type UploadFields,
} from "./release-download";
import { CHUNK_BYTES, type ReleaseDownloadRow, deleteArtifactBytes, readArtifact, readObjectSpan } from "./storage";
import { requireBlockmap } from "./blockmap";

/** SPEC: a release that receives downloads has `major.minor.patch`, optionally `-prerelease`. */
const DOWNLOAD_VERSION = /^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?$/;

/**
 * `resource` uploads write their chunks under a row that exists (the chunks' foreign key) but that no route may
 * see yet: its platform is PENDING_PLATFORM + a nonce until the last chunk is stored. Real platforms never contain
 * ':'. A pending row this old belongs to an upload whose Worker died; the next upload removes it.
 */
const STALE_PENDING_MS = 24 * 3600_000;

/** The release a download route names, checked to accept downloads. */
export interface DownloadTarget {
  productId: number;
  productCode: string;
  releaseId: number;
  version: string;
  /** The product's signing identities and keys: uploads are checked against them (signer-check.ts). */
  sparklePublicKey: string | null;
  tauriPublicKey: string | null;
  windowsPublisherNames: string[] | null;
  macTeamIds: string[] | null;
}

/** The artifacts every route may see: published rows (pending uploads excluded). */
export function publishedDownloads(releaseId: number) {
  return and(eq(releaseDownloads.releaseId, releaseId), inArray(releaseDownloads.platform, [...PLATFORMS]));
}

/** The release `releaseId` of product `productId` with what decides whether it takes downloads; 400 when missing. */
async function releaseOf(
  db: Db,
  productId: number,
  releaseId: number,
): Promise<Omit<DownloadTarget, "productId" | "releaseId" | "productCode"> & { code: string; isApplication: boolean }> {
  const row = await db
    .select({
      code: products.code,
      isApplication: products.isApplication,
      version: productReleases.version,
      sparklePublicKey: products.sparklePublicKey,
      tauriPublicKey: products.tauriPublicKey,
      windowsPublisherNames: products.windowsPublisherNames,
      macTeamIds: products.macTeamIds,
    })
    .from(productReleases)
    .innerJoin(products, eq(products.id, productReleases.productId))
    .where(and(eq(productReleases.id, releaseId), eq(productReleases.productId, productId)))
    .get();
  if (!row) {
    const product = await db.select({ id: products.id }).from(products).where(eq(products.id, productId)).get();
    throw product ? notFound400("ProductRelease", releaseId) : notFound400("Product", productId);
  }
  return row;
}

/** The release `releaseId` of product `productId`, or 400 naming what is missing or why it takes no downloads. */
export async function downloadTarget(db: Db, productId: number, releaseId: number): Promise<DownloadTarget> {
  const row = await releaseOf(db, productId, releaseId);
  if (!row.isApplication) {
    throw new ApiError(
      400,
      `Downloads can be added only to releases of application products; product ${row.code} is not an application (isApplication is false)`,
    );
  }
  if (!DOWNLOAD_VERSION.test(row.version)) {
    throw new ApiError(
      400,
      `Release version "${row.version}" is not major.minor.patch (optionally -prerelease); only such releases receive downloads`,
    );
  }
  return {
    productId,
    productCode: row.code,
    releaseId,
    version: row.version,
    sparklePublicKey: row.sparklePublicKey,
    tauriPublicKey: row.tauriPublicKey,
    windowsPublisherNames: row.windowsPublisherNames,
    macTeamIds: row.macTeamIds,
  };
}

/** 400 when the release already has an artifact for this platform and kind (checked before bytes are stored). */
export async function refuseTaken(db: Db, releaseId: number, platform: string, kind: string): Promise<void> {
  const row = await db
    .select({ id: releaseDownloads.id })
    .from(releaseDownloads)
    .where(
      and(
        eq(releaseDownloads.releaseId, releaseId),
        eq(releaseDownloads.platform, platform),
        eq(releaseDownloads.kind, kind),
      ),
    )
    .get();
  if (row)
    throw new ApiError(
      400,
      `Release ${releaseId} already has a ${kind} for ${platform} (download ${row.id}); delete it first to replace it`,
    );
}

/** The R2 bucket and key prefix of `local` artifacts, or 400 naming Extensions:DownloadRoot. */
export function artifactBucket(env: Bindings, config: Config): { bucket: R2Bucket; root: string } {
  const root = (config["Extensions:DownloadRoot"] ?? "").replace(/^\/+|\/+$/g, "");
  if (!root) {
    throw new ApiError(
      400,
      "Extensions:DownloadRoot is not set: it is the key prefix of uploaded artifacts in the ARTIFACTS R2 bucket, required for sourceKind=local (or store the file with sourceKind=resource)",
    );
  }
  if (!env.ARTIFACTS) {
    throw new ApiError(
      400,
      "Extensions:DownloadRoot needs an R2 bucket bound as ARTIFACTS and none is bound; bind one in wrangler.toml (or store the file with sourceKind=resource)",
    );
  }
  return { bucket: env.ARTIFACTS, root };
}

/**
 * Where a `local` artifact's bytes go: `<root>/<productCode>/<version>/<nonce>/<fileName>`. The nonce keeps a
 * replacement (delete + add) or a failed attempt from ever touching the bytes of a live artifact; the key is fixed at
 * upload, so a later PUT renaming the file or changing its platform moves nothing.
 */
export function artifactKey(root: string, target: DownloadTarget, fileName: string): string {
  return `${root}/${target.productCode}/${target.version}/${randomString(16, "0123456789abcdefghijklmnopqrstuvwxyz")}/${fileName}`;
}

/**
 * Bytes stored for a new artifact, not yet visible: `commit` publishes the row (with what the signing check found),
 * `discard` removes everything. `file` and `read` (the stored bytes, or a span of them) let commitStaged check a
 * blockmap and the signer before it is published.
 */
export interface StagedArtifact {
  digests: Digests;
  /** An `.exe`'s signer, read as the bytes were stored (signer-check.ts streamedIdentity); else read back. */
  streamed?: StreamedIdentity | undefined;
  /** The hashes the publisher declared with the file, if any: the upload is refused when one differs. */
  declared?: DeclaredHashes;
  file: SignedFile;
  read(span?: { start: number; end: number }): Promise<ReadableStream<Uint8Array> | undefined>;
  commit(found: Row): Promise<Row>;
  discard(): Promise<void>;
}

/** Who uploads, and the product's identities the upload is judged against (signer-check.ts). */
export interface UploadSigning {
  ctx: ServiceContext;
  keys: SigningKeys;
  /** An Administrator's `allowSignerChange=true`: a refused signer is accepted and recorded. */
  allowSignerChange: boolean;
}

/** Adds a hosted artifact (JSON form): size and hashes as its publisher gives them. */
export async function addHosted(
  ctx: ServiceContext,
  target: DownloadTarget,
  input: Record<string, unknown>,
): Promise<Row> {
  refuseUnsignedArchive({ kind: String(input["kind"]), signature: input["signature"] as string | null | undefined });
  const row = await insertRow(ctx.db, ReleaseDownload, {
    releaseId: target.releaseId,
    platform: input["platform"],
    kind: input["kind"],
    fileName: input["fileName"],
    sourceKind: "url",
    url: input["url"],
    size: input["size"],
    sha256: input["sha256"],
    sha512: input["sha512"],
    sha1: input["sha1"] ?? null,
    signature: input["signature"] ?? null,
  });
  return row;
}

/** Streams an uploaded file into R2 under Extensions:DownloadRoot; the row is written by `commit`. */
export async function stageLocal(
  ctx: ServiceContext,
  target: DownloadTarget,
  fields: UploadFields,
  source: AsyncIterable<Uint8Array>,
): Promise<StagedArtifact> {
  const { bucket, root } = artifactBucket(ctx.env, ctx.config);
  const key = artifactKey(root, target, fields.fileName);
  const streamed = streamedIdentity(fields);
  const digests = await storeStream(
    source,
    new R2Sink(bucket, key, { httpMetadata: { contentType: "application/octet-stream" } }),
    undefined,
    streamed?.feed,
  );
  const discard = () => bucket.delete(key);
  return {
    digests,
    streamed,
    declared: declaredHashes(fields),
    file: fields,
    read: (span) => readObjectSpan(bucket, key, span),
    discard,
    commit: (found) =>
      insertRow(ctx.db, ReleaseDownload, {
        ...artifactValues(target, fields, digests),
        ...found,
        sourceKind: "local",
        storageKey: key,
      }),
  };
}

/**
 * Streams an uploaded file into D1 chunks under a pending row, up to Extensions:MaxResourceArtifactBytes (413 past
 * it, as soon as the stream passes it); `commit` gives the row its platform, size and hashes in one UPDATE.
 */
export async function stageResource(
  ctx: ServiceContext,
  target: DownloadTarget,
  fields: UploadFields,
  source: AsyncIterable<Uint8Array>,
): Promise<StagedArtifact> {
  await removeStalePending(ctx.db);
  const pending = await insertRow(ctx.db, ReleaseDownload, {
    ...artifactValues(target, fields, { size: 0, sha256: "", sha512: "", sha1: "" }),
    platform: PENDING_PLATFORM + randomString(16),
    sourceKind: "resource",
  });
  const id = pending["id"] as number;
  const discard = () => removeRows(ctx.db, [id]);
  const max = ctx.config["Extensions:MaxResourceArtifactBytes"];
  const streamed = streamedIdentity(fields);
  let digests: Digests;
  try {
    digests = await storeStream(
      source,
      new ChunkSink(ctx.db, id, CHUNK_BYTES),
      {
        max,
        refuse: (limit) =>
          new ApiError(
            413,
            `The file is larger than Extensions:MaxResourceArtifactBytes (${limit} bytes), the limit of sourceKind=resource; upload it with sourceKind=local`,
          ),
      },
      streamed?.feed,
    );
  } catch (e) {
    await discard();
    throw e;
  }
  return {
    digests,
    streamed,
    declared: declaredHashes(fields),
    file: fields,
    read: (span) => readArtifact(ctx.env, ctx.db, { ...(pending as ReleaseDownloadRow), size: digests.size }, span),
    discard,
    commit: (found) =>
      updateRow(ctx.db, ReleaseDownload, id, {
        ...found,
        platform: fields.platform,
        size: digests.size,
        sha256: digests.sha256,
        sha512: digests.sha512,
        sha1: digests.sha1,
      }),
  };
}

function artifactValues(target: DownloadTarget, fields: UploadFields, digests: Digests): Row {
  return {
    releaseId: target.releaseId,
    platform: fields.platform,
    kind: fields.kind,
    fileName: fields.fileName,
    signature: fields.signature ?? null,
    size: digests.size,
    sha256: digests.sha256,
    sha512: digests.sha512,
    sha1: digests.sha1,
  };
}

/** The hashes a publisher may declare with an uploaded file (the forms of the record: hex, hex, base64). */
export type DeclaredHashes = Partial<Pick<Digests, "sha1" | "sha256" | "sha512">>;

/** The declared hashes among an upload's fields. */
export function declaredHashes(fields: DeclaredHashes): DeclaredHashes {
  const declared: DeclaredHashes = {};
  for (const name of ["sha1", "sha256", "sha512"] as const) if (fields[name]) declared[name] = fields[name];
  return declared;
}

/**
 * 400 when a hash the publisher declared differs from the one of the bytes the service stored: a file damaged on the
 * way, or not the one the publisher meant, is never published under its name. Hex is compared in lowercase.
 */
export function refuseDeclaredMismatch(digests: Digests, declared: DeclaredHashes | undefined): void {
  for (const name of ["sha1", "sha256", "sha512"] as const) {
    const expected = declared?.[name];
    if (expected === undefined) continue;
    const actual = digests[name];
    const same = name === "sha512" ? expected === actual : expected.toLowerCase() === actual;
    if (!same)
      throw new ApiError(
        400,
        `The file's ${name} is ${actual}, not the declared ${expected}: the upload is refused (nothing was stored)`,
      );
  }
}

/**
 * A PUT changing an artifact's kind to blockmap: its stored bytes must be a blockmap (400 naming kind otherwise), so a
 * relabel never opens a gated file. A hosted artifact's bytes are not the service's to read: it may carry the label,
 * but the download route never serves it without a token (blockmap.ts).
 */
export async function checkRelabel(ctx: ServiceContext, values: Row, existing: Row): Promise<void> {
  if (values["kind"] !== "blockmap" || existing["kind"] === "blockmap" || existing["sourceKind"] === "url") return;
  const row = existing as ReleaseDownloadRow;
  await requireBlockmap(() => readArtifact(ctx.env, ctx.db, row), row.size, row.fileName);
}

/**
 * Publishes staged bytes (or removes them when publishing fails, e.g. the platform and kind were taken meanwhile, or
 * bytes labelled blockmap are not one: blockmap.ts). The row's write bumps the product's release generation
 * (http/repository.ts).
 */
export async function commitStaged(
  staged: StagedArtifact,
  signing: UploadSigning,
  beforeCommit?: () => Promise<void>,
): Promise<Row> {
  let row: Row;
  let change: SignerChange | undefined;
  try {
    await beforeCommit?.();
    refuseDeclaredMismatch(staged.digests, staged.declared);
    const { file } = staged;
    if (file.kind === "blockmap") await requireBlockmap(() => staged.read(), staged.digests.size, file.fileName);
    const source = spanSource(staged.digests.size, (span) => staged.read(span));
    const found = await checkSigning(
      signing.ctx,
      signing.keys,
      file,
      source,
      signing.allowSignerChange,
      staged.streamed,
    );
    change = found.change;
    row = await staged.commit({
      signer: found.signer,
      teamId: found.teamId,
      signatureVerified: found.signatureVerified,
    });
  } catch (e) {
    await staged
      .discard()
      .catch((cleanup: unknown) => console.error("discarding an artifact that was not published", cleanup));
    throw e;
  }
  if (change) await recordSignerChange(signing.ctx, signing.keys.releaseId, change);
  return row;
}

/** Deletes rows with their chunks (chunks first: the foreign key would refuse the row otherwise without cascade). */
async function removeRows(db: Db, ids: number[]): Promise<void> {
  if (ids.length === 0) return;
  await db.batch([
    db.delete(artifactChunks).where(inArray(artifactChunks.downloadId, ids)),
    db.delete(releaseDownloads).where(inArray(releaseDownloads.id, ids)),
  ]);
}

/** Removes pending rows (and chunks) of uploads that never finished: a Worker stopped in the middle of one. */
async function removeStalePending(db: Db): Promise<void> {
  const cutoff = new Date(clock.now().getTime() - STALE_PENDING_MS).toISOString();
  const stale = await db
    .select({ id: releaseDownloads.id })
    .from(releaseDownloads)
    .where(and(like(releaseDownloads.platform, `${PENDING_PLATFORM}%`), lt(releaseDownloads.createdAt, cutoff)));
  await removeRows(
    db,
    stale.map((r) => r.id),
  );
}

/** After an artifact row is deleted (the repository bumped the product's release generation): its bytes go. */
export async function afterArtifactDeleted(ctx: ServiceContext, row: Row): Promise<void> {
  await deleteArtifactBytes(ctx.env, ctx.db, [row as ReleaseDownloadRow]);
}

/**
 * Re-hashes every uploaded artifact of a release from its stored bytes, one at a time (memory and subrequests stay
 * bounded); hosted artifacts are not checked. Returns the ids of artifacts whose bytes are missing, unreadable or
 * differ in size or hash from the row.
 */
export async function verifyRelease(
  env: Bindings,
  db: Db,
  productId: number,
  releaseId: number,
): Promise<{ drifted: number[]; checked: number }> {
  await releaseOf(db, productId, releaseId);
  const rows = await db
    .select()
    .from(releaseDownloads)
    .where(and(publishedDownloads(releaseId), inArray(releaseDownloads.sourceKind, [...UPLOAD_SOURCE_KINDS])))
    .orderBy(releaseDownloads.id);
  const drifted: number[] = [];
  for (const row of rows) {
    if (!(await matchesStoredBytes(env, db, row))) drifted.push(row.id);
  }
  return { drifted, checked: rows.length };
}

async function matchesStoredBytes(env: Bindings, db: Db, row: ReleaseDownloadRow): Promise<boolean> {
  try {
    const stream = await readArtifact(env, db, row);
    if (!stream) return false;
    const actual = await digestStream(stream);
    return (
      actual.size === row.size &&
      actual.sha256 === row.sha256 &&
      actual.sha512 === row.sha512 &&
      (row.sha1 === null || actual.sha1 === row.sha1)
    );
  } catch (e) {
    // A short or missing chunk in the middle fails the stream: that too is drift, not a failure of the check.
    console.warn(`verify: artifact ${row.id} could not be read`, e);
    return false;
  }
}
