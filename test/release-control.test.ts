/**
 * Release control (issue 26, CONTRACT section 8), through the API:
 * - one table: the signed update check and the electron-builder feed offer the same release to the same caller in
 *   every case (a 10 % rollout by install id, stable across polls; a scheduled step before and after its time; halt,
 *   resume and rollback; minimumVersion and critical -> required; an audience matched, not matched, anonymous);
 * - the download route refuses what the caller is not offered (403 notOffered);
 * - bad input: 400 naming the field, nothing changed;
 * - reports from haltOnReports' count of licenses halt a release once (release.halted, reason "reports"); the release.*
 *   webhook events of publishing, a rollout change, a halt and a resume.
 */
import { exports } from "cloudflare:workers";
import { createClient } from "@connectrpc/connect";
import { createGrpcWebTransport } from "@connectrpc/connect-web";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse as parseYaml } from "yaml";
import { ReportServer } from "../src/gen/licensing/v1/report_server_pb";
import { ADMIN, BASE, admin, call, movableClock, setSetting } from "./helpers";
import { bytesOf, unique, upload } from "./artifacts-kit";
import { emitted, settledTypes, subscribe } from "./webhooks-kit";

const clock = await movableClock();
const PLATFORM = "win-x64";
// Ungated releases of applications, so anonymous callers are offered them (release control is about who, not who paid).
beforeAll(() => setSetting("Updates:AllowPublicApplicationReleases", "true"));
afterAll(() => setSetting("Updates:AllowPublicApplicationReleases", null));

interface Asker {
  installId?: string;
  userKey?: string;
  /** The version the caller runs. */
  version: string;
}

function headersOf(asker: Asker, feed: boolean): Record<string, string> {
  return {
    ...(asker.installId ? { "X-Service-Install-Id": asker.installId } : {}),
    ...(asker.userKey ? { "X-Service-User-Key": asker.userKey } : {}),
    ...(feed ? { "X-Service-Current-Version": asker.version } : {}),
  };
}

const fetchPath = (path: string, headers: Record<string, string> = {}) =>
  exports.default.fetch(path.startsWith("http") ? path : `${BASE}${path}`, { headers });

interface Check {
  release?: { version: string };
  latest: string;
  updateAvailable: boolean;
  installable: boolean;
  download?: { url: string };
  rollout?: { percentage: number; admitted: boolean };
  required: boolean;
  rollback: boolean;
}

/** The update check's data and the feed's offered version (null for a 204) for one caller. */
async function ask(code: string, asker: Asker) {
  const checked = await fetchPath(
    `/v1/updates/${code}?platform=${PLATFORM}&version=${asker.version}`,
    headersOf(asker, false),
  );
  expect(checked.status).toBe(200);
  const check = ((await checked.json()) as { data: Check }).data;
  const fed = await fetchPath(`/v1/updates/${code}/feed/stable/${PLATFORM}/latest.yml`, headersOf(asker, true));
  const yaml =
    fed.status === 200
      ? (parseYaml(await fed.text()) as { version: string; stagingPercentage?: number; path: string })
      : null;
  return { check, feed: yaml, feedStatus: fed.status, cacheControl: fed.headers.get("Cache-Control") };
}

/** The same caller gets the same release from the check and the feed; answers the offered version. */
async function agreed(code: string, asker: Asker): Promise<Awaited<ReturnType<typeof ask>> & { offered?: string }> {
  const answer = await ask(code, asker);
  expect(answer.feed?.version, JSON.stringify(asker)).toBe(answer.check.release?.version);
  return { ...answer, offered: answer.check.release?.version };
}

async function product(extra: Record<string, unknown> = {}): Promise<{ id: number; code: string }> {
  const code = `rc-${unique()}`;
  const res = await admin("POST", "/v1/products", {
    product: { code, name: "Release control", isApplication: true, ...extra },
  });
  expect(res.status, res.text).toBe(200);
  return { id: res.body["productId"], code };
}

