/**
 * Air-gapped activation on the service's side (CONTRACT section 11): the anonymous POST /v1/license/offline-activation
 * reads a request code made by the client package, activates exactly as POST /v1/license/activate does (it counts
 * against the license's machines, idempotent per machine, 526 over the limit), and answers a license file bound to
 * the machine and the request's nonce, with a response code (`LRS2-…`, at most 400 characters) the client package
 * verifies offline. A mistyped code, a response code in place of the request code, and another product's license are
 * refused with a clear message and change nothing; guessing user keys here blocks the address like failed logins.
 */
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import {
  type JwkSet,
  OfflineCodeError,
  VerificationError,
  createActivationRequest,
  decodeResponseCode,
  encodeRequestCode,
  encodeResponseCode,
  readResponseCode,
  verifyActivationResponse,
  verifyLicenseFile,
} from "../client/src/index";
import { base32Decode, base32Encode, crc32 } from "../client/src/offline-codes";
import vectorPage from "../docs/reference/offline-codes.md?raw";
import { admin, call, setSetting } from "./helpers";

const from = (ip: string) => ({ "cf-connecting-ip": ip });
const activateOffline = (requestCode: string, ip = "198.18.29.1") =>
  call("POST", "/v1/license/offline-activation", { headers: from(ip), body: { requestCode } });

