/**
 * The Team ID of a macOS app shipped as a zip (CONTRACT section 15): Electron's (electron-builder, Squirrel.Mac) and
 * Sparkle's update zips hold `Name.app/...`. The app is the `.app` whose Info.plist has the shortest path (a helper
 * app nested inside it has a longer one); its Info.plist (XML, or binary "bplist00") names the main executable
 * (CFBundleExecutable), whose bytes are inflated as they stream into the Mach-O reader (macho.ts). Only the zip's
 * directory, the Info.plist and that one executable are read.
 */
import { type MacSignature, teamIdOfMachO } from "./macho.ts";
import { MAX_STRUCTURE_BYTES, MalformedFile, type ByteSource } from "./source.ts";
import { entryStream, type ZipEntry, zipEntries } from "./zip.ts";

const INFO_PLIST = ".app/Contents/Info.plist";

/** The whole (small) entry, read from its stream. */
async function entryBytes(source: ByteSource, entry: ZipEntry): Promise<Uint8Array> {
  if (entry.size > MAX_STRUCTURE_BYTES)
    throw new MalformedFile(`zip entry "${entry.name}" of ${entry.size} bytes is larger than allowed`);
  const out = new Uint8Array(entry.size);
  let filled = 0;
  const reader = (await entryStream(source, entry)).getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    if (filled + value.byteLength > entry.size) {
      await reader.cancel().catch(() => undefined);
      throw new MalformedFile(`zip entry "${entry.name}" is longer than its directory says`);
    }
    out.set(value, filled);
    filled += value.byteLength;
  }
  if (filled !== entry.size) throw new MalformedFile(`zip entry "${entry.name}" is shorter than its directory says`);
  return out;
}

const ENTITIES: Record<string, string> = { amp: "&", lt: "<", gt: ">", quot: '"', apos: "'" };

function unescapeXml(text: string): string {
  return text.replace(/&(#x[0-9a-fA-F]+|#[0-9]+|[a-z]+);/g, (whole, name: string) => {
    if (name.startsWith("#x")) return String.fromCodePoint(Number.parseInt(name.slice(2), 16));
    if (name.startsWith("#")) return String.fromCodePoint(Number.parseInt(name.slice(1), 10));
    return ENTITIES[name] ?? whole;
  });
}

/** CFBundleExecutable of an XML property list. */
function xmlExecutable(bytes: Uint8Array): string | undefined {
  const text = new TextDecoder("utf-8").decode(bytes);
  const match = /<key>\s*CFBundleExecutable\s*<\/key>\s*(?:<!--[\s\S]*?-->\s*)*<string>([^<]*)<\/string>/.exec(text);
  return match ? unescapeXml(match[1]!) : undefined;
}

/** CFBundleExecutable of a binary property list ("bplist00": the top object must be a dict of string keys). */
function binaryExecutable(bytes: Uint8Array): string | undefined {
  const fail = (why: string): never => {
    throw new MalformedFile(`the app's Info.plist is a binary plist that cannot be read: ${why}`);
  };
  if (bytes.byteLength < 40) fail("it is truncated");
  const data = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const trailer = bytes.byteLength - 32;
  const offsetSize = data.getUint8(trailer + 6);
  const refSize = data.getUint8(trailer + 7);
  const count = Number(data.getBigUint64(trailer + 8));
  const top = Number(data.getBigUint64(trailer + 16));
  const table = Number(data.getBigUint64(trailer + 24));
  if (
    offsetSize < 1 ||
    offsetSize > 8 ||
    refSize < 1 ||
    refSize > 8 ||
    top >= count ||
    table + count * offsetSize > trailer
  )
    fail("its trailer is inconsistent");
  const uint = (at: number, size: number): number => {
    if (at + size > trailer) fail("an object lies outside it");
    let value = 0;
    for (let i = 0; i < size; i++) value = value * 256 + bytes[at + i]!;
    return value;
  };
  const objectAt = (ref: number): number => {
    if (ref >= count) fail(`object reference ${ref} is out of range`);
    return uint(table + ref * offsetSize, offsetSize);
  };
  /** An object's marker and its length (the low nibble, or the integer object after it), and where its data starts. */
  const header = (at: number): { type: number; length: number; start: number } => {
    const marker = uint(at, 1);
    const type = marker >> 4;
    if ((marker & 0x0f) !== 0x0f) return { type, length: marker & 0x0f, start: at + 1 };
    const intMarker = uint(at + 1, 1);
    if (intMarker >> 4 !== 1) fail("an object's length is not an integer");
    const size = 1 << (intMarker & 0x0f);
    return { type, length: uint(at + 2, size), start: at + 2 + size };
  };
  const string = (ref: number): string | undefined => {
    const { type, length, start } = header(objectAt(ref));
    if (length > 1024) return undefined; // no key or executable name is that long
    if (type === 0x5) return String.fromCharCode(...bytes.subarray(start, Math.min(start + length, trailer)));
    if (type !== 0x6) return undefined;
    let text = "";
    for (let i = 0; i < length; i++) text += String.fromCharCode(uint(start + i * 2, 2));
    return text;
  };
  const dict = header(objectAt(top));
  if (dict.type !== 0xd) fail("its top object is not a dictionary");
  for (let i = 0; i < dict.length; i++) {
    if (string(uint(dict.start + i * refSize, refSize)) === "CFBundleExecutable")
      return string(uint(dict.start + (dict.length + i) * refSize, refSize));
  }
  return undefined;
}

/** The app's main executable name from its Info.plist. */
function bundleExecutable(bytes: Uint8Array, plistPath: string): string {
  const isBinary = String.fromCharCode(...bytes.subarray(0, 8)) === "bplist00";
  const executable = isBinary ? binaryExecutable(bytes) : xmlExecutable(bytes);
  if (!executable || executable.includes("/") || executable === "." || executable === "..")
    throw new MalformedFile(`${plistPath} names no main executable (CFBundleExecutable)`);
  return executable;
}

/**
 * The Team ID of the macOS app in a zip: its main executable's code signature (macho.ts), with the executable's path
 * in the zip. MalformedFile when the zip holds no `.app`, the Info.plist names no executable or it is not there;
 * SignatureMismatch when the executable's pages do not match its signature.
 */
export async function inspectMacZip(source: ByteSource): Promise<MacSignature & { executable: string }> {
  const entries = await zipEntries(source);
  const plists = entries.filter((e) => e.name.endsWith(INFO_PLIST) && !e.name.startsWith("__MACOSX/"));
  if (plists.length === 0) throw new MalformedFile("no .app bundle in the zip");
  const plist = plists.reduce((a, b) => (b.name.length < a.name.length ? b : a));
  const bundle = plist.name.slice(0, -"/Contents/Info.plist".length);
  const executablePath = `${bundle}/Contents/MacOS/${bundleExecutable(await entryBytes(source, plist), plist.name)}`;
  const executable = entries.find((e) => e.name === executablePath);
  if (!executable) throw new MalformedFile(`the zip has no ${executablePath}, the executable ${plist.name} names`);
  const signature = await teamIdOfMachO(await entryStream(source, executable));
  return { ...signature, executable: executablePath };
}
