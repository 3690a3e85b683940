/**
 * Offline license keys prove an activation (issue 12, CONTRACT section 4): `license.licenseKey` is issued only where
 * the license is usable on the caller's machine (File always, Activation with a live activation, Floating with a
 * live seat), says what it proves (mode, status, machine, client, nonce, an `exp` no later than the license or the
 * seat), and the client library's offline verification refuses a key for another machine, a machine-bound key
 * that names none, and a key that does not echo the caller's nonce. Over REST and gRPC-Web.
 */
import { exports } from "cloudflare:workers";
import { createClient } from "@connectrpc/connect";
import { createGrpcWebTransport } from "@connectrpc/connect-web";
import { CompactSign, exportJWK, generateKeyPair } from "jose";
import { describe, expect, it } from "vitest";
import { VerificationError, verifyLicenseOffline } from "../client/src/index";
import type { JwkSet } from "../client/src/types";
import { LicenseServer } from "../src/gen/licensing/v1/license_server_pb";
import { ADMIN, BASE, admin, call } from "./helpers";

const fetchWorker: typeof fetch = (input, init) =>
  exports.default.fetch(input as RequestInfo, {
    ...init,
    ...(init?.redirect === "error" ? { redirect: "manual" as const } : {}),
  });
const grpc = createClient(LicenseServer, createGrpcWebTransport({ baseUrl: BASE, fetch: fetchWorker }));
const withKey = { headers: { "x-api-key": ADMIN.key } };

const op = (name: string, body: Record<string, unknown>) =>
  call("POST", `/v1/license/${name}`, { body, key: ADMIN.key });

async function newLicense(mode: "File" | "Activation" | "Floating", expireDate = "2099-01-01T00:00:00.000Z") {
  const productId = (
    await admin("POST", "/v1/products", { product: { code: `keys-${crypto.randomUUID().slice(0, 8)}`, name: "Keys" } })
  ).body["productId"];
  const res = await admin("POST", "/v1/licenses", {
    license: { productId, licensingMode: mode, maxClients: 5, expireDate },
  });
  expect(res.status, res.text).toBe(200);
  const listed = await admin(
    "GET",
    `/v1/licenses?filter=${encodeURIComponent(`id == ${res.body["id"]}`)}&select=userKey`,
  );
  return { licenseId: res.body["licenseId"] as string, userKey: listed.body["licenses"][0].userKey as string };
}

const jwks = async (): Promise<JwkSet> => (await call("GET", "/v1/extensions/keys")).body as JwkSet;

async function refusal(promise: Promise<unknown>): Promise<string> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(VerificationError);
  return (error as VerificationError).reason;
}

