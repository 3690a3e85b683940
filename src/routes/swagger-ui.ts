/**
 * Swagger UI served by the service itself (issue 14): the page, its initializer and swagger-ui-dist's bundle and
 * stylesheet (pinned in package.json, copied into the Worker's static assets by `npm run console:build`, so they stay
 * out of the Worker's bundle), all under /swagger/, so the UI works offline and loads nothing from a CDN. A Content-Security-Policy keeps every script to the service's own origin.
 * `/swagger` and `/swagger/` both answer the page; app/app.ts's gate answers 404 while Application:EnableSwagger is off.
 */
import type { Context } from "hono";
import { ApiError } from "../kernel/errors";
import type { AppEnv } from "../http/app-env";
import type { Router } from "../http/router";

/** Absolute paths: the page is served at `/swagger` and `/swagger/` alike, so relative ones would differ. */
const ASSETS = "/swagger/assets";

const page = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Licensing Service API</title>
<link rel="stylesheet" href="${ASSETS}/swagger-ui.css">
</head>
<body>
<div id="swagger-ui"></div>
<script src="${ASSETS}/swagger-ui-bundle.js"></script>
<script src="${ASSETS}/swagger-initializer.js"></script>
</body>
</html>
`;

const initializer = (
  documentPath: string,
) => `window.ui = SwaggerUIBundle({ url: ${JSON.stringify(documentPath)}, dom_id: "#swagger-ui", deepLinking: true });
`;

// Swagger UI sets inline styles and shows data: images; scripts and everything else come from this origin only.
const POLICY =
  "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'";

/** Registers the Swagger UI page and its assets; `documentPath` is the OpenAPI document's path. */
export function registerSwaggerUi(app: Router, documentPath: string): void {
  const script = initializer(documentPath);
  const html = (c: Context<AppEnv>) =>
    c.html(page, 200, { "Content-Security-Policy": POLICY, "Cache-Control": "no-cache" });
  app.get("/swagger", html);
  app.get("/swagger/", html);
  // The assets change only with the package's pinned version, which a deployment changes: revalidated hourly.
  const headers = { "Cache-Control": "public, max-age=3600", "X-Content-Type-Options": "nosniff" };
  const file = async (c: Context<AppEnv>) => {
    const answer = c.env.ASSETS ? await c.env.ASSETS.fetch(c.req.raw) : undefined;
    if (!answer?.ok) throw new ApiError(404, `${c.req.path} is not part of this build (npm run console:build)`);
    const res = new Response(answer.body, answer);
    for (const [name, value] of Object.entries(headers)) res.headers.set(name, value);
    return res;
  };
  app.get(`${ASSETS}/swagger-ui-bundle.js`, file);
  app.get(`${ASSETS}/swagger-ui.css`, file);
  app.get(`${ASSETS}/swagger-initializer.js`, (c) =>
    c.body(script, 200, { ...headers, "Content-Type": "text/javascript; charset=utf-8" }),
  );
}
