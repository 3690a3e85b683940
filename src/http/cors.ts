/**
 * CORS for the routes a browser page or an Electron renderer calls (licensing operations and login, reports, the
 * update routes and downloads, the signing keys, gRPC-Web and Connect), with the allowed origins taken from
 * `Application:CorsOrigins` (none by default). The Management API never answers cross-origin: an API key does not
 * belong in a web page.
 */
import type { Context, MiddlewareHandler } from "hono";
import { cors } from "hono/cors";
import type { AppEnv } from "./app-env";
import type { Config } from "../kernel/config";

/** Paths browsers may call: the application-facing surface, nothing of the Management API. */
const BROWSER_PATHS =
  /^\/(?:v1\/license\/[^/]+$|v1\/report$|v1\/auth\/login$|v1\/updates\/|v1\/extensions\/keys$|licensing\.v1\.[A-Za-z]+\/[A-Za-z]+$)/;

const handler = cors({
  origin: (origin, c) => {
    const allowed = (c as Context<AppEnv>).get("config")["Application:CorsOrigins"];
    if (allowed.includes("*")) return "*";
    return origin !== "" && allowed.includes(origin) ? origin : null;
  },
  allowMethods: ["GET", "HEAD", "POST"],
  // Headers an application reads from answers: gRPC-Web's status (when it travels in headers), the licensing
  // reason, the update routes' reason, the artifact digest and the rate limiter's Retry-After.
  exposeHeaders: [
    "grpc-status",
    "grpc-message",
    "licensing-reason",
    "X-Service-Reason",
    "X-Service-Sha512",
    "Retry-After",
    "Content-Disposition",
  ],
  maxAge: 600,
});

/** Whether CORS applies to a path: allowed origins are configured and it is one of {@link BROWSER_PATHS}. */
export function corsApplies(path: string, config: Config): boolean {
  // Without allowed origins the service answers as if CORS did not exist (no preflight route either).
  return config["Application:CorsOrigins"].length > 0 && BROWSER_PATHS.test(path);
}

/** The CORS middleware: runs after the request context (it reads the settings), only on {@link BROWSER_PATHS}. */
export const browserCors: MiddlewareHandler<AppEnv> = async (c, next) => {
  if (!corsApplies(c.req.path, c.get("config"))) return next();
  return handler(c, next);
};
