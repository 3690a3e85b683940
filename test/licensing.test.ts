/**
 * The licensing operations over REST (CONTRACT section 4): every rule and 52x answer, activation limits under
 * concurrency, floating seats in their Durable Object (exactly maxClients of 20 concurrent requests), the lease and
 * its reclaim by the alarm, user-key sign-in, the offline license key, traces and reports.
 */
import { runDurableObjectAlarm } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { compactVerify, createLocalJWKSet, type JSONWebKeySet } from "jose";
import { describe, expect, it } from "vitest";
import { clock } from "../src/kernel/clock";
import { admin, call, countRows, movableClock, queuedTraces } from "./helpers";
import { newLicense } from "./samples/licensing";
import { Messages, Reasons } from "../src/licensing/license-lookup";

const moveClock = (await movableClock()).move;

const op = (name: string, body: Record<string, unknown>, token?: string) =>
  call("POST", `/v1/license/${name}`, {
    body,
    ...(token ? { token } : { key: "api_TestAdminKey00000000000000000000" }),
  });

/** The message's machine-readable reason (issue 16: an additive `reason` beside SPEC's status and message). */
function reasonOf(message: string): string | undefined {
  const name = (Object.keys(Messages) as (keyof typeof Messages)[]).find((k) => Messages[k] === message);
  return name === undefined ? undefined : Reasons[name];
}

function expectLicensingError(
  res: { status: number; body: Record<string, unknown> },
  status: number,
  message: string,
): void {
  expect(res.status, JSON.stringify(res.body)).toBe(status);
  expect(res.body).toEqual({ success: false, code: status, message, reason: reasonOf(message) });
}

describe("refusals shared by every operation", () => {
  it("answers 523 to a missing key, 525 to an unknown one", async () => {
    expectLicensingError(await op("validate", {}), 523, "Invalid license key");
    expectLicensingError(await op("validate", { userKey: "   " }), 523, "Invalid license key");
    expectLicensingError(
      await op("activate", { userKey: "NOPE1-NOPE2-NOPE3-NOPE4-NOPE5", machineId: "x" }),
      525,
      "License key not found",
    );
  });

  it("refuses revoked, expired, tampered and other-product licenses in that order", async () => {
    const revoked = await newLicense("Activation");
    await admin("PUT", "/v1/licenses", { license: { id: revoked.id, revoked: true } });
    expectLicensingError(
      await op("activate", { userKey: revoked.userKey, machineId: "m" }),
      527,
      "The license has been revoked",
    );

    const expired = await newLicense("Activation");
    await admin("PUT", "/v1/licenses", { license: { id: expired.id, expireDate: "2020-01-01T00:00:00Z" } });
    expectLicensingError(await op("validate", { userKey: expired.userKey }), 527, "The license has expired");

    const tampered = await newLicense("Activation", 1);
    await env.DB.prepare("UPDATE licenses SET max_clients = 50, revoked = 1 WHERE id = ?").bind(tampered.id).run();
    expectLicensingError(
      await op("activate", { userKey: tampered.userKey, machineId: "m" }),
      535,
      "The license has been tampered",
    );

    const ok = await newLicense("File");
    expectLicensingError(
      await op("validate", { userKey: ok.userKey, productCode: "someone-else" }),
      527,
      "The license is not valid for this product",
    );
  });

  it("refuses a license changed behind the API's back after it was checked and found intact", async () => {
    // The isolate remembers HMACs it found right (license-core.ts); a change of a field or of the HMAC alone is
    // still seen at the next call.
    const fields = await newLicense("File");
    expect((await op("validate", { userKey: fields.userKey })).status).toBe(200);
    await env.DB.prepare("UPDATE licenses SET features = '[\"everything\"]' WHERE id = ?").bind(fields.id).run();
    expectLicensingError(await op("validate", { userKey: fields.userKey }), 535, "The license has been tampered");

    const hmac = await newLicense("File");
    expect((await op("validate", { userKey: hmac.userKey })).status).toBe(200);
    await env.DB.prepare("UPDATE licenses SET integrity = ? WHERE id = ?").bind("0".repeat(64), hmac.id).run();
    expectLicensingError(await op("validate", { userKey: hmac.userKey }), 535, "The license has been tampered");
    await env.DB.prepare("UPDATE licenses SET integrity = NULL WHERE id = ?").bind(hmac.id).run();
    expectLicensingError(await op("validate", { userKey: hmac.userKey }), 535, "The license has been tampered");
  });
});

