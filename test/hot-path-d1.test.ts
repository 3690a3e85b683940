/**
 * The D1 work of the hot paths, as the service reports it in Server-Timing (db/work.ts): validate, heartbeat and the
 * update check with a user key write nothing on the request path and take one round trip; their traces still reach
 * D1 through the TRACES queue, many in one multi-row statement, and are listed by GET /v1/license-traces. And the
 * D1 session bookmark: an answer carries it, a client sends it back, and a malformed one is ignored.
 */
import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env, exports } from "cloudflare:workers";
import { createClient } from "@connectrpc/connect";
import { createGrpcWebTransport } from "@connectrpc/connect-web";
import worker from "../src/index";
import { describe, expect, it } from "vitest";
import { Authentication } from "../src/gen/licensing/v1/authentication_pb";
import { LicenseServer } from "../src/gen/licensing/v1/license_server_pb";
import { CHECK_IN_RESOLUTION_MS } from "../src/licensing/traces";
import { ADMIN, BASE, admin, call, movableClock, queuedTraces } from "./helpers";
import { blockmapOf, bytesOf, newRelease, upload } from "./artifacts-kit";
import { newLicense } from "./samples/licensing";

/** The counts of a Server-Timing header written by http/d1-session.ts. */
function d1Work(headers: Headers): Record<string, number> {
  const header = headers.get("server-timing") ?? "";
  const out: Record<string, number> = {};
  for (const metric of header.split(",")) {
    const [name, ...params] = metric.trim().split(";");
    const desc = params.find((p) => p.startsWith("desc="));
    if (name?.startsWith("d1-") && desc) out[name.slice(3)] = Number(desc.slice(6, -1));
  }
  return out;
}

async function application(): Promise<{ productId: number; code: string }> {
  const code = `hp${crypto.randomUUID().slice(0, 8)}`;
  const productId = (await admin("POST", "/v1/products", { product: { code, name: code, isApplication: true } })).body[
    "productId"
  ];
  const release = await admin("POST", `/v1/products/${productId}/releases`, {
    productRelease: { version: "1.0.0", public: true },
  });
  expect(release.status, release.text).toBe(200);
  return { productId, code };
}

