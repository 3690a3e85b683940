/**
 * Resumable chunked uploads (DESIGN "Platform limits": a Worker takes at most 100 MB per request, installers are
 * often larger). An upload is an R2 multipart upload of the artifact's final key plus a little state in R2 itself,
 * so it survives between requests and isolates without a schema change:
 *   <root>/.uploads/<uploadId>/upload.json     what the artifact will be and the R2 multipart upload's id
 *   <root>/.uploads/<uploadId>/part-00001 …    one empty object per stored part; its etag and size as metadata
 * One object per part (rather than one list) lets parts arrive in parallel without overwriting each other's record.
 * Completing assembles the parts, hashes the object by streaming it once, and inserts the row like the POST does.
 */
import { refuseUnsignedArchive } from "./vendor-signatures";
import { randomString } from "../kernel/crypto";
import { nowIso } from "../kernel/clock";
import { type Row, insertRow } from "../http/repository";
import type { ServiceContext } from "../http/context";
import { ApiError } from "../kernel/errors";
import { type Digests, R2_MIN_PART_BYTES, digestStream } from "./artifact-writer";
import {
  type DeclaredHashes,
  type DownloadTarget,
  type UploadSigning,
  artifactBucket,
  artifactKey,
  commitStaged,
  declaredHashes,
  refuseTaken,
} from "./artifacts";
import { ReleaseDownload } from "./release-download";
import { streamedIdentity } from "./signer-check";
import { readObjectSpan } from "./storage";

/** R2 numbers parts 1 to 10,000. */
export const MAX_PART_NUMBER = 10_000;
const UPLOAD_ID = /^[0-9a-z]{32}$/;

interface UploadState {
  productId: number;
  releaseId: number;
  platform: string;
  kind: string;
  fileName: string;
  signature: string | null;
  /** The hashes the publisher declared when it started the upload: completing refuses bytes with other ones. */
  declared?: DeclaredHashes;
  /** The artifact's R2 key and the id of its R2 multipart upload. */
  key: string;
  r2UploadId: string;
  createdAt: string;
  /** The API key that started the upload: only it may send parts, complete or abort (absent in older states). */
  keyId?: number;
}

interface StoredPart {
  partNumber: number;
  etag: string;
  size: number;
}

interface OpenUpload {
  bucket: R2Bucket;
  prefix: string;
  state: UploadState;
}

const prefixOf = (root: string, uploadId: string) => `${root}/.uploads/${uploadId}/`;
const partKey = (prefix: string, partNumber: number) => `${prefix}part-${String(partNumber).padStart(5, "0")}`;

function unknownUpload(uploadId: string): ApiError {
  return new ApiError(400, `Upload ${uploadId} not found`);
}

/** R2's own refusals (they end in a five-digit code) are the client's to fix; anything else is a failure. */
function r2Refusal(e: unknown, what: string): unknown {
  const message = e instanceof Error ? e.message : String(e);
  return /\(\d{5}\)\s*$/.test(message) ? new ApiError(400, `${what}: ${message}`) : e;
}

/** Starts an upload of the artifact `input` names; returns its id. */
export async function createUpload(
  ctx: ServiceContext,
  target: DownloadTarget,
  input: { platform: string; kind: string; fileName: string; signature?: string | null | undefined } & DeclaredHashes,
): Promise<string> {
  refuseUnsignedArchive(input);
  const { bucket, root } = artifactBucket(ctx.env, ctx.config);
  await refuseTaken(ctx.db, target.releaseId, input.platform, input.kind);
  const uploadId = randomString(32, "0123456789abcdefghijklmnopqrstuvwxyz");
  const key = artifactKey(root, target, input.fileName);
  const multipart = await bucket.createMultipartUpload(key, {
    httpMetadata: { contentType: "application/octet-stream" },
  });
  const state: UploadState = {
    productId: target.productId,
    releaseId: target.releaseId,
    platform: input.platform,
    kind: input.kind,
    fileName: input.fileName,
    signature: input.signature ?? null,
    declared: declaredHashes(input),
    key,
    r2UploadId: multipart.uploadId,
    createdAt: nowIso(),
    ...(ctx.principal?.keyId !== undefined ? { keyId: ctx.principal.keyId } : {}),
  };
  try {
    await bucket.put(`${prefixOf(root, uploadId)}upload.json`, JSON.stringify(state), {
      httpMetadata: { contentType: "application/json" },
    });
  } catch (e) {
    await multipart.abort().catch(() => undefined);
    throw e;
  }
  return uploadId;
}