describe("activation", () => {
  it("activates a machine, returns the same token on a repeat, and counts distinct machines", async () => {
    const lic = await newLicense("Activation", 2);
    expectLicensingError(
      await op("activate", { userKey: lic.userKey }),
      523,
      "The machine code is required for license activation",
    );
    const first = await op("activate", { userKey: lic.userKey, machineId: "PC-1", clientName: "Desk" });
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({
      success: true,
      code: 0,
      activeClientCount: 1,
      maxClientCount: 2,
      license: { licenseId: lic.licenseId, licensingMode: 1 },
    });
    expect(first.body["licenseToken"]).toMatch(/^actk_[0-9A-Za-z]{24}$/);
    const again = await op("activate", { userKey: lic.userKey, machineId: "PC-1" });
    expect(again.body["licenseToken"]).toBe(first.body["licenseToken"]);
    expect(again.body["activeClientCount"]).toBe(1);
    expect((await op("activate", { userKey: lic.userKey, machineId: "PC-2" })).body["activeClientCount"]).toBe(2);
    expectLicensingError(
      await op("activate", { userKey: lic.userKey, machineId: "PC-3" }),
      526,
      "The license has already been activated",
    );
    // Another client on an activated machine is not another machine.
    expect((await op("activate", { userKey: lic.userKey, machineId: "PC-2", clientId: "second-user" })).status).toBe(
      200,
    );

    expect((await op("deactivate", { userKey: lic.userKey, machineId: "PC-1" })).body).toMatchObject({
      licenseId: lic.licenseId,
      activeClientCount: 1,
    });
    expect((await op("activate", { userKey: lic.userKey, machineId: "PC-3" })).status).toBe(200);
    expectLicensingError(
      await op("deactivate", { userKey: lic.userKey, machineId: "PC-9" }),
      529,
      "The license has not been activated",
    );
    expectLicensingError(
      await op("deactivate", { userKey: lic.userKey, machineId: "PC-3", licenseToken: "actk_nothing" }),
      525,
      "License token not found",
    );
  });

  it("never exceeds maxClients under 20 concurrent activations, and counts a raced machine once", async () => {
    const lic = await newLicense("Activation", 3);
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) => op("activate", { userKey: lic.userKey, machineId: `M-${i}` })),
    );
    expect(results.filter((r) => r.status === 200)).toHaveLength(3);
    expect(results.filter((r) => r.status === 526)).toHaveLength(17);

    const same = await newLicense("Activation", 1);
    const raced = await Promise.all(
      Array.from({ length: 10 }, () => op("activate", { userKey: same.userKey, machineId: "ONE" })),
    );
    expect(raced.every((r) => r.status === 200)).toBe(true);
    expect(new Set(raced.map((r) => r.body["licenseToken"])).size).toBe(1);
    const tokens = await env.DB.prepare("SELECT count(*) AS n FROM license_tokens WHERE license_id = ?")
      .bind(same.id)
      .first<{ n: number }>();
    expect(tokens?.n).toBe(1);
  });

  it("refuses File and Floating licenses", async () => {
    expectLicensingError(
      await op("activate", { userKey: (await newLicense("File")).userKey, machineId: "m" }),
      529,
      "The license does not require activation",
    );
    expectLicensingError(
      await op("activate", { userKey: (await newLicense("Floating")).userKey, machineId: "m" }),
      529,
      "The license does not require activation",
    );
  });

  it("hands out a license key that verifies offline against the published keys", async () => {
    const lic = await newLicense("Activation");
    const res = await op("activate", { userKey: lic.userKey, machineId: "PC-7", clientId: "alice" });
    const jwks = (await call("GET", "/v1/extensions/keys")).body as unknown as JSONWebKeySet;
    const { payload, protectedHeader } = await compactVerify(res.body["license"].licenseKey, createLocalJWKSet(jwks));
    expect(protectedHeader.alg).toBe("ES256");
    const claims = JSON.parse(new TextDecoder().decode(payload));
    expect(claims).toMatchObject({
      licenseId: lic.licenseId,
      licenseType: "Standard",
      machineId: "PC-7",
      clientId: "alice",
      features: [],
    });
    // Licensing:LicenseKeyLifetime, 7 days by default.
    expect(claims.exp - claims.iat).toBe(7 * 86400);
  });
});