/** A public, ungated release with a Windows installer. */
async function release(productId: number, version: string, extra: Record<string, unknown> = {}): Promise<number> {
  const res = await admin("POST", `/v1/products/${productId}/releases`, {
    productRelease: { version, public: true, requiresMaintenance: false, ...extra },
  });
  expect(res.status, res.text).toBe(200);
  const id = res.body["productReleaseId"] as number;
  const up = await upload(`/v1/products/${productId}/releases/${id}/downloads`, bytesOf(700, id), {
    platform: PLATFORM,
    kind: "installer",
    fileName: `App-${version}-setup.exe`,
    partName: `App-${version}-setup.exe`,
  });
  expect(up.status, up.text).toBe(201);
  return id;
}

const put = (productId: number, id: number, fields: Record<string, unknown>) =>
  admin("PUT", `/v1/products/${productId}/releases`, { productRelease: { id, ...fields } });

async function stored(productId: number, id: number): Promise<Record<string, unknown>> {
  const res = await admin("GET", `/v1/products/${productId}/releases?filter=${encodeURIComponent(`id == ${id}`)}`);
  return res.body["productReleases"][0];
}

async function license(
  productId: number,
  fields: Record<string, unknown> = {},
): Promise<{ userKey: string; licenseId: string }> {
  const res = await admin("POST", "/v1/licenses", { license: { productId, ...fields } });
  expect(res.status, res.text).toBe(200);
  const listed = await admin(
    "GET",
    `/v1/licenses?filter=${encodeURIComponent(`id == ${res.body["id"]}`)}&select=userKey,licenseId`,
  );
  return listed.body["licenses"][0];
}
const licenseKey = async (productId: number, fields: Record<string, unknown> = {}) =>
  (await license(productId, fields)).userKey;

/** CONTRACT section 8's bucket, computed here independently of the service. */
async function bucket(releaseId: number, id: string): Promise<number> {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(`${releaseId}:${id}`));
  return new DataView(digest).getUint32(0, false) % 100;
}

/** What one caller must be answered, beside the check and the feed agreeing (keys left out are not checked). */
interface Expected {
  offered: string | undefined;
  latest?: string;
  rollout?: { percentage: number; admitted: boolean };
  required?: boolean;
  rollback?: boolean;
  /** Whether the check offers a download. */
  download?: boolean;
  /** The feed's stagingPercentage (undefined: none, the server decided). */
  staged?: number | undefined;
  /** The answer is the caller's own (never a shared cached one). */
  personal?: boolean;
}
/** One row of the table: an optional change first, then one caller and what it must be answered. */
interface Row {
  code: string;
  before?: () => Promise<unknown>;
  asker: Asker;
  expect: Expected;
}

