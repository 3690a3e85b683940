/**
 * Refusals that say why (issue 24): every licensing and sign-in refusal carries a documented `reason` (REST body,
 * gRPC `licensing-reason` metadata), an invalid user key included; user keys are read as Crockford base32 is typed;
 * the update routes' 204 and 403 answers (and update checks that offer nothing) carry `X-Service-Reason`, exposed to
 * browsers, kept with anonymous answers and never shared between keys.
 */
import { env, exports } from "cloudflare:workers";
import { ConnectError, createClient } from "@connectrpc/connect";
import { createGrpcWebTransport } from "@connectrpc/connect-web";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import electronDoc from "../docs/electron.md?raw";
import { Authentication } from "../src/gen/licensing/v1/authentication_pb";
import { LicenseServer } from "../src/gen/licensing/v1/license_server_pb";
import { ADMIN, BASE, admin, call, setSetting } from "./helpers";
import { forgetAnswers } from "../src/delivery/answer-memo";
import { bytesOf, newProduct, upload } from "./artifacts-kit";
import { AuthenticationError, LicensingClient } from "../client/src/index";
// Registers transport: "grpc-web".
import "../client/src/grpc-web";

// Every call from an address of its own: unknown keys count as failed logins (SPEC "Limits" rule 5), and this file
// makes more of them than one address may.
let lastIp = 0;
const freshIp = () => {
  lastIp++;
  return `198.51.${100 + Math.floor(lastIp / 250)}.${(lastIp % 250) + 1}`;
};

/** The reasons docs/electron.md lists (each in backticks): what applications are told to switch on. */
const documented = new Set([...electronDoc.matchAll(/`([a-z][A-Za-z]+)`/g)].map((m) => m[1]!));

async function newProductId(isApplication = false): Promise<number> {
  const res = await admin("POST", "/v1/products", {
    product: { code: `R${crypto.randomUUID().slice(0, 8)}`, name: "Reasons", isApplication },
  });
  expect(res.status, res.text).toBe(200);
  return res.body["productId"];
}

/** A public release 1.0.0 of a new application product (its releases need maintenance), and its downloads' path. */
async function newRelease() {
  const product = await newProduct();
  const res = await admin("POST", `/v1/products/${product.id}/releases`, {
    productRelease: { version: "1.0.0", public: true },
  });
  expect(res.status, res.text).toBe(200);
  const path = `/v1/products/${product.id}/releases/${res.body["productReleaseId"]}/downloads`;
  return { productId: product.id, code: product.code, path };
}

/** A license with its user key. */
async function license(productId: number, fields: Record<string, unknown> = {}) {
  const res = await admin("POST", "/v1/licenses", { license: { productId, ...fields } });
  expect(res.status, res.text).toBe(200);
  const listed = await admin(
    "GET",
    `/v1/licenses?filter=${encodeURIComponent(`id == ${res.body["id"]}`)}&select=userKey`,
  );
  return { id: res.body["id"] as number, userKey: listed.body["licenses"][0].userKey as string };
}

const revoke = (id: number) => admin("PUT", "/v1/licenses", { license: { id, revoked: true } });
const expire = (id: number) => admin("PUT", "/v1/licenses", { license: { id, expireDate: "2020-01-01T00:00:00Z" } });
const tamper = (id: number) => env.DB.prepare("UPDATE licenses SET max_clients = 77 WHERE id = ?").bind(id).run();

const rest = (path: string, body: Record<string, unknown>, token?: string) =>
  call("POST", path, {
    body,
    headers: { "cf-connecting-ip": freshIp() },
    ...(token ? { token } : { key: ADMIN.key }),
  });
const signIn = (body: Record<string, unknown>) =>
  call("POST", "/v1/auth/login", { body, headers: { "cf-connecting-ip": freshIp() } });

const grpcFrom = (ip: string) =>
  createGrpcWebTransport({
    baseUrl: BASE,
    fetch: (input, init) => {
      const headers = new Headers(init?.headers);
      headers.set("cf-connecting-ip", ip);
      return exports.default.fetch(input as RequestInfo, {
        ...init,
        headers,
        ...(init?.redirect === "error" ? { redirect: "manual" as const } : {}),
      });
    },
  });
