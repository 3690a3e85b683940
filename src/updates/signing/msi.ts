/**
 * The Authenticode signer of a Windows Installer package (CONTRACT section 15). An MSI is an OLE Compound File
 * ([MS-CFB]): a FAT file system in sectors, whose root storage holds the stream "\u0005DigitalSignature" with the
 * PKCS#7 of its signature when it is signed. Only the header, the FAT sectors that the needed chains cross (found
 * through the DIFAT, extra DIFAT sectors included), the directory, the mini FAT and the signature's own sectors are
 * read, each a bounded structure, never the whole file.
 * The MSI's content digest (a hash over its streams and storages in sorted order, plus the metadata of
 * MsiDigitalSignatureEx when present) is not recomputed here: the signer is read from the signature and its
 * signerInfo signature is verified over the signed attributes (authenticode.ts), so a name is only reported for a
 * signature its certificate made; Windows checks the content digest at install time.
 */
import { readAuthenticode } from "./authenticode.ts";
import type { WindowsSignature } from "./pe.ts";
import { type ByteSource, MAX_STRUCTURE_BYTES, MalformedFile, readWithin } from "./source.ts";

const SIGNATURE = [0xd0, 0xcf, 0x11, 0xe0, 0xa1, 0xb1, 0x1a, 0xe1];
const HEADER_SIZE = 512;
const HEADER_DIFAT_ENTRIES = 109;
const ENDOFCHAIN = 0xfffffffe;
const MAXREGSECT = 0xfffffffa;
const NOSTREAM = 0xffffffff;
const DIRECTORY_ENTRY_SIZE = 128;
const SIGNATURE_STREAM = "\u0005DigitalSignature";

/** One directory entry of the compound file. */
interface DirectoryEntry {
  name: string;
  type: number;
  left: number;
  right: number;
  child: number;
  start: number;
  size: number;
}

function view(bytes: Uint8Array): DataView {
  return new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

function concat(parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.byteLength, 0));
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.byteLength;
  }
  return out;
}

/** A compound file read by sectors: the FAT is loaded one sector at a time, as the chains followed need it. */
class CompoundFile {
  readonly sectorSize: number;
  readonly miniSectorSize: number;
  readonly miniCutoff: number;
  readonly header: DataView;
  private readonly source: ByteSource;
  private readonly difat: number[] = [];
  private nextDifatSector: number;
  private difatSectorsLeft: number;
  private readonly fatSectors = new Map<number, DataView>();

  constructor(source: ByteSource, header: Uint8Array) {
    this.source = source;
    this.header = view(header);
    const major = this.header.getUint16(0x1a, true);
    const shift = this.header.getUint16(0x1e, true);
    if (
      this.header.getUint16(0x1c, true) !== 0xfffe ||
      !((major === 3 && shift === 9) || (major === 4 && shift === 12))
    )
      throw new MalformedFile(`not an MSI package: compound file version ${major} with ${2 ** shift}-byte sectors`);
    this.sectorSize = 2 ** shift;
    this.miniSectorSize = 2 ** this.header.getUint16(0x20, true);
    this.miniCutoff = this.header.getUint32(0x38, true);
    if (this.miniSectorSize !== 64 || this.miniCutoff !== 4096)
      throw new MalformedFile("not an MSI package: unexpected mini sector size or mini stream cutoff");
    for (let i = 0; i < HEADER_DIFAT_ENTRIES; i++) this.difat.push(this.header.getUint32(0x4c + i * 4, true));
    this.nextDifatSector = this.header.getUint32(0x44, true);
    this.difatSectorsLeft = this.header.getUint32(0x48, true);
  }

  private offsetOf(sector: number): number {
    return (sector + 1) * this.sectorSize;
  }

  /** Reads `count` consecutive sectors from `sector`, or throws when they lie outside the file. */
  readSectors(sector: number, count: number, what: string): Promise<Uint8Array> {
    return readWithin(this.source, this.offsetOf(sector), count * this.sectorSize, `the MSI's ${what}`);
  }