describe("validation", () => {
  it("answers NotActivated for a File license or when no machine is named, Activated for an activated machine", async () => {
    const file = await newLicense("File");
    const res = await op("validate", { userKey: file.userKey, nonce: "n-123" });
    expect(res.body).toMatchObject({ licenseId: file.licenseId, status: "NotActivated", nonce: "n-123" });
    expect(Date.parse(res.body["serverTime"])).toBeGreaterThan(0);

    const act = await newLicense("Activation", 1);
    expect((await op("validate", { userKey: act.userKey })).body["status"]).toBe("NotActivated");
    expectLicensingError(
      await op("validate", { userKey: act.userKey, machineId: "PC-1" }),
      529,
      "The license has not been activated",
    );
    const activated = await op("activate", { userKey: act.userKey, machineId: "PC-1" });
    const valid = await op("validate", { userKey: act.userKey, machineId: "PC-1" });
    expect(valid.body).toMatchObject({ status: "Activated", licenseToken: activated.body["licenseToken"] });
    expect(
      (await op("validate", { userKey: act.userKey, licenseToken: activated.body["licenseToken"] })).body["status"],
    ).toBe("Activated");
    expectLicensingError(
      await op("validate", { userKey: act.userKey, machineId: "PC-2" }),
      529,
      "The license has not been activated",
    );
  });
});

