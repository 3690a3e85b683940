/**
 * The Hono app: request context (id, client IP, settings, database), the administrator bootstrap, the health
 * check, the EnableWebApi / EnableSwagger gates, every module's routes, the OpenAPI document and Swagger UI, and the
 * one error path. Built once per isolate.
 */
import type { Context, MiddlewareHandler } from "hono";
import type { AppEnv } from "../http/app-env";
import { ensureAdmin } from "../auth/bootstrap";
import { ipProtection, ipVerdict } from "../protection/limits";
import { clientAddress, signedByGateway } from "../protection/client-ip";
import { clock } from "../kernel/clock";
import { API_KEY_SCHEME, BEARER_SCHEME } from "../auth/guard";
import { serviceContext, settleFirst } from "../http/context";
import { registerAuth } from "../routes/auth/auth";
import { registerConsoleAuth } from "../routes/auth/console";
import { type Config, keptConfig, unsafeSetting } from "../kernel/config";
import { loadConfig } from "../db/settings-store";
import { openRequestDb, reportRequestDb, serverTiming, serverTimingOn } from "../http/d1-session";
import { D1Work } from "../db/work";
import { keepAnswer, pointFront, rememberedAnonymousAnswer } from "../delivery/answer-memo";
import { saysWhoAsks } from "../delivery/caller";
import { MAX_JSON_BODY_BYTES, jsonBodyLimit } from "../http/body-limit";
import { IDEMPOTENCY_PARAMETER } from "../http/idempotency";
import { browserCors, corsApplies } from "../http/cors";
import { ApiError } from "../kernel/errors";
import { requestLog } from "../http/request-log";
import { errorResponse, renderError } from "../http/respond";
import { type Router, createRouter } from "../http/router";
import { registerApiKeys } from "../routes/management/api-keys";
import { registerAdoption } from "../routes/management/adoption";
import { registerReleaseHealth } from "../routes/management/release-health";
import { registerImports } from "../routes/management/imports";
import { registerKeygenRoutes } from "../routes/keygen/keygen";
import { registerAssemblies } from "../routes/management/assemblies";
import { registerConsole } from "../routes/management/console";
import { registerCustomers } from "../routes/management/customers";
import { registerEmail } from "../routes/management/email";
import { registerInfo } from "../routes/management/info";
import { registerOverview } from "../routes/management/overview";
import { registerLicenseTemplates } from "../routes/management/license-templates";
import { registerLicenseTokens } from "../routes/management/license-tokens";
import { registerLicenseFiles } from "../routes/management/license-files";
import { registerLicenseTraces } from "../routes/management/license-traces";
import { registerLicenses } from "../routes/management/licenses";
import { registerLog } from "../routes/management/log";
import { registerOrders } from "../routes/management/orders";
import { registerProducts } from "../routes/management/products";
import { registerReleases } from "../routes/management/releases";
import { registerReports } from "../routes/management/reports";
import { registerResources } from "../routes/management/resources";
import { registerDownloads } from "../routes/management/release-downloads";
import { registerSigningKeys } from "../routes/auth/signing-keys";
import { notModifiedFor } from "../http/conditionals";
import { registerUpdateRoutes } from "../routes/updates/updates";
import { registerFormatRoutes } from "../routes/updates/formats";
import { registerPackageRoutes } from "../routes/updates/packages";
import { registerSessionRoutes } from "../routes/updates/sessions";
import { registerLicensingRoutes } from "../routes/licensing/licensing";
import { registerOfflineActivation } from "../routes/licensing/offline-activation";
import { registerRpc } from "../routes/rpc/mount";
import { registerSettings } from "../routes/management/settings";
import { registerUsers } from "../routes/management/users";
import { registerWebhooks } from "../routes/management/webhooks";
import { registerCommerce } from "../routes/commerce/commerce";
import { registerPortal } from "../routes/portal/portal";
import { registerPortalPage } from "../routes/portal/page";
import { PORTAL_COOKIE, PORTAL_SCHEME } from "../portal/portal-session";
import { registerSwaggerUi } from "../routes/swagger-ui";
import { SERVICE_VERSION } from "../kernel/version";
import { wireLicensingReactions } from "../licensing/reactions";
import { licensingReactions } from "./reactions";

