/**
 * Offline licensing on the service's side (CONTRACT section 11): license files from POST /v1/license/checkout
 * (signed with the JWKS's keys, bound to the machine, with a lifetime, optionally encrypted for the machine), the
 * refusals that change nothing, borrowed floating seats held by the license's Durable Object until the borrow ends
 * (a clock the test controls), returned early, never more than the seats under concurrency.
 */
import { runDurableObjectAlarm } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { compactVerify, createLocalJWKSet, decodeProtectedHeader, type JSONWebKeySet } from "jose";
import { describe, expect, it, vi } from "vitest";
import { admin, call, countRows, movableClock, setSetting } from "./helpers";
import { newLicense } from "./samples/licensing";
import { newProduct } from "./samples/commerce";
import { emitted, settledTypes, subscribe } from "./webhooks-kit";
import { housekeeping } from "../src/app/housekeeping";

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
    // Kept for Licensing:TraceRetentionDays (365) after they expire, then pruned by the cron.
    const latest = Date.parse(long.body.expiresAt);
    await housekeeping(env, new Date(Date.parse(short.body.expiresAt) + 364 * 86_400_000));
    expect(await countRows(`license_files WHERE license_id = ${license.id}`)).toBe(4);
    expect((await housekeeping(env, new Date(latest + 366 * 86_400_000)))["licenseFiles"]).toBeGreaterThanOrEqual(4);
    expect(await countRows(`license_files WHERE license_id = ${license.id}`)).toBe(0);
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

