/**
 * Crash loops (CONTRACT section 13; src/updates/crash-loops.ts), through the public routes: an install whose last
 * three sessions of a version all crashed within ten minutes of starting is offered the previous release as a
 * rollback (`rollback: true, rollbackReason: "crashLoop"`) by the signed update check and the electron-updater feed,
 * alone: another install on the same release keeps it. Crashes late after starting, or a clean end last, are no crash
 * loop; the sessions of an address beyond the honest counts still count for their install's own loop. Once back on
 * the previous release, the install is not offered the version it crashed on again, but is offered the next one; a
 * session of that version that did not crash ends the loop.
 */
import { exports } from "cloudflare:workers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse as parseYaml } from "yaml";
import { bytesOf, unique, upload } from "./artifacts-kit";
import { BASE, admin, setSetting } from "./helpers";
import { ago, ping } from "./health-kit";

const PLATFORM = "win-x64";

async function app(...versions: string[]) {
  const code = `loop-${unique()}`;
  const res = await admin("POST", "/v1/products", { product: { code, name: "Loop", isApplication: true } });
  expect(res.status, res.text).toBe(200);
  const productId = res.body["productId"] as number;
  for (const version of versions) await release(productId, version);
  return { productId, code };
}

/** A public release anyone may install, with a Windows installer. */
async function release(productId: number, version: string): Promise<void> {
  const res = await admin("POST", `/v1/products/${productId}/releases`, {
    productRelease: { version, public: true, requiresMaintenance: false },
  });
  expect(res.status, res.text).toBe(200);
  const id = res.body["productReleaseId"] as number;
  const up = await upload(`/v1/products/${productId}/releases/${id}/downloads`, bytesOf(700, id), {
    platform: PLATFORM,
    fileName: `Loop-${version}-setup.exe`,
    partName: `Loop-${version}-setup.exe`,
  });
  expect(up.status, up.text).toBe(201);
}

interface Check {
  release?: { version: string };
  updateAvailable: boolean;
  rollback: boolean;
  rollbackReason?: string;
}

/** The signed update check's data and electron-updater's feed (latest.yml) for an install running `version`. */
async function ask(code: string, install: string, version: string) {
  const get = (path: string, headers: Record<string, string>) =>
    exports.default.fetch(`${BASE}${path}`, { headers: { "X-Service-Install-Id": install, ...headers } });
  const checked = await get(`/v1/updates/${code}?platform=${PLATFORM}&version=${version}`, {});
  expect(checked.status).toBe(200);
  const check = ((await checked.json()) as { data: Check }).data;
  const fed = await get(`/v1/updates/${code}/feed/stable/${PLATFORM}/latest.yml`, {
    "X-Service-Current-Version": version,
  });
  const feed = fed.status === 200 ? (parseYaml(await fed.text()) as { version: string }) : null;
  return { check, feed: feed?.version ?? null };
}

