/**
 * Offline license keys cannot be hoarded by cycling activations: every key is valid for at most
 * `Licensing:LicenseKeyLifetime` from its issue (7 days by default), a deactivated machine gets no fresh key (the
 * next validation says it is not activated, over REST and gRPC-Web), and so activating and deactivating machines in
 * turn leaves valid only the keys issued within the last lifetime. The trade-off (docs/security/licenses.md, "What an offline
 * license key proves"): a key issued before a deactivation stays valid offline until its `exp`.
 */
import { exports } from "cloudflare:workers";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createGrpcWebTransport } from "@connectrpc/connect-web";
import { describe, expect, it } from "vitest";
import { VerificationError, type LicenseKeyPayload, verifyLicenseOffline } from "../../client/src/index";
import type { JwkSet } from "../../client/src/types";
import { LicenseServer } from "../../src/gen/licensing/v1/license_server_pb";
import { ADMIN, BASE, call, movableClock, setSetting } from "../helpers";
import { newLicense } from "../samples/licensing";

const clockAhead = (await movableClock()).move;
const fetchWorker: typeof fetch = (input, init) =>
  exports.default.fetch(input as RequestInfo, {
    ...init,
    ...(init?.redirect === "error" ? { redirect: "manual" as const } : {}),
  });
const grpc = createClient(LicenseServer, createGrpcWebTransport({ baseUrl: BASE, fetch: fetchWorker }));
const withKey = { headers: { "x-api-key": ADMIN.key } };

const DAY = 86_400_000;
const op = (name: string, body: Record<string, unknown>) =>
  call("POST", `/v1/license/${name}`, { body, key: ADMIN.key });
const jwks = async (): Promise<JwkSet> => (await call("GET", "/v1/extensions/keys")).body as JwkSet;

/** The key's payload when it verifies offline at `now` for `machineId`, else the reason it does not. */
async function offline(key: string, set: JwkSet, machineId: string, now: Date): Promise<LicenseKeyPayload | string> {
  return verifyLicenseOffline(key, set, { machineId, now }).catch((e: unknown) => {
    expect(e).toBeInstanceOf(VerificationError);
    return (e as VerificationError).reason;
  });
}

describe("a license key's lifetime", () => {
  it("is Licensing:LicenseKeyLifetime from its issue, 7 days by default, on activate and validate, REST and gRPC", async () => {
    const lic = await newLicense("Activation", 5);
    const activated = await op("activate", { userKey: lic.userKey, machineId: "PC-1", nonce: "a" });
    expect(activated.status, activated.text).toBe(200);
    const set = await jwks();
    const keys = [
      activated.body["license"]["licenseKey"] as string,
      (await op("validate", { userKey: lic.userKey, machineId: "PC-1" })).body["license"]["licenseKey"] as string,
      (await grpc.validateLicense({ userKey: lic.userKey, machineId: "PC-1" }, withKey)).license!.licenseKey,
      (await op("validate", { userKey: (await newLicense("File")).userKey })).body["license"]["licenseKey"] as string,
    ];
    for (const key of keys) {
      const payload = (await offline(key, set, "PC-1", new Date())) as LicenseKeyPayload;
      expect(payload.exp! - payload.iat).toBe(7 * 86_400);
      // Valid until its lifetime is over, and not a second longer.
      expect(typeof (await offline(key, set, "PC-1", new Date((payload.exp! - 1) * 1000)))).toBe("object");
      expect(await offline(key, set, "PC-1", new Date(payload.iat * 1000 + 7 * DAY))).toBe("expired");
    }

    // An operator's shorter lifetime applies to the next key.
    await setSetting("Licensing:LicenseKeyLifetime", "01:30:00");
    try {
      const shorter = await op("validate", { userKey: lic.userKey, machineId: "PC-1" });
      const payload = (await offline(
        shorter.body["license"]["licenseKey"],
        set,
        "PC-1",
        new Date(),
      )) as LicenseKeyPayload;
      expect(payload.exp! - payload.iat).toBe(90 * 60);
    } finally {
      await setSetting("Licensing:LicenseKeyLifetime", null);
    }
  });

  it("after a deactivation, the machine's next validation says it is not activated and carries no key", async () => {
    const lic = await newLicense("Activation", 1);
    const activated = await op("activate", { userKey: lic.userKey, machineId: "PC-1", nonce: "before" });
    expect(activated.status, activated.text).toBe(200);
    const token = activated.body["licenseToken"] as string;
    const held = activated.body["license"]["licenseKey"] as string;
    expect((await op("deactivate", { userKey: lic.userKey, machineId: "PC-1" })).status).toBe(200);

    // By machine, by its old token, and over gRPC: not activated, and no key that would echo the fresh nonce.
    for (const body of [
      { userKey: lic.userKey, machineId: "PC-1", nonce: "after" },
      { userKey: lic.userKey, licenseToken: token, nonce: "after" },
    ]) {
      const validated = await op("validate", body);
      expect(validated.status, validated.text).toBe(529);
      expect(validated.body).toMatchObject({ success: false, message: "The license has not been activated" });
      expect(validated.text).not.toContain("eyJ");
    }
    const overGrpc = await grpc
      .validateLicense({ userKey: lic.userKey, machineId: "PC-1", nonce: "after" }, withKey)
      .then(
        (answer) => answer,
        (e: unknown) => (e instanceof ConnectError ? e.code : e),
      );
    expect(overGrpc).toBe(Code.FailedPrecondition);
    // Without a machine, the license's status comes back, with no key either.
    const unnamed = await op("validate", { userKey: lic.userKey, nonce: "after" });
    expect(unnamed.body).toMatchObject({ status: "NotActivated" });
    expect(unnamed.body["license"]["licenseKey"]).toBeUndefined();

    // The key held from before is the trade-off: it stays valid offline, but never past its lifetime, and it cannot
    // pass for the fresh answer (the nonce).
    const set = await jwks();
    expect(
      await verifyLicenseOffline(held, set, { machineId: "PC-1", nonce: "after" }).catch(
        (e: VerificationError) => e.reason,
      ),
    ).toBe("nonce");
    expect(await offline(held, set, "PC-1", new Date(Date.now() + 7 * DAY))).toBe("expired");
  });

  it("cycling activate and deactivate leaves valid only the keys issued within the last lifetime", async () => {
    // One seat, handed from machine to machine every 2 days: each machine keeps the key it got.
    const lic = await newLicense("Activation", 1);
    const held: { machineId: string; key: string }[] = [];
    for (let i = 0; i < 8; i++) {
      const machineId = `PC-${i}`;
      const activated = await op("activate", { userKey: lic.userKey, machineId });
      expect(activated.status, activated.text).toBe(200);
      held.push({ machineId, key: activated.body["license"]["licenseKey"] as string });
      expect((await op("deactivate", { userKey: lic.userKey, machineId })).status).toBe(200);
      clockAhead(2 * DAY);
    }
    // Now is 16 days after the first key: only the keys of days 10, 12 and 14 (issued less than 7 days ago) verify,
    // so at most ceil(lifetime / cycle) = 4 keys are ever valid at once, whatever the number of cycles.
    const set = await jwks();
    const now = new Date(Date.now() + 16 * DAY);
    const valid: string[] = [];
    for (const { machineId, key } of held) {
      const result = await offline(key, set, machineId, now);
      if (typeof result === "string") expect(result).toBe("expired");
      else valid.push(machineId);
    }
    expect(valid).toEqual(["PC-5", "PC-6", "PC-7"]);
  });
});
