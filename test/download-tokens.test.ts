/**
 * Download tokens, gates and artifact caching through the public routes (issues 12, 14 and 15): stateless tokens
 * (a feed poll or update check writes no D1 row) that are still used up by the first complete download (ranges
 * covering the whole file included), serve at most twice the artifact's size, one artifact and one license, expire
 * and cannot be forged; the platform rule before a token is used; gates decided from the product as it is now;
 * ETag, 304 and If-Range on artifacts and feeds; resumable uploads bound to the key that started them.
 */
import { env, exports } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { parse as parseYaml } from "yaml";
import { housekeeping } from "../src/app/housekeeping";
import { blockmapOf, bytesOf, newRelease, send, upload } from "./artifacts-kit";
import { BASE, admin, call, keyFor, movableClock, setSetting } from "./helpers";

const clockAhead = (await movableClock()).move;
const BAD_TOKEN = "Download token invalid, expired or already used";
const SIZE = 10_000;
const installer = bytesOf(SIZE, 11);

let app: { productId: number; releaseId: number; code: string; path: string };
const ids: Record<string, number> = {};

async function license(
  fields: Record<string, unknown> = {},
  productId = app.productId,
): Promise<{ id: number; userKey: string }> {
  const res = await admin("POST", "/v1/licenses", { license: { productId, trace: false, ...fields } });
  expect(res.status, res.text).toBe(200);
  const listed = await admin(
    "GET",
    `/v1/licenses?filter=${encodeURIComponent(`id == ${res.body["id"]}`)}&select=userKey`,
  );
  return { id: res.body["id"], userKey: listed.body["licenses"][0].userKey };
}

const get = (path: string, headers: Record<string, string> = {}, method = "GET") =>
  exports.default.fetch(`${BASE}${path}`, { method, headers });
const download = (platform: string, file: string, query = "") =>
  `/v1/updates/${app.code}/download/${platform}/1.0.0/${encodeURIComponent(file)}${query}`;

/** The tokenised URL of the platform's installer, from the update check of a licensed caller (path and query). */
async function tokenUrl(userKey: string, platform = "win-x64"): Promise<string> {
  const res = await call("GET", `/v1/updates/${app.code}?platform=${platform}&version=0.0.1`, {
    headers: { "X-Service-User-Key": userKey },
  });
  expect(res.body["data"]?.download, res.text).toBeDefined();
  return (res.body["data"].download.url as string).replace(BASE, "");
}
const tokenOf = (url: string) => new URL(url, BASE).searchParams.get("token")!;

async function status(path: string, headers: Record<string, string> = {}): Promise<[number, string | undefined]> {
  const res = await get(path, headers);
  const body = new Uint8Array(await res.arrayBuffer());
  return [
    res.status,
    res.status === 403 ? (JSON.parse(new TextDecoder().decode(body)) as { message: string }).message : undefined,
  ];
}

/** Every row of every table: what a request that writes nothing leaves unchanged. */
async function allRows(): Promise<number> {
  const tables = await env.DB.prepare(
    "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '_cf_%' AND name != 'd1_migrations'",
  ).all<{ name: string }>();
  let n = 0;
  for (const { name } of tables.results)
    n += (await env.DB.prepare(`SELECT count(*) AS n FROM "${name}"`).first<{ n: number }>())!.n;
  return n;
}

beforeAll(async () => {
  app = await newRelease("1.0.0");
  expect(
    (
      await admin("PUT", `/v1/products/${app.productId}/releases`, {
        productRelease: { id: app.releaseId, public: true, releaseDate: "2026-01-01T00:00:00Z" },
      })
    ).status,
  ).toBe(200);
  ids["win"] = (await upload(app.path, installer, { fileName: "App Setup.exe" })).body["releaseDownloadId"];
  ids["blockmap"] = (
    await upload(app.path, await blockmapOf(installer), { kind: "blockmap", fileName: "App Setup.exe.blockmap" })
  ).body["releaseDownloadId"];
  ids["linux"] = (await upload(app.path, bytesOf(3000, 13), { platform: "linux-x64", fileName: "App.AppImage" })).body[
    "releaseDownloadId"
  ];
  ids["mac"] = (await upload(app.path, bytesOf(2000, 14), { platform: "darwin-arm64", fileName: "App.dmg" })).body[
    "releaseDownloadId"
  ];
});