/** The table's cases: each builds its product and answers its rows, in order. */
const CASES: { name: string; rows: () => Promise<Row[]> }[] = [
  {
    name: "a 10 % rollout: fixed install ids get the new release or the previous one, stable across polls",
    rows: async () => {
      const p = await product();
      await release(p.id, "1.0.0");
      const staged = await release(p.id, "1.1.0", { stagingPercentage: 10 });
      const ids: string[] = [];
      const buckets: number[] = [];
      for (let i = 0; ids.length < 24 || !buckets.some((b) => b < 10) || !buckets.some((b) => b >= 10); i++) {
        ids.push(`install-${i}`);
        buckets.push(await bucket(staged, `install-${i}`));
      }
      const licensed = await license(p.id);
      const licensedIn = (await bucket(staged, licensed.licenseId)) < 10;
      const installs = ids.map((installId, i): Row => {
        const admitted = buckets[i]! < 10;
        return {
          code: p.code,
          asker: { installId, version: "1.0.0" },
          expect: {
            offered: admitted ? "1.1.0" : "1.0.0",
            latest: "1.1.0",
            rollout: { percentage: 10, admitted },
            download: admitted,
            // The server decided: no percentage for electron-updater to apply a second time; never a shared answer.
            staged: undefined,
            personal: true,
          },
        };
      });
      return [
        // Anonymous with no install id: the percentage is electron-updater's to apply, as before. This answer is also
        // the one the shared caches keep, which no install must be handed.
        {
          code: p.code,
          asker: { version: "1.0.0" },
          expect: { offered: "1.1.0", staged: 10, rollout: { percentage: 10, admitted: true } },
        },
        ...installs,
        ...installs,
        // A licensed caller without an install id is its license's cohort.
        {
          code: p.code,
          asker: { userKey: licensed.userKey, version: "1.0.0" },
          expect: {
            offered: licensedIn ? "1.1.0" : "1.0.0",
            rollout: { percentage: 10, admitted: licensedIn },
            staged: undefined,
          },
        },
      ];
    },
  },
  {
    name: "halt, rollback for installs on the halted release, resume",
    rows: async () => {
      const p = await product();
      await release(p.id, "1.0.0");
      const bad = await release(p.id, "2.0.0");
      const control = async (action: "halt" | "resume") => {
        const res = await admin("POST", `/v1/products/${p.id}/releases/${bad}/${action}`, { reason: "crashes" });
        expect(res.status, res.text).toBe(200);
        expect(res.body["productRelease"]).toMatchObject({ halted: action === "halt" });
      };
      const halted = { offered: "1.0.0", latest: "1.0.0", rollback: false, download: false };
      return [
        { code: p.code, asker: { installId: "h-1", version: "1.0.0" }, expect: { offered: "2.0.0", download: true } },
        { code: p.code, before: () => control("halt"), asker: { installId: "h-1", version: "1.0.0" }, expect: halted },
        { code: p.code, asker: { version: "1.0.0" }, expect: halted },
        { code: p.code, asker: { installId: "h-2", version: "2.0.0" }, expect: halted },
        {
          code: p.code,
          before: async () => expect((await put(p.id, bad, { rollback: true })).status).toBe(200),
          asker: { installId: "h-2", version: "2.0.0" },
          expect: { offered: "1.0.0", rollback: true, download: true },
        },
        // An install on the previous release is not rolled anywhere.
        { code: p.code, asker: { installId: "h-1", version: "1.0.0" }, expect: { ...halted } },
        {
          code: p.code,
          before: () => control("resume"),
          asker: { installId: "h-2", version: "2.0.0" },
          expect: { offered: "2.0.0", rollback: false, download: false },
        },
      ];
    },
  },
  {
    name: "below the product's minimumVersion, or behind a newer critical release: required",
    rows: async () => {
      const p = await product({ minimumVersion: "1.5.0" });
      await release(p.id, "1.0.0");
      await release(p.id, "2.0.0");
      return [
        { code: p.code, asker: { installId: "m-1", version: "1.0.0" }, expect: { offered: "2.0.0", required: true } },
        { code: p.code, asker: { installId: "m-1", version: "2.0.0" }, expect: { offered: "2.0.0", required: false } },
        {
          code: p.code,
          before: () => release(p.id, "2.1.0", { critical: true }),
          asker: { installId: "m-1", version: "2.0.0" },
          expect: { offered: "2.1.0", required: true },
        },
        { code: p.code, asker: { installId: "m-1", version: "2.1.0" }, expect: { offered: "2.1.0", required: false } },
      ];
    },
  },
  {
    name: "an audience: a matching license is offered the release, another license and anonymous callers are not",
    rows: async () => {
      const p = await product();
      await release(p.id, "1.0.0");
      await release(p.id, "2.0.0", { audience: 'edition == "Ultimate"' });
      const ultimate = (await license(p.id, { edition: "Ultimate" })).userKey;
      const standard = (await license(p.id, { edition: "Standard" })).userKey;
      const hidden = { offered: "1.0.0", latest: "1.0.0" };
      // Twice each: the second answer comes with the releases remembered by the isolate (the audience read beside
      // the license), the first may read them.
      const once: Row[] = [
        { code: p.code, asker: { userKey: ultimate, version: "1.0.0" }, expect: { offered: "2.0.0", latest: "2.0.0" } },
        { code: p.code, asker: { userKey: standard, version: "1.0.0" }, expect: hidden },
        { code: p.code, asker: { installId: "a-1", version: "1.0.0" }, expect: hidden },
        { code: p.code, asker: { version: "1.0.0" }, expect: hidden },
      ];
      return [...once, ...once];
    },
  },
  {
    // Last: it moves the service's clock, which stays moved until the test ends.
    name: "a scheduled step turns on at its time (the service's clock)",
    rows: async () => {
      const p = await product();
      await release(p.id, "1.0.0");
      const at = new Date(Date.now() + 3_600_000).toISOString();
      await release(p.id, "2.0.0", { stagingPercentage: 0, rolloutSchedule: [{ percentage: 100, at }] });
      return [
        {
          code: p.code,
          asker: { installId: "sched-1", version: "1.0.0" },
          expect: { offered: "1.0.0", rollout: { percentage: 0, admitted: false }, download: false },
        },
        {
          code: p.code,
          before: async () => clock.move(3_600_001),
          asker: { installId: "sched-1", version: "1.0.0" },
          expect: { offered: "2.0.0", rollout: { percentage: 100, admitted: true }, download: true },
        },
      ];
    },
  },
];