/** What an install is answered once `reached` holds (the queue writes the sessions within moments), or the last. */
async function answered(code: string, install: string, version: string, reached: (c: Check) => boolean) {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const answer = await ask(code, install, version);
    if (reached(answer.check) || Date.now() > deadline) return answer;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/** Sessions start in the order they are sent: ten seconds apart, from an hour ago. */
let started = 0;

/** One ping of an install's sessions of `version`: each `[status, durationMs]`, oldest first. */
async function sessions(code: string, install: string, version: string, list: [string, number][], ip?: string) {
  const body = {
    version,
    platform: PLATFORM,
    sessions: list.map(([status, durationMs]) => ({
      id: `s-${unique()}`,
      status,
      startedAt: ago(3_600_000 - ++started * 10_000),
      durationMs,
    })),
  };
  const res = await ping(code, body, { install, ...(ip ? { ip } : {}) });
  expect(res.status, res.text).toBe(202);
}

const crash = (ms = 5_000): [string, number] => ["crashed", ms];
const quiet = (): [string, number] => ["exited", 3_600_000];

beforeAll(async () => {
  await setSetting("Updates:AllowPublicApplicationReleases", "true");
  await setSetting("IpFiltering:BruteForceProtection:Enabled", "false");
});
afterAll(async () => {
  await setSetting("Updates:AllowPublicApplicationReleases", null);
  await setSetting("IpFiltering:BruteForceProtection:Enabled", null);
});

describe("crash loops", () => {
  it("roll back the install whose last three sessions crashed on start, alone, on the check and the feed", async () => {
    const { productId, code } = await app("1.0.0", "1.1.0");
    const [looping, steady, late, recovered] = ["A", "B", "C", "D"].map((n) => `${n}-${unique()}`) as [
      string,
      string,
      string,
      string,
    ];
    await sessions(code, steady, "1.1.0", [quiet(), crash(), quiet()]);
    await sessions(code, late, "1.1.0", [crash(), crash(), crash(20 * 60_000)]);
    await sessions(code, recovered, "1.1.0", [crash(), crash(), quiet()]);
    // The looping install's crashes come one a start (each sent with the next start), the last with an abnormal end.
    await sessions(code, looping, "1.1.0", [quiet()]);
    await sessions(code, looping, "1.1.0", [crash()]);
    await sessions(code, looping, "1.1.0", [crash(9 * 60_000)]);
    await sessions(code, looping, "1.1.0", [["abnormal", 2_000]]);

    const back = await answered(code, looping, "1.1.0", (c) => c.rollback);
    expect(back.check).toMatchObject({ rollback: true, rollbackReason: "crashLoop", release: { version: "1.0.0" } });
    expect(back.feed).toBe("1.0.0");
    for (const other of [steady, late, recovered]) {
      const kept = await ask(code, other, "1.1.0");
      expect(kept.check, other).toMatchObject({ rollback: false, updateAvailable: false });
      expect(kept.check).not.toHaveProperty("rollbackReason");
      expect(kept.feed, other).toBe("1.1.0");
    }

    // Back on 1.0.0, the install is not offered 1.1.0 again (it would loop); everyone else on 1.0.0 is.
    const onOld = await ask(code, looping, "1.0.0");
    expect(onOld.check).toMatchObject({ updateAvailable: false, rollback: false });
    expect(onOld.feed).toBe("1.0.0");
    expect((await ask(code, `E-${unique()}`, "1.0.0")).check).toMatchObject({
      updateAvailable: true,
      release: { version: "1.1.0" },
    });
    // The vendor's fix, 1.1.1, is offered to it as to anyone.
    await release(productId, "1.1.1");
    const fixed = await answered(code, looping, "1.0.0", (c) => c.updateAvailable);
    expect(fixed.check).toMatchObject({ updateAvailable: true, release: { version: "1.1.1" } });
    expect(fixed.feed).toBe("1.1.1");
  });

  it("end when the install runs the version without crashing, and count beyond the address limit", async () => {
    const { code } = await app("2.0.0", "2.1.0");
    const ip = "192.0.2.77";
    // Five other installs of the address fill its count of installs for the day: the sixth is not counted in the
    // figures, but its own crash loop still holds.
    for (let i = 0; i < 5; i++) await sessions(code, `F${i}-${unique()}`, "2.1.0", [quiet()], ip);
    const install = `G-${unique()}`;
    await sessions(code, install, "2.1.0", [crash(), crash(), crash()], ip);
    expect((await answered(code, install, "2.1.0", (c) => c.rollback)).check).toMatchObject({
      rollback: true,
      rollbackReason: "crashLoop",
      release: { version: "2.0.0" },
    });
    // It ran 2.1.0 once more, and it did not crash: the loop is over.
    await sessions(code, install, "2.1.0", [quiet()], ip);
    const over = await answered(code, install, "2.1.0", (c) => !c.rollback);
    expect(over.check).toMatchObject({ rollback: false, updateAvailable: false });
    expect(over.feed).toBe("2.1.0");
  });
});