describe("stateless download tokens", () => {
  it("a licensed feed poll and update check write no D1 row, yet hand out working tokens", async () => {
    const lic = await license();
    const headers = { "X-Service-User-Key": lic.userKey };
    // The first signed answer may create the service's signing key; later ones write nothing.
    await call("GET", `/v1/updates/${app.code}?platform=win-x64&version=0.0.1`, { headers });
    const before = await allRows();
    const check = await call("GET", `/v1/updates/${app.code}?platform=win-x64&version=0.0.1`, { headers });
    const feed = await get(`/v1/updates/${app.code}/feed/stable/win-x64/latest.yml`, headers);
    const alias = await get(`/v1/updates/${app.code}/latest.yml`, headers);
    expect([check.status, feed.status, alias.status]).toEqual([200, 200, 200]);
    const feedUrl = (parseYaml(await feed.text()).files[0].url as string).replace(BASE, "");
    await alias.text();
    expect(await allRows()).toBe(before);
    expect(check.body["data"].download.url).toContain("?token=");
    const full = await get(feedUrl);
    expect(full.status).toBe(200);
    expect(new Uint8Array(await full.arrayBuffer())).toEqual(installer);
    expect(full.headers.get("cache-control")).toBe("private, no-store");
    // The download is what records the token's use.
    expect(await allRows()).toBe(before + 1);
  });

  it("are used up by the first complete download; ranges resume; bytes=0- on a used token is refused", async () => {
    const lic = await license();
    const url = await tokenUrl(lic.userKey);
    expect((await get(url, {}, "HEAD")).status).toBe(200);
    expect((await status(url))[0]).toBe(200);
    expect(await status(url)).toEqual([403, BAD_TOKEN]);
    expect(await status(url, { range: "bytes=0-" })).toEqual([403, BAD_TOKEN]);
    expect(await status(url, { range: "bytes=0-4999, 5000-" })).toEqual([403, BAD_TOKEN]);
    const resumed = await get(url, { range: "bytes=100-199" });
    expect(resumed.status).toBe(206);
    expect(new Uint8Array(await resumed.arrayBuffer())).toEqual(installer.slice(100, 200));
  });

  it("count a range request covering the whole file as the complete download", async () => {
    for (const range of ["bytes=0-", "bytes=0-4999, 5000-", `bytes=-${SIZE}`]) {
      const url = await tokenUrl((await license()).userKey);
      const whole = await get(url, { range });
      expect(whole.status, range).toBe(206);
      await whole.arrayBuffer();
      expect(await status(url), range).toEqual([403, BAD_TOKEN]);
      expect(await status(url, { range: "bytes=0-" }), range).toEqual([403, BAD_TOKEN]);
    }
  });

  it("never serve more than twice the artifact's size", async () => {
    const lic = await license();
    const url = await tokenUrl(lic.userKey);
    // Ranges first (a differential download), then the complete download it falls back to.
    expect((await status(url, { range: "bytes=0-5999" }))[0]).toBe(206);
    expect((await status(url))[0]).toBe(200);
    expect((await status(url, { range: "bytes=0-3999" }))[0]).toBe(206); // 20,000 bytes: exactly twice
    expect(await status(url, { range: "bytes=0-0" })).toEqual([403, BAD_TOKEN]);
    const served = await env.DB.prepare("SELECT bytes_served AS n FROM download_tokens WHERE license_id = ?")
      .bind(lic.id)
      .first<{ n: number }>();
    expect(served?.n).toBe(2 * SIZE);
  });

  it("serve exactly one artifact (blockmaps stay exempt) and one license", async () => {
    const lic = await license();
    const other = await license();
    const url = await tokenUrl(lic.userKey);
    const token = tokenOf(url);
    expect(await status(download("linux-x64", "App.AppImage", `?token=${token}`))).toEqual([403, BAD_TOKEN]);
    expect(
      await status(download("darwin-arm64", "App.dmg", `?token=${token}`), {
        "X-Service-User-Key": (await license({ edition: "Ultimate" })).userKey,
      }),
    ).toEqual([403, BAD_TOKEN]);
    // electron-updater carries the installer's query over to the blockmap it derives from the installer's URL.
    expect((await status(download("win-x64", "App Setup.exe.blockmap", `?token=${token}`)))[0]).toBe(200);
    expect((await status(download("win-x64", "App Setup.exe.blockmap")))[0]).toBe(200);
    // Presented with another license's user key, the token is refused, and stays unused.
    expect(await status(url, { "X-Service-User-Key": other.userKey })).toEqual([403, BAD_TOKEN]);
    expect((await status(url, { "X-Service-User-Key": lic.userKey }))[0]).toBe(200);
  });

  it("refuse a forged or altered token, and an expired one", async () => {
    const lic = await license();
    const victim = await license();
    const url = await tokenUrl(lic.userKey);
    const token = tokenOf(url);
    const [licensePart, artifact, expiry, nonce, mac] = token.split(".") as [string, string, string, string, string];
    const flip = (s: string) => (s.endsWith("A") ? `${s.slice(0, -1)}B` : `${s.slice(0, -1)}A`);
    const forged = [
      `${victim.id.toString(36)}.${artifact}.${expiry}.${nonce}.${mac}`,
      `${licensePart}.${ids["linux"]!.toString(36)}.${expiry}.${nonce}.${mac}`,
      `${licensePart}.${artifact}.${(parseInt(expiry, 36) + 86_400).toString(36)}.${nonce}.${mac}`,
      `${licensePart}.${artifact}.${expiry}.${flip(nonce)}.${mac}`,
      `${licensePart}.${artifact}.${expiry}.${nonce}.${flip(mac)}`,
      `${licensePart}.${artifact}.${expiry}.${nonce}`,
      "x".repeat(64),
    ];
    for (const t of forged)
      expect(await status(download("win-x64", "App Setup.exe", `?token=${encodeURIComponent(t)}`)), t).toEqual([
        403,
        BAD_TOKEN,
      ]);
    expect(
      await env.DB.prepare("SELECT count(*) AS n FROM download_tokens WHERE license_id IN (?, ?)")
        .bind(lic.id, victim.id)
        .first<{ n: number }>(),
    ).toEqual({ n: 0 });
    clockAhead(11 * 60_000);
    expect(await status(url)).toEqual([403, BAD_TOKEN]);
  });

  it("refuse a revoked or expired license on the download route with the token's message, user key or token", async () => {
    const revoked = await license();
    const url = await tokenUrl(revoked.userKey);
    await admin("PUT", "/v1/licenses", { license: { id: revoked.id, revoked: true } });
    expect(await status(url)).toEqual([403, BAD_TOKEN]);
    expect(await status(url, { "X-Service-User-Key": revoked.userKey })).toEqual([403, BAD_TOKEN]);
    const expired = await license({ expireDate: new Date(Date.now() + 60_000).toISOString() });
    const url2 = await tokenUrl(expired.userKey);
    clockAhead(2 * 60_000);
    expect(await status(url2)).toEqual([403, BAD_TOKEN]);
    expect(
      await status(download("win-x64", "App Setup.exe.blockmap"), { "X-Service-User-Key": expired.userKey }),
    ).toEqual([403, BAD_TOKEN]);
  });

  it("apply the platform rule before the token is used", async () => {
    const standard = await license({ edition: "Standard" });
    await setSetting("Updates:EnforcePlatformEditions", "false");
    let url: string;
    try {
      url = await tokenUrl(standard.userKey, "darwin-arm64");
    } finally {
      await setSetting("Updates:EnforcePlatformEditions", null);
    }
    expect(await status(url)).toEqual([403, "darwin-arm64 needs a license of the Ultimate edition"]);
    expect(await status(url, { range: "bytes=0-" })).toEqual([
      403,
      "darwin-arm64 needs a license of the Ultimate edition",
    ]);
    expect(
      await env.DB.prepare("SELECT count(*) AS n FROM download_tokens WHERE license_id = ?")
        .bind(standard.id)
        .first<{ n: number }>(),
    ).toEqual({ n: 0 });
    await setSetting("Updates:EnforcePlatformEditions", "false");
    try {
      expect((await status(url))[0]).toBe(200);
    } finally {
      await setSetting("Updates:EnforcePlatformEditions", null);
    }
  });

  it("leave usage rows only until the token expires: housekeeping prunes them", async () => {
    const lic = await license();
    await (await get(await tokenUrl(lic.userKey))).arrayBuffer();
    const rows = () =>
      env.DB.prepare("SELECT count(*) AS n FROM download_tokens WHERE license_id = ?")
        .bind(lic.id)
        .first<{ n: number }>();
    expect(await rows()).toEqual({ n: 1 });
    await housekeeping(env, new Date(Date.now() + 5 * 60_000));
    expect(await rows()).toEqual({ n: 1 });
    await housekeeping(env, new Date(Date.now() + 11 * 60_000));
    expect(await rows()).toEqual({ n: 0 });
  });
});

