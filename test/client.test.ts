/**
 * The client library (client/) against the real Worker: every licensing operation over both transports (REST and
 * gRPC-Web), user-key sign-in and session renewal, floating seats with live heartbeats, offline license keys, signed
 * update checks, and the errors an application sees. The client's `fetch` is `exports.default.fetch`, so requests go
 * through the Worker's whole stack as they would over the network. Pure logic (JCS, error and timestamp mapping) is
 * tested at the end.
 */
import { create } from "@bufbuild/protobuf";
import { TimestampSchema } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError } from "@connectrpc/connect";
import canonicalizeReference from "canonicalize";
import { env, exports } from "cloudflare:workers";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import {
  AuthenticationError,
  type FetchFunction,
  type FloatingSeat,
  type HeartbeatResult,
  type JwkSet,
  LicensingClient,
  type LicensingClientError,
  LicensingError,
  NetworkError,
  ProtocolError,
  ServiceError,
  VerificationError,
  canonicalize,
  dateFromIso,
  dateFromTimestamp,
  errorFromGrpc,
  errorFromRest,
  timestampFromDateValue,
  verifyLicenseOffline,
} from "../client/src/index";
import { licenseStatus, licenseType, licensingMode } from "../client/src/wire";
// Registers transport: "grpc-web" (its own entry point, @licensing/client/grpc-web).
import "../client/src/grpc-web";
import { clock } from "../src/kernel/clock";
import { loadConfig } from "../src/db/settings-store";
import { getDb } from "../src/db/client";
import { signBytes } from "../src/auth/signing-keys";
import { ADMIN, BASE, admin } from "./helpers";

const TRANSPORTS = ["http", "grpc-web"] as const;
type TransportName = (typeof TRANSPORTS)[number];

/** The Worker as the client's `fetch`: the request takes the same path through the Worker as one over the network. */
const workerFetch: FetchFunction = (input, init) => exports.default.fetch(input, init);

/** A `fetch` that records what the client sent (path and headers) before handing it to the Worker. */
function recordingFetch(): { fetch: FetchFunction; calls: { path: string; headers: Headers }[] } {
  const calls: { path: string; headers: Headers }[] = [];
  return {
    calls,
    fetch: (input, init) => {
      const url = new URL(input instanceof Request ? input.url : String(input));
      calls.push({ path: url.pathname + url.search, headers: new Headers(init?.headers) });
      return workerFetch(input, init);
    },
  };
}

const SIGN_IN_PATHS = ["/v1/auth/login", "/licensing.v1.Authentication/Authenticate"];

let sequence = 0;
/** A product and a license of a mode, made through the Management API; returns the license's ids and user key. */
async function newLicense(
  licensingMode: "File" | "Activation" | "Floating",
  maxClients = 0,
  extra: Record<string, unknown> = {},
) {
  const code = `client-${Date.now().toString(36)}-${++sequence}`;
  const product = await admin("POST", "/v1/products", { product: { code, name: `Client test ${sequence}` } });
  expect(product.status, product.text).toBe(200);
  const created = await admin("POST", "/v1/licenses", {
    license: { productId: product.body["productId"], licensingMode, maxClients, ...extra },
  });
  expect(created.status, created.text).toBe(200);
  const id = created.body["id"] as number;
  const listed = await admin("GET", `/v1/licenses?filter=${encodeURIComponent(`id == ${id}`)}&select=userKey`);
  return {
    id,
    licenseId: created.body["licenseId"] as string,
    userKey: listed.body["licenses"][0].userKey as string,
    productCode: code,
  };
}

/** A client that holds only the license's user key: it signs in with it. */
function appClient(transport: TransportName, userKey: string, fetch: FetchFunction = workerFetch): LicensingClient {
  return new LicensingClient({ baseUrl: BASE, transport, userKey, fetch });
}

/** The rejection of a promise, typed, for field-by-field assertions. */
async function rejection<E extends Error>(
  promise: Promise<unknown>,
  type: abstract new (...args: never[]) => E,
): Promise<E> {
  try {
    await promise;
  } catch (error) {
    expect(error).toBeInstanceOf(type);
    return error as E;
  }
  throw new Error("expected a rejection");
}

/** Resolves with the next value a callback receives. */
function nextCall<T>(): { wait: Promise<T>; callback: (value: T) => void } {
  let callback!: (value: T) => void;
  const wait = new Promise<T>((resolve) => (callback = resolve));
  return { wait, callback };
}

const realNow = clock.now;
afterEach(() => {
  clock.now = realNow;
});

let jwks: JwkSet;
beforeAll(async () => {
  jwks = await new LicensingClient({ baseUrl: BASE, fetch: workerFetch }).getSigningKeys();
});

