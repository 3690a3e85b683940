/**
 * Storing artifact bytes while they stream in: each piece is counted, fed to a SHA-256, a SHA-512 and a SHA-1
 * `crypto.DigestStream` and cut into fixed-size blocks for storage (R2 multipart parts, or 1 MiB D1 chunks), so
 * size and hashes are known when the last byte is stored and nothing larger than one block is ever held (DESIGN,
 * "Platform limits": 128 MB per isolate). Every sink can discard what it stored, so a failed upload leaves nothing.
 */
import { sql } from "drizzle-orm";
import { toBase64, toHex } from "../kernel/crypto";
import type { Db } from "../db/client";
import { artifactChunks } from "../db/schema";
import { ApiError } from "../kernel/errors";

/**
 * Size and digests of stored bytes, as an artifact row holds them: SHA-256 lowercase hex, SHA-512 base64, SHA-1
 * lowercase hex (Squirrel.Windows and Velopack name packages by it).
 */
export interface Digests {
  size: number;
  sha256: string;
  sha512: string;
  sha1: string;
}

/** Part size of R2 multipart uploads made from one request: above R2's 5 MiB minimum, few parts per 100 MB. */
export const R2_PART_BYTES = 8 * 1024 * 1024;
/** R2's smallest part but the last. */
export const R2_MIN_PART_BYTES = 5 * 1024 * 1024;

/**
 * Size, SHA-256, SHA-512 and SHA-1 of bytes as they pass. Writing each piece to both digest streams directly (rather than
 * `tee()`-ing the source) keeps one pace for storage and hashing, so neither branch queues bytes for the other.
 */
export class Hasher {
  private readonly sha256 = new crypto.DigestStream("SHA-256");
  private readonly sha512 = new crypto.DigestStream("SHA-512");
  private readonly sha1 = new crypto.DigestStream("SHA-1");
  private readonly writers = [this.sha256.getWriter(), this.sha512.getWriter(), this.sha1.getWriter()] as const;
  size = 0;

  async update(bytes: Uint8Array): Promise<void> {
    this.size += bytes.byteLength;
    await Promise.all(this.writers.map((w) => w.write(bytes)));
  }

  async digest(): Promise<Digests> {
    await Promise.all(this.writers.map((w) => w.close()));
    const [sha256, sha512, sha1] = await Promise.all([this.sha256.digest, this.sha512.digest, this.sha1.digest]);
    return { size: this.size, sha256: toHex(sha256), sha512: toBase64(sha512), sha1: toHex(sha1) };
  }
}

/** Sees each piece of a file as it passes (the signing check reads an `.exe`'s signer in the same pass). */
export type Observer = (piece: Uint8Array) => Promise<void>;

/** Hashes a whole stream (the verify route and completed resumable uploads); `observe` sees each piece too. */
export async function digestStream(stream: ReadableStream<Uint8Array>, observe?: Observer): Promise<Digests> {
  const hasher = new Hasher();
  for await (const piece of stream) await Promise.all([hasher.update(piece), observe?.(piece)]);
  return hasher.digest();
}

/** Cuts a byte stream into blocks of one size; the last block holds the rest. */
class Blocks {
  private block: Uint8Array | undefined;
  private filled = 0;

  constructor(private readonly size: number) {}

  /** The blocks `bytes` completes. */
  *push(bytes: Uint8Array): Generator<Uint8Array> {
    let at = 0;
    while (at < bytes.length) {
      this.block ??= new Uint8Array(this.size);
      const n = Math.min(this.size - this.filled, bytes.length - at);
      this.block.set(bytes.subarray(at, at + n), this.filled);
      this.filled += n;
      at += n;
      if (this.filled === this.size) {
        yield this.block;
        this.block = undefined;
        this.filled = 0;
      }
    }
  }

  /** The incomplete last block, if any. */
  rest(): Uint8Array | undefined {
    return this.block?.subarray(0, this.filled);
  }
}

