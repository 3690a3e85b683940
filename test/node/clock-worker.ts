/**
 * A test-only Worker entry: the service's own entry (src/index.ts), plus `PUT /__test/clock` with a body of
 * milliseconds that sets the service's clock (src/kernel/clock.ts) that far ahead of real time, for Node-side tests that need
 * time to pass (a scheduled rollout step turning on). It exists only here: tests bundle it with
 * `startLocalWorker({ entry: CLOCK_ENTRY })` and move the clock with moveClock (kernel/clock.ts); wrangler.toml's `main`
 * (production) never includes it.
 * The clock keeps running from the moved instant, as the workerd tests' movableClock does within a test.
 */
import { clock } from "../../src/kernel/clock";
import service from "../../src/index";
import { CLOCK_PATH } from "./clock.ts";

export { LicenseSeats, RateLimiter } from "../../src/index";

const real = clock.now;

export default {
  ...service,
  async fetch(request, env, ctx) {
    if (new URL(request.url).pathname !== CLOCK_PATH) return service.fetch(request, env, ctx);
    const ahead = Number(await request.text());
    if (request.method !== "PUT" || !Number.isFinite(ahead)) return new Response("PUT milliseconds", { status: 400 });
    clock.now = ahead === 0 ? real : () => new Date(real().getTime() + ahead);
    return new Response(clock.now().toISOString());
  },
} satisfies ExportedHandler<Bindings>;