const grpcAuth = () => createClient(Authentication, grpcFrom(freshIp()));
const grpcLicenses = () => createClient(LicenseServer, grpcFrom(freshIp()));
const withKey = { headers: { "x-api-key": ADMIN.key } };

/** A gRPC refusal's code and `licensing-reason`. */
async function grpcRefusal(promise: Promise<unknown>): Promise<{ status: number; reason: string | null }> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ConnectError);
  return { status: (error as ConnectError).code, reason: (error as ConnectError).metadata.get("licensing-reason") };
}

/** A REST refusal's status and body `reason`. */
async function restRefusal(promise: Promise<{ status: number; body: Record<string, unknown> }>) {
  const res = await promise;
  return { status: res.status, reason: (res.body?.["reason"] as string | undefined) ?? null };
}

describe("every licensing and sign-in refusal carries a documented reason", () => {
  it("walks each refusal, over REST and gRPC", async () => {
    const productId = await newProductId();
    const other = await newProductId();
    const activation = await license(productId, { licensingMode: 1, maxClients: 1 });
    const file = await license(productId, { licensingMode: 0 });
    const floating = await license(productId, { licensingMode: 2, maxClients: 1 });
    const revoked = await license(productId, { licensingMode: 1 });
    await revoke(revoked.id);
    const expired = await license(productId, { licensingMode: 1 });
    await expire(expired.id);
    const tampered = await license(productId, { licensingMode: 1 });
    await tamper(tampered.id);
    const otherLicense = await license(other, { licensingMode: 1 });
    expect((await rest("/v1/license/activate", { userKey: activation.userKey, machineId: "PC-1" })).status).toBe(200);
    expect(
      (await rest("/v1/license/request", { userKey: floating.userKey, machineId: "m1", clientId: "c1" })).status,
    ).toBe(200);
    const appToken = (await signIn({ userKey: file.userKey })).body["token"] as string;
    expect(appToken).toMatch(/^[\w-]+\.[\w-]+\.[\w-]+$/);
    const unknownKey = "ZZZZZ-ZZZZZ-ZZZZZ-ZZZZZ-ZZZZZ";

    const cases: [string, () => Promise<{ status: number; reason: string | null }>, number, string][] = [
      // Sign-in, REST
      ["login: unknown user key", () => restRefusal(signIn({ userKey: unknownKey })), 401, "invalidUserKey"],
      ["login: empty user key", () => restRefusal(signIn({ userKey: " - " })), 401, "invalidUserKey"],
      ["login: revoked license", () => restRefusal(signIn({ userKey: revoked.userKey })), 401, "licenseRevoked"],
      ["login: expired license", () => restRefusal(signIn({ userKey: expired.userKey })), 401, "licenseExpired"],
      [
        "login: wrong password",
        () => restRefusal(signIn({ username: "admin", password: "wrong" })),
        401,
        "invalidLogin",
      ],
      // Sign-in, gRPC
      [
        "Authenticate: unknown user key",
        () => grpcRefusal(grpcAuth().authenticate({ userKey: unknownKey })),
        16,
        "invalidUserKey",
      ],
      [
        "Authenticate: revoked license",
        () => grpcRefusal(grpcAuth().authenticate({ userKey: revoked.userKey })),
        16,
        "licenseRevoked",
      ],
      [
        "Authenticate: wrong password",
        () => grpcRefusal(grpcAuth().authenticate({ username: "admin", password: "wrong" })),
        16,
        "invalidLogin",
      ],
      // Licensing operations, REST
      [
        "activate: no user key",
        () => restRefusal(rest("/v1/license/activate", { machineId: "x" })),
        523,
        "invalidUserKey",
      ],
      [
        "activate: unknown user key",
        () => restRefusal(rest("/v1/license/activate", { userKey: unknownKey, machineId: "x" })),
        525,
        "licenseNotFound",
      ],
      [
        "activate: no machine",
        () => restRefusal(rest("/v1/license/activate", { userKey: activation.userKey })),
        523,
        "machineIdRequired",
      ],
      [
        "activate: all activations taken",
        () => restRefusal(rest("/v1/license/activate", { userKey: activation.userKey, machineId: "PC-2" })),
        526,
        "alreadyActivated",
      ],
      [
        "activate: File license",
        () => restRefusal(rest("/v1/license/activate", { userKey: file.userKey, machineId: "x" })),
        529,
        "activationNotRequired",
      ],
      [
        "activate: revoked",
        () => restRefusal(rest("/v1/license/activate", { userKey: revoked.userKey, machineId: "x" })),
        527,
        "licenseRevoked",
      ],
      [
        "activate: expired",
        () => restRefusal(rest("/v1/license/activate", { userKey: expired.userKey, machineId: "x" })),
        527,
        "licenseExpired",
      ],
      [
        "activate: tampered",
        () => restRefusal(rest("/v1/license/activate", { userKey: tampered.userKey, machineId: "x" })),
        535,
        "licenseTampered",
      ],
      [
        "activate: other product",
        () =>
          restRefusal(
            rest("/v1/license/activate", {
              userKey: otherLicense.userKey,
              machineId: "x",
              productCode: "no-such-product",
            }),
          ),
        527,
        "wrongProduct",
      ],
      ["validate: no user key", () => restRefusal(rest("/v1/license/validate", {})), 523, "invalidUserKey"],
      [
        "validate: unknown user key",
        () => restRefusal(rest("/v1/license/validate", { userKey: unknownKey })),
        525,
        "licenseNotFound",
      ],
      [
        "validate: machine not activated",
        () => restRefusal(rest("/v1/license/validate", { userKey: activation.userKey, machineId: "PC-9" })),
        529,
        "notActivated",
      ],
      [
        "deactivate: machine not activated",
        () => restRefusal(rest("/v1/license/deactivate", { userKey: activation.userKey, machineId: "PC-9" })),
        529,
        "notActivated",
      ],
      [
        "request: no client",
        () => restRefusal(rest("/v1/license/request", { userKey: floating.userKey, machineId: "m2" })),
        523,
        "clientIdRequired",
      ],
      [
        "request: not floating",
        () => restRefusal(rest("/v1/license/request", { userKey: file.userKey, machineId: "m", clientId: "c" })),
        529,
        "notFloating",
      ],
      [
        "request: seats taken",
        () => restRefusal(rest("/v1/license/request", { userKey: floating.userKey, machineId: "m2", clientId: "c2" })),
        528,
        "seatsExhausted",
      ],
      [
        "heartbeat: unknown token",
        () => restRefusal(rest("/v1/license/heartbeat", { licenseToken: "fltk_nope" })),
        525,
        "licenseTokenNotFound",
      ],
      [
        "release: unknown token",
        () => restRefusal(rest("/v1/license/release", { licenseToken: "fltk_nope" })),
        525,
        "licenseTokenNotFound",
      ],
      [
        "report: another license's key with a license's own token",
        () => restRefusal(rest("/v1/report", { name: "R", content: "x", userKey: activation.userKey }, appToken)),
        527,
        "wrongProduct",
      ],
      // Licensing operations, gRPC
      [
        "ValidateLicense: unknown user key",
        () => grpcRefusal(grpcLicenses().validateLicense({ userKey: unknownKey }, withKey)),
        5,
        "licenseNotFound",
      ],
      [
        "ActivateLicense: empty user key",
        () => grpcRefusal(grpcLicenses().activateLicense({ userKey: "", machineId: "x" }, withKey)),
        3,
        "invalidUserKey",
      ],
      [
        "ActivateLicense: revoked",
        () => grpcRefusal(grpcLicenses().activateLicense({ userKey: revoked.userKey, machineId: "x" }, withKey)),
        7,
        "licenseRevoked",
      ],
    ];
    for (const [name, run, status, reason] of cases) {
      const got = await run();
      expect(got, name).toEqual({ status, reason });
      expect(documented.has(reason), `${name}: reason ${reason} is listed in docs/electron.md`).toBe(true);
    }
  });

  it("says why a blocked address may not sign in", async () => {
    const ip = "198.51.99.7";
    const login = () =>
      call("POST", "/v1/auth/login", { body: { userKey: "WRONG" }, headers: { "cf-connecting-ip": ip } });
    for (let i = 0; i < 5; i++) expect((await login()).body["reason"]).toBe("invalidUserKey");
    const blocked = await login();
    expect(blocked.status).toBe(500);
    expect(blocked.body["reason"]).toBe("loginBlocked");
    expect(documented.has("loginBlocked")).toBe(true);
  });
});