let sequence = 0;
async function newLicense(
  mode: "File" | "Activation" | "Floating",
  maxClients = 1,
  more: Record<string, unknown> = {},
) {
  const code = `air-${Date.now().toString(36)}-${++sequence}`;
  const product = await admin("POST", "/v1/products", { product: { code, name: `Air gap ${sequence}` } });
  expect(product.status, product.text).toBe(200);
  const created = await admin("POST", "/v1/licenses", {
    license: { productId: product.body["productId"], licensingMode: mode, maxClients, ...more },
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
    expect(res.body["responseCode"]).toMatch(/^LRS2-[0-9A-Z]{5}(-[0-9A-Z]{1,5})+$/);
    expect(res.body["responseCode"].length).toBeLessThanOrEqual(400);

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

/** A date rounded down to the second, as an `LRS2` code holds it. */
const toSecond = (date: Date | undefined) => (date ? new Date(Math.floor(date.getTime() / 1000) * 1000) : undefined);

/** The code with one byte of its payload changed and its checksum made again: what a forger sends. */
function alteredAt(code: string, index: number): string {
  const bytes = base32Decode(code.replace(/-/g, "").slice(4)) as Uint8Array;
  const payload = bytes.slice(0, bytes.length - 4);
  payload[index] = (payload[index] as number) ^ 0x01;
  const framed = new Uint8Array(payload.length + 4);
  framed.set(payload);
  new DataView(framed.buffer).setUint32(payload.length, crc32(payload));
  return ["LRS2", ...(base32Encode(framed).match(/.{1,5}/g) ?? [])].join("-");
}

describe("the LRS2 response code", () => {
  afterEach(() => {
    vi.unstubAllGlobals();
  });

  async function activated(machineId: string, clientId?: string, perpetual = false) {
    const lic = await newLicense("Activation", 3, {
      edition: "Professional",
      features: ["export", "cloud-sync", "reports"],
      ...(perpetual ? {} : { expireDate: new Date(Date.now() + 20 * 86_400_000).toISOString() }),
      supportExpireDate: new Date(Date.now() + 365 * 86_400_000).toISOString(),
      licenseeName: "Ada Lovelace",
    });
    const request = createActivationRequest({
      userKey: lic.userKey,
      machineId,
      productCode: lic.productCode,
      ...(clientId ? { clientId } : {}),
    });
    const res = await activateOffline(request.requestCode);
    expect(res.status, res.text).toBe(200);
    return { lic, request, res, code: res.body["responseCode"] as string };
  }

  it("is at most 400 characters and states what the license file states, verified offline with no network", async () => {
    const { lic, request, res, code } = await activated("LAB-CODE-1", "alice");
    expect(code).toMatch(/^LRS2-[0-9A-Z]{5}(-[0-9A-Z]{1,5})+$/);
    expect(code.length).toBeLessThanOrEqual(400);
    const keys = await jwks();
    const options = { jwks: keys, machineId: "LAB-CODE-1", clientId: "alice", nonce: request.nonce };

    // Offline: any request at all fails the test.
    const fetched = vi.fn(() => {
      throw new Error("verification made a request");
    });
    vi.stubGlobal("fetch", fetched);
    const fromCode = await verifyActivationResponse(code, { ...options, productCode: lic.productCode });
    // Typed by a person: lower case, spaces for dashes, O for 0.
    const typed = await verifyActivationResponse(code.toLowerCase().replace(/-/g, " ").replace(/0/g, "o"), options);
    const fromFile = await verifyLicenseFile(res.body["licenseFile"], options);
    expect(fetched).not.toHaveBeenCalled();
    vi.unstubAllGlobals();

    expect(fromCode.licenseFile).toBe(code);
    expect(typed.licenseFile).toBe(code);
    expect(fromCode.v).toBe(2);
    // The license file's content, dates to the second, without the licensee (not in the code).
    expect(fromFile.license.licensee).toEqual({ name: "Ada Lovelace" });
    expect(fromCode.license).toEqual({
      ...fromFile.license,
      licensee: undefined,
      issueDate: toSecond(fromFile.license.issueDate),
      expireAt: toSecond(fromFile.license.expireAt),
      supportExpireAt: toSecond(fromFile.license.supportExpireAt),
    });
    expect(fromCode.entitlements).toEqual({
      ...fromFile.entitlements,
      expireAt: toSecond(fromFile.entitlements.expireAt),
      supportExpireAt: toSecond(fromFile.entitlements.supportExpireAt),
    });
    expect(fromCode.entitlements).toMatchObject({
      productCode: lic.productCode,
      licenseType: "Standard",
      edition: "Professional",
      features: ["export", "cloud-sync", "reports"],
      maxClients: 3,
    });
    expect(fromCode.machine).toEqual({ machineId: "LAB-CODE-1", clientId: "alice" });
    expect(fromCode.nonce).toBe(request.nonce);
    expect(fromCode.issuedAt).toEqual(toSecond(fromFile.issuedAt));
    expect(fromCode.expiresAt).toEqual(toSecond(fromFile.expiresAt));
    expect(fromCode.keyId).toBe(fromFile.keyId);
    expect(fromCode.encrypted).toBe(false);

    // Saved as the application's license file, the code verifies at the next start like a file.
    const later = await verifyLicenseFile(fromCode.licenseFile, {
      jwks: keys,
      machineId: "LAB-CODE-1",
      now: new Date(Date.now() + 86_400_000),
    });
    expect(later.license.licenseId).toBe(lic.licenseId);
    expect(later.machine).toEqual({ machineId: "LAB-CODE-1" });

    // An LRS1 code handed out before still reads: the license file inside it.
    const first = await verifyActivationResponse(encodeResponseCode(res.body["licenseFile"]), options);
    expect(first.v).toBe(1);
    expect(first.licenseFile).toBe(res.body["licenseFile"]);
    expect(() => decodeResponseCode(code)).toThrow(OfflineCodeError);
    expect(readResponseCode(code).version).toBe(2);
  });

  it("refuses another machine, client, nonce or product, an altered byte, a mistyped character, an unknown key and an expired code", async () => {
    // A perpetual license: the code's own end (the file's lifetime) is what expires.
    const { request, code } = await activated("LAB-CODE-2", "alice", true);
    const keys = await jwks();
    const options = { jwks: keys, machineId: "LAB-CODE-2", clientId: "alice", nonce: request.nonce };
    const refusal = (response: string, changed: Record<string, unknown>) =>
      verifyActivationResponse(response, { ...options, ...changed }).then(
        () => "accepted",
        (e: unknown) =>
          e instanceof VerificationError ? e.reason : e instanceof OfflineCodeError ? e.problem : String(e),
      );

    expect(await refusal(code, {})).toBe("accepted");
    expect(await refusal(code, { machineId: "LAB-CODE-3" })).toBe("machine");
    expect(await refusal(code, { clientId: "bob" })).toBe("machine");
    expect(await refusal(code, { nonce: createActivationRequest({ userKey: "K", machineId: "M" }).nonce })).toBe(
      "nonce",
    );
    expect(await refusal(code, { productCode: "another-product" })).toBe("product");

    // Its end, to the second, and a clock set back before its issue.
    const { response } = readResponseCode(code) as Extract<ReturnType<typeof readResponseCode>, { version: 2 }>;
    expect(await refusal(code, { now: new Date(response.expiresAt * 1000 - 1000) })).toBe("accepted");
    expect(response.expireAt).toBe(0);
    expect(await refusal(code, { now: new Date(response.expiresAt * 1000) })).toBe("expired");
    expect(await refusal(code, { now: new Date(response.issuedAt * 1000 - 3_600_000) })).toBe("clock");

    // One byte altered anywhere (its checksum made again, as a forger would): never accepted. Within the body's texts
    // and the signature, the signature refuses it; in the key id, no key of the JWKS is named.
    const payloadLength = Math.floor(((code.replace(/-/g, "").length - 4) * 5) / 8) - 4;
    const reasons = new Set<string>();
    for (let index = 0; index < payloadLength; index++) {
      const reason = await refusal(alteredAt(code, index), {});
      expect(reason, `byte ${index}`).not.toBe("accepted");
      reasons.add(reason);
    }
    expect(await refusal(alteredAt(code, 60), {})).toBe("signature");
    expect(await refusal(alteredAt(code, payloadLength - 1), {})).toBe("signature");
    expect(await refusal(alteredAt(code, 1), {})).toBe("unknownKey");
    expect([...reasons].every((r) => ["signature", "unknownKey", "content"].includes(r))).toBe(true);

    // Mistyped or cut short: the checksum says so before anything is verified.
    const groups = code.split("-");
    groups[5] = `${groups[5]![0] === "7" ? "8" : "7"}${groups[5]!.slice(1)}`;
    expect(await refusal(groups.join("-"), {})).toBe("checksum");
    expect(await refusal(code.slice(0, -6), {})).toBe("checksum");
    expect(await refusal(request.requestCode, {})).toBe("wrongKind");

    // A JWKS without the service's key, or whose key of that kid is another: refused.
    const renamed = { keys: keys.keys.map((k) => ({ ...k, kid: `${k.kid}-other` })) };
    expect(await refusal(code, { jwks: renamed })).toBe("unknownKey");
    const other = (await crypto.subtle.generateKey({ name: "ECDSA", namedCurve: "P-256" }, true, [
      "sign",
      "verify",
    ])) as CryptoKeyPair;
    const otherJwk = (await crypto.subtle.exportKey("jwk", other.publicKey)) as { x: string; y: string };
    const swapped = { keys: keys.keys.map((k) => ({ ...k, x: otherJwk.x, y: otherJwk.y })) };
    expect(await refusal(code, { jwks: swapped })).toBe("signature");
  });

  it("falls back to the license file's LRS1 code for a license whose texts do not fit the layout", async () => {
    const lic = await newLicense("File", 0, { features: ["f".repeat(256)] });
    const request = createActivationRequest({ userKey: lic.userKey, machineId: "LAB-LONG" });
    const res = await activateOffline(request.requestCode);
    expect(res.status, res.text).toBe(200);
    expect(decodeResponseCode(res.body["responseCode"])).toBe(res.body["licenseFile"]);
    const verified = await verifyActivationResponse(res.body["responseCode"], {
      jwks: await jwks(),
      machineId: "LAB-LONG",
      nonce: request.nonce,
    });
    expect(verified.entitlements.features).toEqual(["f".repeat(256)]);
  });

  it("verifies the test vector of docs/reference/offline-codes.md, byte for byte", async () => {
    const json = /<!-- vector -->\s*```json\n([\s\S]*?)\n```/.exec(vectorPage)?.[1];
    expect(json).toBeDefined();
    const vector = JSON.parse(json as string);
    const hex = (bytes: Uint8Array) => Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
    const read = readResponseCode(vector.code) as Extract<ReturnType<typeof readResponseCode>, { version: 2 }>;
    expect(hex(read.signed.slice(4))).toBe(vector.body);
    expect(hex(read.signature)).toBe(vector.signature);
    const verified = await verifyActivationResponse(vector.code, {
      jwks: vector.jwks,
      machineId: vector.machineId,
      clientId: vector.clientId,
      nonce: vector.nonce,
      productCode: vector.productCode,
      now: new Date("2026-01-15T00:00:00Z"),
    });
    expect(verified).toMatchObject({
      v: 2,
      license: {
        licenseId: vector.licenseId,
        licensingMode: vector.licensingMode,
        licenseType: vector.licenseType,
        edition: vector.edition,
        features: vector.features,
        issueDate: new Date(vector.issueDate),
        expireAt: new Date(vector.expireAt),
      },
      entitlements: { productCode: vector.productCode, maxClients: vector.maxClients },
      machine: { machineId: vector.machineId, clientId: vector.clientId },
      issuedAt: new Date(vector.issuedAt),
      expiresAt: new Date(vector.expiresAt),
      keyId: vector.jwks.keys[0].kid,
    });
    expect(verified.license.supportExpireAt).toBeUndefined();
    await expect(
      verifyActivationResponse(vector.code, {
        jwks: vector.jwks,
        machineId: vector.machineId,
        nonce: vector.nonce,
        now: new Date("2026-02-01T00:00:00Z"),
      }),
    ).rejects.toMatchObject({ reason: "expired" });
  });
});