describe("borrowed floating seats (POST /v1/license/borrow, /return)", () => {
  const borrow = (userKey: string, n: number, hours = 2) =>
    op("borrow", { userKey, machineId: `m${n}`, clientId: `c${n}`, hours });
  const request = (userKey: string, n: number) => op("request", { userKey, machineId: `m${n}`, clientId: `c${n}` });

  it("holds the seat with no heartbeat until the borrow ends, with a file that ends with it", async () => {
    const lic = await newLicense("Floating", 2);
    const borrowed = await borrow(lic.userKey, 1);
    expect(borrowed.status, borrowed.text).toBe(200);
    expect(Date.parse(borrowed.body.borrowUntil) - Date.parse(borrowed.body.issuedAt)).toBe(2 * HOUR);
    expect(borrowed.body.expiresAt).toBe(borrowed.body.borrowUntil);
    expect(await verifyFile(borrowed.body.licenseFile)).toMatchObject({
      machine: { machineId: "m1", clientId: "c1" },
      borrow: { until: borrowed.body.borrowUntil },
      expiresAt: borrowed.body.borrowUntil,
    });
    const live = await request(lic.userKey, 2);
    expect(live.status).toBe(200);
    expect((await request(lic.userKey, 3)).status).toBe(528);
    // A heartbeat of the borrowed seat never shortens it.
    const beat = await op("heartbeat", { licenseToken: borrowed.body.licenseToken });
    expect(beat.body.tokenExpireAt).toBe(borrowed.body.borrowUntil);
    // Nearly two hours on, the live seat kept alive by its heartbeats, the borrowed one by nothing.
    for (let i = 0; i < 11; i++) {
      moveClock(10 * 60_000);
      expect((await op("heartbeat", { licenseToken: live.body.licenseToken })).status).toBe(200);
    }
    expect((await request(lic.userKey, 3)).status).toBe(528);
    // The borrow ends: its seat is free, the alarm reclaims it (token row gone), the live seat stays.
    moveClock(10 * 60_000 + 1000);
    expect((await op("heartbeat", { licenseToken: live.body.licenseToken })).status).toBe(200);
    expect((await request(lic.userKey, 3)).status).toBe(200);
    expect(await runDurableObjectAlarm(seatsIn(lic.id))).toBe(true);
    const tokens = await env.DB.prepare(
      "SELECT machine_id FROM license_tokens WHERE license_id = ? ORDER BY machine_id",
    )
      .bind(lic.id)
      .all<{ machine_id: string }>();
    expect(tokens.results.map((t) => t.machine_id)).toEqual(["m2", "m3"]);
  });

  it("frees a returned seat at once and records the return", async () => {
    const lic = await newLicense("Floating", 1);
    const borrowed = await borrow(lic.userKey, 1, 24);
    expect(borrowed.status, borrowed.text).toBe(200);
    expect((await request(lic.userKey, 2)).status).toBe(528);
    const returned = await op("return", { licenseToken: borrowed.body.licenseToken });
    expect(returned.status, returned.text).toBe(200);
    expect(returned.body).toMatchObject({ licenseId: lic.licenseId, activeClientCount: 0, maxClientCount: 1 });
    expect((await request(lic.userKey, 2)).status).toBe(200);
    const file = await env.DB.prepare("SELECT returned_at FROM license_files WHERE license_id = ?")
      .bind(lic.id)
      .first<{ returned_at: string | null }>();
    expect(file?.returned_at).not.toBeNull();
    // By user key, machine and client too.
    const again = await borrow(lic.userKey, 3, 1);
    expect(again.status).toBe(528);
    expect((await op("release", { licenseToken: (await request(lic.userKey, 2)).body.licenseToken })).status).toBe(200);
    expect((await borrow(lic.userKey, 3, 1)).status).toBe(200);
    const byKey = await op("return", { userKey: lic.userKey, machineId: "m3", clientId: "c3" });
    expect(byKey.status, byKey.text).toBe(200);
    expect(await seatsIn(lic.id).count(Date.now())).toBe(0);
  });

  it("lists a license's files and borrowed seats; an administrator returns a borrowed seat early", async () => {
    const lic = await newLicense("Floating", 1);
    expect((await borrow(lic.userKey, 1, 8)).status).toBe(200);
    expect(
      (await op("checkout", { userKey: lic.userKey, machineId: "m1", clientId: "c1", encrypt: true })).status,
    ).toBe(200);
    const list = async () =>
      (await admin("GET", `/v1/licenses/${lic.licenseId}/files?sort=id`)).body["licenseFiles"] as Record<
        string,
        unknown
      >[];
    const [borrowed, checkedOut] = await list();
    expect(borrowed).toMatchObject({ licenseId: lic.licenseId, machineId: "m1", borrowed: true });
    expect(borrowed!["returnedAt"] ?? null).toBeNull();
    expect(checkedOut).toMatchObject({ encrypted: true, borrowed: false });
    expect(checkedOut!["borrowUntil"] ?? null).toBeNull();
    // A file that is no borrow cannot be returned; the borrow can, once.
    expect((await admin("POST", `/v1/licenses/${lic.licenseId}/files/${checkedOut!["id"]}/return`)).status).toBe(400);
    const returned = await admin("POST", `/v1/licenses/${lic.licenseId}/files/${borrowed!["id"]}/return`);
    expect(returned.status, returned.text).toBe(200);
    expect(await seatsIn(lic.id).count(Date.now())).toBe(0);
    expect((await request(lic.userKey, 2)).status).toBe(200);
    const [after] = await list();
    expect(after).toMatchObject({ borrowed: false });
    expect(after!["returnedAt"]).not.toBeNull();
    expect((await admin("POST", `/v1/licenses/${lic.licenseId}/files/${borrowed!["id"]}/return`)).status).toBe(400);
  });

  it("refuses hours outside 1..Licensing:MaxBorrowHours and a license that is not floating, changing nothing", async () => {
    const lic = await newLicense("Floating", 2);
    const files = await countRows("license_files");
    for (const hours of [0, 169, 1.5]) {
      const res = await borrow(lic.userKey, 1, hours);
      expect(res.status, `hours ${hours}`).toBe(400);
      expect(res.body["message"]).toMatch(/hours/);
    }
    expect(await seatsIn(lic.id).count(Date.now())).toBe(0);
    expect(await countRows("license_files")).toBe(files);
    const activation = await newLicense("Activation", 2);
    const notFloating = await borrow(activation.userKey, 1);
    expect(notFloating.status).toBe(529);
    expect(notFloating.body).toMatchObject({ reason: "notFloating" });
    // The maximum itself is allowed.
    expect((await borrow(lic.userKey, 1, 168)).status).toBe(200);
  });

  it("never lends more seats than the license has, however many borrow at once", async () => {
    const lic = await newLicense("Floating", 3);
    const answers = await Promise.all(Array.from({ length: 10 }, (_, i) => borrow(lic.userKey, i, 4)));
    expect(answers.filter((a) => a.status === 200)).toHaveLength(3);
    expect(answers.filter((a) => a.status === 528)).toHaveLength(7);
    expect(await seatsIn(lic.id).count(Date.now())).toBe(3);
    expect(await countRows(`license_files WHERE license_id = ${lic.id}`)).toBe(3);
  });
});