export { SERVICE_VERSION } from "../kernel/version";
export const OPENAPI_PATH = "/swagger/v1/swagger.json";

/** Request context every route relies on. */
const context: MiddlewareHandler<AppEnv> = async (c, next) => {
  c.set("requestId", c.req.header("cf-ray") ?? crypto.randomUUID());
  const { config } = await loadConfig(c.env, c.env.DB);
  c.set("config", config);
  c.set("clientIp", await clientAddress(c.req.raw.headers, config, clock.now().getTime()));
  // Outside development an unsafe configuration stops every route (the health check included) with a 500 naming
  // the setting, before the bootstrap could create an administrator with a published password.
  const unsafe = unsafeSetting(config);
  if (unsafe) throw unsafe;
  const rdb = openRequestDb(c);
  c.set("db", rdb.db);
  await ensureAdmin(c.env.DB, config, { clientIp: c.get("clientIp") });
  await next();
  // Server-Timing: always in development, by setting elsewhere (it tells how the database is used).
  reportRequestDb(c, rdb, serverTimingOn(config));
};

/**
 * Management, auth and licensing answers carry tokens, keys and customer records: no cache may keep them. Routes
 * whose answers may be cached (feeds, update checks, downloads, the key set) say so with their own Cache-Control,
 * which stays; every other answer of the API and the gRPC services, errors included, gets `no-store`.
 */
const noStoreByDefault: MiddlewareHandler<AppEnv> = async (c, next) => {
  await next();
  const path = c.req.path;
  if (!(path.startsWith("/v1/") || path.startsWith("/licensing.v1.")) || c.res.headers.has("Cache-Control")) return;
  try {
    c.res.headers.set("Cache-Control", "no-store");
  } catch {
    // A response with immutable headers (one passed through from fetch or R2): copied, then marked.
    const res = new Response(c.res.body, c.res);
    res.headers.set("Cache-Control", "no-store");
    c.res = res;
  }
};

/** The health check (SPEC 8): outside the OpenAPI document, anonymous, at the configured path. */
const health: MiddlewareHandler<AppEnv> = async (c, next) => {
  const config = c.get("config");
  if (!config["Application:EnableHealthCheck"] || c.req.path !== config["Application:HealthCheckEndPoint"])
    return next();
  if (c.req.method !== "GET" && c.req.method !== "HEAD") return next();
  try {
    // Healthy means D1 answers a statement: no table, no rule, so no query to build (db/rules.ts, how D1 is queried).
    await c.get("db").$client.prepare("SELECT 1").first();
    return c.text("Healthy", 200, { "Cache-Control": "no-store" });
  } catch (e) {
    console.error("health check: D1 did not answer", e);
    return c.text("Unhealthy", 503, { "Cache-Control": "no-store" });
  }
};

/**
 * Application:EnableWebApi, EnableSwagger and EnableGrpcWeb switch whole areas off (404, as if absent).
 * EnableGrpcWeb is the browsers' gRPC-Web only (SPEC: the native gRPC endpoint is separate): a call the native gRPC
 * gateway signed (`viaGateway`, IpFiltering:GatewaySecret) passes while it is off.
 */
function closedArea(path: string, config: Config, viaGateway = false): ApiError | undefined {
  if (path.startsWith("/v1/") && !config["Application:EnableWebApi"])
    return new ApiError(404, "The REST API is disabled");
  if (
    (path.startsWith("/v1/portal/") || path === "/portal" || path.startsWith("/portal/")) &&
    !config["Portal:Enabled"]
  )
    return new ApiError(404, "The customer portal is disabled");
  if (path.startsWith("/licensing.v1.") && !config["Application:EnableGrpcWeb"] && !viaGateway)
    return new ApiError(404, "gRPC-Web is disabled");
  if (
    (path === "/swagger" || path.startsWith("/swagger/")) &&
    !(config["Application:EnableSwagger"] && config["Application:EnableWebApi"])
  ) {
    return new ApiError(404, "Swagger is disabled");
  }
  return undefined;
}

