/**
 * Offline licensing on the service's side (CONTRACT section 11): license files from POST /v1/license/checkout
 * (signed with the JWKS's keys, bound to the machine, with a lifetime, optionally encrypted for the machine), the
 * refusals that change nothing, borrowed floating seats held by the license's Durable Object until the borrow ends
 * (a clock the test controls), returned early, never more than the seats under concurrency.
 */
import { runDurableObjectAlarm } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { compactVerify, createLocalJWKSet, decodeProtectedHeader, type JSONWebKeySet } from "jose";
import { describe, expect, it } from "vitest";
import { admin, call, countRows, movableClock } from "./helpers";
import { newLicense } from "./samples/licensing";

const moveClock = (await movableClock()).move;
const HOUR = 3_600_000;

const op = (name: string, body: Record<string, unknown>) =>
  call("POST", `/v1/license/${name}`, { body, key: "api_TestAdminKey00000000000000000000" });

/** Verifies a license file against the service's published keys; its payload. */
async function verifyFile(file: string): Promise<Record<string, unknown>> {
  const jwks = await call<JSONWebKeySet>("GET", "/v1/extensions/keys");
  expect(jwks.status).toBe(200);
  expect(decodeProtectedHeader(file).typ).toBe("license-file+jwt");
  const { payload } = await compactVerify(file, createLocalJWKSet(jwks.body));
  return JSON.parse(new TextDecoder().decode(payload)) as Record<string, unknown>;
}

function b64url(text: string): Uint8Array {
  const b64 = text.replace(/-/g, "+").replace(/_/g, "/");
  return Uint8Array.from(atob(b64 + "=".repeat((4 - (b64.length % 4)) % 4)), (c) => c.charCodeAt(0));
}

/** Opens an encrypted file's payload as an application would: HKDF(user key, machine id, "license-file"). */
async function decrypt(signed: Record<string, unknown>, userKey: string, machineId: string): Promise<unknown> {
  const utf8 = new TextEncoder();
  const ikm = await crypto.subtle.importKey(
    "raw",
    utf8.encode(userKey.replace(/-/g, "").toUpperCase()),
    "HKDF",
    false,
    ["deriveKey"],
  );
  const key = await crypto.subtle.deriveKey(
    { name: "HKDF", hash: "SHA-256", salt: utf8.encode(machineId), info: utf8.encode("license-file") },
    ikm,
    { name: "AES-GCM", length: 256 },
    false,
    ["decrypt"],
  );
  const plain = await crypto.subtle.decrypt(
    { name: "AES-GCM", iv: b64url(signed["iv"] as string) },
    key,
    b64url(signed["ciphertext"] as string),
  );
  return JSON.parse(new TextDecoder().decode(plain));
}

const seatsIn = (id: number) => env.LICENSE_SEATS.getByName(String(id));

describe("license files (POST /v1/license/checkout)", () => {
  it("signs a file for the machine with the license, its entitlements, the machine and a lifetime", async () => {
    const license = await newLicense("File");
    const res = await op("checkout", { userKey: license.userKey, machineId: "PC-1", clientId: "app", nonce: "n-1" });
    expect(res.status, res.text).toBe(200);
    const data = res.body;
    expect(data.encrypted).toBe(false);
    const payload = await verifyFile(data.licenseFile);
    expect(payload).toMatchObject({
      v: 1,
      license: { licenseId: license.licenseId },
      entitlements: { maxClients: 0, features: [] },
      machine: { machineId: "PC-1", clientId: "app" },
      issuedAt: data.issuedAt,
      expiresAt: data.expiresAt,
      nonce: "n-1",
    });
    expect((payload["license"] as Record<string, unknown>)["licenseKey"]).toBeUndefined();
    // Licensing:LicenseFileLifetime (30 days by default); a ttl shortens it, never lengthens it.
    expect(Date.parse(data.expiresAt) - Date.parse(data.issuedAt)).toBe(30 * 24 * HOUR);
    const short = await op("checkout", { userKey: license.userKey, machineId: "PC-1", ttl: 3600 });
    expect(Date.parse(short.body.expiresAt) - Date.parse(short.body.issuedAt)).toBe(HOUR);
    const long = await op("checkout", { userKey: license.userKey, machineId: "PC-1", ttl: 365 * 86_400 });
    expect(Date.parse(long.body.expiresAt) - Date.parse(long.body.issuedAt)).toBe(30 * 24 * HOUR);
    // Never past the license's expiry.
    const ends = new Date(Date.now() + 2 * 86_400_000).toISOString();
    await admin("PUT", "/v1/licenses", { license: { id: license.id, expireDate: ends } });
    const capped = await op("checkout", { userKey: license.userKey, machineId: "PC-1" });
    expect(capped.body.expiresAt).toBe(ends);
    // Each file is recorded for the console.
    const files = await env.DB.prepare("SELECT machine_id, encrypted FROM license_files WHERE license_id = ?")
      .bind(license.id)
      .all();
    expect(files.results).toHaveLength(4);
  });

  it("encrypts for the machine: readable with the user key and that machine id only", async () => {
    const license = await newLicense("File");
    const res = await op("checkout", { userKey: license.userKey, machineId: "PC-7", encrypt: true });
    expect(res.status, res.text).toBe(200);
    expect(res.body.encrypted).toBe(true);
    const signed = await verifyFile(res.body.licenseFile);
    expect(signed).toMatchObject({ v: 1, enc: "A256GCM" });
    expect(JSON.stringify(signed)).not.toContain(license.licenseId);
    expect(await decrypt(signed, license.userKey, "PC-7")).toMatchObject({
      license: { licenseId: license.licenseId },
      machine: { machineId: "PC-7" },
    });
    await expect(decrypt(signed, license.userKey, "PC-8")).rejects.toThrow();
  });

  it("refuses, changing nothing: an encrypted file without a machine, an unactivated machine, a seatless client", async () => {
    const file = await newLicense("File");
    const before = await countRows("license_files");
    const noMachine = await op("checkout", { userKey: file.userKey, encrypt: true });
    expect(noMachine.status).toBe(400);
    expect(noMachine.body["message"]).toContain("machineId");

    const activation = await newLicense("Activation", 1);
    const notActivated = await op("checkout", { userKey: activation.userKey, machineId: "PC-1" });
    expect(notActivated.status).toBe(529);
    expect(notActivated.body).toMatchObject({ reason: "notActivated" });
    const floating = await newLicense("Floating", 1);
    const seatless = await op("checkout", { userKey: floating.userKey, machineId: "m1", clientId: "c1" });
    expect(seatless.status).toBe(529);
    expect(await countRows("license_files")).toBe(before);
    expect(await seatsIn(floating.id).count(Date.now())).toBe(0);

    // Activated, the machine gets its file, ending no later than the activation.
    expect((await op("activate", { userKey: activation.userKey, machineId: "PC-1" })).status).toBe(200);
    const ok = await op("checkout", { userKey: activation.userKey, machineId: "PC-1" });
    expect(ok.status, ok.text).toBe(200);
    expect((await verifyFile(ok.body.licenseFile))["machine"]).toEqual({ machineId: "PC-1" });
    // A seat holder's file ends with its seat.
    const seat = await op("request", { userKey: floating.userKey, machineId: "m1", clientId: "c1" });
    const seatFile = await op("checkout", { userKey: floating.userKey, machineId: "m1", clientId: "c1" });
    expect(seatFile.body.expiresAt).toBe(seat.body.tokenExpireAt);
  });
});
