/**
 * licensing.v1.Authentication (CONTRACT section 4): sign-in with a user key, or a user name and password, for a bearer
 * token, as POST /v1/auth/login; under the login protection (protection/limits.ts). Anonymous: the router lists
 * `anonymousMethods` for the authentication interceptor.
 */
import type { ServiceImpl } from "@connectrpc/connect";
import { signInWithPassword } from "../../auth/sign-in";
import { signInWithUserKey } from "../../licensing/sign-in";
import { Authentication } from "../../gen/licensing/v1/authentication_pb";
import { USER_KEY_ATTEMPT, passwordAttempt, protectLogin } from "../../protection/limits";
import { callOf } from "./call";

/** The methods called without a credential. */
export const anonymousMethods = [Authentication.method.authenticate];

export const authentication: ServiceImpl<typeof Authentication> = {
  async authenticate(req, context) {
    const { ctx } = callOf(context);
    const signedIn =
      req.userKey !== "" && req.username === ""
        ? await protectLogin(ctx, USER_KEY_ATTEMPT, () => signInWithUserKey(ctx, req.userKey))
        : await protectLogin(ctx, passwordAttempt(req.username || undefined), () =>
            signInWithPassword(ctx, req.username || undefined, req.password),
          );
    return { token: signedIn.token, expiresIn: signedIn.expiresIn, roles: signedIn.roles };
  },
};