const gates: MiddlewareHandler<AppEnv> = async (c, next) => {
  const config = c.get("config");
  const viaGateway =
    c.req.path.startsWith("/licensing.v1.") &&
    !config["Application:EnableGrpcWeb"] &&
    (await signedByGateway(c.req.raw.headers, config, clock.now().getTime()));
  const closed = closedArea(c.req.path, config, viaGateway);
  if (closed) throw closed;
  await next();
};

/**
 * The answer memo's filling: after the route answered, an answer the route declared keepable (`keep`, set by the
 * update routes' throughCache) is kept in the isolate (delivery/answer-memo.ts), and the request's URL pointed at it
 * for the front door. The app runs it after every pre-route gate (createApp), next to the routes, so what it keeps is
 * the route's own answer before any gate adds to it, and the front door asks every gate of PRE_ROUTE before it answers
 * from what this layer kept. Routes never fill the memo themselves.
 */
const answerMemo: MiddlewareHandler<AppEnv> = async (c, next) => {
  await next();
  const keep = c.get("keep");
  if (!keep) return;
  const now = clock.now().getTime();
  pointFront(new URL(c.req.url), keep.key, keep.until);
  if (keep.answer) serviceContext(c).waitUntil(keepAnswer(keep.key, keep.answer.clone(), now, keep.maxAgeMs));
};

/**
 * What the front door knows of a request when it asks a gate: an anonymous GET whose answer the isolate keeps, or an
 * anonymous session ping (app/ping-door.ts).
 */
export interface DoorRequest {
  method: string;
  url: URL;
  headers: Headers;
  config: Config;
  now: number;
  /** The client's address (protection/client-ip.ts), worked out once when a gate first asks. */
  clientIp(): string | Promise<string>;
}

/**
 * A pre-route gate: the middleware the app runs before every route, and its answer to the front door: whether it
 * leaves this request alone (refuses, counts, logs and changes nothing the front door does not add itself: the 304
 * and Server-Timing). False sends the request through the app, where the middleware acts.
 */
export interface PreRouteGate {
  name: string;
  middleware: MiddlewareHandler<AppEnv>;
  quietFor(door: DoorRequest): boolean | Promise<boolean>;
}

/**
 * The one list of pre-route gates, in the order the app runs them. The app's middleware chain is this list
 * (createApp), and the front door asks every gate of it (frontDoor): a gate added here applies to kept answers too,
 * and cannot be added without saying what the front door makes of it.
 */
export const PRE_ROUTE: readonly PreRouteGate[] = [
  // A kept answer carries the Cache-Control its route set.
  { name: "noStoreByDefault", middleware: noStoreByDefault, quietFor: () => true },
  // Entries come from routes and failures; a kept answer adds none.
  { name: "requestLog", middleware: requestLog, quietFor: () => true },
  // An unsafe configuration stops every request (the app's 500); Server-Timing is added by the front door.
  { name: "context", middleware: context, quietFor: (door) => !unsafeSetting(door.config) },
  { name: "browserCors", middleware: browserCors, quietFor: (door) => !corsApplies(door.url.pathname, door.config) },
  {
    name: "ipProtection",
    middleware: ipProtection,
    quietFor: (door) => {
      const free = (ip: string) => ipVerdict(ip, door.url.pathname, door.config) === "free";
      const ip = door.clientIp();
      return typeof ip === "string" ? free(ip) : ip.then(free);
    },
  },
  {
    name: "health",
    middleware: health,
    quietFor: ({ url, config }) =>
      !(config["Application:EnableHealthCheck"] && url.pathname === config["Application:HealthCheckEndPoint"]),
  },
  // The front door answers no gRPC path: the gateway's signature never matters here.
  { name: "gates", middleware: gates, quietFor: (door) => !closedArea(door.url.pathname, door.config) },
  // A GET has no body; a ping's must say its length, within the limit.
  {
    name: "jsonBodyLimit",
    middleware: jsonBodyLimit,
    quietFor: ({ method, headers }) => {
      if (method === "GET") return true;
      const length = Number(headers.get("content-length") ?? Number.NaN);
      return Number.isInteger(length) && length <= MAX_JSON_BODY_BYTES;
    },
  },
];

