/** Worker entry: fetch (the Hono app), queue (background jobs by kind) and scheduled (housekeeping). */
import { createApp } from "./app";
import { consumeBatch } from "./jobs";
import { housekeeping } from "./housekeeping";

const app = createApp();

/** SPEC's example calls send `text/json`; it is read as JSON like `application/json-patch+json`. */
function normalizeContentType(request: Request): Request {
  const type = request.headers.get("content-type");
  if (!type || !/^text\/json\b/i.test(type)) return request;
  const headers = new Headers(request.headers);
  headers.set("content-type", type.replace(/^text\/json/i, "application/json"));
  return new Request(request, { headers });
}

export default {
  fetch(request, env, ctx) {
    return app.fetch(normalizeContentType(request), env, ctx);
  },
  queue(batch, env, ctx) {
    return consumeBatch(batch, env, ctx);
  },
  scheduled(controller, env, ctx) {
    ctx.waitUntil(housekeeping(env, new Date(controller.scheduledTime)));
  },
} satisfies ExportedHandler<Bindings>;

export { RateLimiter } from "./durable/rate-limiter";
export { LicenseSeats } from "./durable/license-seats";
