/** `/v1/auth/console/*`: sign-in and sign-out of the admin console (the cookie itself: auth/console-session.ts). */
import { type RouteHandler, createRoute, z } from "@hono/zod-openapi";
import { eq } from "drizzle-orm";
import type { AppEnv, Role } from "../../http/app-env";
import { clock, nowIso } from "../../kernel/clock";
import { apiKeys, users } from "../../db/schema";
import { serviceContext } from "../../http/context";
import { ApiError, unauthorized } from "../../kernel/errors";
import { Envelope, RoleName, anonymousErrorResponses, enveloped, json } from "../../http/openapi";
import { ok } from "../../http/respond";
import type { Router } from "../../http/router";
import { passwordAttempt, protectLogin } from "../../protection/limits";
import { Permission, generateApiKey, invalidateApiKeyCache, keyPrefix } from "../../auth/api-key-service";
import {
  CONSOLE_COOKIE,
  CONSOLE_KEY_NAME,
  CSRF_HEADER,
  consoleSessionKey,
  csrfTokenFor,
  sessionCookie,
} from "../../auth/console-session";
import { sha256Hex } from "../../kernel/crypto";
import { API_KEY_SCHEME, access } from "../../auth/guard";
import { INVALID_LOGIN, checkPassword } from "../../auth/sign-in";

const ConsoleLoginRequest = z
  .object({ username: z.string().min(1).max(256), password: z.string().max(256) })
  .openapi("ConsoleLoginRequest");

const ConsoleSession = enveloped({
  user: z.string(),
  roles: z.array(RoleName),
  csrfToken: z
    .string()
    .openapi({ description: `Send it in the ${CSRF_HEADER} header with every request the cookie authenticates.` }),
  expiresAt: z.string().openapi({ description: "When the session's API key expires (ISO 8601)." }),
}).openapi("ConsoleSession");

const consoleLoginRoute = createRoute({
  method: "post",
  path: "/v1/auth/console/login",
  tags: ["Authentication"],
  operationId: "consoleLogin",
  summary: "Console sign-in: a short-lived API key of the user in an HttpOnly cookie, and its CSRF token",
  ...access.anonymous(),
  request: { body: { required: true, content: { "application/json": { schema: ConsoleLoginRequest } } } },
  responses: {
    200: json(ConsoleSession, `Signed in; the cookie ${CONSOLE_COOKIE} holds the session's API key`),
    401: json(Envelope, `Wrong credentials: \`${INVALID_LOGIN}\``),
    ...anonymousErrorResponses,
  },
});

const consoleLogin: RouteHandler<typeof consoleLoginRoute, AppEnv> = async (c) => {
  const ctx = serviceContext(c);
  const { username, password } = c.req.valid("json");
  const user = await protectLogin(ctx, passwordAttempt(username), async () => {
    const found = await checkPassword(ctx.db, username, password);
    if (!found) throw new ApiError(401, INVALID_LOGIN);
    return found;
  });
  const lifetime = ctx.config["Application:ConsoleSessionLifetime"];
  const key = generateApiKey();
  const signedInAt = clock.now();
  const expiresAt = new Date(signedInAt.getTime() + lifetime).toISOString();
  await ctx.db.batch([
    ctx.db.insert(apiKeys).values({
      name: CONSOLE_KEY_NAME,
      keyDigest: await sha256Hex(key),
      keyPrefix: keyPrefix(key),
      ownerId: user.id,
      description: `Signed in from ${ctx.clientIp}`,
      createdDate: nowIso(),
      expireDate: expiresAt,
      permissions: Permission.All,
      // Marks the key as a session whose idle time is checked (console-session.ts), from its sign-in on.
      lastUsedAt: signedInAt.toISOString(),
      updatedAt: nowIso(),
    }),
    ctx.db.update(users).set({ lastLogIn: nowIso() }).where(eq(users.id, user.id)),
  ]);
  const res = ok(c, {
    user: user.userName,
    roles: (user.roles ?? []) as Role[],
    csrfToken: await csrfTokenFor(key),
    expiresAt,
  });
  res.headers.append("Set-Cookie", sessionCookie(key, Math.floor(lifetime / 1000)));
  return res;
};

const consoleLogoutRoute = createRoute({
  method: "post",
  path: "/v1/auth/console/logout",
  tags: ["Authentication"],
  operationId: "consoleLogout",
  summary: "Console sign-out: revokes the session's API key and clears its cookie (nothing to do without one)",
  // The cookie and its CSRF token are the credential; a key sent in the header is never the one revoked here.
  ...access.anonymous(),
  responses: { 200: json(Envelope, "Signed out"), ...anonymousErrorResponses },
});

const consoleLogout: RouteHandler<typeof consoleLogoutRoute, AppEnv> = async (c) => {
  // Idempotent: without a session cookie there is nothing to end. A cookie counts only with its CSRF token, so
  // another site cannot sign the user out.
  const key = await consoleSessionKey(c);
  if (key === null) throw unauthorized(API_KEY_SCHEME);
  if (key !== undefined) {
    await c
      .get("db")
      .update(apiKeys)
      .set({ revoked: true })
      .where(eq(apiKeys.keyDigest, await sha256Hex(key)))
      .run();
    invalidateApiKeyCache();
  }
  const res = ok(c, {});
  res.headers.append("Set-Cookie", sessionCookie("", 0));
  return res;
};

/** Registers `POST /v1/auth/console/login` and `POST /v1/auth/console/logout`. */
export function registerConsoleAuth(app: Router): void {
  app.openapi(consoleLoginRoute, consoleLogin);
  app.openapi(consoleLogoutRoute, consoleLogout);
}
