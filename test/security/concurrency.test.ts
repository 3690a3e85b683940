/**
 * Concurrency (issue 9) beyond what licensing.test.ts, updates.test.ts and auth.test.ts already race: settings
 * writes (never lost, never half-applied), one client racing itself for a seat, activations and deactivations
 * churning under a limit, tokens issued by hand, many simultaneous uses of one download token, the administrator
 * bootstrap with a fixed key, and license creation. Each asserts its invariant: never above a limit, never two
 * winners, never a duplicate.
 */
import { env, exports } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import { ensureAdmin } from "../../src/auth/bootstrap";
import { buildConfig } from "../../src/kernel/config";
import { BASE, admin, call } from "../helpers";
import { bytesOf, newRelease, upload } from "../artifacts-kit";
import { newLicense } from "../samples/licensing";

// Races take longer than single calls, most of all when the whole suite runs at once.
vi.setConfig({ testTimeout: 30_000 });

const SETTINGS = ["Application:DefaultPageSize", "Application:MaxPageSize", "Application:LogRetentionDays"] as const;

async function storedSettings(): Promise<Record<string, string>> {
  const rows = await env.DB.prepare(
    `SELECT name, value FROM settings WHERE name IN (${SETTINGS.map(() => "?").join(",")})`,
  )
    .bind(...SETTINGS)
    .all<{ name: string; value: string }>();
  return Object.fromEntries(rows.results.map((r) => [r.name, r.value]));
}

describe("settings writes", () => {
  afterEach(() => admin("PUT", "/v1/settings", { settings: SETTINGS.map((name) => ({ name, value: null })) }));

  it("are all or nothing under 24 concurrent PUTs: the stored settings are exactly one request's batch", async () => {
    // Each batch sets the three settings to values derived from one number, or removes all three.
    const batch = (i: number) =>
      i % 6 === 5
        ? SETTINGS.map((name) => ({ name, value: null }))
        : SETTINGS.map((name, k) => ({ name, value: String(100 + i * 3 + k) }));
    const answers = await Promise.all(
      Array.from({ length: 24 }, (_, i) => admin("PUT", "/v1/settings", { settings: batch(i) })),
    );
    expect(answers.map((a) => a.status)).toEqual(Array(24).fill(200));
    const stored = await storedSettings();
    const matches = Array.from({ length: 24 }, (_, i) => batch(i)).filter(
      (b) =>
        JSON.stringify(Object.fromEntries(b.filter((c) => c.value !== null).map((c) => [c.name, c.value]))) ===
        JSON.stringify(stored),
    );
    expect(matches.length, JSON.stringify(stored)).toBeGreaterThan(0);
    // The service applies what is stored: the list default page size is the stored one (or the default).
    const pageSize = Number(stored["Application:DefaultPageSize"] ?? 100);
    expect(
      (await admin("GET", "/v1/settings")).body["settings"].find(
        (s: { name: string }) => s.name === "Application:DefaultPageSize",
      ).value,
    ).toBe(String(pageSize));
  });

  it("lose nothing when concurrent PUTs change different settings", async () => {
    const answers = await Promise.all(
      SETTINGS.map((name, k) => admin("PUT", "/v1/settings", { settings: [{ name, value: String(200 + k) }] })),
    );
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200]);
    expect(await storedSettings()).toEqual({
      "Application:DefaultPageSize": "200",
      "Application:MaxPageSize": "201",
      "Application:LogRetentionDays": "202",
    });
  });
});

describe("seats and activations", () => {
  it("one client racing itself for a seat holds one seat with one token", async () => {
    const lic = await newLicense("Floating", 1);
    const answers = await Promise.all(
      Array.from({ length: 12 }, () =>
        admin("POST", "/v1/license/request", { userKey: lic.userKey, machineId: "m", clientId: "c" }),
      ),
    );
    expect(answers.map((a) => a.status)).toEqual(Array(12).fill(200));
    expect(new Set(answers.map((a) => a.body["licenseToken"])).size).toBe(1);
    expect(answers.every((a) => a.body["activeClientCount"] === 1)).toBe(true);
    const rows = await env.DB.prepare("SELECT count(*) AS n FROM license_tokens WHERE license_id = ?")
      .bind(lic.id)
      .first<{ n: number }>();
    expect(rows?.n).toBe(1);
  });

  it("activations and deactivations churning at once never leave more machines than maxClients", async () => {
    const lic = await newLicense("Activation", 2);
    const machines = Array.from({ length: 6 }, (_, i) => `PC-${i}`);
    const seen: number[] = [];
    await Promise.all(
      machines.map(async (machineId) => {
        for (let round = 0; round < 4; round++) {
          const activated = await admin("POST", "/v1/license/activate", { userKey: lic.userKey, machineId });
          if (activated.status === 200) {
            seen.push(activated.body["activeClientCount"] as number);
            await admin("POST", "/v1/license/deactivate", { userKey: lic.userKey, machineId });
          } else expect(activated.status).toBe(526);
        }
      }),
    );
    expect(seen.length).toBeGreaterThan(0);
    expect(Math.max(...seen)).toBeLessThanOrEqual(2);
    const live = await env.DB.prepare("SELECT count(DISTINCT machine_id) AS n FROM license_tokens WHERE license_id = ?")
      .bind(lic.id)
      .first<{ n: number }>();
    expect(live!.n).toBeLessThanOrEqual(2);
  });

  it("tokens issued by hand at once never exceed maxClients", async () => {
    const lic = await newLicense("Activation", 3);
    const answers = await Promise.all(
      Array.from({ length: 15 }, (_, i) =>
        admin("POST", `/v1/licenses/${lic.licenseId}/tokens`, { licenseToken: { machineId: `OFF-${i}` } }),
      ),
    );
    expect(answers.filter((a) => a.status === 200)).toHaveLength(3);
    expect(answers.filter((a) => a.status === 400)).toHaveLength(12);
    const machines = await env.DB.prepare(
      "SELECT count(DISTINCT machine_id) AS n FROM license_tokens WHERE license_id = ?",
    )
      .bind(lic.id)
      .first<{ n: number }>();
    expect(machines!.n).toBe(3);
  });
});