describe("floating seats", () => {
  it("grants exactly maxClients of 20 concurrent requests", async () => {
    const lic = await newLicense("Floating", 3);
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        op("request", { userKey: lic.userKey, machineId: `m${i}`, clientId: `c${i}` }),
      ),
    );
    expect(results.filter((r) => r.status === 200)).toHaveLength(3);
    const refused = results.filter((r) => r.status !== 200);
    expect(refused).toHaveLength(17);
    for (const r of refused)
      expectLicensingError(r, 528, "The maximum number of concurrent users for the license has been reached");
    const rows = await env.DB.prepare("SELECT count(*) AS n FROM license_tokens WHERE license_id = ? AND kind = 1")
      .bind(lic.id)
      .first<{ n: number }>();
    expect(rows?.n).toBe(3);
  });

  it("returns the seat a client already holds, keeps it alive with heartbeats, and frees it on release", async () => {
    const lic = await newLicense("Floating", 1);
    expectLicensingError(
      await op("request", { userKey: lic.userKey, machineId: "m1" }),
      523,
      "The client id is required for a floating license",
    );
    const seat = await op("request", { userKey: lic.userKey, machineId: "m1", clientId: "c1", clientName: "Designer" });
    expect(seat.body).toMatchObject({
      heartbeatInterval: 300,
      activeClientCount: 1,
      maxClientCount: 1,
      license: { licenseId: lic.licenseId },
    });
    const token = seat.body["licenseToken"] as string;
    expect(token).toMatch(/^fltk_/);
    expect((await op("request", { userKey: lic.userKey, machineId: "m1", clientId: "c1" })).body["licenseToken"]).toBe(
      token,
    );
    expectLicensingError(
      await op("request", { userKey: lic.userKey, machineId: "m2", clientId: "c2" }),
      528,
      "The maximum number of concurrent users for the license has been reached",
    );
    expect((await op("validate", { userKey: lic.userKey, licenseToken: token })).body["status"]).toBe("Activated");

    moveClock(5 * 60_000);
    const beat = await op("heartbeat", { licenseToken: token });
    expect(beat.status).toBe(200);
    expect(Date.parse(beat.body["tokenExpireAt"])).toBe(clock.now().getTime() + 2 * 300_000 + 30_000);

    expect((await op("release", { licenseToken: token })).body).toMatchObject({
      licenseId: lic.licenseId,
      activeClientCount: 0,
    });
    expectLicensingError(await op("release", { licenseToken: token }), 525, "License token not found");
    expectLicensingError(await op("heartbeat", { licenseToken: token }), 525, "License token not found");
    expect((await op("request", { userKey: lic.userKey, machineId: "m2", clientId: "c2" })).status).toBe(200);
  });

  it("refuses seats of non-floating licenses", async () => {
    expectLicensingError(
      await op("request", { userKey: (await newLicense("Activation")).userKey, machineId: "m", clientId: "c" }),
      529,
      "The license is not a floating license",
    );
  });

  it("lets a seat lapse after 2 x heartbeatInterval + 30 s, and its alarm reclaims it and writes it through", async () => {
    const lic = await newLicense("Floating", 1);
    const token = (await op("request", { userKey: lic.userKey, machineId: "m1", clientId: "c1" })).body[
      "licenseToken"
    ] as string;
    moveClock(2 * 300_000 + 31_000);
    expectLicensingError(await op("heartbeat", { licenseToken: token }), 527, "The license token has expired");
    // A new client may take the lapsed seat at once; the alarm then forgets the dead one and its token row.
    expect((await op("request", { userKey: lic.userKey, machineId: "m2", clientId: "c2" })).status).toBe(200);
    expect(await runDurableObjectAlarm(env.LICENSE_SEATS.getByName(String(lic.id)))).toBe(true);
    expectLicensingError(await op("heartbeat", { licenseToken: token }), 525, "License token not found");
    const traces = await env.DB.prepare("SELECT count(*) AS n FROM license_traces WHERE license_id = ? AND action = 9")
      .bind(lic.id)
      .first<{ n: number }>();
    expect(traces?.n).toBe(1);
    const rows = await env.DB.prepare("SELECT machine_id FROM license_tokens WHERE license_id = ?")
      .bind(lic.id)
      .all<{ machine_id: string }>();
    expect(rows.results.map((r) => r.machine_id)).toEqual(["m2"]);
  });

  it("counts only live seats in a heartbeat's activeClientCount, before the alarm has reclaimed a lapsed one", async () => {
    const lic = await newLicense("Floating", 2);
    const seat = async (machineId: string) =>
      (await op("request", { userKey: lic.userKey, machineId, clientId: "c" })).body["licenseToken"] as string;
    await seat("m1");
    const kept = await seat("m2");
    moveClock(300_000);
    expect((await op("heartbeat", { licenseToken: kept })).body).toMatchObject({ activeClientCount: 2 });
    // m1's seat lapses (2 x 300 s + 30 s after its grant); no alarm has run, so its row is still in the object.
    moveClock(331_000);
    expect((await op("heartbeat", { licenseToken: kept })).body).toMatchObject({
      activeClientCount: 1,
      maxClientCount: 2,
    });
  });

  it("keeps a seat whose heartbeats moved it past the alarm set at its grant, and reclaims it once they stop", async () => {
    const lic = await newLicense("Floating", 1);
    const seatsOf = env.LICENSE_SEATS.getByName(String(lic.id));
    const token = (await op("request", { userKey: lic.userKey, machineId: "m1", clientId: "c1" })).body[
      "licenseToken"
    ] as string;
    // A heartbeat moves the seat's expiry later; the alarm set at the grant (630 s) stays where it was.
    moveClock(300_000);
    expect((await op("heartbeat", { licenseToken: token })).status).toBe(200);
    moveClock(400_000);
    // That alarm finds the seat alive, keeps it, and sets the next alarm at its new expiry.
    expect(await runDurableObjectAlarm(seatsOf)).toBe(true);
    expect((await op("heartbeat", { licenseToken: token })).status).toBe(200);
    // The heartbeats stop: the next alarm reclaims the seat.
    moveClock(2 * 300_000 + 31_000);
    expect(await runDurableObjectAlarm(seatsOf)).toBe(true);
    expectLicensingError(await op("heartbeat", { licenseToken: token }), 525, "License token not found");
  });

  it("frees a seat when an administrator deletes its token or the license", async () => {
    const lic = await newLicense("Floating", 1);
    await op("request", { userKey: lic.userKey, machineId: "m1", clientId: "c1" });
    const tokens = await admin("GET", `/v1/licenses/${lic.licenseId}/tokens`);
    const tokenId = tokens.body["licenseTokens"][0].id;
    expect((await admin("DELETE", `/v1/licenses/${lic.licenseId}/tokens/${tokenId}`)).status).toBe(200);
    expect((await op("request", { userKey: lic.userKey, machineId: "m2", clientId: "c2" })).status).toBe(200);

    expect((await admin("DELETE", `/v1/licenses/${lic.licenseId}`)).status).toBe(200);
    expect(await env.LICENSE_SEATS.getByName(String(lic.id)).count(Date.now())).toBe(0);
  });
});