/** Where blocks go. All blocks but the last are full. */
export interface BlockSink {
  readonly blockSize: number;
  write(block: Uint8Array): Promise<void>;
  /** Called once after the last block. */
  finish(): Promise<void>;
  /** Removes whatever was stored; safe to call at any point, also after finish. */
  discard(): Promise<void>;
}

/** Refuses a stream that grows past a limit, as soon as it does. */
export interface SizeLimit {
  max: number;
  refuse: (max: number) => ApiError;
}

/**
 * Stores `source` through `sink`, hashing on the way. Empty files are refused (an artifact has a size > 0); on any
 * failure the sink's bytes are discarded before the error goes on.
 */
export async function storeStream(
  source: AsyncIterable<Uint8Array>,
  sink: BlockSink,
  limit?: SizeLimit,
  observe?: Observer,
): Promise<Digests> {
  const hasher = new Hasher();
  const blocks = new Blocks(sink.blockSize);
  try {
    for await (const piece of source) {
      if (limit && hasher.size + piece.byteLength > limit.max) throw limit.refuse(limit.max);
      await Promise.all([hasher.update(piece), observe?.(piece)]);
      for (const block of blocks.push(piece)) await sink.write(block);
    }
    if (hasher.size === 0) throw new ApiError(400, "The file is empty; an artifact needs at least one byte");
    const rest = blocks.rest();
    if (rest) await sink.write(rest);
    await sink.finish();
    return await hasher.digest();
  } catch (e) {
    await sink.discard().catch((cleanup: unknown) => console.error("discarding a failed upload", cleanup));
    throw e;
  }
}

/**
 * One R2 object from blocks of unknown total length. R2 needs a known length per write, so blocks are written as
 * the parts of a multipart upload; one block is held back until the next arrives, so a file of one block becomes a
 * plain `put` and every part but the last has the same size (R2's rule).
 */
export class R2Sink implements BlockSink {
  readonly blockSize = R2_PART_BYTES;
  private held: Uint8Array | undefined;
  private upload: R2MultipartUpload | undefined;
  private readonly parts: R2UploadedPart[] = [];

  constructor(
    private readonly bucket: R2Bucket,
    private readonly key: string,
    private readonly options: R2PutOptions = {},
  ) {}

  async write(block: Uint8Array): Promise<void> {
    if (this.held) await this.uploadPart(this.held);
    // Blocks come from a buffer the next push no longer writes to, so holding the reference is enough.
    this.held = block;
  }

  private async uploadPart(block: Uint8Array): Promise<void> {
    this.upload ??= await this.bucket.createMultipartUpload(this.key, this.options);
    this.parts.push(await this.upload.uploadPart(this.parts.length + 1, block));
  }

  async finish(): Promise<void> {
    const last = this.held ?? new Uint8Array(0);
    this.held = undefined;
    if (!this.upload) {
      await this.bucket.put(this.key, last, this.options);
      return;
    }
    if (last.length > 0) await this.uploadPart(last);
    await this.upload.complete(this.parts);
  }

  async discard(): Promise<void> {
    this.held = undefined;
    if (this.upload) await this.upload.abort().catch(() => undefined);
    await this.bucket.delete(this.key);
  }
}

/** The 1 MiB chunks of a `resource` artifact, numbered from 0, under a row that already exists (foreign key). */
export class ChunkSink implements BlockSink {
  private seq = 0;

  constructor(
    private readonly db: Db,
    private readonly downloadId: number,
    readonly blockSize: number,
  ) {}

  async write(block: Uint8Array): Promise<void> {
    // Bound as a parameter, the bytes go to D1 as a BLOB (drizzle's buffer column would need Node's Buffer).
    await this.db.insert(artifactChunks).values({ downloadId: this.downloadId, seq: this.seq++, data: sql`${block}` });
  }

  async finish(): Promise<void> {}

  async discard(): Promise<void> {
    await this.db.delete(artifactChunks).where(sql`${artifactChunks.downloadId} = ${this.downloadId}`);
  }
}
