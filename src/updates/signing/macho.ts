/**
 * The Team ID of a macOS executable (CONTRACT section 15): a macOS app updated in place by another team's build is
 * refused by the system, so a release must keep the Team ID its installs were signed with. The executable is read
 * as one forward-only stream (it comes inflated out of a zip, where nothing can be re-read): a thin Mach-O (32 or 64
 * bit, either byte order) or a universal one of several slices (FAT_MAGIC / FAT_MAGIC_64, slices in file order).
 * For each slice the load commands name the embedded signature (LC_CODE_SIGNATURE); its SuperBlob holds the
 * CodeDirectory (Apple's cs_blobs.h), which carries the Team ID and a hash of every page of the code before it.
 * The code comes before the signature in the file, so each 4 KiB page is hashed (SHA-256) as it passes and the
 * digests, 32 bytes a page, are compared once the CodeDirectory is read: a page that differs is SignatureMismatch.
 * Only SHA-256 CodeDirectories of 4 KiB pages are checked, which is what codesign writes (a SHA-1 one comes with a
 * SHA-256 alternate since macOS 10.11, and notarization requires SHA-256). The CMS signature over the
 * CodeDirectory is not verified here: the Team ID is what the executable claims, its pages are what it signed.
 */
import { SignatureMismatch } from "./mismatch.ts";
import { MAX_STRUCTURE_BYTES, MalformedFile, plain } from "./source.ts";

/** What a macOS executable's code signature says: its Team ID (null when unsigned or ad-hoc) and whether it is signed. */
export interface MacSignature {
  teamId: string | null;
  signed: boolean;
}

const MH_MAGIC = 0xfeedface;
const MH_MAGIC_64 = 0xfeedfacf;
const MH_CIGAM = 0xcefaedfe;
const MH_CIGAM_64 = 0xcffaedfe;
const FAT_MAGIC = 0xcafebabe;
const FAT_MAGIC_64 = 0xcafebabf;
const LC_CODE_SIGNATURE = 0x1d;
const CSMAGIC_EMBEDDED_SIGNATURE = 0xfade0cc0;
const CSMAGIC_CODEDIRECTORY = 0xfade0c02;
const CSSLOT_CODEDIRECTORY = 0;
const CSSLOT_ALTERNATE_CODEDIRECTORIES = 0x1000;
const CS_HASHTYPE_SHA256 = 2;
const PAGE_LOG2 = 12;
const PAGE = 1 << PAGE_LOG2;
/** More slices than any universal binary holds (Apple ships at most a handful). */
const MAX_SLICES = 32;
/** How many page digests are computed at once. */
const DIGEST_BATCH = 64;

const ARCHES: Record<number, string> = {
  7: "i386",
  16777223: "x86_64",
  12: "arm",
  16777228: "arm64",
  33554444: "arm64_32",
  18: "ppc",
  16777234: "ppc64",
};

function archName(cpuType: number): string {
  return ARCHES[cpuType] ?? `cputype 0x${cpuType.toString(16)}`;
}

