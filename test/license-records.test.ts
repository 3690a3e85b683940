/**
 * The records around licenses, driven through the API: license tokens (issued by hand within maxClients, also
 * under concurrency; digests only; both forms of `{licenseId}`), license traces (list, delete by age and license),
 * received reports (list, delete) and the geolocation of both against the real fake service of
 * test/global-setup.ts.
 */
import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { GeoLookupError, lookupGeoLocation } from "../src/licensing/geo-lookup";
import { ADMIN, admin, call, countRows, setSetting } from "./helpers";
import type { JsonBody } from "./json-body.ts";
import { newLicense, newReport } from "./samples/licenses";

const DAY = 86_400_000;
const GEO_TEMPLATE = String(env["Application__GeoLocationService"]);
const GEO_BASE = GEO_TEMPLATE.replace(/\/geo\/\{ip\}$/, "");
const OSLO = {
  country: "NO",
  region: "Oslo",
  city: "Oslo",
  latitude: "59.91",
  longitude: "10.75",
  timezone: "Europe/Oslo",
};

async function issue(licenseId: string | number, licenseToken: Record<string, unknown>) {
  return admin("POST", `/v1/licenses/${licenseId}/tokens`, { licenseToken });
}

async function sha256Hex(text: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

/** A trace row written as the licensing runtime would. */
async function insertTrace(values: {
  licenseId?: number | null;
  action?: number;
  clientIp?: string | null;
  createdAt?: string;
  geoLocation?: string;
}) {
  const row = await env.DB.prepare(
    "INSERT INTO license_traces (license_id, action, client_ip, machine_id, geo_location, created_at) VALUES (?, ?, ?, 'M', ?, ?) RETURNING id",
  )
    .bind(
      values.licenseId ?? null,
      values.action ?? 0,
      values.clientIp ?? null,
      values.geoLocation ?? null,
      values.createdAt ?? new Date().toISOString(),
    )
    .first<{ id: number }>();
  return row!.id;
}

async function geoOf(table: "license_traces" | "reports", id: number): Promise<unknown> {
  const row = await env.DB.prepare(`SELECT geo_location AS geo FROM ${table} WHERE id = ?`)
    .bind(id)
    .first<{ geo: string | null }>();
  return row?.geo ? JSON.parse(row.geo) : null;
}

async function lookups(): Promise<string[]> {
  return (await (await fetch(`${GEO_BASE}/lookups`)).json()) as string[];
}

describe("license tokens", () => {
  it("issues an activation token once, stores only its digest and lists its prefix", async () => {
    const { id, licenseId } = await newLicense({ licensingMode: "Activation" });
    const res = await issue(licenseId, { machineId: "M-1", clientId: "app", clientName: "Office PC" });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toEqual({
      success: true,
      code: 0,
      licenseTokenId: expect.any(Number),
      token: expect.stringMatching(/^actk_[0-9A-Za-z]{24}$/),
    });
    const token = res.body["token"] as string;
    const stored = await env.DB.prepare("SELECT token_digest, token_prefix FROM license_tokens WHERE id = ?")
      .bind(res.body["licenseTokenId"])
      .first();
    expect(stored).toEqual({ token_digest: await sha256Hex(token), token_prefix: `${token.slice(0, 9)}…` });

    const list = await admin("GET", `/v1/licenses/${licenseId}/tokens`);
    expect(list.body["totalLicenseTokensCount"]).toBe(1);
    expect(list.body["licenseTokens"][0]).toMatchObject({
      id: res.body["licenseTokenId"],
      token: `${token.slice(0, 9)}…`,
      kind: 0,
      licenseId,
      machineId: "M-1",
      clientId: "app",
      clientName: "Office PC",
    });
    expect(JSON.stringify(list.body)).not.toContain(token);
    expect((await admin("GET", `/v1/licenses/${id}/tokens`)).body["licenseTokens"]).toEqual(list.body["licenseTokens"]);
  });

  it("never exceeds maxClients under concurrent requests: one conditional statement", async () => {
    const { licenseId } = await newLicense({ licensingMode: "Activation", maxClients: 3 });
    const answers = await Promise.all(
      Array.from({ length: 10 }, (_, i) => issue(licenseId, { machineId: `machine-${i}` })),
    );
    expect(answers.filter((a) => a.status === 200)).toHaveLength(3);
    const refused = answers.filter((a) => a.status === 400);
    expect(refused).toHaveLength(7);
    expect(refused[0]!.body["message"]).toBe(
      `License ${licenseId} has reached its limit of 3 clients (machines holding a live token)`,
    );
    const count = await admin("GET", `/v1/licenses/${licenseId}/tokens?countOnly=true`);
    expect(count.body).toEqual({ success: true, code: 0, totalLicenseTokensCount: 3 });
    const license = (await admin("GET", `/v1/licenses?filter=${encodeURIComponent(`licenseId == "${licenseId}"`)}`))
      .body["licenses"][0];
    expect(license).toMatchObject({ status: "Activated", activeClientCount: 3 });

    const holder = answers.find((a) => a.status === 200)!;
    const machineOfHolder = (await admin("GET", `/v1/license-tokens?filter=id==${holder.body["licenseTokenId"]}`)).body[
      "licenseTokens"
    ][0].machineId;
    expect((await issue(licenseId, { machineId: machineOfHolder, clientId: "another app" })).status).toBe(200);
  });

  it("counts only live tokens against the limit, and 0 means unlimited", async () => {
    const { id, licenseId } = await newLicense({ licensingMode: "Activation", maxClients: 1 });
    const now = new Date().toISOString();
    await env.DB.prepare(
      "INSERT INTO license_tokens (token_digest, token_prefix, kind, license_id, machine_id, issue_date, expire_date, created_at, updated_at) VALUES ('old', 'x', 0, ?, 'gone', ?, '2020-01-01T00:00:00.000Z', ?, ?)",
    )
      .bind(id, now, now, now)
      .run();
    expect(
      (await issue(licenseId, { machineId: "new", expireDate: new Date(Date.now() + DAY).toISOString() })).status,
    ).toBe(200);
    expect((await issue(licenseId, { machineId: "third" })).status).toBe(400);

    const unlimited = await newLicense({ licensingMode: "Activation", maxClients: 0 });
    const answers = await Promise.all(
      Array.from({ length: 6 }, (_, i) => issue(unlimited.licenseId, { machineId: `m${i}` })),
    );
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200, 200, 200]);
  });

  it("refuses licenses that cannot be activated by hand and bad requests, writing nothing", async () => {
    const before = await countRows("license_tokens");
    const file = await newLicense();
    expect((await issue(file.licenseId, { machineId: "M" })).body["message"]).toBe(
      `License ${file.licenseId} is a File license: it needs no activation`,
    );
    const floating = await newLicense({ licensingMode: "Floating" });
    expect((await issue(floating.licenseId, { machineId: "M" })).body["message"]).toMatch(/is a Floating license/);
    const expired = await newLicense({ licensingMode: "Activation", expireDate: "2020-01-01T00:00:00Z" });
    expect((await issue(expired.licenseId, { machineId: "M" })).body["message"]).toBe(
      `License ${expired.licenseId} has expired`,
    );
    const revoked = await newLicense({ licensingMode: "Activation", revoked: true });
    expect((await issue(revoked.licenseId, { machineId: "M" })).body["message"]).toBe(
      `License ${revoked.licenseId} is revoked`,
    );
    const tampered = await newLicense({ licensingMode: "Activation", maxClients: 1 });
    await env.DB.prepare("UPDATE licenses SET max_clients = 0 WHERE id = ?").bind(tampered.id).run();
    expect((await issue(tampered.licenseId, { machineId: "M" })).body["message"]).toMatch(/has been tampered with/);

    const usable = await newLicense({ licensingMode: "Activation" });
    expect(
      (await issue(usable.licenseId, { machineId: "M", expireDate: "2020-01-01T00:00:00Z" })).body["message"],
    ).toBe("expireDate must be in the future");
    const noMachine = await issue(usable.licenseId, { clientName: "x" });
    expect(noMachine.status).toBe(400);
    expect(Object.keys(noMachine.body["errors"])).toEqual(["licenseToken.machineId"]);
    expect((await issue("licFFFFFFFF", { machineId: "M" })).body).toEqual({
      success: false,
      code: 400,
      message: "License licFFFFFFFF not found",
    });
    expect((await issue(999_999, { machineId: "M" })).body["message"]).toBe("License 999999 not found");
    expect(await countRows("license_tokens")).toBe(before);
  });

  it("lists every token with the list conventions and countOnly, filtering on the lic… id", async () => {
    const a = await newLicense({ licensingMode: "Activation" });
    const b = await newLicense({ licensingMode: "Activation" });
    for (const machineId of ["zeta", "alpha"]) expect((await issue(a.licenseId, { machineId })).status).toBe(200);
    expect((await issue(b.licenseId, { machineId: "beta" })).status).toBe(200);

    const filter = encodeURIComponent(`licenseId == "${a.licenseId}" || licenseId == "${b.licenseId}"`);
    const all = await admin(
      "GET",
      `/v1/license-tokens?filter=${filter}&sort=machineId&select=machineId,licenseId,token`,
    );
    expect(all.body["licenseTokens"].map((t: JsonBody) => [t.machineId, t.licenseId])).toEqual([
      ["alpha", a.licenseId],
      ["beta", b.licenseId],
      ["zeta", a.licenseId],
    ]);
    expect(Object.keys(all.body["licenseTokens"][0]).sort()).toEqual(["licenseId", "machineId", "token"]);
    // Descending by lic… id, then by machine: the second row is a's first machine when b sorts above a, else a's last.
    const aFirst = a.licenseId > b.licenseId;
    const paged = await admin(
      "GET",
      `/v1/license-tokens?filter=${filter}&sort=-licenseId,machineId&skip=1&take=1&select=machineId`,
    );
    expect(paged.body).toEqual({
      success: true,
      code: 0,
      licenseTokens: [{ machineId: aFirst ? "zeta" : "alpha" }],
      totalLicenseTokensCount: 3,
    });
    const counted = await admin("GET", `/v1/license-tokens?filter=${filter}&countOnly=true`);
    expect(counted.body).toEqual({ success: true, code: 0, totalLicenseTokensCount: 3 });
    const nested = await admin(
      "GET",
      `/v1/licenses/${a.licenseId}/tokens?filter=${encodeURIComponent('machineId.StartsWith("z")')}`,
    );
    expect(nested.body["licenseTokens"].map((t: JsonBody) => t.machineId)).toEqual(["zeta"]);
  });

  it("deletes a token of the license named in the path only", async () => {
    const a = await newLicense({ licensingMode: "Activation" });
    const b = await newLicense({ licensingMode: "Activation" });
    const token = (await issue(a.licenseId, { machineId: "M" })).body["licenseTokenId"];
    const wrong = await admin("DELETE", `/v1/licenses/${b.licenseId}/tokens/${token}`);
    expect(wrong.body).toEqual({ success: false, code: 400, message: `LicenseToken ${token} not found` });
    expect((await admin("DELETE", `/v1/licenses/${a.id}/tokens/${token}`)).body).toEqual({ success: true, code: 0 });
    expect(
      (await admin("GET", `/v1/licenses/${a.licenseId}/tokens?countOnly=true`)).body["totalLicenseTokensCount"],
    ).toBe(0);
    expect((await admin("DELETE", `/v1/licenses/licFFFFFFFF/tokens/${token}`)).body["message"]).toBe(
      "License licFFFFFFFF not found",
    );
  });
});