describe("user-key sign-in", () => {
  it("gives an application a bearer token for its own license only", async () => {
    const lic = await newLicense("Activation");
    const other = await newLicense("Activation");
    const login = await call("POST", "/v1/auth/login", { body: { userKey: lic.userKey } });
    expect(login.status).toBe(200);
    const token = login.body["token"] as string;
    expect((await call("GET", "/v1/auth/session", { token })).body).toMatchObject({
      user: lic.licenseId,
      roles: ["Application"],
    });
    expect((await op("activate", { userKey: lic.userKey, machineId: "PC" }, token)).status).toBe(200);
    expectLicensingError(
      await op("activate", { userKey: other.userKey, machineId: "PC" }, token),
      527,
      "The license is not valid for this product",
    );
    expectLicensingError(await op("validate", { userKey: other.userKey }, token), 527, Messages.wrongProduct);
    // Heartbeat and release name no user key: the license is the floating token's, and it must be the token's own.
    const floating = await newLicense("Floating", 2);
    const seat = (await op("request", { userKey: floating.userKey, machineId: "PC", clientId: "c" })).body;
    const seatToken = seat["licenseToken"] as string;
    expectLicensingError(await op("heartbeat", { licenseToken: seatToken }, token), 527, Messages.wrongProduct);
    expectLicensingError(await op("release", { licenseToken: seatToken }, token), 527, Messages.wrongProduct);
    expect((await op("heartbeat", { licenseToken: seatToken })).status).toBe(200);
    // Its token opens no management route.
    expect((await call("GET", "/v1/licenses", { token })).status).toBe(401);
  });

  it("answers 401 Invalid user key. to an unknown key, and to a revoked license's key (issue 14: a failed attempt)", async () => {
    for (const userKey of ["WRONG-KEY", ""]) {
      const res = await call("POST", "/v1/auth/login", { body: { userKey } });
      expect(res.status).toBe(401);
      expect(res.body).toEqual({ success: false, code: 401, message: "Invalid user key.", reason: "invalidUserKey" });
    }
    const revoked = await newLicense("File");
    await admin("PUT", "/v1/licenses", { license: { id: revoked.id, revoked: true } });
    const login = await call("POST", "/v1/auth/login", { body: { userKey: revoked.userKey } });
    expect(login.status).toBe(401);
    expect(login.body).toEqual({ success: false, code: 401, message: "Invalid user key.", reason: "licenseRevoked" });
    // A caller with another credential still learns why.
    expectLicensingError(await op("validate", { userKey: revoked.userKey }), 527, "The license has been revoked");
  });

  it("judges the license by the license policy: an expired one is refused, a tampered one signs in and learns 535", async () => {
    const expired = await newLicense("File");
    await admin("PUT", "/v1/licenses", { license: { id: expired.id, expireDate: "2020-01-01T00:00:00Z" } });
    const refused = await call("POST", "/v1/auth/login", { body: { userKey: expired.userKey } });
    expect(refused.body).toEqual({ success: false, code: 401, message: "Invalid user key.", reason: "licenseExpired" });
    // Changed behind the API's back, even to revoked: the policy says tampered first, and a tampered license signs
    // in (docs/decisions.md), its licensing calls answering why.
    const tampered = await newLicense("Activation");
    await env.DB.prepare("UPDATE licenses SET revoked = 1 WHERE id = ?").bind(tampered.id).run();
    const login = await call("POST", "/v1/auth/login", { body: { userKey: tampered.userKey } });
    expect(login.status).toBe(200);
    const token = login.body["token"] as string;
    expectLicensingError(
      await op("validate", { userKey: tampered.userKey }, token),
      535,
      "The license has been tampered",
    );
  });
});

