/** `/v1/auth/*` (SPEC "Authentication routes"): login, the signed-in user, the session and logout. */
import { type RouteHandler, createRoute, z } from "@hono/zod-openapi";
import { and, eq } from "drizzle-orm";
import { clock } from "../../kernel/clock";
import type { Db } from "../../db/client";
import { requireById, updateRow } from "../../http/repository";
import { apiKeys, userSettings } from "../../db/schema";
import { keyIsLive } from "../../db/rules";
import { type ServiceContext, serviceContext } from "../../http/context";
import { USER_KEY_ATTEMPT, passwordAttempt, protectLogin } from "../../protection/limits";
import { ApiError } from "../../kernel/errors";
import {
  Envelope,
  RoleName,
  anonymousErrorResponses,
  enveloped,
  errorResponses,
  int32,
  json,
  jsonBody,
} from "../../http/openapi";
import { ok } from "../../http/respond";
import type { AppEnv } from "../../http/app-env";
import type { Router } from "../../http/router";
import { auditUserWrite, endsTokens } from "../../auth/users";
import type { Config } from "../../kernel/config";
import { access } from "../../auth/guard";
import { revokeToken, tokensEndNow } from "../../auth/bearer";
import { INVALID_LOGIN, checkPassword, signInWithPassword } from "../../auth/sign-in";
import { signInWithUserKey } from "../../licensing/sign-in";
import { endConsoleSessions } from "../../auth/console-session";
import { ApiKey, maskKeys } from "../../auth/api-key-service";
import { User, UserSetting, userWriteValues } from "../../auth/users";

const LoginRequest = z
  .object({
    username: z.string().max(256).optional(),
    password: z.string().max(256).optional(),
    userKey: z
      .string()
      .max(256)
      .optional()
      .openapi({ description: "An application signs in with its license's user key instead (role Application)." }),
  })
  .openapi("LoginRequest");

const LoginResponse = enveloped({
  token: z.string().openapi({ description: "A bearer token (JWT) for the Authorization header." }),
  expiresIn: int32(1).openapi({ description: "Lifetime of the token in seconds." }),
}).openapi("LoginResponse");

const UserProfile = User.record
  .extend({
    apiKeys: z.array(ApiKey.record).optional(),
    settings: z.array(UserSetting.record).optional(),
  })
  .openapi("UserProfile");

/** Fields a signed-in user may change on their own account; roles and the customer link stay with administrators. */
const OwnProfileUpdate = User.updateInput
  .omit({ id: true, roles: true, customerId: true, rank: true })
  .openapi("OwnProfileUpdate");

/** The signed-in user's record with settings and active API keys (SPEC `GET /v1/auth/user`). */
async function profile(db: Db, config: Config, userId: string): Promise<Record<string, unknown>> {
  const user = await requireById(db, User, userId);
  const [settingRows, keyRows] = await db.batch([
    db.select().from(userSettings).where(eq(userSettings.userId, userId)),
    db
      .select()
      .from(apiKeys)
      .where(and(eq(apiKeys.ownerId, userId), eq(apiKeys.revoked, false))),
  ]);
  const now = clock.now().getTime();
  const active = keyRows.filter((k) => keyIsLive(k, now));
  const keys = active.map((k) => ApiKey.toWire(k, config) as Record<string, unknown>);
  maskKeys(keys, active);
  return {
    ...User.toWire(user, config),
    settings: settingRows.map((s) => UserSetting.toWire(s, config)),
    apiKeys: keys,
  };
}

/** Whether a profile write touches what signs the user in or reaches them: password, email or user name. */
function changesCredentials(values: Record<string, unknown>, existing: Record<string, unknown>): boolean {
  if (values["passwordHash"] !== undefined) return true;
  return (["email", "userName"] as const).some((k) => values[k] !== undefined && values[k] !== existing[k]);
}

const CURRENT_PASSWORD_REQUIRED = "The current password is required to change the password, email or user name.";

/** A wrong current password: a 400 that login protection counts as a failed attempt. */
class WrongCurrentPassword extends ApiError {
  constructor() {
    super(400, "The current password is not correct.");
  }
}

/**
 * Checks the signed-in user's present password before a credential change: a stolen bearer token alone cannot take
 * the account over. A wrong password counts as a failed login for the IP (login protection), so it cannot be
 * guessed through this route either.
 */
async function confirmPassword(
  ctx: ServiceContext,
  userName: string,
  currentPassword: string | undefined,
): Promise<void> {
  if (currentPassword === undefined) throw new ApiError(400, CURRENT_PASSWORD_REQUIRED);
  await protectLogin(
    ctx,
    passwordAttempt(userName),
    async () => {
      if (!(await checkPassword(ctx.db, userName, currentPassword))) throw new WrongCurrentPassword();
    },
    (e) => e instanceof WrongCurrentPassword,
  );
}

function signedInUser(userId: string | undefined): string {
  if (!userId) throw new ApiError(400, "The bearer token does not belong to a user account");
  return userId;
}

