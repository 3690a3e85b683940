/**
 * REST licensing operations (CONTRACT sections 4 and 11): `/v1/license/{activate,deactivate,validate,request,
 * heartbeat,release,checkout,borrow,return}` and `POST /v1/report`. Credential: API key or bearer token (a user's, or a license's own from user-key
 * sign-in), no role and no permission bit. Thin: each route validates its body and calls the licensing service that
 * gRPC calls too.
 */
import { type RouteHandler, createRoute, z } from "@hono/zod-openapi";
import type { AppEnv } from "../../http/app-env";
import { bodyLimit } from "hono/body-limit";
import { access } from "../../auth/guard";
import { serviceContext, clientInfo } from "../../http/context";
import { ApiError } from "../../kernel/errors";
import { Envelope, enveloped, errorResponses, int32, json, jsonBody } from "../../http/openapi";
import { ok } from "../../http/respond";
import type { Router } from "../../http/router";
import { storeReport } from "../../licensing/report-store";
import {
  ActivateRequest,
  BorrowRequest,
  CheckoutRequest,
  DeactivateRequest,
  FloatingRequest,
  HeartbeatRequest,
  MAX_REPORT_BYTES,
  ReleaseRequest,
  ReturnRequest,
  SendReportRequest,
  ValidateRequest,
} from "../../licensing/inputs";
import { activate, deactivate } from "../../licensing/activation";
import { validate } from "../../licensing/validation";
import { LICENSE_STATUSES, LICENSE_TYPES, LICENSING_MODES } from "../../records/vocabulary";
import { namedEnum } from "../../http/entity";
import { heartbeat, releaseSeat, requestSeat } from "../../licensing/floating";
import { borrowSeat, checkout, returnSeat } from "../../licensing/offline";

const licensingErrors = {
  ...errorResponses,
  523: {
    description: "InvalidArgument: `Invalid license key`, a required machine or client id missing.",
    content: { "application/json": { schema: Envelope } },
  },
  525: {
    description: "NotFound: `License key not found`, `License token not found`.",
    content: { "application/json": { schema: Envelope } },
  },
  526: {
    description: "AlreadyExists: `The license has already been activated` (limit reached on other machines).",
    content: { "application/json": { schema: Envelope } },
  },
  527: {
    description: "PermissionDenied: revoked, expired, token expired, or not valid for this product.",
    content: { "application/json": { schema: Envelope } },
  },
  528: {
    description: "ResourceExhausted: every floating seat is taken.",
    content: { "application/json": { schema: Envelope } },
  },
  529: {
    description: "FailedPrecondition: not activated, not a floating license, or no activation needed.",
    content: { "application/json": { schema: Envelope } },
  },
  535: {
    description: "DataLoss: the license or its token has been tampered.",
    content: { "application/json": { schema: Envelope } },
  },
} as const;

// The document's named enumerations, as the licenses' management records state them (src/http/entity.ts namedEnum).
const mode = namedEnum("LicensingMode", LICENSING_MODES);
const type = namedEnum("LicenseType", LICENSE_TYPES);

const LicenseView = z
  .object({
    licenseId: z.string(),
    licensingMode: z.union([mode.code, mode.name]),
    licenseType: z.union([type.code, type.name]),
    edition: z.string().optional(),
    issueDate: z.string(),
    expireAt: z.string().optional(),
    supportExpireAt: z.string().optional(),
    features: z.array(z.string()),
    licensee: z.object({ name: z.string().optional(), email: z.string().optional(), company: z.string().optional() }),
    licenseKey: z
      .string()
      .optional()
      .openapi({
        description:
          "Compact JWS (ES256, header kid) over the license; verify offline with GET /v1/extensions/keys. Present only where it proves a usable " +
          "license on the caller's machine: File mode always, Activation mode for a machine with a live activation, Floating mode for the " +
          "machine/client holding a live seat.",
      }),
  })
  .openapi("LicenseInfo");