/**
 * The upload's state: 400 when it does not exist or belongs to another release, 403 when another API key started it
 * (an upload id in a log or a proxy must not let another key, even an administrator's, write or finish the artifact).
 */
async function openUpload(
  ctx: ServiceContext,
  productId: number,
  releaseId: number,
  uploadId: string,
): Promise<OpenUpload> {
  const { bucket, root } = artifactBucket(ctx.env, ctx.config);
  if (!UPLOAD_ID.test(uploadId)) throw unknownUpload(uploadId);
  const prefix = prefixOf(root, uploadId);
  const object = await bucket.get(`${prefix}upload.json`);
  if (!object) throw unknownUpload(uploadId);
  const state = await object.json<UploadState>();
  if (state.productId !== productId || state.releaseId !== releaseId) throw unknownUpload(uploadId);
  if (state.keyId !== undefined && state.keyId !== ctx.principal?.keyId)
    throw new ApiError(403, `Upload ${uploadId} belongs to the API key that started it`);
  return { bucket, prefix, state };
}

/**
 * Streams one part (the request body, of known length) into the R2 multipart upload and records its etag. Sending
 * a part number again replaces that part, so a failed part is simply sent again.
 */
export async function uploadPart(
  ctx: ServiceContext,
  ids: { productId: number; releaseId: number; uploadId: string },
  partNumber: number,
  body: ReadableStream<Uint8Array>,
  size: number,
): Promise<StoredPart> {
  const { bucket, prefix, state } = await openUpload(ctx, ids.productId, ids.releaseId, ids.uploadId);
  let uploaded: R2UploadedPart;
  try {
    uploaded = await bucket.resumeMultipartUpload(state.key, state.r2UploadId).uploadPart(partNumber, body);
  } catch (e) {
    throw r2Refusal(e, `Part ${partNumber} of upload ${ids.uploadId} was not stored`);
  }
  await bucket.put(partKey(prefix, partNumber), null, { customMetadata: { etag: uploaded.etag, size: String(size) } });
  return { partNumber, etag: uploaded.etag, size };
}

/** Every recorded part, by number. */
async function storedParts(bucket: R2Bucket, prefix: string): Promise<StoredPart[]> {
  const parts: StoredPart[] = [];
  let cursor: string | undefined;
  do {
    const page = await bucket.list({
      prefix: `${prefix}part-`,
      include: ["customMetadata"],
      ...(cursor ? { cursor } : {}),
    });
    for (const object of page.objects) {
      const meta = object.customMetadata ?? {};
      parts.push({
        partNumber: Number(object.key.slice(-5)),
        etag: meta["etag"] ?? "",
        size: Number(meta["size"] ?? 0),
      });
    }
    cursor = page.truncated ? page.cursor : undefined;
  } while (cursor);
  return parts.sort((a, b) => a.partNumber - b.partNumber);
}