  /** The file offset of the FAT sector that holds entry `index`, reading extra DIFAT sectors as needed. */
  private async fatSectorOf(index: number): Promise<number> {
    while (index >= this.difat.length && this.difatSectorsLeft > 0) {
      if (this.nextDifatSector > MAXREGSECT) throw new MalformedFile("the MSI's DIFAT chain ends early");
      const sector = view(await this.readSectors(this.nextDifatSector, 1, "DIFAT"));
      const entries = this.sectorSize / 4 - 1;
      for (let i = 0; i < entries; i++) this.difat.push(sector.getUint32(i * 4, true));
      this.nextDifatSector = sector.getUint32(entries * 4, true);
      this.difatSectorsLeft--;
    }
    const fatSector = this.difat[index];
    if (fatSector === undefined || fatSector > MAXREGSECT)
      throw new MalformedFile(`the MSI's FAT has no sector ${index} (a chain points past its end)`);
    return fatSector;
  }

  /** The FAT entry of `sector`: the next sector of its chain. */
  async next(sector: number): Promise<number> {
    const perSector = this.sectorSize / 4;
    const index = Math.floor(sector / perSector);
    let fat = this.fatSectors.get(index);
    if (!fat) {
      fat = view(await this.readSectors(await this.fatSectorOf(index), 1, "FAT"));
      this.fatSectors.set(index, fat);
    }
    return fat.getUint32((sector % perSector) * 4, true);
  }

  /** The sectors of the chain from `start` that hold `bytes` bytes; loops and early ends are malformed. */
  async chain(start: number, bytes: number, what: string): Promise<number[]> {
    const count = Math.ceil(bytes / this.sectorSize);
    if (count > this.source.size / this.sectorSize)
      throw new MalformedFile(`the MSI's ${what} of ${bytes} bytes is larger than the file`);
    const sectors: number[] = [];
    let sector = start;
    while (sectors.length < count) {
      if (sector > MAXREGSECT || this.offsetOf(sector) >= this.source.size)
        throw new MalformedFile(`the MSI's ${what} chain ends early or leaves the file (sector ${sector})`);
      sectors.push(sector);
      sector = await this.next(sector);
    }
    return sectors;
  }

  /** The first `bytes` bytes of the chain from `start`, reading runs of consecutive sectors at once. */
  async readChain(start: number, bytes: number, what: string): Promise<Uint8Array> {
    if (bytes > MAX_STRUCTURE_BYTES) throw new MalformedFile(`the MSI's ${what} of ${bytes} bytes is too large`);
    const sectors = await this.chain(start, bytes, what);
    const parts: Uint8Array[] = [];
    for (let i = 0; i < sectors.length; ) {
      let run = 1;
      while (i + run < sectors.length && sectors[i + run] === sectors[i]! + run) run++;
      parts.push(await this.readSectors(sectors[i]!, run, what));
      i += run;
    }
    return concat(parts).subarray(0, bytes);
  }

  /** The whole chain from `start` (its length unknown beforehand), bounded by MAX_STRUCTURE_BYTES. */
  async readWholeChain(start: number, what: string): Promise<Uint8Array> {
    let length = 0;
    const seen = new Set<number>();
    for (let sector = start; sector !== ENDOFCHAIN; sector = await this.next(sector)) {
      if (sector > MAXREGSECT || seen.has(sector))
        throw new MalformedFile(`the MSI's ${what} chain is broken at sector ${sector}`);
      seen.add(sector);
      length += this.sectorSize;
      if (length > MAX_STRUCTURE_BYTES) throw new MalformedFile(`the MSI's ${what} is too large`);
    }
    return this.readChain(start, length, what);
  }
}

/** The directory's entries, in order (stream ids are indexes). */
function directoryEntries(bytes: Uint8Array, major: number): DirectoryEntry[] {
  const data = view(bytes);
  const entries: DirectoryEntry[] = [];
  const names = new TextDecoder("utf-16le");
  for (let at = 0; at + DIRECTORY_ENTRY_SIZE <= bytes.byteLength; at += DIRECTORY_ENTRY_SIZE) {
    const nameLength = Math.min(data.getUint16(at + 64, true), 64);
    const high = major === 3 ? 0 : data.getUint32(at + 124, true);
    entries.push({
      name: names.decode(bytes.subarray(at, at + Math.max(0, nameLength - 2))),
      type: data.getUint8(at + 66),
      left: data.getUint32(at + 68, true),
      right: data.getUint32(at + 72, true),
      child: data.getUint32(at + 76, true),
      start: data.getUint32(at + 116, true),
      size: high * 2 ** 32 + data.getUint32(at + 120, true),
    });
  }
  return entries;
}

