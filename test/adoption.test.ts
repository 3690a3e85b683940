/**
 * Release adoption (CONTRACT section 8; src/updates/adoption.ts): installs offered a release (a feed or an update
 * check answered with it), that downloaded it and that run it (an update check's `version`, a feed's
 * X-Service-Current-Version, a validation's `version`), by day and platform, counted as distinct installs (install
 * id, else license and machine) by GET .../adoption. Sightings travel through the TRACES queue and the real consumer
 * writes them; a poll writes no D1 row on its request path, and a message delivered twice counts once.
 */
import {
  createExecutionContext,
  createMessageBatch,
  createScheduledController,
  getQueueResult,
  waitOnExecutionContext,
} from "cloudflare:test";
import { env, exports } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import worker from "../src/index";
import { bytesOf, newRelease, unique, upload } from "./artifacts-kit";
import { ADMIN, BASE, admin, call, setSetting } from "./helpers";

const INSTALL = "X-Service-Install-Id";
const CURRENT = "X-Service-Current-Version";

/** Rows the request wrote to D1, as its Server-Timing says (http/d1-session.ts). */
function rowsWritten(res: Response): number {
  const metric = (res.headers.get("server-timing") ?? "")
    .split(",")
    .find((m) => m.trim().startsWith("d1-rows-written"));
  const value = /desc="(\d+)"/.exec(metric ?? "")?.[1];
  if (value === undefined) throw new Error(`no d1-rows-written in ${res.headers.get("server-timing")}`);
  return Number(value);
}

async function get(path: string, headers: Record<string, string> = {}): Promise<Response> {
  const res = await exports.default.fetch(`${BASE}${path}`, { headers, redirect: "manual" });
  return res;
}

interface Counts {
  offered: number;
  downloaded: number;
  running: number;
}
interface AdoptionAnswer {
  from: string;
  to: string;
  totals: Counts;
  days: (Counts & { day: string; platform?: string })[];
}

const adoptionPath = (productId: number, releaseId: number, query = "") =>
  `/v1/products/${productId}/releases/${releaseId}/adoption${query}`;

async function adoption(productId: number, releaseId: number, query = ""): Promise<AdoptionAnswer> {
  const res = await admin("GET", adoptionPath(productId, releaseId, query));
  expect(res.status, res.text).toBe(200);
  return res.body["data"] as AdoptionAnswer;
}

/** The release's totals once they reach `expected` (the queue delivers within moments), or the last seen. */
async function settled(productId: number, releaseId: number, expected: Counts): Promise<AdoptionAnswer> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const answer = await adoption(productId, releaseId);
    const t = answer.totals;
    const reached =
      t.offered >= expected.offered && t.downloaded >= expected.downloaded && t.running >= expected.running;
    if (reached || Date.now() > deadline) return answer;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** Runs the Worker's queue handler on one batch of the traces queue, as the queue would deliver it. */
async function deliver(bodies: unknown[]): Promise<{ acked: number; retried: number }> {
  const batch = createMessageBatch(
    "licensing-traces",
    bodies.map((body, i) => ({ id: `a-${crypto.randomUUID()}-${i}`, timestamp: new Date(), attempts: 1, body })),
  );
  const ctx = createExecutionContext();
  await worker.queue(batch, env, ctx);
  const result = await getQueueResult(batch, ctx);
  return { acked: result.explicitAcks.length, retried: result.retryMessages.length };
}

// Releases anyone may install, so that installs without a license are offered them too.
beforeAll(() => setSetting("Updates:AllowPublicApplicationReleases", "true"));

/** An application with public releases 1.0.0 and 1.1.0 (no license needed), each with a Windows installer and a Windows on Arm zip. */
async function twoReleases() {
  const first = await newRelease("1.0.0");
  const second = await admin("POST", `/v1/products/${first.productId}/releases`, {
    productRelease: { version: "1.1.0" },
  });
  expect(second.status, second.text).toBe(200);
  const releases = { "1.0.0": first.releaseId, "1.1.0": second.body["productReleaseId"] as number };
  for (const [version, id] of Object.entries(releases)) {
    const put = await admin("PUT", `/v1/products/${first.productId}/releases`, {
      productRelease: {
        id,
        public: true,
        requiresMaintenance: false,
        releaseDate: version === "1.0.0" ? "2026-01-01T00:00:00Z" : "2026-02-01T00:00:00Z",
      },
    });
    expect(put.status, put.text).toBe(200);
    const path = `/v1/products/${first.productId}/releases/${id}/downloads`;
    const installer = await upload(path, bytesOf(2048, id), { fileName: `App Setup ${version}.exe` });
    expect(installer.status, installer.text).toBe(201);
    const zip = await upload(path, bytesOf(1024, id + 1), {
      platform: "win-arm64",
      kind: "zip",
      fileName: `App-${version}-arm64.zip`,
    });
    expect(zip.status, zip.text).toBe(201);
  }
  return { productId: first.productId, code: first.code, releases };
}