describe("traces", () => {
  it("records every operation but heartbeat on licenses that trace, with the client's address", async () => {
    const lic = await newLicense("Floating", 2);
    const headers = { "cf-connecting-ip": "203.0.113.9" };
    const seat = await call("POST", "/v1/license/request", {
      key: "api_TestAdminKey00000000000000000000",
      headers,
      body: { userKey: lic.userKey, machineId: "m", clientId: "c" },
    });
    await call("POST", "/v1/license/heartbeat", {
      key: "api_TestAdminKey00000000000000000000",
      headers,
      body: { licenseToken: seat.body["licenseToken"] },
    });
    await call("POST", "/v1/license/release", {
      key: "api_TestAdminKey00000000000000000000",
      headers,
      body: { licenseToken: seat.body["licenseToken"] },
    });
    expect(await queuedTraces(lic.id, 2)).toEqual([3, 4]);
    const traces = await admin(
      "GET",
      `/v1/license-traces?filter=${encodeURIComponent(`licenseId == "${lic.licenseId}"`)}&sort=id`,
    );
    expect(
      traces.body["licenseTraces"].map((t: { action: number; clientIp: string }) => [t.action, t.clientIp]),
    ).toEqual([
      [3, "203.0.113.9"],
      [4, "203.0.113.9"],
    ]);

    const quiet = await newLicense("File");
    await admin("PUT", "/v1/licenses", { license: { id: quiet.id, trace: false } });
    await op("validate", { userKey: quiet.userKey });
    // A traced operation queued after it: once its trace is written, the quiet license's would have been too.
    const marker = await newLicense("File");
    await op("validate", { userKey: marker.userKey });
    expect(await queuedTraces(marker.id, 1)).toEqual([2]);
    expect(
      (await admin("GET", `/v1/license-traces?filter=${encodeURIComponent(`licenseId == "${quiet.licenseId}"`)}`)).body[
        "totalLicenseTracesCount"
      ],
    ).toBe(0);
  });
});

describe("reports", () => {
  it("stores a report with its properties and license", async () => {
    const lic = await newLicense("File");
    const res = await call("POST", "/v1/report", {
      key: "api_TestAdminKey00000000000000000000",
      body: {
        name: "ExceptionReport",
        uid: "r-1",
        version: "1.2.3",
        userKey: lic.userKey,
        machineId: "PC",
        content: "boom",
        properties: [{ name: "os", value: "Windows 11" }],
      },
    });
    expect(res.status, res.text).toBe(200);
    const [report] = (await admin("GET", `/v1/reports?filter=${encodeURIComponent(`id == ${res.body["reportId"]}`)}`))
      .body["reports"];
    expect(report).toMatchObject({
      name: "ExceptionReport",
      uid: "r-1",
      licenseId: lic.licenseId,
      content: "boom",
      properties: [{ name: "os", value: "Windows 11" }],
    });
    const anonymous = await call("POST", "/v1/report", {
      key: "api_TestAdminKey00000000000000000000",
      body: { name: "LicenseReport", userKey: "UNKNOWN", content: "x" },
    });
    expect(anonymous.status).toBe(200);
  });

  it("keeps content over 256 KiB in R2 and refuses a body over 4 MiB with 413", async () => {
    const big = "x".repeat(300 * 1024);
    const res = await call("POST", "/v1/report", {
      key: "api_TestAdminKey00000000000000000000",
      body: { name: "ExceptionReport", content: big },
    });
    expect(res.status).toBe(200);
    const row = await env.DB.prepare("SELECT content, content_key FROM reports WHERE id = ?")
      .bind(res.body["reportId"])
      .first<{ content: string | null; content_key: string }>();
    expect(row?.content).toBeNull();
    expect(await (await env.ARTIFACTS!.get(row!.content_key))!.text()).toBe(big);

    const before = await countRows("reports");
    const huge = await call("POST", "/v1/report", {
      key: "api_TestAdminKey00000000000000000000",
      body: { name: "ExceptionReport", content: "y".repeat(4 * 1024 * 1024 + 10) },
    });
    expect(huge.status).toBe(413);
    expect(huge.body).toMatchObject({ success: false, code: 413 });
    expect(await countRows("reports")).toBe(before);
  });
});
