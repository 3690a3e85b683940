/**
 * Releases that cannot strand their installs (CONTRACT section 15), end to end through the public API of the bundled
 * Worker (local D1, R2, queues): builds signed at test time with the real tools (openssl certificates, osslsigncode
 * over a real PE, wixl's MSI; test/node/signing-fixtures.ts), macOS apps and Tauri signatures by the layouts of
 * test/node/macho-kit.ts. Accepted builds record what was found; a changed signer, an unsigned build where one was
 * signed, a signature over other bytes and a malformed file are refused with nothing stored (the release's artifacts
 * unchanged, no R2 object left); an Administrator's deliberate change is recorded, audited and carried by
 * release.published; a 200 MB installer is checked through a resumable upload in bounded memory.
 */
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import {
  closeSync,
  copyFileSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readFileSync,
  readSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
// @ts-expect-error: a plain JavaScript module
import { ensureSigningTools } from "../../scripts/ensure-signing-tools.mjs";
// @ts-expect-error: a plain JavaScript module shared with the benchmark
import { startLocalWorker } from "../../scripts/local-worker.mjs";
// @ts-expect-error: a plain JavaScript module of the benchmark
import { MemorySampler, workerdChildren } from "../../bench/memory.mjs";
import {
  type BrokenPes,
  type TestCertificate,
  UNSIGNED_EXE,
  bigSignedPe,
  brokenPes,
  makeCertificate,
  makeMsi,
  makeNupkg,
  signMsi,
  signPe,
} from "./signing-fixtures.ts";
import { arm64, studioZip, tauriKey, tauriSign } from "./macho-kit.ts";
import type { JsonBody } from "../json-body.ts";
// electron-updater's own Authenticode publisher check, as NsisUpdater calls it before installing an update.
import { verifySignature } from "electron-updater/out/windowsExecutableCodeSignatureVerifier.js";

const KEY = "api_SigningAdminKey00000000000000000";
const PUBLISHER = "Studio Software Ltd";
const OTHER = "Studio GmbH";
const TEAM = "7Z6EMTD2C6";
const MiB = 1024 * 1024;

let worker: { url: URL; mf: { getR2Bucket(name: string): Promise<R2Bucket> }; dispose(): Promise<void> };
let dir: string;
let certA: TestCertificate;
let certB: TestCertificate;
const files: Record<string, string> = {};
let broken: BrokenPes;

async function rest(method: string, path: string, body?: unknown, key = KEY) {
  const res = await fetch(new URL(path, worker.url), {
    method,
    headers: { "x-api-key": key, ...(body !== undefined ? { "content-type": "application/json" } : {}) },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  const text = await res.text();
  return { status: res.status, text, body: (text ? JSON.parse(text) : {}) as JsonBody };
}

/** A multipart upload of a file on disk (fields first, the file last), as licensing-publish sends one. */
async function upload(
  path: string,
  file: string | Uint8Array,
  fields: Record<string, string>,
  options: { key?: string; name?: string } = {},
) {
  const form = new FormData();
  for (const [name, value] of Object.entries(fields)) form.set(name, value);
  const bytes = typeof file === "string" ? readFileSync(file) : file;
  form.set("file", new Blob([bytes]), options.name ?? fields["fileName"] ?? "Setup.exe");
  const res = await fetch(new URL(path, worker.url), {
    method: "POST",
    headers: { "x-api-key": options.key ?? KEY },
    body: form,
  });
  const text = await res.text();
  return { status: res.status, text, body: (text ? JSON.parse(text) : {}) as JsonBody };
}

let codes = 0;
async function product(fields: Record<string, unknown> = {}): Promise<{ id: number; code: string }> {
  const code = `signed-${++codes}`;
  const res = await rest("POST", "/v1/products", { product: { code, name: code, isApplication: true, ...fields } });
  expect(res.status, res.text).toBe(200);
  return { id: res.body["productId"], code };
}

async function release(productId: number, version: string, isPublic = false): Promise<string> {
  const res = await rest("POST", `/v1/products/${productId}/releases`, {
    productRelease: { version, public: isPublic },
  });
  expect(res.status, res.text).toBe(200);
  return `/v1/products/${productId}/releases/${res.body["productReleaseId"]}`;
}

async function artifacts(releasePath: string): Promise<JsonBody[]> {
  const res = await rest("GET", `${releasePath}/downloads`);
  expect(res.status, res.text).toBe(200);
  return res.body["releaseDownloads"];
}

/** Every R2 key under a product's version (artifacts/<code>/<version>/…), the upload states aside. */
async function storedKeys(code: string, version: string): Promise<string[]> {
  const bucket = await worker.mf.getR2Bucket("ARTIFACTS");
  const listed = await bucket.list({ prefix: `artifacts/${code}/${version}/` });
  return listed.objects.map((o) => o.key);
}

beforeAll(async () => {
  ensureSigningTools();
  dir = mkdtempSync(join(tmpdir(), "signing-uploads-"));
  certA = makeCertificate(PUBLISHER, dir);
  certB = makeCertificate(OTHER, dir);
  files["a.exe"] = signPe(UNSIGNED_EXE, join(dir, "a.exe"), certA);
  files["b.exe"] = signPe(UNSIGNED_EXE, join(dir, "b.exe"), certB);
  files["a.msi"] = signMsi(makeMsi(dir), join(dir, "a.msi"), certA);
  broken = brokenPes(files["a.exe"], dir);
  worker = await startWorker();
}, 180_000);

function startWorker() {
  return startLocalWorker({
    bindings: {
      Application__JwtSecret: "signing-test-jwt-secret-0123456789abcdef",
      Application__EncryptionKey: "signing-test-encryption-key",
      Application__AdminUsername: "admin",
      Application__AdminPassword: "Signing-12345",
      Application__AdminApiKey: KEY,
      Webhooks__AllowInsecureUrls: "true",
    },
  });
}

afterAll(async () => {
  await worker?.dispose();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe("a product's windowsPublisherNames", () => {
  it("records the signer, and refuses another signer, an unsigned build, bytes changed after signing and malformed files, storing nothing", async () => {
    const p = await product({ windowsPublisherNames: [PUBLISHER] });
    const first = await release(p.id, "1.0.0");
    const ok = await upload(`${first}/downloads`, files["a.exe"]!, {
      platform: "win-x64",
      kind: "installer",
      fileName: "Studio Setup 1.0.0.exe",
    });
    expect(ok.status, ok.text).toBe(201);
    const msi = await upload(`${first}/downloads`, files["a.msi"]!, {
      platform: "win-arm64",
      kind: "installer",
      fileName: "Studio 1.0.0.msi",
    });
    expect(msi.status, msi.text).toBe(201);
    const found = await artifacts(first);
    expect(found.map((a) => [a["fileName"], a["signer"]]).sort()).toEqual([
      ["Studio 1.0.0.msi", PUBLISHER],
      ["Studio Setup 1.0.0.exe", PUBLISHER],
    ]);

    const next = await release(p.id, "1.0.1");
    const cases: [string, string | Uint8Array, number, string | undefined][] = [
      [files["b.exe"]!, files["b.exe"]!, 409, "signerChanged"],
      ["unsigned", UNSIGNED_EXE, 409, "unsigned"],
      ["changed after signing", broken.flipped, 409, "signatureInvalid"],
      ["truncated", broken.truncated, 400, undefined],
      ["certificate table outside", broken.tableOutside, 400, undefined],
      ["garbage certificate table", broken.garbageTable, 400, undefined],
      ["not a PE", broken.notPe, 400, undefined],
    ];
    for (const [name, file, status, reason] of cases) {
      const res = await upload(`${next}/downloads`, file, {
        platform: "win-x64",
        kind: "installer",
        fileName: "Studio Setup 1.0.1.exe",
      });
      expect(res.status, `${name}: ${res.text}`).toBe(status);
      expect(res.body["message"], name).toContain("Studio Setup 1.0.1.exe");
      expect(res.body["reason"], name).toBe(reason);
      if (reason === "signerChanged") {
        expect(res.body["expected"]).toEqual([PUBLISHER]);
        expect(res.body["found"]).toBe(OTHER);
        expect(res.body["artifact"]).toBe("Studio Setup 1.0.1.exe");
      }
      // found: null (answers leave nulls out under Application:IgnoreJSonDefaultValues).
      if (reason === "unsigned") expect(res.body["found"] ?? null).toBeNull();
    }
    // A Squirrel/Velopack package is judged by every executable in it.
    const nupkg = makeNupkg({ "lib/net45/Studio.exe": files["a.exe"]!, "lib/net45/Update.exe": files["b.exe"]! });
    const refusedPackage = await upload(`${next}/downloads`, nupkg, {
      platform: "win-x64",
      kind: "package",
      fileName: "Studio-1.0.1-full.nupkg",
    });
    expect(refusedPackage.status, refusedPackage.text).toBe(409);
    expect(refusedPackage.body["entry"]).toBe("lib/net45/Update.exe");
    expect(refusedPackage.body["found"]).toBe(OTHER);
    // Nothing of the refusals is stored: no artifact, no R2 object.
    expect(await artifacts(next)).toEqual([]);
    expect(await storedKeys(p.code, "1.0.1")).toEqual([]);
    // Stored in D1 chunks (sourceKind resource) the same: the signer read as the chunks are written, a refusal
    // leaving no pending row and no chunk.
    const resource = {
      platform: "win-arm64",
      kind: "installer",
      fileName: "Studio 1.0.1 arm64.exe",
      sourceKind: "resource",
    };
    const refusedChunks = await upload(`${next}/downloads`, files["b.exe"]!, resource);
    expect(refusedChunks.status, refusedChunks.text).toBe(409);
    const db = await (worker.mf as unknown as { getD1Database(n: string): Promise<D1Database> }).getD1Database("DB");
    const leftover = await db
      .prepare(
        "SELECT (SELECT count(*) FROM release_downloads WHERE platform LIKE 'pending:%') AS rows, (SELECT count(*) FROM artifact_chunks) AS chunks",
      )
      .first<{ rows: number; chunks: number }>();
    expect(leftover).toEqual({ rows: 0, chunks: 0 });
    const storedChunks = await upload(`${next}/downloads`, files["a.exe"]!, resource);
    expect(storedChunks.status, storedChunks.text).toBe(201);
    const accepted = await upload(`${next}/downloads`, makeNupkg({ "lib/net45/Studio.exe": files["a.exe"]! }), {
      platform: "win-x64",
      kind: "package",
      fileName: "Studio-1.0.1-full.nupkg",
    });
    expect(accepted.status, accepted.text).toBe(201);
    expect((await artifacts(next)).map((a) => [a["sourceKind"], a["signer"]])).toEqual([
      ["resource", PUBLISHER],
      ["local", PUBLISHER],
    ]);
  });

  it("judges bytes relabelled into a Windows build as an upload: a rename never publishes a refused signer", async () => {
    const p = await product({ windowsPublisherNames: [PUBLISHER] });
    const r = await release(p.id, "1.0.0");
    const asLinux = (file: string, name: string) =>
      upload(`${r}/downloads`, file, { platform: "linux-x64", kind: "installer", fileName: name });
    const foreign = await asLinux(files["b.exe"]!, "Studio.AppImage");
    expect(foreign.status, foreign.text).toBe(201);
    const id = foreign.body["releaseDownloadId"];
    const relabel = await rest("PUT", `${r}/downloads`, {
      releaseDownload: { id, platform: "win-x64", fileName: "Studio Setup 1.0.0.exe" },
    });
    expect(relabel.status, relabel.text).toBe(409);
    expect(relabel.body).toMatchObject({ reason: "signerChanged", found: OTHER });
    expect((await artifacts(r)).map((a) => [a["platform"], a["fileName"]])).toEqual([["linux-x64", "Studio.AppImage"]]);
    await rest("DELETE", `${r}/downloads/${id}`);
    const own = await asLinux(files["a.exe"]!, "Studio.AppImage");
    const renamed = await rest("PUT", `${r}/downloads`, {
      releaseDownload: { id: own.body["releaseDownloadId"], platform: "win-x64", fileName: "Studio Setup 1.0.0.exe" },
    });
    expect(renamed.status, renamed.text).toBe(200);
    expect((await artifacts(r))[0]).toMatchObject({ platform: "win-x64", signer: PUBLISHER });
  });

  it("accepts a name given as a distinguished name when every attribute matches, as electron-updater does", async () => {
    const p = await product({ windowsPublisherNames: [`CN=${PUBLISHER}, O=${PUBLISHER} Ltd, C=NO`] });
    const r = await release(p.id, "1.0.0");
    const fields = { platform: "win-x64", kind: "installer", fileName: "Setup.exe" };
    expect((await upload(`${r}/downloads`, files["b.exe"]!, fields)).status).toBe(409);
    const res = await upload(`${r}/downloads`, files["a.exe"]!, fields);
    expect(res.status, res.text).toBe(201);
  });
});

describe("without a list, the previous public release's signer", () => {
  it("is the rule; an Administrator's allowSignerChange is recorded, audited and carried by release.published; anyone else gets 403", async () => {
    const events: JsonBody[] = [];
    const receiver = createServer((req, res) => {
      let body = "";
      req.on("data", (c) => (body += c));
      req.on("end", () => {
        events.push(JSON.parse(body));
        res.end();
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));
    try {
      const port = (receiver.address() as AddressInfo).port;
      const hook = await rest("POST", "/v1/webhooks/subscriptions", {
        subscription: { name: "releases", url: `http://127.0.0.1:${port}/hook`, eventTypes: ["release.published"] },
      });
      expect(hook.status, hook.text).toBe(201);
      const p = await product();
      const fields = (version: string) => ({
        platform: "win-x64",
        kind: "installer",
        fileName: `Setup ${version}.exe`,
      });
      // A product that never signed: placeholder bytes are stored as before, their signer unknown.
      const draft = await release(p.id, "0.9.0");
      const placeholder = await upload(`${draft}/downloads`, new Uint8Array(64).fill(7), fields("0.9.0"));
      expect(placeholder.status, placeholder.text).toBe(201);
      const first = await release(p.id, "1.0.0", true);
      expect((await upload(`${first}/downloads`, files["a.exe"]!, fields("1.0.0"))).status).toBe(201);

      const second = await release(p.id, "1.1.0");
      const refused = await upload(`${second}/downloads`, files["b.exe"]!, fields("1.1.0"));
      expect(refused.status, refused.text).toBe(409);
      expect(refused.body).toMatchObject({ reason: "signerChanged", expected: [PUBLISHER], found: OTHER });
      const unsigned = await upload(`${second}/downloads`, UNSIGNED_EXE, fields("1.1.0"));
      expect(unsigned.body["reason"], unsigned.text).toBe("unsigned");

      // A LicenseManager may upload, but not accept another signer: 403, whether as a form field or the query.
      const manager = await keyFor("LicenseManager");
      const asManager = await upload(
        `${second}/downloads`,
        files["b.exe"]!,
        { ...fields("1.1.0"), allowSignerChange: "true" },
        { key: manager },
      );
      expect(asManager.status, asManager.text).toBe(403);
      const viaQuery = await upload(`${second}/downloads?allowSignerChange=true`, files["b.exe"]!, fields("1.1.0"), {
        key: manager,
      });
      expect(viaQuery.status, viaQuery.text).toBe(403);
      expect(await artifacts(second)).toEqual([]);

      const changed = await upload(`${second}/downloads`, files["b.exe"]!, {
        ...fields("1.1.0"),
        allowSignerChange: "true",
      });
      expect(changed.status, changed.text).toBe(201);
      const stored = (await rest("GET", `${second}`)).body["productRelease"];
      expect(stored["signerChanges"]).toEqual([
        expect.objectContaining({ platform: "win-x64", fileName: "Setup 1.1.0.exe", from: [PUBLISHER], to: OTHER }),
      ]);
      const audit = await rest("GET", `/v1/log?filter=${encodeURIComponent('category == "Audit"')}`);
      expect(audit.text).toContain("SignerChanged");

      expect(
        (await rest("PUT", `/v1/products/${p.id}/releases`, { productRelease: { id: idOf(second), public: true } }))
          .status,
      ).toBe(200);
      await until(() => events.some((e) => e["data"]?.["version"] === "1.1.0"));
      const published = events.find((e) => e["data"]["version"] === "1.1.0")!;
      expect(published["signerChanged"]).toEqual({ from: [PUBLISHER], to: OTHER });
      expect(events.find((e) => e["data"]["version"] === "1.0.0")?.["signerChanged"]).toBeUndefined();

      // The next release is judged against the new signer.
      const third = await release(p.id, "1.2.0");
      const back = await upload(`${third}/downloads`, files["a.exe"]!, fields("1.2.0"));
      expect(back.status, back.text).toBe(409);
      expect(back.body).toMatchObject({ reason: "signerChanged", expected: [OTHER], found: PUBLISHER });
    } finally {
      receiver.close();
    }
  });
});

describe("macOS Team IDs and Tauri keys", () => {
  it("reads the app's Team ID from the zip and verifies the Tauri signature over the bytes", async () => {
    const key = tauriKey();
    const badKey = await rest("POST", "/v1/products", {
      product: { code: "bad-tauri", name: "x", tauriPublicKey: "not a key" },
    });
    expect(badKey.status, badKey.text).toBe(400);
    expect(badKey.text).toContain("tauriPublicKey");
    const p = await product({ macTeamIds: [TEAM], tauriPublicKey: key.publicKey });
    const r = await release(p.id, "2.0.0");
    const zip = (team: string | null) => studioZip(arm64({ teamId: team }));
    const fields = { platform: "darwin-arm64", kind: "zip", fileName: "Studio-2.0.0-arm64-mac.zip" };
    const other = await upload(`${r}/downloads`, zip("AAAAAAAAAA"), fields);
    expect(other.status, other.text).toBe(409);
    expect(other.body).toMatchObject({ reason: "signerChanged", expected: [TEAM], found: "AAAAAAAAAA" });
    const adHoc = await upload(`${r}/downloads`, zip(null), fields);
    expect(adHoc.body["reason"], adHoc.text).toBe("unsigned");
    const good = await upload(`${r}/downloads`, zip(TEAM), fields);
    expect(good.status, good.text).toBe(201);

    const archive = new Uint8Array(300_000).map((_, i) => (i * 31) & 0xff);
    const archiveFields = (signature: string) => ({
      platform: "linux-x64",
      kind: "archive",
      fileName: "studio_2.0.0_amd64.AppImage.tar.gz",
      signature,
    });
    const forged = await upload(
      `${r}/downloads`,
      archive,
      archiveFields(
        tauriSign(
          key,
          archive.map((b) => b ^ 1),
          "studio_2.0.0_amd64.AppImage.tar.gz",
        ),
      ),
    );
    expect(forged.status, forged.text).toBe(409);
    expect(forged.body["reason"]).toBe("signatureInvalid");
    const foreign = await upload(`${r}/downloads`, archive, archiveFields(tauriSign(tauriKey(), archive)));
    expect(foreign.status, foreign.text).toBe(409);
    const garbled = await upload(`${r}/downloads`, archive, archiveFields(btoa("untrusted comment: cut short")));
    expect(garbled.status, garbled.text).toBe(400);
    expect(await storedKeys(p.code, "2.0.0")).toHaveLength(1);
    const signed = await upload(`${r}/downloads`, archive, archiveFields(tauriSign(key, archive)));
    expect(signed.status, signed.text).toBe(201);
    const found = await artifacts(r);
    expect(found.map((a) => [a["kind"], a["teamId"] ?? null, a["signatureVerified"] ?? null]).sort()).toEqual([
      ["archive", null, true],
      ["zip", TEAM, null],
    ]);
  });
});

describe("a 200 MB installer", () => {
  it("is checked through a resumable upload without being held whole; a refused one leaves nothing behind", async () => {
    const big = await bigSignedPe(200 * MiB, certA, dir);
    const size = statSync(big).size;
    // The instrument first: workerd's memory grows with every large upload it stores in local R2, whatever the
    // route does, so each measurement runs in a fresh Worker doing that one upload: the same bytes through the same
    // route, once where no signer is read (a Linux file name), once checked.
    const peakOf = async (target?: { platform: string; fileName: string }) => {
      const shared = worker;
      worker = await startWorker();
      const sampler = new MemorySampler(() => workerdChildren(), 50);
      try {
        sampler.phase("upload");
        const p = await product({ windowsPublisherNames: [PUBLISHER] });
        const res = await resumable(await release(p.id, "3.0.0"), big, size, target);
        expect(res.status, res.text).toBe(201);
        if (!target)
          expect(res.body["signer"] ?? (await artifacts(await latestRelease(p.id)))[0]!["signer"]).toBe(PUBLISHER);
        return sampler.peak("upload");
      } finally {
        sampler.stop();
        await worker.dispose();
        worker = shared;
      }
    };
    const withoutCheck = await peakOf({ platform: "linux-x64", fileName: "Studio-3.0.0.AppImage" });
    const withCheck = await peakOf();
    console.log(`workerd peak RSS: ${mb(withoutCheck)} storing 200 MB unchecked, ${mb(withCheck)} checked`);
    // Reading the signer holds headers and the certificate table and hashes the rest as it streams: the check adds
    // less than the file (holding it whole would add at least its 200 MB). Measured here: about 100 MB more, which
    // is local R2's body buffered ahead of the slower hashing loop of a second pass (Miniflare's R2 serves a get
    // over a loopback socket without backpressure); test/node/signing-windows.test.ts proves by counted reads that
    // the inspector itself reads only headers and the certificate table.
    expect(withCheck - withoutCheck).toBeLessThan(150 * MiB);

    // A resumable upload refused at completion leaves nothing either (the assembled object and the upload's state go).
    const refusing = await product({ windowsPublisherNames: [OTHER] });
    const refused = await resumable(
      await release(refusing.id, "3.0.0"),
      files["a.exe"]!,
      statSync(files["a.exe"]!).size,
    );
    expect(refused.status, refused.text).toBe(409);
    expect(refused.body["found"]).toBe(PUBLISHER);
    expect(await storedKeys(refusing.code, "3.0.0")).toEqual([]);
    const bucket = await worker.mf.getR2Bucket("ARTIFACTS");
    expect((await bucket.list({ prefix: "artifacts/.uploads/" })).objects).toEqual([]);
    // The query of .../complete carries allowSignerChange: 403 from a LicenseManager, recorded from an Administrator.
    const small = [files["a.exe"]!, statSync(files["a.exe"]!).size] as const;
    const target = { platform: "win-x64", fileName: "Studio Setup 3.0.0.exe" };
    const managerKey = await keyFor("LicenseManager");
    const byManager = await resumable(await latestRelease(refusing.id), ...small, target, {
      key: managerKey,
      complete: "?allowSignerChange=true",
    });
    expect(byManager.status, byManager.text).toBe(403);
    const byAdmin = await resumable(await latestRelease(refusing.id), ...small, target, {
      complete: "?allowSignerChange=true",
    });
    expect(byAdmin.status, byAdmin.text).toBe(201);
    const changed = (await rest("GET", await latestRelease(refusing.id))).body["productRelease"];
    expect(changed["signerChanges"]).toEqual([expect.objectContaining({ from: [OTHER], to: PUBLISHER })]);
  }, 240_000);
});

describe("electron-updater's own publisher check", () => {
  it("agrees with the service's verdict for the same signed installers", async () => {
    // electron-updater asks PowerShell's Get-AuthenticodeSignature, which Linux lacks: a powershell.exe on the PATH
    // answers that one command from osslsigncode's verification and openssl's reading of the signer (decision 0040).
    // Parsing its answer, matching publisherName and the verdict are electron-updater's code.
    const bin = join(dir, "bin");
    mkdirSync(bin, { recursive: true });
    writeFileSync(join(bin, "chcp"), "#!/bin/sh\nexit 0\n", { mode: 0o755 });
    writeFileSync(join(bin, "powershell.exe"), POWERSHELL, { mode: 0o755 });
    writeFileSync(join(dir, "trusted.pem"), readFileSync(certA.cert, "utf8") + readFileSync(certB.cert, "utf8"));
    const path = process.env["PATH"];
    const cwd = process.cwd();
    // electron-updater's command line redirects chcp's output to a file named NUL: in the test's directory, not here.
    process.chdir(dir);
    process.env["PATH"] = `${bin}:${path}`;
    process.env["SIGNING_TEST_CA"] = join(dir, "trusted.pem");
    const logger = { info: () => undefined, warn: () => undefined, error: () => undefined, debug: () => undefined };
    try {
      const names = [PUBLISHER, `CN=${PUBLISHER}, O=${PUBLISHER} Ltd, C=NO`, `CN=${PUBLISHER}, O=Elsewhere`];
      const builds = {
        signed: files["a.exe"]!,
        other: files["b.exe"]!,
        unsigned: UNSIGNED_EXE,
        changed: broken.flipped,
      };
      const verdicts: string[] = [];
      for (const name of names) {
        const p = await product({ windowsPublisherNames: [name] });
        const r = await release(p.id, "1.0.0");
        for (const [build, file] of Object.entries(builds)) {
          const copy = join(dir, `updater-${build}.exe`);
          copyFileSync(file, copy);
          const updater = (await verifySignature([name], copy, logger)) === null ? "accepts" : "refuses";
          const res = await upload(`${r}/downloads`, file, {
            platform: "win-x64",
            kind: "installer",
            fileName: "Setup.exe",
          });
          const service = res.status === 201 ? "accepts" : "refuses";
          if (res.status === 201) await rest("DELETE", `${r}/downloads/${res.body["releaseDownloadId"]}`);
          expect(service, `${name}, ${build}: electron-updater ${updater}, the service answered ${res.text}`).toBe(
            updater,
          );
          verdicts.push(`${build} ${service}`);
        }
      }
      // Not a vacuous agreement: both verdicts occur.
      expect(verdicts).toContain("signed accepts");
      expect(verdicts).toContain("other refuses");
    } finally {
      process.env["PATH"] = path;
      process.chdir(cwd);
    }
  });
});

/**
 * `powershell.exe -Command "Get-AuthenticodeSignature -LiteralPath '<file>' | ConvertTo-Json -Compress"` for
 * electron-updater: Status 0 (Valid) when osslsigncode verifies the file against the test certificates, else 2
 * (NotSigned) or 1; the signer's subject as Windows prints it (RFC 2253 order, ", " between the names).
 */
const POWERSHELL = `#!/usr/bin/env node
const { execFileSync } = require("node:child_process");
const { mkdtempSync } = require("node:fs");
const { join } = require("node:path");
const { tmpdir } = require("node:os");
const command = process.argv.slice(2).join(" ");
const file = /-LiteralPath '((?:[^']|'')*)'/.exec(command)[1].replaceAll("''", "'");
const run = (cmd, args, input) => execFileSync(cmd, args, { input, stdio: ["pipe", "pipe", "ignore"] });
let status = 0;
let subject;
try {
  run("osslsigncode", ["verify", "-in", file, "-CAfile", process.env.SIGNING_TEST_CA]);
} catch {
  status = 1;
}
try {
  const der = join(mkdtempSync(join(tmpdir(), "ps-")), "sig.der");
  run("osslsigncode", ["extract-signature", "-in", file, "-out", der]);
  const certs = run("openssl", ["pkcs7", "-inform", "DER", "-in", der, "-print_certs"]);
  subject = run("openssl", ["x509", "-noout", "-subject", "-nameopt", "RFC2253"], certs)
    .toString().trim().replace(/^subject=/, "").replaceAll(",", ", ");
} catch {
  status = 2;
}
process.stdout.write(JSON.stringify({ Status: status, Path: file, SignerCertificate: subject ? { Subject: subject } : null }));
`;

const mb = (bytes: number) => `${(bytes / MiB).toFixed(0)} MB`;

/** A resumable upload of a file on disk in 16 MiB parts, read one part at a time. */
async function resumable(
  releasePath: string,
  file: string,
  size: number,
  target = { platform: "win-x64", fileName: "Studio Setup 3.0.0.exe" },
  { key = KEY, complete = "" }: { key?: string; complete?: string } = {},
) {
  const start = await rest(
    "POST",
    `${releasePath}/downloads/uploads`,
    { upload: { ...target, kind: "installer" } },
    key,
  );
  expect(start.status, start.text).toBe(201);
  const uploadId = start.body["uploadId"];
  const part = 16 * MiB;
  const fd = openSync(file, "r");
  try {
    for (let n = 1, at = 0; at < size; n++, at += part) {
      const bytes = Buffer.alloc(Math.min(part, size - at));
      readSync(fd, bytes, 0, bytes.byteLength, at);
      const res = await fetch(new URL(`${releasePath}/downloads/uploads/${uploadId}/parts/${n}`, worker.url), {
        method: "PUT",
        headers: { "x-api-key": key, "content-length": String(bytes.byteLength) },
        body: bytes,
      });
      expect(res.status, await res.text()).toBe(200);
    }
  } finally {
    closeSync(fd);
  }
  return rest("POST", `${releasePath}/downloads/uploads/${uploadId}/complete${complete}`, undefined, key);
}

async function latestRelease(productId: number): Promise<string> {
  const list = await rest("GET", `/v1/products/${productId}/releases`);
  return `/v1/products/${productId}/releases/${list.body["productReleases"][0]["id"]}`;
}

function idOf(releasePath: string): number {
  return Number(releasePath.split("/").pop());
}

async function keyFor(role: string): Promise<string> {
  const userName = `u${Math.random().toString(36).slice(2, 10)}`;
  const user = await rest("POST", "/v1/users", { user: { userName, password: "Secret#123456", roles: [role] } });
  expect(user.status, user.text).toBe(200);
  const key = await rest("POST", "/v1/api-keys", {
    apiKey: { name: `${userName} key`, ownerId: user.body["userId"], permissions: 15 },
  });
  expect(key.status, key.text).toBe(200);
  return key.body["key"];
}

async function until(condition: () => boolean, timeoutMs = 20_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > end) throw new Error("timed out waiting");
    await new Promise((r) => setTimeout(r, 100));
  }
}
