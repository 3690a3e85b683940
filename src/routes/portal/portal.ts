/**
 * `/v1/portal/*`: the customer portal's API (CONTRACT section 12), for the vendor's customers, never staff. Every
 * route but branding and sign-in takes the portal session only (portal-session.ts: its cookie, and `X-CSRF-Token`
 * on writes); an API key, a bearer token or the console's cookie opens none of them. Another customer's ids in a
 * path answer 404, as ids that do not exist.
 */
import { createRoute, z } from "@hono/zod-openapi";
import type { Context } from "hono";
import type { AppEnv } from "../../http/app-env";
import { clientInfo, serviceContext } from "../../http/context";
import { ApiError } from "../../kernel/errors";
import {
  Envelope,
  anonymousErrorResponses,
  enveloped,
  errorResponses,
  int32,
  json,
  jsonBody,
} from "../../http/openapi";
import { ok } from "../../http/respond";
import type { Router } from "../../http/router";
import { PLATFORMS, type Platform, mainFile } from "../../delivery/catalog";
import { feedRelease } from "../../delivery/formats/electron-builder";
import { DownloadInfo, downloadFor } from "../../delivery/update-check";
import { callerAndReleases } from "../../delivery/poll";
import { downloadUrlFor } from "../../delivery/download-info";
import { publicOrigin } from "../../http/context";
import { UPDATE_REASONS } from "../../delivery/reasons";
import { eq } from "drizzle-orm";
import { products } from "../../db/schema";
import { compactUserKey } from "../../licensing/user-key";
import {
  CSRF_HEADER,
  NOT_SIGNED_IN,
  PORTAL_COOKIE,
  endSession,
  openSession,
  portalAccess,
  portalCookie,
  portalCsrfToken,
  portalSecret,
  sessionScope,
  spendLink,
} from "../../portal/portal-session";
import {
  DEACTIVATIONS_RESET_HEADER,
  LINK_SENT,
  changeLicenseeName,
  deactivateMachine,
  licenseDetail,
  listLicenses,
  listOrders,
  ownLicense,
  sessionCustomer,
  sendSignInLinks,
  signInWithKey,
  typedEmail,
} from "../../portal/portal-service";
import { protectLogin, USER_KEY_ATTEMPT } from "../../protection/limits";

const TAG = "Portal";
const LINK_REFUSED = "This sign-in link is unknown, expired or already used: ask for a new one.";

// ---------------------------------------------------------------------------------------------------------------
// Shapes

const Branding = enveloped({
  title: z.string(),
  accentColor: z.string().openapi({ description: "#rrggbb" }),
  logoUrl: z.string().optional().openapi({ description: "An https URL; absent when none is set." }),
}).openapi("PortalBranding");

const SignInRequest = z
  .object({
    userKey: z.string().max(256).optional().openapi({ description: "A license's user key: signs in at once." }),
    email: z.string().max(320).optional().openapi({
      description:
        "The customer's email: a one-time sign-in link is sent to it (the answer is the same for any address).",
    }),
  })
  .openapi("PortalSignInRequest");

const PortalCustomer = z
  .object({ code: z.string(), name: z.string(), email: z.string().nullable() })
  .openapi("PortalCustomer");

const sessionShape = {
  signedIn: z.boolean(),
  customer: PortalCustomer.nullable().openapi({ description: "null for a license with no customer." }),
  signedInWith: z.enum(["userKey", "email"]),
  csrfToken: z.string().openapi({ description: `Send it in the ${CSRF_HEADER} header with every portal write.` }),
  expiresAt: z.string().openapi({ description: "When the session ends (ISO 8601)." }),
};
const PortalSession = enveloped(sessionShape).openapi("PortalSession");

const SignInAnswer = enveloped({
  ...Object.fromEntries(Object.entries(sessionShape).map(([k, v]) => [k, v.optional()])),
  signedIn: z.boolean().openapi({ description: "true for a user key (cookie set); false for an email (link sent)." }),
}).openapi("PortalSignInAnswer");