describe("download tokens", () => {
  it("let exactly one of 10 simultaneous complete downloads through, while ranged resumptions all succeed", async () => {
    const r = await newRelease("1.0.0");
    await admin("PUT", `/v1/products/${r.productId}/releases`, {
      productRelease: { id: r.releaseId, public: true, releaseDate: "2026-01-01T00:00:00Z" },
    });
    await upload(r.path, bytesOf(50_000));
    const lic = await admin("POST", "/v1/licenses", { license: { productId: r.productId } });
    const userKey = (
      await admin("GET", `/v1/licenses?filter=${encodeURIComponent(`id == ${lic.body["id"]}`)}&select=userKey`)
    ).body["licenses"][0].userKey;
    const check = await (
      await exports.default.fetch(`${BASE}/v1/updates/${r.code}?platform=win-x64&version=0.0.1`, {
        headers: { "X-Service-User-Key": userKey },
      })
    ).json<{ data: { download: { url: string } } }>();
    const url = check.data.download.url;
    const fetches = [
      ...Array.from({ length: 10 }, () => exports.default.fetch(url)),
      ...Array.from({ length: 5 }, (_, i) =>
        exports.default.fetch(url, { headers: { range: `bytes=${i * 100}-${i * 100 + 99}` } }),
      ),
    ];
    const answers = await Promise.all(fetches.map(async (p) => (await p).status));
    expect(answers.slice(0, 10).filter((s) => s === 200)).toHaveLength(1);
    expect(answers.slice(0, 10).filter((s) => s === 403)).toHaveLength(9);
    expect(answers.slice(10)).toEqual(Array(5).fill(206));
    const used = await env.DB.prepare("SELECT count(*) AS n FROM download_tokens WHERE used_at IS NOT NULL").first<{
      n: number;
    }>();
    expect(used!.n).toBe(1);
  });
});

describe("the administrator bootstrap", () => {
  it("with a fixed Application:AdminApiKey, isolates starting at once make one user and one key", async () => {
    const fixed = "api_FixedBootstrapKey0000000000000000".slice(0, 36);
    const { config } = buildConfig(
      {
        Application__AdminUsername: "racer",
        Application__AdminPassword: "Racer#password1",
        Application__AdminApiKey: fixed,
      },
      [],
    );
    await Promise.all(Array.from({ length: 10 }, () => ensureAdmin(env.DB, config)));
    const users = await env.DB.prepare("SELECT id FROM users WHERE normalized_user_name = 'racer'").all<{
      id: string;
    }>();
    expect(users.results).toHaveLength(1);
    const keys = await env.DB.prepare("SELECT owner_id, permissions FROM api_keys WHERE key_prefix = ?")
      .bind(`${fixed.slice(0, 8)}…`)
      .all<{ owner_id: string; permissions: number }>();
    expect(keys.results).toEqual([{ owner_id: users.results[0]!.id, permissions: 15 }]);
    expect((await call("GET", "/v1/auth/session", { key: fixed })).body).toMatchObject({
      user: "racer",
      permissions: 15,
    });
  });
});

describe("license creation", () => {
  it("gives 25 licenses created at once 25 different ids and user keys", async () => {
    const productId = (await admin("POST", "/v1/products", { product: { code: "race", name: "Race" } })).body[
      "productId"
    ];
    const answers = await Promise.all(
      Array.from({ length: 25 }, () => admin("POST", "/v1/licenses", { license: { productId } })),
    );
    expect(answers.map((a) => a.status)).toEqual(Array(25).fill(200));
    const rows = await env.DB.prepare(
      "SELECT count(DISTINCT license_id) AS ids, count(DISTINCT user_key) AS keys, count(*) AS n FROM licenses WHERE product_id = ?",
    )
      .bind(productId)
      .first<{ ids: number; keys: number; n: number }>();
    expect(rows).toEqual({ ids: 25, keys: 25, n: 25 });
  });
});
