/**
 * The Apple and Tauri signature readers of CONTRACT section 15 (src/updates/signing/macho.ts, macos-zip.ts,
 * minisign.ts) over fixtures built in Node (macho-kit.ts): the Team ID of thin, universal and zipped apps, ad-hoc
 * and unsigned executables, a page changed after signing, truncated and foreign files; Tauri `.sig` files that
 * verify, that are over other bytes, by another key, or not signatures at all, and public keys that are not ones.
 */
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { describe, expect, it } from "vitest";
import { teamIdOfMachO } from "../../src/updates/signing/macho.ts";
import { inspectMacZip } from "../../src/updates/signing/macos-zip.ts";
import { isTauriSignature, tauriPublicKeyProblem, verifyTauriSignature } from "../../src/updates/signing/minisign.ts";
import { SignatureMismatch } from "../../src/updates/signing/mismatch.ts";
import { bytesSource, MalformedFile } from "../../src/updates/signing/source.ts";
import { zipSync } from "fflate";
import { arm64, binaryInfoPlist, infoPlist, studioZip, tauriKey, tauriSign, universal, x86_64 } from "./macho-kit.ts";

const TEAM = "A1B2C3D4E5";

/** The minisign crate's test vector of a prehashed signature of the four bytes "test". */
const MINISIGN_VECTOR = {
  publicKey: "RWQf6LRCGA9i53mlYecO4IzT51TGPpvWucNSCh1CBM0QTaLn73Y7GFO3",
  signature: [
    "untrusted comment: signature from minisign secret key",
    "RUQf6LRCGA9i559r3g7V1qNyJDApGip8MfqcadIgT9CuhV3EMhHoN1mGTkUidF/z7SrlQgXdy8ofjb7bNJJylDOocrCo8KLzZwo=",
    "trusted comment: timestamp:1556193335\tfile:test",
    "y/rUw2y8/hOUYjZU71eHp/Wo1KZ40fGy2VJEDl34XMJM+TX48Ss/17u3IvIfbVR1FkZZSNCisQbuQY+bHwhEBg==",
  ].join("\n"),
};

/** The bytes as a stream of small chunks, as an inflating zip entry or an R2 body delivers them. */
function chunked(bytes: Uint8Array, size = 1000): ReadableStream<Uint8Array> {
  let at = 0;
  return new ReadableStream<Uint8Array>({
    pull(controller) {
      if (at >= bytes.byteLength) return controller.close();
      controller.enqueue(bytes.slice(at, at + size));
      at += size;
    },
  });
}