/** Why these parts cannot form one object (R2: every part but the last the same size, at least 5 MiB), or undefined. */
export function partsProblem(parts: readonly StoredPart[]): string | undefined {
  if (parts.length === 0) return "The upload has no parts yet";
  const missing = parts.findIndex((p, i) => p.partNumber !== i + 1);
  if (missing !== -1) return `Part ${missing + 1} is missing; parts are numbered from 1 without gaps`;
  const size = parts[0]!.size;
  for (const part of parts.slice(0, -1)) {
    if (part.size < R2_MIN_PART_BYTES)
      return `Part ${part.partNumber} has ${part.size} bytes; every part but the last needs at least ${R2_MIN_PART_BYTES}`;
    if (part.size !== size)
      return `Part ${part.partNumber} has ${part.size} bytes and part 1 ${size}; every part but the last must have the same size`;
  }
  const last = parts[parts.length - 1]!;
  if (parts.length > 1 && last.size > size)
    return `The last part (${last.partNumber}) is larger than the others (${last.size} > ${size} bytes)`;
  return undefined;
}

/** Deletes the upload's state objects. */
async function forget(bucket: R2Bucket, prefix: string): Promise<void> {
  let cursor: string | undefined;
  do {
    const page = await bucket.list({ prefix, ...(cursor ? { cursor } : {}) });
    if (page.objects.length > 0) await bucket.delete(page.objects.map((o) => o.key));
    cursor = page.truncated ? page.cursor : undefined;
  } while (cursor);
}

/**
 * Completes an upload: checks the parts (400 while they cannot form the file; the upload stays open to fix them),
 * assembles them, hashes the object by streaming it once and inserts the artifact row. Once R2 has assembled the
 * object the upload is used up: on a later failure the object and the state go.
 */
export async function completeUpload(
  ctx: ServiceContext,
  target: DownloadTarget,
  uploadId: string,
  signing: UploadSigning,
): Promise<Row> {
  const { bucket, prefix, state } = await openUpload(ctx, target.productId, target.releaseId, uploadId);
  const parts = await storedParts(bucket, prefix);
  const problem = partsProblem(parts);
  if (problem) throw new ApiError(400, `Upload ${uploadId} cannot be completed: ${problem}`);
  await refuseTaken(ctx.db, target.releaseId, state.platform, state.kind);
  try {
    await bucket
      .resumeMultipartUpload(state.key, state.r2UploadId)
      .complete(parts.map(({ partNumber, etag }) => ({ partNumber, etag })));
  } catch (e) {
    throw r2Refusal(e, `Upload ${uploadId} cannot be completed`);
  }
  const discard = async () => {
    await bucket.delete(state.key);
    await forget(bucket, prefix);
  };
  let digests: Digests;
  const streamed = streamedIdentity(state);
  try {
    const object = await bucket.get(state.key);
    if (!object) throw new Error(`the assembled object ${state.key} is missing`);
    digests = await digestStream(object.body, streamed?.feed);
  } catch (e) {
    await discard().catch(() => undefined);
    throw e;
  }
  const row = await commitStaged(
    {
      digests,
      streamed,
      declared: state.declared,
      file: state,
      read: (span) => readObjectSpan(bucket, state.key, span),
      discard,
      commit: (found) =>
        insertRow(ctx.db, ReleaseDownload, {
          ...found,
          releaseId: target.releaseId,
          platform: state.platform,
          kind: state.kind,
          fileName: state.fileName,
          signature: state.signature,
          sourceKind: "local",
          storageKey: state.key,
          ...digests,
        }),
    },
    signing,
  );
  await forget(bucket, prefix).catch((e: unknown) => console.error(`upload ${uploadId}: state left behind`, e));
  return row;
}

/** Aborts an upload: the R2 multipart upload and its stored parts, and the state. */
export async function abortUpload(
  ctx: ServiceContext,
  ids: { productId: number; releaseId: number; uploadId: string },
): Promise<void> {
  const { bucket, prefix, state } = await openUpload(ctx, ids.productId, ids.releaseId, ids.uploadId);
  // An upload R2 already dropped (expired after 7 days) has nothing left to abort.
  await bucket
    .resumeMultipartUpload(state.key, state.r2UploadId)
    .abort()
    .catch(() => undefined);
  await forget(bucket, prefix);
}