describe("hot paths write nothing to D1 on the request path", () => {
  it("validate, heartbeat and update check: one round trip, no row written; their traces arrive through the queue", async () => {
    const activation = await newLicense("Activation");
    const headers = { "cf-connecting-ip": "203.0.113.20" };
    const activate = await call("POST", "/v1/license/activate", {
      key: ADMIN.key,
      headers,
      body: { userKey: activation.userKey, machineId: "m1" },
    });
    expect(activate.status, activate.text).toBe(200);
    // Activation writes its activation row: the counting sees writes.
    expect(d1Work(activate.headers)["rows-written"]).toBeGreaterThan(0);

    // The edge's word on where the client is: a trace keeps its location fields, nothing else of it.
    const cf = { country: "NO", region: "Oslo", city: "Oslo", latitude: "59.91", timezone: "Europe/Oslo", asn: 64500 };
    const validate = await call("POST", "/v1/license/validate", {
      key: ADMIN.key,
      headers,
      cf,
      body: { userKey: activation.userKey, machineId: "m1" },
    });
    expect(validate.status, validate.text).toBe(200);
    expect(d1Work(validate.headers), "validate").toMatchObject({ "rows-written": 0, "round-trips": 1, statements: 1 });
    // With a bearer token, its logout check rides in the same statement (a column of the license's read).
    const signedIn = await call("POST", "/v1/auth/login", { body: { userKey: activation.userKey } });
    const bearer = await call("POST", "/v1/license/validate", {
      token: signedIn.body["token"] as string,
      headers,
      body: { userKey: activation.userKey, machineId: "m1" },
    });
    expect(bearer.status, bearer.text).toBe(200);
    expect(d1Work(bearer.headers), "validate, bearer").toMatchObject({
      "rows-written": 0,
      "round-trips": 1,
      statements: 1,
    });

    const floating = await newLicense("Floating");
    const seat = await call("POST", "/v1/license/request", {
      key: ADMIN.key,
      headers,
      body: { userKey: floating.userKey, machineId: "m", clientId: "c" },
    });
    expect(seat.status, seat.text).toBe(200);
    const heartbeat = await call("POST", "/v1/license/heartbeat", {
      key: ADMIN.key,
      headers,
      body: { licenseToken: seat.body["licenseToken"] },
    });
    expect(heartbeat.status, heartbeat.text).toBe(200);
    expect(d1Work(heartbeat.headers), "heartbeat").toMatchObject({
      "rows-written": 0,
      "round-trips": 1,
      statements: 1,
    });

    const app = await application();
    const updater = (await admin("POST", "/v1/licenses", { license: { productId: app.productId } })).body;
    const userKey = (
      await admin("GET", `/v1/licenses?filter=${encodeURIComponent(`id == ${updater["id"]}`)}&select=userKey`)
    ).body["licenses"][0].userKey;
    const checkUpdates = () =>
      exports.default.fetch(`${BASE}/v1/updates/${app.code}?platform=win-x64&version=0.9.0`, {
        headers: { "X-Service-User-Key": userKey, ...headers },
      });
    // The first check also reads the product and the signing key, which the isolate then keeps (delivery/product-memo.ts).
    const first = await checkUpdates();
    expect(first.status, await first.text()).toBe(200);
    expect(d1Work(first.headers)["rows-written"], "first update check").toBe(0);
    const check = await checkUpdates();
    expect(check.status, await check.clone().text()).toBe(200);
    // The releases are the isolate's now (delivery/release-memo.ts): the caller's license is the one statement.
    expect(d1Work(check.headers), "update check").toMatchObject({ "rows-written": 0, "round-trips": 1, statements: 1 });

    // The traces, written by the queue consumer and listed through the API.
    expect(await queuedTraces(activation.id, 3)).toEqual([0, 2, 2]);
    expect(await queuedTraces(updater["id"], 2)).toEqual([7, 7]);
    const listed = await admin(
      "GET",
      `/v1/license-traces?filter=${encodeURIComponent(`licenseId == "${activation.licenseId}"`)}&sort=id`,
    );
    expect(
      listed.body["licenseTraces"].map((t: { action: number; clientIp: string; machineId: string }) => [
        t.action,
        t.clientIp,
        t.machineId,
      ]),
    ).toEqual([
      [0, "203.0.113.20", "m1"],
      [2, "203.0.113.20", "m1"],
      [2, "203.0.113.20", "m1"],
    ]);
    const located = listed.body["licenseTraces"].map((t: { geoLocation?: string }) =>
      t.geoLocation === undefined ? undefined : JSON.parse(t.geoLocation),
    );
    const { asn: _network, ...location } = cf;
    expect(located[1]).toEqual(location);
  });

  it("writes a queue batch of traces in multi-row statements within D1's 100 bound parameters", async () => {
    const lic = await newLicense("Activation");
    await call("POST", "/v1/license/activate", { key: ADMIN.key, body: { userKey: lic.userKey, machineId: "many" } });
    // 30 validations in parallel: their traces reach the consumer in one batch or a few, each over 12 rows at most
    // per INSERT (8 columns each), which D1 would refuse above 100 parameters.
    const answers = await Promise.all(
      Array.from({ length: 30 }, () =>
        call("POST", "/v1/license/validate", { key: ADMIN.key, body: { userKey: lic.userKey, machineId: "many" } }),
      ),
    );
    expect(answers.every((a) => a.status === 200)).toBe(true);
    const actions = await queuedTraces(lic.id, 31);
    expect(actions).toEqual([0, ...Array.from({ length: 30 }, () => 2)]);
  });
});