/** A user key as a person may type it: lower case, spaces and extra dashes, 0 as o and 1 as l or i. */
function typedSloppily(key: string): string {
  let ones = 0;
  const body = [...key.toLowerCase()]
    .map((ch) => (ch === "0" ? "o" : ch === "1" ? (ones++ % 2 ? "i" : "l") : ch))
    .join("")
    .split("-")
    .join(" - -");
  return `  ${body.slice(0, 3)} ${body.slice(3)} `;
}

describe("user keys are read as Crockford base32 is typed", () => {
  let productCode = "";
  let typed = "";
  let userKey = "";

  beforeAll(async () => {
    const release = await newRelease();
    productCode = release.code;
    expect((await upload(release.path, bytesOf(500, 3), { fileName: "Typed.exe" })).status).toBe(201);
    // A key with a 0 or a 1 in it, so the letters read as digits are tried too.
    for (let i = 0; i < 20 && !/[01]/.test(userKey); i++)
      userKey = (await license(release.productId, { licensingMode: 1, maxClients: 5 })).userKey;
    expect(userKey).toMatch(/[01]/);
    typed = typedSloppily(userKey);
    expect(typed).not.toContain(userKey);
  });

  it("signs in, activates and validates with the key typed sloppily, over REST and gRPC", async () => {
    const login = await signIn({ userKey: typed });
    expect(login.status, login.text).toBe(200);
    const grpc = await grpcAuth().authenticate({ userKey: typed });
    expect(grpc.roles).toEqual(["Application"]);
    const token = login.body["token"] as string;
    const activated = await rest("/v1/license/activate", { userKey: typed, machineId: "PC-T" }, token);
    expect(activated.status, activated.text).toBe(200);
    const validated = await rest("/v1/license/validate", { userKey: typed, machineId: "PC-T" }, token);
    expect(validated.status, validated.text).toBe(200);
    expect(validated.body["status"]).toBe("Activated");
    const overGrpc = await grpcLicenses().validateLicense({ userKey: typed, machineId: "PC-T" }, withKey);
    expect(overGrpc.licenseId).toBe(validated.body["licenseId"]);
    // One character off is another key.
    const wrong = typed.replace(/[a-z2-9]/, (ch) => (ch === "z" ? "y" : "z"));
    expect((await signIn({ userKey: wrong })).body["reason"]).toBe("invalidUserKey");
  });

  it("names the license on the update routes with the key typed sloppily (X-Service-User-Key)", async () => {
    const res = await exports.default.fetch(`${BASE}/v1/updates/${productCode}?platform=win-x64&version=0.9.0`, {
      headers: { "X-Service-User-Key": typed, "cf-connecting-ip": freshIp() },
    });
    expect(res.status).toBe(200);
    expect(res.headers.get("X-Service-Reason")).toBeNull();
    const body = (await res.json()) as { data: { maintenance?: { licenseId?: string } } };
    expect(body.data.maintenance?.licenseId).toMatch(/^lic/);
  });
});

