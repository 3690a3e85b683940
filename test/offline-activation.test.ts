/**
 * Air-gapped activation on the service's side (CONTRACT section 11): the anonymous POST /v1/license/offline-activation
 * reads a request code made by the client package, activates exactly as POST /v1/license/activate does (it counts
 * against the license's machines, idempotent per machine, 526 over the limit), and answers a license file bound to
 * the machine and the request's nonce, as a response code the client package verifies offline. A mistyped code, a
 * response code in place of the request code, and another product's license are refused with a clear message and
 * change nothing; guessing user keys here blocks the address like failed logins.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import {
  type JwkSet,
  VerificationError,
  createActivationRequest,
  decodeResponseCode,
  encodeRequestCode,
  encodeResponseCode,
  verifyActivationResponse,
} from "../client/src/index";
import { admin, call, setSetting } from "./helpers";

const from = (ip: string) => ({ "cf-connecting-ip": ip });
const activateOffline = (requestCode: string, ip = "198.18.29.1") =>
  call("POST", "/v1/license/offline-activation", { headers: from(ip), body: { requestCode } });

let sequence = 0;
async function newLicense(mode: "File" | "Activation" | "Floating", maxClients = 1) {
  const code = `air-${Date.now().toString(36)}-${++sequence}`;
  const product = await admin("POST", "/v1/products", { product: { code, name: `Air gap ${sequence}` } });
  expect(product.status, product.text).toBe(200);
  const created = await admin("POST", "/v1/licenses", {
    license: { productId: product.body["productId"], licensingMode: mode, maxClients },
  });
  expect(created.status, created.text).toBe(200);
  const listed = await admin(
    "GET",
    `/v1/licenses?filter=${encodeURIComponent(`id == ${created.body["id"]}`)}&select=userKey`,
  );
  return {
    id: created.body["id"] as number,
    licenseId: created.body["licenseId"] as string,
    userKey: listed.body["licenses"][0].userKey as string,
    productCode: code,
  };
}

const jwks = async (): Promise<JwkSet> => (await call("GET", "/v1/extensions/keys")).body as JwkSet;

/** The license's activations (and every other token) as stored: what a refusal must leave as it was. */
async function tokens(licenseId: number): Promise<{ machine_id: string; updated_at: string }[]> {
  const rows = await env.DB.prepare(
    "SELECT machine_id, updated_at FROM license_tokens WHERE license_id = ? ORDER BY id",
  )
    .bind(licenseId)
    .all<{ machine_id: string; updated_at: string }>();
  return rows.results;
}

const fileCount = async (licenseId: number) =>
  (
    await env.DB.prepare("SELECT count(*) AS n FROM license_files WHERE license_id = ?")
      .bind(licenseId)
      .first<{ n: number }>()
  )?.n;

