/**
 * The Authenticode signer of a Windows executable (CONTRACT section 15): electron-updater refuses an update whose
 * publisher name changed, so the service reads the signer of every `.exe` it is given. A PE file keeps its
 * signature in the certificate table that data directory 4 (IMAGE_DIRECTORY_ENTRY_SECURITY) points at: one
 * WIN_CERTIFICATE (revision 0x0200, type PKCS_SIGNED_DATA) holding the PKCS#7 that authenticode.ts reads.
 * The signature names a digest of the file, which is recomputed here as osslsigncode and Windows do: every byte
 * before the certificate table (headers, sections, any overlay and the signer's padding to 8 bytes) except the
 * optional header's CheckSum (4 bytes) and the security directory entry (8 bytes). A digest that differs means the
 * signature is over other bytes: SignatureMismatch. Only the headers and the certificate table are read as
 * structures; the rest is hashed as it streams past, so memory never grows with the file.
 */
import {
  type Authenticode,
  type DigestName,
  type Hasher,
  hasher,
  readAuthenticode,
  SignatureMismatch,
} from "./authenticode.ts";
import { type ByteSource, MAX_STRUCTURE_BYTES, MalformedFile, readWithin } from "./source.ts";

/** The Authenticode signer of a Windows file. */
export interface WindowsSignature {
  /** The signer certificate's subject common name; null when the file is not signed. */
  signer: string | null;
  /** The signer's full subject as Windows prints it ("CN=…, O=…, C=…"). */
  subject?: string;
}

/** Where the parts of a PE file that the image digest skips or reads lie. */
interface PeLayout {
  checksumOffset: number;
  securityEntryOffset: number;
  /** The certificate table (file offset and size); null when the file carries none. */
  table: { offset: number; size: number } | null;
}

const WIN_CERT_REVISION_2 = 0x0200;
const WIN_CERT_TYPE_PKCS_SIGNED_DATA = 0x0002;
/** The digests an executable read forward-only is hashed with, before its signature says which one it used. */
const STREAM_DIGESTS: DigestName[] = ["SHA-256", "SHA-1"];

