/**
 * Air-gapped activation over HTTP (CONTRACT section 11): the anonymous `POST /v1/license/offline-activation`, and the
 * page at `/activate/` that calls it (static files `npm run console:build` writes to console/dist/activate/, served
 * with the console's headers: nothing from another origin). The request code is the credential: its user key is
 * checked under login protection like a user-key sign-in, so guessing keys here is blocked as on /v1/auth/login, and
 * the route counts against the per-IP request limit like every anonymous route.
 */
import { type RouteHandler, createRoute, z } from "@hono/zod-openapi";
import type { AppEnv } from "../../http/app-env";
import { access } from "../../auth/guard";
import { ApiError, GrpcCode } from "../../kernel/errors";
import { clientInfo, serviceContext } from "../../http/context";
import { Envelope, anonymousErrorResponses, enveloped, int32, json, jsonBody } from "../../http/openapi";
import { ok } from "../../http/respond";
import type { Router } from "../../http/router";
import { registerStaticPages } from "../static-pages";
import { USER_KEY_ATTEMPT, protectLogin } from "../../protection/limits";
import { offlineActivation } from "../../licensing/offline-activation";

/** Where the page is served. */
export const ACTIVATE_PAGE_PATH = "/activate";

/** The longest request code taken (its fields keep activate's limits once decoded). */
const MAX_REQUEST_CODE = 4096;

const OfflineActivationRequest = z
  .object({
    requestCode: z.string().min(1).max(MAX_REQUEST_CODE).openapi({
      description:
        "The code the offline application shows: LRQ1- then Crockford base32 of {v, k: userKey, m: machineId, c?: clientId, n: nonce, p?: productCode} and its CRC32, in groups of five.",
      example: "LRQ1-FCH7C-8HT64-P24TS-…",
    }),
  })
  .openapi("OfflineActivationRequest");

/** A user key that names no license (or is not one) counts as a failed login; other refusals do not. */
const unknownKey = (e: unknown): boolean =>
  e instanceof ApiError && (e.status === 520 + GrpcCode.NotFound || e.status === 520 + GrpcCode.InvalidArgument);

const licensingRefusal = (description: string) => ({
  description,
  content: { "application/json": { schema: Envelope } },
});

const offlineActivationRoute = createRoute({
  method: "post",
  path: "/v1/license/offline-activation",
  tags: ["Licensing"],
  operationId: "offlineActivation",
  summary: "Activate a machine from its request code (air-gapped) and answer its license file",
  description:
    "Anonymous: the request code carries the license's user key. Activates exactly as POST /v1/license/activate " +
    "(Activation mode; it counts against the license's machines), then answers a license file bound to the machine " +
    "and the request's nonce, as a compact JWS, and a response code (LRS2-…, 400 characters or fewer for a usual " +
    "license: its id, entitlements, times, machine and nonce in a signed binary layout). A mistyped code, a response code " +
    "where the request code belongs, or another product's license is refused and changes nothing.",
  ...access.anonymous(),
  request: { body: jsonBody(OfflineActivationRequest) },
  responses: {
    200: json(
      enveloped({
        responseCode: z.string().openapi({
          description:
            "LRS2-…: what the application checks offline (license, entitlements, machine, nonce, times), signed with the " +
            "license file's key, as a code to type in or scan (docs/reference/offline-codes.md).",
        }),
        licenseFile: z.string().openapi({ description: "The license file (compact JWS, typ license-file+jwt)." }),
        fileName: z.string().openapi({ description: "<licenseId>.lic" }),
        issuedAt: z.string(),
        expiresAt: z.string(),
        encrypted: z.boolean(),
        licenseId: z.string(),
        activeClientCount: int32(0),
        maxClientCount: int32(0).openapi({ description: "0 = unlimited" }),
      }),
      "The machine is activated; its license file",
    ),
    ...anonymousErrorResponses,
    523: licensingRefusal("InvalidArgument: `Invalid license key`."),
    525: licensingRefusal("NotFound: `License key not found`."),
    526: licensingRefusal("AlreadyExists: the activation limit is reached on other machines."),
    527: licensingRefusal("PermissionDenied: revoked, expired, or not valid for the request's product."),
    529: licensingRefusal("FailedPrecondition: a floating license (borrow a seat instead)."),
    535: licensingRefusal("DataLoss: the license has been tampered."),
  },
});

const offlineActivationHandler: RouteHandler<typeof offlineActivationRoute, AppEnv> = async (c) => {
  const ctx = serviceContext(c);
  const { requestCode } = c.req.valid("json");
  return ok(
    c,
    await protectLogin(ctx, USER_KEY_ATTEMPT, () => offlineActivation(ctx, requestCode, clientInfo(c)), unknownKey),
  );
};

export function registerOfflineActivation(app: Router): void {
  app.openapi(offlineActivationRoute, offlineActivationHandler);
  registerStaticPages(app, ACTIVATE_PAGE_PATH, "activation page");
}
