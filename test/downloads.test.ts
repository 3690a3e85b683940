/**
 * Release downloads through the public API: hosted (JSON) and uploaded (streamed multipart) artifacts for each
 * sourceKind with their hashes checked against crypto.subtle, SPEC's rules, PUT never touching size or hashes,
 * DELETE removing the bytes, verify finding a missing R2 object and a tampered chunk, resumable uploads, release
 * generation bumps, and nothing left behind by a refused or failed upload.
 */
import { env, exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { loadConfig } from "../src/db/settings-store";
import { artifactBucket } from "../src/updates/artifacts";
import { MiB, blockmapOf, bytesOf, hashesOf, newRelease, send, unique, upload } from "./artifacts-kit";
import { ADMIN, BASE, admin, countRows, setSetting } from "./helpers";

/** A multipart body written by hand, for part orders and shapes FormData does not produce. */
function handmade(
  parts: { name: string; value: string | Uint8Array; fileName?: string }[],
  boundary = `b-${unique()}`,
  close = true,
) {
  const enc = new TextEncoder();
  const pieces: Uint8Array[] = [];
  for (const p of parts) {
    const disposition = `form-data; name="${p.name}"${p.fileName !== undefined ? `; filename="${p.fileName}"` : ""}`;
    pieces.push(
      enc.encode(`--${boundary}\r\nContent-Disposition: ${disposition}\r\n\r\n`),
      typeof p.value === "string" ? enc.encode(p.value) : p.value,
      enc.encode("\r\n"),
    );
  }
  if (close) pieces.push(enc.encode(`--${boundary}--\r\n`));
  const body = new Uint8Array(pieces.reduce((n, p) => n + p.byteLength, 0));
  let at = 0;
  for (const p of pieces) {
    body.set(p, at);
    at += p.byteLength;
  }
  return { body, headers: { "content-type": `multipart/form-data; boundary=${boundary}` } };
}

const hosted = (overrides: Record<string, unknown> = {}) => ({
  releaseDownload: {
    platform: "win-x64",
    kind: "installer",
    fileName: "Setup.exe",
    sourceKind: "url",
    url: "https://cdn.example.com/app/Setup.exe",
    size: 1234,
    sha256: "ab".repeat(32),
    sha512: `${"Q".repeat(86)}==`,
    ...overrides,
  },
});

/** A release_downloads row (migrations/0000_init.sql): the columns the tests read by name, the rest compared whole. */
interface DownloadRow {
  file_name: string;
  url: string | null;
  /** Set when the artifact is stored in R2 (source_kind "local"); the tests reading it upload first. */
  storage_key: string;
  [column: string]: unknown;
}

async function row(id: number) {
  return env.DB.prepare("SELECT * FROM release_downloads WHERE id = ?").bind(id).first<DownloadRow>();
}
const generation = async (productId: number) =>
  (await env.DB.prepare("SELECT release_generation AS g FROM products WHERE id = ?")
    .bind(productId)
    .first<{ g: number }>())!.g;
const chunkCount = async (id: number) =>
  (await env.DB.prepare("SELECT count(*) AS n FROM artifact_chunks WHERE download_id = ?")
    .bind(id)
    .first<{ n: number }>())!.n;
async function r2Keys(prefix: string): Promise<string[]> {
  return (await env.ARTIFACTS!.list({ prefix })).objects.map((o) => o.key);
}

describe("hosted artifacts (JSON)", () => {
  it("adds a url artifact with the caller's size and hashes, answering 201", async () => {
    const r = await newRelease();
    const res = await admin("POST", r.path, hosted({ signature: "sig" }));
    expect(res.status, res.text).toBe(201);
    expect(res.body).toEqual({
      success: true,
      code: 0,
      releaseDownloadId: expect.any(Number),
      size: 1234,
      sha256: "ab".repeat(32),
      sha512: `${"Q".repeat(86)}==`,
    });
    const list = await admin("GET", r.path);
    expect(list.status).toBe(200);
    expect(list.body["totalReleaseDownloadsCount"]).toBe(1);
    expect(list.body["releaseDownloads"][0]).toMatchObject({
      id: res.body["releaseDownloadId"],
      releaseId: r.releaseId,
      platform: "win-x64",
      kind: "installer",
      sourceKind: "url",
      url: "https://cdn.example.com/app/Setup.exe",
      signature: "sig",
    });
    expect(list.body["releaseDownloads"][0].storageKey).toBeUndefined();
  });

  it.each([
    ["http://cdn.example.com/a.exe", "https://"],
    ["https://user:pw@cdn.example.com/a.exe", "credentials"],
    ["/relative/a.exe", "https://"],
  ])("refuses the url %s", async (url, words) => {
    const r = await newRelease();
    const res = await admin("POST", r.path, hosted({ url }));
    expect(res.status).toBe(400);
    expect(JSON.stringify(res.body["errors"])).toContain(words);
    expect((await admin("GET", r.path)).body["totalReleaseDownloadsCount"]).toBe(0);
  });

  it.each([
    ["an upper-case sha256", { sha256: "AB".repeat(32) }],
    ["a short sha256", { sha256: "ab" }],
    ["a hex sha512", { sha512: "ab".repeat(64) }],
    ["size 0", { size: 0 }],
    ["an unknown platform", { platform: "win-x86" }],
    ["an unknown kind", { kind: "msi" }],
    ["a file name with a slash", { fileName: "bin/a.exe" }],
    ["no url", { url: undefined }],
  ])("refuses %s with problem details", async (_name, overrides) => {
    const r = await newRelease();
    const res = await admin("POST", r.path, hosted(overrides));
    expect(res.status).toBe(400);
    expect(res.body["errors"]).toBeDefined();
  });

  it("refuses sourceKind local or resource in the JSON form, pointing at multipart", async () => {
    const r = await newRelease();
    const res = await admin("POST", r.path, hosted({ sourceKind: "local" }));
    expect(res.status).toBe(400);
    expect(res.body["message"]).toContain("multipart/form-data");
  });

  it("refuses a POST with neither JSON nor a form", async () => {
    const r = await newRelease();
    expect((await send("POST", r.path)).status).toBe(400);
    expect((await send("POST", r.path, "x", { "content-type": "text/plain" })).status).toBe(415);
  });
});

describe("SPEC's rules for adding downloads", () => {
  it("takes downloads only for releases of application products", async () => {
    const r = await newRelease("1.0.0", false);
    const res = await admin("POST", r.path, hosted());
    expect(res.status).toBe(400);
    expect(res.body["message"]).toContain("application products");
    expect((await upload(r.path, bytesOf(10))).status).toBe(400);
  });

  it.each(["1.0", "v1.0.0", "1.0.0.0", "1.0.0+build.5", "01.0.0"])(
    "refuses the release version %s",
    async (version) => {
      const r = await newRelease(version);
      const res = await admin("POST", r.path, hosted());
      expect(res.status).toBe(400);
      expect(res.body["message"]).toContain("major.minor.patch");
    },
  );

  it("accepts a prerelease version", async () => {
    const r = await newRelease("2.1.0-beta.3");
    expect((await admin("POST", r.path, hosted())).status).toBe(201);
  });

  it("answers 400 for a release of another product, and for unknown ids", async () => {
    const a = await newRelease();
    const b = await newRelease();
    const res = await admin("POST", `/v1/products/${a.productId}/releases/${b.releaseId}/downloads`, hosted());
    expect(res.status).toBe(400);
    expect(res.body["message"]).toBe(`ProductRelease ${b.releaseId} not found`);
    expect((await admin("GET", `/v1/products/${a.productId}/releases/${b.releaseId}/downloads`)).status).toBe(400);
    expect(
      (await admin("POST", `/v1/products/999999/releases/${b.releaseId}/downloads`, hosted())).body["message"],
    ).toBe("Product 999999 not found");
  });

  it("holds one artifact per platform and kind, whatever the source", async () => {
    const r = await newRelease();
    expect((await admin("POST", r.path, hosted())).status).toBe(201);
    const again = await admin("POST", r.path, hosted({ fileName: "Other.exe" }));
    expect(again.status).toBe(400);
    const uploaded = await upload(r.path, bytesOf(100));
    expect(uploaded.status).toBe(400);
    expect(uploaded.body["message"]).toContain("already has a installer for win-x64");
    expect((await upload(r.path, bytesOf(100), { sourceKind: "resource" })).status).toBe(400);
    // Another kind or platform is fine.
    expect((await admin("POST", r.path, hosted({ kind: "blockmap", fileName: "Setup.exe.blockmap" }))).status).toBe(
      201,
    );
    expect((await upload(r.path, bytesOf(100), { platform: "linux-x64" })).status).toBe(201);
    expect((await admin("GET", r.path)).body["totalReleaseDownloadsCount"]).toBe(3);
  });
});

describe("uploads (multipart/form-data, streamed)", () => {
  it.each([
    ["local", 3 * MiB + 17],
    ["local", 9 * MiB + 5], // more than one R2 part: a multipart upload behind the single request
    ["resource", 2 * MiB + 3],
  ])("stores a %s file of %i bytes with the hashes crypto.subtle computes", async (sourceKind, size) => {
    const r = await newRelease();
    const bytes = bytesOf(size, size);
    const res = await upload(r.path, bytes, { sourceKind, signature: "detached-sig" });
    expect(res.status, res.text).toBe(201);
    const expected = await hashesOf(bytes);
    expect(res.body).toEqual({ success: true, code: 0, releaseDownloadId: expect.any(Number), ...expected });
    const stored = (await row(res.body["releaseDownloadId"]))!;
    expect(stored).toMatchObject({
      source_kind: sourceKind,
      file_name: "Setup.exe",
      signature: "detached-sig",
      size,
      platform: "win-x64",
    });
    if (sourceKind === "local") {
      expect(stored["storage_key"]).toMatch(new RegExp(`^artifacts/${r.code}/1\\.0\\.0/[0-9a-z]{16}/Setup\\.exe$`));
      const object = await env.ARTIFACTS!.get(stored["storage_key"]);
      expect(new Uint8Array(await object!.arrayBuffer())).toEqual(bytes);
    } else {
      expect(stored["storage_key"]).toBeNull();
      expect(await chunkCount(res.body["releaseDownloadId"])).toBe(3);
    }
  });

  it("takes the file name from the part unless a fileName field names it", async () => {
    const r = await newRelease();
    const a = await upload(r.path, bytesOf(10), { partName: "App Setup 1.0.0.exe" });
    expect((await row(a.body["releaseDownloadId"]))!["file_name"]).toBe("App Setup 1.0.0.exe");
    const b = await upload(r.path, bytesOf(10), { kind: "zip", partName: "x.bin", fileName: "App-1.0.0-win.zip" });
    expect((await row(b.body["releaseDownloadId"]))!["file_name"]).toBe("App-1.0.0-win.zip");
  });

  it("reads a hand-written form with a preamble-free body, unknown fields and a file containing boundary-like bytes", async () => {
    const r = await newRelease();
    const boundary = "XyZ";
    // Near misses of the delimiter (CRLF "--XyZ"), and a CR right before the real one.
    const tricky = new TextEncoder().encode("start\r\n--Xy\r\n-\r\n--X\r\nmid--XyZ end\r\n-\r");
    const form = handmade(
      [
        { name: "comment", value: "ignored" },
        { name: "platform", value: "darwin-arm64" },
        { name: "kind", value: "zip" },
        { name: "file", value: tricky, fileName: "App-mac.zip" },
      ],
      boundary,
    );
    const res = await send("POST", r.path, form.body, form.headers);
    expect(res.status, res.text).toBe(201);
    expect(res.body).toMatchObject(await hashesOf(tricky));
  });

  it("refuses invalid fields with problem details before storing anything", async () => {
    const r = await newRelease();
    const before = await r2Keys(`artifacts/${r.code}/`);
    const res = await upload(r.path, bytesOf(1000), { platform: "amiga" });
    expect(res.status).toBe(400);
    expect(res.body["errors"]["platform"]).toBeDefined();
    const bad = await upload(r.path, bytesOf(1000), { sourceKind: "url" });
    expect(bad.body["errors"]["sourceKind"]).toBeDefined();
    expect(await r2Keys(`artifacts/${r.code}/`)).toEqual(before);
  });

  it("refuses an empty file, a form without a file part and a truncated body, leaving nothing", async () => {
    const r = await newRelease();
    const rows = await countRows("release_downloads");
    const chunks = await countRows("artifact_chunks");
    expect((await upload(r.path, new Uint8Array(0))).body["message"]).toContain("empty");
    expect((await upload(r.path, new Uint8Array(0), { sourceKind: "resource" })).status).toBe(400);
    const noFile = handmade([{ name: "platform", value: "win-x64" }]);
    expect((await send("POST", r.path, noFile.body, noFile.headers)).body["message"]).toContain("no part named file");
    for (const sourceKind of ["local", "resource"]) {
      const truncated = handmade(
        [
          { name: "platform", value: "win-x64" },
          { name: "kind", value: "installer" },
          { name: "sourceKind", value: sourceKind },
          { name: "file", value: bytesOf(2 * MiB), fileName: "a.exe" },
        ],
        "cut",
        false,
      );
      const res = await send(
        "POST",
        r.path,
        truncated.body.subarray(0, truncated.body.byteLength - 10),
        truncated.headers,
      );
      expect(res.status).toBe(400);
      expect(res.body["errors"][""][0]).toContain("Malformed multipart");
    }
    expect(await countRows("release_downloads")).toBe(rows);
    expect(await countRows("artifact_chunks")).toBe(chunks);
    expect(await r2Keys(`artifacts/${r.code}/`)).toEqual([]);
  });

  it("refuses a field after the file and removes the bytes already stored (both storages)", async () => {
    const r = await newRelease();
    const rows = await countRows("release_downloads");
    const chunks = await countRows("artifact_chunks");
    for (const sourceKind of ["local", "resource"]) {
      const form = handmade([
        { name: "platform", value: "win-x64" },
        { name: "kind", value: "installer" },
        { name: "sourceKind", value: sourceKind },
        { name: "file", value: bytesOf(MiB + 1), fileName: "a.exe" },
        { name: "signature", value: "late" },
      ]);
      const res = await send("POST", r.path, form.body, form.headers);
      expect(res.status).toBe(400);
      expect(res.body["message"]).toContain("comes after the file");
    }
    expect(await countRows("release_downloads")).toBe(rows);
    expect(await countRows("artifact_chunks")).toBe(chunks);
    expect(await r2Keys(`artifacts/${r.code}/`)).toEqual([]);
  });

  it.each(["local", "resource"])(
    "lets one of two simultaneous %s uploads for one platform and kind win; the other leaves nothing",
    async (sourceKind) => {
      const r = await newRelease();
      const rows = await countRows("release_downloads");
      const chunks = await countRows("artifact_chunks");
      const [a, b] = await Promise.all([
        upload(r.path, bytesOf(2 * MiB, 1), { sourceKind }),
        upload(r.path, bytesOf(2 * MiB, 2), { sourceKind }),
      ]);
      expect([a.status, b.status].sort()).toEqual([201, 400]);
      const winner = a.status === 201 ? a : b;
      expect(await countRows("release_downloads")).toBe(rows + 1);
      if (sourceKind === "resource") expect(await countRows("artifact_chunks")).toBe(chunks + 2);
      else
        expect(await r2Keys(`artifacts/${r.code}/`)).toEqual([
          (await row(winner.body["releaseDownloadId"]))!["storage_key"],
        ]);
    },
  );

  it("refuses a resource file over Extensions:MaxResourceArtifactBytes with 413, leaving nothing", async () => {
    const r = await newRelease();
    const rows = await countRows("release_downloads");
    const chunks = await countRows("artifact_chunks");
    await setSetting("Extensions:MaxResourceArtifactBytes", String(MiB));
    try {
      const res = await upload(r.path, bytesOf(MiB + MiB / 2), { sourceKind: "resource" });
      expect(res.status).toBe(413);
      expect(res.body).toMatchObject({ success: false, code: 413 });
      expect(res.body["message"]).toContain("Extensions:MaxResourceArtifactBytes");
      expect(await countRows("release_downloads")).toBe(rows);
      expect(await countRows("artifact_chunks")).toBe(chunks);
      // Exactly the limit is allowed.
      expect((await upload(r.path, bytesOf(MiB), { sourceKind: "resource" })).status).toBe(201);
    } finally {
      await setSetting("Extensions:MaxResourceArtifactBytes", null);
    }
  });

  it("answers 400 naming Extensions:DownloadRoot when it is unset, and stores nothing", async () => {
    const r = await newRelease();
    await setSetting("Extensions:DownloadRoot", "");
    try {
      const res = await upload(r.path, bytesOf(1000));
      expect(res.status).toBe(400);
      expect(res.body["message"]).toContain("Extensions:DownloadRoot");
      const started = await admin("POST", `${r.path}/uploads`, {
        upload: { platform: "win-x64", kind: "installer", fileName: "a.exe" },
      });
      expect(started.status).toBe(400);
      expect(started.body["message"]).toContain("Extensions:DownloadRoot");
      // resource storage needs no bucket
      expect((await upload(r.path, bytesOf(1000), { sourceKind: "resource" })).status).toBe(201);
    } finally {
      await setSetting("Extensions:DownloadRoot", null);
    }
    expect(await r2Keys(`artifacts/${r.code}/`)).toEqual([]);
  });

  it("names Extensions:DownloadRoot when no ARTIFACTS bucket is bound", async () => {
    const { config } = await loadConfig(env, env.DB);
    expect(() => artifactBucket({ ...env, ARTIFACTS: undefined }, config)).toThrow(
      /Extensions:DownloadRoot.*ARTIFACTS/,
    );
  });
});

describe("update and delete", () => {
  it("changes platform, kind, file name and signature, never size or hashes", async () => {
    const r = await newRelease();
    const bytes = bytesOf(5000);
    const id = (await upload(r.path, bytes)).body["releaseDownloadId"];
    const res = await admin("PUT", r.path, {
      releaseDownload: {
        id,
        platform: "win-arm64",
        kind: "zip",
        fileName: "App.zip",
        signature: "new",
        size: 1,
        sha256: "0".repeat(64),
        sha512: `${"A".repeat(86)}==`,
        sourceKind: "url",
      },
    });
    expect(res.status, res.text).toBe(200);
    const after = (await row(id))!;
    expect(after).toMatchObject({
      platform: "win-arm64",
      kind: "zip",
      file_name: "App.zip",
      signature: "new",
      source_kind: "local",
      ...(await hashesOf(bytes)),
    });
  });

  it("changes url only on hosted artifacts, with the same rules as on create", async () => {
    const r = await newRelease();
    const hostedId = (await admin("POST", r.path, hosted())).body["releaseDownloadId"];
    const localId = (await upload(r.path, bytesOf(10), { kind: "zip" })).body["releaseDownloadId"];
    expect(
      (await admin("PUT", r.path, { releaseDownload: { id: hostedId, url: "https://mirror.example.com/S.exe" } }))
        .status,
    ).toBe(200);
    expect((await row(hostedId))!["url"]).toBe("https://mirror.example.com/S.exe");
    expect(
      (await admin("PUT", r.path, { releaseDownload: { id: hostedId, url: "http://mirror.example.com/S.exe" } }))
        .status,
    ).toBe(400);
    expect((await admin("PUT", r.path, { releaseDownload: { id: hostedId, url: null } })).status).toBe(400);
    const onLocal = await admin("PUT", r.path, {
      releaseDownload: { id: localId, url: "https://mirror.example.com/S.zip" },
    });
    expect(onLocal.status).toBe(400);
    expect(onLocal.body["message"]).toContain("only on hosted artifacts");
  });

  it("refuses a change onto a taken platform and kind, and ids of other releases", async () => {
    const r = await newRelease();
    await admin("POST", r.path, hosted());
    const zip = (await admin("POST", r.path, hosted({ kind: "zip", fileName: "a.zip" }))).body["releaseDownloadId"];
    const clash = await admin("PUT", r.path, { releaseDownload: { id: zip, kind: "installer" } });
    expect(clash.status).toBe(400);
    expect(clash.body["message"]).toContain("already exists");
    const other = await newRelease();
    expect((await admin("PUT", other.path, { releaseDownload: { id: zip, signature: "x" } })).body["message"]).toBe(
      `ReleaseDownload ${zip} not found`,
    );
    expect((await admin("DELETE", `${other.path}/${zip}`)).status).toBe(400);
  });

  it("deletes the row and its bytes: the R2 object or the chunks", async () => {
    const r = await newRelease();
    const local = (await upload(r.path, bytesOf(2000))).body["releaseDownloadId"];
    const resource = (await upload(r.path, bytesOf(MiB + 10), { kind: "zip", sourceKind: "resource" })).body[
      "releaseDownloadId"
    ];
    const key = (await row(local))!["storage_key"];
    expect(await env.ARTIFACTS!.head(key)).not.toBeNull();
    expect(await chunkCount(resource)).toBe(2);
    expect((await admin("DELETE", `${r.path}/${local}`)).status).toBe(200);
    expect((await admin("DELETE", `${r.path}/${resource}`)).status).toBe(200);
    expect(await env.ARTIFACTS!.head(key)).toBeNull();
    expect(await chunkCount(resource)).toBe(0);
    expect(await row(local)).toBeNull();
    expect((await admin("DELETE", `${r.path}/${local}`)).status).toBe(400);
  });

  it("lists with filter, sort, take and skip, but not select", async () => {
    const r = await newRelease();
    for (const platform of ["win-x64", "linux-x64", "darwin-arm64"]) await admin("POST", r.path, hosted({ platform }));
    const res = await admin(
      "GET",
      `${r.path}?filter=${encodeURIComponent('platform.StartsWith("win") || platform == "linux-x64"')}&sort=-platform&take=1&skip=1`,
    );
    expect(res.status).toBe(200);
    expect(res.body["totalReleaseDownloadsCount"]).toBe(2);
    expect(res.body["releaseDownloads"].map((d: { platform: string }) => d.platform)).toEqual(["linux-x64"]);
    // SPEC: this list has no select; the parameter is ignored and whole records come back.
    const selected = await admin("GET", `${r.path}?select=id`);
    expect(selected.body["releaseDownloads"][0].platform).toBe("win-x64");
  });
});

describe("verify", () => {
  it("re-hashes uploaded artifacts, reporting a missing R2 object and a tampered chunk; hosted ones are not checked", async () => {
    const r = await newRelease();
    const local = (await upload(r.path, bytesOf(3000, 7))).body["releaseDownloadId"];
    const resource = (await upload(r.path, bytesOf(2 * MiB + 1, 8), { kind: "zip", sourceKind: "resource" })).body[
      "releaseDownloadId"
    ];
    const intact = (
      await upload(r.path, await blockmapOf(bytesOf(4000, 9)), { kind: "blockmap", sourceKind: "resource" })
    ).body["releaseDownloadId"];
    await admin("POST", r.path, hosted({ kind: "delta" }));
    const clean = await admin("POST", `${r.path}/verify`);
    expect(clean.status).toBe(200);
    expect(clean.body).toEqual({ success: true, code: 0, drifted: [], checked: 3 });

    await env.ARTIFACTS!.delete((await row(local))!["storage_key"]);
    // Same length, other bytes: only a hash can tell.
    await env.DB.prepare("UPDATE artifact_chunks SET data = zeroblob(length(data)) WHERE download_id = ? AND seq = 1")
      .bind(resource)
      .run();
    const drifted = await admin("POST", `${r.path}/verify`);
    expect(drifted.body["drifted"]).toEqual([local, resource]);
    expect(drifted.body["drifted"]).not.toContain(intact);

    // A missing chunk in the middle is drift too, not a failure of the check.
    await env.DB.prepare("DELETE FROM artifact_chunks WHERE download_id = ? AND seq = 1").bind(resource).run();
    expect((await admin("POST", `${r.path}/verify`)).body["drifted"]).toEqual([local, resource]);
  });
});

describe("resumable uploads", () => {
  const start = (path: string, upload: Record<string, unknown> = {}) =>
    admin("POST", `${path}/uploads`, {
      upload: { platform: "linux-x64", kind: "installer", fileName: "App-1.0.0.AppImage", ...upload },
    });
  const part = (path: string, uploadId: string, n: number, bytes: Uint8Array) =>
    send("PUT", `${path}/uploads/${uploadId}/parts/${n}`, bytes, { "content-type": "application/octet-stream" });

  it("creates, takes parts in any order, completes with the hashes of the whole file and cleans its state", async () => {
    const r = await newRelease();
    const bytes = bytesOf(2 * 5 * MiB + 1234, 42);
    const g0 = await generation(r.productId);
    const started = await start(r.path, { signature: "sig" });
    expect(started.status, started.text).toBe(201);
    const uploadId = started.body["uploadId"];
    expect(uploadId).toMatch(/^[0-9a-z]{32}$/);
    expect((await part(r.path, uploadId, 2, bytes.subarray(5 * MiB, 10 * MiB))).body).toEqual({
      success: true,
      code: 0,
      partNumber: 2,
      size: 5 * MiB,
    });
    expect((await part(r.path, uploadId, 1, bytes.subarray(0, 5 * MiB))).status).toBe(200);
    expect((await part(r.path, uploadId, 3, bytes.subarray(10 * MiB))).status).toBe(200);
    expect(await generation(r.productId)).toBe(g0);
    const done = await admin("POST", `${r.path}/uploads/${uploadId}/complete`);
    expect(done.status, done.text).toBe(201);
    expect(done.body).toEqual({
      success: true,
      code: 0,
      releaseDownloadId: expect.any(Number),
      ...(await hashesOf(bytes)),
    });
    expect(await generation(r.productId)).toBe(g0 + 1);
    const stored = (await row(done.body["releaseDownloadId"]))!;
    expect(stored).toMatchObject({
      platform: "linux-x64",
      kind: "installer",
      file_name: "App-1.0.0.AppImage",
      source_kind: "local",
      signature: "sig",
    });
    expect(new Uint8Array(await (await env.ARTIFACTS!.get(stored["storage_key"]))!.arrayBuffer())).toEqual(bytes);
    expect(await r2Keys(`artifacts/.uploads/${uploadId}/`)).toEqual([]);
    // Used up.
    expect((await admin("POST", `${r.path}/uploads/${uploadId}/complete`)).body["message"]).toBe(
      `Upload ${uploadId} not found`,
    );
    expect((await admin("POST", `${r.path}/verify`)).body["drifted"]).toEqual([]);
  });

  it("explains parts that cannot be completed, and stays open to fix them", async () => {
    const r = await newRelease();
    const uploadId = (await start(r.path)).body["uploadId"];
    expect((await admin("POST", `${r.path}/uploads/${uploadId}/complete`)).body["message"]).toContain("no parts");
    await part(r.path, uploadId, 2, bytesOf(100));
    expect((await admin("POST", `${r.path}/uploads/${uploadId}/complete`)).body["message"]).toContain(
      "Part 1 is missing",
    );
    await part(r.path, uploadId, 1, bytesOf(1000));
    expect((await admin("POST", `${r.path}/uploads/${uploadId}/complete`)).body["message"]).toContain(
      "at least 5242880",
    );
    const first = bytesOf(5 * MiB, 1);
    await part(r.path, uploadId, 1, first);
    const done = await admin("POST", `${r.path}/uploads/${uploadId}/complete`);
    expect(done.status, done.text).toBe(201);
    const whole = new Uint8Array(5 * MiB + 100);
    whole.set(first);
    whole.set(bytesOf(100), 5 * MiB);
    expect(done.body).toMatchObject(await hashesOf(whole));
  });

  it("aborts: the parts and the state go, and the id is no longer known", async () => {
    const r = await newRelease();
    const uploadId = (await start(r.path)).body["uploadId"];
    await part(r.path, uploadId, 1, bytesOf(5 * MiB));
    expect((await r2Keys(`artifacts/.uploads/${uploadId}/`)).length).toBe(2);
    expect((await admin("DELETE", `${r.path}/uploads/${uploadId}`)).status).toBe(200);
    expect(await r2Keys(`artifacts/.uploads/${uploadId}/`)).toEqual([]);
    expect((await part(r.path, uploadId, 2, bytesOf(10))).body["message"]).toBe(`Upload ${uploadId} not found`);
    expect((await admin("DELETE", `${r.path}/uploads/${uploadId}`)).status).toBe(400);
    expect(await r2Keys(`artifacts/${r.code}/`)).toEqual([]);
  });

  it("refuses an upload of another release, unknown ids, a part without Content-Length or bytes", async () => {
    const r = await newRelease();
    const other = await newRelease();
    const uploadId = (await start(r.path)).body["uploadId"];
    expect((await part(other.path, uploadId, 1, bytesOf(10))).body["message"]).toBe(`Upload ${uploadId} not found`);
    expect((await admin("POST", `${r.path}/uploads/not-an-id/complete`)).status).toBe(400);
    expect((await part(r.path, uploadId, 0, bytesOf(10))).status).toBe(400);
    expect((await part(r.path, uploadId, 10_001, bytesOf(10))).status).toBe(400);
    expect((await part(r.path, uploadId, 1, new Uint8Array(0))).status).toBe(400);
    const chunked = new ReadableStream<Uint8Array>({
      start(c) {
        c.enqueue(bytesOf(10));
        c.close();
      },
    });
    const res = await exports.default.fetch(`${BASE}${r.path}/uploads/${uploadId}/parts/1`, {
      method: "PUT",
      headers: { "x-api-key": ADMIN.key },
      body: chunked,
    });
    expect(res.status).toBe(411);
  });

  it("refuses to start or complete when the platform and kind are taken, keeping the upload", async () => {
    const r = await newRelease();
    const uploadId = (await start(r.path)).body["uploadId"];
    await part(r.path, uploadId, 1, bytesOf(10));
    const taken = await admin("POST", r.path, hosted({ platform: "linux-x64" }));
    expect((await start(r.path)).status).toBe(400);
    const res = await admin("POST", `${r.path}/uploads/${uploadId}/complete`);
    expect(res.status).toBe(400);
    expect(res.body["message"]).toContain("already has a installer for linux-x64");
    expect((await admin("DELETE", `${r.path}/${taken.body["releaseDownloadId"]}`)).status).toBe(200);
    expect((await admin("POST", `${r.path}/uploads/${uploadId}/complete`)).status).toBe(201);
  });

  it("takes uploads only for releases that take downloads", async () => {
    const r = await newRelease("1.0");
    expect((await start(r.path)).body["message"]).toContain("major.minor.patch");
  });
});

describe("release generation", () => {
  it("is bumped by every artifact change: add (each form), update, delete", async () => {
    const r = await newRelease();
    let g = await generation(r.productId);
    const expectBump = async () => {
      const next = await generation(r.productId);
      expect(next).toBe(g + 1);
      g = next;
    };
    const hostedId = (await admin("POST", r.path, hosted())).body["releaseDownloadId"];
    await expectBump();
    await upload(r.path, bytesOf(10), { kind: "zip" });
    await expectBump();
    await upload(r.path, await blockmapOf(bytesOf(10)), { kind: "blockmap", sourceKind: "resource" });
    await expectBump();
    await admin("PUT", r.path, { releaseDownload: { id: hostedId, signature: "s" } });
    await expectBump();
    await admin("DELETE", `${r.path}/${hostedId}`);
    await expectBump();
    // Refusals change nothing.
    await admin("POST", r.path, hosted({ kind: "zip" }));
    await upload(r.path, bytesOf(0), { kind: "delta" });
    expect(await generation(r.productId)).toBe(g);
  });
});

describe("pending uploads stay invisible", () => {
  it("hides the row of a resource upload in progress from the list, and removes stale ones", async () => {
    const r = await newRelease();
    const stale = new Date(Date.now() - 2 * 86_400_000).toISOString();
    const inserted = await env.DB.prepare(
      "INSERT INTO release_downloads (release_id, platform, kind, file_name, source_kind, size, sha256, sha512, created_at, updated_at) VALUES (?, 'pending:abc', 'installer', 'a.exe', 'resource', 0, '', '', ?, ?) RETURNING id",
    )
      .bind(r.releaseId, stale, stale)
      .first<{ id: number }>();
    await env.DB.prepare("INSERT INTO artifact_chunks (download_id, seq, data) VALUES (?, 0, x'00')")
      .bind(inserted!.id)
      .run();
    expect((await admin("GET", r.path)).body["totalReleaseDownloadsCount"]).toBe(0);
    expect((await admin("DELETE", `${r.path}/${inserted!.id}`)).status).toBe(400);
    expect((await upload(r.path, bytesOf(10), { sourceKind: "resource" })).status).toBe(201);
    expect(await row(inserted!.id)).toBeNull();
    expect(await chunkCount(inserted!.id)).toBe(0);
  });
});