const counts = { activeClientCount: int32(0), maxClientCount: int32(0).openapi({ description: "0 = unlimited" }) };

function route<B extends z.ZodType, R extends z.ZodRawShape>(
  path: string,
  operationId: string,
  summary: string,
  body: B,
  answer: R,
) {
  return createRoute({
    method: "post",
    path,
    tags: ["Licensing"],
    operationId,
    summary,
    // A bearer token's logout check rides in the operation's first D1 batch (http/first-batch.ts): one round trip.
    ...access.either(undefined, { deferLogoutCheck: true }),
    request: { body: jsonBody(body) },
    responses: { 200: json(enveloped(answer), summary), ...licensingErrors },
  });
}

const activateLicenseRoute = route(
  "/v1/license/activate",
  "activateLicense",
  "Activate a machine (idempotent per machine and client)",
  ActivateRequest,
  { licenseToken: z.string(), tokenExpireAt: z.string().optional(), ...counts, license: LicenseView },
);

const deactivateLicenseRoute = route(
  "/v1/license/deactivate",
  "deactivateLicense",
  "Free a machine's activation",
  DeactivateRequest,
  { licenseId: z.string(), ...counts },
);

const validateLicenseRoute = route(
  "/v1/license/validate",
  "validateLicense",
  "Validate a license (for a machine, client or token when given)",
  ValidateRequest,
  {
    licenseId: z.string(),
    status: z.enum(LICENSE_STATUSES).openapi("LicenseStatusName"),
    license: LicenseView,
    licenseToken: z.string().optional(),
    tokenExpireAt: z.string().optional(),
    serverTime: z.string(),
    nonce: z.string().optional(),
    offlineGraceDays: int32(0).openapi({
      description:
        "Licensing:OfflineGraceDays: days the application may keep using the license offline after this validation (signed in license.licenseKey too).",
    }),
  },
);

const requestFloatingLicenseRoute = route(
  "/v1/license/request",
  "requestFloatingLicense",
  "Take a floating seat (or the seat this machine and client already hold)",
  FloatingRequest,
  {
    licenseToken: z.string(),
    tokenExpireAt: z.string(),
    heartbeatInterval: int32(0).openapi({ description: "Seconds between heartbeats." }),
    ...counts,
    license: LicenseView,
  },
);

const heartbeatRoute = route("/v1/license/heartbeat", "heartbeat", "Keep a floating seat alive", HeartbeatRequest, {
  tokenExpireAt: z.string(),
  heartbeatInterval: int32(0),
  ...counts,
});

const releaseFloatingLicenseRoute = route(
  "/v1/license/release",
  "releaseFloatingLicense",
  "Free a floating seat",
  ReleaseRequest,
  { licenseId: z.string(), ...counts },
);

const fileAnswer = {
  licenseFile: z.string().openapi({
    description:
      "Compact JWS (ES256, header typ license-file+jwt, kid in GET /v1/extensions/keys) over the license file; save it as <licenseId>.lic.",
  }),
  issuedAt: z.string(),
  expiresAt: z.string(),
  encrypted: z.boolean(),
};

const checkoutLicenseFileRoute = route(
  "/v1/license/checkout",
  "checkoutLicenseFile",
  "Check out a signed license file for a machine (to run offline)",
  CheckoutRequest,
  fileAnswer,
);

const borrowFloatingLicenseRoute = route(
  "/v1/license/borrow",
  "borrowFloatingLicense",
  "Borrow a floating seat for some hours, with a license file that ends with it",
  BorrowRequest,
  {
    ...fileAnswer,
    licenseToken: z.string(),
    borrowUntil: z.string(),
    ...counts,
  },
);

const returnFloatingLicenseRoute = route(
  "/v1/license/return",
  "returnFloatingLicense",
  "Return a borrowed floating seat early",
  ReturnRequest,
  { licenseId: z.string(), ...counts },
);

