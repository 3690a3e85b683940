/**
 * Trust at the edges, the records part: what management writes cannot widen what clients get.
 * - Blockmaps are the one kind of artifact served without a download token. The label alone never opens a file: the
 *   kind blockmap is accepted on stored bytes only when they are a blockmap (gzip-compressed JSON as electron-builder
 *   writes it), on every path that sets it (multipart upload, resumable upload, PUT relabel), and the download route
 *   serves one without a token only beside the file it describes, and never a hosted one.
 * - A release's assemblies route keeps its assemblies under that release: a body naming another `releaseId` moves
 *   nothing, and an assembly of another release is neither changed nor deleted through this release's path.
 * - Reports naming no license are limited per credential (API key, user), whatever address they come from; a deleted
 *   report takes its R2 body with it (the cron's retention prunes both: test/retention.test.ts).
 */
import { env, exports } from "cloudflare:workers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ADMIN, BASE, admin, call, keyFor, login, setSetting } from "../helpers";
import { blockmapOf, bytesOf, gzip, newRelease, send, upload } from "../artifacts-kit";

type Release = Awaited<ReturnType<typeof newRelease>>;

/** A public (gated: requiresMaintenance by default) release of a new application product. */
async function publicRelease(): Promise<Release> {
  const r = await newRelease("1.0.0");
  const res = await admin("PUT", `/v1/products/${r.productId}/releases`, {
    productRelease: { id: r.releaseId, public: true },
  });
  expect(res.status, res.text).toBe(200);
  return r;
}

/** An anonymous download (no token, no user key): its status. */
async function anonymous(r: Release, fileName: string, platform = "win-x64"): Promise<number> {
  const res = await exports.default.fetch(
    `${BASE}/v1/updates/${r.code}/download/${platform}/1.0.0/${encodeURIComponent(fileName)}`,
  );
  await res.arrayBuffer();
  return res.status;
}

const rowsOf = async (releaseId: number) =>
  (
    await env.DB.prepare("SELECT id, kind, file_name FROM release_downloads WHERE release_id = ? ORDER BY id")
      .bind(releaseId)
      .all<{ id: number; kind: string; file_name: string }>()
  ).results;

const installer = bytesOf(300_000, 21);
/** Bytes that are no blockmap although they look like one at first: gzip, but not of a blockmap's JSON. */
const NOT_BLOCKMAPS: [string, () => Promise<Uint8Array>][] = [
  ["random bytes", async () => bytesOf(900, 22)],
  ["gzip of plain text", () => gzip("a tarball's worth of installer")],
  ["gzip of JSON that is no blockmap", () => gzip(JSON.stringify({ version: "2", files: [{ name: "file" }] }))],
  ["a truncated gzip stream", async () => (await blockmapOf(installer)).subarray(0, 40)],
];