describe("license traces", () => {
  let first: { id: number; licenseId: string };
  let second: { id: number; licenseId: string };
  beforeAll(async () => {
    first = await newLicense();
    second = await newLicense();
    await insertTrace({ licenseId: first.id, action: 0, createdAt: "2030-01-01T00:00:00.000Z" });
    await insertTrace({ licenseId: first.id, action: 2, createdAt: "2030-02-01T00:00:00.000Z" });
    await insertTrace({ licenseId: second.id, action: 9, createdAt: "2030-03-01T00:00:00.000Z" });
  });
  const mine = () => encodeURIComponent(`licenseId == "${first.licenseId}" || licenseId == "${second.licenseId}"`);

  it("lists traces with the lic… id and the action, with the list conventions", async () => {
    const res = await admin("GET", `/v1/license-traces?filter=${mine()}&sort=-createdAt`);
    expect(res.status, res.text).toBe(200);
    expect(res.body["licenseTraces"].map((t: JsonBody) => [t.licenseId, t.action])).toEqual([
      [second.licenseId, 9],
      [first.licenseId, 2],
      [first.licenseId, 0],
    ]);
    expect(res.body["totalLicenseTracesCount"]).toBe(3);
    const byAction = await admin(
      "GET",
      `/v1/license-traces?filter=${encodeURIComponent(`(${decodeURIComponent(mine())}) && action == "Validate"`)}&select=action,createdAt`,
    );
    expect(byAction.body["licenseTraces"]).toEqual([{ action: 2, createdAt: "2030-02-01T00:00:00.000Z" }]);
    const page = await admin("GET", `/v1/license-traces?filter=${mine()}&sort=createdAt&skip=2&take=5`);
    expect(page.body["licenseTraces"].map((t: JsonBody) => t.action)).toEqual([9]);
  });

  it("deletes by license (either id form), by age, and answers the count", async () => {
    const extra = await newLicense();
    await insertTrace({ licenseId: extra.id, createdAt: "2001-01-01T00:00:00.000Z" });
    await insertTrace({ licenseId: extra.id, createdAt: "2001-06-01T00:00:00.000Z" });
    await insertTrace({ licenseId: extra.id, createdAt: "2002-01-01T00:00:00.000Z" });
    const old = await admin("DELETE", `/v1/license-traces?licenseId=${extra.licenseId}&before=2001-12-31`);
    expect(old.body).toEqual({ success: true, code: 0, deleted: 2 });
    const rest = await admin("DELETE", `/v1/license-traces?licenseId=${extra.id}`);
    expect(rest.body).toEqual({ success: true, code: 0, deleted: 1 });
    expect((await admin("GET", `/v1/license-traces?filter=${mine()}`)).body["totalLicenseTracesCount"]).toBe(3);
  });

  it("refuses an unknown license or a bad date, deleting nothing", async () => {
    const before = await countRows("license_traces");
    expect((await admin("DELETE", "/v1/license-traces?licenseId=licFFFFFFFF")).body).toEqual({
      success: false,
      code: 400,
      message: "License licFFFFFFFF not found",
    });
    const badDate = await admin("DELETE", "/v1/license-traces?before=yesterday");
    expect(badDate.status).toBe(400);
    expect(Object.keys(badDate.body["errors"])).toEqual(["before"]);
    expect(await countRows("license_traces")).toBe(before);
  });

  it("deletes every trace when no selection is given", async () => {
    const total = await countRows("license_traces");
    expect(total).toBeGreaterThan(0);
    expect((await admin("DELETE", "/v1/license-traces")).body).toEqual({ success: true, code: 0, deleted: total });
    expect(await countRows("license_traces")).toBe(0);
  });
});

