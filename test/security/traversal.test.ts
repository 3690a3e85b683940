/**
 * Path traversal and encoded slashes in artifact file names (issue 9, adversarial catalogue), through every route
 * that takes a file name (multipart upload, its part's filename and filename*, the JSON form, the resumable upload,
 * PUT) and the download route. Promises: the R2 key of an artifact is always
 * `<Extensions:DownloadRoot>/<productCode>/<version>/<nonce>/<fileName>` with exactly those five segments, so it never
 * leaves its prefix; a refused name stores nothing; and a download URL names one artifact by its exact file name, so
 * no spelling (dot segments, %2F, %2e, backslashes, double encoding) serves another artifact's bytes.
 */
import { env, exports } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { BASE, admin, countRows, setSetting } from "../helpers";
import { blockmapOf, bytesOf, newRelease, send, upload } from "../artifacts-kit";

const ROOT = "artifacts";
const TRAVERSALS = [
  "../x.exe",
  "..\\x.exe",
  "/abs.exe",
  "C:\\abs.exe",
  "a/b.exe",
  "a\\b.exe",
  ".",
  "..",
  "../../../etc/passwd",
  "x\u0000.exe",
  "Setup\u202egpj.exe",
];

async function keysUnder(prefix: string): Promise<string[]> {
  return (await env.ARTIFACTS!.list({ prefix })).objects.map((o) => o.key);
}

function form(parts: { name: string; value: string | Uint8Array; disposition?: string }[], boundary = "trav") {
  const enc = new TextEncoder();
  const pieces: Uint8Array[] = [];
  for (const p of parts) {
    pieces.push(
      enc.encode(`--${boundary}\r\nContent-Disposition: form-data; name="${p.name}"${p.disposition ?? ""}\r\n\r\n`),
      typeof p.value === "string" ? enc.encode(p.value) : p.value,
      enc.encode("\r\n"),
    );
  }
  pieces.push(enc.encode(`--${boundary}--\r\n`));
  const body = new Uint8Array(pieces.reduce((n, p) => n + p.byteLength, 0));
  let at = 0;
  for (const p of pieces) {
    body.set(p, at);
    at += p.byteLength;
  }
  return { body, headers: { "content-type": `multipart/form-data; boundary=${boundary}` } };
}

describe("file names on the way in", () => {
  it("refuses separators, dot segments, controls and bidirectional marks in every form, storing nothing", async () => {
    const r = await newRelease();
    const rows = await countRows("release_downloads");
    for (const fileName of TRAVERSALS) {
      const field = await upload(r.path, bytesOf(100), { fileName });
      expect(field.status, JSON.stringify(fileName)).toBe(400);
      expect(Object.keys(field.body["errors"]), JSON.stringify(fileName)).toEqual(["fileName"]);
      const hosted = await admin("POST", r.path, {
        releaseDownload: {
          platform: "win-x64",
          kind: "installer",
          fileName,
          url: "https://cdn.example.com/a.exe",
          size: 1,
          sha256: "0".repeat(64),
          sha512: `${"A".repeat(86)}==`,
        },
      });
      expect(hosted.status, JSON.stringify(fileName)).toBe(400);
      const resumable = await admin("POST", `${r.path}/uploads`, {
        upload: { platform: "win-x64", kind: "installer", fileName },
      });
      expect(resumable.status, JSON.stringify(fileName)).toBe(400);
    }
    expect(await countRows("release_downloads")).toBe(rows);
    expect(await keysUnder(`${ROOT}/`)).toEqual([]);
  });

  it("refuses a path in the file part's filename or filename*, since the name defaults to it", async () => {
    const r = await newRelease();
    for (const disposition of [
      '; filename="../../outside.exe"',
      '; filename="..\\\\outside.exe"',
      "; filename*=UTF-8''..%2F..%2Foutside.exe",
      "; filename*=UTF-8''%2Fabs.exe",
      "; filename=\"ok.exe\"; filename*=UTF-8''..%2Fwins.exe",
    ]) {
      const f = form([
        { name: "platform", value: "win-x64" },
        { name: "kind", value: "installer" },
        { name: "file", value: bytesOf(64), disposition },
      ]);
      const res = await send("POST", r.path, f.body, f.headers);
      expect(res.status, disposition).toBe(400);
    }
    expect(await keysUnder(`${ROOT}/`)).toEqual([]);
  });

  it("keeps names that only look like traversal as literal text, under the artifact's own prefix", async () => {
    const r = await newRelease();
    const literal = ["%2e%2e%2fx.exe", "..%2F..%2Fsecret.exe", "a%5Cb.exe", "...", ".hidden.exe", "%252e%252e.exe"];
    const kinds = ["installer", "zip", "delta", "blockmap"];
    const platforms = ["win-x64", "win-arm64"];
    let i = 0;
    for (const fileName of literal) {
      const kind = kinds[i % 4]!;
      // Bytes labelled blockmap must be one (records.test.ts).
      const bytes = kind === "blockmap" ? await blockmapOf(bytesOf(32, i + 1)) : bytesOf(32, i + 1);
      const res = await upload(r.path, bytes, {
        fileName,
        kind,
        platform: platforms[Math.floor(i / 4)],
      });
      expect(res.status, `${fileName} ${res.text}`).toBe(201);
      const row = await env.DB.prepare("SELECT file_name, storage_key FROM release_downloads WHERE id = ?")
        .bind(res.body["releaseDownloadId"])
        .first<{ file_name: string; storage_key: string }>();
      expect(row!.file_name).toBe(fileName);
      const segments = row!.storage_key.split("/");
      expect(segments, row!.storage_key).toEqual([
        ROOT,
        r.code,
        "1.0.0",
        expect.stringMatching(/^[0-9a-z]{16}$/),
        fileName,
      ]);
      i++;
    }
    for (const key of await keysUnder("")) expect(key.startsWith(`${ROOT}/${r.code}/1.0.0/`), key).toBe(true);
  });

  it("refuses renaming an artifact to a traversal", async () => {
    const r = await newRelease();
    const id = (await upload(r.path, bytesOf(10))).body["releaseDownloadId"];
    for (const fileName of TRAVERSALS)
      expect((await admin("PUT", r.path, { releaseDownload: { id, fileName } })).status, JSON.stringify(fileName)).toBe(
        400,
      );
    const row = await env.DB.prepare("SELECT file_name FROM release_downloads WHERE id = ?")
      .bind(id)
      .first<{ file_name: string }>();
    expect(row!.file_name).toBe("Setup.exe");
  });
});