describe("gRPC costs what REST costs", () => {
  // The gRPC-Web client over the Worker, keeping the last answer's headers (Server-Timing as REST has it).
  let last: Headers | undefined;
  const transport = createGrpcWebTransport({
    baseUrl: BASE,
    fetch: async (input, init) => {
      const res = await exports.default.fetch(input as RequestInfo, { ...init, redirect: "manual" });
      last = res.headers;
      return res;
    },
  });
  const licenses = createClient(LicenseServer, transport);
  const oneStatement = { "rows-written": 0, "round-trips": 1, statements: 1 };

  it("validate and heartbeat: one statement, one round trip, no row written, with a license's bearer token or an API key", async () => {
    const activation = await newLicense("Activation");
    const floating = await newLicense("Floating");
    const withKey = { headers: { "x-api-key": ADMIN.key } };
    await licenses.activateLicense({ userKey: activation.userKey, machineId: "g1" }, withKey);
    const seat = await licenses.requestFloatingLicense(
      { userKey: floating.userKey, machineId: "g", clientId: "c" },
      withKey,
    );
    const signedIn = await createClient(Authentication, transport).authenticate({ userKey: activation.userKey });
    const floatingToken = await createClient(Authentication, transport).authenticate({ userKey: floating.userKey });
    const bearer = (token: string) => ({ headers: { authorization: `Bearer ${token}` } });

    for (const [credential, options] of [
      ["API key", withKey],
      ["bearer", bearer(signedIn.token)],
    ] as const) {
      await licenses.validateLicense({ userKey: activation.userKey, machineId: "g1" }, options);
      expect(d1Work(last!), `gRPC validate, ${credential}`).toMatchObject(oneStatement);
    }
    for (const [credential, options] of [
      ["API key", withKey],
      ["bearer", bearer(floatingToken.token)],
    ] as const) {
      await licenses.heartbeat({ licenseToken: seat.licenseToken }, options);
      expect(d1Work(last!), `gRPC heartbeat, ${credential}`).toMatchObject(oneStatement);
    }
  });
});