describe("received reports", () => {
  it("lists reports with the license's lic… id and their properties, and deletes them", async () => {
    const { id, licenseId } = await newLicense();
    const reportId = await newReport({ licenseId: id, address: "198.51.100.4" });
    await env.DB.prepare("UPDATE reports SET content = 'stack trace', properties = ? WHERE id = ?")
      .bind(JSON.stringify([{ name: "os", value: "linux" }]), reportId)
      .run();
    const res = await admin("GET", `/v1/reports?filter=${encodeURIComponent(`licenseId == "${licenseId}"`)}`);
    expect(res.status, res.text).toBe(200);
    expect(res.body["reports"]).toEqual([
      expect.objectContaining({
        id: reportId,
        name: "ExceptionReport",
        licenseId,
        content: "stack trace",
        address: "198.51.100.4",
        properties: [{ name: "os", value: "linux" }],
      }),
    ]);
    const unlinked = await newReport();
    const list = await admin("GET", `/v1/reports?filter=id==${unlinked}`);
    expect(list.body["reports"][0].licenseId).toBeUndefined();

    expect((await admin("DELETE", `/v1/reports/${reportId}`)).body).toEqual({ success: true, code: 0 });
    expect((await admin("DELETE", `/v1/reports/${reportId}`)).body).toEqual({
      success: false,
      code: 400,
      message: `Report ${reportId} not found`,
    });
  });
});

