/**
 * Gates that hold (issue 12): the service's signing keys are the Administrator's alone, their private part is never
 * returned, a malformed or undecryptable key row never breaks signing, and deleting the active key retires it (it
 * stops signing and stays published until every key it signed has expired); a license's own bearer token reports
 * for its own license only (REST and gRPC).
 */
import { env, exports } from "cloudflare:workers";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createGrpcWebTransport } from "@connectrpc/connect-web";
import { decodeProtectedHeader } from "jose";
import { describe, expect, it, vi } from "vitest";
import { ReportServer } from "../src/gen/licensing/v1/report_server_pb";
import { forgetSigningKeys } from "../src/auth/signing-keys";
import { ADMIN, BASE, admin, call, keyFor, movableClock } from "./helpers";

const moveClock = (await movableClock()).move;
const fetchWorker: typeof fetch = (input, init) =>
  exports.default.fetch(input as RequestInfo, {
    ...init,
    ...(init?.redirect === "error" ? { redirect: "manual" as const } : {}),
  });
const reports = createClient(ReportServer, createGrpcWebTransport({ baseUrl: BASE, fetch: fetchWorker }));

async function newLicense(mode = "Activation") {
  const productId = (
    await admin("POST", "/v1/products", { product: { code: `gate-${crypto.randomUUID().slice(0, 8)}`, name: "Gate" } })
  ).body["productId"];
  const res = await admin("POST", "/v1/licenses", { license: { productId, licensingMode: mode, maxClients: 0 } });
  const listed = await admin(
    "GET",
    `/v1/licenses?filter=${encodeURIComponent(`id == ${res.body["id"]}`)}&select=userKey`,
  );
  return {
    id: res.body["id"] as number,
    licenseId: res.body["licenseId"] as string,
    userKey: listed.body["licenses"][0].userKey as string,
  };
}

/** The kid that signs an activation's license key now. */
async function signingKid(): Promise<string> {
  const lic = await newLicense();
  const res = await call("POST", "/v1/license/activate", {
    key: ADMIN.key,
    body: { userKey: lic.userKey, machineId: "PC-1" },
  });
  expect(res.status, res.text).toBe(200);
  return decodeProtectedHeader(res.body["license"]["licenseKey"]).kid as string;
}

const publishedKids = async (): Promise<string[]> =>
  ((await call("GET", "/v1/extensions/keys")).body["keys"] as { kid: string }[]).map((k) => k.kid);

async function signingKeyRows(): Promise<{ id: number; type: string; code: string }[]> {
  return (
    await env.DB.prepare(
      "SELECT id, type, code FROM resources WHERE type IN ('SignatureKey', 'RetiredSignatureKey') ORDER BY id",
    ).all<{ id: number; type: string; code: string }>()
  ).results;
}