describe("offline grace in signed validations (Licensing:OfflineGraceDays)", () => {
  it("tells every validation and signs it in the license key", async () => {
    const lic = await newLicense("File");
    const payloadOf = (key: string) =>
      JSON.parse(new TextDecoder().decode(b64url(key.split(".")[1]!))) as Record<string, unknown>;
    const first = await op("validate", { userKey: lic.userKey });
    expect(first.body.offlineGraceDays).toBe(7);
    expect(payloadOf(first.body.license.licenseKey)["offlineGraceDays"]).toBe(7);
    await setSetting("Licensing:OfflineGraceDays", "3");
    try {
      const again = await op("validate", { userKey: lic.userKey });
      expect(again.body.offlineGraceDays).toBe(3);
      expect(payloadOf(again.body.license.licenseKey)["offlineGraceDays"]).toBe(3);
    } finally {
      await setSetting("Licensing:OfflineGraceDays", null);
    }
  });
});

describe("check-in intervals (checkInDays, lastCheckIn, license.check-in-overdue)", () => {
  /** The license's lastCheckIn once the trace writer (a queue consumer, up to its 5 s batch window) has written it. */
  async function lastCheckIn(id: number, after: string | null = null): Promise<string> {
    return vi.waitFor(
      async () => {
        const res = await admin("GET", `/v1/licenses?filter=${encodeURIComponent(`id == ${id}`)}&select=lastCheckIn`);
        const at = res.body["licenses"][0].lastCheckIn as string | null;
        if (!at || (after !== null && at <= after)) throw new Error(`lastCheckIn ${at}`);
        return at;
      },
      { timeout: 15_000, interval: 100 },
    );
  }

  it("copies the template's interval, keeps the last check-in off the request path, emits overdue once per period", async () => {
    const productId = await newProduct();
    const template = await admin("POST", "/v1/license-templates", {
      licenseTemplate: { name: "Checks in", productId, licensingMode: "File", checkInDays: 3 },
    });
    expect(template.status, template.text).toBe(200);
    // Traces off: the check-in is kept all the same.
    const made = await admin("POST", "/v1/licenses", {
      license: { productId, templateId: template.body["licenseTemplateId"], trace: false },
    });
    expect(made.status, made.text).toBe(200);
    const id = made.body["id"] as number;
    const record = await admin(
      "GET",
      `/v1/licenses?filter=${encodeURIComponent(`id == ${id}`)}&select=userKey,checkInDays,lastCheckIn`,
    );
    const license = record.body["licenses"][0];
    expect(license).toMatchObject({ checkInDays: 3 });
    expect(license.lastCheckIn ?? null).toBeNull();
    const subscription = await subscribe({ eventTypes: ["license.check-in-overdue"] });

    // Never checked in: not overdue.
    expect((await housekeeping(env, new Date(Date.now() + 10 * 86_400_000)))["checkInOverdue"]).toBe(0);
    expect((await op("validate", { userKey: license.userKey })).status).toBe(200);
    const first = await lastCheckIn(id);
    // Within the interval: nothing; past it: one event, and no other at later runs of the same period.
    const checkedIn = Date.parse(first);
    expect((await housekeeping(env, new Date(checkedIn + 2 * 86_400_000)))["checkInOverdue"]).toBe(0);
    expect((await housekeeping(env, new Date(checkedIn + 3 * 86_400_000 + 60_000)))["checkInOverdue"]).toBe(1);
    const [event] = await emitted(subscription.id, "license.check-in-overdue");
    expect(event!.data).toMatchObject({
      id,
      checkInDays: 3,
      checkIn: { lastCheckIn: first, checkInDays: 3, overdueSince: new Date(checkedIn + 3 * 86_400_000).toISOString() },
    });
    expect((await housekeeping(env, new Date(checkedIn + 5 * 86_400_000)))["checkInOverdue"]).toBe(0);
    expect(await settledTypes(subscription.id)).toEqual(["license.check-in-overdue"]);

    // A later check-in opens a new period, which is overdue in turn, once.
    moveClock(4 * 86_400_000);
    expect((await op("validate", { userKey: license.userKey })).status).toBe(200);
    const second = Date.parse(await lastCheckIn(id, first));
    expect((await housekeeping(env, new Date(second + 4 * 86_400_000)))["checkInOverdue"]).toBe(1);
    expect((await housekeeping(env, new Date(second + 6 * 86_400_000)))["checkInOverdue"]).toBe(0);
    await emitted(subscription.id, "license.check-in-overdue", 2);
  });
});
