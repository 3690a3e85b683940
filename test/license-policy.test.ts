/**
 * One license policy everywhere (issue 12): every path that uses a license, walked against every license state,
 * refuses or allows the same way. Paths: activate, validate, floating request, heartbeat, deactivate and release over
 * REST and over gRPC-Web; the update check; the feed; a download with the token a licensed update check handed out;
 * a hand-issued activation token; the floating seats' reclaim by their Durable Object's alarm. States: usable,
 * revoked, expired, tampered (the row changed in D1 behind the API's back), wrong product, demo, maintenance over,
 * edition not entitled.
 *
 * Each case follows one procedure: a fresh license in the path's mode (for the path's product, or for another
 * product in the "wrong product" state), the path's setup while the license is still usable (an activation, a seat,
 * a download URL), the state applied (through the API, or in D1 for "tampered"), then the path itself. Each path
 * answers in its own words (52x, gRPC codes, 403 `License revoked or expired`, the bad-token message, 400, seats
 * reclaimed), and the table says which words mean which refusal.
 */
import { runDurableObjectAlarm } from "cloudflare:test";
import { env, exports } from "cloudflare:workers";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createGrpcWebTransport } from "@connectrpc/connect-web";
import { beforeAll, describe, expect, it } from "vitest";
import { LicenseServer } from "../src/gen/licensing/v1/license_server_pb";
import { ADMIN, BASE, admin, call } from "./helpers";
import type { JsonBody } from "./json-body.ts";

const fetchWorker: typeof fetch = (input, init) =>
  exports.default.fetch(input as RequestInfo, {
    ...init,
    ...(init?.redirect === "error" ? { redirect: "manual" as const } : {}),
  });
const grpc = createClient(LicenseServer, createGrpcWebTransport({ baseUrl: BASE, fetch: fetchWorker }));
const withKey = { headers: { "x-api-key": ADMIN.key } };

const STATES = [
  "usable",
  "revoked",
  "expired",
  "tampered",
  "wrongProduct",
  "demo",
  "maintenanceOver",
  "editionNotEntitled",
] as const;
type State = (typeof STATES)[number];
type Mode = "File" | "Activation" | "Floating";

/** What a path did: allowed (with what it gave), or refused (with its own status and message). */
type Outcome = { allowed: true; detail?: string } | { allowed: false; status: number | string; message: string };

interface License {
  id: number;
  licenseId: string;
  userKey: string;
}

// The product every path serves: one gated release (needs maintenance) released 2026-01-10, with a Linux installer:
// Linux needs the Ultimate edition by default (Updates:PlatformEditions), so an edition can be not entitled.
const product = { id: 0, code: `policy-${crypto.randomUUID().slice(0, 8)}` };
const other = { id: 0, code: `other-${crypto.randomUUID().slice(0, 8)}` };
const FILE_NAME = "Policy-1.0.0.AppImage";
const ARTIFACT = Uint8Array.from({ length: 4096 }, (_, i) => (i * 7) % 251);

beforeAll(async () => {
  product.id = (
    await admin("POST", "/v1/products", {
      product: { code: product.code, name: "Policy", isApplication: true, purchaseUrl: "https://example.com/buy" },
    })
  ).body["productId"];
  other.id = (
    await admin("POST", "/v1/products", { product: { code: other.code, name: "Other", isApplication: true } })
  ).body["productId"];
  const release = await admin("POST", `/v1/products/${product.id}/releases`, {
    productRelease: { version: "1.0.0", public: true, releaseDate: "2026-01-10T00:00:00Z" },
  });
  expect(release.status, release.text).toBe(200);
  const form = new FormData();
  form.set("platform", "linux-x64");
  form.set("kind", "installer");
  form.set("fileName", FILE_NAME);
  form.set("file", new Blob([ARTIFACT]), FILE_NAME);
  const res = await exports.default.fetch(
    `${BASE}/v1/products/${product.id}/releases/${release.body["productReleaseId"]}/downloads`,
    {
      method: "POST",
      headers: { "x-api-key": ADMIN.key },
      body: form,
    },
  );
  expect(res.status, await res.clone().text()).toBe(201);
});