describe.each(TRANSPORTS)("client over %s", (transport) => {
  it("signs in with the user key once, activates idempotently and refuses a machine over the limit with 526", async () => {
    const lic = await newLicense("Activation", 1, {
      edition: "Professional",
      features: ["export", "sync"],
      licenseeName: "Initech",
    });
    const rec = recordingFetch();
    const client = appClient(transport, lic.userKey, rec.fetch);

    const first = await client.activate({ machineId: "PC-1", clientName: "Desk" });
    expect(first.licenseToken).toMatch(/^actk_/);
    expect(first).toMatchObject({ activeClientCount: 1, maxClientCount: 1 });
    expect(first.license).toMatchObject({
      licenseId: lic.licenseId,
      licensingMode: "Activation",
      licenseType: "Standard",
      edition: "Professional",
      features: ["export", "sync"],
      licensee: { name: "Initech" },
    });
    expect(first.license.issueDate).toBeInstanceOf(Date);
    expect(first.license.expireAt).toBeUndefined();

    const again = await client.activate({ machineId: "PC-1" });
    expect(again.licenseToken).toBe(first.licenseToken);

    const refused = await rejection(client.activate({ machineId: "PC-2" }), LicensingError);
    expect({ grpcCode: refused.grpcCode, httpStatus: refused.httpStatus, message: refused.message }).toEqual({
      grpcCode: 6,
      httpStatus: 526,
      message: "The license has already been activated",
    });

    // One sign-in served all three calls, and every licensing call carried its bearer token.
    expect(rec.calls.filter((c) => SIGN_IN_PATHS.includes(c.path))).toHaveLength(1);
    const licensingCalls = rec.calls.filter((c) => !SIGN_IN_PATHS.includes(c.path));
    expect(licensingCalls).toHaveLength(3);
    for (const call of licensingCalls) expect(call.headers.get("authorization")).toMatch(/^Bearer /);
  });

  it("validates with typed results and verifies the license key offline", async () => {
    const lic = await newLicense("Activation", 2, { licenseType: "Trial", expireDate: "2099-01-01T00:00:00.000Z" });
    const client = appClient(transport, lic.userKey);
    const activation = await client.activate({ machineId: "PC-7", clientId: "alice", productCode: lic.productCode });
    // An activation proves the license usable on its machine, so its answer carries a key.
    const licenseKey = activation.license.licenseKey ?? "";
    expect(licenseKey).toMatch(/^[\w-]+\.[\w-]+\.[\w-]+$/);

    const before = Date.now();
    const valid = await client.validate({ machineId: "PC-7", clientId: "alice", nonce: "n-123" });
    expect(valid).toMatchObject({ licenseId: lic.licenseId, status: "Activated", nonce: "n-123" });
    expect(valid.license).toMatchObject({ licenseType: "Trial", expireAt: new Date("2099-01-01T00:00:00.000Z") });
    expect(valid.serverTime).toBeInstanceOf(Date);
    expect(Math.abs(valid.serverTime.getTime() - before)).toBeLessThan(60_000);
    // The client's install id travels with each validation (a header, gRPC-Web metadata): adoption counts it by it.
    const recorded = recordingFetch();
    const installed = new LicensingClient({
      baseUrl: BASE,
      transport,
      userKey: lic.userKey,
      fetch: recorded.fetch,
      installId: "install-7",
    });
    await installed.validate({ machineId: "PC-7", clientId: "alice", version: "1.0.0" });
    const validation = recorded.calls.find((c) => /validate|ValidateLicense/.test(c.path));
    expect(validation?.headers.get("x-service-install-id")).toBe("install-7");

    const payload = await client.verifyLicenseOffline(licenseKey, jwks, {
      machineId: "PC-7",
      productCode: lic.productCode,
    });
    expect(payload).toMatchObject({
      licenseId: lic.licenseId,
      productCode: lic.productCode,
      licenseType: "Trial",
      machineId: "PC-7",
      clientId: "alice",
      expireAt: "2099-01-01T00:00:00.000Z",
    });
    expect(payload.exp).toBeGreaterThan(payload.iat);

    expect(
      (await rejection(verifyLicenseOffline(licenseKey, jwks, { machineId: "PC-8" }), VerificationError)).reason,
    ).toBe("machine");
    expect(
      (await rejection(verifyLicenseOffline(licenseKey, jwks, { productCode: "other" }), VerificationError)).reason,
    ).toBe("product");
    const later = new Date(((payload.exp ?? 0) + 60) * 1000);
    expect((await rejection(verifyLicenseOffline(licenseKey, jwks, { now: later }), VerificationError)).reason).toBe(
      "expired",
    );
    expect((await rejection(verifyLicenseOffline(licenseKey, { keys: [] }), VerificationError)).reason).toBe(
      "unknownKey",
    );
    const [header, body, signature] = licenseKey.split(".");
    const forged = `${header}.${btoa(JSON.stringify({ ...payload, machineId: "PC-9" }))
      .replace(/=+$/, "")
      .replace(/\+/g, "-")
      .replace(/\//g, "_")}.${signature}`;
    expect(body).not.toBe(forged.split(".")[1]);
    expect((await rejection(verifyLicenseOffline(forged, jwks), VerificationError)).reason).toBe("signature");
  });

  it("deactivates a machine, after which validating it fails with 529", async () => {
    const lic = await newLicense("Activation", 1);
    const client = appClient(transport, lic.userKey);
    await client.activate({ machineId: "PC-1" });
    expect(await client.deactivate({ machineId: "PC-1" })).toEqual({
      licenseId: lic.licenseId,
      activeClientCount: 0,
      maxClientCount: 1,
    });
    const refused = await rejection(client.validate({ machineId: "PC-1" }), LicensingError);
    expect([refused.grpcCode, refused.httpStatus, refused.message, refused.reason]).toEqual([
      9,
      529,
      "The license has not been activated",
      "notActivated",
    ]);
    // The freed activation is available to another machine.
    expect((await client.activate({ machineId: "PC-2" })).activeClientCount).toBe(1);
  });

  it("holds floating seats with heartbeats, refuses one over maxClients with 528, and releases them", async () => {
    const lic = await newLicense("Floating", 2);
    const client = appClient(transport, lic.userKey);
    const beats: HeartbeatResult[] = [];
    const second = nextCall<HeartbeatResult>();
    // A bad option is refused before a seat is requested, so none is stranded (the first seat below counts 1).
    await expect(client.requestFloating({ machineId: "m0", clientId: "c1" }, { heartbeatInterval: 0 })).rejects.toThrow(
      RangeError,
    );
    const seat = await client.requestFloating(
      { machineId: "m1", clientId: "c1" },
      {
        heartbeatInterval: 0.05,
        onHeartbeat: (beat) => {
          beats.push(beat);
          if (beats.length === 2) second.callback(beat);
        },
      },
    );
    expect(seat.licenseToken).toMatch(/^fltk_/);
    expect(seat).toMatchObject({ state: "active", activeClientCount: 1, maxClientCount: 2 });
    expect(seat.heartbeatInterval).toBeGreaterThan(0);
    expect(seat.license.licensingMode).toBe("Floating");

    const other = await client.requestFloating({ machineId: "m2", clientId: "c1" });
    const full = await rejection(client.requestFloating({ machineId: "m3", clientId: "c1" }), LicensingError);
    expect([full.grpcCode, full.httpStatus, full.message]).toEqual([
      8,
      528,
      "The maximum number of concurrent users for the license has been reached",
    ]);

    const beat = await second.wait;
    expect(beat).toMatchObject({ activeClientCount: 2, maxClientCount: 2 });
    expect(beat.tokenExpireAt).toBeInstanceOf(Date);
    expect(seat.tokenExpireAt?.getTime()).toBeGreaterThan(Date.now());

    const released = await seat.release();
    expect(released).toEqual({ licenseId: lic.licenseId, activeClientCount: 1, maxClientCount: 2 });
    expect(seat.state).toBe("released");
    expect(await client.release(seat)).toBe(released);
    const count = beats.length;
    await new Promise((resolve) => setTimeout(resolve, 150));
    expect(beats.length).toBe(count);

    // A seat freed by its token alone (as after a crash), then the same token again: 525.
    expect((await client.release(other.licenseToken)).activeClientCount).toBe(0);
    await other.release().catch(() => undefined);
    const unknown = await rejection(client.release(other.licenseToken), LicensingError);
    expect([unknown.grpcCode, unknown.httpStatus, unknown.message, unknown.reason]).toEqual([
      5,
      525,
      "License token not found",
      "licenseTokenNotFound",
    ]);
    // The seat is free again for a third machine.
    const third = await client.requestFloating({ machineId: "m3", clientId: "c1" });
    await third.release();
  });

  it("stops heartbeats and reports a terminal error when the license is revoked under a seat", async () => {
    const lic = await newLicense("Floating", 1);
    const client = appClient(transport, lic.userKey);
    const failed = nextCall<{ error: LicensingClientError; terminal: boolean }>();
    let heartbeats = 0;
    const seat: FloatingSeat = await client.requestFloating(
      { machineId: "m1", clientId: "c1" },
      {
        heartbeatInterval: 0.05,
        onHeartbeat: () => heartbeats++,
        onError: (error, info) => failed.callback({ error, terminal: info.terminal }),
      },
    );
    expect((await admin("PUT", "/v1/licenses", { license: { id: lic.id, revoked: true } })).status).toBe(200);
    const { error, terminal } = await failed.wait;
    expect(terminal).toBe(true);
    expect(error).toBeInstanceOf(LicensingError);
    expect(error).toMatchObject({ grpcCode: 7, httpStatus: 527, message: "The license has been revoked" });
    expect(seat.state).toBe("lost");
    expect(seat.lastError).toBe(error);
    const count = heartbeats;
    await new Promise((resolve) => setTimeout(resolve, 150));
    expect(heartbeats).toBe(count);
  });

  it("sends a report that the Management API then lists", async () => {
    const lic = await newLicense("File");
    const client = appClient(transport, lic.userKey);
    const uid = `client-${transport}-${Date.now()}`;
    const { reportId } = await client.sendReport({
      name: "ExceptionReport",
      uid,
      version: "2.1.0",
      date: new Date("2026-11-01T10:00:00.000Z"),
      machineId: "PC-1",
      contentType: "text/plain",
      content: "System.NullReferenceException at Main()",
      properties: [{ name: "os", value: "Windows 11" }],
    });
    expect(reportId).toBeGreaterThan(0);
    const listed = await admin("GET", `/v1/reports?filter=${encodeURIComponent(`uid == "${uid}"`)}`);
    expect(listed.body["reports"]).toHaveLength(1);
    expect(listed.body["reports"][0]).toMatchObject({
      id: reportId,
      name: "ExceptionReport",
      licenseId: lic.licenseId,
      machineId: "PC-1",
    });
  });

  it("signs in again once when the service no longer accepts the session token", async () => {
    const lic = await newLicense("File");
    const rec = recordingFetch();
    const client = appClient(transport, lic.userKey, rec.fetch);
    await client.validate();
    await client.validate();
    expect(rec.calls.filter((c) => SIGN_IN_PATHS.includes(c.path))).toHaveLength(1);
    // The service's clock moves past the token's lifetime; the client's does not, so it sends the stale token once.
    const at = Date.now() + 31 * 60_000;
    clock.now = () => new Date(at);
    expect((await client.validate()).status).toBe("NotActivated");
    expect(rec.calls.filter((c) => SIGN_IN_PATHS.includes(c.path))).toHaveLength(2);
  });

  it("raises AuthenticationError for a wrong user key or no credential, and works with an API key", async () => {
    const wrong = await rejection(
      appClient(transport, "WRONG-WRONG-WRONG-WRONG-WRONG").validate(),
      AuthenticationError,
    );
    expect(wrong).toBeInstanceOf(LicensingError);
    expect([wrong.grpcCode, wrong.httpStatus, wrong.message]).toEqual([16, 401, "Invalid user key."]);

    const lic = await newLicense("File");
    const anonymous = new LicensingClient({ baseUrl: BASE, transport, fetch: workerFetch });
    await rejection(anonymous.validate({ userKey: lic.userKey }), AuthenticationError);
    await expect(anonymous.validate()).rejects.toThrow(TypeError);

    const withKey = new LicensingClient({ baseUrl: BASE, transport, apiKey: ADMIN.key, fetch: workerFetch });
    expect(await withKey.validate({ userKey: lic.userKey })).toMatchObject({
      licenseId: lic.licenseId,
      status: "NotActivated",
    });
    const notFound = await rejection(withKey.validate({ userKey: "NOPE1-NOPE2-NOPE3-NOPE4-NOPE5" }), LicensingError);
    expect([notFound.grpcCode, notFound.httpStatus, notFound.message, notFound.reason]).toEqual([
      5,
      525,
      "License key not found",
      "licenseNotFound",
    ]);
  });

  it("raises NetworkError when the service cannot be reached", async () => {
    const unreachable: FetchFunction = () => Promise.reject(new TypeError("fetch failed"));
    const client = new LicensingClient({ baseUrl: BASE, transport, apiKey: ADMIN.key, fetch: unreachable });
    const error = await rejection(client.validate({ userKey: "ANY" }), NetworkError);
    expect(error.cause).toBeInstanceOf(TypeError);
  });
});