describe("blockmaps: the label never opens a gated file", () => {
  it("serves a real blockmap beside its installer without a token; the installer itself needs one", async () => {
    const r = await publicRelease();
    expect((await upload(r.path, installer, { partName: "App Setup.exe" })).status).toBe(201);
    const map = await upload(r.path, await blockmapOf(installer), {
      kind: "blockmap",
      partName: "App Setup.exe.blockmap",
    });
    expect(map.status, map.text).toBe(201);
    expect(await anonymous(r, "App Setup.exe.blockmap")).toBe(200);
    expect(await anonymous(r, "App Setup.exe")).toBe(403);
  });

  it.each(NOT_BLOCKMAPS)(
    "refuses kind blockmap on %s, by multipart upload (local and resource), storing nothing",
    async (_, bytes) => {
      const r = await publicRelease();
      await upload(r.path, installer, { partName: "App Setup.exe" });
      const keys = (await env.ARTIFACTS!.list({ prefix: `artifacts/${r.code}/` })).objects.length;
      expect(keys).toBe(1);
      for (const sourceKind of ["local", "resource"]) {
        const res = await upload(r.path, await bytes(), {
          kind: "blockmap",
          partName: "App Setup.exe.blockmap",
          sourceKind,
        });
        expect(res.status, res.text).toBe(400);
        expect(res.body["message"]).toMatch(/^kind blockmap is for electron-builder blockmaps/);
      }
      expect((await rowsOf(r.releaseId)).map((row) => row.kind)).toEqual(["installer"]);
      expect((await env.ARTIFACTS!.list({ prefix: `artifacts/${r.code}/` })).objects.length).toBe(keys);
      expect(await anonymous(r, "App Setup.exe.blockmap")).toBe(404);
    },
  );

  it("refuses kind blockmap on bytes that are not one through the resumable upload", async () => {
    const r = await publicRelease();
    await upload(r.path, installer, { partName: "App Setup.exe" });
    const start = async (kind: string) =>
      (
        await admin("POST", `${r.path}/uploads`, {
          upload: { platform: "win-x64", kind, fileName: "App Setup.exe.blockmap" },
        })
      ).body["uploadId"] as string;
    const part = (id: string, bytes: Uint8Array) =>
      send("PUT", `${r.path}/uploads/${id}/parts/1`, bytes, { "content-type": "application/octet-stream" });
    const bad = await start("blockmap");
    expect((await part(bad, installer)).status).toBe(200);
    const refused = await admin("POST", `${r.path}/uploads/${bad}/complete`);
    expect(refused.status, refused.text).toBe(400);
    expect(refused.body["message"]).toMatch(/^kind blockmap is for electron-builder blockmaps/);
    expect((await rowsOf(r.releaseId)).map((row) => row.kind)).toEqual(["installer"]);
    const good = await start("blockmap");
    expect((await part(good, await blockmapOf(installer))).status).toBe(200);
    expect((await admin("POST", `${r.path}/uploads/${good}/complete`)).status).toBe(201);
    expect(await anonymous(r, "App Setup.exe.blockmap")).toBe(200);
  });

  it("refuses a PUT relabelling a gated file as a blockmap, renamed beside an installer or not", async () => {
    const r = await publicRelease();
    await upload(r.path, installer, { partName: "App Setup.exe" });
    const zip = (await upload(r.path, bytesOf(5000, 23), { kind: "zip", partName: "App.zip" })).body[
      "releaseDownloadId"
    ] as number;
    for (const change of [{ kind: "blockmap" }, { kind: "blockmap", fileName: "App Setup.exe.blockmap" }]) {
      const res = await admin("PUT", r.path, { releaseDownload: { id: zip, ...change } });
      expect(res.status, res.text).toBe(400);
      expect(res.body["message"]).toMatch(/^kind blockmap is for electron-builder blockmaps.*App\.zip is not one/);
    }
    expect((await rowsOf(r.releaseId)).map((row) => [row.kind, row.file_name])).toEqual([
      ["installer", "App Setup.exe"],
      ["zip", "App.zip"],
    ]);
    expect(await anonymous(r, "App.zip")).toBe(403);
    // A rename alone changes nothing about the gate; a real blockmap stored under another kind may become one.
    expect(
      (await admin("PUT", r.path, { releaseDownload: { id: zip, fileName: "App Setup.exe.blockmap" } })).status,
    ).toBe(200);
    expect(await anonymous(r, "App Setup.exe.blockmap")).toBe(403);
    const delta = (
      await upload(r.path, await blockmapOf(installer), {
        kind: "delta",
        partName: "App Setup.exe.blockmap",
        platform: "linux-x64",
      })
    ).body["releaseDownloadId"] as number;
    expect((await admin("PUT", r.path, { releaseDownload: { id: delta, kind: "blockmap" } })).status).toBe(200);
  });

  it("serves a blockmap without a token only beside the file it describes, and never a hosted one", async () => {
    const r = await publicRelease();
    await upload(r.path, installer, { partName: "App Setup.exe" });
    // A real blockmap under a name that describes no artifact of its release and platform stays gated.
    const lone = await upload(r.path, await blockmapOf(installer), {
      kind: "blockmap",
      partName: "Other.exe.blockmap",
    });
    expect(lone.status).toBe(201);
    expect(await anonymous(r, "Other.exe.blockmap")).toBe(403);
    // Nor does the installer of another platform pair with it.
    // (win-arm64: open without a license by the platform rule, so only the gate can refuse it.)
    const arm = await upload(r.path, await blockmapOf(installer), {
      kind: "blockmap",
      platform: "win-arm64",
      partName: "App Setup.exe.blockmap",
    });
    expect(arm.status).toBe(201);
    expect(await anonymous(r, "App Setup.exe.blockmap", "win-arm64")).toBe(403);
    // A row labelled blockmap without the check (written before it existed) is not opened by its label either.
    const legacy = await newRelease("1.0.0");
    await admin("PUT", `/v1/products/${legacy.productId}/releases`, {
      productRelease: { id: legacy.releaseId, public: true },
    });
    const old = (await upload(legacy.path, installer, { partName: "Legacy.exe" })).body["releaseDownloadId"];
    await env.DB.prepare("UPDATE release_downloads SET kind = 'blockmap' WHERE id = ?").bind(old).run();
    expect(await anonymous(legacy, "Legacy.exe")).toBe(403);
    // A hosted blockmap: its bytes are not the service's to check, so its address is handed out with a token only.
    const hosted = await newRelease("1.0.0");
    await admin("PUT", `/v1/products/${hosted.productId}/releases`, {
      productRelease: { id: hosted.releaseId, public: true },
    });
    const sums = {
      size: 10,
      sha256: "0".repeat(64),
      sha512: `${"A".repeat(86)}==`,
      sourceKind: "url",
      platform: "win-x64",
    };
    for (const [kind, fileName] of [
      ["installer", "App Setup.exe"],
      ["blockmap", "App Setup.exe.blockmap"],
    ] as const) {
      const res = await admin("POST", hosted.path, {
        releaseDownload: { ...sums, kind, fileName, url: `https://cdn.example.com/${encodeURIComponent(fileName)}` },
      });
      expect(res.status, res.text).toBe(201);
    }
    const redirect = await exports.default.fetch(
      `${BASE}/v1/updates/${hosted.code}/download/win-x64/1.0.0/${encodeURIComponent("App Setup.exe.blockmap")}`,
      { redirect: "manual" },
    );
    expect(redirect.status).toBe(403);
    expect(redirect.headers.get("location")).toBeNull();
  });
});