/** A fresh license of a mode in a state's inherent fields (the revoked/expired/tampered changes come later). */
async function newLicense(mode: Mode, state: State): Promise<License> {
  const fields: Record<string, unknown> = {
    productId: state === "wrongProduct" ? other.id : product.id,
    licensingMode: mode,
    maxClients: 3,
    edition: state === "editionNotEntitled" || state === "demo" ? "Standard" : "Ultimate",
    expireDate: "2099-01-01T00:00:00.000Z",
  };
  // Maintenance that ended before the release: a demo license is exempt from it (and from the edition rule).
  if (state === "maintenanceOver" || state === "demo") fields["supportExpireDate"] = "2025-12-31T00:00:00.000Z";
  if (state === "demo") fields["licenseType"] = "Demo";
  const res = await admin("POST", "/v1/licenses", { license: fields });
  expect(res.status, res.text).toBe(200);
  const listed = await admin(
    "GET",
    `/v1/licenses?filter=${encodeURIComponent(`id == ${res.body["id"]}`)}&select=userKey`,
  );
  return { id: res.body["id"], licenseId: res.body["licenseId"], userKey: listed.body["licenses"][0].userKey };
}

/** Puts a license into the state's refused condition: through the API, or behind its back for "tampered". */
async function applyState(license: License, state: State): Promise<void> {
  if (state === "revoked")
    expect((await admin("PUT", "/v1/licenses", { license: { id: license.id, revoked: true } })).status).toBe(200);
  if (state === "expired")
    expect(
      (await admin("PUT", "/v1/licenses", { license: { id: license.id, expireDate: "2020-01-01T00:00:00.000Z" } }))
        .status,
    ).toBe(200);
  // A row changed outside the API: more clients than were sold. Its HMAC no longer matches.
  if (state === "tampered")
    await env.DB.prepare("UPDATE licenses SET max_clients = max_clients + 50 WHERE id = ?").bind(license.id).run();
}

// ---------------------------------------------------------------------------------------------------------------
// The paths

const rest = async (op: string, body: Record<string, unknown>): Promise<Outcome & { body?: JsonBody }> => {
  const res = await call("POST", `/v1/license/${op}`, { body, key: ADMIN.key });
  if (res.status === 200) return { allowed: true, body: res.body };
  return { allowed: false, status: res.status, message: res.body["message"] };
};

async function viaGrpc(run: () => Promise<unknown>): Promise<Outcome> {
  try {
    await run();
    return { allowed: true };
  } catch (e) {
    if (!(e instanceof ConnectError)) throw e;
    return { allowed: false, status: Code[e.code], message: e.rawMessage };
  }
}

async function must<T extends { allowed: boolean; body?: JsonBody }>(outcome: Promise<T>): Promise<JsonBody> {
  const done = await outcome;
  expect(done, "setup while the license is usable").toMatchObject({ allowed: true });
  return done.body ?? {};
}

const seat = (l: License) => must(rest("request", { userKey: l.userKey, machineId: "M1", clientId: "C1" }));
const activation = (l: License) => must(rest("activate", { userKey: l.userKey, machineId: "M1" }));

/** Update routes: the user key travels in X-Service-User-Key; each case comes from its own address. */
function updateGet(path: string, userKey: string): Promise<Response> {
  return exports.default.fetch(`${BASE}${path}`, {
    headers: { "X-Service-User-Key": userKey, "CF-Connecting-IP": `198.51.100.${Math.floor(Math.random() * 250) + 1}` },
  });
}

async function updateCheck(userKey: string): Promise<{ res: Response; body: JsonBody }> {
  const res = await updateGet(`/v1/updates/${product.code}?platform=linux-x64&version=0.9.0`, userKey);
  return { res, body: (await res.json()) as JsonBody };
}