describe("both transports", () => {
  it("return the same typed results and the same errors for the same operations", async () => {
    const lic = await newLicense("Activation", 1, {
      edition: "Ultimate",
      features: ["a"],
      supportExpireDate: "2030-06-30T00:00:00.000Z",
      licenseeEmail: "it@initech.example",
    });
    const [rest, grpc] = TRANSPORTS.map((t) => appClient(t, lic.userKey));
    const a = await rest!.activate({ machineId: "PC-1" });
    const b = await grpc!.activate({ machineId: "PC-1" });
    // Both carry a key (the machine holds a live activation); the signatures differ by their iat only.
    const comparable = <T extends { license: { licenseKey?: string | undefined } }>(r: T) => ({
      ...r,
      license: { ...r.license, licenseKey: r.license.licenseKey ? "(signed)" : "(none)" },
    });
    expect(comparable(b)).toEqual(comparable(a));

    const va = await rest!.validate({ machineId: "PC-1" });
    const vb = await grpc!.validate({ machineId: "PC-1" });
    expect({ ...comparable(vb), serverTime: 0 }).toEqual({ ...comparable(va), serverTime: 0 });

    const ea = await rejection(rest!.activate({ machineId: "PC-2" }), LicensingError);
    const eb = await rejection(grpc!.activate({ machineId: "PC-2" }), LicensingError);
    expect([eb.name, eb.grpcCode, eb.httpStatus, eb.message]).toEqual([
      ea.name,
      ea.grpcCode,
      ea.httpStatus,
      ea.message,
    ]);
  });
});

