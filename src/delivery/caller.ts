/**
 * Who asks an update route: nobody (no user key), somebody whose key matches no license of the product, or a
 * license. A revoked, expired or tampered license is refused outright (403 `License revoked or expired`, SPEC
 * rule 5; the download route answers it with the token's message). The download tokens a licensed caller's URLs carry for gated releases are in download-tokens.ts.
 */
import { type Placeholder, type SQL, eq, sql } from "drizzle-orm";
import { clock } from "../kernel/clock";
import type { Db } from "../db/client";
import { type Params, compiled } from "../db/compiled";
import { customers, licenses } from "../db/schema";
import { INSTALL_ID_HEADER, INSTALL_ID_PATTERN, type ServiceContext } from "../http/context";
import { ApiError } from "../kernel/errors";
import type { LicenseRow } from "../licensing/license-core";
import { type JudgedLicense, judgeLicense } from "../licensing/policy";
import { type TypedKey, typedKey, userKeyIs } from "../licensing/user-key";
import { countFailedLogin } from "../protection/limits";
import { REFUSAL_REASONS, type UpdateReason, updateRefusal } from "./reasons";

/** The name fields of a license's customer (the update check's `maintenance.licensee`). */
export interface CustomerName {
  company: string | null;
  firstName: string | null;
  lastName: string | null;
}

/**
 * Who asks. A licensed caller found by callerLicenseQuery also carries its customer's name, read in the same query
 * (null: no customer); undefined where it was not read (the download route: download-plan.ts).
 */
export type Caller<L = LicenseRow> =
  | { kind: "anonymous" }
  | { kind: "unknown"; reason: "licenseNotFound" | "wrongProduct" }
  | { kind: "licensed"; license: L; customer?: CustomerName | null };

/** A caller, or a user key whose license is refused (tampered, revoked or expired), with the refusal's reason. */
export type CallerVerdict<L = LicenseRow> = Caller<L> | { kind: "refused"; reason: UpdateReason };

export const REVOKED_OR_EXPIRED = "License revoked or expired";
export const BAD_DOWNLOAD_TOKEN = "Download token invalid, expired or already used";

/** 403 `Download token invalid, expired or already used`, reason `downloadTokenInvalid`. */
export const badDownloadToken = (): ApiError => updateRefusal(BAD_DOWNLOAD_TOKEN, "downloadTokenInvalid");

/** The header a caller names its user key with (or the `userKey` query parameter). */
export const USER_KEY_HEADER = "X-Service-User-Key";

/** The header an install names its own random id with (http/context.ts): its rollout cohort (CONTRACT section 8). */
export { INSTALL_ID_HEADER };
/** The header a feed request names the version it runs with (rollback, CONTRACT section 8). */
export const CURRENT_VERSION_HEADER = "X-Service-Current-Version";

/** Whether a request names a user key (or a feed token, credential.ts) at all (before the app: the front door, app/app.ts). */
export function namesUserKey(headers: Headers, url: URL): boolean {
  if (headers.has(USER_KEY_HEADER)) return true;
  // The query is parsed only when its text could name one (a name may be percent-encoded): most polls' queries do not.
  const query = url.search;
  if (!(query.includes("userKey") || query.includes("feed") || query.includes("%"))) return false;
  return url.searchParams.has("userKey") || url.searchParams.has("feed");
}

/**
 * Whether an update request says who asks (a user key, an install id, its running version): its answer may be its
 * own, so the front door's and the edge cache's shared anonymous answers are not for it.
 */
export function saysWhoAsks(headers: Headers, url: URL): boolean {
  return namesUserKey(headers, url) || headers.has(INSTALL_ID_HEADER) || headers.has(CURRENT_VERSION_HEADER);
}

/** The install id of a request's header, or undefined; 400 naming the header when it is malformed. */
export function installIdOf(value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  if (!INSTALL_ID_PATTERN.test(value))
    throw new ApiError(400, `${INSTALL_ID_HEADER}: 1 to 128 visible ASCII characters (the install's random id)`);
  return value;
}