const licenseShape = {
  licenseId: z.string(),
  userKey: z.string(),
  product: z.object({ code: z.string(), name: z.string() }),
  edition: z.string().nullable(),
  licenseType: z.string(),
  licensingMode: z.string(),
  maxClients: int32(0).openapi({ description: "0 = unlimited." }),
  activeClientCount: int32(0),
  issueDate: z.string(),
  expireDate: z.string().nullable(),
  expired: z.boolean(),
  supportExpireDate: z.string().nullable(),
  maintenanceUntil: z.string().openapi({ description: "End of maintenance (support date, else a year from issue)." }),
  licenseeName: z.string().nullable(),
  renewalUrl: z.string().nullable(),
  purchaseUrl: z.string().nullable(),
};
const PortalLicense = z.object(licenseShape).openapi("PortalLicense");

const PortalClient = z
  .object({
    machineId: z.string(),
    clientId: z.string().nullable(),
    clientName: z.string().nullable(),
    since: z.string(),
    lastSeenAt: z.string(),
    expiresAt: z.string().nullable(),
  })
  .openapi("PortalClient");

const Deactivations = z
  .object({
    used: int32(0),
    limit: int32(0).openapi({ description: "Licensing:MaxDeactivationsPerMonth; 0 = no limit." }),
    resetsAt: z.string().openapi({ description: "When the month's count starts again (ISO 8601, UTC)." }),
  })
  .openapi("PortalDeactivations");

const PortalLicenseDetail = z
  .object({
    ...licenseShape,
    machines: z.array(PortalClient).openapi({ description: "Activated machines (Activation licenses)." }),
    seats: z.array(PortalClient).openapi({ description: "Live floating seats (Floating licenses)." }),
    deactivations: Deactivations,
  })
  .openapi("PortalLicenseDetail");

const PortalDownload = z
  .object({
    platform: z.enum(PLATFORMS),
    version: z.string().optional(),
    download: DownloadInfo.optional(),
    unavailable: z.string().optional().openapi({ description: "Why no build is offered for the platform." }),
  })
  .openapi("PortalDownload");

const PortalOrder = z
  .object({
    orderNumber: z.string(),
    status: z.string(),
    paymentStatus: z.string(),
    total: z.number().nullable(),
    currency: z.string().nullable(),
    invoiceNumber: z.string().nullable(),
    paymentDate: z.string().nullable(),
    createdAt: z.string(),
    lines: z.array(
      z.object({
        product: z.object({ code: z.string(), name: z.string() }),
        quantity: int32(0),
        unitPrice: z.number().nullable(),
        description: z.string().nullable(),
      }),
    ),
  })
  .openapi("PortalOrder");

const LicenseIdParam = z
  .string()
  .min(1)
  .max(64)
  .openapi({ param: { name: "licenseId", in: "path" }, description: "The license's public id (lic…)." });
const MachineIdParam = z
  .string()
  .min(1)
  .max(256)
  .openapi({ param: { name: "machineId", in: "path" }, description: "The machine's id as the application sent it." });

/** The error answers of a portal route: 401 (no session, or a write without its CSRF token) has a message. */
const portalErrors = {
  ...errorResponses,
  401: json(Envelope, `Not signed in: \`${NOT_SIGNED_IN}\`, or a write without ${CSRF_HEADER}`),
  404: json(Envelope, "No such license or machine among the customer's own (another customer's answers the same)"),
} as const;

/** The service's public origin, as feeds build their URLs (routes/updates/updates.ts urlOrigin). */
function origin(c: Context<AppEnv>): string {
  return c.get("config")["Application:PublicUrl"] ?? new URL(c.req.url).origin;
}

function scopeOf(c: Context<AppEnv>) {
  return c.get("portal");
}

// ---------------------------------------------------------------------------------------------------------------
// Routes