const loginRoute = createRoute({
  method: "post",
  path: "/v1/auth/login",
  tags: ["Authentication"],
  operationId: "login",
  summary: "Sign in with a user name and password; returns a bearer token",
  ...access.anonymous(),
  request: { body: { required: false, content: { "application/json": { schema: LoginRequest } } } },
  responses: {
    200: json(LoginResponse, "Signed in"),
    401: json(Envelope, `Wrong credentials: \`${INVALID_LOGIN}\` or \`Invalid user key.\``),
    ...anonymousErrorResponses,
  },
});

const login: RouteHandler<typeof loginRoute, AppEnv> = async (c) => {
  const ctx = serviceContext(c);
  const { username, password, userKey } = c.req.valid("json");
  const issued =
    userKey !== undefined && username === undefined
      ? await protectLogin(ctx, USER_KEY_ATTEMPT, async () => {
          const { token, expiresIn } = await signInWithUserKey(ctx, userKey);
          return { token, expiresIn };
        })
      : await protectLogin(ctx, passwordAttempt(username), () => signInWithPassword(ctx, username, password));
  return ok(c, issued);
};

const getSignedInUserRoute = createRoute({
  method: "get",
  path: "/v1/auth/user",
  tags: ["Authentication"],
  operationId: "getSignedInUser",
  summary: "The signed-in user with roles, settings and active API keys",
  ...access.bearer(),
  request: {
    query: z.object({
      request: z.string().max(2048).optional().openapi({ description: "Accepted for compatibility; ignored." }),
    }),
  },
  responses: { 200: json(enveloped({ user: UserProfile }), "The signed-in user"), ...errorResponses },
});

const getSignedInUser: RouteHandler<typeof getSignedInUserRoute, AppEnv> = async (c) => {
  const ctx = serviceContext(c);
  return ok(c, { user: await profile(ctx.db, ctx.config, signedInUser(ctx.principal?.userId)) });
};

const updateSignedInUserRoute = createRoute({
  method: "post",
  path: "/v1/auth/user",
  tags: ["Authentication"],
  operationId: "updateSignedInUser",
  summary: "Change the signed-in user's own profile (only the properties sent)",
  ...access.bearer(),
  description:
    "Changing the password, email or user name needs `currentPassword` (400 without it or when it is wrong; a wrong one counts as a failed login). A new password ends every bearer token of the user, this one included: sign in again.",
  request: {
    body: jsonBody(
      z.object({
        user: OwnProfileUpdate,
        currentPassword: z
          .string()
          .max(256)
          .optional()
          .openapi({ description: "The present password: required to change the password, email or user name." }),
      }),
    ),
  },
  responses: { 200: json(enveloped({ user: UserProfile }), "The updated user"), ...errorResponses },
});

const updateSignedInUser: RouteHandler<typeof updateSignedInUserRoute, AppEnv> = async (c) => {
  const ctx = serviceContext(c);
  const userId = signedInUser(ctx.principal?.userId);
  const { user: input, currentPassword } = c.req.valid("json");
  const existing = await requireById(ctx.db, User, userId);
  const values = await userWriteValues(User.toRow(input));
  if (changesCredentials(values, existing)) await confirmPassword(ctx, String(existing["userName"]), currentPassword);
  if (Object.keys(values).length > 0) {
    const ends = endsTokens(values, existing);
    if (ends) await endConsoleSessions(ctx.db, userId);
    const row = await updateRow(ctx.db, User, userId, {
      ...values,
      ...(ends ? { tokensValidAfter: tokensEndNow() } : {}),
    });
    auditUserWrite(ctx, "update", row, existing);
  }
  return ok(c, { user: await profile(ctx.db, ctx.config, userId) });
};

const getSessionRoute = createRoute({
  method: "get",
  path: "/v1/auth/session",
  tags: ["Authentication"],
  operationId: "getSession",
  summary: "Who the credential belongs to (no permission bit needed)",
  ...access.either(),
  responses: {
    200: json(
      enveloped({
        user: z.string().optional(),
        roles: z.array(RoleName),
        permissions: int32(0, 15)
          .optional()
          .openapi({ description: "API key permission bits; absent for bearer tokens." }),
        keyName: z.string().optional(),
      }),
      "The session",
    ),
    ...errorResponses,
  },
});

const getSession: RouteHandler<typeof getSessionRoute, AppEnv> = (c) => {
  const p = c.get("principal");
  return ok(c, {
    user: p.userName ?? p.licenseId,
    roles: [...p.roles],
    ...(p.kind === "key" ? { permissions: p.permissions, keyName: p.keyName } : {}),
  });
};

const logoutRoute = createRoute({
  method: "post",
  path: "/v1/auth/logout",
  tags: ["Authentication"],
  operationId: "logout",
  summary: "End the bearer token: it is refused from now on",
  ...access.bearer(),
  request: { body: { required: false, content: { "application/json": { schema: z.object({}) } } } },
  responses: { 200: json(Envelope, "Signed out"), ...errorResponses },
});

const logout: RouteHandler<typeof logoutRoute, AppEnv> = async (c) => {
  await revokeToken(c.get("db"), c.get("principal"));
  return ok(c, {});
};

export function registerAuth(app: Router): void {
  app.openapi(loginRoute, login);
  app.openapi(getSignedInUserRoute, getSignedInUser);
  app.openapi(updateSignedInUserRoute, updateSignedInUser);
  app.openapi(getSessionRoute, getSession);
  app.openapi(logoutRoute, logout);
}