function view(bytes: Uint8Array): DataView {
  return new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/**
 * Reads the DOS, COFF and optional headers through `read` (offset, length) and finds the certificate table.
 * `size` is the file's length when known (a stream of unknown length is checked as it ends).
 */
async function peLayout(
  read: (offset: number, length: number, part: string) => Promise<Uint8Array>,
  size: number | undefined,
  what: string,
): Promise<PeLayout> {
  const dos = view(await read(0, 64, "the DOS header"));
  if (dos.getUint16(0, true) !== 0x5a4d) throw new MalformedFile(`${what} is not a PE file: no MZ header`);
  const peOffset = dos.getUint32(0x3c, true);
  if (peOffset > MAX_STRUCTURE_BYTES)
    throw new MalformedFile(`${what} is not a PE file: its PE header offset ${peOffset} is out of range`);
  const coff = view(await read(peOffset, 24, "the PE header"));
  if (coff.getUint32(0, true) !== 0x00004550)
    throw new MalformedFile(`${what} is not a PE file: no PE signature at offset ${peOffset}`);
  const optionalSize = coff.getUint16(20, true);
  const optionalOffset = peOffset + 24;
  if (optionalSize < 2) throw new MalformedFile(`${what} is not a PE file: it has no optional header`);
  const magic = view(await read(optionalOffset, 2, "the optional header")).getUint16(0, true);
  if (magic !== 0x10b && magic !== 0x20b)
    throw new MalformedFile(`${what} is not a PE file: unknown optional header magic 0x${magic.toString(16)}`);
  const plus = magic === 0x20b ? 16 : 0;
  const checksumOffset = optionalOffset + 64;
  const securityEntryOffset = optionalOffset + 128 + plus;
  const layout: PeLayout = { checksumOffset, securityEntryOffset, table: null };
  // A header too short to hold data directory 4 has no security directory: the file is unsigned.
  if (optionalSize < 128 + plus + 8) return layout;
  const tail = view(await read(optionalOffset + 92 + plus, 36 + 8, "the data directories"));
  if (tail.getUint32(0, true) < 5) return layout;
  const offset = tail.getUint32(36, true);
  const length = tail.getUint32(40, true);
  if (length === 0) return layout;
  if (offset < securityEntryOffset + 8)
    throw new MalformedFile(`${what}: its certificate table (offset ${offset}) overlaps the PE headers`);
  if (size !== undefined && offset + length > size)
    throw new MalformedFile(
      `${what}: its certificate table lies outside the file (bytes ${offset}–${offset + length} of ${size})`,
    );
  if (length < 8 || length > MAX_STRUCTURE_BYTES)
    throw new MalformedFile(`${what}: its certificate table of ${length} bytes is not a plausible size`);
  layout.table = { offset, size: length };
  return layout;
}

/** The PKCS#7 of the certificate table's first WIN_CERTIFICATE (the primary signature). */
function pkcs7Of(table: Uint8Array, what: string): Uint8Array {
  const header = view(table);
  const length = header.getUint32(0, true);
  const revision = header.getUint16(4, true);
  const type = header.getUint16(6, true);
  if (length < 8 || length > table.byteLength)
    throw new MalformedFile(`${what}: its WIN_CERTIFICATE length ${length} does not fit its certificate table`);
  if (revision !== WIN_CERT_REVISION_2 || type !== WIN_CERT_TYPE_PKCS_SIGNED_DATA)
    throw new MalformedFile(
      `${what}: its certificate table holds no Authenticode signature (WIN_CERTIFICATE revision 0x${revision.toString(16)}, type ${type})`,
    );
  return table.subarray(8, length);
}

/**
 * Hashes the part of `chunk` (at file offset `position`) that the image digest covers: before the certificate
 * table, less the CheckSum and the security directory entry.
 */
async function hashCovered(hashers: Hasher[], layout: PeLayout, chunk: Uint8Array, position: number): Promise<void> {
  const end = Math.min(position + chunk.byteLength, layout.table?.offset ?? 0);
  const skips: [number, number][] = [
    [layout.checksumOffset, layout.checksumOffset + 4],
    [layout.securityEntryOffset, layout.securityEntryOffset + 8],
    [end, end],
  ];
  let cursor = position;
  for (const [from, to] of skips) {
    const stop = Math.min(end, from);
    if (stop > cursor) {
      const part = chunk.subarray(cursor - position, stop - position);
      for (const h of hashers) await h.update(part);
    }
    cursor = Math.max(cursor, to);
    if (cursor >= end) return;
  }
}

/** The Authenticode signature of the certificate table, its faults prefixed with the file's name. */
async function authenticodeOf(pkcs7: Uint8Array, what: string): Promise<Authenticode> {
  try {
    return await readAuthenticode(pkcs7);
  } catch (e) {
    if (e instanceof MalformedFile) throw new MalformedFile(`${what}: ${e.message}`);
    if (e instanceof SignatureMismatch) throw new SignatureMismatch(`${what}: ${e.message}`);
    throw e;
  }
}

/** Compares the digest the signature names with the one computed, and returns the signer. */
async function verified(signature: Authenticode, hashers: Hasher[], what: string): Promise<WindowsSignature> {
  const computed = hashers.find((h) => h.algorithm === signature.digestAlgorithm);
  if (!computed)
    throw new MalformedFile(
      `${what}: its Authenticode file digest is ${signature.digestAlgorithm}; inside a package only SHA-256 and SHA-1 are checked`,
    );
  const digest = await computed.digest();
  if (digest.byteLength !== signature.digest.byteLength || digest.some((b, i) => b !== signature.digest[i]))
    throw new SignatureMismatch(
      `${what}: its Authenticode digest does not match its bytes (the file was changed after it was signed)`,
    );
  return { signer: signature.signer, subject: signature.subject };
}

/**
 * The Authenticode signer of a PE file read by ranges: the headers and the certificate table by read(), the rest
 * hashed through stream(). `what` names the file in messages. Throws MalformedFile when it is not a PE file or its
 * signature is not PKCS#7, SignatureMismatch when the signature is not over these bytes.
 */
export async function inspectPe(source: ByteSource, what = "the executable"): Promise<WindowsSignature> {
  const read = (offset: number, length: number, part: string) =>
    readWithin(source, offset, length, `${what}: ${part}`).catch((e: unknown) => {
      throw e instanceof MalformedFile ? new MalformedFile(`${what} is not a PE file: it ends inside ${part}`) : e;
    });
  const layout = await peLayout(read, source.size, what);
  const table = layout.table;
  if (!table) return { signer: null };
  if (table.offset + table.size !== source.size)
    throw new SignatureMismatch(
      `${what}: ${source.size - table.offset - table.size} bytes follow its certificate table, which no signature covers`,
    );
  const pkcs7 = pkcs7Of(await source.read(table.offset, table.size), what);
  const signature = await authenticodeOf(pkcs7, what);
  const digest = hasher(signature.digestAlgorithm);
  const reader = (await source.stream(0, table.offset)).getReader();
  let position = 0;
  for (let next = await reader.read(); !next.done; next = await reader.read()) {
    await hashCovered([digest], layout, next.value, position);
    position += next.value.byteLength;
  }
  if (position !== table.offset)
    throw new MalformedFile(`${what}: the file ended after ${position} of ${table.offset} bytes`);
  return verified(signature, [digest], what);
}

/** A forward-only reader that keeps the bytes it has read (the headers) until it is told to stream on. */
class Forward {
  private head: Uint8Array = new Uint8Array(0);
  private readonly reader: ReadableStreamDefaultReader<Uint8Array>;
  private readonly what: string;

  constructor(reader: ReadableStreamDefaultReader<Uint8Array>, what: string) {
    this.reader = reader;
    this.what = what;
  }

  /** Bytes [offset, offset + length) of the file, reading on as needed. */
  async read(offset: number, length: number, part: string): Promise<Uint8Array> {
    while (this.head.byteLength < offset + length) {
      const next = await this.reader.read();
      if (next.done) throw new MalformedFile(`${this.what} is not a PE file: it ends inside ${part}`);
      if (this.head.byteLength === 0) {
        this.head = next.value;
        continue;
      }
      const grown = new Uint8Array(this.head.byteLength + next.value.byteLength);
      grown.set(this.head);
      grown.set(next.value, this.head.byteLength);
      this.head = grown;
    }
    return this.head.subarray(offset, offset + length);
  }

  /** The kept bytes, then every further chunk, each with its file offset. */
  async *chunks(): AsyncGenerator<[Uint8Array, number]> {
    let position = this.head.byteLength;
    yield [this.head, 0];
    this.head = new Uint8Array(0);
    for (let next = await this.reader.read(); !next.done; next = await this.reader.read()) {
      yield [next.value, position];
      position += next.value.byteLength;
    }
  }
}

/**
 * The Authenticode signer of a PE file read forward-only (an `.exe` inflated out of a `.nupkg`): the headers are
 * kept, the bytes before the certificate table hashed with SHA-256 and SHA-1 as they pass (the signature, at the
 * end, says which one counts), the table captured. `size`, when known, is checked against the headers early.
 */
export async function inspectPeStream(
  stream: ReadableStream<Uint8Array>,
  size?: number,
  what = "the executable",
): Promise<WindowsSignature> {
  const reader = stream.getReader();
  const forward = new Forward(reader, what);
  try {
    const layout = await peLayout((offset, length, part) => forward.read(offset, length, part), size, what);
    const table = layout.table;
    if (!table) return { signer: null };
    const hashers = STREAM_DIGESTS.map(hasher);
    const captured = new Uint8Array(table.size);
    let end = 0;
    for await (const [chunk, position] of forward.chunks()) {
      await hashCovered(hashers, layout, chunk, position);
      const from = Math.max(position, table.offset);
      const to = Math.min(position + chunk.byteLength, table.offset + table.size);
      if (to > from) captured.set(chunk.subarray(from - position, to - position), from - table.offset);
      end = position + chunk.byteLength;
    }
    if (end < table.offset + table.size)
      throw new MalformedFile(
        `${what}: its certificate table lies outside the file (bytes ${table.offset}–${table.offset + table.size} of ${end})`,
      );
    if (end > table.offset + table.size)
      throw new SignatureMismatch(
        `${what}: ${end - table.offset - table.size} bytes follow its certificate table, which no signature covers`,
      );
    return await verified(await authenticodeOf(pkcs7Of(captured, what), what), hashers, what);
  } finally {
    await reader.cancel().catch(() => undefined);
  }
}
