/**
 * The service log of a request (db/logging.ts): the middleware that gives every request a ServiceLog and writes its
 * entries after the response, in one batch, through `waitUntil`; and the entry the one error path (renderError)
 * adds for every request that fails with a 5xx status. Nothing here can change or delay the response.
 */
import type { Context, MiddlewareHandler } from "hono";
import type { AppEnv } from "./app-env";
import { getDb } from "../db/client";
import { ServiceLog } from "../db/logging";

/** Hands `promise` to the runtime so it may finish after the response; without an execution context it just runs. */
function afterResponse(c: Context<AppEnv>, promise: Promise<unknown>): void {
  try {
    c.executionCtx.waitUntil(promise);
  } catch {
    // No execution context (app.request in a script): the promise runs on its own and never rejects.
  }
}

/** Writes the entries of `log` off the response path. */
function flushLater(c: Context<AppEnv>, log: ServiceLog): void {
  if (log.pending === 0) return;
  // The raw binding, not c.get("db"): the request may have failed before the context middleware set it.
  afterResponse(c, log.flush(getDb(c.env.DB), c.get("requestId")));
}

/** First middleware of the app: the request's ServiceLog, written once the rest of the request is done. */
export const requestLog: MiddlewareHandler<AppEnv> = async (c, next) => {
  const log = new ServiceLog();
  c.set("log", log);
  try {
    await next();
  } finally {
    flushLater(c, log);
  }
};

/**
 * Records a request that failed with a 5xx status: message, the error's stack, and where it happened. The path is
 * logged without its query string, which can carry a user key.
 */
export function logFailure(c: Context<AppEnv>, error: Error, status: number, message: string): void {
  try {
    const own = c.get("log") as ServiceLog | undefined;
    const log = own ?? new ServiceLog();
    const principal = c.get("principal") as AppEnv["Variables"]["principal"] | undefined;
    log.error(message, {
      error,
      properties: {
        method: c.req.method,
        path: c.req.path,
        status,
        clientIp: c.get("clientIp") ?? c.req.header("cf-connecting-ip") ?? null,
        ...(principal?.userName ? { user: principal.userName } : {}),
      },
    });
    // Outside the middleware (a caller that renders errors itself) nobody else would write the entry.
    if (!own) flushLater(c, log);
  } catch (e) {
    console.error("service log: the failure could not be recorded", e);
  }
}