describe("release control decided by the server", () => {
  it("the update check and the feed offer the same release to the same caller, in every case", async () => {
    for (const { name, rows } of CASES) {
      for (const [i, row] of (await rows()).entries()) {
        await row.before?.();
        const label = `${name} / row ${i}: ${JSON.stringify(row.asker)}`;
        const answer = await agreed(row.code, row.asker);
        const { check, feed } = answer;
        const want = row.expect;
        expect(answer.offered, label).toBe(want.offered);
        if (want.latest !== undefined) expect(check.latest, label).toBe(want.latest);
        if (want.rollout !== undefined) expect(check.rollout, label).toEqual(want.rollout);
        if (want.required !== undefined) expect(check.required, label).toBe(want.required);
        if (want.rollback !== undefined) expect(check.rollback, label).toBe(want.rollback);
        if (want.download !== undefined) expect(check.download !== undefined, label).toBe(want.download);
        if (want.download) expect(check.download?.url, label).toContain(`/${want.offered}/`);
        if ("staged" in want) expect(feed?.stagingPercentage, label).toBe(want.staged);
        if (want.personal) expect(answer.cacheControl, label).toBe("private, no-store");
      }
    }
  });
});

describe("the download route serves only what the caller is offered", () => {
  it("refuses a release outside the caller's rollout, a halted one and one outside its audience", async () => {
    const p = await product();
    await release(p.id, "1.0.0");
    const staged = await release(p.id, "1.1.0", { stagingPercentage: 50 });
    let inside = "";
    let outside = "";
    for (let i = 0; !inside || !outside; i++) {
      if ((await bucket(staged, `d-${i}`)) < 50) inside ||= `d-${i}`;
      else outside ||= `d-${i}`;
    }
    const url = `/v1/updates/${p.code}/download/${PLATFORM}/1.1.0/App-1.1.0-setup.exe`;
    expect((await fetchPath(url, { "X-Service-Install-Id": inside })).status).toBe(200);
    const refused = await fetchPath(url, { "X-Service-Install-Id": outside });
    expect(refused.status).toBe(403);
    expect(refused.headers.get("X-Service-Reason")).toBe("notOffered");
    // Anonymous with no install id: electron-updater decided on the percentage, as before.
    expect((await fetchPath(url)).status).toBe(200);

    expect((await admin("POST", `/v1/products/${p.id}/releases/${staged}/halt`)).status).toBe(200);
    expect((await fetchPath(url, { "X-Service-Install-Id": inside })).status).toBe(403);
    expect((await fetchPath(`/v1/updates/${p.code}/download/${PLATFORM}/1.0.0/App-1.0.0-setup.exe`)).status).toBe(200);

    const only = await release(p.id, "3.0.0", { audience: 'edition == "Ultimate"' });
    expect(only).toBeGreaterThan(0);
    const url3 = `/v1/updates/${p.code}/download/${PLATFORM}/3.0.0/App-3.0.0-setup.exe`;
    expect(
      (await fetchPath(url3, { "X-Service-User-Key": await licenseKey(p.id, { edition: "Ultimate" }) })).status,
    ).toBe(200);
    expect(
      (await fetchPath(url3, { "X-Service-User-Key": await licenseKey(p.id, { edition: "Standard" }) })).status,
    ).toBe(403);
    expect((await fetchPath(url3)).status).toBe(403);
  });
});

