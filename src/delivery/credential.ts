/**
 * What an update feed's request names its caller with (CONTRACT section 9): the user key (the X-Service-User-Key
 * header, or the `userKey` query parameter), or a license's feed token (`?feed=<token>`: licensing/feed-token.ts),
 * for updaters whose feed URL is all the vendor configures. Either is read in one D1 statement (the license with its
 * customer's name, as caller.ts reads it for a key) and judged by the same license policy (caller.ts judgeCaller): a
 * revoked or expired license is refused with 403 whichever names it; a token that is not the license's current one
 * (its key changed, the license deleted, a made-up token) names no license, as an unknown key does.
 */
import { eq } from "drizzle-orm";
import { type Params, batchReads, compiled } from "../db/compiled";
import { licenses } from "../db/schema";
import type { ServiceContext } from "../http/context";
import { feedTokenHolds, feedTokenLicenseId } from "../licensing/feed-token";
import type { LicenseRow } from "../licensing/license-core";
import type { TypedKey } from "../licensing/user-key";
import { type Caller, USER_KEY_HEADER, callerKey, callerLicenseQuery, callerRead, judgeCaller } from "./caller";
import { updateRefusal } from "./reasons";

/** The query parameter of a feed token. */
export const FEED_TOKEN_QUERY = "feed";

/** Who a request says it is: a user key (read both ways: licensing/user-key.ts), a feed token, or nobody. */
export type Credential = { key: TypedKey } | { feedToken: string } | undefined;

/**
 * The credential of a request: the user key (header first, then the `userKey` query parameter), else a feed token.
 * A blank or unreadable value is still a credential (it names nobody, and the answer says so), never anonymous.
 */
export async function credentialOf(
  header: (name: string) => string | undefined,
  query: (name: string) => string | undefined,
): Promise<Credential> {
  const key = await callerKey(header(USER_KEY_HEADER) ?? query("userKey"));
  if (key) return { key };
  const feedToken = query(FEED_TOKEN_QUERY);
  if (feedToken !== undefined) return { feedToken };
  return undefined;
}

/** The license a feed token names by its id, with its customer's name: the same row as callerLicenseQuery's. */
const callerLicenseById = compiled((db, p: Params<{ productId: number; id: number }>) =>
  callerRead(db, p.productId, eq(licenses.id, p.id), {}),
);

type CallerRow = Parameters<typeof judgeCaller>[1];

/**
 * The read of a credential's license, unexecuted (a route sends it in one batch with its other reads), or undefined
 * when there is nothing to read (anonymous, or a token of no readable shape).
 */
export function credentialQuery(productId: number, credential: Credential) {
  if (!credential) return undefined;
  if ("key" in credential) return callerLicenseQuery(productId, credential.key);
  const id = feedTokenLicenseId(credential.feedToken);
  return id === undefined ? undefined : callerLicenseById.with({ productId, id });
}

/** The caller a credential makes from the row its query read (caller.ts judgeCaller: 403 for a refused license). */
export async function judgeCredential(ctx: ServiceContext, credential: Credential, row: CallerRow): Promise<Caller> {
  if (!credential) return { kind: "anonymous" };
  if ("feedToken" in credential) {
    const holds =
      row !== undefined &&
      (await feedTokenHolds(ctx.config["Application:EncryptionKey"], credential.feedToken, row.license));
    return judgeCaller(ctx, holds ? row : undefined);
  }
  return judgeCaller(ctx, row);
}

/** The license a licensing bearer token names (its `lic` claim, the license's public id), with its customer's name. */
const callerLicenseByPublicId = compiled((db, p: Params<{ productId: number; licenseId: string }>) =>
  callerRead(db, p.productId, eq(licenses.licenseId, p.licenseId), {}),
);

/** What a session ping (CONTRACT section 13) names its caller with: a credential, or a bearer token's license. */
export type PingCredential = Credential | { bearerLicense: string };

/** The message of a ping credential that names no license of the product. */
export const NOT_THIS_PRODUCT = "The credential names no license of this product";

/**
 * The license of a ping's credential, in one D1 statement (none without a credential: undefined). A credential that
 * names no license of the product (another product's, an unknown key or token) is refused with 403 and its reason,
 * as a revoked or expired license is (judgeCaller): a ping counts for its own product or not at all.
 */
export async function requireProductLicense(
  ctx: ServiceContext,
  productId: number,
  credential: PingCredential,
): Promise<LicenseRow | undefined> {
  if (!credential) return undefined;
  const query =
    "bearerLicense" in credential
      ? callerLicenseByPublicId.with({ productId, licenseId: credential.bearerLicense })
      : credentialQuery(productId, credential);
  const [rows] = query ? await batchReads(ctx.db, [query]) : [[]];
  const caller =
    "bearerLicense" in credential ? await judgeCaller(ctx, rows[0]) : await judgeCredential(ctx, credential, rows[0]);
  if (caller.kind === "licensed") return caller.license;
  throw updateRefusal(NOT_THIS_PRODUCT, caller.kind === "unknown" ? caller.reason : "licenseNotFound");
}
