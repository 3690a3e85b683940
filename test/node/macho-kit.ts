/**
 * Fixtures for the Apple and Tauri signature checks (signing-apple-tauri.test.ts), built in Node. No macOS tools
 * (codesign, lipo, ditto) exist on Linux, so the Mach-O executables are laid out byte by byte from Apple's headers:
 * loader.h (mach_header_64, segment_command_64, linkedit_data_command for LC_CODE_SIGNATURE), fat.h (fat_header,
 * fat_arch) and cs_blobs.h (the embedded signature SuperBlob, a CS_CodeDirectory of version 0x20400 with SHA-256
 * hashes of 4 KiB pages, an empty requirements blob and an empty CMS wrapper, as codesign writes before signing).
 * The Tauri fixtures are made as `tauri signer generate` / `tauri signer sign` make them (the minisign crate):
 * an Ed25519 key pair, the public key file text in base64, and a prehashed ('ED', BLAKE2b-512) signature with its
 * global signature over the signature and the trusted comment, the whole `.sig` text in base64.
 */
import { createHash, generateKeyPairSync, randomBytes, sign } from "node:crypto";
import { zipSync } from "fflate";

const CPU_X86_64 = 0x01000007;
const CPU_ARM64 = 0x0100000c;
const PAGE = 4096;

/** How a fixture executable is signed. */
export interface MachOOptions {
  /** The Team ID; omitted (or null) for an ad-hoc signature. */
  teamId?: string | null;
  /** No LC_CODE_SIGNATURE at all. */
  unsigned?: boolean;
  /** Flip a byte of the code after signing, so a page no longer matches its hash. */
  corruptPage?: boolean;
  /** Bytes of __TEXT (default: a little over three pages). */
  textSize?: number;
}

const align = (n: number, to: number) => Math.ceil(n / to) * to;
const sha256 = (bytes: Uint8Array) => new Uint8Array(createHash("sha256").update(bytes).digest());

/** Big-endian blob writer (cs_blobs.h structures are big-endian whatever the Mach-O's byte order). */
function blob(size: number): { bytes: Uint8Array; data: DataView } {
  const bytes = new Uint8Array(size);
  return { bytes, data: new DataView(bytes.buffer) };
}

function codeDirectory(
  pages: Uint8Array[],
  codeLimit: number,
  identifier: string,
  teamId: string | null,
  requirements: Uint8Array,
): Uint8Array {
  const header = 88;
  const ident = new TextEncoder().encode(`${identifier}\0`);
  const team = teamId ? new TextEncoder().encode(`${teamId}\0`) : new Uint8Array(0);
  const specialSlots = 2;
  const hashesStart = header + ident.byteLength + team.byteLength;
  const hashOffset = hashesStart + specialSlots * 32;
  const { bytes, data } = blob(hashOffset + pages.length * 32);
  data.setUint32(0, 0xfade0c02); // CSMAGIC_CODEDIRECTORY
  data.setUint32(4, bytes.byteLength);
  data.setUint32(8, 0x20400); // version with execSeg fields
  data.setUint32(12, teamId ? 0x10000 : 0x2); // CS_RUNTIME, or CS_ADHOC
  data.setUint32(16, hashOffset);
  data.setUint32(20, header); // identOffset
  data.setUint32(24, specialSlots);
  data.setUint32(28, pages.length);
  data.setUint32(32, codeLimit);
  data.setUint8(36, 32); // hashSize
  data.setUint8(37, 2); // CS_HASHTYPE_SHA256
  data.setUint8(39, 12); // pageSize log2: 4 KiB
  data.setUint32(48, teamId ? header + ident.byteLength : 0); // teamOffset
  data.setBigUint64(72, BigInt(codeLimit)); // execSegLimit
  data.setBigUint64(80, 1n); // CS_EXECSEG_MAIN_BINARY
  bytes.set(ident, header);
  bytes.set(team, header + ident.byteLength);
  bytes.set(sha256(requirements), hashesStart); // slot -2: requirements (slot -1, Info.plist, stays zero)
  pages.forEach((page, i) => bytes.set(sha256(page), hashOffset + i * 32));
  return bytes;
}

