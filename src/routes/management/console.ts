/**
 * The admin console (issue 17): the static files `npm run console:build` writes to console/dist, served by this
 * Worker through its Workers static assets binding at /console/, and only while the REST API it drives is on
 * (Application:EnableWebApi). wrangler.toml runs the Worker first, so this gate and the headers below always apply.
 */
import type { Router } from "../../http/router";
import { registerStaticPages } from "../static-pages";

export const CONSOLE_PATH = "/console";

/** Registers GET /console and everything under it (outside the OpenAPI document: these are files, not API). */
export function registerConsole(app: Router): void {
  registerStaticPages(app, CONSOLE_PATH, "console");
}