describe("downloads: one round trip to decide, one to record a token's use", () => {
  it("an anonymous or keyed download reads in one round trip; the download behind a licensed feed poll takes two and writes its token's use", async () => {
    const app = await newRelease("1.0.0");
    const published = await admin("PUT", `/v1/products/${app.productId}/releases`, {
      productRelease: { id: app.releaseId, public: true, releaseDate: "2026-01-01T00:00:00Z" },
    });
    expect(published.status, published.text).toBe(200);
    const installer = bytesOf(4096, 3);
    expect((await upload(app.path, installer, { fileName: "App Setup.exe" })).status).toBe(201);
    const blockmap = await upload(app.path, await blockmapOf(installer), {
      kind: "blockmap",
      fileName: "App Setup.exe.blockmap",
    });
    expect(blockmap.status, blockmap.text).toBe(201);
    const created = (await admin("POST", "/v1/licenses", { license: { productId: app.productId } })).body;
    const userKey = (
      await admin("GET", `/v1/licenses?filter=${encodeURIComponent(`id == ${created["id"]}`)}&select=userKey`)
    ).body["licenses"][0].userKey;
    const keyed = { "X-Service-User-Key": userKey };
    const downloads = `${BASE}/v1/updates/${app.code}/download/win-x64/1.0.0`;
    // Each measured request follows one that reads the product, which the isolate then keeps (product-memo.ts), as
    // an auto-updater's download follows its feed poll.
    const measured = async (url: string, headers: Record<string, string> = {}) => {
      expect((await exports.default.fetch(`${downloads}/none`)).status).toBe(404);
      const res = await exports.default.fetch(url, { headers });
      const body = new Uint8Array(await res.arrayBuffer());
      return { status: res.status, size: body.byteLength, work: d1Work(res.headers) };
    };
    const oneRead = (statements: number) => ({ "rows-written": 0, "round-trips": 1, statements });

    // Anonymous and ungated (the blockmap beside the installer): the artifact is the one statement.
    const anonymous = await measured(`${downloads}/App%20Setup.exe.blockmap`);
    expect(anonymous.status).toBe(200);
    expect(anonymous.work, "anonymous download").toMatchObject(oneRead(1));
    // With a user key: the artifact and the key's license, in one batch.
    const withKey = await measured(`${downloads}/App%20Setup.exe.blockmap`, keyed);
    expect(withKey.status).toBe(200);
    expect(withKey.work, "download with a user key").toMatchObject(oneRead(2));

    // The licensed feed poll, then its download as electron-updater makes it (the feed's URL, the user key header):
    // the artifact and the license (named by the key and by the token: one statement) in one batch, then the
    // token's use in one conditional statement, which writes its row.
    const feed = await exports.default.fetch(`${BASE}/v1/updates/${app.code}/feed/stable/win-x64/latest.yml`, {
      headers: keyed,
    });
    const yaml = await feed.text();
    expect(feed.status, yaml).toBe(200);
    const url = /url: "([^"]+)"/.exec(yaml)![1]!;
    expect(url).toContain("token=");
    const licensed = await measured(url, keyed);
    expect(licensed.size).toBe(installer.byteLength);
    // One row written: the token's download_tokens row.
    expect(licensed.work, "licensed download").toMatchObject({ "rows-written": 1, "round-trips": 2, statements: 3 });
    // The same URL without the key (a browser given the link): the same work; the token is used up, so a second
    // complete download is refused by the conditional statement, which writes nothing.
    const again = await measured(url);
    expect(again.status).toBe(403);
    expect(again.work, "used token").toMatchObject({ "rows-written": 0, "round-trips": 2, statements: 3 });
    const other = await exports.default.fetch(`${BASE}/v1/updates/${app.code}/feed/stable/win-x64/latest.yml`, {
      headers: keyed,
    });
    const tokenOnly = await measured(/url: "([^"]+)"/.exec(await other.text())![1]!);
    expect(tokenOnly.size).toBe(installer.byteLength);
    expect(tokenOnly.work, "download with a token alone").toMatchObject({
      "rows-written": 1,
      "round-trips": 2,
      statements: 3,
    });
  });
});

const testClock = await movableClock();

describe("traces through the queue", () => {
  it("a validation writes no trace to D1, even after its response: the trace is a message, and the consumer writes it", async () => {
    const lic = await newLicense("Activation");
    await call("POST", "/v1/license/activate", { key: ADMIN.key, body: { userKey: lic.userKey, machineId: "q" } });
    expect(await queuedTraces(lic.id, 1)).toEqual([0]);
    // The activation checked the license in; a minute on, the validation checks it in again (once a minute at most).
    testClock.move(CHECK_IN_RESOLUTION_MS);
    // The Worker with a TRACES producer that keeps what it is sent, and every waitUntil awaited.
    const sent: unknown[] = [];
    const traces = {
      send: async (body: unknown) => void sent.push(body),
      sendBatch: async () => undefined,
    } as unknown as Queue;
    const ctx = createExecutionContext();
    const res = await worker.fetch(
      new Request(`${BASE}/v1/license/validate`, {
        method: "POST",
        headers: { "x-api-key": ADMIN.key, "content-type": "application/json" },
        body: JSON.stringify({ userKey: lic.userKey, machineId: "q" }),
      }),
      { ...env, TRACES: traces },
      ctx,
    );
    expect(res.status, await res.text()).toBe(200);
    await waitOnExecutionContext(ctx);
    expect(sent).toEqual([
      {
        kind: "license.traces",
        traces: [expect.objectContaining({ licenseId: lic.id, action: 2, machineId: "q", address: "127.0.0.1" })],
        // The license's check-in (issue 29: lastCheckIn) rides in the same message, written by the same consumer.
        checkIns: [[lic.id, expect.any(String)]],
      },
    ]);
    const rows = await env.DB.prepare("SELECT count(*) AS n FROM license_traces WHERE license_id = ?")
      .bind(lic.id)
      .first<{ n: number }>();
    expect(rows?.n).toBe(1);
  });
});