/** The embedded signature SuperBlob: CodeDirectory, requirements, CMS wrapper (empty, as for an ad-hoc signature). */
function superBlob(directory: Uint8Array, requirements: Uint8Array): Uint8Array {
  const cms = blob(8);
  cms.data.setUint32(0, 0xfade0b01); // CSMAGIC_BLOBWRAPPER
  cms.data.setUint32(4, 8);
  const parts: [number, Uint8Array][] = [
    [0, directory],
    [2, requirements],
    [0x10000, cms.bytes],
  ];
  const indexEnd = 12 + parts.length * 8;
  const { bytes, data } = blob(indexEnd + parts.reduce((n, [, b]) => n + b.byteLength, 0));
  data.setUint32(0, 0xfade0cc0); // CSMAGIC_EMBEDDED_SIGNATURE
  data.setUint32(4, bytes.byteLength);
  data.setUint32(8, parts.length);
  let at = indexEnd;
  parts.forEach(([type, part], i) => {
    data.setUint32(12 + i * 8, type);
    data.setUint32(16 + i * 8, at);
    bytes.set(part, at);
    at += part.byteLength;
  });
  return bytes;
}

/** The size of the signature a fixture will carry (known before the code is laid out: the header names it). */
function signatureSize(codeLimit: number, identifier: string, teamId: string | null): number {
  const placeholder = new Uint8Array(12);
  const pages = Array.from({ length: Math.ceil(codeLimit / PAGE) }, () => placeholder);
  return superBlob(codeDirectory(pages, codeLimit, identifier, teamId, placeholder), placeholder).byteLength;
}

/** A thin little-endian 64-bit Mach-O executable (MH_EXECUTE) for `cpuType`, signed as `options` say. */
export function thinMachO(cpuType: number, options: MachOOptions = {}): Uint8Array {
  const teamId = options.teamId ?? null;
  const identifier = "com.example.studio";
  const commands = 72 * 2 + (options.unsigned ? 0 : 16); // __TEXT and __LINKEDIT segments, LC_CODE_SIGNATURE
  const textStart = 32 + commands;
  const textSize = options.textSize ?? 3 * PAGE + 1234;
  const codeLimit = align(textStart + textSize, 16);
  const requirements = blob(12);
  requirements.data.setUint32(0, 0xfade0c01); // CSMAGIC_REQUIREMENTS, no requirement
  requirements.data.setUint32(4, 12);
  const datasize = options.unsigned ? 0 : align(signatureSize(codeLimit, identifier, teamId) + 64, 16);
  const { bytes, data } = blob(codeLimit + datasize);
  const le = true;
  data.setUint32(0, 0xfeedfacf, le); // MH_MAGIC_64
  data.setUint32(4, cpuType, le);
  data.setUint32(8, cpuType === CPU_X86_64 ? 3 : 0, le); // CPU_SUBTYPE_X86_64_ALL / ARM64_ALL
  data.setUint32(12, 2, le); // MH_EXECUTE
  data.setUint32(16, options.unsigned ? 2 : 3, le);
  data.setUint32(20, commands, le);
  data.setUint32(24, 0x00200085, le); // MH_NOUNDEFS | MH_DYLDLINK | MH_TWOLEVEL | MH_PIE
  const segment = (at: number, name: string, fileoff: number, filesize: number, prot: number) => {
    data.setUint32(at, 0x19, le); // LC_SEGMENT_64
    data.setUint32(at + 4, 72, le);
    bytes.set(new TextEncoder().encode(name), at + 8);
    data.setBigUint64(at + 24, BigInt(0x100000000 + fileoff), le); // vmaddr
    data.setBigUint64(at + 32, BigInt(align(filesize, 0x4000)), le); // vmsize
    data.setBigUint64(at + 40, BigInt(fileoff), le);
    data.setBigUint64(at + 48, BigInt(filesize), le);
    data.setUint32(at + 56, prot, le); // maxprot
    data.setUint32(at + 60, prot, le); // initprot
  };
  segment(32, "__TEXT", 0, codeLimit, 5);
  segment(32 + 72, "__LINKEDIT", codeLimit, datasize, 1);
  if (!options.unsigned) {
    data.setUint32(32 + 144, 0x1d, le); // LC_CODE_SIGNATURE
    data.setUint32(32 + 148, 16, le);
    data.setUint32(32 + 152, codeLimit, le); // dataoff
    data.setUint32(32 + 156, datasize, le);
  }
  for (let at = textStart; at < textStart + textSize; at++) bytes[at] = (at * 131 + cpuType + (at >> 8)) & 0xff;
  if (options.unsigned) return bytes;
  const pages = Array.from({ length: Math.ceil(codeLimit / PAGE) }, (_, i) =>
    bytes.subarray(i * PAGE, Math.min((i + 1) * PAGE, codeLimit)),
  );
  const directory = codeDirectory(pages, codeLimit, identifier, teamId, requirements.bytes);
  bytes.set(superBlob(directory, requirements.bytes), codeLimit);
  if (options.corruptPage) bytes[PAGE + 100]! ^= 0xff;
  return bytes;
}