describe("bad input: 400 naming the field, nothing changed", () => {
  it("refuses percentages, schedules, audiences, rollbacks and halts that cannot be", async () => {
    const p = await product();
    const first = await release(p.id, "1.0.0", { stagingPercentage: 40 });
    const draft = await admin("POST", `/v1/products/${p.id}/releases`, { productRelease: { version: "2.0.0" } });
    const before = await stored(p.id, first);
    const future = (ms: number) => new Date(Date.now() + ms).toISOString();
    const cases: [Record<string, unknown>, RegExp][] = [
      [{ stagingPercentage: 101 }, /stagingPercentage/],
      [{ stagingPercentage: -1 }, /stagingPercentage/],
      [{ rolloutSchedule: [{ percentage: 150, at: future(60_000) }] }, /rolloutSchedule/],
      [
        {
          rolloutSchedule: [
            { percentage: 50, at: future(120_000) },
            { percentage: 100, at: future(60_000) },
          ],
        },
        /rolloutSchedule\[1\]\.at: .*increasing/,
      ],
      [
        { rolloutSchedule: [{ percentage: 50, at: new Date(Date.now() - 60_000).toISOString() }] },
        /rolloutSchedule\[0\]\.at: .*not in the future/,
      ],
      [{ audience: 'edition == "Ultimate" &&' }, /^audience: Syntax error at position \d+/],
      [{ audience: "secretColumn == 1" }, /^audience: No property or field 'secretColumn' exists in type 'License'/],
      [{ rollback: true }, /^rollback: there is no previous release/],
    ];
    for (const [fields, message] of cases) {
      const res = await put(p.id, first, fields);
      expect(res.status, JSON.stringify(fields)).toBe(400);
      expect(String(res.body["message"] ?? JSON.stringify(res.body)), JSON.stringify(fields)).toMatch(message);
    }
    expect(await stored(p.id, first)).toEqual(before);

    const notPublic = await admin("POST", `/v1/products/${p.id}/releases/${draft.body["productReleaseId"]}/halt`);
    expect(notPublic.status).toBe(400);
    expect(notPublic.text).toContain("public: only a public release can be halted");
    const notHalted = await admin("POST", `/v1/products/${p.id}/releases/${first}/resume`);
    expect(notHalted.status).toBe(400);
    expect(notHalted.text).toContain("halted: the release is not halted");
    expect(await stored(p.id, first)).toEqual(before);

    const install = await fetchPath(`/v1/updates/${p.code}/latest.yml`, {
      "X-Service-Install-Id": "bad id with spaces",
    });
    expect(install.status).toBe(400);
  });
});