describe("release assemblies stay under their release", () => {
  let productId = 0;
  let releaseA = 0;
  let releaseB = 0;
  let otherProduct = 0;
  let otherRelease = 0;
  const pathOf = (product: number, release: number) => `/v1/products/${product}/releases/${release}/assemblies`;
  const releaseOf = async (id: number) =>
    (await env.DB.prepare("SELECT release_id AS r FROM assemblies WHERE id = ?").bind(id).first<{ r: number }>())?.r;

  beforeAll(async () => {
    const a = await newRelease("1.0.0");
    productId = a.productId;
    releaseA = a.releaseId;
    releaseB = (await admin("POST", `/v1/products/${productId}/releases`, { productRelease: { version: "2.0.0" } }))
      .body["productReleaseId"];
    const other = await newRelease("1.0.0");
    otherProduct = other.productId;
    otherRelease = other.releaseId;
  });

  it("creates under the path's release whatever releaseId the body names", async () => {
    for (const releaseId of [releaseB, otherRelease, 999_999]) {
      const res = await admin("POST", pathOf(productId, releaseA), { assembly: { name: "App.dll", releaseId } });
      expect(res.status, res.text).toBe(200);
      expect(await releaseOf(res.body["assemblyId"])).toBe(releaseA);
    }
  });

  it("refuses a PUT naming another releaseId (400 naming it) and accepts the path's own", async () => {
    const id = (await admin("POST", pathOf(productId, releaseA), { assembly: { name: "Core.dll" } })).body[
      "assemblyId"
    ];
    for (const releaseId of [releaseB, otherRelease, 999_999, null]) {
      const res = await admin("PUT", pathOf(productId, releaseA), { assembly: { id, releaseId, version: "9.9.9.9" } });
      expect(res.status, res.text).toBe(400);
      expect(res.body["message"]).toMatch(/^releaseId cannot be changed through this path/);
      expect(await releaseOf(id)).toBe(releaseA);
    }
    const same = await admin("PUT", pathOf(productId, releaseA), {
      assembly: { id, releaseId: releaseA, version: "1.2.3.4" },
    });
    expect(same.status, same.text).toBe(200);
    const row = await env.DB.prepare("SELECT release_id AS r, version FROM assemblies WHERE id = ?").bind(id).first();
    expect(row).toEqual({ r: releaseA, version: "1.2.3.4" });
  });

  it("neither changes nor deletes an assembly of another release or product through this release's path", async () => {
    const inB = (await admin("POST", pathOf(productId, releaseB), { assembly: { name: "B.dll" } })).body["assemblyId"];
    const elsewhere = (await admin("POST", pathOf(otherProduct, otherRelease), { assembly: { name: "X.dll" } })).body[
      "assemblyId"
    ];
    for (const id of [inB, elsewhere]) {
      const put = await admin("PUT", pathOf(productId, releaseA), { assembly: { id, name: "taken.dll" } });
      expect(put.status).toBe(400);
      expect(put.body["message"]).toBe(`Assembly ${id} not found`);
      expect((await admin("DELETE", `${pathOf(productId, releaseA)}/${id}`)).status).toBe(400);
    }
    // The release of another product, named under this product: refused before anything is looked up.
    expect((await admin("DELETE", `${pathOf(productId, otherRelease)}/${elsewhere}`)).status).toBe(400);
    const names = await env.DB.prepare(
      "SELECT id, name, release_id AS r FROM assemblies WHERE id IN (?, ?) ORDER BY id",
    )
      .bind(inB, elsewhere)
      .all();
    expect(names.results).toEqual([
      { id: inB, name: "B.dll", r: releaseB },
      { id: elsewhere, name: "X.dll", r: otherRelease },
    ]);
  });
});

