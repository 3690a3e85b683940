/**
 * A zip archive read by ranges (CONTRACT section 15): the `.nupkg` of Squirrel/Velopack and the `.zip` of a macOS
 * app hold the executables whose signer a release must keep. Only the End Of Central Directory (and the Zip64 one),
 * the central directory and the entries asked for are read, so an archive of any size costs the memory of its
 * directory. An entry's data comes as a stream: stored bytes as they are, deflated ones through
 * DecompressionStream("deflate-raw"); any other method, a truncated record or a directory pointing past the end is
 * MalformedFile.
 */
import { type ByteSource, MAX_STRUCTURE_BYTES, MalformedFile, readWithin } from "./source.ts";

/** One file of the archive, as its central directory describes it. */
export interface ZipEntry {
  name: string;
  /** 0 stored, 8 deflated; anything else cannot be read here. */
  method: number;
  compressedSize: number;
  size: number;
  localHeaderOffset: number;
}

const EOCD_SIGNATURE = 0x06054b50;
const ZIP64_LOCATOR_SIGNATURE = 0x07064b50;
const ZIP64_EOCD_SIGNATURE = 0x06064b50;
const CENTRAL_SIGNATURE = 0x02014b50;
const LOCAL_SIGNATURE = 0x04034b50;
const EOCD_SIZE = 22;
const ZIP64_LOCATOR_SIZE = 20;
const ZIP64_EOCD_SIZE = 56;
const CENTRAL_HEADER_SIZE = 46;
const LOCAL_HEADER_SIZE = 30;
/** The EOCD ends the file, after a comment of at most 65535 bytes. */
const EOCD_SEARCH = EOCD_SIZE + 0xffff;