describe("POST /v1/license/offline-activation", () => {
  it("activates the machine of a request code as activate does, and answers a license file the client verifies offline", async () => {
    const lic = await newLicense("Activation", 1);
    const request = createActivationRequest({
      userKey: lic.userKey,
      machineId: "AIR-GAPPED-1",
      productCode: lic.productCode,
    });
    const res = await activateOffline(request.requestCode);
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({
      success: true,
      licenseId: lic.licenseId,
      fileName: `${lic.licenseId}.lic`,
      activeClientCount: 1,
      maxClientCount: 1,
      encrypted: false,
    });
    expect(decodeResponseCode(res.body["responseCode"])).toBe(res.body["licenseFile"]);

    // The application, offline: the response code verifies against its stored keys, for its machine and nonce.
    const keys = await jwks();
    const file = await verifyActivationResponse(res.body["responseCode"], {
      jwks: keys,
      machineId: "AIR-GAPPED-1",
      nonce: request.nonce,
      productCode: lic.productCode,
    });
    expect(file.license.licenseId).toBe(lic.licenseId);
    expect(file.machine.machineId).toBe("AIR-GAPPED-1");
    expect(file.nonce).toBe(request.nonce);
    expect(file.entitlements.productCode).toBe(lic.productCode);
    // The downloaded file's text verifies the same way.
    expect(
      (
        await verifyActivationResponse(`${res.body["licenseFile"]}\n`, {
          jwks: keys,
          machineId: "AIR-GAPPED-1",
          nonce: request.nonce,
        })
      ).licenseFile,
    ).toBe(res.body["licenseFile"]);
    // The answer to another request (another nonce) is refused.
    await expect(
      verifyActivationResponse(res.body["responseCode"], { jwks: keys, machineId: "AIR-GAPPED-1", nonce: "other" }),
    ).rejects.toMatchObject({ reason: "nonce" });

    // It counted as an activation: the machine validates online as Activated.
    const validated = await admin("POST", "/v1/license/validate", { userKey: lic.userKey, machineId: "AIR-GAPPED-1" });
    expect(validated.status, validated.text).toBe(200);
    expect(validated.body["status"]).toBe("Activated");

    // Idempotent per machine, as activate: the same code again activates nothing more.
    const again = await activateOffline(request.requestCode);
    expect(again.status, again.text).toBe(200);
    expect(again.body["activeClientCount"]).toBe(1);

    // The limit holds: a second machine gets 526, and nothing changes.
    const before = await tokens(lic.id);
    const files = await fileCount(lic.id);
    const second = await activateOffline(
      createActivationRequest({ userKey: lic.userKey, machineId: "AIR-GAPPED-2", productCode: lic.productCode })
        .requestCode,
    );
    expect(second.status, second.text).toBe(526);
    expect(second.body["message"]).toBe("The license has already been activated");
    expect(await tokens(lic.id)).toEqual(before);
    expect(await fileCount(lic.id)).toBe(files);
  });

  it("refuses a mistyped code, a response code in the request box and another product's license, changing nothing", async () => {
    const lic = await newLicense("Activation", 3);
    const other = await newLicense("Activation", 3);
    const good = createActivationRequest({ userKey: lic.userKey, machineId: "PC-9", productCode: lic.productCode });
    const before = await tokens(lic.id);

    // One character changed: the checksum catches it before anything is looked up.
    const groups = good.requestCode.split("-");
    const i = 3;
    groups[i] = `${groups[i]![0] === "A" ? "B" : "A"}${groups[i]!.slice(1)}`;
    const mistyped = await activateOffline(groups.join("-"));
    expect(mistyped.status, mistyped.text).toBe(400);
    expect(mistyped.body["reason"]).toBe("requestCodeChecksum");
    expect(mistyped.body["message"]).toMatch(/checksum does not match: a character was mistyped/);

    // Part of it missing.
    const cut = await activateOffline(good.requestCode.slice(0, -7));
    expect(cut.status, cut.text).toBe(400);
    expect(cut.body["reason"]).toBe("requestCodeChecksum");

    // The answer pasted into the request box.
    const response = await activateOffline(encodeResponseCode("eyJhbGciOiJFUzI1NiJ9.e30.c2ln"));
    expect(response.status, response.text).toBe(400);
    expect(response.body["reason"]).toBe("responseCodeGiven");
    expect(response.body["message"]).toMatch(/This is a response code \(LRS1-…\), not a request code/);

    // Not a code at all.
    const garbage = await activateOffline("hello world");
    expect(garbage.status, garbage.text).toBe(400);
    expect(garbage.body["message"]).toMatch(/A request code starts with LRQ1-/);

    // A license of another product than the application's that made the code.
    const wrong = await activateOffline(
      encodeRequestCode({ userKey: other.userKey, machineId: "PC-9", nonce: "n1", productCode: lic.productCode }),
    );
    expect(wrong.status, wrong.text).toBe(527);
    expect(wrong.body["reason"]).toBe("wrongProduct");
    expect(wrong.body["message"]).toBe("The license is not valid for this product");

    expect(await tokens(lic.id)).toEqual(before);
    expect(await tokens(other.id)).toEqual([]);
    expect(await fileCount(lic.id)).toBe(0);
    expect(await fileCount(other.id)).toBe(0);

    // The good code still works afterwards.
    expect((await activateOffline(good.requestCode)).status).toBe(200);
  });

  it("answers a File license's file without an activation, and refuses a floating license as activate does", async () => {
    const file = await newLicense("File", 0);
    const request = createActivationRequest({ userKey: file.userKey, machineId: "LAB-1" });
    const res = await activateOffline(request.requestCode);
    expect(res.status, res.text).toBe(200);
    expect(await tokens(file.id)).toEqual([]);
    const verified = await verifyActivationResponse(res.body["responseCode"], {
      jwks: await jwks(),
      machineId: "LAB-1",
      nonce: request.nonce,
    });
    expect(verified.license.licensingMode).toBe("File");
    // Another machine's application refuses it.
    const refused = await verifyActivationResponse(res.body["responseCode"], {
      jwks: await jwks(),
      machineId: "LAB-2",
      nonce: request.nonce,
    }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(VerificationError);
    expect((refused as VerificationError).reason).toBe("machine");

    const floating = await newLicense("Floating", 2);
    const seat = await activateOffline(
      createActivationRequest({ userKey: floating.userKey, machineId: "LAB-1", clientId: "alice" }).requestCode,
    );
    expect(seat.status, seat.text).toBe(529);
    expect(await tokens(floating.id)).toEqual([]);
  });

  it("is counted by the per-IP request limit like every anonymous route", async () => {
    const ip = "198.18.29.90";
    await setSetting("IpFiltering:BruteForceProtection:MaxRequestsPerTimeFrame", "3");
    try {
      const lic = await newLicense("Activation", 5);
      for (let n = 0; n < 3; n++)
        expect(
          (await activateOffline(createActivationRequest({ userKey: lic.userKey, machineId: `M${n}` }).requestCode, ip))
            .status,
        ).toBe(200);
      const over = await activateOffline(
        createActivationRequest({ userKey: lic.userKey, machineId: "M3" }).requestCode,
        ip,
      );
      expect(over.status, over.text).toBe(429);
      expect((await tokens(lic.id)).map((t) => t.machine_id)).toEqual(["M0", "M1", "M2"]);
    } finally {
      await setSetting("IpFiltering:BruteForceProtection:MaxRequestsPerTimeFrame", null);
    }
  });

  it("counts unknown user keys like failed logins: past MaxFailedAttempts the address is blocked, even with a good code", async () => {
    const ip = "198.18.29.77";
    const lic = await newLicense("Activation", 2);
    for (let n = 0; n < 5; n++) {
      const guess = await activateOffline(
        encodeRequestCode({ userKey: `GUESS-${n}AAAA-BBBBB-CCCCC-DDDDD`, machineId: "PC-1", nonce: `n${n}` }),
        ip,
      );
      expect(guess.status, guess.text).toBe(525);
    }
    const blocked = await activateOffline(
      createActivationRequest({ userKey: lic.userKey, machineId: "PC-1" }).requestCode,
      ip,
    );
    expect(blocked.status, blocked.text).toBe(500);
    expect(blocked.body["message"]).toMatch(/Too many failed logins from this address/);
    expect(await tokens(lic.id)).toEqual([]);
    // Another address is not blocked.
    const elsewhere = await activateOffline(
      createActivationRequest({ userKey: lic.userKey, machineId: "PC-1" }).requestCode,
      "198.18.29.78",
    );
    expect(elsewhere.status, elsewhere.text).toBe(200);
  });
});