/** The child of `storage` named `name` (a walk of its red-black tree of siblings), or undefined. */
function childNamed(entries: DirectoryEntry[], storage: DirectoryEntry, name: string): DirectoryEntry | undefined {
  const pending = [storage.child];
  const seen = new Set<number>();
  while (pending.length > 0) {
    const id = pending.pop()!;
    if (id === NOSTREAM) continue;
    const entry = entries[id];
    if (!entry || seen.has(id)) throw new MalformedFile("the MSI's directory tree is broken");
    seen.add(id);
    if (entry.name === name) return entry;
    pending.push(entry.left, entry.right);
  }
  return undefined;
}

/** A stream smaller than the cutoff, read from the mini stream (64-byte sectors inside the root's own stream). */
async function readMiniStream(file: CompoundFile, root: DirectoryEntry, entry: DirectoryEntry): Promise<Uint8Array> {
  const miniFatStart = file.header.getUint32(0x3c, true);
  const miniFatSectors = file.header.getUint32(0x40, true);
  const miniFat = view(await file.readChain(miniFatStart, miniFatSectors * file.sectorSize, "mini FAT"));
  const perSector = file.sectorSize / file.miniSectorSize;
  // The root's chain is walked only as far as the signature's mini sectors reach; each sector is read once.
  const rootSectors: number[] = [];
  const read = new Map<number, Uint8Array>();
  const sectorOf = async (index: number): Promise<Uint8Array> => {
    if ((index + 1) * file.sectorSize > root.size + file.sectorSize - 1)
      throw new MalformedFile(`the MSI's mini stream has no sector ${index}`);
    while (rootSectors.length <= index) {
      const previous = rootSectors.at(-1);
      const sector = previous === undefined ? root.start : await file.next(previous);
      if (sector > MAXREGSECT) throw new MalformedFile("the MSI's mini stream chain ends early");
      rootSectors.push(sector);
    }
    const sector = rootSectors[index]!;
    let bytes = read.get(sector);
    if (!bytes) read.set(sector, (bytes = await file.readSectors(sector, 1, "mini stream")));
    return bytes;
  };
  const parts: Uint8Array[] = [];
  let mini = entry.start;
  for (let i = 0; i < Math.ceil(entry.size / file.miniSectorSize); i++) {
    if (mini > MAXREGSECT || (mini + 1) * 4 > miniFat.byteLength)
      throw new MalformedFile(`the MSI's mini FAT has no sector ${mini}`);
    const within = (mini % perSector) * file.miniSectorSize;
    parts.push((await sectorOf(Math.floor(mini / perSector))).subarray(within, within + file.miniSectorSize));
    mini = miniFat.getUint32(mini * 4, true);
  }
  return concat(parts).subarray(0, entry.size);
}

/**
 * The Authenticode signer of an MSI package; `{ signer: null }` when it has no DigitalSignature stream. Throws
 * MalformedFile when the file is not a compound file or its signature not PKCS#7, SignatureMismatch when the
 * signature was not made by its certificate.
 */
export async function inspectMsi(source: ByteSource): Promise<WindowsSignature> {
  if (source.size < HEADER_SIZE) throw new MalformedFile("not an MSI package: the file is shorter than its header");
  const header = await source.read(0, HEADER_SIZE);
  if (!SIGNATURE.every((byte, i) => header[i] === byte))
    throw new MalformedFile("not an MSI package: no compound file signature");
  const file = new CompoundFile(source, header);
  const major = file.header.getUint16(0x1a, true);
  const directory = directoryEntries(await file.readWholeChain(file.header.getUint32(0x30, true), "directory"), major);
  const root = directory[0];
  if (root?.type !== 5) throw new MalformedFile("not an MSI package: its directory has no root entry");
  const entry = childNamed(directory, root, SIGNATURE_STREAM);
  if (!entry) return { signer: null };
  if (entry.type !== 2) throw new MalformedFile("the MSI's DigitalSignature is not a stream");
  if (entry.size > MAX_STRUCTURE_BYTES)
    throw new MalformedFile(`the MSI's DigitalSignature stream of ${entry.size} bytes is too large`);
  const pkcs7 =
    entry.size < file.miniCutoff
      ? await readMiniStream(file, root, entry)
      : await file.readChain(entry.start, entry.size, "DigitalSignature stream");
  const signature = await readAuthenticode(pkcs7);
  return { signer: signature.signer, subject: signature.subject };
}