/** An x86_64 executable. */
export const x86_64 = (options?: MachOOptions) => thinMachO(CPU_X86_64, options);
/** An arm64 executable. */
export const arm64 = (options?: MachOOptions) => thinMachO(CPU_ARM64, options);

/** A universal binary (fat.h: big-endian fat_header and fat_arch, slices aligned to 16 KiB) of x86_64 and arm64. */
export function universal(options: MachOOptions = {}, arm64Options: MachOOptions = options): Uint8Array {
  const slices: [number, number, Uint8Array][] = [
    [CPU_X86_64, 3, x86_64(options)],
    [CPU_ARM64, 0, arm64(arm64Options)],
  ];
  const offsets: number[] = [];
  let end = 0x4000;
  for (const [, , slice] of slices) {
    offsets.push(end);
    end = align(end + slice.byteLength, 0x4000);
  }
  const { bytes, data } = blob(offsets.at(-1)! + slices.at(-1)![2].byteLength);
  data.setUint32(0, 0xcafebabe); // FAT_MAGIC
  data.setUint32(4, slices.length);
  slices.forEach(([cpuType, subtype, slice], i) => {
    data.setUint32(8 + i * 20, cpuType);
    data.setUint32(12 + i * 20, subtype);
    data.setUint32(16 + i * 20, offsets[i]!);
    data.setUint32(20 + i * 20, slice.byteLength);
    data.setUint32(24 + i * 20, 14); // align 2^14
    bytes.set(slice, offsets[i]!);
  });
  return bytes;
}

/** An XML Info.plist naming the bundle's executable. */
export function infoPlist(executable: string): Uint8Array {
  return new TextEncoder().encode(`<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
<plist version="1.0">
<dict>
	<key>CFBundleDisplayName</key>
	<string>Studio &amp; Co</string>
	<key>CFBundleExecutable</key>
	<string>${executable}</string>
	<key>CFBundleIdentifier</key>
	<string>com.example.studio</string>
</dict>
</plist>
`);
}

/** A binary Info.plist ("bplist00", as Xcode writes it): a dict of ASCII strings, one-byte offsets and references. */
export function binaryInfoPlist(executable: string): Uint8Array {
  const entries: [string, string][] = [
    ["CFBundleIdentifier", "com.example.studio"],
    ["CFBundleExecutable", executable],
  ];
  const strings = [...entries.map(([k]) => k), ...entries.map(([, v]) => v)];
  const objects: Uint8Array[] = [Uint8Array.of(0xd0 | entries.length, ...strings.map((_, i) => i + 1))];
  for (const s of strings) {
    const length = s.length < 15 ? [0x50 | s.length] : [0x5f, 0x10, s.length]; // 15+: an int object follows
    objects.push(Uint8Array.of(...length, ...new TextEncoder().encode(s)));
  }
  const body = [new TextEncoder().encode("bplist00")];
  const offsets: number[] = [];
  let at = 8;
  for (const object of objects) {
    offsets.push(at);
    body.push(object);
    at += object.byteLength;
  }
  const trailer = blob(32);
  trailer.data.setUint8(6, 1); // offset int size
  trailer.data.setUint8(7, 1); // object ref size
  trailer.data.setBigUint64(8, BigInt(objects.length));
  trailer.data.setBigUint64(16, 0n); // top object
  trailer.data.setBigUint64(24, BigInt(at)); // offset table
  return Buffer.concat([...body, Uint8Array.from(offsets), trailer.bytes]);
}