describe("gates that hold after any sequence of edits", () => {
  it("keeps an application's maintenance-gated installer behind a token after isApplication off, requiresMaintenance false, isApplication on", async () => {
    const r = await newRelease("1.0.0");
    const product = (body: Record<string, unknown>) =>
      admin("PUT", "/v1/products", { product: { id: r.productId, ...body } });
    expect((await product({ isApplication: false })).status).toBe(200);
    expect(
      (
        await admin("PUT", `/v1/products/${r.productId}/releases`, {
          productRelease: { id: r.releaseId, public: true, requiresMaintenance: false },
        })
      ).status,
    ).toBe(200);
    expect((await product({ isApplication: true })).status).toBe(200);
    expect((await upload(r.path, installer, { fileName: "Gated.exe" })).status).toBe(201);
    const path = `/v1/updates/${r.code}/download/win-x64/1.0.0/Gated.exe`;
    expect(await status(path)).toEqual([403, BAD_TOKEN]);
    expect(await status(path, { range: "bytes=0-" })).toEqual([403, BAD_TOKEN]);
    expect((await get(`/v1/updates/${r.code}/latest.yml`)).status).toBe(204);
    const anonymous = await call("GET", `/v1/updates/${r.code}?platform=win-x64&version=0.0.1`);
    expect(anonymous.body["data"]).toMatchObject({ installable: false, withheldReason: "licenseRequired" });
    // A licensed caller gets a token for it, which works.
    const lic = await license({}, r.productId);
    const check = await call("GET", `/v1/updates/${r.code}?platform=win-x64&version=0.0.1`, {
      headers: { "X-Service-User-Key": lic.userKey },
    });
    expect(check.body["data"].download.url).toContain("?token=");
    expect((await status(check.body["data"].download.url.replace(BASE, "")))[0]).toBe(200);
    // With the setting on, the release's own requiresMaintenance: false makes it public.
    await setSetting("Updates:AllowPublicApplicationReleases", "true");
    try {
      expect((await status(path))[0]).toBe(200);
    } finally {
      await setSetting("Updates:AllowPublicApplicationReleases", null);
    }
  });

  it("refuses to turn off isApplication on a product whose releases have downloads", async () => {
    const res = await admin("PUT", "/v1/products", { product: { id: app.productId, isApplication: false } });
    expect(res.status).toBe(400);
    expect(res.body["message"]).toBe("isApplication cannot be turned off while releases of the product have downloads");
    const bare = await newRelease("1.0.0");
    expect((await admin("PUT", "/v1/products", { product: { id: bare.productId, isApplication: false } })).status).toBe(
      200,
    );
  });
});