function view(bytes: Uint8Array): DataView {
  return new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/** A 64-bit little-endian field as a number; past 2^53 the archive cannot be real. */
function u64(data: DataView, offset: number, what: string): number {
  const value = data.getBigUint64(offset, true);
  if (value > BigInt(Number.MAX_SAFE_INTEGER)) throw new MalformedFile(`zip ${what} is out of range`);
  return Number(value);
}

interface Directory {
  offset: number;
  size: number;
  count: number;
}

/** Finds the central directory through the EOCD record, and the Zip64 one when a field is saturated. */
async function findDirectory(source: ByteSource): Promise<Directory> {
  if (source.size < EOCD_SIZE) throw new MalformedFile("not a zip archive: no end of central directory record");
  const tailStart = Math.max(0, source.size - EOCD_SEARCH);
  const tail = await source.read(tailStart, source.size - tailStart);
  const data = view(tail);
  let at = -1;
  for (let i = tail.byteLength - EOCD_SIZE; i >= 0; i--) {
    if (data.getUint32(i, true) === EOCD_SIGNATURE && i + EOCD_SIZE + data.getUint16(i + 20, true) <= tail.byteLength) {
      at = i;
      break;
    }
  }
  if (at < 0) throw new MalformedFile("not a zip archive: no end of central directory record");
  const directory: Directory = {
    count: data.getUint16(at + 10, true),
    size: data.getUint32(at + 12, true),
    offset: data.getUint32(at + 16, true),
  };
  const eocdOffset = tailStart + at;
  const saturated = directory.count === 0xffff || directory.size === 0xffffffff || directory.offset === 0xffffffff;
  if (eocdOffset >= ZIP64_LOCATOR_SIZE) {
    const locator = view(await source.read(eocdOffset - ZIP64_LOCATOR_SIZE, ZIP64_LOCATOR_SIZE));
    if (locator.getUint32(0, true) === ZIP64_LOCATOR_SIGNATURE) {
      const zip64Offset = u64(locator, 8, "Zip64 end of central directory offset");
      const record = view(await readWithin(source, zip64Offset, ZIP64_EOCD_SIZE, "the Zip64 end of central directory"));
      if (record.getUint32(0, true) !== ZIP64_EOCD_SIGNATURE)
        throw new MalformedFile("zip archive: the Zip64 locator points at no Zip64 end of central directory record");
      return {
        count: u64(record, 32, "entry count"),
        size: u64(record, 40, "central directory size"),
        offset: u64(record, 48, "central directory offset"),
      };
    }
  }
  if (saturated) throw new MalformedFile("zip archive: a Zip64 archive without its Zip64 end of central directory");
  return directory;
}

/** Applies the Zip64 extra field (id 0x0001) to the saturated sizes and offset of a central directory entry. */
function applyZip64(entry: ZipEntry, extra: DataView): void {
  let at = 0;
  while (at + 4 <= extra.byteLength) {
    const id = extra.getUint16(at, true);
    const length = extra.getUint16(at + 2, true);
    const end = at + 4 + length;
    if (end > extra.byteLength) break;
    if (id === 0x0001) {
      let field = at + 4;
      const next = (what: string): number => {
        if (field + 8 > end)
          throw new MalformedFile(`zip entry "${entry.name}": its Zip64 extra field lacks the ${what}`);
        const value = u64(extra, field, what);
        field += 8;
        return value;
      };
      if (entry.size === 0xffffffff) entry.size = next("size");
      if (entry.compressedSize === 0xffffffff) entry.compressedSize = next("compressed size");
      if (entry.localHeaderOffset === 0xffffffff) entry.localHeaderOffset = next("local header offset");
      return;
    }
    at = end;
  }
}

/** The archive's entries, in central directory order; throws MalformedFile when the archive is not one. */
export async function zipEntries(source: ByteSource): Promise<ZipEntry[]> {
  const directory = await findDirectory(source);
  if (directory.size > MAX_STRUCTURE_BYTES)
    throw new MalformedFile(`zip archive: its central directory of ${directory.size} bytes is larger than allowed`);
  const bytes = await readWithin(source, directory.offset, directory.size, "the zip central directory");
  const data = view(bytes);
  const names = new TextDecoder("utf-8");
  const entries: ZipEntry[] = [];
  let at = 0;
  for (let i = 0; i < directory.count; i++) {
    if (at + CENTRAL_HEADER_SIZE > bytes.byteLength || data.getUint32(at, true) !== CENTRAL_SIGNATURE)
      throw new MalformedFile(`zip archive: central directory entry ${i} is truncated or has no signature`);
    const nameLength = data.getUint16(at + 28, true);
    const extraLength = data.getUint16(at + 30, true);
    const commentLength = data.getUint16(at + 32, true);
    const end = at + CENTRAL_HEADER_SIZE + nameLength + extraLength + commentLength;
    if (end > bytes.byteLength) throw new MalformedFile(`zip archive: central directory entry ${i} is truncated`);
    const nameStart = at + CENTRAL_HEADER_SIZE;
    const name = names.decode(bytes.subarray(nameStart, nameStart + nameLength));
    if (data.getUint16(at + 8, true) & 0x0001) throw new MalformedFile(`zip entry "${name}" is encrypted`);
    const entry: ZipEntry = {
      name,
      method: data.getUint16(at + 10, true),
      compressedSize: data.getUint32(at + 20, true),
      size: data.getUint32(at + 24, true),
      localHeaderOffset: data.getUint32(at + 42, true),
    };
    applyZip64(entry, view(bytes.subarray(nameStart + nameLength, nameStart + nameLength + extraLength)));
    if (entry.localHeaderOffset + LOCAL_HEADER_SIZE + entry.compressedSize > source.size)
      throw new MalformedFile(`zip entry "${entry.name}" lies outside the archive`);
    entries.push(entry);
    at = end;
  }
  return entries;
}

/** An entry's uncompressed bytes as a stream: stored as they are, deflated inflated; other methods are refused. */
export async function entryStream(source: ByteSource, entry: ZipEntry): Promise<ReadableStream<Uint8Array>> {
  if (entry.method !== 0 && entry.method !== 8)
    throw new MalformedFile(
      `zip entry "${entry.name}" uses compression method ${entry.method} (only stored and deflate)`,
    );
  const header = view(
    await readWithin(
      source,
      entry.localHeaderOffset,
      LOCAL_HEADER_SIZE,
      `the local header of zip entry "${entry.name}"`,
    ),
  );
  if (header.getUint32(0, true) !== LOCAL_SIGNATURE)
    throw new MalformedFile(`zip entry "${entry.name}": no local file header at offset ${entry.localHeaderOffset}`);
  const dataOffset =
    entry.localHeaderOffset + LOCAL_HEADER_SIZE + header.getUint16(26, true) + header.getUint16(28, true);
  if (dataOffset + entry.compressedSize > source.size)
    throw new MalformedFile(`zip entry "${entry.name}": its data lies outside the archive`);
  const raw = await source.stream(dataOffset, entry.compressedSize);
  if (entry.method === 0) return raw;
  return inflated(
    (raw as ReadableStream<Uint8Array<ArrayBuffer>>).pipeThrough(new DecompressionStream("deflate-raw")),
    entry.name,
  );
}

/** Inflated bytes, with a corrupt deflate stream reported as MalformedFile rather than the runtime's TypeError. */
function inflated(stream: ReadableStream<Uint8Array>, name: string): ReadableStream<Uint8Array> {
  const reader = stream.getReader();
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const { done, value } = await reader.read();
        if (done) controller.close();
        else controller.enqueue(value);
      } catch (e) {
        controller.error(
          e instanceof MalformedFile
            ? e
            : new MalformedFile(`zip entry "${name}" does not inflate: ${e instanceof Error ? e.message : String(e)}`),
        );
      }
    },
    cancel: (reason) => reader.cancel(reason),
  });
}