/** The Server-Timing of an answer that did no D1 work. */
export const NO_D1_WORK = serverTiming(new D1Work());

/**
 * The front door of the hottest route, an auto-updater's anonymous poll of a feed or update check: answered from the
 * isolate's memo of anonymous answers (delivery/answer-memo.ts) before the app is entered, when every pre-route gate
 * of the app (PRE_ROUTE, the same list the app runs) leaves it alone. Anything else, and every miss, goes through the
 * app. The answer is the app's own (its status, body and headers as the route made them), with what the middlewares
 * would add: a 304 for a matching If-None-Match, and Server-Timing (no D1 work) when it is on.
 */
export async function frontDoor(
  request: Request,
  env: Bindings,
  preRoute: readonly PreRouteGate[] = PRE_ROUTE,
): Promise<Response | undefined> {
  if (request.method !== "GET") return undefined;
  const url = new URL(request.url);
  const now = clock.now().getTime();
  const kept = saysWhoAsks(request.headers, url) ? undefined : rememberedAnonymousAnswer(url, now);
  if (!kept) return undefined;
  const door = await openDoor(request, env, url, now);
  if (!(await allQuiet(door, preRoute))) return undefined;
  const res = notModifiedFor(request.headers.get("if-none-match") ?? undefined, kept());
  if (serverTimingOn(door.config)) res.headers.append("Server-Timing", NO_D1_WORK);
  return res;
}

/** The front door's view of a request, for its gates (the configuration as the isolate keeps it). */
export async function openDoor(request: Request, env: Bindings, url: URL, now: number): Promise<DoorRequest> {
  const { config } = keptConfig() ?? (await loadConfig(env, env.DB));
  let ip: string | Promise<string> | undefined;
  return {
    method: request.method,
    url,
    headers: request.headers,
    config,
    now,
    clientIp: () => {
      ip ??= clientAddress(request.headers, config, now);
      return ip;
    },
  };
}

/** Whether every pre-route gate leaves the request alone (the app need not run them). */
export async function allQuiet(door: DoorRequest, preRoute: readonly PreRouteGate[]): Promise<boolean> {
  for (const gate of preRoute) {
    const quiet = gate.quietFor(door);
    // Most gates answer at once: no await (a microtask each) on the hot path for them.
    if (quiet === false || (quiet !== true && !(await quiet))) return false;
  }
  return true;
}

let documents: { header: string; document: unknown } | undefined;

interface Operation {
  summary?: string;
  description?: string;
  tags?: string[];
  security?: Record<string, string[]>[];
  "x-roles"?: string[];
  parameters?: unknown[];
}

/** Who may call an operation, in words, from its declared security and roles. */
function accessNote(op: Operation): string {
  const schemes = (op.security ?? []).flatMap((s) => Object.keys(s));
  const credential =
    schemes.length === 0
      ? "Anonymous."
      : schemes[0] === PORTAL_SCHEME
        ? "Customer portal session only (its cookie, and X-CSRF-Token on writes); never an API key or bearer token."
        : schemes.length > 1
          ? "API key or bearer token."
          : schemes[0] === API_KEY_SCHEME
            ? "API key only."
            : "Bearer token only.";
  return op["x-roles"] ? `${credential} Roles: ${op["x-roles"].join(", ")}.` : credential;
}

/** Completes the generated document: every operation says who may call it, and every tag used is declared. */
function complete(document: { paths?: Record<string, Record<string, Operation>>; tags?: { name: string }[] }): void {
  const tags = new Set<string>();
  for (const item of Object.values(document.paths ?? {})) {
    for (const [method, op] of Object.entries(item)) {
      op.description = [op.description ?? op.summary, accessNote(op)].filter(Boolean).join("\n\n");
      // The guard takes an Idempotency-Key on the POSTs of role-checked routes (auth/guard.ts, http/idempotency.ts).
      if (method === "post" && op["x-roles"]) op.parameters = [...(op.parameters ?? []), IDEMPOTENCY_PARAMETER];
      for (const tag of op.tags ?? []) tags.add(tag);
    }
  }
  document.tags = [...tags].sort().map((name) => ({ name }));
}

