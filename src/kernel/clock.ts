/**
 * The service's one source of time. Code never calls `Date.now()` or `new Date()` for a business decision; it asks
 * `clock.now()`, so expiry, rate windows and caches can be tested by moving this clock (tests share the isolate).
 */
export const clock = {
  now: (): Date => new Date(),
};

/** The current time as the ISO string form stored in D1 and sent on the wire (`yyyy-MM-ddTHH:mm:ss.fffZ`). */
export function nowIso(): string {
  return clock.now().toISOString();
}
