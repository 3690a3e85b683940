/** Worker entry: fetch (the Hono app), queue (its job handlers in one table) and scheduled (housekeeping). */
import { createApp, frontDoor } from "./app/app";
import { pingDoor } from "./app/ping-door";
import { type JobHandlerEntry, type JobHandlers, consumeBatch } from "./kernel/jobs";
import { consumeExpiredSeats } from "./licensing/license-events";
import { writeTraces } from "./licensing/traces";
import { writeDownloadCounts } from "./updates/download-counts";
import { writeAdoption } from "./updates/adoption";
import { writeSessions } from "./updates/sessions";
import { consumeImportChunk } from "./imports/import-service";
import { DEAD_LETTER_QUEUE, consumeDeadLetter } from "./webhooks/dead-letter";
import { consumeDelivery } from "./webhooks/deliver";
import { housekeeping } from "./app/housekeeping";

const app = createApp();

/** The queue's job handlers, one per kind of kernel/jobs.ts (a missing one does not type-check). */
const jobs: JobHandlers = {
  "webhook.delivery": consumeDelivery,
  "license.seats.expired": consumeExpiredSeats,
  "license.traces": { batch: writeTraces },
  "release.downloads.counted": { batch: writeDownloadCounts },
  "release.adoption": { batch: writeAdoption },
  "release.sessions": { batch: writeSessions },
  "import.chunk": consumeImportChunk,
};

/**
 * The handlers of the webhook dead-letter queue (told apart by its name): what ends there is recorded as given up,
 * never delivered. A message of another kind there is logged and acknowledged like a stray (kernel/jobs.ts).
 */
const deadLetters: Readonly<Record<string, JobHandlerEntry>> = { "webhook.delivery": consumeDeadLetter };

/** SPEC's example calls send `text/json`; it is read as JSON like `application/json-patch+json`. */
function normalizeContentType(request: Request): Request {
  const type = request.headers.get("content-type");
  if (!type || !/^text\/json\b/i.test(type)) return request;
  const headers = new Headers(request.headers);
  headers.set("content-type", type.replace(/^text\/json/i, "application/json"));
  return new Request(request, { headers });
}

export default {
  async fetch(request, env, ctx) {
    // The front doors: an anonymous poll answered from the isolate's memo, an anonymous session ping taken at once.
    const door = request.method === "GET" ? await frontDoor(request, env) : await pingDoor(request, env, ctx);
    if (door instanceof Response) return door;
    return app.fetch(normalizeContentType(door ?? request), env, ctx);
  },
  queue(batch, env, ctx) {
    return consumeBatch(batch, env, ctx, batch.queue === DEAD_LETTER_QUEUE ? deadLetters : jobs);
  },
  scheduled(controller, env, ctx) {
    ctx.waitUntil(housekeeping(env, new Date(controller.scheduledTime)));
  },
} satisfies ExportedHandler<Bindings>;

export { RateLimiter } from "./durable/rate-limiter";
export { LicenseSeats } from "./licensing/seat-object";