/** The OpenAPI document, generated from the routes once per isolate (and again if the key header name changes). */
export function openApiDocument(app: Router, config: Config): unknown {
  const header = config["Application:ApiKeyHeaderName"];
  if (documents?.header !== header) {
    app.openAPIRegistry.registerComponent("securitySchemes", API_KEY_SCHEME, {
      type: "apiKey",
      in: "header",
      name: header,
    });
    app.openAPIRegistry.registerComponent("securitySchemes", PORTAL_SCHEME, {
      type: "apiKey",
      in: "cookie",
      name: PORTAL_COOKIE,
      description:
        "The customer portal's session cookie (POST /v1/portal/sign-in); writes also need the X-CSRF-Token header it returned.",
    });
    app.openAPIRegistry.registerComponent("securitySchemes", BEARER_SCHEME, {
      type: "http",
      scheme: "bearer",
      bearerFormat: "JWT",
      description:
        "A JWT from POST /v1/auth/login, verified as RFC8725 advises: the algorithm is pinned to HS256 (none and every other algorithm are refused), and exp, jti, sub and the issuer are required; logout revokes the jti.",
    });
    const document = app.getOpenAPIDocument({
      openapi: "3.0.3",
      info: {
        title: "Licensing Service API",
        version: SERVICE_VERSION,
        description: "Manage products, customers, orders and licenses; run licensing operations; serve updates.",
        contact: { name: "Licensing service operators" },
      },
      // The service's own origin, whether local (wrangler dev) or production: every route here is public.
      servers: [
        { url: "/", description: "This service (production, or local under wrangler dev)", "x-internal": false },
      ],
    });
    complete(document as unknown as Parameters<typeof complete>[0]);
    documents = { header, document };
  }
  return documents.document;
}

/**
 * Builds the app with every module's routes, behind the pre-route gates (PRE_ROUTE unless a test adds one) and,
 * innermost, the answer-memo layer that keeps what routes declare keepable.
 */
export function createApp(preRoute: readonly PreRouteGate[] = PRE_ROUTE): Router {
  wireLicensingReactions(licensingReactions);
  const app = createRouter();
  app.use("*", ...preRoute.map((gate) => gate.middleware), answerMemo);

  registerAuth(app);
  registerConsoleAuth(app);
  registerResources(app);
  registerSigningKeys(app);
  registerUpdateRoutes(app);
  registerFormatRoutes(app);
  registerPackageRoutes(app);
  registerSessionRoutes(app);
  registerLicensingRoutes(app);
  registerOfflineActivation(app);
  registerRpc(app);
  registerUsers(app);
  registerApiKeys(app);
  registerCustomers(app);
  registerImports(app);
  registerKeygenRoutes(app);
  registerProducts(app);
  registerOrders(app);
  registerReleases(app);
  registerAdoption(app);
  registerReleaseHealth(app);
  registerDownloads(app);
  registerLicenseTemplates(app);
  registerLicenses(app);
  registerLicenseTokens(app);
  registerLicenseFiles(app);
  registerLicenseTraces(app);
  registerReports(app);
  registerAssemblies(app);
  registerSettings(app);
  registerLog(app);
  registerInfo(app);
  registerOverview(app);
  registerEmail(app);
  registerWebhooks(app);
  registerCommerce(app);
  registerPortal(app);
  registerPortalPage(app);
  registerConsole(app);

  app.get(OPENAPI_PATH, (c) => c.json(openApiDocument(app, c.get("config")) as object));
  registerSwaggerUi(app, OPENAPI_PATH);

  app.notFound((c: Context<AppEnv>) =>
    errorResponse(c, new ApiError(404, `No route for ${c.req.method} ${c.req.path}`)),
  );
  // A bearer token's deferred logout check is settled before any error is answered: a logged-out token gets 401 first.
  app.onError(async (err, c) => renderError(await settleFirst(c, err), c));
  return app;
}