async function refusedUpdate(res: Response): Promise<Outcome> {
  return { allowed: false, status: res.status, message: ((await res.json()) as { message: string }).message };
}

interface Path {
  name: string;
  mode: Mode;
  /** Which transport's words its refusals are in. */
  words: "rest" | "grpc" | "updates" | "download" | "management" | "seats";
  /** Whether the path names the product it serves (only then can a license be for the wrong product). */
  namesProduct: boolean;
  /** Set-up while the license is usable; the state is applied after it. */
  setup?: (l: License) => Promise<JsonBody>;
  run: (l: License, setup: JsonBody) => Promise<Outcome>;
}

const PATHS: Path[] = [
  {
    name: "REST activate",
    mode: "Activation",
    words: "rest",
    namesProduct: true,
    run: (l) => rest("activate", { userKey: l.userKey, machineId: "M2", productCode: product.code }),
  },
  {
    name: "REST validate",
    mode: "Activation",
    words: "rest",
    namesProduct: true,
    setup: activation,
    run: (l) => rest("validate", { userKey: l.userKey, machineId: "M1", productCode: product.code }),
  },
  {
    name: "REST request",
    mode: "Floating",
    words: "rest",
    namesProduct: false,
    run: (l) => rest("request", { userKey: l.userKey, machineId: "M2", clientId: "C2" }),
  },
  {
    name: "REST heartbeat",
    mode: "Floating",
    words: "rest",
    namesProduct: false,
    setup: seat,
    run: (_l, s) => rest("heartbeat", { licenseToken: s["licenseToken"] }),
  },
  {
    name: "REST deactivate",
    mode: "Activation",
    words: "rest",
    namesProduct: false,
    setup: activation,
    run: (l) => rest("deactivate", { userKey: l.userKey, machineId: "M1" }),
  },
  {
    name: "REST release",
    mode: "Floating",
    words: "rest",
    namesProduct: false,
    setup: seat,
    run: (_l, s) => rest("release", { licenseToken: s["licenseToken"] }),
  },
  {
    name: "gRPC ActivateLicense",
    mode: "Activation",
    words: "grpc",
    namesProduct: true,
    run: (l) =>
      viaGrpc(() => grpc.activateLicense({ userKey: l.userKey, machineId: "M2", productCode: product.code }, withKey)),
  },
  {
    name: "gRPC ValidateLicense",
    mode: "Activation",
    words: "grpc",
    namesProduct: true,
    setup: activation,
    run: (l) =>
      viaGrpc(() => grpc.validateLicense({ userKey: l.userKey, machineId: "M1", productCode: product.code }, withKey)),
  },
  {
    name: "gRPC RequestFloatingLicense",
    mode: "Floating",
    words: "grpc",
    namesProduct: false,
    run: (l) =>
      viaGrpc(() => grpc.requestFloatingLicense({ userKey: l.userKey, machineId: "M2", clientId: "C2" }, withKey)),
  },
  {
    name: "gRPC Heartbeat",
    mode: "Floating",
    words: "grpc",
    namesProduct: false,
    setup: seat,
    run: (_l, s) => viaGrpc(() => grpc.heartbeat({ licenseToken: s["licenseToken"] }, withKey)),
  },
  {
    name: "gRPC DeactivateLicense",
    mode: "Activation",
    words: "grpc",
    namesProduct: false,
    setup: activation,
    run: (l) => viaGrpc(() => grpc.deactivateLicense({ userKey: l.userKey, machineId: "M1" }, withKey)),
  },
  {
    name: "gRPC ReleaseFloatingLicense",
    mode: "Floating",
    words: "grpc",
    namesProduct: false,
    setup: seat,
    run: (_l, s) => viaGrpc(() => grpc.releaseFloatingLicense({ licenseToken: s["licenseToken"] }, withKey)),
  },
  {
    name: "update check",
    mode: "File",
    words: "updates",
    namesProduct: true,
    run: async (l) => {
      const { res, body } = await updateCheck(l.userKey);
      if (res.status !== 200) return { allowed: false, status: res.status, message: body["message"] };
      return { allowed: true, detail: body["data"].withheldReason ?? "installable" };
    },
  },
  {
    name: "feed",
    mode: "File",
    words: "updates",
    namesProduct: true,
    run: async (l) => {
      const res = await updateGet(`/v1/updates/${product.code}/feed/stable/linux-x64/latest-linux.yml`, l.userKey);
      if (res.status === 403) return refusedUpdate(res);
      const text = await res.text();
      return {
        allowed: true,
        detail: res.status === 200 && text.includes("?token=") ? "installable" : `${res.status}`,
      };
    },
  },
  {
    name: "download with a token",
    mode: "File",
    words: "download",
    namesProduct: true,
    // The URL a licensed update check hands out while the license is usable (none when it is not entitled).
    setup: async (l) => {
      const { body } = await updateCheck(l.userKey);
      return { url: (body["data"]?.download?.url as string | undefined)?.replace(BASE, "") };
    },
    // As an auto-updater downloads: the URL alone, its token naming the license.
    run: async (_l, s) => {
      const url =
        (s["url"] as string | undefined) ?? `/v1/updates/${product.code}/download/linux-x64/1.0.0/${FILE_NAME}`;
      const res = await exports.default.fetch(`${BASE}${url}`);
      if (res.status === 403) return refusedUpdate(res);
      expect(res.status).toBe(200);
      expect(new Uint8Array(await res.arrayBuffer())).toEqual(ARTIFACT);
      return { allowed: true, detail: "installable" };
    },
  },
  {
    name: "hand-issued token",
    mode: "Activation",
    words: "management",
    namesProduct: false,
    run: async (l) => {
      const res = await admin("POST", `/v1/licenses/${l.licenseId}/tokens`, {
        licenseToken: { machineId: "OFFLINE-1" },
      });
      if (res.status === 200) return { allowed: true };
      return { allowed: false, status: res.status, message: res.body["message"] };
    },
  },
  {
    name: "seat reclaim",
    mode: "Floating",
    words: "seats",
    namesProduct: false,
    setup: seat,
    // The alarm keeps the live seat of a usable license and reclaims every seat of one that may not be used.
    run: async (l) => {
      const seats = env.LICENSE_SEATS.getByName(String(l.id));
      expect(await runDurableObjectAlarm(seats)).toBe(true);
      const held = await seats.count(Date.now());
      const rows = await env.DB.prepare("SELECT count(*) AS n FROM license_tokens WHERE license_id = ?")
        .bind(l.id)
        .first<{ n: number }>();
      expect(rows?.n).toBe(held);
      return held === 1 ? { allowed: true } : { allowed: false, status: "reclaimed", message: `${held} seats` };
    },
  },
];

