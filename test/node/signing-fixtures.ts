/**
 * Signed Windows fixtures made at test time with the real tools (scripts/ensure-signing-tools.mjs installs them):
 * openssl certificates, osslsigncode Authenticode signatures over a real PE (the pinned rcedit devDependency's
 * rcedit-x64.exe) and a real MSI built by wixl, `.nupkg` archives zipped by fflate, and the broken variants the
 * inspectors of src/updates/signing must refuse. Used by signing-windows.test.ts and the end-to-end upload tests.
 * Everything is written under the directory given; large files are written by streams, never held whole.
 */
import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import {
  closeSync,
  copyFileSync,
  createWriteStream,
  mkdtempSync,
  openSync,
  readFileSync,
  statSync,
  writeFileSync,
  writeSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { once } from "node:events";
import { zipSync } from "fflate";

/** A real, unsigned PE32+ executable from the pinned rcedit devDependency. */
export const UNSIGNED_EXE = join(import.meta.dirname, "../../node_modules/rcedit/bin/rcedit-x64.exe");

/** A code-signing certificate and its key, as files. */
export interface TestCertificate {
  commonName: string;
  cert: string;
  key: string;
}

/** The digest osslsigncode signs with. */
export type SignHash = "sha256" | "sha1";

function run(command: string, args: string[], cwd?: string): void {
  execFileSync(command, args, { stdio: ["ignore", "pipe", "pipe"], cwd });
}

/**
 * A self-signed RSA 2048 certificate whose subject is CN=<name>, O=<name> Ltd, C=NO (encoded country first, as
 * CAs do, so Windows prints it "CN=<name>, O=<name> Ltd, C=NO").
 */
export function makeCertificate(commonName: string, dir: string): TestCertificate {
  const base = join(dir, commonName.replace(/[^A-Za-z0-9]+/g, "-"));
  const cert = `${base}.cert.pem`;
  const key = `${base}.key.pem`;
  run("openssl", [
    "req",
    "-x509",
    "-newkey",
    "rsa:2048",
    "-nodes",
    "-days",
    "30",
    "-keyout",
    key,
    "-out",
    cert,
    "-subj",
    `/C=NO/O=${commonName} Ltd/CN=${commonName}`,
  ]);
  return { commonName, cert, key };
}

/** Signs a PE file (or an MSI) with osslsigncode; returns `output`. */
export function signPe(input: string, output: string, cert: TestCertificate, hash: SignHash = "sha256"): string {
  run("osslsigncode", ["sign", "-certs", cert.cert, "-key", cert.key, "-h", hash, "-in", input, "-out", output]);
  return output;
}

/** Signs an MSI package with osslsigncode (the same command as a PE); returns `output`. */
export function signMsi(input: string, output: string, cert: TestCertificate, hash: SignHash = "sha256"): string {
  return signPe(input, output, cert, hash);
}

/** A tiny real MSI (one component, one file) built by wixl from a minimal WiX source; returns its path. */
export function makeMsi(dir: string, name = "app"): string {
  // wixl resolves a File's Source relative to the working directory, and takes no absolute path.
  const payload = `${name}-readme.txt`;
  writeFileSync(join(dir, payload), "A fixture installed by nothing.\n");
  const wxs = join(dir, `${name}.wxs`);
  writeFileSync(
    wxs,
    `<?xml version="1.0" encoding="utf-8"?>
<Wix xmlns="http://schemas.microsoft.com/wix/2006/wi">
  <Product Id="*" Name="Fixture" Language="1033" Version="1.0.0" Manufacturer="Fixture Ltd"
      UpgradeCode="6f1e1c8a-4c3b-4d3a-9a8e-1a2b3c4d5e6f">
    <Package InstallerVersion="200" Compressed="yes" />
    <Media Id="1" Cabinet="app.cab" EmbedCab="yes" />
    <Directory Id="TARGETDIR" Name="SourceDir">
      <Directory Id="ProgramFilesFolder">
        <Directory Id="INSTALLDIR" Name="Fixture">
          <Component Id="Main" Guid="0d4c1f9e-2b7a-4f6e-8c1d-3e5f7a9b1c2d">
            <File Id="Readme" Source="${payload}" KeyPath="yes" />
          </Component>
        </Directory>
      </Directory>
    </Directory>
    <Feature Id="Complete" Level="1"><ComponentRef Id="Main" /></Feature>
  </Product>
</Wix>
`,
  );
  const msi = join(dir, `${name}.msi`);
  run("wixl", ["-o", msi, wxs], dir);
  return msi;
}

/** The PKCS#7 of a signed MSI's DigitalSignature stream, read back with msiinfo (msitools). */
export function msiSignature(msi: string): Uint8Array {
  return new Uint8Array(execFileSync("msiinfo", ["extract", msi, "\u0005DigitalSignature"]));
}

/** A `.nupkg` (a zip, deflated) of the given entries, as bytes; written to `output` too when given. */
export function makeNupkg(entries: Record<string, Uint8Array | string>, output?: string): Uint8Array {
  const files = Object.fromEntries(
    Object.entries(entries).map(([name, data]) => [name, typeof data === "string" ? readFileSync(data) : data]),
  );
  const zip = zipSync(files, { level: 6 });
  if (output) writeFileSync(output, zip);
  return zip;
}

/** A Zip64 `.nupkg` (Info-ZIP's `zip -fz`: Zip64 end records, Zip64 extra fields) of files, by their base names. */
export function makeZip64Nupkg(files: string[], output: string): string {
  const staging = mkdtempSync(join(tmpdir(), "zip64-"));
  for (const file of files) copyFileSync(file, join(staging, basename(file)));
  run("zip", ["-q", "-fz", output, ...files.map((f) => basename(f))], staging);
  return output;
}

/**
 * A signed PE of about `sizeBytes` (the signature adds a kilobyte or two): rcedit-x64.exe with an overlay of
 * random bytes appended by a write stream before signing, so osslsigncode hashes and signs the whole of it.
 */
export async function bigSignedPe(
  sizeBytes: number,
  cert: TestCertificate,
  dir: string,
  hash: SignHash = "sha256",
): Promise<string> {
  const unsigned = join(dir, `big-${sizeBytes}.unsigned.exe`);
  copyFileSync(UNSIGNED_EXE, unsigned);
  const out = createWriteStream(unsigned, { flags: "a" });
  const chunk = randomBytes(1 << 20);
  let left = sizeBytes - statSync(UNSIGNED_EXE).size;
  while (left > 0) {
    const part = chunk.subarray(0, Math.min(left, chunk.byteLength));
    if (!out.write(part)) await once(out, "drain");
    left -= part.byteLength;
  }
  out.end();
  await once(out, "close");
  return signPe(unsigned, join(dir, `big-${sizeBytes}.exe`), cert, hash);
}

/** Where the security directory entry (certificate table offset and size) of a PE file lies. */
function securityEntry(pe: Buffer): number {
  const peOffset = pe.readUInt32LE(0x3c);
  const magic = pe.readUInt16LE(peOffset + 24);
  return peOffset + 24 + (magic === 0x20b ? 144 : 128);
}

/** The broken variants of a signed PE that the inspectors must refuse, each written beside it. */
export interface BrokenPes {
  /** Cut inside its optional header: MalformedFile. */
  truncated: string;
  /** The security directory says the certificate table runs 4 KiB past the end: MalformedFile. */
  tableOutside: string;
  /** One byte of its code flipped after signing: SignatureMismatch. */
  flipped: string;
  /** Random bytes where the PKCS#7 of its certificate table was: MalformedFile. */
  garbageTable: string;
  /** Not an executable at all (random bytes): MalformedFile. */
  notPe: string;
}

/** Writes the broken variants of the (small) signed PE `signed` into `dir`. */
export function brokenPes(signed: string, dir: string): BrokenPes {
  const pe = readFileSync(signed);
  const entry = securityEntry(pe);
  const tableOffset = pe.readUInt32LE(entry);
  const write = (name: string, bytes: Uint8Array) => {
    const path = join(dir, name);
    writeFileSync(path, bytes);
    return path;
  };
  const outside = Buffer.from(pe);
  outside.writeUInt32LE(pe.readUInt32LE(entry + 4) + 4096, entry + 4);
  const flipped = Buffer.from(pe);
  flipped[0x1000] = flipped[0x1000]! ^ 0x01;
  const garbage = Buffer.from(pe);
  randomBytes(pe.byteLength - tableOffset - 8).copy(garbage, tableOffset + 8);
  return {
    truncated: write("truncated.exe", pe.subarray(0, entry - 40)),
    tableOutside: write("table-outside.exe", outside),
    flipped: write("flipped.exe", flipped),
    garbageTable: write("garbage-table.exe", garbage),
    notPe: write("not-pe.exe", randomBytes(4096)),
  };
}

/**
 * A synthetic MSI of version 3 (512-byte sectors) whose FAT needs an extra DIFAT sector: 110 FAT sectors, the
 * 110th listed only in the DIFAT sector, and the directory and the signature stream placed past sector 13952, so
 * reading them follows the DIFAT chain. It holds only a root and the "\u0005DigitalSignature" stream `pkcs7`
 * (4096 bytes or more, a regular stream); the file is sparse, about 7 MB.
 */
export function difatMsi(pkcs7: Uint8Array, output: string): string {
  const SECTOR = 512;
  const FAT_SECTORS = 110;
  const DIFAT_SECTOR = FAT_SECTORS;
  const DIRECTORY = 14000;
  const STREAM = DIRECTORY + 1;
  const streamSectors = Math.ceil(pkcs7.byteLength / SECTOR);
  if (pkcs7.byteLength < 4096) throw new Error("difatMsi needs a signature of 4096 bytes or more");
  const at = (sector: number) => (sector + 1) * SECTOR;
  const header = Buffer.alloc(SECTOR);
  Buffer.from("d0cf11e0a1b11ae1", "hex").copy(header, 0);
  header.writeUInt16LE(0x3e, 0x18);
  header.writeUInt16LE(3, 0x1a);
  header.writeUInt16LE(0xfffe, 0x1c);
  header.writeUInt16LE(9, 0x1e);
  header.writeUInt16LE(6, 0x20);
  header.writeUInt32LE(FAT_SECTORS, 0x2c);
  header.writeUInt32LE(DIRECTORY, 0x30);
  header.writeUInt32LE(4096, 0x38);
  header.writeUInt32LE(0xfffffffe, 0x3c);
  header.writeUInt32LE(DIFAT_SECTOR, 0x44);
  header.writeUInt32LE(1, 0x48);
  for (let i = 0; i < 109; i++) header.writeUInt32LE(i, 0x4c + i * 4);
  const fat = Buffer.alloc(FAT_SECTORS * SECTOR, 0xff);
  for (let i = 0; i < FAT_SECTORS; i++) fat.writeUInt32LE(0xfffffffd, i * 4);
  fat.writeUInt32LE(0xfffffffc, DIFAT_SECTOR * 4);
  fat.writeUInt32LE(0xfffffffe, DIRECTORY * 4);
  for (let i = 0; i < streamSectors; i++)
    fat.writeUInt32LE(i === streamSectors - 1 ? 0xfffffffe : STREAM + i + 1, (STREAM + i) * 4);
  const difat = Buffer.alloc(SECTOR, 0xff);
  difat.writeUInt32LE(109, 0);
  difat.writeUInt32LE(0xfffffffe, SECTOR - 4);
  const directory = Buffer.alloc(SECTOR);
  const entry = (index: number, name: string, type: number, child: number, start: number, size: number) => {
    const base = index * 128;
    directory.write(`${name}\0`, base, "utf16le");
    directory.writeUInt16LE((name.length + 1) * 2, base + 64);
    directory.writeUInt8(type, base + 66);
    directory.writeUInt8(1, base + 67);
    directory.writeUInt32LE(0xffffffff, base + 68);
    directory.writeUInt32LE(0xffffffff, base + 72);
    directory.writeUInt32LE(child, base + 76);
    directory.writeUInt32LE(start, base + 116);
    directory.writeUInt32LE(size, base + 120);
  };
  entry(0, "Root Entry", 5, 1, 0xfffffffe, 0);
  entry(1, "\u0005DigitalSignature", 2, 0xffffffff, STREAM, pkcs7.byteLength);
  const fd = openSync(output, "w");
  try {
    writeSync(fd, header, 0, SECTOR, 0);
    writeSync(fd, fat, 0, fat.byteLength, at(0));
    writeSync(fd, difat, 0, SECTOR, at(DIFAT_SECTOR));
    writeSync(fd, directory, 0, SECTOR, at(DIRECTORY));
    const stream = Buffer.alloc(streamSectors * SECTOR);
    stream.set(pkcs7);
    writeSync(fd, stream, 0, stream.byteLength, at(STREAM));
  } finally {
    closeSync(fd);
  }
  return output;
}