describe("Mach-O code signatures", () => {
  it("reads the Team ID of thin x86_64 and arm64 executables, in one chunk or many", async () => {
    expect(await teamIdOfMachO(chunked(x86_64({ teamId: TEAM })))).toEqual({ teamId: TEAM, signed: true });
    expect(await teamIdOfMachO(chunked(arm64({ teamId: TEAM }), 4096))).toEqual({ teamId: TEAM, signed: true });
    const whole = arm64({ teamId: TEAM, textSize: 10 * 4096 });
    expect(await teamIdOfMachO(chunked(whole, whole.byteLength))).toEqual({ teamId: TEAM, signed: true });
  });

  it("reads the Team ID of a universal binary, all slices checked", async () => {
    expect(await teamIdOfMachO(chunked(universal({ teamId: TEAM }), 777))).toEqual({ teamId: TEAM, signed: true });
  });

  it("tells ad-hoc signed from unsigned", async () => {
    expect(await teamIdOfMachO(chunked(arm64({})))).toEqual({ teamId: null, signed: true });
    expect(await teamIdOfMachO(chunked(universal({})))).toEqual({ teamId: null, signed: true });
    expect(await teamIdOfMachO(chunked(x86_64({ unsigned: true })))).toEqual({ teamId: null, signed: false });
  });

  it("refuses a page changed after signing as SignatureMismatch, in a thin or universal binary", async () => {
    await expect(teamIdOfMachO(chunked(x86_64({ teamId: TEAM, corruptPage: true })))).rejects.toThrow(
      /page 1 .* does not match its code signature/,
    );
    const fat = teamIdOfMachO(chunked(universal({ teamId: TEAM }, { teamId: TEAM, corruptPage: true })));
    await expect(fat).rejects.toBeInstanceOf(SignatureMismatch);
    await expect(fat).rejects.toThrow(/arm64 slice/);
  });

  it("reads a universal binary Apple's linker made (velopack's macOS addon: x86_64 unsigned, arm64 linker-signed)", async () => {
    const real = readFileSync(createRequire(import.meta.url).resolve("velopack/lib/native/velopack_nodeffi_osx.node"));
    expect(await teamIdOfMachO(chunked(real, 65536))).toEqual({ teamId: null, signed: false });
    const fat = new DataView(real.buffer, real.byteOffset, real.byteLength);
    const arm64Slice = real.subarray(fat.getUint32(36), fat.getUint32(36) + fat.getUint32(40));
    expect(await teamIdOfMachO(chunked(arm64Slice, 65536))).toEqual({ teamId: null, signed: true });
    const changed = arm64Slice.slice();
    changed[5000]! ^= 1;
    await expect(teamIdOfMachO(chunked(changed, 65536))).rejects.toThrow(/arm64 slice .* page 1 /);
  });

  it("refuses slices that disagree on the Team ID, naming both", async () => {
    await expect(teamIdOfMachO(chunked(universal({ teamId: TEAM }, { teamId: "ZZZZZZZZZZ" })))).rejects.toThrow(
      new MalformedFile(
        "Mach-O: the slices disagree: the x86_64 slice is Team ID A1B2C3D4E5, the arm64 slice Team ID ZZZZZZZZZZ",
      ),
    );
  });

  it("names truncated and foreign files MalformedFile", async () => {
    const signed = x86_64({ teamId: TEAM });
    const cases: [Uint8Array, RegExp][] = [
      [signed.subarray(0, signed.byteLength - 100), /the file ends inside the x86_64 code signature/],
      [signed.subarray(0, 5000), /the file ends inside the x86_64 code/],
      [signed.subarray(0, 20), /the file ends inside the Mach-O header/],
      [universal({ teamId: TEAM }).subarray(0, 30000), /the file ends inside/],
      [new TextEncoder().encode("#!/bin/sh\necho hello, this is not a Mach-O\n"), /not a Mach-O executable/],
      [new Uint8Array(0), /the file ends inside the Mach-O header/],
    ];
    for (const [bytes, message] of cases) {
      const read = teamIdOfMachO(chunked(bytes));
      await expect(read).rejects.toBeInstanceOf(MalformedFile);
      await expect(read).rejects.toThrow(message);
    }
  });
});

describe("macOS app zips", () => {
  it("reads the main executable of Studio.app, not its helper app", async () => {
    const zip = studioZip(universal({ teamId: TEAM }), { helper: x86_64({ teamId: "HELPER0000" }) });
    expect(await inspectMacZip(bytesSource(zip))).toEqual({
      teamId: TEAM,
      signed: true,
      executable: "Studio.app/Contents/MacOS/Studio",
    });
  });

  it("reads a binary Info.plist", async () => {
    const zip = studioZip(arm64({ teamId: TEAM }), { plist: binaryInfoPlist("Studio") });
    expect((await inspectMacZip(bytesSource(zip))).teamId).toBe(TEAM);
  });

  it("reports unsigned and ad-hoc apps, and a changed page", async () => {
    expect(await inspectMacZip(bytesSource(studioZip(x86_64({ unsigned: true }))))).toMatchObject({ signed: false });
    expect(await inspectMacZip(bytesSource(studioZip(arm64())))).toMatchObject({ teamId: null, signed: true });
    await expect(
      inspectMacZip(bytesSource(studioZip(arm64({ teamId: TEAM, corruptPage: true })))),
    ).rejects.toBeInstanceOf(SignatureMismatch);
  });

  it("refuses a zip without an app, an app without its executable, and a file that is no zip", async () => {
    const noApp = zipSync({ "README.txt": new TextEncoder().encode("hello") });
    await expect(inspectMacZip(bytesSource(noApp))).rejects.toThrow(new MalformedFile("no .app bundle in the zip"));
    const noExecutable = zipSync({ "Studio.app/Contents/Info.plist": infoPlist("Studio") });
    await expect(inspectMacZip(bytesSource(noExecutable))).rejects.toThrow(
      /the zip has no Studio.app\/Contents\/MacOS\/Studio/,
    );
    const garbage = new TextEncoder().encode("this is not a zip archive at all, just some words");
    await expect(inspectMacZip(bytesSource(garbage))).rejects.toBeInstanceOf(MalformedFile);
  });
});