describe("D1 sessions and bookmarks", () => {
  it("answers the session's bookmark and continues a session from the bookmark a client sends back", async () => {
    const lic = await newLicense("Activation");
    const write = await call("POST", "/v1/license/activate", {
      key: ADMIN.key,
      body: { userKey: lic.userKey, machineId: "bm" },
    });
    expect(write.status, write.text).toBe(200);
    const bookmark = write.headers.get("x-d1-bookmark");
    expect(bookmark).toMatch(/^[0-9a-f-]+$/i);
    // The next request starts its session at that bookmark: it reads the activation just written, and its own
    // bookmark is not older than the one it was given.
    const tokens = await call("GET", `/v1/licenses/${lic.licenseId}/tokens?countOnly=true`, {
      key: ADMIN.key,
      headers: { "x-d1-bookmark": bookmark! },
    });
    expect(tokens.body["totalLicenseTokensCount"]).toBe(1);
    const next = tokens.headers.get("x-d1-bookmark");
    expect(next).toMatch(/^[0-9a-f-]+$/i);
    expect(next! >= bookmark!).toBe(true);
  });

  it("starts each request's session where it should, and never hands D1 a malformed bookmark", async () => {
    // The D1 binding, with every session it opens recorded.
    const sessions: string[] = [];
    const db = {
      prepare: (sql: string) => env.DB.prepare(sql),
      batch: (statements: D1PreparedStatement[]) => env.DB.batch(statements),
      exec: (sql: string) => env.DB.exec(sql),
      withSession: (start: string) => {
        sessions.push(start);
        return env.DB.withSession(start);
      },
    } as unknown as D1Database;
    const send = async (method: string, path: string, headers: Record<string, string> = {}) => {
      const ctx = createExecutionContext();
      const res = await worker.fetch(
        new Request(`${BASE}${path}`, { method, headers: { "x-api-key": ADMIN.key, ...headers } }),
        { ...env, DB: db },
        ctx,
      );
      await waitOnExecutionContext(ctx);
      return res;
    };
    const read = await send("GET", "/v1/licenses?take=1");
    expect(read.status).toBe(200);
    const bookmark = read.headers.get("x-d1-bookmark")!;
    expect(bookmark).toMatch(/^[0-9a-f-]+$/i);
    expect((await send("POST", "/v1/auth/logout")).status).toBeLessThan(500);
    expect((await send("GET", "/v1/licenses?take=1", { "x-d1-bookmark": bookmark })).status).toBe(200);
    for (const bad of ["not a bookmark", "'; DROP TABLE licenses; --", "a".repeat(500)]) {
      expect((await send("GET", "/v1/licenses?take=1", { "x-d1-bookmark": bad })).status).toBe(200);
    }
    expect(sessions).toEqual([
      "first-unconstrained",
      "first-primary",
      bookmark,
      "first-unconstrained",
      "first-unconstrained",
      "first-unconstrained",
    ]);
  });
});

