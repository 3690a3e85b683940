/**
 * The per-IP request limit and the per-license budget count in memory and write their row at every tenth of the
 * limit and when a block starts (durable/fixed-window.ts). An object that Cloudflare evicts or restarts reads that
 * row again: a block survives whole, and a window's count forgets less than a tenth of the limit. Eviction is
 * played here by a second instance of the object's class over the same storage, as a restart would build it.
 */
import { env } from "cloudflare:workers";
import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { RateLimiter } from "../src/durable/rate-limiter";
import type { Budget, SeatStore } from "../src/durable/license-seats";

const LIMIT = 20;
const WINDOW = 60_000;
const T0 = 1_800_000_000_000;

type Counter = (now: number) => Promise<boolean>;
/** Runs `use` with a fresh instance of the object over its storage (inside the object: its storage is its own). */
type Restarted = <T>(use: (fresh: Counter) => Promise<T>) => Promise<T>;

/** Counts calls until the first refusal; answers how many were allowed. */
async function allowedUntilRefused(count: Counter, now: number): Promise<number> {
  let allowed = 0;
  while (await count(now)) allowed++;
  return allowed;
}

/**
 * One object's count: `count` asks an instance (the live one through its stub, or a fresh one over the same storage,
 * which is the object after an eviction) to count one call.
 */
function counterOf<O extends Rpc.DurableObjectBranded>(
  stub: DurableObjectStub<O>,
  count: (object: O) => Counter,
): { live: Counter; restarted: Restarted } {
  return {
    live: (now) => count(stub as unknown as O)(now),
    restarted: (use) =>
      runInDurableObject(stub, (instance, state) => {
        const fresh = new (instance.constructor as new (s: DurableObjectState, e: Bindings) => O)(state, env);
        return use(count(fresh));
      }),
  };
}

/** The per-IP limiter. */
const ipLimiter = (name: string) =>
  counterOf(
    env.RATE_LIMITER.getByName(name),
    (object: RateLimiter) => async (now) => (await object.hit(now, LIMIT, WINDOW, WINDOW)).allowed,
  );

/** The license's budget in its seat object. */
const BUDGET: Budget = { limit: LIMIT, windowMs: WINDOW };
const licenseBudget = (name: string) =>
  counterOf(
    env.LICENSE_SEATS.getByName(name),
    (object: SeatStore) => async (now) => !(await object.spend(BUDGET, now)).overBudget,
  );

describe.each([
  ["the per-IP limit", ipLimiter],
  ["the per-license budget", licenseBudget],
])("%s after an eviction", (_name, counter) => {
  it("remembers the window's count, short of less than a tenth of the limit", async () => {
    const { live, restarted } = counter(`eviction-count-${crypto.randomUUID()}`);
    for (let i = 0; i < 15; i++) expect(await live(T0 + i)).toBe(true);
    // 15 counted; the row holds 14 (the last multiple of a tenth, 2): 6 more at most, not a fresh 20.
    const allowed = await restarted((fresh) => allowedUntilRefused(fresh, T0 + 100));
    expect(allowed).toBeGreaterThanOrEqual(LIMIT - 15);
    expect(allowed).toBeLessThan(LIMIT - 15 + Math.ceil(LIMIT / 10));
  });

  it("keeps a block whole, and starts afresh when the window and block have passed", async () => {
    const { live, restarted } = counter(`eviction-block-${crypto.randomUUID()}`);
    expect(await allowedUntilRefused(live, T0)).toBe(LIMIT);
    const [during, after] = await restarted(async (fresh) => [
      await fresh(T0 + WINDOW - 1),
      await fresh(T0 + WINDOW + 1),
    ]);
    expect(during).toBe(false);
    expect(after).toBe(true);
  });

  it("starts afresh in a new window though the row still holds the old one", async () => {
    const { live, restarted } = counter(`eviction-window-${crypto.randomUUID()}`);
    for (let i = 0; i < 19; i++) expect(await live(T0 + i)).toBe(true);
    expect(await restarted((fresh) => allowedUntilRefused(fresh, T0 + WINDOW + 10))).toBe(LIMIT);
  });
});