describe("release adoption", () => {
  it("counts the installs offered, downloading and running a release, once each, by day and platform", async () => {
    const app = await twoReleases();
    const a = `install-a-${unique()}`;
    const b = `install-b-${unique()}`;
    const feed = (platform: string, file: string) => `/v1/updates/${app.code}/feed/stable/${platform}/${file}`;

    // Install A polls the Windows feed twice, running 1.0.0: offered 1.1.0 (once), running 1.0.0 (once).
    let url = "";
    for (let i = 0; i < 2; i++) {
      const res = await get(feed("win-x64", "latest.yml"), { [INSTALL]: a, [CURRENT]: "1.0.0" });
      const yaml = await res.text();
      expect(res.status, yaml).toBe(200);
      expect(yaml).toContain('version: "1.1.0"');
      // Counted off the request path: the poll wrote nothing to D1.
      expect(rowsWritten(res), "feed poll").toBe(0);
      url = /url: "([^"]+)"/.exec(yaml)![1]!;
    }
    // Install B polls the feed of Windows on Arm, running 1.0.0.
    const arm = await get(feed("win-arm64", "latest.yml"), { [INSTALL]: b, [CURRENT]: "1.0.0" });
    expect(arm.status, await arm.text()).toBe(200);
    // A downloads the installer it was offered (to its last byte), then reports running 1.1.0 on an update check.
    const download = await exports.default.fetch(url, { headers: { [INSTALL]: a } });
    expect((await download.arrayBuffer()).byteLength).toBe(2048);
    expect(download.status).toBe(200);
    // Twice: the first check of the service makes its signing key (a row written), the second writes nothing.
    for (let i = 0; i < 2; i++) {
      const check = await get(`/v1/updates/${app.code}?platform=win-x64&version=1.1.0`, { [INSTALL]: a });
      expect(check.status, await check.text()).toBe(200);
      if (i === 1) expect(rowsWritten(check), "update check").toBe(0);
    }

    // A license without an install id: its feed poll is offered 1.1.0, and a validation reports running 1.1.0 on a
    // machine (no platform named).
    const created = await admin("POST", "/v1/licenses", {
      license: { productId: app.productId, licensingMode: "File" },
    });
    expect(created.status, created.text).toBe(200);
    const userKey = (
      await admin("GET", `/v1/licenses?filter=${encodeURIComponent(`id == ${created.body["id"]}`)}&select=userKey`)
    ).body["licenses"][0].userKey as string;
    const licensed = await get(feed("win-x64", "latest.yml"), { "X-Service-User-Key": userKey });
    expect(licensed.status, await licensed.text()).toBe(200);
    const validate = await call("POST", "/v1/license/validate", {
      key: ADMIN.key,
      body: { userKey, machineId: "m1", version: "1.1.0" },
    });
    expect(validate.status, validate.text).toBe(200);

    const today = new Date().toISOString().slice(0, 10);
    const newer = await settled(app.productId, app.releases["1.1.0"], { offered: 3, downloaded: 1, running: 2 });
    expect(newer.totals).toEqual({ offered: 3, downloaded: 1, running: 2 });
    expect(newer.to).toBe(today);
    expect(newer.from).toBe(new Date(Date.now() - 29 * 86_400_000).toISOString().slice(0, 10));
    expect(newer.days).toEqual([
      // A validation names no platform.
      { day: today, offered: 0, downloaded: 0, running: 1 },
      { day: today, platform: "win-arm64", offered: 1, downloaded: 0, running: 0 },
      { day: today, platform: "win-x64", offered: 2, downloaded: 1, running: 1 },
    ]);
    const older = await settled(app.productId, app.releases["1.0.0"], { offered: 0, downloaded: 0, running: 2 });
    expect(older.totals).toEqual({ offered: 0, downloaded: 0, running: 2 });

    // The same message delivered twice, by the real consumer: counted once. A new install in it counts.
    const again = {
      kind: "release.adoption",
      sightings: [
        [app.productId, "1.1.0", 0, today, "win-x64", `i:${a}`],
        [app.productId, "1.1.0", 1, today, "win-x64", `i:${a}`],
        [app.productId, "1.1.0", 2, today, "win-x64", "i:install-c"],
      ],
    };
    expect(await deliver([again, again])).toEqual({ acked: 2, retried: 0 });
    expect(await deliver([again])).toEqual({ acked: 1, retried: 0 });
    expect((await adoption(app.productId, app.releases["1.1.0"])).totals).toEqual({
      offered: 3,
      downloaded: 1,
      running: 3,
    });

    // A day long past: outside the default 30 days, inside a span that names it; an install seen on two days is
    // one install in the totals and one in each day.
    const past = {
      kind: "release.adoption",
      sightings: [
        [app.productId, "1.1.0", 0, "2026-01-05", "linux-x64", `i:${a}`],
        [app.productId, "1.1.0", 0, "2026-01-06", "linux-x64", `i:${a}`],
        // A version no release has, and a malformed sighting: nothing written, the rest still is.
        [app.productId, "9.9.9", 0, "2026-01-05", "linux-x64", `i:${a}`],
      ],
    };
    expect(await deliver([past, { kind: "release.adoption", sightings: [["x"]] }])).toEqual({ acked: 2, retried: 0 });
    const january = await adoption(app.productId, app.releases["1.1.0"], "?from=2026-01-01&to=2026-01-31");
    expect(january).toEqual({
      from: "2026-01-01",
      to: "2026-01-31",
      totals: { offered: 1, downloaded: 0, running: 0 },
      days: [
        { day: "2026-01-05", platform: "linux-x64", offered: 1, downloaded: 0, running: 0 },
        { day: "2026-01-06", platform: "linux-x64", offered: 1, downloaded: 0, running: 0 },
      ],
    });
    // An instant names its UTC day.
    expect(
      (await adoption(app.productId, app.releases["1.1.0"], "?from=2026-01-06T12:00:00Z&to=2026-01-06")).days,
    ).toHaveLength(1);
  });

  it("keeps Updates:AdoptionRetentionDays of days (400): the cron trigger prunes older ones", async () => {
    const app = await twoReleases();
    const id = app.releases["1.0.0"];
    const day = (daysAgo: number) => new Date(Date.now() - daysAgo * 86_400_000).toISOString().slice(0, 10);
    const sighting = (d: string) => [app.productId, "1.0.0", 2, d, "win-x64", "i:kept"];
    expect(await deliver([{ kind: "release.adoption", sightings: [sighting(day(401)), sighting(day(399))] }])).toEqual({
      acked: 1,
      retried: 0,
    });
    const span = `?from=${day(402)}&to=${day(398)}`;
    expect((await adoption(app.productId, id, span)).days.map((d) => d.day)).toEqual([day(401), day(399)]);
    const ctx = createExecutionContext();
    worker.scheduled(createScheduledController({ scheduledTime: new Date(), cron: "*/15 * * * *" }), env, ctx);
    await waitOnExecutionContext(ctx);
    expect((await adoption(app.productId, id, span)).days.map((d) => d.day)).toEqual([day(399)]);
  });

  it("refuses spans it cannot read with a 400 naming the field, and releases of another product", async () => {
    const app = await twoReleases();
    const id = app.releases["1.0.0"];
    for (const [query, field] of [
      ["?from=yesterday", "from"],
      ["?to=2026-13-45", "to"],
      ["?from=2026-02-01&to=2026-01-01", "from"],
      ["?from=2024-01-01&to=2026-01-01", "from"],
    ] as const) {
      const res = await admin("GET", adoptionPath(app.productId, id, query));
      expect(res.status, `${query}: ${res.text}`).toBe(400);
      expect(res.text, query).toContain(field);
    }
    const other = await twoReleases();
    const foreign = await admin("GET", adoptionPath(app.productId, other.releases["1.0.0"]));
    expect(foreign.status, foreign.text).toBe(400);
    expect(foreign.body["message"]).toMatch(/not found/);
    expect((await call("GET", adoptionPath(app.productId, id))).status).toBe(401);
  });
});