describe("the package feeds' licensed answers", () => {
  it("Squirrel.Windows RELEASES and Velopack's feed with a user key: one statement, one round trip, no row written", async () => {
    const { productId, releaseId, code, path } = await newRelease("1.0.0");
    await admin("PUT", `/v1/products/${productId}/releases`, { productRelease: { id: releaseId, public: true } });
    const up = await upload(path, bytesOf(4000, 3), { kind: "package", fileName: "App-1.0.0-full.nupkg" });
    expect(up.status, up.text).toBe(201);
    const created = (await admin("POST", "/v1/licenses", { license: { productId } })).body;
    const userKey = (
      await admin("GET", `/v1/licenses?filter=${encodeURIComponent(`id == ${created["id"]}`)}&select=userKey`)
    ).body["licenses"][0].userKey;
    for (const url of [
      `${BASE}/v1/updates/${code}/squirrel-win/win-x64/RELEASES?localVersion=0.9.0`,
      `${BASE}/v1/updates/${code}/velopack/win-x64/releases.stable.json?localVersion=0.9.0`,
    ]) {
      const poll = () => exports.default.fetch(url, { headers: { "X-Service-User-Key": userKey } });
      // The first poll also reads the releases, which the isolate then keeps (delivery/release-memo.ts).
      const first = await poll();
      expect(first.status, await first.text()).toBe(200);
      expect(d1Work(first.headers)["rows-written"], url).toBe(0);
      const again = await poll();
      expect(await again.text(), url).toContain("App-1.0.0-full.nupkg");
      expect(d1Work(again.headers), url).toMatchObject({ "rows-written": 0, "round-trips": 1, statements: 1 });
    }
  });
});

describe("release control on the polls", () => {
  it("a rollout and an audience add no statement: a licensed poll reads its license and its audiences in one; an install's poll reads nothing", async () => {
    const app = await application();
    const first = (await admin("GET", `/v1/products/${app.productId}/releases`)).body["productReleases"][0].id;
    await admin("PUT", `/v1/products/${app.productId}/releases`, {
      productRelease: { id: first, stagingPercentage: 10 },
    });
    const audience = await admin("POST", `/v1/products/${app.productId}/releases`, {
      productRelease: { version: "1.1.0", public: true, audience: 'edition == "Ultimate"', stagingPercentage: 50 },
    });
    expect(audience.status, audience.text).toBe(200);
    for (const [id, version] of [
      [first, "1.0.0"],
      [audience.body["productReleaseId"], "1.1.0"],
    ]) {
      const up = await upload(`/v1/products/${app.productId}/releases/${id}/downloads`, bytesOf(500, 3), {
        platform: "win-x64",
        kind: "installer",
        fileName: `App-${version}.exe`,
        partName: `App-${version}.exe`,
      });
      expect(up.status, up.text).toBe(201);
    }
    const created = (
      await admin("POST", "/v1/licenses", { license: { productId: app.productId, edition: "Ultimate" } })
    ).body;
    const userKey = (
      await admin("GET", `/v1/licenses?filter=${encodeURIComponent(`id == ${created["id"]}`)}&select=userKey`)
    ).body["licenses"][0].userKey;
    const poll = (path: string, headers: Record<string, string>) =>
      exports.default.fetch(`${BASE}${path}`, { headers: { "cf-connecting-ip": "203.0.113.21", ...headers } });
    const paths = [`/v1/updates/${app.code}?platform=win-x64&version=0.9.0`, `/v1/updates/${app.code}/latest.yml`];
    for (const path of paths) {
      // The first poll may read the product, the releases and the signing key; the next ones have them in the isolate.
      await poll(path, {
        "X-Service-User-Key": userKey,
        "X-Service-Install-Id": "i-1",
        "X-Service-Current-Version": "0.9.0",
      });
      const licensed = await poll(path, {
        "X-Service-User-Key": userKey,
        "X-Service-Install-Id": "i-1",
        "X-Service-Current-Version": "0.9.0",
      });
      expect(licensed.status).toBeLessThan(300);
      // The license and, in the same statement, whether it matches the release's audience.
      expect(d1Work(licensed.headers), path).toMatchObject({ "rows-written": 0, "round-trips": 1, statements: 1 });
      const install = await poll(path, { "X-Service-Install-Id": "i-2", "X-Service-Current-Version": "0.9.0" });
      expect(install.status).toBeLessThan(300);
      expect(install.headers.get("Cache-Control")).toBe("private, no-store");
      expect(d1Work(install.headers)["round-trips"] ?? 0, path).toBe(0);
    }
  });
});