describe("caching", () => {
  let pub: { code: string; id: number };
  beforeAll(async () => {
    const r = await newRelease("1.0.0");
    await setSetting("Updates:AllowPublicApplicationReleases", "true");
    try {
      expect(
        (
          await admin("PUT", `/v1/products/${r.productId}/releases`, {
            productRelease: { id: r.releaseId, public: true, requiresMaintenance: false },
          })
        ).status,
      ).toBe(200);
    } finally {
      await setSetting("Updates:AllowPublicApplicationReleases", null);
    }
    pub = { code: r.code, id: (await upload(r.path, installer, { fileName: "Free.exe" })).body["releaseDownloadId"] };
  });
  const withSetting = async (fn: () => Promise<void>) => {
    await setSetting("Updates:AllowPublicApplicationReleases", "true");
    try {
      await fn();
    } finally {
      await setSetting("Updates:AllowPublicApplicationReleases", null);
    }
  };

  it("caches a public artifact's id-pinned URL as long as a feed (never immutable), answers 304 to If-None-Match and honours If-Range", () =>
    withSetting(async () => {
      const feed = await get(`/v1/updates/${pub.code}/latest.yml`);
      const url = (parseYaml(await feed.text()).files[0].url as string).replace(BASE, "");
      expect(url).toBe(`/v1/updates/${pub.code}/download/win-x64/1.0.0/Free.exe?artifact=${pub.id}`);
      const full = await get(url);
      await full.arrayBuffer();
      const etag = full.headers.get("etag")!;
      expect(full.headers.get("cache-control")).toBe("public, max-age=60");
      const unpinned = await get(`/v1/updates/${pub.code}/download/win-x64/1.0.0/Free.exe`);
      await unpinned.arrayBuffer();
      expect(unpinned.headers.get("cache-control")).toBe("public, max-age=60");
      // An id of another artifact (a blockmap URL inheriting its installer's query) is not pinned.
      expect(
        (await get(`/v1/updates/${pub.code}/download/win-x64/1.0.0/Free.exe?artifact=${pub.id + 1000}`)).headers.get(
          "cache-control",
        ),
      ).toBe("public, max-age=60");

      for (const inm of [etag, `W/${etag}`, `"other", ${etag}`, "*"]) {
        const res = await get(url, { "if-none-match": inm });
        expect([res.status, await res.text(), res.headers.get("etag"), res.headers.get("cache-control")], inm).toEqual([
          304,
          "",
          etag,
          "public, max-age=60",
        ]);
      }
      const changed = await get(url, { "if-none-match": '"other"' });
      expect(changed.status).toBe(200);
      await changed.arrayBuffer();

      const resumed = await get(url, { range: "bytes=10-19", "if-range": etag });
      expect(resumed.status).toBe(206);
      expect(new Uint8Array(await resumed.arrayBuffer())).toEqual(installer.slice(10, 20));
      for (const ifRange of ['"another"', `W/${etag}`, "Tue, 24 Nov 2026 06:00:00 GMT"]) {
        const whole = await get(url, { range: "bytes=10-19", "if-range": ifRange });
        expect(whole.status, ifRange).toBe(200);
        expect((await whole.arrayBuffer()).byteLength).toBe(SIZE);
      }
    }));

  it("keeps gated and platform-limited artifacts private, and an If-Range that fails uses the token up", async () => {
    const lic = await license();
    const url = await tokenUrl(lic.userKey);
    const first = await get(url, { range: "bytes=0-9", "if-range": '"stale"' });
    expect([first.status, first.headers.get("cache-control")]).toEqual([200, "private, no-store"]);
    await first.arrayBuffer();
    expect(await status(url)).toEqual([403, BAD_TOKEN]);
    const ultimate = await license({ edition: "Ultimate" });
    const mac = await get(
      download("darwin-arm64", "App.dmg", `?token=${tokenOf(await tokenUrl(ultimate.userKey, "darwin-arm64"))}`),
      { "if-none-match": '"x"' },
    );
    expect([mac.status, mac.headers.get("cache-control")]).toEqual([200, "private, no-store"]);
    await mac.arrayBuffer();
  });

  it("tags feeds, canonical and aliases, anonymous and licensed, and answers 304 to their tag", async () => {
    await withSetting(async () => {
      for (const path of [
        `/v1/updates/${pub.code}/latest.yml`,
        `/v1/updates/${pub.code}/feed/stable/win-x64/latest.yml`,
      ]) {
        const first = await get(`${path}?noCache=1`);
        const etag = first.headers.get("etag");
        expect(etag, path).toMatch(/^"[0-9a-f]{32}"$/);
        await first.text();
        const again = await get(`${path}?noCache=2`, { "if-none-match": etag! });
        expect([
          again.status,
          await again.text(),
          again.headers.get("etag"),
          again.headers.get("cache-control"),
        ]).toEqual([304, "", etag, "public, max-age=60"]);
      }
    });
    const lic = await license();
    const headers = { "X-Service-User-Key": lic.userKey };
    const feed = await get(`/v1/updates/${app.code}/feed/stable/win-x64/latest.yml`, headers);
    const etag = feed.headers.get("etag")!;
    await feed.text();
    expect(etag).toMatch(/^"[0-9a-f]{32}"$/);
    const same = await get(`/v1/updates/${app.code}/feed/stable/win-x64/latest.yml`, {
      ...headers,
      "if-none-match": etag,
    });
    // A licensed feed carries fresh tokens, so its tag changes with every answer; it stays private.
    expect([same.status, same.headers.get("cache-control")]).toEqual([200, "private, no-store"]);
    await same.text();
  });
});