describe("a license key is issued only where it proves a usable license on the machine", () => {
  it("Activation: activate and validate of an activated machine carry a key; no machine, or a machine without an activation, none", async () => {
    const lic = await newLicense("Activation", "2030-01-01T00:00:00.000Z");
    const activated = await op("activate", { userKey: lic.userKey, machineId: "PC-1", nonce: "n-activate" });
    expect(activated.status, activated.text).toBe(200);
    const key = activated.body["license"]["licenseKey"] as string;
    const payload = await verifyLicenseOffline(key, await jwks(), { machineId: "PC-1", nonce: "n-activate" });
    expect(payload).toMatchObject({
      licenseId: lic.licenseId,
      licensingMode: "Activation",
      status: "Activated",
      machineId: "PC-1",
      nonce: "n-activate",
    });
    // exp never outlives the license.
    expect(payload.exp).toBeLessThanOrEqual(Date.parse("2030-01-01T00:00:00.000Z") / 1000);

    const validated = await op("validate", { userKey: lic.userKey, machineId: "PC-1", nonce: "n-validate" });
    expect(validated.body).toMatchObject({ status: "Activated", nonce: "n-validate" });
    expect(
      (
        await verifyLicenseOffline(validated.body["license"]["licenseKey"], await jwks(), {
          machineId: "PC-1",
          nonce: "n-validate",
        })
      ).nonce,
    ).toBe("n-validate");

    const activationToken = activated.body["licenseToken"] as string;
    const byToken = await op("validate", { userKey: lic.userKey, licenseToken: activationToken });
    expect(
      await verifyLicenseOffline(byToken.body["license"]["licenseKey"], await jwks(), { machineId: "PC-1" }),
    ).toMatchObject({ machineId: "PC-1" });
    const unnamed = await op("validate", { userKey: lic.userKey });
    expect(unnamed.status).toBe(200);
    expect(unnamed.body["status"]).toBe("NotActivated");
    expect(unnamed.body["license"]).not.toHaveProperty("licenseKey");
    // A machine without an activation gets no key either (CONTRACT's 529).
    expect((await op("validate", { userKey: lic.userKey, machineId: "PC-2" })).status).toBe(529);

    // The same over gRPC: an empty license_key where none is issued.
    const overGrpc = await grpc.validateLicense({ userKey: lic.userKey }, withKey);
    expect(overGrpc.license?.licenseKey).toBe("");
    const activatedOverGrpc = await grpc.validateLicense(
      { userKey: lic.userKey, machineId: "PC-1", nonce: "n-grpc" },
      withKey,
    );
    expect(
      await verifyLicenseOffline(activatedOverGrpc.license!.licenseKey, await jwks(), {
        machineId: "PC-1",
        nonce: "n-grpc",
      }),
    ).toMatchObject({ machineId: "PC-1" });
  });

  it("a key for one machine never verifies for another, and a replayed answer fails the nonce", async () => {
    const lic = await newLicense("Activation");
    const key = (await op("activate", { userKey: lic.userKey, machineId: "PC-1", nonce: "first" })).body["license"][
      "licenseKey"
    ] as string;
    const set = await jwks();
    expect(await refusal(verifyLicenseOffline(key, set, { machineId: "PC-2" }))).toBe("machine");
    expect(await refusal(verifyLicenseOffline(key, set, { machineId: "PC-1", nonce: "second" }))).toBe("nonce");
    // gRPC answers carry the same kind of key.
    const grpcKey = (await grpc.activateLicense({ userKey: lic.userKey, machineId: "PC-3" }, withKey)).license!
      .licenseKey;
    expect(await refusal(verifyLicenseOffline(grpcKey, set, { machineId: "PC-1" }))).toBe("machine");
    expect(await refusal(verifyLicenseOffline(grpcKey, set, { machineId: "PC-3", nonce: "never-sent" }))).toBe("nonce");
  });

  it("Floating: the seat holder's key expires no later than the seat's lease; a validate naming no seat has none", async () => {
    const lic = await newLicense("Floating");
    const seat = await op("request", { userKey: lic.userKey, machineId: "FL-1", clientId: "alice" });
    expect(seat.status, seat.text).toBe(200);
    const lease = Date.parse(seat.body["tokenExpireAt"]) / 1000;
    const payload = await verifyLicenseOffline(seat.body["license"]["licenseKey"], await jwks(), { machineId: "FL-1" });
    expect(payload).toMatchObject({
      licensingMode: "Floating",
      status: "Activated",
      machineId: "FL-1",
      clientId: "alice",
    });
    expect(payload.exp).toBeLessThanOrEqual(lease);

    const holder = await op("validate", { userKey: lic.userKey, machineId: "FL-1", clientId: "alice", nonce: "n" });
    expect(
      (
        await verifyLicenseOffline(holder.body["license"]["licenseKey"], await jwks(), {
          machineId: "FL-1",
          nonce: "n",
        })
      ).exp,
    ).toBeLessThanOrEqual(lease);
    // Naming the seat by its token alone: the key still names the seat's machine and client.
    const byToken = await op("validate", { userKey: lic.userKey, licenseToken: seat.body["licenseToken"] });
    expect(
      await verifyLicenseOffline(byToken.body["license"]["licenseKey"], await jwks(), { machineId: "FL-1" }),
    ).toMatchObject({ machineId: "FL-1", clientId: "alice" });
    // Another machine naming this seat's token holds no seat.
    expect(
      (await op("validate", { userKey: lic.userKey, machineId: "FL-9", licenseToken: seat.body["licenseToken"] }))
        .status,
    ).toBe(529);
    const noSeat = await op("validate", { userKey: lic.userKey });
    expect(noSeat.status).toBe(200);
    expect(noSeat.body["license"]).not.toHaveProperty("licenseKey");
    const seatOverGrpc = await grpc.requestFloatingLicense(
      { userKey: lic.userKey, machineId: "FL-2", clientId: "bob" },
      withKey,
    );
    expect(
      await verifyLicenseOffline(seatOverGrpc.license!.licenseKey, await jwks(), { machineId: "FL-2" }),
    ).toMatchObject({ clientId: "bob" });
  });

  it("File: a key always, naming the machine when one was named", async () => {
    const lic = await newLicense("File");
    const unnamed = await op("validate", { userKey: lic.userKey });
    const payload = await verifyLicenseOffline(unnamed.body["license"]["licenseKey"], await jwks(), {
      machineId: "ANY",
    });
    expect(payload).toMatchObject({ licensingMode: "File", status: "NotActivated" });
    expect(payload.machineId).toBeUndefined();
    const named = await op("validate", { userKey: lic.userKey, machineId: "PC-9" });
    expect(
      await refusal(verifyLicenseOffline(named.body["license"]["licenseKey"], await jwks(), { machineId: "PC-8" })),
    ).toBe("machine");
  });
});

describe("the client's offline verification", () => {
  it("refuses an Activation or Floating key that names no machine, and accepts a File key without one", async () => {
    const { publicKey, privateKey } = await generateKeyPair("ES256");
    const set = {
      keys: [{ ...(await exportJWK(publicKey)), kid: "test", alg: "ES256", use: "sig" }],
    } as unknown as JwkSet;
    const now = Math.floor(Date.now() / 1000);
    const sign = (claims: Record<string, unknown>) =>
      new CompactSign(
        new TextEncoder().encode(
          JSON.stringify({
            licenseId: "licTEST0001",
            licenseType: "Standard",
            features: [],
            iat: now,
            exp: now + 60,
            ...claims,
          }),
        ),
      )
        .setProtectedHeader({ alg: "ES256", kid: "test" })
        .sign(privateKey);
    for (const licensingMode of ["Activation", "Floating"]) {
      expect(
        await refusal(
          verifyLicenseOffline(await sign({ licensingMode, status: "Activated", machineId: null }), set, {
            machineId: "PC-1",
          }),
        ),
      ).toBe("machine");
    }
    expect(
      await verifyLicenseOffline(await sign({ licensingMode: "File", status: "NotActivated", machineId: null }), set, {
        machineId: "PC-1",
      }),
    ).toMatchObject({ licensingMode: "File" });
    expect(
      await refusal(verifyLicenseOffline(await sign({ licensingMode: "File", nonce: "a" }), set, { nonce: "b" })),
    ).toBe("nonce");
    expect(await refusal(verifyLicenseOffline(await sign({ licensingMode: "File" }), set, { nonce: "b" }))).toBe(
      "nonce",
    );
  });
});
