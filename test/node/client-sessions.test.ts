/**
 * The client package's session tracking (issue 38, CONTRACT section 13) against the bundled Worker under Miniflare:
 * `trackSessions` records a run as started, its crash (Node's uncaughtExceptionMonitor, written synchronously as the
 * process dies) or clean exit, and sends them with the next start; offline they wait on disk; each session is counted
 * for the version that ran it. The release's health route then counts them.
 */
import { EventEmitter } from "node:events";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SESSIONS_FILE, type ProcessEvents, trackSessions } from "../../client/src/node.ts";
// @ts-expect-error: a plain JavaScript module shared with the benchmark
import { startLocalWorker } from "../../scripts/local-worker.mjs";
import type { JsonBody } from "../json-body.ts";

const KEY = "api_ClientSessionsAdminKey0000000000";
let worker: { url: URL; dispose(): Promise<void> };
const releases: Record<string, number> = {};
let productId = 0;

async function api(method: string, path: string, body?: unknown): Promise<JsonBody> {
  const res = await fetch(new URL(path, worker.url), {
    method,
    headers: { "x-api-key": KEY, "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return (await res.json()) as JsonBody;
}

/** A stand-in for Node's process: the tracker's listeners, and a way to fire them. */
function fakeProcess(): ProcessEvents & { emit(event: string, ...args: unknown[]): boolean } {
  return new EventEmitter() as unknown as ProcessEvents & { emit(event: string, ...args: unknown[]): boolean };
}

/** The release's health once the queue consumer has counted `sessions` sessions. */
async function health(version: string, sessions: number): Promise<JsonBody> {
  for (let i = 0; i < 100; i++) {
    const answer = await api("GET", `/v1/products/${productId}/releases/${releases[version]}/health`);
    if (answer["data"]?.sessions >= sessions) return answer["data"];
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`the health of ${version} never counted ${sessions} sessions`);
}

beforeAll(async () => {
  worker = await startLocalWorker({
    bindings: {
      Application__JwtSecret: "client-sessions-test-jwt-secret-01234567",
      Application__EncryptionKey: "client-sessions-test-encryption-key",
      Application__AdminUsername: "admin",
      Application__AdminPassword: "Sessions-12345",
      Application__AdminApiKey: KEY,
      Updates__AllowPublicApplicationReleases: "true",
    },
  });
  productId = (await api("POST", "/v1/products", { product: { code: "studio", name: "Studio", isApplication: true } }))[
    "productId"
  ];
  for (const version of ["2.0.0", "2.1.0"])
    releases[version] = (
      await api("POST", `/v1/products/${productId}/releases`, {
        productRelease: { version, public: true, requiresMaintenance: false },
      })
    )["productReleaseId"];
}, 120_000);
afterAll(() => worker?.dispose());

describe("trackSessions", () => {
  it("sends this run as started, its crash with the next start, for the version that ran it", async () => {
    const directory = mkdtempSync(join(tmpdir(), "sessions-"));
    const installId = crypto.randomUUID();
    const base = { baseUrl: worker.url.href, productCode: "studio", platform: "win-x64", installId, directory };
    // Run 1, on 2.1.0: started (sent at once), then it crashes.
    const first = fakeProcess();
    const run1 = await trackSessions({ ...base, version: "2.1.0", process: first });
    first.emit("uncaughtExceptionMonitor", new Error("boom"));
    const kept = JSON.parse(readFileSync(join(directory, SESSIONS_FILE), "utf8")) as { id: string; status: string }[];
    expect(kept).toEqual([expect.objectContaining({ id: run1.sessionId, status: "crashed", version: "2.1.0" })]);
    // Run 2, rolled back to 2.0.0: it sends run 1's crash for 2.1.0 and its own start for 2.0.0, then exits cleanly.
    const second = fakeProcess();
    const run2 = await trackSessions({ ...base, version: "2.0.0", process: second });
    expect(run2.sessionId).not.toBe(run1.sessionId);
    const crashed = await health("2.1.0", 1);
    expect(crashed).toMatchObject({ sessions: 1, crashedSessions: 1, installs: 1, crashedInstalls: 1 });
    second.emit("exit");
    expect(await run2.flush()).toBe(1);
    const clean = await health("2.0.0", 1);
    expect(clean).toMatchObject({ sessions: 1, crashedSessions: 0 });
    // Nothing waits any more.
    expect(JSON.parse(readFileSync(join(directory, SESSIONS_FILE), "utf8"))).toEqual([]);
  });

  it("keeps sessions on disk while the service cannot be reached, and sends them later", async () => {
    const directory = mkdtempSync(join(tmpdir(), "sessions-"));
    const installId = crypto.randomUUID();
    const offline = fakeProcess();
    const run = await trackSessions({
      baseUrl: "http://127.0.0.1:9",
      productCode: "studio",
      version: "2.0.0",
      installId,
      directory,
      process: offline,
    });
    offline.emit("exit");
    expect(await run.flush()).toBe(0);
    expect(JSON.parse(readFileSync(join(directory, SESSIONS_FILE), "utf8"))).toHaveLength(1);
    const later = await trackSessions({
      baseUrl: worker.url.href,
      productCode: "studio",
      version: "2.0.0",
      installId,
      directory,
      process: fakeProcess(),
    });
    expect(later.sessionId).not.toBe(run.sessionId);
    // The offline run's clean end and this run's start were both taken; only the running one waits.
    const waiting = JSON.parse(readFileSync(join(directory, SESSIONS_FILE), "utf8")) as { id: string }[];
    expect(waiting.map((s) => s.id)).toEqual([later.sessionId]);
  });
});