describe("resumable uploads", () => {
  it("belong to the API key that started them: another key, even an administrator's, is refused", async () => {
    const r = await newRelease("1.0.0");
    const started = await admin("POST", `${r.path}/uploads`, {
      upload: { platform: "win-x64", kind: "installer", fileName: "Big.exe" },
    });
    expect(started.status, started.text).toBe(201);
    const uploadId = started.body["uploadId"] as string;
    const otherAdmin = await keyFor(["Administrator"]);
    const part = (key: string) =>
      exports.default.fetch(`${BASE}${r.path}/uploads/${uploadId}/parts/1`, {
        method: "PUT",
        headers: { "x-api-key": key, "content-type": "application/octet-stream" },
        body: bytesOf(100),
      });
    const refused = [
      await part(otherAdmin),
      await exports.default.fetch(`${BASE}${r.path}/uploads/${uploadId}/complete`, {
        method: "POST",
        headers: { "x-api-key": otherAdmin },
      }),
      await exports.default.fetch(`${BASE}${r.path}/uploads/${uploadId}`, {
        method: "DELETE",
        headers: { "x-api-key": otherAdmin },
      }),
    ];
    for (const res of refused)
      expect([res.status, ((await res.json()) as { message: string }).message]).toEqual([
        403,
        `Upload ${uploadId} belongs to the API key that started it`,
      ]);
    expect(
      (
        await send("PUT", `${r.path}/uploads/${uploadId}/parts/1`, bytesOf(100), {
          "content-type": "application/octet-stream",
        })
      ).status,
    ).toBe(200);
    const done = await send("POST", `${r.path}/uploads/${uploadId}/complete`);
    expect(done.status, done.text).toBe(201);
  });
});