/** A zip of `Studio.app` as ditto/electron-builder make one, with a helper app nested inside it. */
export function studioZip(
  executable: Uint8Array,
  options: { plist?: Uint8Array; helper?: Uint8Array; name?: string } = {},
): Uint8Array {
  const name = options.name ?? "Studio";
  return zipSync({
    [`${name}.app/Contents/Frameworks/${name} Helper.app/Contents/Info.plist`]: infoPlist(`${name} Helper`),
    [`${name}.app/Contents/Frameworks/${name} Helper.app/Contents/MacOS/${name} Helper`]:
      options.helper ?? x86_64({ teamId: "HELPER0000" }),
    [`${name}.app/Contents/Info.plist`]: options.plist ?? infoPlist(name),
    [`${name}.app/Contents/MacOS/${name}`]: executable,
    [`${name}.app/Contents/Resources/app.asar`]: new Uint8Array(5000).fill(7),
  });
}

// ---------------------------------------------------------------------------------------------------------------
// Tauri (minisign)

const b64 = (bytes: Uint8Array | string) => Buffer.from(bytes).toString("base64");

/** A key pair as `tauri signer generate` makes it: the key id, the public key text and its tauri.conf.json form. */
export interface TauriKey {
  keyId: Uint8Array;
  /** Minisign's public key file text. */
  publicKeyText: string;
  /** tauri.conf.json's `pubkey`: base64 of the public key file text. */
  publicKey: string;
  /** The `Ed` ‖ key id ‖ key line of the public key file, decoded. */
  keyBytes: Uint8Array;
  sign(message: Uint8Array): Uint8Array;
}

function keyIdHex(keyId: Uint8Array): string {
  return Buffer.from(keyId).reverse().toString("hex").toUpperCase();
}

/** A fresh Ed25519 minisign key. */
export function tauriKey(): TauriKey {
  const { publicKey, privateKey } = generateKeyPairSync("ed25519");
  const raw = Buffer.from(publicKey.export({ format: "jwk" }).x!, "base64url");
  const keyId = new Uint8Array(randomBytes(8));
  const keyBytes = Buffer.concat([Buffer.from("Ed"), keyId, raw]);
  const publicKeyText = `untrusted comment: minisign public key: ${keyIdHex(keyId)}\n${b64(keyBytes)}\n`;
  return {
    keyId,
    publicKeyText,
    publicKey: b64(publicKeyText),
    keyBytes,
    sign: (message) => new Uint8Array(sign(null, message, privateKey)),
  };
}

/** The `.sig` of `bytes` as `tauri signer sign` writes it: base64 of the prehashed minisign signature text. */
export function tauriSign(key: TauriKey, bytes: Uint8Array, fileName = "Studio.app.tar.gz", legacy = false): string {
  const signed = legacy ? bytes : createHash("blake2b512").update(bytes).digest();
  const signature = key.sign(signed);
  const trusted = `timestamp:1767225600\tfile:${fileName}`;
  const global = key.sign(Buffer.concat([signature, Buffer.from(trusted)]));
  const line = Buffer.concat([Buffer.from(legacy ? "Ed" : "ED"), key.keyId, signature]);
  return b64(
    `untrusted comment: signature from tauri secret key\n${b64(line)}\ntrusted comment: ${trusted}\n${b64(global)}\n`,
  );
}