/**
 * The user key of a request read both ways (licensing/user-key.ts typedKey: the service's keys in their compact form,
 * legacy keys as typed); undefined for an anonymous caller (no key, or a blank one).
 */
export async function callerKey(userKey: string | undefined): Promise<TypedKey | undefined> {
  if (userKey === undefined || userKey.trim() === "") return undefined;
  return typedKey(userKey);
}

/**
 * The caller behind a user key, unexecuted (a route sends it in one D1 batch with its other reads): the license with
 * this user key, its customer's name, and the product the route serves (`askedProductId`), so the license policy
 * judges the product like every other path (a license of another product is refused as such, after tampered,
 * revoked and expired). `extra`: columns read beside it in the same statement (a release's audiences: audience.ts).
 * The feed token's read (credential.ts) and the audience reads are this read with another `where`.
 */
export function callerRead<E extends Record<string, SQL.Aliased>>(
  db: Db,
  productId: Placeholder<"productId", number>,
  where: SQL,
  extra: E,
) {
  return db
    .select({
      license: licenses,
      customer: { company: customers.company, firstName: customers.firstName, lastName: customers.lastName },
      askedProductId: sql<number>`${productId}`.mapWith(Number).as("asked_product_id"),
      ...extra,
    })
    .from(licenses)
    .leftJoin(customers, eq(customers.id, licenses.customerId))
    .where(where)
    .limit(1);
}

const callerLicense = compiled((db, p: Params<{ productId: number; key: string; legacy: string }>) =>
  callerRead(db, p.productId, userKeyIs(p.key, p.legacy), {}),
);

/** The caller behind a user key (callerRead), unexecuted. */
export function callerLicenseQuery(productId: number, key: TypedKey) {
  return callerLicense.with({ productId, key: key.compact, legacy: key.legacy });
}

/**
 * The caller a row of callerLicenseQuery makes, as the license policy (licensing/policy.ts) decides: unknown (no
 * license with the key, or one of another product: SPEC's "none matches a license"; its reason goes into the answer's
 * X-Service-Reason), licensed, or refused (403 `License revoked or expired`: tampered, revoked or expired, each with
 * its reason).
 */
export async function judgeCaller(
  ctx: ServiceContext,
  row: { license: LicenseRow; customer: CustomerName | null; askedProductId: number } | undefined,
): Promise<Caller> {
  const verdict = await callerVerdict(ctx, row);
  if (verdict.kind === "refused") throw updateRefusal(REVOKED_OR_EXPIRED, verdict.reason);
  return verdict;
}

/**
 * judgeCaller's decision as a value: a refused license is `refused` with its reason, for a route that answers it
 * otherwise (the download route: the token's message). `row.license` holds at least what the policy judges;
 * `customer` undefined means not read.
 */
export async function callerVerdict<L extends JudgedLicense>(
  ctx: ServiceContext,
  row: { license: L; customer?: CustomerName | null; askedProductId: number } | undefined,
): Promise<CallerVerdict<L>> {
  const verdict = await judgeLicense(ctx.config["Application:EncryptionKey"], row?.license, clock.now(), {
    productId: row?.askedProductId,
  });
  if (verdict.usable) return { kind: "licensed", license: verdict.license, customer: row?.customer };
  // Guessing user keys on the update routes counts like failed logins (SPEC "Limits" rule 5), refused keys too.
  ctx.waitUntil(countFailedLogin(ctx));
  if (verdict.refusal === "notFound" || verdict.refusal === "wrongProduct")
    return { kind: "unknown", reason: REFUSAL_REASONS[verdict.refusal] };
  return { kind: "refused", reason: REFUSAL_REASONS[verdict.refusal] };
}

export function licenseOf<L>(caller: Caller<L>): L | undefined {
  return caller.kind === "licensed" ? caller.license : undefined;
}
