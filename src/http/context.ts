import type { Context } from "hono";
import type { AppEnv, Principal } from "./app-env";
import { heldFirstBatch } from "../db/first-batch";
import type { Config } from "../kernel/config";
import type { Db } from "../db/client";
import type { ServiceLog } from "../db/logging";

/** What services get from a request: its dependencies, never the HTTP request itself (DESIGN house style). */
export interface ServiceContext {
  db: Db;
  config: Config;
  env: Bindings;
  principal: Principal | undefined;
  requestId: string;
  clientIp: string;
  /** Work that may finish after the response (events, logs). */
  waitUntil(promise: Promise<unknown>): void;
  /** The service log of the request: warnings and errors written after the response (db/logging.ts). */
  log?: ServiceLog;
}

export function serviceContext(c: Context<AppEnv>): ServiceContext {
  return {
    db: c.get("db"),
    config: c.get("config"),
    env: c.env,
    principal: c.get("principal") as Principal | undefined,
    requestId: c.get("requestId"),
    clientIp: c.get("clientIp"),
    log: c.get("log"),
    waitUntil: (p) => {
      try {
        c.executionCtx.waitUntil(p);
      } catch {
        // No execution context (direct app.request in a script): let the promise run on its own.
        p.catch((e: unknown) => console.error(e));
      }
    },
  };
}

/** Who is asking, as the transport saw it. */
export interface ClientInfo {
  address: string;
  /** `request.cf` geodata as JSON (country, region, city, latitude, longitude, timezone), when known. */
  geoLocation?: string | undefined;
  /** The install's random id (`X-Service-Install-Id`, release adoption counts by it), when sent and well formed. */
  installId?: string | undefined;
}

/** The request header naming the install's own random id (CONTRACT section 8). */
export const INSTALL_ID_HEADER = "X-Service-Install-Id";
/** An install id as sent: 1 to 128 visible ASCII characters (a UUID, typically). */
export const INSTALL_ID_PATTERN = /^[\x21-\x7e]{1,128}$/;

/** The fields of `request.cf` a trace keeps as the client's location. */
const GEO_FIELDS = ["country", "region", "city", "latitude", "longitude", "timezone"] as const;

/** The client's address and `request.cf` geodata, as traces and reports keep them. */
export function clientInfo(c: Context<AppEnv>): ClientInfo {
  const cf = (c.req.raw as Request & { cf?: Record<string, unknown> }).cf;
  let geo: Record<string, unknown> | undefined;
  if (cf)
    for (const key of GEO_FIELDS) {
      const value = cf[key];
      if (value !== undefined) (geo ??= {})[key] = value;
    }
  const installId = c.req.header(INSTALL_ID_HEADER);
  return {
    address: c.get("clientIp"),
    ...(geo ? { geoLocation: JSON.stringify(geo) } : {}),
    ...(installId !== undefined && INSTALL_ID_PATTERN.test(installId) ? { installId } : {}),
  };
}

/**
 * The error to answer for `error` raised before the request's pending checks were settled: a check's refusal comes
 * first, as it would have from the guard. Called by the app's error handler.
 */
export async function settleFirst(c: Context<AppEnv>, error: Error): Promise<Error> {
  // An error raised before the request's D1 session was opened (the production checks) has no check to settle.
  const db = c.get("db") as Db | undefined;
  const batch = db && heldFirstBatch(db);
  if (!batch) return error;
  try {
    await batch.flush(db);
    return error;
  } catch (refusal) {
    return refusal instanceof Error ? refusal : error;
  }
}

/**
 * The origin of every absolute URL the service hands out (download URLs, links in feeds): Application:PublicUrl,
 * which the production checks require outside Development; in Development without it, the request's own (its URL's
 * scheme and host; X-Forwarded-Host and the like are never read).
 */
export function publicOrigin(c: Context<AppEnv>): string {
  return c.get("config")["Application:PublicUrl"] ?? new URL(c.req.url).origin;
}
