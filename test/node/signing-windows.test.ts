/**
 * The Windows signing inspectors (src/updates/signing: pe.ts, msi.ts, nupkg.ts, authenticode.ts, zip.ts) on real
 * files signed at test time by osslsigncode (signing-fixtures.ts): the signer of an exe signed with SHA-256 and with
 * SHA-1, of an MSI (its signature in the mini stream, in a regular stream, and behind an extra DIFAT sector), of
 * each exe in a nupkg (Zip64 too); null for unsigned ones; MalformedFile naming the fault for each broken file, and
 * SignatureMismatch for bytes changed after signing. A 50 MB exe read from disk through a counting ByteSource
 * proves that only headers and the certificate table are read as structures and the rest is only streamed.
 * Runs in about 3 s (the 50 MB fixture is most of it).
 */
import { createReadStream, mkdtempSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { open } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable } from "node:stream";
import { beforeAll, describe, expect, it } from "vitest";
// @ts-expect-error: a plain JavaScript module
import { ensureSigningTools } from "../../scripts/ensure-signing-tools.mjs";
import { SignatureMismatch } from "../../src/updates/signing/authenticode.ts";
import { inspectMsi } from "../../src/updates/signing/msi.ts";
import { inspectNupkg } from "../../src/updates/signing/nupkg.ts";
import { inspectPe, inspectPeStream } from "../../src/updates/signing/pe.ts";
import { type ByteSource, bytesSource, MalformedFile } from "../../src/updates/signing/source.ts";
import { entryStream, zipEntries } from "../../src/updates/signing/zip.ts";
import {
  bigSignedPe,
  type BrokenPes,
  brokenPes,
  difatMsi,
  makeCertificate,
  makeMsi,
  makeNupkg,
  makeZip64Nupkg,
  msiSignature,
  signMsi,
  signPe,
  type TestCertificate,
  UNSIGNED_EXE,
} from "./signing-fixtures.ts";

/** A ByteSource over a file on disk that records every read() and how many bytes went through stream(). */
function countingFileSource(path: string) {
  const size = statSync(path).size;
  const reads: number[] = [];
  const offsets: number[] = [];
  let streamed = 0;
  const source: ByteSource = {
    size,
    async read(offset, length) {
      reads.push(length);
      offsets.push(offset);
      const handle = await open(path, "r");
      try {
        const buffer = new Uint8Array(length);
        await handle.read(buffer, 0, length, offset);
        return buffer;
      } finally {
        await handle.close();
      }
    },
    async stream(offset = 0, length = size - offset) {
      const nodeStream = createReadStream(path, { start: offset, end: offset + length - 1 });
      nodeStream.on("data", (chunk) => {
        streamed += chunk.length;
      });
      return Readable.toWeb(nodeStream) as unknown as ReadableStream<Uint8Array>;
    },
  };
  return { source, reads, offsets, streamed: () => streamed };
}

function fileSource(path: string): ByteSource {
  return bytesSource(new Uint8Array(readFileSync(path)));
}

/** The error a promise rejects with (the test fails when it resolves). */
async function failure(promise: Promise<unknown>): Promise<Error> {
  try {
    await promise;
  } catch (e) {
    return e as Error;
  }
  throw new Error("expected a failure");
}

let dir: string;
let acme: TestCertificate;
let other: TestCertificate;
let sha256Exe: string;
let sha1Exe: string;
let broken: BrokenPes;

beforeAll(() => {
  ensureSigningTools();
  dir = mkdtempSync(join(tmpdir(), "signing-windows-"));
  acme = makeCertificate("Acme Software", dir);
  other = makeCertificate("Other Corp", dir);
  sha256Exe = signPe(UNSIGNED_EXE, join(dir, "app-sha256.exe"), acme, "sha256");
  sha1Exe = signPe(UNSIGNED_EXE, join(dir, "app-sha1.exe"), acme, "sha1");
  broken = brokenPes(sha256Exe, dir);
});