describe("the download route", () => {
  let product = "";
  const secret = bytesOf(4000, 7);
  const target = bytesOf(3000, 9);

  beforeAll(async () => {
    await setSetting("Updates:AllowPublicApplicationReleases", "true");
    const one = await newRelease("1.0.0");
    product = one.code;
    const two = await admin("POST", `/v1/products/${one.productId}/releases`, {
      productRelease: { version: "2.0.0", public: true, requiresMaintenance: false },
    });
    await admin("PUT", `/v1/products/${one.productId}/releases`, {
      productRelease: { id: one.releaseId, public: true, requiresMaintenance: false },
    });
    const twoPath = `/v1/products/${one.productId}/releases/${two.body["productReleaseId"]}/downloads`;
    expect((await upload(one.path, target, { fileName: "Setup.exe" })).status).toBe(201);
    expect((await upload(twoPath, secret, { fileName: "Other.exe" })).status).toBe(201);
    expect((await upload(twoPath, bytesOf(10), { fileName: "..%2F1.0.0%2FSetup.exe", kind: "zip" })).status).toBe(201);
  });

  const get = async (path: string) => {
    const res = await exports.default.fetch(`${BASE}/v1/updates/${product}/download/${path}`);
    return { status: res.status, bytes: new Uint8Array(await res.arrayBuffer()) };
  };

  it("serves exactly the artifact named", async () => {
    expect((await get("win-x64/1.0.0/Setup.exe")).bytes).toEqual(target);
    expect((await get("win-x64/2.0.0/Other.exe")).bytes).toEqual(secret);
  });

  it("never serves another artifact through encoded separators, dot segments or backslashes", async () => {
    const spellings = [
      "win-x64/1.0.0/..%2F2.0.0%2FOther.exe",
      "win-x64/1.0.0/%2e%2e%2F2.0.0%2FOther.exe",
      "win-x64/1.0.0/..%5C2.0.0%5COther.exe",
      "win-x64/1.0.0/..%252F2.0.0%252FOther.exe",
      "win-x64/1.0.0/%2Fv1%2Fupdates%2Fx%2Fdownload%2Fwin-x64%2F2.0.0%2FOther.exe",
      "win-x64/1.0.0%2F..%2F2.0.0/Other.exe",
      "win-x64%2F..%2Fwin-x64/2.0.0/Other.exe",
      "win-x64/1.0.0/Other.exe",
      "win-x64/1.0.0/other.exe",
      "win-x64/1.0.0/Other.exe%00",
      "win-x64/1.0.0/Setup.exe%2F",
    ];
    for (const path of spellings) {
      const res = await get(path);
      expect([400, 404], path).toContain(res.status);
      expect(res.bytes, path).not.toEqual(secret);
    }
  });

  it("serves a file whose name is literally `..%2F1.0.0%2FSetup.exe` only by that name, never the file it spells", async () => {
    const res = await get(`win-x64/2.0.0/${encodeURIComponent("..%2F1.0.0%2FSetup.exe")}?kind=zip`);
    expect(res.status).toBe(200);
    expect(res.bytes).toEqual(bytesOf(10));
  });
});