describe("geolocation", () => {
  it("fills missing geolocations of traces, one lookup per address, reporting what could not be located", async () => {
    await env.DB.prepare("DELETE FROM license_traces").run();
    const seen = (await lookups()).length;
    const oslo1 = await insertTrace({ clientIp: "203.0.113.7" });
    const oslo2 = await insertTrace({ clientIp: "203.0.113.7" });
    const berlin = await insertTrace({ clientIp: "2001:db8::1" });
    const unknown = await insertTrace({ clientIp: "192.0.2.55" });
    const bogus = await insertTrace({ clientIp: "not-an-ip" });
    const located = await insertTrace({ clientIp: "198.51.100.4", geoLocation: '{"country":"XX"}' });
    const noIp = await insertTrace({});

    const res = await admin("POST", "/v1/license-traces/geolocation", {});
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ success: true, code: 0, updated: 3, failed: 2 });
    expect(res.body["message"]).toContain("192.0.2.55: the geolocation service answered 404");
    expect(res.body["message"]).toContain('"not-an-ip" is not an IP address');
    expect(await geoOf("license_traces", oslo1)).toEqual(OSLO);
    expect(await geoOf("license_traces", oslo2)).toEqual(OSLO);
    expect(await geoOf("license_traces", berlin)).toMatchObject({ country: "DE", city: "Berlin" });
    expect(await geoOf("license_traces", unknown)).toBeNull();
    expect(await geoOf("license_traces", bogus)).toBeNull();
    expect(await geoOf("license_traces", located)).toEqual({ country: "XX" });
    expect(await geoOf("license_traces", noIp)).toBeNull();
    expect((await lookups()).slice(seen).sort()).toEqual(["192.0.2.55", "2001:db8::1", "203.0.113.7"]);

    const listed = await admin("GET", `/v1/license-traces?filter=id==${oslo1}`);
    expect(JSON.parse(listed.body["licenseTraces"][0].geoLocation)).toEqual(OSLO);
  });

  it("fills only the ids given, and answers without a body", async () => {
    const a = await insertTrace({ clientIp: "203.0.113.7" });
    const b = await insertTrace({ clientIp: "203.0.113.7" });
    const res = await admin("POST", "/v1/license-traces/geolocation", { ids: [b] });
    expect(res.body).toEqual({ success: true, code: 0, updated: 1, failed: 0 });
    expect(await geoOf("license_traces", a)).toBeNull();
    expect(await geoOf("license_traces", b)).toEqual(OSLO);
    const bare = await call("POST", "/v1/license-traces/geolocation", { key: ADMIN.key });
    expect(bare.status, bare.text).toBe(200);
    expect(bare.body["updated"]).toBe(1);
    expect(await geoOf("license_traces", a)).toEqual(OSLO);
  });

  it("fills received reports the same way", async () => {
    const tokyo = await newReport({ address: "198.51.100.4" });
    const other = await newReport({ address: "203.0.113.7" });
    const res = await admin("POST", "/v1/reports/geolocation", { ids: [tokyo] });
    expect(res.body).toEqual({ success: true, code: 0, updated: 1, failed: 0 });
    expect(await geoOf("reports", tokyo)).toEqual({
      country: "JP",
      region: "Tokyo",
      city: "Tokyo",
      latitude: "35.68",
      longitude: "139.69",
      timezone: "Asia/Tokyo",
    });
    expect(await geoOf("reports", other)).toBeNull();
  });

  it("reads another service's answer shape (ip-api.com) and its failure flag", async () => {
    await setSetting("Application:GeoLocationService", `${GEO_BASE}/ipapi/{ip}`);
    try {
      const known = await newReport({ address: "2001:db8::1" });
      const reserved = await newReport({ address: "10.1.2.3" });
      const res = await admin("POST", "/v1/reports/geolocation", { ids: [known, reserved] });
      expect(res.body).toMatchObject({ updated: 1, failed: 1 });
      expect(res.body["message"]).toContain("10.1.2.3: the service could not locate 10.1.2.3: reserved range");
      expect(await geoOf("reports", known)).toEqual({
        country: "DE",
        region: "Berlin",
        city: "Berlin",
        latitude: "52.52",
        longitude: "13.4",
        timezone: "Europe/Berlin",
      });
    } finally {
      await setSetting("Application:GeoLocationService", null);
    }
  });

  it("reports bad answers and stops at a failing service, changing nothing", async () => {
    const ids = [await newReport({ address: "203.0.113.7" }), await newReport({ address: "198.51.100.4" })];
    for (const [path, reason, failed] of [
      ["text", "is not JSON", 2],
      ["fail", "the geolocation service answered 503", 2],
    ] as const) {
      await setSetting("Application:GeoLocationService", `${GEO_BASE}/${path}/{ip}`);
      try {
        const res = await admin("POST", "/v1/reports/geolocation", { ids });
        expect(res.status, res.text).toBe(200);
        expect(res.body).toMatchObject({ updated: 0, failed });
        expect(res.body["message"]).toContain(reason);
      } finally {
        await setSetting("Application:GeoLocationService", null);
      }
    }
    for (const id of ids) expect(await geoOf("reports", id)).toBeNull();
  });

  it("times out a slow service with a clear message", async () => {
    const error = await lookupGeoLocation(`${GEO_BASE}/slow/{ip}`, "203.0.113.7", 200).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(GeoLookupError);
    expect((error as GeoLookupError).message).toBe("the geolocation service did not answer within 0.2 s");
    expect((error as GeoLookupError).serviceDown).toBe(true);
  });

  it("answers 400 naming Application:GeoLocationService when it is missing or unusable", async () => {
    for (const [value, message] of [
      ["", "Application:GeoLocationService is not set: configure a URL template with {ip} to fill geolocations"],
      [
        "https://geo.example/lookup",
        'Application:GeoLocationService must be an http(s) URL template containing {ip}, got "https://geo.example/lookup"',
      ],
      [
        "ftp://geo.example/{ip}",
        'Application:GeoLocationService must be an http(s) URL template containing {ip}, got "ftp://geo.example/{ip}"',
      ],
    ] as const) {
      await setSetting("Application:GeoLocationService", value);
      try {
        for (const path of ["/v1/license-traces/geolocation", "/v1/reports/geolocation"]) {
          const res = await admin("POST", path, {});
          expect(res.status).toBe(400);
          expect(res.body).toEqual({ success: false, code: 400, message });
        }
      } finally {
        await setSetting("Application:GeoLocationService", null);
      }
    }
  });

  it("answers problem details to ids that are not positive integers", async () => {
    const res = await admin("POST", "/v1/reports/geolocation", { ids: ["x", -1] });
    expect(res.status).toBe(400);
    expect(Object.keys(res.body["errors"]).sort()).toEqual(["ids[0]", "ids[1]"]);
  });
});