describe("PE (.exe)", () => {
  it("names the signer of an exe signed with SHA-256 and with SHA-1, with the subject as Windows prints it", async () => {
    for (const exe of [sha256Exe, sha1Exe]) {
      expect(await inspectPe(fileSource(exe), "app.exe")).toEqual({
        signer: "Acme Software",
        subject: "CN=Acme Software, O=Acme Software Ltd, C=NO",
      });
      const bytes = new Uint8Array(readFileSync(exe));
      expect((await inspectPeStream(await bytesSource(bytes).stream(), bytes.byteLength)).signer).toBe("Acme Software");
    }
  });

  it("reports an unsigned exe as signer null", async () => {
    expect(await inspectPe(fileSource(UNSIGNED_EXE))).toEqual({ signer: null });
    const bytes = new Uint8Array(readFileSync(UNSIGNED_EXE));
    expect(await inspectPeStream(await bytesSource(bytes).stream())).toEqual({ signer: null });
  });

  it("refuses each malformed exe with MalformedFile naming what is wrong", async () => {
    const cases: [string, RegExp][] = [
      [broken.truncated, /is not a PE file: it ends inside/],
      [broken.tableOutside, /certificate table lies outside the file/],
      [broken.garbageTable, /not PKCS#7 SignedData/],
      [broken.notPe, /is not a PE file: no MZ header/],
    ];
    for (const [path, message] of cases) {
      for (const attempt of [
        () => inspectPe(fileSource(path), "app.exe"),
        async () => inspectPeStream(await fileSource(path).stream(), undefined, "app.exe"),
      ]) {
        const error = await failure(attempt());
        expect(error, `${path}: ${error.message}`).toBeInstanceOf(MalformedFile);
        expect(error.message).toMatch(message);
        expect(error.message).toMatch(/^app\.exe/);
      }
    }
  });

  it("refuses an exe changed after signing, or its signature's bytes changed, with SignatureMismatch", async () => {
    const flipped = await failure(inspectPe(fileSource(broken.flipped), "app.exe"));
    expect(flipped).toBeInstanceOf(SignatureMismatch);
    expect(flipped.message).toMatch(/digest does not match its bytes/);
    const stream = await failure(inspectPeStream(await fileSource(broken.flipped).stream()));
    expect(stream).toBeInstanceOf(SignatureMismatch);
    // The last byte of the RSA signature (it ends the PKCS#7, before the table's padding to 8 bytes).
    const bytes = new Uint8Array(readFileSync(sha256Exe));
    const view = new DataView(bytes.buffer);
    const table = view.getUint32(securityEntry(bytes), true);
    bytes[table + view.getUint32(table, true) - 1 - paddingOf(bytes, table)]! ^= 0x01;
    const signature = await failure(inspectPe(bytesSource(bytes)));
    expect(signature).toBeInstanceOf(SignatureMismatch);
    expect(signature.message).toMatch(/not made by its signer certificate/);
  });

  it("reads only the headers and the certificate table of a 50 MB exe, and streams the rest once", async () => {
    const big = await bigSignedPe(50 * 1024 * 1024, acme, dir);
    const { source, reads, streamed } = countingFileSource(big);
    expect(await inspectPe(source, "big.exe")).toMatchObject({ signer: "Acme Software" });
    expect(Math.max(...reads)).toBeLessThan(1 << 20);
    expect(reads.reduce((a, b) => a + b, 0)).toBeLessThan(64 * 1024);
    expect(streamed()).toBeGreaterThan(50 * 1024 * 1024 - 4096);
    expect(streamed()).toBeLessThan(source.size);
  });
});

/** The security directory entry's file offset. */
function securityEntry(bytes: Uint8Array): number {
  const view = new DataView(bytes.buffer, bytes.byteOffset);
  const pe = view.getUint32(0x3c, true);
  return pe + 24 + (view.getUint16(pe + 24, true) === 0x20b ? 144 : 128);
}

/** How many zero bytes pad the WIN_CERTIFICATE at `table` (osslsigncode pads the PKCS#7 to 8 bytes). */
function paddingOf(bytes: Uint8Array, table: number): number {
  const end = table + new DataView(bytes.buffer).getUint32(table, true);
  let padding = 0;
  while (padding < 8 && bytes[end - 1 - padding] === 0) padding++;
  return padding;
}

describe("MSI", () => {
  it("names the signer of a signed MSI (signature in the mini stream and in a regular stream); null unsigned", async () => {
    const msi = makeMsi(dir);
    expect(await inspectMsi(fileSource(msi))).toEqual({ signer: null });
    const signed = signMsi(msi, join(dir, "app-signed.msi"), acme);
    expect(msiSignature(signed).byteLength).toBeLessThan(4096);
    expect(await inspectMsi(fileSource(signed))).toEqual({
      signer: "Acme Software",
      subject: "CN=Acme Software, O=Acme Software Ltd, C=NO",
    });
    // Extra certificates grow the signature past the 4096-byte mini stream cutoff.
    const bundle = join(dir, "bundle.pem");
    const extras = ["Extra One", "Extra Two", "Extra Three", "Extra Four"].map((n) => makeCertificate(n, dir));
    const pem = [acme, ...extras].map((c) => readFileSync(c.cert, "utf8")).join("");
    writeFileSync(bundle, pem);
    const large = signMsi(msi, join(dir, "app-large.msi"), { ...acme, cert: bundle }, "sha1");
    expect(msiSignature(large).byteLength).toBeGreaterThanOrEqual(4096);
    expect((await inspectMsi(fileSource(large))).signer).toBe("Acme Software");
    // A version 3 compound file whose FAT is reached through an extra DIFAT sector.
    const difat = difatMsi(msiSignature(large), join(dir, "difat.msi"));
    const { source, reads, offsets } = countingFileSource(difat);
    expect((await inspectMsi(source)).signer).toBe("Acme Software");
    expect(offsets).toContain((110 + 1) * 512); // the DIFAT sector
    expect(Math.max(...reads)).toBeLessThan(64 * 1024);
  });

  it("refuses a file that is not an MSI, and a signature of garbage, with MalformedFile", async () => {
    const notMsi = await failure(inspectMsi(fileSource(sha256Exe)));
    expect(notMsi).toBeInstanceOf(MalformedFile);
    expect(notMsi.message).toMatch(/not an MSI package: no compound file signature/);
    const path = signMsi(makeMsi(dir, "garbled"), join(dir, "garbled-signed.msi"), acme);
    const signed = new Uint8Array(readFileSync(path));
    const pkcs7 = msiSignature(path);
    const at = Buffer.from(signed).indexOf(Buffer.from(pkcs7.subarray(0, 64)));
    expect(at).toBeGreaterThan(0);
    signed.fill(0x5a, at, at + 64);
    const garbage = await failure(inspectMsi(bytesSource(signed)));
    expect(garbage).toBeInstanceOf(MalformedFile);
    expect(garbage.message).toMatch(/not PKCS#7 SignedData/);
  });
});

describe("nupkg", () => {
  it("names the signer of every exe inside, in archive order, null for the unsigned one", async () => {
    const second = signPe(UNSIGNED_EXE, join(dir, "other.exe"), other, "sha1");
    const nupkg = makeNupkg({
      "app.nuspec": new TextEncoder().encode("<package/>"),
      "lib/app/App.exe": sha256Exe,
      "lib/app/Update.EXE": second,
      "lib/app/tool.exe": UNSIGNED_EXE,
      "lib/app/readme.txt": new TextEncoder().encode("not an executable"),
    });
    expect(await inspectNupkg(bytesSource(nupkg))).toEqual([
      { entry: "lib/app/App.exe", signer: "Acme Software" },
      { entry: "lib/app/Update.EXE", signer: "Other Corp" },
      { entry: "lib/app/tool.exe", signer: null },
    ]);
    expect(await inspectNupkg(bytesSource(makeNupkg({ "app.nuspec": new Uint8Array(10) })))).toEqual([]);
    const zip64 = makeZip64Nupkg([sha256Exe, second], join(dir, "zip64.nupkg"));
    expect(readFileSync(zip64).includes(Buffer.from([0x50, 0x4b, 0x06, 0x06]))).toBe(true);
    expect(await inspectNupkg(fileSource(zip64))).toEqual([
      { entry: "app-sha256.exe", signer: "Acme Software" },
      { entry: "other.exe", signer: "Other Corp" },
    ]);
  });

  it("refuses a broken archive or executable inside with MalformedFile, a changed one with SignatureMismatch", async () => {
    const notZip = await failure(inspectNupkg(fileSource(sha256Exe)));
    expect(notZip).toBeInstanceOf(MalformedFile);
    expect(notZip.message).toMatch(/not a zip archive: no end of central directory record/);
    const truncatedExe = await failure(inspectNupkg(bytesSource(makeNupkg({ "lib/a.exe": broken.truncated }))));
    expect(truncatedExe).toBeInstanceOf(MalformedFile);
    expect(truncatedExe.message).toMatch(/^lib\/a\.exe is not a PE file/);
    const flipped = await failure(inspectNupkg(bytesSource(makeNupkg({ "lib/a.exe": broken.flipped }))));
    expect(flipped).toBeInstanceOf(SignatureMismatch);
    // A deflate stream cut short: the inflater's error comes out as MalformedFile.
    const zip = makeNupkg({ "lib/a.exe": sha256Exe });
    const [entry] = await zipEntries(bytesSource(zip));
    const corrupt = zip.slice();
    corrupt.fill(0xff, entry!.localHeaderOffset + 60, entry!.localHeaderOffset + 4000);
    const inflate = await failure(inspectNupkg(bytesSource(corrupt)));
    expect(inflate).toBeInstanceOf(MalformedFile);
    expect(inflate.message).toMatch(/does not inflate|is not a PE file/);
    expect(await new Response(await entryStream(bytesSource(zip), entry!)).arrayBuffer()).toHaveProperty(
      "byteLength",
      readFileSync(sha256Exe).byteLength,
    );
  });
});