const sendReportRoute = createRoute({
  method: "post",
  path: "/v1/report",
  tags: ["Licensing"],
  operationId: "sendReport",
  summary: "Send a report (exception, license or custom) from an application",
  ...access.either(),
  middleware: [
    bodyLimit({
      maxSize: MAX_REPORT_BYTES,
      onError: () => {
        throw new ApiError(413, `The report is larger than ${MAX_REPORT_BYTES / 1024 / 1024} MiB`);
      },
    }),
    ...access.either().middleware,
  ],
  request: {
    body: jsonBody(SendReportRequest),
  },
  responses: {
    200: json(enveloped({ reportId: int32(1) }), "The report was stored"),
    ...errorResponses,
    413: { description: "The request body is over 4 MiB.", content: { "application/json": { schema: Envelope } } },
  },
});

const activateLicenseHandler: RouteHandler<typeof activateLicenseRoute, AppEnv> = async (c) => {
  const { newMachine: _new, ...result } = await activate(serviceContext(c), c.req.valid("json"), clientInfo(c));
  return ok(c, result);
};
const deactivateLicenseHandler: RouteHandler<typeof deactivateLicenseRoute, AppEnv> = async (c) =>
  ok(c, await deactivate(serviceContext(c), c.req.valid("json"), clientInfo(c)));
const validateLicenseHandler: RouteHandler<typeof validateLicenseRoute, AppEnv> = async (c) =>
  ok(c, await validate(serviceContext(c), c.req.valid("json"), clientInfo(c)));
const requestFloatingLicenseHandler: RouteHandler<typeof requestFloatingLicenseRoute, AppEnv> = async (c) => {
  const { newSeat: _new, ...result } = await requestSeat(serviceContext(c), c.req.valid("json"), clientInfo(c));
  return ok(c, result);
};
const heartbeatHandler: RouteHandler<typeof heartbeatRoute, AppEnv> = async (c) =>
  ok(c, await heartbeat(serviceContext(c), c.req.valid("json")));
const releaseFloatingLicenseHandler: RouteHandler<typeof releaseFloatingLicenseRoute, AppEnv> = async (c) =>
  ok(c, await releaseSeat(serviceContext(c), c.req.valid("json"), clientInfo(c)));
const checkoutLicenseFileHandler: RouteHandler<typeof checkoutLicenseFileRoute, AppEnv> = async (c) =>
  ok(c, await checkout(serviceContext(c), c.req.valid("json"), clientInfo(c)));
const borrowFloatingLicenseHandler: RouteHandler<typeof borrowFloatingLicenseRoute, AppEnv> = async (c) =>
  ok(c, await borrowSeat(serviceContext(c), c.req.valid("json"), clientInfo(c)));
const returnFloatingLicenseHandler: RouteHandler<typeof returnFloatingLicenseRoute, AppEnv> = async (c) =>
  ok(c, await returnSeat(serviceContext(c), c.req.valid("json"), clientInfo(c)));
const sendReportHandler: RouteHandler<typeof sendReportRoute, AppEnv> = async (c) =>
  ok(c, { reportId: await storeReport(serviceContext(c), c.req.valid("json"), clientInfo(c)) });

export function registerLicensingRoutes(app: Router): void {
  app.openapi(activateLicenseRoute, activateLicenseHandler);
  app.openapi(deactivateLicenseRoute, deactivateLicenseHandler);
  app.openapi(validateLicenseRoute, validateLicenseHandler);
  app.openapi(requestFloatingLicenseRoute, requestFloatingLicenseHandler);
  app.openapi(heartbeatRoute, heartbeatHandler);
  app.openapi(releaseFloatingLicenseRoute, releaseFloatingLicenseHandler);
  app.openapi(checkoutLicenseFileRoute, checkoutLicenseFileHandler);
  app.openapi(borrowFloatingLicenseRoute, borrowFloatingLicenseHandler);
  app.openapi(returnFloatingLicenseRoute, returnFloatingLicenseHandler);
  app.openapi(sendReportRoute, sendReportHandler);
}