describe("the Tauri, Squirrel.Mac and Sparkle feeds' licensed answers", () => {
  it("with a user key or a feed token: one statement, one round trip, no row written", async () => {
    const { productId, releaseId, code, path } = await newRelease("1.0.0");
    await admin("PUT", `/v1/products/${productId}/releases`, { productRelease: { id: releaseId, public: true } });
    const signature = btoa(String.fromCharCode(...bytesOf(64, 5)));
    for (const [kind, fileName, sig] of [
      ["archive", "App.app.tar.gz", "dW50cnVzdGVkIGNvbW1lbnQ6IHRhdXJp"],
      ["zip", "App-1.0.0-mac.zip", signature],
    ] as const) {
      const up = await upload(path, bytesOf(4000, 3), { platform: "darwin-arm64", kind, fileName, signature: sig });
      expect(up.status, up.text).toBe(201);
    }
    const created = (await admin("POST", "/v1/licenses", { license: { productId, edition: "Ultimate" } })).body;
    const license = (await admin("GET", `/v1/licenses?filter=${encodeURIComponent(`id == ${created["id"]}`)}`)).body[
      "licenses"
    ][0];
    for (const path of [
      `/v1/updates/${code}/tauri/darwin/aarch64/0.9.0`,
      `/v1/updates/${code}/tauri.json`,
      `/v1/updates/${code}/squirrel-mac/darwin-arm64/0.9.0`,
      `/v1/updates/${code}/appcast.xml`,
    ]) {
      for (const [how, url, headers] of [
        ["key", `${BASE}${path}`, { "X-Service-User-Key": license.userKey }],
        ["feed token", `${BASE}${path}${path.includes("?") ? "&" : "?"}feed=${license.feedToken}`, {}],
      ] as const) {
        const poll = () => exports.default.fetch(url, { headers });
        // The first poll also reads the releases, which the isolate then keeps (delivery/release-memo.ts).
        const first = await poll();
        expect(first.status, `${path} ${how}: ${await first.text()}`).toBe(200);
        expect(d1Work(first.headers)["rows-written"], path).toBe(0);
        const again = await poll();
        expect(await again.text(), `${path} ${how}`).toContain("token=");
        expect(d1Work(again.headers), `${path} ${how}`).toMatchObject({
          "rows-written": 0,
          "round-trips": 1,
          statements: 1,
        });
      }
    }
  });
});

describe("release health's session pings", () => {
  it("write nothing to D1 on the request path: anonymous, no statement written; with a user key, its license read alone", async () => {
    const app = await application();
    const license = await admin("POST", "/v1/licenses", {
      license: { productId: app.productId, licensingMode: "File" },
    });
    expect(license.status, license.text).toBe(200);
    const list = await admin(
      "GET",
      `/v1/licenses?filter=${encodeURIComponent(`id == ${license.body["id"]}`)}&select=userKey`,
    );
    const userKey = list.body["licenses"][0].userKey as string;
    const body = {
      version: "1.0.0",
      sessions: [
        { id: crypto.randomUUID(), status: "started", startedAt: new Date().toISOString() },
        { id: crypto.randomUUID(), status: "crashed", startedAt: new Date().toISOString(), durationMs: 5 },
      ],
    };
    const path = `/v1/updates/${app.code}/sessions`;
    const install = { "X-Service-Install-Id": `hp-${crypto.randomUUID()}` };
    // The first ping may read the product (the isolate's product memo); the second reads nothing at all.
    await call("POST", path, { body, headers: install });
    const anonymous = await call("POST", path, { body, headers: install });
    expect(anonymous.status, anonymous.text).toBe(202);
    expect(d1Work(anonymous.headers), "anonymous ping").toMatchObject({ "rows-written": 0, statements: 0 });
    const keyed = await call("POST", path, { body, headers: { ...install, "X-Service-User-Key": userKey } });
    expect(keyed.status, keyed.text).toBe(202);
    expect(d1Work(keyed.headers), "licensed ping").toMatchObject({
      "rows-written": 0,
      "round-trips": 1,
      statements: 1,
    });
  });
});
