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

/** The per-IP limiter, and a fresh instance of it over the same storage (the object after an eviction). */
function ipLimiter(name: string): { live: Counter; restarted: Restarted } {
  const stub = env.RATE_LIMITER.getByName(name);
  const hit = (object: RateLimiter) => async (now: number) => (await object.hit(now, LIMIT, WINDOW, WINDOW)).allowed;
  return {
    live: (now) => hit(stub as unknown as RateLimiter)(now),
    restarted: (use) =>
      runInDurableObject(stub, (instance, state) => {
        const fresh = new (instance.constructor as new (s: DurableObjectState, e: Bindings) => RateLimiter)(state, env);
        return use(hit(fresh));
      }),
  };
}

/** The license's budget in its seat object, the same way. */
function licenseBudget(name: string): { live: Counter; restarted: Restarted } {
  const stub = env.LICENSE_SEATS.getByName(name);
  const budget: Budget = { limit: LIMIT, windowMs: WINDOW };
  const spend = (object: SeatStore) => async (now: number) => !(await object.spend(budget, now)).overBudget;
  return {
    live: (now) => spend(stub as unknown as SeatStore)(now),
    restarted: (use) =>
      runInDurableObject(stub, (instance, state) => {
        const fresh = new (instance.constructor as new (s: DurableObjectState, e: Bindings) => SeatStore)(state, env);
        return use(spend(fresh));
      }),
  };
}

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
