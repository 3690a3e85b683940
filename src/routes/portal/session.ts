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
  peekLink,
  type SessionFor,
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
    linkToken: z.string().max(128).optional().openapi({
      description:
        "The token of an emailed sign-in link, which the portal's page confirms after showing whose account it opens: spends the link and signs in (cookie).",
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

const SignInLink = enveloped({
  customer: PortalCustomer,
  expiresAt: z.string().openapi({ description: "When the link ends (ISO 8601)." }),
}).openapi("PortalSignInLink");

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
    "Customer sign-in: a user key or an emailed link's token opens a session (cookie); an email gets a one-time link (same answer for any address)",
  description:
    "JSON only, and refused when the browser says it comes from another site (`Origin`, `Sec-Fetch-Site`): no other page can sign a visitor in to an account of its choosing (login CSRF).",
  security: [],
  request: { body: jsonBody(SignInRequest) },
  responses: {
    200: json(SignInAnswer, `Signed in (the cookie ${PORTAL_COOKIE} holds the session), or the link sent`),
    401: json(
      Envelope,
      "The user key or link signs in to nothing (unknown, revoked or deleted license; link unknown, expired or used); counted like a failed login",
    ),
    403: json(Envelope, "Sent by a page of another site"),
    ...anonymousErrorResponses,
  },
});

export const portalSignInHandler: RouteHandler<typeof portalSignInRoute, AppEnv> = async (c) => {
  const ctx = serviceContext(c);
  const { userKey, email, linkToken } = c.req.valid("json");
  sameSite(c);
  if ([userKey, email, linkToken].filter((v) => v !== undefined).length !== 1)
    throw new ApiError(400, "Sign in with one of userKey, email or linkToken.");
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
  let who: SessionFor;
  if (linkToken !== undefined) {
    const spent = await protectLogin(ctx, USER_KEY_ATTEMPT, async () => {
      const link = await spendLink(ctx, linkToken);
      if (!link) throw new ApiError(401, LINK_REFUSED);
      return link;
    });
    who = { customerId: spent.customerId, licenseId: null };
    ctx.log?.audit("PortalSignIn", "Customer portal sign-in with an emailed link", {
      ...ctx,
      principal: { kind: "customer", customerId: spent.customerId },
    });
  } else {
    who = await signInWithKey(ctx, userKey!);
  }
  const session = await openSession(ctx, who);
  const scope = await sessionScope(ctx, session.secret);
  const res = ok(c, {
    signedIn: true,
    customer: scope ? await sessionCustomer(ctx, scope) : null,
    signedInWith: linkToken !== undefined ? ("email" as const) : ("userKey" as const),
    csrfToken: session.csrfToken,
    expiresAt: session.expiresAt,
  });
  res.headers.append("Set-Cookie", portalCookie(session.secret, session.maxAgeSeconds));
  return res;
};

/**
 * Refuses a sign-in a page of another site sent (login CSRF): a browser names the page's origin in `Origin` and, on
 * every current engine, the relation in `Sec-Fetch-Site`. A client that is no browser sends neither.
 */
function sameSite(c: Context<AppEnv>): void {
  const site = c.req.header("sec-fetch-site");
  const from = c.req.header("origin");
  const own = from === undefined || from === origin(c) || from === new URL(c.req.url).origin;
  if ((site !== undefined && site !== "same-origin" && site !== "none") || !own)
    throw new ApiError(403, "Sign in from the customer portal's own page: this request came from another site.");
}

export const portalSignInLinkRoute = createRoute({
  method: "get",
  path: "/v1/portal/sign-in/{token}",
  tags: [TAG],
  operationId: "portalSignInLink",
  summary:
    "The emailed sign-in link: spends nothing. A browser is sent on to the portal's page, which shows whose account it opens and signs in only when the customer confirms (POST /v1/portal/sign-in with linkToken); with Accept: application/json, that account",
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
    200: json(SignInLink, "The link is live: the account it signs in to (Accept: application/json)"),
    303: {
      description:
        "A browser's navigation: on to /portal/#link=TOKEN (the page asks to confirm), or /portal/#link-refused for a malformed token",
    },
    401: json(Envelope, "The link is unknown, expired or already used; counted like a failed login"),
    ...anonymousErrorResponses,
  },
});

export const portalSignInLinkHandler: RouteHandler<typeof portalSignInLinkRoute, AppEnv> = async (c) => {
  const ctx = serviceContext(c);
  const { token } = c.req.valid("param");
  if (!(c.req.header("accept") ?? "").includes("application/json")) {
    // Opening the link signs in no one (a page of another site could open it for a visitor): the portal's page
    // reads the token from the fragment (never sent to a server, nor in a Referer), shows the account, and asks.
    const to = /^[0-9A-Za-z]{32}$/.test(token) ? `/portal/#link=${token}` : "/portal/#link-refused";
    return new Response(null, { status: 303, headers: { Location: to, "Referrer-Policy": "no-referrer" } });
  }
  const link = await protectLogin(ctx, USER_KEY_ATTEMPT, async () => {
    const live = await peekLink(ctx, token);
    if (!live) throw new ApiError(401, LINK_REFUSED);
    return live;
  });
  const customer = await sessionCustomer(ctx, link);
  if (!customer) throw new ApiError(401, LINK_REFUSED);
  return ok(c, { customer, expiresAt: link.expiresAt });
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
