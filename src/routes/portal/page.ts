/**
 * The customer portal's page (CONTRACT section 12): the static files `npm run console:build` writes to
 * console/dist/portal/ (console/portal.vite.config.ts), served at /portal/ like the console (registerStaticPages:
 * Application:EnableWebApi, the console's CSP with no other origin, no framing), and answering 404 while
 * Portal:Enabled is off (app/app.ts closedArea). Also GET /portal/logo: the vendor's Portal:LogoUrl fetched by the Worker
 * and served from the portal's own origin, so that the page loads nothing from another origin and its CSP needs none.
 * Files, not API: outside the OpenAPI document.
 */
import type { Context } from "hono";
import { ApiError } from "../../kernel/errors";
import type { AppEnv } from "../../http/app-env";
import type { Router } from "../../http/router";
import { registerStaticPages } from "../static-pages";

export const PORTAL_PAGE_PATH = "/portal";

/** What a logo may be: a picture, no larger than this. */
const LOGO_TYPES = /^image\/(png|jpeg|gif|webp|avif|svg\+xml|x-icon|vnd\.microsoft\.icon)$/;
const LOGO_MAX_BYTES = 512 * 1024;
/** How long browsers and the Worker's cache keep the logo. */
const LOGO_MAX_AGE_SECONDS = 3600;

/**
 * GET /portal/logo: the picture at Portal:LogoUrl (404 when none is set). Only an image of at most 512 KiB is passed
 * on, under a CSP that runs nothing (an SVG logo opened on its own cannot script the portal's origin); anything else
 * is a 502 naming the setting, so the vendor sees what to fix.
 */
async function logo(c: Context<AppEnv>): Promise<Response> {
  const url = c.get("config")["Portal:LogoUrl"];
  if (!url) throw new ApiError(404, "The customer portal has no logo (Portal:LogoUrl is not set)");
  let fetched: Response;
  try {
    fetched = await fetch(url, {
      headers: { accept: "image/*" },
      redirect: "follow",
      cf: { cacheTtl: LOGO_MAX_AGE_SECONDS, cacheEverything: true },
    });
  } catch (error) {
    throw new ApiError(502, `The logo at Portal:LogoUrl could not be fetched: ${String(error)}`);
  }
  if (!fetched.ok) throw new ApiError(502, `The logo at Portal:LogoUrl answered HTTP ${fetched.status}`);
  const type = (fetched.headers.get("content-type") ?? "").split(";")[0]!.trim().toLowerCase();
  if (!LOGO_TYPES.test(type))
    throw new ApiError(502, `The logo at Portal:LogoUrl is not a picture (Content-Type ${type || "none"})`);
  const bytes = await fetched.arrayBuffer();
  if (bytes.byteLength > LOGO_MAX_BYTES)
    throw new ApiError(502, `The logo at Portal:LogoUrl is larger than ${LOGO_MAX_BYTES / 1024} KiB`);
  return new Response(bytes, {
    headers: {
      "Content-Type": type,
      "Cache-Control": `public, max-age=${LOGO_MAX_AGE_SECONDS}`,
      "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; sandbox",
      "X-Content-Type-Options": "nosniff",
      "Cross-Origin-Resource-Policy": "same-origin",
    },
  });
}

/** Registers GET /portal/logo, then GET /portal and every file under it. */
export function registerPortalPage(app: Router): void {
  app.get(`${PORTAL_PAGE_PATH}/logo`, logo);
  registerStaticPages(app, PORTAL_PAGE_PATH, "customer portal");
}