// ---------------------------------------------------------------------------------------------------------------
// The table: what each kind of path answers for each refusal of the policy

type Refusal = "tampered" | "revoked" | "expired" | "wrongProduct";

const WORDS: Record<Path["words"], Record<Refusal, [number | string, string]>> = {
  rest: {
    tampered: [535, "The license has been tampered"],
    revoked: [527, "The license has been revoked"],
    expired: [527, "The license has expired"],
    wrongProduct: [527, "The license is not valid for this product"],
  },
  grpc: {
    tampered: ["DataLoss", "The license has been tampered"],
    revoked: ["PermissionDenied", "The license has been revoked"],
    expired: ["PermissionDenied", "The license has expired"],
    wrongProduct: ["PermissionDenied", "The license is not valid for this product"],
  },
  // SPEC "Update and maintenance rules" 5; a license of another product is no license of this one ("none matches").
  updates: {
    tampered: [403, "License revoked or expired"],
    revoked: [403, "License revoked or expired"],
    expired: [403, "License revoked or expired"],
    wrongProduct: [200, "platformRequiresLicense"],
  },
  download: {
    tampered: [403, "Download token invalid, expired or already used"],
    revoked: [403, "Download token invalid, expired or already used"],
    expired: [403, "Download token invalid, expired or already used"],
    // No token was handed out (the update check withheld as for no license), so the bare URL meets the platform rule
    // first (SPEC "Download"): Linux needs a license.
    wrongProduct: [403, "linux-x64 needs a license"],
  },
  management: {
    tampered: [400, "has been tampered with"],
    revoked: [400, "is revoked"],
    expired: [400, "has expired"],
    wrongProduct: [400, "(never)"],
  },
  seats: {
    tampered: ["reclaimed", "0 seats"],
    revoked: ["reclaimed", "0 seats"],
    expired: ["reclaimed", "0 seats"],
    wrongProduct: ["reclaimed", "(never)"],
  },
};