describe("the client library hands the reason on", () => {
  it("raises AuthenticationError with reason invalidUserKey for a mistyped key, over REST and gRPC-Web", async () => {
    const productId = await newProductId();
    const { userKey } = await license(productId);
    for (const transport of ["http", "grpc-web"] as const) {
      const fetch = (input: RequestInfo | URL, init?: RequestInit) => {
        const headers = new Headers(init?.headers);
        headers.set("cf-connecting-ip", freshIp());
        return exports.default.fetch(input as RequestInfo, {
          ...init,
          headers,
          ...(init?.redirect === "error" ? { redirect: "manual" as const } : {}),
        });
      };
      const mistyped = new LicensingClient({ baseUrl: BASE, transport, userKey: "ZZZZZ-ZZZZZ", fetch });
      const error = await mistyped.validate().then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error, transport).toBeInstanceOf(AuthenticationError);
      expect((error as AuthenticationError).reason, transport).toBe("invalidUserKey");
      const typed = new LicensingClient({ baseUrl: BASE, transport, userKey: typedSloppily(userKey), fetch });
      expect((await typed.validate()).status, transport).toBe("NotActivated");
    }
  });
});

describe("the update routes say why in X-Service-Reason", () => {
  let gated = { code: "", productId: 0 };
  let open = { code: "", productId: 0 };
  let empty = "";
  let good = "";
  let standard = "";

  const get = (path: string, userKey?: string, headers: Record<string, string> = {}) =>
    exports.default.fetch(`${BASE}${path}`, {
      headers: { "cf-connecting-ip": freshIp(), ...(userKey ? { "X-Service-User-Key": userKey } : {}), ...headers },
    });
  const reasonOf = async (path: string, userKey?: string) => {
    const res = await get(path, userKey);
    await res.arrayBuffer();
    return { status: res.status, reason: res.headers.get("X-Service-Reason") };
  };

  beforeAll(async () => {
    // An application (its releases need maintenance) with 1.0.0 for Windows.
    const r = await newRelease();
    gated = { code: r.code, productId: r.productId };
    expect((await upload(r.path, bytesOf(800, 5), { fileName: "Gated.exe" })).status).toBe(201);
    // Another with a macOS build (under the default Updates:PlatformEditions, macOS is open to Ultimate only).
    const o = await newRelease();
    open = { code: o.code, productId: o.productId };
    expect(
      (await upload(o.path, bytesOf(700, 6), { platform: "darwin-arm64", kind: "zip", fileName: "Open.zip" })).status,
    ).toBe(201);
    const e = await newRelease();
    empty = e.code; // a release with no artifact: nothing offered on any platform
    good = (await license(gated.productId)).userKey;
    standard = (await license(open.productId, { edition: "Standard" })).userKey;
  });
  afterAll(() => setSetting("Application:CorsOrigins", null));

  it("answers each 204 and 403 of the feed with its reason", async () => {
    const revoked = await license(gated.productId);
    await revoke(revoked.id);
    const expired = await license(gated.productId);
    await expire(expired.id);
    const tampered = await license(gated.productId);
    await tamper(tampered.id);
    const lapsed = (await license(gated.productId, { supportExpireDate: "2020-01-01T00:00:00Z" })).userKey;
    const otherProducts = (await license(open.productId)).userKey;
    const win = `/v1/updates/${gated.code}/feed/stable/win-x64/latest.yml`;
    const mac = `/v1/updates/${open.code}/feed/stable/darwin-arm64/latest-mac.yml`;
    const cases: [string, string, string | undefined, number, string | null][] = [
      ["anonymous, release needs maintenance", win, undefined, 204, "licenseRequired"],
      ["mistyped key", win, "ZZZZZ-ZZZZZ-ZZZZZ-ZZZZZ-ZZZZY", 204, "licenseNotFound"],
      ["another product's key", win, otherProducts, 204, "wrongProduct"],
      ["maintenance ended before the release", win, lapsed, 204, "maintenanceExpired"],
      ["revoked license", win, revoked.userKey, 403, "licenseRevoked"],
      ["expired license", win, expired.userKey, 403, "licenseExpired"],
      ["tampered license", win, tampered.userKey, 403, "licenseTampered"],
      ["platform for some editions, anonymous", mac, undefined, 204, "platformRequiresLicense"],
      ["platform for some editions, Standard", mac, standard, 204, "platformRequiresEdition"],
      ["nothing published", `/v1/updates/${empty}/feed/stable/win-x64/latest.yml`, undefined, 204, "noRelease"],
      ["a good key", win, good, 200, null],
    ];
    for (const [name, path, key, status, reason] of cases) {
      expect(await reasonOf(path, key), name).toEqual({ status, reason });
      if (reason) expect(documented.has(reason), `${reason} is in docs/electron.md`).toBe(true);
    }
  });

  it("answers the download route's 403s with their reason", async () => {
    const gatedFile = `/v1/updates/${gated.code}/download/win-x64/1.0.0/Gated.exe`;
    expect(await reasonOf(gatedFile)).toEqual({ status: 403, reason: "downloadTokenInvalid" });
    expect(await reasonOf(`${gatedFile}?token=forged`, good)).toEqual({ status: 403, reason: "downloadTokenInvalid" });
    const macFile = `/v1/updates/${open.code}/download/darwin-arm64/1.0.0/Open.zip`;
    expect(await reasonOf(macFile)).toEqual({ status: 403, reason: "platformRequiresLicense" });
    expect(await reasonOf(macFile, standard)).toEqual({ status: 403, reason: "platformRequiresEdition" });
  });

  it("says why an update check offers nothing, keeps the reason with cached anonymous answers, never across keys", async () => {
    const check = (version: string) => `/v1/updates/${gated.code}?platform=win-x64&version=${version}`;
    expect(await reasonOf(check("1.0.0"), good)).toEqual({ status: 200, reason: "nothingNewer" });
    expect(await reasonOf(check("0.9.0"), good)).toEqual({ status: 200, reason: null });
    expect(await reasonOf(`/v1/updates/${empty}?platform=win-x64&version=0.9.0`)).toEqual({
      status: 200,
      reason: "noRelease",
    });
    // Anonymous answers come from the isolate's memo and the edge cache the second time: with their reason.
    const anonymous = check("0.5.0");
    const first = await get(anonymous);
    expect(first.headers.get("Cache-Control")).toMatch(/^public/);
    expect(first.headers.get("Vary")).toBe("X-Service-User-Key, X-Service-Install-Id, X-Service-Current-Version");
    const firstBody = await first.text();
    expect(first.headers.get("X-Service-Reason")).toBe("licenseRequired");
    for (let i = 0; i < 2; i++) {
      const again = await get(anonymous);
      expect(await again.text()).toBe(firstBody);
      expect(again.headers.get("X-Service-Reason")).toBe("licenseRequired");
      expect(again.headers.get("Vary")).toBe("X-Service-User-Key, X-Service-Install-Id, X-Service-Current-Version");
    }
    // Past the isolate's memo: from the edge cache (Cache API), with its reason still.
    forgetAnswers();
    const cached = await get(anonymous);
    expect(await cached.text()).toBe(firstBody);
    expect(cached.headers.get("X-Service-Reason")).toBe("licenseRequired");
    // The same URL with a key is answered for that key, privately.
    const mistyped = await get(anonymous, "ZZZZZ-ZZZZZ-ZZZZZ-ZZZZZ-ZZZZX");
    expect(mistyped.headers.get("X-Service-Reason")).toBe("licenseNotFound");
    expect(mistyped.headers.get("Cache-Control")).toBe("private, no-store");
    const licensed = await get(anonymous, good);
    expect(licensed.headers.get("X-Service-Reason")).toBeNull();
    expect(licensed.headers.get("Cache-Control")).toBe("private, no-store");
  });

  it("lets a browser read the reason (CORS)", async () => {
    await setSetting("Application:CorsOrigins", "https://app.example.com");
    const res = await get(`/v1/updates/${gated.code}/feed/stable/win-x64/latest.yml`, undefined, {
      Origin: "https://app.example.com",
    });
    expect(res.status).toBe(204);
    expect(res.headers.get("X-Service-Reason")).toBe("licenseRequired");
    const exposed = (res.headers.get("Access-Control-Expose-Headers") ?? "").toLowerCase().split(/\s*,\s*/);
    expect(exposed).toContain("x-service-reason");
  });
});
