/**
 * The layers of DESIGN.md "Layers and layout", kept by `npm run lint:deps` (part of `npm test`). Imports point one way:
 * kernel -> db -> http -> auth -> domains (licensing, updates, webhooks, mail) -> route modules -> app.
 * Layer membership is by path: route modules are management/, rpc/ and any `*routes.ts` (so auth/'s route modules
 * may use the domains; auth/'s services may not). Type-only imports count (tsPreCompilationDeps), so no circle hides
 * in types.
 */
const KERNEL = "^src/(clock|config|errors|crypto|secrets|version|jobs|memo)\\.ts$|^src/gen/";
const DB = "^src/(db|durable)/|^src/(logging|settings-store)\\.ts$";
const HTTP = "^src/http/";
const ROUTES = "^src/(management|rpc)/|^src/[^/]+/[^/]*routes\\.ts$";
const AUTH = "^src/(auth|protection)/";
const DOMAINS = "^src/(licensing|updates|webhooks|mail|commerce|portal)/";
const APP = "^src/(app|index|housekeeping)\\.ts$|^src/[^/]+\\.d\\.ts$";
const any = (...parts) => parts.join("|");

/** A rule: files of `from` (minus `fromNot`) must not import files of `to`. */
const layer = (name, comment, from, to, fromNot) => ({
  name,
  comment,
  severity: "error",
  from: { path: from, ...(fromNot ? { pathNot: fromNot } : {}) },
  to: { path: to },
});

module.exports = {
  forbidden: [
    {
      name: "no-circular",
      comment: "No import circle, type-only imports included (DESIGN.md, Layers and layout).",
      severity: "error",
      from: { path: "^src/" },
      to: { circular: true },
    },
    layer(
      "layer-kernel",
      "The kernel (clock, config, errors, crypto, secrets, version, jobs, gen/) imports no other layer.",
      KERNEL,
      any(DB, HTTP, AUTH, DOMAINS, ROUTES, APP),
    ),
    layer(
      "layer-db",
      "db/, durable/, logging and the settings store import only the kernel.",
      DB,
      any(HTTP, AUTH, DOMAINS, ROUTES, APP),
    ),
    layer("layer-http", "http/ conventions import only the kernel and db.", HTTP, any(AUTH, DOMAINS, ROUTES, APP)),
    layer(
      "layer-auth",
      "auth/ and protection/ import only kernel, db and http.",
      AUTH,
      any(DOMAINS, ROUTES, APP),
      ROUTES,
    ),
    layer(
      "layer-domains",
      "Domains (licensing, updates, webhooks, mail) never import route modules or the app.",
      DOMAINS,
      any(ROUTES, APP),
      ROUTES,
    ),
    layer("layer-routes", "Route modules (management/, rpc/, *routes.ts) never import the app.", ROUTES, APP),
    {
      name: "durable-objects-know-no-domain",
      comment: "Durable Objects hold state with small typed RPC methods; they know no domain (DESIGN.md).",
      severity: "error",
      from: { path: "^src/durable/" },
      to: { path: any(HTTP, AUTH, DOMAINS, ROUTES, APP) },
    },
    {
      name: "not-to-unresolvable",
      comment: "An import that resolves to nothing is a typo or a missing dependency.",
      severity: "error",
      from: { path: "^src/" },
      to: { couldNotResolve: true, pathNot: "^cloudflare:" },
    },
  ],
  options: {
    doNotFollow: { path: "node_modules" },
    exclude: { path: "node_modules" },
    tsPreCompilationDeps: true,
    // typescript 7 (the native compiler) has no JS API yet; dependency-cruiser reads TypeScript through swc instead.
    parser: "swc",
    tsConfig: { fileName: "tsconfig.json" },
    enhancedResolveOptions: {
      exportsFields: ["exports"],
      conditionNames: ["import", "require", "node", "default", "types"],
      extensions: [".ts", ".d.ts", ".js", ".mjs"],
    },
    reporterOptions: { text: { highlightFocused: true } },
  },
};
