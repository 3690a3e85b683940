/**
 * What the signing inspectors read (CONTRACT section 15): a file's bytes by ranges, never the whole file at once.
 * The service gives them an R2 object (ranged gets) or a D1-chunked artifact; the publish CLI a local file. The
 * modules of this folder are pure (Web APIs and the ASN.1 library only, no imports from the rest of src/), so the
 * publish CLI (tools/publish) compiles the same code and names the same signer the service will find.
 */

/** Random access to a file's bytes. */
export interface ByteSource {
  readonly size: number;
  /** Exactly `length` bytes from `offset`; the caller keeps `offset + length` within `size`. */
  read(offset: number, length: number): Promise<Uint8Array>;
  /** `length` bytes from `offset` (default: to the end) as a stream, for what is only hashed or inflated. */
  stream(offset?: number, length?: number): Promise<ReadableStream<Uint8Array>>;
}

/** A file that is not what its name says (a malformed PE, zip, Mach-O or signature): the service answers 400. */
export class MalformedFile extends Error {
  override readonly name = "MalformedFile";
}

/** The most bytes an inspector reads as one structure (a certificate table, a directory); larger is malformed. */
export const MAX_STRUCTURE_BYTES = 4 * 1024 * 1024;

/** A ByteSource over bytes in memory (tests, small files). */
export function bytesSource(bytes: Uint8Array): ByteSource {
  return {
    size: bytes.byteLength,
    read: async (offset, length) => bytes.subarray(offset, offset + length),
    stream: async (offset = 0, length = bytes.byteLength - offset) =>
      new ReadableStream<Uint8Array>({
        start(controller) {
          controller.enqueue(bytes.subarray(offset, offset + length));
          controller.close();
        },
      }),
  };
}

/** Reads `length` bytes at `offset`, or throws MalformedFile naming `what` when the file is too short for them. */
export async function readWithin(
  source: ByteSource,
  offset: number,
  length: number,
  what: string,
): Promise<Uint8Array> {
  if (offset < 0 || length < 0 || offset + length > source.size)
    throw new MalformedFile(`${what} lies outside the file (bytes ${offset}–${offset + length} of ${source.size})`);
  return source.read(offset, length);
}

/**
 * The bytes as Web Crypto and DecompressionStream take them in every type library: lib.dom (the publish CLI's build)
 * wants views over an ArrayBuffer, which every view the inspectors make is (none is over a SharedArrayBuffer).
 */
export function plain(bytes: Uint8Array): Uint8Array<ArrayBuffer> {
  return bytes as Uint8Array<ArrayBuffer>;
}