export function registerPortal(app: Router): void {
  app.openapi(
    createRoute({
      method: "get",
      path: "/v1/portal/branding",
      tags: [TAG],
      operationId: "portalBranding",
      summary: "The customer portal's title, accent colour and logo (Portal:Title, Portal:AccentColor, Portal:LogoUrl)",
      security: [],
      responses: { 200: json(Branding, "The portal's branding"), ...anonymousErrorResponses },
    }),
    (c) => {
      const config = c.get("config");
      return ok(c, {
        title: config["Portal:Title"],
        accentColor: config["Portal:AccentColor"],
        ...(config["Portal:LogoUrl"] ? { logoUrl: config["Portal:LogoUrl"] } : {}),
      });
    },
  );

  app.openapi(
    createRoute({
      method: "post",
      path: "/v1/portal/sign-in",
      tags: [TAG],
      operationId: "portalSignIn",
      summary:
        "Customer sign-in: a user key opens a session at once (cookie); an email gets a one-time link (same answer for any address)",
      security: [],
      request: { body: jsonBody(SignInRequest) },
      responses: {
        200: json(SignInAnswer, `Signed in (the cookie ${PORTAL_COOKIE} holds the session), or the link sent`),
        401: json(
          Envelope,
          "The user key signs in to nothing (unknown, revoked or deleted license); counted like a failed login",
        ),
        ...anonymousErrorResponses,
      },
    }),
    async (c) => {
      const ctx = serviceContext(c);
      const { userKey, email } = c.req.valid("json");
      if ((userKey === undefined) === (email === undefined))
        throw new ApiError(400, "Sign in with either userKey or email (exactly one of them).");
      if (email !== undefined) {
        const address = typedEmail(email);
        const from = origin(c);
        // An address past the login limit asks for no link either (refused like a login); the request itself is no
        // failure. After the answer: an unknown address answers the same, as fast (no enumeration by text or timing).
        await protectLogin(ctx, USER_KEY_ATTEMPT, async () => {
          ctx.waitUntil(
            sendSignInLinks(ctx, address, from).catch((e: unknown) => console.error("portal: sign-in link failed", e)),
          );
        });
        return ok(c, { signedIn: false, message: LINK_SENT });
      }
      const who = await signInWithKey(ctx, userKey!);
      const session = await openSession(ctx, who);
      const scope = await sessionScope(ctx, session.secret);
      const res = ok(c, {
        signedIn: true,
        customer: scope ? await sessionCustomer(ctx, scope) : null,
        signedInWith: "userKey" as const,
        csrfToken: session.csrfToken,
        expiresAt: session.expiresAt,
      });
      res.headers.append("Set-Cookie", portalCookie(session.secret, session.maxAgeSeconds));
      return res;
    },
  );

  app.openapi(
    createRoute({
      method: "get",
      path: "/v1/portal/sign-in/{token}",
      tags: [TAG],
      operationId: "portalSignInLink",
      summary:
        "The emailed sign-in link: works once, within Portal:SignInLinkMinutes; sets the session cookie and redirects to /portal/ (JSON when Accept asks for it)",
      security: [],
      request: {
        params: z.object({
          token: z
            .string()
            .max(128)
            .openapi({ param: { name: "token", in: "path" } }),
        }),
      },
      responses: {
        200: json(PortalSession, "Signed in (Accept: application/json)"),
        303: {
          description:
            "A browser's navigation: signed in, on to /portal/; refused, on to /portal/#link-refused (or #sign-in-blocked past the login limit)",
        },
        401: json(Envelope, "The link is unknown, expired or already used; counted like a failed login"),
        ...anonymousErrorResponses,
      },
    }),
    async (c) => {
      const ctx = serviceContext(c);
      const { token } = c.req.valid("param");
      const navigation = !(c.req.header("accept") ?? "").includes("application/json");
      let spent: { customerId: number };
      try {
        spent = await protectLogin(ctx, USER_KEY_ATTEMPT, async () => {
          const link = await spendLink(ctx, token);
          if (!link) throw new ApiError(401, LINK_REFUSED);
          return link;
        });
      } catch (e) {
        // A person who opened the link in a browser lands on the page, which says why in its own words (a fixed
        // fragment, so no text of the URL is ever shown as the service's): refused, or logins blocked for now.
        if (!navigation || !(e instanceof ApiError)) throw e;
        const why = e.status === 401 ? "link-refused" : "sign-in-blocked";
        return new Response(null, { status: 303, headers: { Location: `/portal/#${why}` } });
      }
      const session = await openSession(ctx, { customerId: spent.customerId, licenseId: null });
      ctx.log?.audit("PortalSignIn", "Customer portal sign-in with an emailed link", {
        ...ctx,
        principal: { kind: "customer", customerId: spent.customerId },
      });
      const cookie = portalCookie(session.secret, session.maxAgeSeconds);
      if (navigation) {
        return new Response(null, { status: 303, headers: { Location: "/portal/", "Set-Cookie": cookie } });
      }
      const scope = await sessionScope(ctx, session.secret);
      const res = ok(c, {
        signedIn: true,
        customer: scope ? await sessionCustomer(ctx, scope) : null,
        signedInWith: "email" as const,
        csrfToken: session.csrfToken,
        expiresAt: session.expiresAt,
      });
      res.headers.append("Set-Cookie", cookie);
      return res;
    },
  );

  app.openapi(
    createRoute({
      method: "post",
      path: "/v1/portal/sign-out",
      tags: [TAG],
      operationId: "portalSignOut",
      summary: "Ends the portal session and clears its cookie",
      ...portalAccess(),
      responses: { 200: json(Envelope, "Signed out"), ...portalErrors },
    }),
    async (c) => {
      await endSession(serviceContext(c), await portalSecret(c));
      const res = ok(c, {});
      res.headers.append("Set-Cookie", portalCookie("", 0));
      return res;
    },
  );

  app.openapi(
    createRoute({
      method: "get",
      path: "/v1/portal/me",
      tags: [TAG],
      operationId: "portalMe",
      summary: "The signed-in customer, and the session's CSRF token (for a page reloaded with its cookie)",
      ...portalAccess(),
      responses: { 200: json(PortalSession, "The session"), ...portalErrors },
    }),
    async (c) => {
      const ctx = serviceContext(c);
      const scope = scopeOf(c);
      return ok(c, {
        signedIn: true,
        customer: await sessionCustomer(ctx, scope),
        signedInWith: scope.signedInWith,
        csrfToken: await portalCsrfToken(await portalSecret(c)),
        expiresAt: scope.expiresAt,
      });
    },
  );

  app.openapi(
    createRoute({
      method: "get",
      path: "/v1/portal/licenses",
      tags: [TAG],
      operationId: "portalLicenses",
      summary: "The customer's licenses (or the one license a key with no customer signed in with)",
      ...portalAccess(),
      responses: { 200: json(enveloped({ licenses: z.array(PortalLicense) }), "The licenses"), ...portalErrors },
    }),
    async (c) => ok(c, { licenses: await listLicenses(serviceContext(c), scopeOf(c)) }),
  );

  app.openapi(
    createRoute({
      method: "get",
      path: "/v1/portal/licenses/{licenseId}",
      tags: [TAG],
      operationId: "portalLicense",
      summary: "One of the customer's licenses with its machines, live floating seats and this month's deactivations",
      ...portalAccess(),
      request: { params: z.object({ licenseId: LicenseIdParam }) },
      responses: { 200: json(enveloped({ license: PortalLicenseDetail }), "The license"), ...portalErrors },
    }),
    async (c) => ok(c, { license: await licenseDetail(serviceContext(c), scopeOf(c), c.req.valid("param").licenseId) }),
  );

  app.openapi(
    createRoute({
      method: "post",
      path: "/v1/portal/licenses/{licenseId}/machines/{machineId}/deactivate",
      tags: [TAG],
      operationId: "portalDeactivateMachine",
      summary: "Frees a machine's activation (at most Licensing:MaxDeactivationsPerMonth per license and month)",
      ...portalAccess(),
      request: { params: z.object({ licenseId: LicenseIdParam, machineId: MachineIdParam }) },
      responses: {
        200: json(
          enveloped({
            licenseId: z.string(),
            machineId: z.string(),
            activeClientCount: int32(0),
            maxClientCount: int32(0),
            deactivations: Deactivations,
          }),
          "Deactivated",
        ),
        ...portalErrors,
        429: {
          description: `The month's deactivations are spent: the message and ${DEACTIVATIONS_RESET_HEADER} say when they reset (or the per-IP limit)`,
          headers: {
            "Retry-After": {
              description: "Seconds until the count resets (or the per-IP block ends).",
              schema: { type: "integer", format: "int32", minimum: 1 },
            },
            [DEACTIVATIONS_RESET_HEADER]: {
              description: "When the count resets (ISO 8601, UTC).",
              schema: { type: "string" },
            },
          },
          content: { "application/json": { schema: Envelope } },
        },
      },
    }),
    async (c) => {
      const { licenseId, machineId } = c.req.valid("param");
      return ok(c, await deactivateMachine(serviceContext(c), scopeOf(c), licenseId, machineId, clientInfo(c)));
    },
  );

  app.openapi(
    createRoute({
      method: "get",
      path: "/v1/portal/licenses/{licenseId}/downloads",
      tags: [TAG],
      operationId: "portalDownloads",
      summary:
        "The newest build of each platform the license is entitled to (the feeds' selection, tokenised URLs); `platform` asks for one, 403 when not entitled",
      ...portalAccess(),
      request: {
        params: z.object({ licenseId: LicenseIdParam }),
        query: z.object({
          platform: z
            .string()
            .max(32)
            .optional()
            .openapi({ description: PLATFORMS.join(", ") }),
        }),
      },
      responses: {
        200: json(enveloped({ downloads: z.array(PortalDownload) }), "The builds, one per platform"),
        ...portalErrors,
      },
    }),
    async (c) => {
      const ctx = serviceContext(c);
      const { licenseId } = c.req.valid("param");
      const { platform: asked } = c.req.valid("query");
      if (asked !== undefined && !(PLATFORMS as readonly string[]).includes(asked))
        throw new ApiError(400, `Unknown platform ${asked}: one of ${PLATFORMS.join(", ")}`);
      const license = await ownLicense(ctx, scopeOf(c), licenseId);
      const product = await ctx.db.select().from(products).where(eq(products.id, license.productId)).get();
      if (!product) throw new ApiError(404, `License ${licenseId} not found`);
      const credential = { key: compactUserKey(license.userKey) };
      const platforms = (asked ? [asked] : PLATFORMS) as readonly Platform[];
      const downloads = [];
      for (const platform of platforms) {
        const { caller, releases, audienceMatched } = await callerAndReleases(
          ctx,
          product,
          credential,
          platform,
          "stable",
        );
        const selection = await feedRelease(ctx, {
          caller,
          releases,
          platform,
          audienceMatched,
          minimumVersion: product.minimumVersion,
        });
        const file = selection.entry ? mainFile(selection.entry.files) : undefined;
        if (selection.entry && file) {
          const downloadUrl = downloadUrlFor(publicOrigin(c), product, platform);
          downloads.push({
            platform,
            version: selection.entry.release.version,
            download: await downloadFor(ctx, { caller, downloadUrl }, selection.entry, file),
          });
          continue;
        }
        const reason = selection.reason ?? "noRelease";
        const why = UPDATE_REASONS[reason];
        if (asked && (reason === "platformRequiresEdition" || reason === "platformRequiresLicense"))
          throw new ApiError(403, `License ${licenseId} is not entitled to ${platform} builds: ${why}`, {}, reason);
        downloads.push({ platform, unavailable: why });
      }
      return ok(c, { downloads });
    },
  );

  app.openapi(
    createRoute({
      method: "get",
      path: "/v1/portal/orders",
      tags: [TAG],
      operationId: "portalOrders",
      summary: "The customer's orders with their lines",
      ...portalAccess(),
      responses: { 200: json(enveloped({ orders: z.array(PortalOrder) }), "The orders"), ...portalErrors },
    }),
    async (c) => ok(c, { orders: await listOrders(serviceContext(c), scopeOf(c)) }),
  );

  app.openapi(
    createRoute({
      method: "put",
      path: "/v1/portal/licenses/{licenseId}/licensee",
      tags: [TAG],
      operationId: "portalChangeLicensee",
      summary:
        "Changes the licensee name shown on the license (through the license write service: HMAC, webhooks, audit)",
      ...portalAccess(),
      request: {
        params: z.object({ licenseId: LicenseIdParam }),
        body: jsonBody(z.object({ name: z.string().max(256) }).openapi("PortalLicenseeRequest")),
      },
      responses: { 200: json(enveloped({ license: PortalLicense }), "Changed"), ...portalErrors },
    }),
    async (c) => {
      const { licenseId } = c.req.valid("param");
      const { name } = c.req.valid("json");
      return ok(c, { license: await changeLicenseeName(serviceContext(c), scopeOf(c), licenseId, name) });
    },
  );
}