describe("Tauri updater signatures", () => {
  const key = tauriKey();
  const file = new Uint8Array(300_000).map((_, i) => (i * 7) % 251);

  it("verifies a signature made as `tauri signer sign` makes it", async () => {
    const signature = tauriSign(key, file);
    expect(isTauriSignature(signature)).toBe(true);
    expect(await verifyTauriSignature(key.publicKey, signature, chunked(file, 65536))).toEqual({ ok: true });
  });

  it("verifies the minisign crate's own prehashed test vector (rust-minisign src/tests.rs, verify_prehashed_det)", async () => {
    const wrap = (text: string) => Buffer.from(text).toString("base64");
    const publicKey = wrap(`untrusted comment: minisign public key: E7620F1842B4E81F\n${MINISIGN_VECTOR.publicKey}`);
    const signature = wrap(MINISIGN_VECTOR.signature);
    const bytes = new TextEncoder().encode("test");
    expect(await verifyTauriSignature(publicKey, signature, chunked(bytes))).toEqual({ ok: true });
    expect(await verifyTauriSignature(publicKey, signature, chunked(bytes.subarray(1)))).toMatchObject({ ok: false });
  });

  it("finds the same signature invalid over other bytes", async () => {
    const other = file.slice();
    other[12345]! ^= 1;
    const verdict = await verifyTauriSignature(key.publicKey, tauriSign(key, file), chunked(other));
    expect(verdict).toMatchObject({ ok: false, reason: "invalid" });
  });

  it("names another key's signature keyMismatch, with both key ids", async () => {
    const stranger = tauriKey();
    const verdict = await verifyTauriSignature(key.publicKey, tauriSign(stranger, file), chunked(file));
    expect(verdict).toMatchObject({ ok: false, reason: "keyMismatch" });
    const hex = (id: Uint8Array) => Buffer.from(id).reverse().toString("hex").toUpperCase();
    expect(!verdict.ok && verdict.message).toContain(hex(stranger.keyId));
    expect(!verdict.ok && verdict.message).toContain(hex(key.keyId));
  });

  it("finds a tampered trusted comment invalid (the global signature)", async () => {
    const text = Buffer.from(tauriSign(key, file), "base64").toString().replace("file:", "file:evil-");
    const verdict = await verifyTauriSignature(key.publicKey, Buffer.from(text).toString("base64"), chunked(file));
    expect(verdict).toMatchObject({ ok: false, reason: "invalid", message: expect.stringMatching(/global/) });
  });

  it("names truncated, garbage and legacy signatures malformed", async () => {
    const good = tauriSign(key, file);
    const texts = [
      good.slice(0, 120),
      good.slice(0, 200).replace(/.$/, "="),
      Buffer.from(Buffer.from(good, "base64").toString().split("\n").slice(0, 2).join("\n")).toString("base64"),
      "not a signature at all",
      tauriSign(key, file, "Studio.app.tar.gz", true),
    ];
    for (const text of texts) {
      const verdict = await verifyTauriSignature(key.publicKey, text, chunked(file));
      expect(verdict, text).toMatchObject({ ok: false, reason: "malformed" });
    }
    const legacy = await verifyTauriSignature(key.publicKey, texts[4]!, chunked(file));
    expect(!legacy.ok && legacy.message).toMatch(/legacy non-prehashed/);
    expect(isTauriSignature("not a signature at all")).toBe(false);
  });

  it("names why a text is not a Tauri public key", () => {
    expect(tauriPublicKeyProblem(key.publicKey)).toBeUndefined();
    expect(tauriPublicKeyProblem("not base64!")).toMatch(/not base64/);
    const short = key.publicKeyText.replace(/\n(.+)\n$/, (_, line: string) => {
      const bytes = Buffer.from(line, "base64");
      return `\n${bytes.subarray(0, 40).toString("base64")}\n`;
    });
    expect(tauriPublicKeyProblem(Buffer.from(short).toString("base64"))).toMatch(/is 40 bytes, a minisign key is 42/);
    expect(tauriPublicKeyProblem(Buffer.from(key.keyBytes).toString("base64"))).toMatch(/key line itself/);
    expect(tauriPublicKeyProblem(Buffer.from("hello world").toString("base64"))).toMatch(/untrusted comment/);
    const wrongAlgorithm = key.publicKeyText.replace(/\n(.+)\n$/, (_, line: string) => {
      const bytes = Buffer.from(line, "base64");
      bytes[1] = 0x44;
      return `\n${bytes.toString("base64")}\n`;
    });
    expect(tauriPublicKeyProblem(Buffer.from(wrongAlgorithm).toString("base64"))).toMatch(/not a minisign Ed25519/);
  });
});
