/**
 * Replayed credentials (issue 9, adversarial catalogue), beyond the single cases in updates.test.ts and
 * auth.test.ts: a download token replayed whole, altered, on another artifact or another product; a logged-out bearer
 * token on REST and on gRPC; a revoked or deleted API key on REST and gRPC, at once in the isolate that changed it and
 * within Application:ApiKeyCacheDuration elsewhere (SPEC's stated window, and no longer).
 */
import { env, exports } from "cloudflare:workers";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createGrpcWebTransport } from "@connectrpc/connect-web";
import { beforeAll, describe, expect, it } from "vitest";
import { LicenseServer } from "../../src/gen/licensing/v1/license_server_pb";
import { BASE, admin, call, keyFor, login, movableClock } from "../helpers";
import { bytesOf, newRelease, upload } from "../artifacts-kit";
import { newLicense } from "../samples/licensing";

const clockAhead = (await movableClock()).move;
const fetchWorker: typeof fetch = (input, init) =>
  exports.default.fetch(input as RequestInfo, {
    ...init,
    ...(init?.redirect === "error" ? { redirect: "manual" as const } : {}),
  });
const licensing = createClient(LicenseServer, createGrpcWebTransport({ baseUrl: BASE, fetch: fetchWorker }));

async function grpcCode(promise: Promise<unknown>): Promise<Code | "ok"> {
  return promise.then(
    () => "ok" as const,
    (e: unknown) => (e instanceof ConnectError ? e.code : Code.Unknown),
  );
}

describe("download tokens", () => {
  const products: { code: string; userKey: string }[] = [];

  beforeAll(async () => {
    // Two gated products, each with a Windows and a Linux installer in 1.0.0, and an Ultimate license of each.
    for (let i = 0; i < 2; i++) {
      const r = await newRelease("1.0.0");
      await admin("PUT", `/v1/products/${r.productId}/releases`, {
        productRelease: { id: r.releaseId, public: true, releaseDate: "2026-01-01T00:00:00Z" },
      });
      expect((await upload(r.path, bytesOf(2000, 1), { fileName: "App.exe" })).status).toBe(201);
      expect((await upload(r.path, bytesOf(3000, 2), { fileName: "App.AppImage", platform: "linux-x64" })).status).toBe(
        201,
      );
      const lic = await admin("POST", "/v1/licenses", { license: { productId: r.productId, edition: "Ultimate" } });
      const listed = await admin(
        "GET",
        `/v1/licenses?filter=${encodeURIComponent(`id == ${lic.body["id"]}`)}&select=userKey`,
      );
      products.push({ code: r.code, userKey: listed.body["licenses"][0].userKey });
    }
  });

  /** A tokenised download URL from the update check, as an auto-updater gets it. */
  async function tokenUrl(which: number, platform = "win-x64"): Promise<URL> {
    const { code, userKey } = products[which]!;
    const res = await exports.default.fetch(`${BASE}/v1/updates/${code}?platform=${platform}&version=0.0.1`, {
      headers: { "X-Service-User-Key": userKey },
    });
    const { data } = (await res.json()) as { data: { download: { url: string } } };
    return new URL(data.download.url);
  }

  const get = async (url: URL | string, headers: Record<string, string> = {}) => {
    const res = await exports.default.fetch(url.toString(), { headers });
    await res.arrayBuffer();
    return res.status;
  };
  const withToken = (url: URL, token: string) => {
    const copy = new URL(url);
    copy.searchParams.set("token", token);
    return copy;
  };

  it("are used up by one complete download: a replay, or any alteration of the token, is refused", async () => {
    const url = await tokenUrl(0);
    const token = url.searchParams.get("token")!;
    for (const altered of [
      token.toUpperCase(),
      token.toLowerCase(),
      `${token}x`,
      token.slice(0, -1),
      ` ${token}`,
      `${token}%00`,
    ]) {
      if (altered !== token) expect(await get(withToken(url, altered)), altered).toBe(403);
    }
    expect(await get(url)).toBe(200);
    expect(await get(url)).toBe(403);
    expect(await get(`${url}&token=${token}`)).toBe(403);
    // Resumption stays possible until expiry (SPEC "States"), and only for this artifact.
    expect(await get(url, { range: "bytes=0-99" })).toBe(206);
  });

  it("serve only the artifact they were issued for: not another platform, release or product", async () => {
    const url = await tokenUrl(0);
    const token = url.searchParams.get("token")!;
    const linux = await tokenUrl(0, "linux-x64");
    const other = await tokenUrl(1);
    expect(await get(withToken(linux, token))).toBe(403);
    expect(await get(withToken(other, token))).toBe(403);
    expect(await get(withToken(linux, token), { range: "bytes=0-9" })).toBe(403);
    // The token is still unused: the refusals above did not spend it.
    expect(await get(url)).toBe(200);
  });

  it("are refused after expiry for ranges too", async () => {
    const url = await tokenUrl(1);
    clockAhead(11 * 60_000);
    expect(await get(url, { range: "bytes=0-9" })).toBe(403);
    expect(await get(url)).toBe(403);
  });
});

