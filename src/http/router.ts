import { OpenAPIHono, type RouteConfig } from "@hono/zod-openapi";
import type { Handler } from "hono";
import type { AppEnv } from "./app-env";
import { validationHook } from "./respond";

/** A router whose schema violations become problem details; every module registers its routes on one. */
export type Router = OpenAPIHono<AppEnv>;

export function createRouter(): Router {
  return new OpenAPIHono<AppEnv>({ defaultHook: validationHook });
}

/**
 * Registers a route that answers bodies OpenAPI typing does not model (YAML feeds, artifact bytes, redirects): it is
 * documented from its `createRoute` declaration, runs its declared middleware, and is served by a plain handler that
 * validates its own input. JSON routes use `app.openapi` instead.
 */
export function documented(app: Router, route: RouteConfig, handler: Handler<AppEnv>): void {
  const { middleware, ...doc } = route;
  app.openAPIRegistry.registerPath(doc);
  const path = route.path.replace(/\{(\w+)\}/g, ":$1");
  const chain = [
    ...(Array.isArray(middleware) ? middleware : middleware ? [middleware] : []),
    handler,
  ] as Handler<AppEnv>[];
  app.on([route.method.toUpperCase()], [path], ...chain);
}
