/**
 * Pages built beside the console (the admin console, the air-gapped `/activate/` page, the customer portal): static
 * files `npm run console:build` writes to console/dist, served from the Workers static assets binding, only while the
 * REST API is on, with headers that forbid other origins and framing.
 */
import type { Context } from "hono";
import type { AppEnv } from "../http/app-env";
import { ApiError } from "../kernel/errors";
import type { Router } from "../http/router";

/** The console's own pages load nothing from elsewhere and may not be framed. */
const CONSOLE_HEADERS: Record<string, string> = {
  "Content-Security-Policy":
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
  "X-Content-Type-Options": "nosniff",
  "X-Frame-Options": "DENY",
  "Referrer-Policy": "no-referrer",
};

/**
 * Registers GET `path` (redirected to `path/`) and every file under it from the Workers static assets: only while the
 * REST API is on, with the console's headers (no other origin, no framing), index pages never cached. The console
 * uses it, and so does every page built beside it (the air-gapped `/activate/` page). `what` names it in messages.
 */
export function registerStaticPages(app: Router, path: string, what: string): void {
  async function serve(c: Context<AppEnv>): Promise<Response> {
    if (!c.get("config")["Application:EnableWebApi"])
      throw new ApiError(404, `The ${what} is disabled with the REST API`);
    if (!c.env.ASSETS) throw new ApiError(404, `The ${what} is not part of this build (npm run console:build)`);
    const answer = await c.env.ASSETS.fetch(c.req.raw);
    if (answer.status === 404) throw new ApiError(404, `No ${what} file at ${c.req.path}`);
    const res = new Response(answer.body, answer);
    for (const [name, value] of Object.entries(CONSOLE_HEADERS)) res.headers.set(name, value);
    // index.html names the hashed bundles of the current build: never cache it; the hashed files may be cached.
    if (!c.req.path.startsWith(`${path}/assets/`)) res.headers.set("Cache-Control", "no-cache");
    return res;
  }
  app.get(path, (c) => c.redirect(`${path}/`, 308));
  app.get(`${path}/*`, serve);
}