describe("bearer tokens after logout", () => {
  it("are refused on REST and gRPC, and logging out twice fails the second time", async () => {
    const lic = await newLicense("Activation");
    const token = await login();
    const auth = { headers: { authorization: `Bearer ${token}` } };
    expect(await grpcCode(licensing.validateLicense({ userKey: lic.userKey }, auth))).toBe("ok");
    expect((await call("POST", "/v1/auth/logout", { token, body: {} })).status).toBe(200);
    expect((await call("POST", "/v1/license/validate", { token, body: { userKey: lic.userKey } })).status).toBe(401);
    expect(await grpcCode(licensing.validateLicense({ userKey: lic.userKey }, auth))).toBe(Code.Unauthenticated);
    expect((await call("POST", "/v1/auth/logout", { token, body: {} })).status).toBe(401);
  });

  it("a license's own token (user-key sign-in) is refused after its logout too", async () => {
    const lic = await newLicense("Activation");
    const signedIn = await call("POST", "/v1/auth/login", { body: { userKey: lic.userKey } });
    const token = signedIn.body["token"] as string;
    expect((await call("POST", "/v1/license/validate", { token, body: { userKey: lic.userKey } })).status).toBe(200);
    expect((await call("POST", "/v1/auth/logout", { token, body: {} })).status).toBe(200);
    expect((await call("POST", "/v1/license/validate", { token, body: { userKey: lic.userKey } })).status).toBe(401);
  });

  it("are refused before anything is read for them: an unknown key and a heartbeat answer 401, not 525", async () => {
    const floating = await newLicense("Floating");
    const token = await login();
    const seat = await call("POST", "/v1/license/request", {
      token,
      body: { userKey: floating.userKey, machineId: "m", clientId: "c" },
    });
    expect(seat.status).toBe(200);
    expect((await call("POST", "/v1/auth/logout", { token, body: {} })).status).toBe(200);
    // The license's read finds no row to carry the logout check's answer: the check is asked on its own.
    const unknown = await call("POST", "/v1/license/validate", { token, body: { userKey: "NO-SUCH-KEY" } });
    expect(unknown.status).toBe(401);
    const beat = await call("POST", "/v1/license/heartbeat", {
      token,
      body: { licenseToken: seat.body["licenseToken"] },
    });
    expect(beat.status).toBe(401);
    expect(
      (await call("POST", "/v1/license/heartbeat", { token, body: { licenseToken: "fltk_unknown" } })).status,
    ).toBe(401);
  });
});

describe("API keys after revocation or deletion", () => {
  const keyId = async (key: string) =>
    (await env.DB.prepare("SELECT id FROM api_keys WHERE key_prefix = ?")
      .bind(`${key.slice(0, 8)}…`)
      .first<{ id: number }>())!.id;

  it("are refused at once in the isolate that changed them, on REST and gRPC", async () => {
    const lic = await newLicense("Activation");
    const revoked = await keyFor(["Sales"]);
    const deleted = await keyFor(["Sales"]);
    for (const key of [revoked, deleted])
      expect(
        await grpcCode(licensing.validateLicense({ userKey: lic.userKey }, { headers: { "x-api-key": key } })),
      ).toBe("ok");
    expect((await admin("PUT", "/v1/api-keys", { apiKey: { id: await keyId(revoked), revoked: true } })).status).toBe(
      200,
    );
    expect((await admin("DELETE", `/v1/api-keys/${await keyId(deleted)}`)).status).toBe(200);
    for (const key of [revoked, deleted]) {
      expect((await call("GET", "/v1/resources", { key })).status).toBe(401);
      expect(
        await grpcCode(licensing.validateLicense({ userKey: lic.userKey }, { headers: { "x-api-key": key } })),
      ).toBe(Code.Unauthenticated);
    }
  });

  it("revoked by another isolate, are honoured only within Application:ApiKeyCacheDuration (3 minutes)", async () => {
    const lic = await newLicense("Activation");
    const key = await keyFor(["Sales"]);
    const grpc = () => grpcCode(licensing.validateLicense({ userKey: lic.userKey }, { headers: { "x-api-key": key } }));
    expect(await grpc()).toBe("ok");
    // Another isolate revokes it: this isolate's cache does not hear of it.
    await env.DB.prepare("UPDATE api_keys SET revoked = 1 WHERE id = ?")
      .bind(await keyId(key))
      .run();
    expect(await grpc()).toBe("ok");
    clockAhead(3 * 60_000 + 1000);
    expect(await grpc()).toBe(Code.Unauthenticated);
    expect((await call("GET", "/v1/resources", { key })).status).toBe(401);
  });
});
