/**
 * User-key sign-in (SPEC "Authentication routes", CONTRACT section 4): an application that holds only its user key
 * gets a bearer token whose subject is its license (role Application, claim `lic`). A licensing service, free of
 * HTTP (REST and gRPC call it): it reads a license and asks the license policy (policy.ts) whether it may be used.
 * The user name and password sign-in is auth's (auth/sign-in.ts).
 */
import { issueToken } from "../auth/bearer";
import { clock } from "../kernel/clock";
import { batchReads } from "../db/compiled";
import { ApiError, LicensingError } from "../kernel/errors";
import type { Role } from "../http/app-env";
import type { ServiceContext } from "../http/context";
import { Reasons, licenseByUserKey, userKeyOf } from "./license-lookup";
import type { TypedKey } from "./user-key";
import { type LicenseRefusal, judgeLicense } from "./policy";

export const INVALID_USER_KEY = "Invalid user key.";

/**
 * What each refusal of the license policy answers at sign-in: 401 `Invalid user key.` with this reason, SPEC's
 * message for all of them (the holder of a real key may learn why, a guesser learns nothing), counted as a failed
 * attempt like an unknown key; or, for a tampered license, nothing: it signs in, and its licensing calls answer
 * 535 (docs/decisions.md, "A license's own bearer token"). Sign-in names no product, so wrongProduct never comes.
 */
const SIGN_IN_REFUSALS: Record<LicenseRefusal, string | undefined> = {
  notFound: Reasons.invalidKey,
  tampered: undefined,
  revoked: Reasons.revoked,
  expired: Reasons.expired,
  wrongProduct: Reasons.wrongProduct,
};

/**
 * Signs an application in with its user key: a bearer token for its license, unless the license policy refuses the
 * license (see SIGN_IN_REFUSALS). The key is read as Crockford base32 is typed (license-lookup.ts: any case, spaces
 * and dashes ignored); a key that cannot be one is `invalidUserKey` like a key that names no license.
 */
export async function signInWithUserKey(
  ctx: ServiceContext,
  userKey: string,
): Promise<{ token: string; expiresIn: number; roles: Role[] }> {
  let key: TypedKey;
  try {
    key = await userKeyOf(userKey);
  } catch (e) {
    if (e instanceof LicensingError) throw new ApiError(401, INVALID_USER_KEY, {}, Reasons.invalidKey);
    throw e;
  }
  const [[row]] = await batchReads(ctx.db, [licenseByUserKey(key)]);
  const license = row && { ...row.license, productCode: row.productCode };
  const verdict = await judgeLicense(ctx.config["Application:EncryptionKey"], license, clock.now());
  const refused = verdict.usable ? undefined : SIGN_IN_REFUSALS[verdict.refusal];
  if (refused !== undefined || !license) throw new ApiError(401, INVALID_USER_KEY, {}, refused ?? Reasons.invalidKey);
  const roles: Role[] = ["Application"];
  const issued = await issueToken(ctx.config, {
    subject: license.licenseId,
    name: license.licenseId,
    roles,
    licenseId: license.licenseId,
  });
  return { ...issued, roles };
}