describe("checkForUpdate", () => {
  /** Update-check data in the shape of SPEC "Update check data", members deliberately out of canonical order. */
  const data = {
    updateAvailable: true,
    format: 2,
    product: { name: "Studio", code: "studio" },
    channel: "stable",
    platform: "win-x64",
    current: "1.0.0",
    latest: "1.2.0",
    release: { version: "1.2.0", publishedAt: "2026-11-01T00:00:00.000Z", name: "Studio 1.2" },
    installable: true,
    download: {
      fileName: "Studio-1.2.0.exe",
      kind: "installer",
      size: 1234,
      sha256: "ab".repeat(32),
      sha512: "c".repeat(86) + "==",
      url: `${BASE}/v1/updates/studio/download/win-x64/1.2.0/Studio-1.2.0.exe`,
    },
    maintenance: {
      until: "2027-01-01T00:00:00.000Z",
      expired: false,
      expiresInDays: 40,
      noticeDays: 30,
      licensee: "Initech",
    },
    note: "Grüße € 😀",
  };

  /** Signs the canonical JSON of `value` with the service's own key store, as the update route does. */
  async function sign(value: unknown): Promise<{ signature: string; keyId: string }> {
    const { config } = await loadConfig(env, env.DB);
    return signBytes(getDb(env.DB), config, new TextEncoder().encode(canonicalize(value)));
  }

  /**
   * A `fetch` that answers the update-check route with `answer` and hands everything else (the key set) to the Worker:
   * the test controls the signed data (tampered, foreign key, truncated signature), which the real route never sends.
   */
  function updateRoute(answer: () => Promise<unknown>, seen: { url?: URL; headers?: Headers }): FetchFunction {
    return async (input, init) => {
      const url = new URL(input instanceof Request ? input.url : String(input));
      if (!url.pathname.startsWith("/v1/updates/")) return workerFetch(input, init);
      seen.url = url;
      seen.headers = new Headers(init?.headers);
      return new Response(JSON.stringify(await answer()), { headers: { "content-type": "application/json" } });
    };
  }

  it("verifies the service's signed answer and returns the typed data, licensed and anonymous", async () => {
    const code = `client-app-${Date.now().toString(36)}`;
    const product = await admin("POST", "/v1/products", {
      product: { code, name: "Client App", isApplication: true, purchaseUrl: "https://example.com/buy" },
    });
    const productId = product.body["productId"] as number;
    const release = await admin("POST", `/v1/products/${productId}/releases`, {
      productRelease: { version: "1.2.0", name: "Client App 1.2", releaseDate: "2026-06-01T00:00:00Z", public: true },
    });
    expect(release.status, release.text).toBe(200);
    const artifact = {
      platform: "win-x64",
      kind: "installer",
      fileName: "Client App Setup 1.2.0.exe",
      sourceKind: "url",
      url: "https://cdn.example.com/client-app-1.2.0.exe",
      size: 4096,
      sha256: "ab".repeat(32),
      sha512: btoa(String.fromCharCode(...new Uint8Array(64).fill(7))),
    };
    const added = await admin(
      "POST",
      `/v1/products/${productId}/releases/${release.body["productReleaseId"]}/downloads`,
      { releaseDownload: artifact },
    );
    expect(added.status, added.text).toBe(201);
    const created = await admin("POST", "/v1/licenses", {
      license: {
        productId,
        licensingMode: "Activation",
        supportExpireDate: "2099-01-01T00:00:00Z",
        licenseeName: "Initech",
      },
    });
    const listed = await admin(
      "GET",
      `/v1/licenses?filter=${encodeURIComponent(`id == ${created.body["id"]}`)}&select=userKey`,
    );
    const userKey = listed.body["licenses"][0].userKey as string;
    const request = { productCode: code, platform: "win-x64", version: "1.0.0" } as const;

    // REST only on either transport: the gRPC-Web client checks through the same route.
    const licensed = await new LicensingClient({
      baseUrl: BASE,
      transport: "grpc-web",
      userKey,
      fetch: workerFetch,
    }).checkForUpdate(request);
    expect(jwks.keys.map((k) => k.kid)).toContain(licensed.keyId);
    expect(licensed.data).toMatchObject({
      format: 2,
      product: { code, name: "Client App" },
      channel: "stable",
      current: "1.0.0",
      latest: "1.2.0",
      release: { version: "1.2.0", name: "Client App 1.2" },
      updateAvailable: true,
      installable: true,
      download: {
        fileName: artifact.fileName,
        kind: "installer",
        size: 4096,
        sha256: artifact.sha256,
        sha512: artifact.sha512,
      },
      maintenance: { licenseId: created.body["licenseId"], expired: false, licensee: "Initech" },
    });
    expect(licensed.data.withheldReason).toBeUndefined();

    const anonymous = await new LicensingClient({ baseUrl: BASE, fetch: workerFetch }).checkForUpdate(request);
    expect(anonymous.data).toMatchObject({
      updateAvailable: true,
      installable: false,
      withheldReason: "licenseRequired",
      purchaseUrl: "https://example.com/buy",
    });
    expect(anonymous.data.download).toBeUndefined();
    expect(anonymous.data.maintenance).toBeUndefined();

    const unknown = await rejection(
      new LicensingClient({ baseUrl: BASE, fetch: workerFetch }).checkForUpdate({
        ...request,
        productCode: "no-such-product",
      }),
      ServiceError,
    );
    expect(unknown.httpStatus).toBe(404);
    await admin("PUT", "/v1/licenses", { license: { id: created.body["id"], revoked: true } });
    const revoked = await rejection(
      new LicensingClient({ baseUrl: BASE, userKey, fetch: workerFetch }).checkForUpdate(request),
      ServiceError,
    );
    expect([revoked.httpStatus, revoked.message]).toEqual([403, "License revoked or expired"]);
  });

  it("verifies data signed with the service's key store, sending the query and the user-key header", async () => {
    const signed = await sign(data);
    const seen: { url?: URL; headers?: Headers } = {};
    const client = new LicensingClient({
      baseUrl: BASE,
      userKey: "USER-KEY",
      fetch: updateRoute(async () => ({ success: true, data, ...signed }), seen),
    });
    const check = await client.checkForUpdate({
      productCode: "studio",
      platform: "win-x64",
      version: "1.0.0",
      channel: "stable",
    });
    expect(check.keyId).toBe(signed.keyId);
    expect(jwks.keys.map((k) => k.kid)).toContain(signed.keyId);
    expect(check.data).toMatchObject({
      format: 2,
      updateAvailable: true,
      installable: true,
      latest: "1.2.0",
      download: { size: 1234 },
      maintenance: { noticeDays: 30 },
    });
    expect(seen.url?.pathname).toBe("/v1/updates/studio");
    expect(Object.fromEntries(seen.url?.searchParams ?? [])).toEqual({
      platform: "win-x64",
      version: "1.0.0",
      channel: "stable",
    });
    expect(seen.headers?.get("x-service-user-key")).toBe("USER-KEY");
    expect(seen.headers?.has("x-service-install-id")).toBe(false);
    // The install id: the client's, or the call's own.
    const installed = new LicensingClient({
      baseUrl: BASE,
      installId: "install-1",
      fetch: updateRoute(async () => ({ success: true, data, ...signed }), seen),
    });
    await installed.checkForUpdate({ productCode: "studio", platform: "win-x64", version: "1.0.0" });
    expect(seen.headers?.get("x-service-install-id")).toBe("install-1");
    await installed.checkForUpdate({
      productCode: "studio",
      platform: "win-x64",
      version: "1.0.0",
      installId: "other",
    });
    expect(seen.headers?.get("x-service-install-id")).toBe("other");
  });

  it("rejects data changed after signing, a foreign key id, a malformed signature, and accepts pinned keys", async () => {
    const signed = await sign(data);
    const request = { productCode: "studio", platform: "win-x64", version: "1.0.0" } as const;
    const answering = (body: unknown) =>
      new LicensingClient({ baseUrl: BASE, fetch: updateRoute(async () => body, {}) });

    const tampered = answering({ success: true, data: { ...data, installable: false }, ...signed });
    expect((await rejection(tampered.checkForUpdate(request), VerificationError)).reason).toBe("signature");
    const foreign = answering({ success: true, data, signature: signed.signature, keyId: "not-a-published-key" });
    expect((await rejection(foreign.checkForUpdate(request), VerificationError)).reason).toBe("unknownKey");
    const truncated = answering({ success: true, data, keyId: signed.keyId, signature: signed.signature.slice(0, 40) });
    expect((await rejection(truncated.checkForUpdate(request), VerificationError)).reason).toBe("signature");

    // Pinned keys: the published set is never fetched, and a key missing from the pinned set is refused.
    const pinned = new LicensingClient({
      baseUrl: BASE,
      trustedKeys: jwks,
      fetch: updateRoute(async () => ({ success: true, data, ...signed }), {}),
    });
    expect((await pinned.checkForUpdate(request)).data.product).toEqual({ code: "studio", name: "Studio" });
    const otherPins = new LicensingClient({
      baseUrl: BASE,
      trustedKeys: { keys: [] },
      fetch: updateRoute(async () => ({ success: true, data, ...signed }), {}),
    });
    expect((await rejection(otherPins.checkForUpdate(request), VerificationError)).reason).toBe("unknownKey");
  });

  it("raises ServiceError for the update routes' refusals", async () => {
    const refusing: FetchFunction = async () =>
      new Response(JSON.stringify({ success: false, code: 403, message: "License revoked or expired" }), {
        status: 403,
        headers: { "content-type": "application/json" },
      });
    const client = new LicensingClient({ baseUrl: BASE, fetch: refusing });
    const error = await rejection(
      client.checkForUpdate({ productCode: "studio", platform: "linux-x64", version: "1.0.0" }),
      ServiceError,
    );
    expect([error.httpStatus, error.message]).toEqual([403, "License revoked or expired"]);
  });
});

