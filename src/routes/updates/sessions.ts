/**
 * `POST /v1/updates/{productCode}/sessions` (CONTRACT section 13): an install reports its application's sessions
 * (started, exited, crashed, abnormal) for release health. Anonymous, or with a license credential of the product (a
 * user key in X-Service-User-Key, or a licensing bearer token), whose sessions count beyond the address limit; the
 * install id header is required. The sessions are checked here and queued; the queue consumer counts them
 * (updates/sessions.ts), so the request writes nothing to D1.
 */
import { createRoute, z } from "@hono/zod-openapi";
import type { RouteHandler } from "@hono/zod-openapi";
import type { Context } from "hono";
import { access, authenticate } from "../../auth/guard";
import { INSTALL_ID_HEADER, INSTALL_ID_PATTERN, serviceContext } from "../../http/context";
import type { AppEnv } from "../../http/app-env";
import { Envelope, anonymousErrorResponses, enveloped, int64, json, jsonBody } from "../../http/openapi";
import { ok } from "../../http/respond";
import type { Router } from "../../http/router";
import { ApiError, ValidationProblem } from "../../kernel/errors";
import { clock } from "../../kernel/clock";
import type { GatheringContext } from "../../kernel/gathering";
import { limiterName } from "../../protection/limits";
import { PLATFORMS } from "../../records/vocabulary";
import { MAX_VERSION_LENGTH, isReleaseVersion } from "../../records/versions";
import { type PingCredential, requireProductLicense } from "../../delivery/credential";
import { requireProduct } from "../../delivery/poll";
import {
  MAX_SESSIONS_PER_PING,
  SESSION_CLOCK_SKEW_MS,
  SESSION_MAX_AGE_MS,
  SESSION_MAX_DURATION_MS,
  SESSION_STATUSES,
  queueSessions,
  sessionTimeProblems,
} from "../../updates/sessions";
import { credentialFrom, productCodeParam } from "./poll";

const Session = z.object({
  id: z
    .string()
    .min(1)
    .max(128)
    .regex(INSTALL_ID_PATTERN, "1 to 128 visible ASCII characters")
    .openapi({ description: "The session's own random id: with the install id, it names the session." }),
  status: z.enum(SESSION_STATUSES).openapi({
    description:
      "`started`, or a final status: `exited`, `crashed`, `abnormal` (killed or hung). The last final status sent counts.",
  }),
  startedAt: z
    .string()
    .max(64)
    .refine((t) => /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}/.test(t) && !Number.isNaN(Date.parse(t)), {
      message: "Not an ISO 8601 instant",
    })
    .openapi({
      format: "date-time",
      description: `When the session started: at most ${SESSION_CLOCK_SKEW_MS / 60_000} minutes ahead of the service's clock, at most ${SESSION_MAX_AGE_MS / 86_400_000} days ago.`,
    }),
  durationMs: int64(0, SESSION_MAX_DURATION_MS).optional(),
});

export const SessionPingBody = z
  .object({
    version: z
      .string()
      .max(MAX_VERSION_LENGTH)
      .refine(isReleaseVersion, { message: "Not a release version (major.minor.patch)" })
      .openapi({ description: "The version the sessions ran." }),
    platform: z.enum(PLATFORMS).optional(),
    sessions: z.array(Session).min(1).max(MAX_SESSIONS_PER_PING),
  })
  .openapi("SessionPing");

const sendSessionsRoute = createRoute({
  method: "post",
  path: "/v1/updates/{productCode}/sessions",
  tags: ["Updates"],
  operationId: "sendSessions",
  summary: "Report an install's application sessions (release health)",
  description:
    `Anonymous, or with a license of the product: a user key in X-Service-User-Key or a licensing bearer token (whose sessions count beyond Updates:HealthInstallsPerAddress). ${INSTALL_ID_HEADER} is required. ` +
    `400 names ${INSTALL_ID_HEADER} when it is missing, or the body's field; 403 refuses a credential naming no license of this product. ` +
    "A session (install id and session id) counts once however often it is sent; its status is the last final one sent. " +
    "Counted off the request path through the queue: one address adds at most Updates:HealthInstallsPerAddress unlicensed installs per release per day, one install at most Updates:HealthSessionsPerInstall sessions per day.",
  // Anonymous like every update route: a licensing bearer token, like the user key, is an optional credential that
  // only makes the sessions licensed (the access table's "none").
  ...access.anonymous(),
  request: {
    params: z.object({ productCode: productCodeParam }),
    body: jsonBody(SessionPingBody),
  },
  responses: {
    202: json(
      enveloped({ accepted: int64().openapi({ description: "The number of sessions taken." }) }),
      "The sessions were taken, to be counted within moments",
    ),
    ...anonymousErrorResponses,
    401: { description: "An invalid, expired or logged-out bearer token (empty body)." },
    403: {
      description: "The credential names no license of this product, or a revoked or expired one.",
      content: { "application/json": { schema: Envelope } },
    },
    404: { description: "Unknown product.", content: { "application/json": { schema: Envelope } } },
  },
});

/** The ping's credential: a licensing bearer token's license, else a user key (or feed token), else none. */
async function pingCredential(c: Context<AppEnv>): Promise<PingCredential> {
  if (c.req.header("authorization") === undefined) return credentialFrom(c);
  const principal = await authenticate(c, "bearer");
  if (principal.licenseId === undefined)
    throw new ApiError(403, "A bearer token of a user names no license: sign in with the user key");
  return { bearerLicense: principal.licenseId };
}

/** The path of the route, with its product code (the front door takes anonymous pings: app/ping-door.ts). */
export const SESSIONS_PATH = /^\/v1\/updates\/([^/]+)\/sessions$/;

/**
 * What is wrong with a ping whose body is valid, before it is taken: a missing or malformed install id (400 naming
 * the header), or its sessions' times (400 naming each); undefined when nothing is.
 */
export function pingProblem(
  install: string | undefined,
  body: z.infer<typeof SessionPingBody>,
  now: Date,
): ApiError | ValidationProblem | undefined {
  if (install === undefined || !INSTALL_ID_PATTERN.test(install))
    return new ApiError(
      400,
      `${INSTALL_ID_HEADER}: required, 1 to 128 visible ASCII characters (the install's random id)`,
    );
  const times = sessionTimeProblems(body.sessions, now);
  return Object.keys(times).length > 0 ? new ValidationProblem(times) : undefined;
}

/** Takes a checked ping: its sessions join the isolate's gathering (updates/sessions.ts). Answers how many. */
export function takePing(
  ctx: GatheringContext,
  productId: number,
  install: string,
  body: z.infer<typeof SessionPingBody>,
  clientIp: string,
  licensed: boolean,
): number {
  return queueSessions(ctx, {
    productId,
    version: body.version,
    platform: body.platform,
    install,
    address: limiterName(clientIp),
    licensed,
    sessions: body.sessions,
  });
}

const sendSessions: RouteHandler<typeof sendSessionsRoute, AppEnv> = async (c) => {
  const ctx = serviceContext(c);
  const product = await requireProduct(ctx, c.req.valid("param").productCode);
  const install = c.req.header(INSTALL_ID_HEADER);
  const body = c.req.valid("json");
  const problem = pingProblem(install, body, clock.now());
  if (problem) throw problem;
  const license = await requireProductLicense(ctx, product.id, await pingCredential(c));
  const accepted = takePing(ctx, product.id, install!, body, c.get("clientIp"), license !== undefined);
  return ok(c, { accepted }, 202);
};

export function registerSessionRoutes(app: Router): void {
  app.openapi(sendSessionsRoute, sendSessions);
}
