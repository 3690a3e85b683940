/**
 * The Node side of the test-only clock control (test/node/clock-worker.ts): a Worker started with
 * `startLocalWorker({ entry: CLOCK_ENTRY })` answers `PUT CLOCK_PATH` by moving the service's clock.
 */

/** The entry module to bundle instead of wrangler.toml's `main`. */
export const CLOCK_ENTRY = "test/node/clock-worker.ts";

/** The path of the clock control: outside every route of the service. */
export const CLOCK_PATH = "/__test/clock";

/** Sets the service's clock `ms` ahead of real time (0: real time again); answers the service's now. */
export async function moveClock(worker: URL, ms: number): Promise<Date> {
  const res = await fetch(new URL(CLOCK_PATH, worker), { method: "PUT", body: String(ms) });
  if (res.status !== 200) throw new Error(`moving the clock: ${res.status} ${await res.text()}`);
  return new Date(await res.text());
}
