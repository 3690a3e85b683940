/**
 * The customer portal's sign-in and session routes (CONTRACT section 12): branding (anonymous), sign-in with a user
 * key or an emailed link, sign-out and the session itself; and what every session route shares (portal.ts registers
 * them all, in order).
 */
import { type RouteHandler, createRoute, z } from "@hono/zod-openapi";
import type { Context } from "hono";
import type { AppEnv } from "../../http/app-env";
import { serviceContext } from "../../http/context";
import { ApiError } from "../../kernel/errors";
import { Envelope, anonymousErrorResponses, enveloped, errorResponses, json, jsonBody } from "../../http/openapi";
import { ok } from "../../http/respond";
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
import { LINK_SENT, sendSignInLinks, sessionCustomer, signInWithKey, typedEmail } from "../../portal/portal-service";
import { protectLogin, USER_KEY_ATTEMPT } from "../../protection/limits";

/** The portal routes' OpenAPI tag. */
export const TAG = "Portal";
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

/** The error answers of a portal route: 401 (no session, or a write without its CSRF token) has a message. */
export const portalErrors = {
  ...errorResponses,
  401: json(Envelope, `Not signed in: \`${NOT_SIGNED_IN}\`, or a write without ${CSRF_HEADER}`),
  404: json(Envelope, "No such license or machine among the customer's own (another customer's answers the same)"),
} as const;

/** The service's public origin, as feeds build their URLs (routes/updates/poll.ts urlOrigin). */
function origin(c: Context<AppEnv>): string {
  return c.get("config")["Application:PublicUrl"] ?? new URL(c.req.url).origin;
}

/** The signed-in customer's scope, which the portal session's middleware (portal-session.ts portalAccess) set. */
export function scopeOf(c: Context<AppEnv>) {
  return c.get("portal");
}

// ---------------------------------------------------------------------------------------------------------------
// Routes

export const portalBrandingRoute = createRoute({
  method: "get",
  path: "/v1/portal/branding",
  tags: [TAG],
  operationId: "portalBranding",
  summary: "The customer portal's title, accent colour and logo (Portal:Title, Portal:AccentColor, Portal:LogoUrl)",
  security: [],
  responses: { 200: json(Branding, "The portal's branding"), ...anonymousErrorResponses },
});

export const portalBrandingHandler: RouteHandler<typeof portalBrandingRoute, AppEnv> = (c) => {
  const config = c.get("config");
  return ok(c, {
    title: config["Portal:Title"],
    accentColor: config["Portal:AccentColor"],
    ...(config["Portal:LogoUrl"] ? { logoUrl: config["Portal:LogoUrl"] } : {}),
  });
};

export const portalSignInRoute = createRoute({
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
});

export const portalSignInHandler: RouteHandler<typeof portalSignInRoute, AppEnv> = async (c) => {
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
};

export const portalSignInLinkRoute = createRoute({
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
});

export const portalSignInLinkHandler: RouteHandler<typeof portalSignInLinkRoute, AppEnv> = async (c) => {
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
};

export const portalSignOutRoute = createRoute({
  method: "post",
  path: "/v1/portal/sign-out",
  tags: [TAG],
  operationId: "portalSignOut",
  summary: "Ends the portal session and clears its cookie",
  ...portalAccess(),
  responses: { 200: json(Envelope, "Signed out"), ...portalErrors },
});

export const portalSignOutHandler: RouteHandler<typeof portalSignOutRoute, AppEnv> = async (c) => {
  await endSession(serviceContext(c), await portalSecret(c));
  const res = ok(c, {});
  res.headers.append("Set-Cookie", portalCookie("", 0));
  return res;
};

export const portalMeRoute = createRoute({
  method: "get",
  path: "/v1/portal/me",
  tags: [TAG],
  operationId: "portalMe",
  summary: "The signed-in customer, and the session's CSRF token (for a page reloaded with its cookie)",
  ...portalAccess(),
  responses: { 200: json(PortalSession, "The session"), ...portalErrors },
});

export const portalMeHandler: RouteHandler<typeof portalMeRoute, AppEnv> = async (c) => {
  const ctx = serviceContext(c);
  const scope = scopeOf(c);
  return ok(c, {
    signedIn: true,
    customer: await sessionCustomer(ctx, scope),
    signedInWith: scope.signedInWith,
    csrfToken: await portalCsrfToken(await portalSecret(c)),
    expiresAt: scope.expiresAt,
  });
};
