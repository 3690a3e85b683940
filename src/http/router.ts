import { OpenAPIHono } from "@hono/zod-openapi";
import type { AppEnv } from "../app-env";
import { validationHook } from "./respond";

/** A router whose schema violations become problem details; every module registers its routes on one. */
export type Router = OpenAPIHono<AppEnv>;

export function createRouter(): Router {
  return new OpenAPIHono<AppEnv>({ defaultHook: validationHook });
}