describe("webhook events and the automatic halt on reports", () => {
  beforeAll(() => setSetting("Webhooks:Enabled", "true"));
  afterAll(() => setSetting("Webhooks:Enabled", null));

  it("emits release.published, release.rollout.changed, release.halted and release.resumed", async () => {
    const sub = await subscribe({
      eventTypes: ["release.published", "release.rollout.changed", "release.halted", "release.resumed"],
    });
    const p = await product();
    const id = await release(p.id, "1.0.0");
    expect((await put(p.id, id, { stagingPercentage: 20 })).status).toBe(200);
    expect((await admin("POST", `/v1/products/${p.id}/releases/${id}/halt`, { reason: "why" })).status).toBe(200);
    // Halting a halted release changes nothing and emits nothing.
    expect((await admin("POST", `/v1/products/${p.id}/releases/${id}/halt`)).status).toBe(200);
    expect((await admin("POST", `/v1/products/${p.id}/releases/${id}/resume`)).status).toBe(200);
    const [changed] = await emitted(sub.id, "release.rollout.changed");
    expect(changed?.data).toMatchObject({ id, stagingPercentage: 20 });
    expect(changed?.previous).toEqual({ stagingPercentage: null, rolloutSchedule: null });
    const [halted] = await emitted(sub.id, "release.halted");
    expect(halted?.data).toMatchObject({ id, halted: true, reason: "manual", note: "why" });
    const [resumed] = await emitted(sub.id, "release.resumed");
    expect(resumed?.data).toMatchObject({ id, halted: false, reason: "manual" });
    expect(await settledTypes(sub.id)).toEqual([
      "release.published",
      "release.rollout.changed",
      "release.halted",
      "release.resumed",
    ]);
  });

  it("reports naming the release's version past its threshold halt it once, and the next poll sees the previous", async () => {
    const sub = await subscribe({ eventTypes: ["release.halted"] });
    const p = await product();
    await release(p.id, "1.0.0");
    const id = await release(p.id, "2.0.0", { haltOnReports: { count: 3, minutes: 10 } });
    const userKey = await licenseKey(p.id);
    const second = await licenseKey(p.id);
    const third = await licenseKey(p.id);
    const stranger = await licenseKey((await product()).id);
    const report = (version: string, from = userKey) =>
      call("POST", "/v1/report", {
        key: ADMIN.key,
        body: { name: "CrashReport", version, userKey: from, content: "boom" },
      });
    // Another version's reports, another product's and reports older than the window do not count.
    for (let i = 0; i < 3; i++) expect((await report("2.0.0", stranger)).status).toBe(200);
    expect((await report("1.0.0")).status).toBe(200);
    expect((await report("2.0.0", third)).status).toBe(200);
    clock.move(11 * 60_000);
    // Reporters, not reports (issue 36, N3): five reports of one license are one reporter.
    for (let i = 0; i < 5; i++) expect((await report("2.0.0")).status).toBe(200);
    expect(await stored(p.id, id)).toMatchObject({ halted: false });
    expect((await report("2.0.0", second)).status).toBe(200);
    expect(await stored(p.id, id)).toMatchObject({ halted: false });
    expect((await agreed(p.code, { installId: "r-1", version: "1.0.0" })).offered).toBe("2.0.0");
    // The third, through gRPC SendReport (the same service as POST /v1/report).
    const transport = createGrpcWebTransport({
      baseUrl: BASE,
      fetch: (input, init) => exports.default.fetch(input as RequestInfo, { ...init, redirect: "manual" }),
    });
    await createClient(ReportServer, transport).sendReport(
      { name: "CrashReport", version: "2.0.0", userKey: third, content: "boom" },
      { headers: { "x-api-key": ADMIN.key } },
    );
    expect(await stored(p.id, id)).toMatchObject({ halted: true, haltReason: "reports" });
    expect((await report("2.0.0")).status).toBe(200);
    expect((await agreed(p.code, { installId: "r-1", version: "1.0.0" })).offered).toBe("1.0.0");
    const [event] = await emitted(sub.id, "release.halted");
    expect(event?.data).toMatchObject({ id, version: "2.0.0", reason: "reports" });
    expect(await settledTypes(sub.id)).toEqual(["release.halted"]);
  });
});