/** What a usable license of each state gets from the update paths: maintenance and editions decide what it may install. */
const ENTITLEMENT: Record<
  "usable" | "demo" | "maintenanceOver" | "editionNotEntitled",
  { updateCheck: string; feed: string; download: Outcome }
> = {
  usable: { updateCheck: "installable", feed: "installable", download: { allowed: true, detail: "installable" } },
  demo: { updateCheck: "installable", feed: "installable", download: { allowed: true, detail: "installable" } },
  // No token was handed out; the bare URL meets the platform rule first (SPEC "Download"), which knows no license.
  maintenanceOver: {
    updateCheck: "maintenanceExpired",
    feed: "204",
    download: { allowed: false, status: 403, message: "linux-x64 needs a license" },
  },
  // No token was handed out; whether the edition or the missing token speaks first is the download route's own order.
  editionNotEntitled: {
    updateCheck: "platformRequiresEdition",
    feed: "204",
    download: { allowed: false, status: 403, message: "" },
  },
};

function expectOutcome(path: Path, state: State, outcome: Outcome): void {
  const refusal: Refusal | undefined =
    state === "revoked" || state === "expired" || state === "tampered"
      ? state
      : state === "wrongProduct" && path.namesProduct
        ? "wrongProduct"
        : undefined;
  if (refusal && !(path.words === "updates" && refusal === "wrongProduct")) {
    const [status, message] = WORDS[path.words][refusal];
    expect(outcome.allowed, `${path.name} must refuse a ${state} license`).toBe(false);
    if (!outcome.allowed) {
      expect(outcome.status).toBe(status);
      if (path.words === "management") expect(outcome.message).toContain(message);
      else expect(outcome.message).toBe(message);
    }
    return;
  }
  if (path.words === "updates") {
    // Linux is limited to an edition, so a caller without a license of this product hears that first.
    const detail =
      refusal === "wrongProduct"
        ? "platformRequiresLicense"
        : ENTITLEMENT[state as keyof typeof ENTITLEMENT][path.name === "feed" ? "feed" : "updateCheck"];
    // A license of another product: the update check withholds as for no license, the feed has nothing for it.
    const expected = refusal === "wrongProduct" && path.name === "feed" ? "204" : detail;
    expect(outcome, `${path.name} for a ${state} license`).toEqual({ allowed: true, detail: expected });
    return;
  }
  if (path.words === "download") {
    const expected = ENTITLEMENT[state as keyof typeof ENTITLEMENT].download;
    if (state === "editionNotEntitled")
      expect(outcome, `${path.name} for a ${state} license`).toMatchObject({ allowed: false, status: 403 });
    else expect(outcome, `${path.name} for a ${state} license`).toEqual(expected);
    return;
  }
  expect(outcome, `${path.name} must allow a ${state} license`).toMatchObject({ allowed: true });
}

describe("one license policy on every path", () => {
  for (const state of STATES) {
    it(`${state}: every path refuses or allows the same way`, async () => {
      for (const path of PATHS) {
        const license = await newLicense(path.mode, state);
        const setup = (await path.setup?.(license)) ?? {};
        await applyState(license, state);
        expectOutcome(path, state, await path.run(license, setup));
      }
    });
  }
});