describe("a report's R2 body goes with it", () => {
  it("DELETE /v1/reports/{id} removes the R2 body with the row (the cron's retention: test/retention.test.ts)", async () => {
    const sent = await admin("POST", "/v1/report", { name: "ExceptionReport", content: "x".repeat(300 * 1024) });
    expect(sent.status, sent.text).toBe(200);
    const id = sent.body["reportId"] as number;
    const key = (
      await env.DB.prepare("SELECT content_key AS k FROM reports WHERE id = ?").bind(id).first<{ k: string }>()
    )?.k;
    expect(key).toMatch(/^reports\//);
    expect(await env.ARTIFACTS!.head(key!)).not.toBeNull();
    expect((await admin("DELETE", `/v1/reports/${id}`)).status).toBe(200);
    expect(await env.DB.prepare("SELECT id FROM reports WHERE id = ?").bind(id).first()).toBeNull();
    expect(await env.ARTIFACTS!.head(key!)).toBeNull();
  });
});

describe("reports naming no license are limited per credential", () => {
  const LIMIT = 3;
  let ip = 0;
  /** A report from a fresh address each time, so the per-IP limit never decides. */
  const report = (auth: { key?: string; token?: string }, body: Record<string, unknown> = {}) =>
    call("POST", "/v1/report", {
      ...auth,
      headers: { "cf-connecting-ip": `198.51.100.${++ip}` },
      body: { name: "ExceptionReport", content: "boom", ...body },
    });

  beforeAll(async () => {
    // A budget of their own (issue 36): Licensing:MaxReportsWithoutLicense, however large a license's budget is.
    await setSetting("Licensing:MaxReportsWithoutLicense", String(LIMIT));
    await setSetting("Licensing:MaxRequestsPerLicense", "1000");
    // The window is long enough that no test run crosses it.
    await setSetting("Licensing:LicenseRequestTimeFrame", "01:00:00");
  });
  afterAll(async () => {
    await setSetting("Licensing:MaxReportsWithoutLicense", null);
    await setSetting("Licensing:MaxRequestsPerLicense", null);
    await setSetting("Licensing:LicenseRequestTimeFrame", null);
  });

  it("counts an API key's reports across addresses, with unknown user keys; 429 with Retry-After past the budget", async () => {
    const key = await keyFor(["LicenseManager"]);
    for (let i = 0; i < LIMIT; i++) {
      const res = await report({ key }, i === 0 ? { userKey: "NOPE-NOPE-NOPE" } : {});
      expect(res.status, res.text).toBe(200);
    }
    const before = await env.DB.prepare("SELECT count(*) AS n FROM reports").first<{ n: number }>();
    const refused = await report({ key });
    expect(refused.status, refused.text).toBe(429);
    expect(refused.body["message"]).toMatch(/^Too many reports from this credential\. Try again in \d+ seconds\.$/);
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(0);
    expect((await report({ key }, { userKey: "NOPE-NOPE-NOPE" })).status).toBe(429);
    expect(await env.DB.prepare("SELECT count(*) AS n FROM reports").first<{ n: number }>()).toEqual(before);
    // Another credential has a budget of its own.
    expect((await report({ key: ADMIN.key })).status).toBe(200);
  });

  it("counts a user's bearer tokens together: signing in again does not renew the budget", async () => {
    const userName = `r${crypto.randomUUID().slice(0, 8)}`;
    const made = await admin("POST", "/v1/users", {
      user: { userName, password: "Secret#123456", roles: ["LicenseManager"] },
    });
    expect(made.status, made.text).toBe(200);
    for (let i = 0; i < LIMIT; i++)
      expect((await report({ token: await login(userName, "Secret#123456") })).status).toBe(200);
    const refused = await report({ token: await login(userName, "Secret#123456") });
    expect(refused.status, refused.text).toBe(429);
  });
});