describe("client pure logic", () => {
  describe("canonicalize (RFC 8785)", () => {
    it("matches the RFC's sample and property sorting", () => {
      const sample = JSON.parse(
        '{"numbers":[333333333.33333329,1E30,4.50,2e-3,0.000000000000000000000000001],"string":"\\u20ac$\\u000F\\u000aA\'\\u0042\\u0022\\u005c\\\\\\"\\/","literals":[null,true,false]}',
      );
      expect(canonicalize(sample)).toBe(
        '{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\\u000f\\nA\'B\\"\\\\\\\\\\"/"}',
      );
      const sorting = JSON.parse(
        '{"\\u20ac":"Euro Sign","\\r":"Carriage Return","\\ufb33":"Hebrew Letter Dalet With Dagesh","1":"One","\\ud83d\\ude00":"Emoji: Grinning Face","\\u0080":"Control","\\u00f6":"Latin Small Letter O With Diaeresis"}',
      );
      // Integer-like names ("1") come first in a JS object's own key order; JCS sorts them as strings like any other.
      expect(canonicalize(sorting)).toBe(
        '{"\\r":"Carriage Return","1":"One","\u0080":"Control","ö":"Latin Small Letter O With Diaeresis","€":"Euro Sign","😀":"Emoji: Grinning Face","דּ":"Hebrew Letter Dalet With Dagesh"}',
      );
    });

    it("writes numbers as ECMAScript does (RFC 8785 appendix B)", () => {
      const cases: [number, string][] = [
        [0, "0"],
        [-0, "0"],
        [5e-324, "5e-324"],
        [1.7976931348623157e308, "1.7976931348623157e+308"],
        [9007199254740992, "9007199254740992"],
        [295147905179352830000, "295147905179352830000"],
        [1e21, "1e+21"],
        [0.000001, "0.000001"],
        [1e-7, "1e-7"],
        [-1.5, "-1.5"],
      ];
      for (const [value, text] of cases) expect(canonicalize(value)).toBe(text);
    });

    it("agrees with the canonicalize package the service signs with", () => {
      const values: unknown[] = [
        {
          b: [1e21, 0.1, -0, 5e-324, "é\u0007\u001f", { "\u20ac": 1, "\r": 2, "1": 3, "\ud83d\ude00": 4 }],
          a: { z: null, y: false },
        },
        {
          format: 2,
          product: { code: "studio", name: "Studio ✓" },
          maintenance: { expiresInDays: -3, until: "2027-01-01T00:00:00.000Z" },
        },
        [],
        {},
        "plain",
        123.456e-10,
      ];
      for (const value of values) expect(canonicalize(value)).toBe(canonicalizeReference(value));
    });

    it("sorts nested objects, keeps array order, leaves out undefined members and refuses non-JSON values", () => {
      expect(canonicalize({ b: [3, { z: 1, a: null }], a: { d: true, c: "x" }, u: undefined })).toBe(
        '{"a":{"c":"x","d":true},"b":[3,{"a":null,"z":1}]}',
      );
      expect(canonicalize("tab\there")).toBe('"tab\\there"');
      expect(() => canonicalize(Number.NaN)).toThrow(TypeError);
      expect(() => canonicalize(Number.POSITIVE_INFINITY)).toThrow(TypeError);
      expect(() => canonicalize("\ud800")).toThrow(TypeError);
      expect(() => canonicalize({ ["\udc00"]: 1 })).toThrow(TypeError);
      expect(() => canonicalize(10n)).toThrow(TypeError);
    });
  });

  describe("error mapping", () => {
    const licensing: [number, number, string][] = [
      [523, 3, "Invalid license key"],
      [525, 5, "License token not found"],
      [526, 6, "The license has already been activated"],
      [527, 7, "The license has been revoked"],
      [528, 8, "The maximum number of concurrent users for the license has been reached"],
      [529, 9, "The license has not been activated"],
      [535, 15, "The license has been tampered"],
    ];

    it("maps REST 520 + code and gRPC statuses to the same LicensingError", () => {
      for (const [status, code, message] of licensing) {
        const rest = errorFromRest(status, { success: false, code: status, message });
        const grpc = errorFromGrpc(new ConnectError(message, code as Code));
        for (const error of [rest, grpc]) {
          expect(error).toBeInstanceOf(LicensingError);
          expect(error).not.toBeInstanceOf(AuthenticationError);
          expect(error).toMatchObject({ grpcCode: code, httpStatus: status, message, name: "LicensingError" });
        }
      }
    });

    it("maps 401 and Unauthenticated to AuthenticationError", () => {
      expect(errorFromRest(401, { success: false, code: 401, message: "Invalid user key." })).toMatchObject({
        grpcCode: 16,
        httpStatus: 401,
        message: "Invalid user key.",
      });
      const empty = errorFromRest(401, undefined, "Unauthorized");
      expect(empty).toBeInstanceOf(AuthenticationError);
      expect(empty.message).toBe("Unauthorized");
      const grpc = errorFromGrpc(new ConnectError("Invalid user key.", Code.Unauthenticated));
      expect(grpc).toBeInstanceOf(AuthenticationError);
      expect(grpc).toMatchObject({
        grpcCode: 16,
        httpStatus: 401,
        message: "Invalid user key.",
        name: "AuthenticationError",
      });
    });

    it("maps other answers to ServiceError and keeps the client's own errors", () => {
      const problem = errorFromRest(400, {
        type: "https://tools.ietf.org/html/rfc9110#section-15.5.1",
        title: "One or more validation errors occurred.",
        status: 400,
        errors: { machineId: ["Too long"] },
      });
      expect(problem).toBeInstanceOf(ServiceError);
      expect(problem).toMatchObject({
        httpStatus: 400,
        message: "One or more validation errors occurred.",
        details: { machineId: ["Too long"] },
      });
      expect(errorFromRest(500, { success: false, code: 500, message: "boom" })).toMatchObject({
        httpStatus: 500,
        message: "boom",
        grpcCode: undefined,
      });
      expect(errorFromRest(429, undefined)).toMatchObject({ httpStatus: 429, message: "HTTP 429" });
      expect(errorFromGrpc(new ConnectError("down", Code.Unavailable))).toMatchObject({
        name: "ServiceError",
        grpcCode: 14,
        message: "down",
      });
      const network = new NetworkError("offline", new TypeError("fetch failed"));
      expect(errorFromGrpc(new ConnectError("wrapped", Code.Unknown, undefined, undefined, network))).toBe(network);
      expect(errorFromGrpc(network)).toBe(network);
      expect(errorFromGrpc(new Error("odd"))).toBeInstanceOf(ProtocolError);
    });
  });

  describe("timestamps and enumerations", () => {
    it("maps Timestamps, Dates and ISO strings both ways, keeping milliseconds", () => {
      const date = new Date("2026-11-22T09:10:28.123Z");
      const ts = timestampFromDateValue(date);
      expect(ts).toMatchObject({ seconds: BigInt(Math.floor(date.getTime() / 1000)), nanos: 123_000_000 });
      expect(dateFromTimestamp(ts)).toEqual(date);
      expect(dateFromTimestamp(create(TimestampSchema, { seconds: 0n, nanos: 0 }))).toEqual(new Date(0));
      expect(dateFromTimestamp(undefined)).toBeUndefined();
      expect(timestampFromDateValue(undefined)).toBeUndefined();
      expect(() => timestampFromDateValue(new Date("nope"))).toThrow(TypeError);
      expect(dateFromIso("2026-11-22T09:10:28.123Z", "x")).toEqual(date);
      expect(dateFromIso(null, "x")).toBeUndefined();
      expect(() => dateFromIso("yesterday", "x")).toThrow(ProtocolError);
      expect(() => dateFromIso(5, "x")).toThrow(ProtocolError);
    });

    it("reads enumerations from numbers (REST default) or names", () => {
      expect([licensingMode(0), licensingMode(1), licensingMode(2), licensingMode("Floating")]).toEqual([
        "File",
        "Activation",
        "Floating",
        "Floating",
      ]);
      expect([licenseType(0), licenseType("Demo"), licenseType(2)]).toEqual(["Standard", "Demo", "Trial"]);
      expect(licenseStatus("NotActivated")).toBe("NotActivated");
      expect(() => licensingMode(7)).toThrow(ProtocolError);
      expect(() => licenseStatus(1)).toThrow(ProtocolError);
    });
  });
});