describe("signing keys are the service's own", () => {
  it("refuses every role but Administrator to create, change or delete one, so nobody else can stop the signing", async () => {
    const kid = await signingKid();
    const [row] = await signingKeyRows();
    for (const role of ["Sales", "LicenseManager"]) {
      const key = await keyFor([role]);
      const create = await call("POST", "/v1/resources", {
        key,
        body: { resource: { name: "mine", type: "SignatureKey", data: "garbage" } },
      });
      expect(create.status, `${role} create`).toBe(403);
      // Nor by turning another resource into one.
      const file = await admin("POST", "/v1/resources", { resource: { name: "file", type: "File" } });
      expect(
        (
          await call("PUT", "/v1/resources", {
            key,
            body: { resource: { id: file.body["resourceId"], type: "SignatureKey" } },
          })
        ).status,
      ).toBe(403);
      expect(
        (await call("PUT", "/v1/resources", { key, body: { resource: { id: row!.id, data: "garbage" } } })).status,
        `${role} change`,
      ).toBe(403);
      expect((await call("DELETE", `/v1/resources/${row!.id}`, { key })).status, `${role} delete`).toBe(403);
      // Other resources stay theirs.
      expect(
        (
          await call("PUT", "/v1/resources", {
            key,
            body: { resource: { id: file.body["resourceId"], name: "renamed" } },
          })
        ).status,
      ).toBe(200);
    }
    forgetSigningKeys();
    expect(await signingKid()).toBe(kid);
  });

  it("never lists a signing key's stored private part, to anyone", async () => {
    await signingKid();
    const listed = await admin(
      "GET",
      `/v1/resources?filter=${encodeURIComponent('type == "SignatureKey"')}&select=id,type,data`,
    );
    expect(listed.status).toBe(200);
    expect(listed.body["resources"].length).toBeGreaterThan(0);
    for (const resource of listed.body["resources"]) expect(resource).not.toHaveProperty("data");
    const sales = await call("GET", "/v1/resources", { key: await keyFor(["Sales"]) });
    for (const resource of sales.body["resources"].filter((r: { type: string }) => r.type === "SignatureKey"))
      expect(resource).not.toHaveProperty("data");
  });

  it("skips a malformed or undecryptable key row, logging it once, and keeps signing with a usable key", async () => {
    const kid = await signingKid();
    const errors = vi.spyOn(console, "error").mockImplementation(() => undefined);
    try {
      // Newer than the real key, so it would be the one to sign.
      for (const data of ["not encrypted at all", "v1:AAAA:BBBB"]) {
        expect(
          (await admin("POST", "/v1/resources", { resource: { name: "broken", type: "SignatureKey", data } })).status,
        ).toBe(200);
      }
      forgetSigningKeys();
      expect(await signingKid()).toBe(kid);
      forgetSigningKeys();
      expect(await signingKid()).toBe(kid);
      const logged = errors.mock.calls.filter((c) => String(c[0]).startsWith("signing key resource"));
      expect(logged).toHaveLength(2);
      expect(await publishedKids()).toContain(kid);
    } finally {
      errors.mockRestore();
    }
  });

  it("retires a deleted key: it stops signing, stays published until what it signed expired, then may go", async () => {
    const kid = await signingKid();
    const active = (await signingKeyRows()).filter((r) => r.type === "SignatureKey" && r.code === kid);
    expect(active).toHaveLength(1);
    expect((await admin("DELETE", `/v1/resources/${active[0]!.id}`)).status).toBe(200);
    const next = await signingKid();
    expect(next).not.toBe(kid);
    expect(await publishedKids()).toEqual(expect.arrayContaining([kid, next]));
    expect((await signingKeyRows()).find((r) => r.id === active[0]!.id)?.type).toBe("RetiredSignatureKey");
    // Deleting the retired key while license keys it signed are still valid is refused.
    expect((await admin("DELETE", `/v1/resources/${active[0]!.id}`)).status).toBe(400);
    // Licensing:LicenseKeyLifetime (7 days) later nothing it signed is valid: it is no longer published and may go.
    moveClock(31 * 86_400_000);
    forgetSigningKeys();
    const later = await publishedKids();
    expect(later).not.toContain(kid);
    expect(later).toContain(next);
    expect((await admin("DELETE", `/v1/resources/${active[0]!.id}`)).status).toBe(200);
  });
});

describe("a license's bearer token reports for its own license only", () => {
  it("refuses a report naming another license, over REST and gRPC, and files one without a key under its own", async () => {
    const own = await newLicense("File");
    const other = await newLicense("File");
    const login = await call("POST", "/v1/auth/login", { body: { userKey: own.userKey } });
    expect(login.status).toBe(200);
    const token = login.body["token"] as string;

    const foreign = await call("POST", "/v1/report", {
      token,
      body: { name: "CrashReport", userKey: other.userKey, content: "x" },
    });
    expect(foreign.status).toBe(527);
    expect(foreign.body).toEqual({
      success: false,
      code: 527,
      message: "The license is not valid for this product",
      reason: "wrongProduct",
    });
    const unknown = await call("POST", "/v1/report", {
      token,
      body: { name: "CrashReport", userKey: "NOT-A-KEY", content: "x" },
    });
    expect(unknown.status).toBe(527);

    const mine = await call("POST", "/v1/report", {
      token,
      body: { name: "CrashReport", userKey: own.userKey, content: "x" },
    });
    expect(mine.status, mine.text).toBe(200);
    const keyless = await call("POST", "/v1/report", { token, body: { name: "CrashReport", content: "y" } });
    expect(keyless.status).toBe(200);
    for (const id of [mine.body["reportId"], keyless.body["reportId"]]) {
      const [report] = (await admin("GET", `/v1/reports?filter=${encodeURIComponent(`id == ${id}`)}`)).body["reports"];
      expect(report.licenseId).toBe(own.licenseId);
    }

    const error = await reports
      .sendReport(
        { name: "CrashReport", userKey: other.userKey, content: "x" },
        { headers: { authorization: `Bearer ${token}` } },
      )
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(error).toBeInstanceOf(ConnectError);
    expect((error as ConnectError).code).toBe(Code.PermissionDenied);
    // An API key still reports for any license.
    expect(
      (
        await call("POST", "/v1/report", {
          key: ADMIN.key,
          body: { name: "CrashReport", userKey: other.userKey, content: "x" },
        })
      ).status,
    ).toBe(200);
  });
});