function view(bytes: Uint8Array): DataView {
  return new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/** A forward-only reader over a stream: exact reads and skips; `tap` sees every byte as it passes, with its offset. */
class StreamReader {
  position = 0;
  tap: ((bytes: Uint8Array, at: number) => Promise<void>) | undefined;
  private chunk: Uint8Array = new Uint8Array(0);
  private used = 0;
  private readonly reader: ReadableStreamDefaultReader<Uint8Array>;

  constructor(reader: ReadableStreamDefaultReader<Uint8Array>) {
    this.reader = reader;
  }

  /** The next bytes of the stream (at most `max`), or MalformedFile naming `what` when it has ended. */
  private async next(max: number, what: string): Promise<Uint8Array> {
    while (this.used >= this.chunk.byteLength) {
      const { done, value } = await this.reader.read();
      if (done) throw new MalformedFile(`Mach-O: the file ends inside ${what} (at byte ${this.position})`);
      this.chunk = value;
      this.used = 0;
    }
    const part = this.chunk.subarray(this.used, this.used + max);
    this.used += part.byteLength;
    const at = this.position;
    this.position += part.byteLength;
    if (this.tap) await this.tap(part, at);
    return part;
  }

  /** Exactly `length` bytes. */
  async read(length: number, what: string): Promise<Uint8Array> {
    const out = new Uint8Array(length);
    for (let filled = 0; filled < length; ) {
      const part = await this.next(length - filled, what);
      out.set(part, filled);
      filled += part.byteLength;
    }
    return out;
  }

  /** Passes the bytes up to `offset` (through the tap); an offset already passed is a structure out of order. */
  async skipTo(offset: number, what: string): Promise<void> {
    if (offset < this.position)
      throw new MalformedFile(
        `Mach-O: ${what} at byte ${offset} overlaps what comes before it (byte ${this.position})`,
      );
    while (this.position < offset) await this.next(offset - this.position, what);
  }

  /** Gives back the bytes just read, so the next read starts with them again. */
  unread(bytes: Uint8Array): void {
    const rest = this.chunk.subarray(this.used);
    this.chunk = new Uint8Array(bytes.byteLength + rest.byteLength);
    this.chunk.set(bytes);
    this.chunk.set(rest, bytes.byteLength);
    this.used = 0;
    this.position -= bytes.byteLength;
  }

  async close(): Promise<void> {
    await this.reader.cancel().catch(() => undefined);
  }
}

/** SHA-256 digests of the 4 KiB pages of [start, end) of the stream, computed as the bytes pass. */
class PageHasher {
  readonly digests: Uint8Array[] = [];
  end = Number.POSITIVE_INFINITY;
  private page = new Uint8Array(PAGE);
  private filled = 0;
  private readonly start: number;

  constructor(start: number) {
    this.start = start;
  }

  async feed(bytes: Uint8Array, at: number): Promise<void> {
    const from = Math.max(0, this.start - at);
    const to = Math.min(bytes.byteLength, this.end - at);
    if (to <= from) return;
    let rest = bytes.subarray(from, to);
    const pages: Uint8Array[] = [];
    if (this.filled > 0) {
      const take = Math.min(PAGE - this.filled, rest.byteLength);
      this.page.set(rest.subarray(0, take), this.filled);
      this.filled += take;
      rest = rest.subarray(take);
      if (this.filled === PAGE) pages.push(this.takePage());
    }
    for (; rest.byteLength >= PAGE; rest = rest.subarray(PAGE)) pages.push(rest.subarray(0, PAGE));
    this.page.set(rest, this.filled);
    this.filled += rest.byteLength;
    await this.digest(pages);
  }

  /** Hashes the last, partial page. */
  async finish(): Promise<void> {
    if (this.filled > 0) await this.digest([this.takePage()]);
  }

  private takePage(): Uint8Array {
    const page = this.page.subarray(0, this.filled);
    this.page = new Uint8Array(PAGE);
    this.filled = 0;
    return page;
  }

  private async digest(pages: Uint8Array[]): Promise<void> {
    for (let i = 0; i < pages.length; i += DIGEST_BATCH) {
      const batch = pages.slice(i, i + DIGEST_BATCH).map((p) => crypto.subtle.digest("SHA-256", plain(p)));
      for (const digest of await Promise.all(batch)) this.digests.push(new Uint8Array(digest));
    }
  }
}

/** A CodeDirectory's fields this module uses (cs_blobs.h, CS_CodeDirectory; big-endian whatever the Mach-O's order). */
interface CodeDirectory {
  hashType: number;
  hashSize: number;
  pageSizeLog2: number;
  codeLimit: number;
  nCodeSlots: number;
  hashOffset: number;
  teamId: string | null;
  bytes: Uint8Array;
}

/** The NUL-terminated string at `offset` of a blob. */
function cString(bytes: Uint8Array, offset: number, what: string): string {
  const end = bytes.indexOf(0, offset);
  if (offset >= bytes.byteLength || end < 0) throw new MalformedFile(`Mach-O: the ${what} is not NUL-terminated`);
  return new TextDecoder("utf-8").decode(bytes.subarray(offset, end));
}

function parseCodeDirectory(bytes: Uint8Array, arch: string): CodeDirectory {
  const what = `${arch} CodeDirectory`;
  if (bytes.byteLength < 44) throw new MalformedFile(`Mach-O: the ${what} is truncated`);
  const data = view(bytes);
  const version = data.getUint32(8);
  const cd: CodeDirectory = {
    hashOffset: data.getUint32(16),
    nCodeSlots: data.getUint32(28),
    codeLimit: data.getUint32(32),
    hashSize: data.getUint8(36),
    hashType: data.getUint8(37),
    pageSizeLog2: data.getUint8(39),
    teamId: null,
    bytes,
  };
  if (version >= 0x20300 && cd.codeLimit === 0 && bytes.byteLength >= 64) {
    const codeLimit64 = data.getBigUint64(56);
    if (codeLimit64 > BigInt(Number.MAX_SAFE_INTEGER))
      throw new MalformedFile(`Mach-O: the ${what}'s code limit is out of range`);
    cd.codeLimit = Number(codeLimit64);
  }
  if (cd.hashOffset + cd.nCodeSlots * cd.hashSize > bytes.byteLength)
    throw new MalformedFile(`Mach-O: the ${what}'s code hashes lie outside it`);
  if (version >= 0x20200) {
    if (bytes.byteLength < 52) throw new MalformedFile(`Mach-O: the ${what} is truncated`);
    const teamOffset = data.getUint32(48);
    if (teamOffset !== 0) cd.teamId = cString(bytes, teamOffset, `${what}'s Team ID`) || null;
  }
  return cd;
}

/** The CodeDirectories of an embedded signature SuperBlob: the primary one and its alternates. */
function codeDirectories(blob: Uint8Array, arch: string): CodeDirectory[] {
  const data = view(blob);
  if (blob.byteLength < 12 || data.getUint32(0) !== CSMAGIC_EMBEDDED_SIGNATURE)
    throw new MalformedFile(`Mach-O: the ${arch} slice's code signature is not an embedded signature SuperBlob`);
  const length = Math.min(data.getUint32(4), blob.byteLength);
  const count = data.getUint32(8);
  if (12 + count * 8 > length) throw new MalformedFile(`Mach-O: the ${arch} code signature's index is truncated`);
  const found: CodeDirectory[] = [];
  for (let i = 0; i < count; i++) {
    const type = data.getUint32(12 + i * 8);
    const offset = data.getUint32(16 + i * 8);
    const isDirectory =
      type === CSSLOT_CODEDIRECTORY ||
      (type >= CSSLOT_ALTERNATE_CODEDIRECTORIES && type < CSSLOT_ALTERNATE_CODEDIRECTORIES + 5);
    if (!isDirectory) continue;
    if (offset + 8 > length || data.getUint32(offset) !== CSMAGIC_CODEDIRECTORY)
      throw new MalformedFile(`Mach-O: the ${arch} code signature's slot ${type} holds no CodeDirectory`);
    const blobLength = data.getUint32(offset + 4);
    if (offset + blobLength > length)
      throw new MalformedFile(`Mach-O: the ${arch} CodeDirectory lies outside its signature`);
    found.push(parseCodeDirectory(blob.subarray(offset, offset + blobLength), arch));
  }
  if (found.length === 0) throw new MalformedFile(`Mach-O: the ${arch} code signature holds no CodeDirectory`);
  return found;
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.byteLength !== b.byteLength) return false;
  for (let i = 0; i < a.byteLength; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** Checks the slice's page digests against the SHA-256 CodeDirectory and returns its Team ID. */
function checkPages(blob: Uint8Array, digests: Uint8Array[], signatureOffset: number, arch: string): string | null {
  const cds = codeDirectories(blob, arch);
  const cd = cds.find((c) => c.hashType === CS_HASHTYPE_SHA256 && c.hashSize === 32);
  if (!cd)
    throw new MalformedFile(
      `Mach-O: the ${arch} code signature has no SHA-256 CodeDirectory (hash types ${cds.map((c) => c.hashType).join(", ")}); codesign has written one since macOS 10.11 and notarization requires it`,
    );
  if (cd.pageSizeLog2 !== PAGE_LOG2)
    throw new MalformedFile(
      `Mach-O: the ${arch} CodeDirectory hashes pages of 2^${cd.pageSizeLog2} bytes; only 4 KiB pages are read`,
    );
  if (cd.codeLimit !== signatureOffset)
    throw new MalformedFile(
      `Mach-O: the ${arch} CodeDirectory's code limit ${cd.codeLimit} is not where its signature begins (${signatureOffset})`,
    );
  if (cd.nCodeSlots !== digests.length)
    throw new MalformedFile(
      `Mach-O: the ${arch} CodeDirectory has ${cd.nCodeSlots} code slots for ${digests.length} pages`,
    );
  for (let i = 0; i < digests.length; i++) {
    const slot = cd.bytes.subarray(cd.hashOffset + i * 32, cd.hashOffset + (i + 1) * 32);
    if (!sameBytes(slot, digests[i]!))
      throw new SignatureMismatch(
        `the ${arch} slice of the executable was changed after it was signed: page ${i} (bytes ${i * PAGE}–${Math.min((i + 1) * PAGE, cd.codeLimit)}) does not match its code signature`,
      );
  }
  return cd.teamId;
}

interface Slice {
  offset: number;
  /** The slice's length from its universal header; unbounded for a thin file. */
  size: number;
  arch: string;
}

/** Reads one Mach-O slice from its first byte: its load commands, and its code signature checked page by page. */
async function readSlice(reader: StreamReader, slice: Slice): Promise<MacSignature & { arch: string }> {
  await reader.skipTo(slice.offset, `the ${slice.arch} slice`);
  const hasher = new PageHasher(slice.offset);
  reader.tap = (bytes, at) => hasher.feed(bytes, at);
  try {
    const header = await reader.read(28, "the Mach-O header");
    const magic = view(header).getUint32(0, true);
    const little = magic === MH_MAGIC || magic === MH_MAGIC_64;
    if (!little && magic !== MH_CIGAM && magic !== MH_CIGAM_64)
      throw new MalformedFile(`not a Mach-O executable: magic 0x${magic.toString(16).padStart(8, "0")}`);
    const is64 = magic === MH_MAGIC_64 || magic === MH_CIGAM_64;
    const data = view(header);
    const arch = archName(data.getUint32(4, little));
    const ncmds = data.getUint32(16, little);
    const sizeofcmds = data.getUint32(20, little);
    if (is64) await reader.read(4, "the Mach-O header");
    const headerSize = is64 ? 32 : 28;
    if (sizeofcmds > MAX_STRUCTURE_BYTES || headerSize + sizeofcmds > slice.size)
      throw new MalformedFile(`Mach-O: the ${arch} load commands (${sizeofcmds} bytes) do not fit the slice`);
    const commands = await reader.read(sizeofcmds, `the ${arch} load commands`);
    const signature = findCodeSignature(commands, ncmds, little, arch);
    if (!signature) return { arch, teamId: null, signed: false };
    const { dataoff, datasize } = signature;
    if (dataoff < headerSize + sizeofcmds || datasize > MAX_STRUCTURE_BYTES || dataoff + datasize > slice.size)
      throw new MalformedFile(
        `Mach-O: the ${arch} code signature (bytes ${dataoff}+${datasize}) lies outside the slice`,
      );
    hasher.end = slice.offset + dataoff;
    await reader.skipTo(slice.offset + dataoff, `the ${arch} code`);
    await hasher.finish();
    reader.tap = undefined;
    const blob = await reader.read(datasize, `the ${arch} code signature`);
    const teamId = checkPages(blob, hasher.digests, dataoff, arch);
    return { arch, teamId, signed: true };
  } finally {
    reader.tap = undefined;
  }
}

/** The LC_CODE_SIGNATURE command's data offset and size, walking `ncmds` load commands. */
function findCodeSignature(
  commands: Uint8Array,
  ncmds: number,
  little: boolean,
  arch: string,
): { dataoff: number; datasize: number } | undefined {
  const data = view(commands);
  let at = 0;
  for (let i = 0; i < ncmds; i++) {
    if (at + 8 > commands.byteLength) throw new MalformedFile(`Mach-O: the ${arch} load command ${i} is truncated`);
    const cmd = data.getUint32(at, little);
    const cmdsize = data.getUint32(at + 4, little);
    if (cmdsize < 8 || at + cmdsize > commands.byteLength)
      throw new MalformedFile(`Mach-O: the ${arch} load command ${i} has a size of ${cmdsize} bytes`);
    if (cmd === LC_CODE_SIGNATURE) {
      if (cmdsize < 16) throw new MalformedFile(`Mach-O: the ${arch} LC_CODE_SIGNATURE is truncated`);
      return { dataoff: data.getUint32(at + 8, little), datasize: data.getUint32(at + 12, little) };
    }
    at += cmdsize;
  }
  return undefined;
}

/** The slices of a universal binary, in file order, from its header (the first 8 bytes already read). */
async function fatSlices(reader: StreamReader, head: DataView): Promise<Slice[]> {
  const is64 = head.getUint32(0) === FAT_MAGIC_64;
  const count = head.getUint32(4);
  if (count === 0 || count > MAX_SLICES) throw new MalformedFile(`Mach-O: a universal binary of ${count} slices`);
  const entrySize = is64 ? 32 : 20;
  const table = view(await reader.read(count * entrySize, "the universal binary's slice table"));
  const slices: Slice[] = [];
  for (let i = 0; i < count; i++) {
    const at = i * entrySize;
    const arch = archName(table.getUint32(at));
    const offset = is64 ? Number(table.getBigUint64(at + 8)) : table.getUint32(at + 8);
    const size = is64 ? Number(table.getBigUint64(at + 16)) : table.getUint32(at + 12);
    if (!Number.isSafeInteger(offset + size)) throw new MalformedFile(`Mach-O: the ${arch} slice is out of range`);
    slices.push({ arch, offset, size });
  }
  slices.sort((a, b) => a.offset - b.offset);
  for (let i = 1; i < slices.length; i++)
    if (slices[i]!.offset < slices[i - 1]!.offset + slices[i - 1]!.size)
      throw new MalformedFile(`Mach-O: the ${slices[i]!.arch} slice overlaps the ${slices[i - 1]!.arch} slice`);
  return slices;
}

function describe(signature: MacSignature): string {
  return signature.teamId ? `Team ID ${signature.teamId}` : signature.signed ? "ad-hoc signed" : "unsigned";
}

/**
 * The Team ID of a Mach-O executable (thin or universal) streamed once from its first byte. Every slice's code pages
 * are checked against its CodeDirectory (SignatureMismatch when one differs) and all slices must name the same Team
 * ID (`signed` only when every slice is: lipo joins an unsigned x86_64 slice and a linker-signed arm64 one); a file
 * that is not a Mach-O, is truncated or malformed is MalformedFile.
 */
export async function teamIdOfMachO(stream: ReadableStream<Uint8Array>): Promise<MacSignature> {
  const reader = new StreamReader(stream.getReader());
  try {
    const first = await reader.read(8, "the Mach-O header");
    const magic = view(first).getUint32(0);
    let slices: Slice[];
    if (magic === FAT_MAGIC || magic === FAT_MAGIC_64) slices = await fatSlices(reader, view(first));
    else {
      reader.unread(first);
      slices = [{ offset: 0, size: Number.POSITIVE_INFINITY, arch: "Mach-O" }];
    }
    const results: (MacSignature & { arch: string })[] = [];
    for (const slice of slices) results.push(await readSlice(reader, slice));
    const [firstSlice, ...others] = results;
    for (const other of others)
      if (other.teamId !== firstSlice!.teamId)
        throw new MalformedFile(
          `Mach-O: the slices disagree: the ${firstSlice!.arch} slice is ${describe(firstSlice!)}, the ${other.arch} slice ${describe(other)}`,
        );
    return { teamId: firstSlice!.teamId, signed: results.every((r) => r.signed) };
  } finally {
    await reader.close();
  }
}
