/**
 * Who asks an update route: nobody (no user key), somebody whose key matches no license of the product, or a
 * license. A revoked, expired or tampered license is refused outright (403 `License revoked or expired`, SPEC
 * rule 5). The download tokens a licensed caller's URLs carry for gated releases are in download-tokens.ts.
 */
import { and, eq, sql } from "drizzle-orm";
import { clock } from "../clock";
import type { Db } from "../db/client";
import { type Params, compiled } from "../db/compiled";
import { customers, licenses } from "../db/schema";
import type { ServiceContext } from "../http/context";
import { ApiError } from "../errors";
import type { LicenseRow } from "../licensing/license-core";
import { judgeLicense } from "../licensing/policy";
import { compactUserKey, userKeyIs } from "../licensing/user-key";
import { countFailedLogin } from "../protection/limits";
import { REFUSAL_REASONS, updateRefusal } from "./reasons";

/** The name fields of a license's customer (the update check's `maintenance.licensee`). */
export interface CustomerName {
  company: string | null;
  firstName: string | null;
  lastName: string | null;
}

/**
 * Who asks. A licensed caller found by resolveCaller also carries its customer's name, read in the same query
 * (null: no customer); undefined where the license came another way (a download token).
 */
export type Caller =
  | { kind: "anonymous" }
  | { kind: "unknown"; reason: "licenseNotFound" | "wrongProduct" }
  | { kind: "licensed"; license: LicenseRow; customer?: CustomerName | null };

export const REVOKED_OR_EXPIRED = "License revoked or expired";
export const BAD_DOWNLOAD_TOKEN = "Download token invalid, expired or already used";

/** 403 `Download token invalid, expired or already used`, reason `downloadTokenInvalid`. */
export const badDownloadToken = (): ApiError => updateRefusal(BAD_DOWNLOAD_TOKEN, "downloadTokenInvalid");

/**
 * The user key of a request in its compact form (read as Crockford base32 is typed: licensing/user-key.ts); undefined
 * for an anonymous caller.
 */
export function callerKey(userKey: string | undefined): string | undefined {
  return compactUserKey(userKey ?? "") || undefined;
}

/**
 * resolveCaller's query, unexecuted (a route sends it in one D1 batch with its other reads): the license with this
 * user key, its customer's name, and the product the route serves (`askedProductId`), so the license policy judges
 * the product like every other path (a license of another product is refused as such, after tampered, revoked and
 * expired).
 */
const callerLicense = compiled((db, p: Params<{ productId: number; key: string }>) =>
  db
    .select({
      license: licenses,
      customer: { company: customers.company, firstName: customers.firstName, lastName: customers.lastName },
      askedProductId: sql<number>`${p.productId}`.mapWith(Number).as("asked_product_id"),
    })
    .from(licenses)
    .leftJoin(customers, eq(customers.id, licenses.customerId))
    .where(userKeyIs(p.key))
    .limit(1),
);

export function callerLicenseQuery(productId: number, key: string) {
  return callerLicense.with({ productId, key });
}

/** The caller behind a user key, for one product. */
export async function resolveCaller(
  ctx: ServiceContext,
  productId: number,
  userKey: string | undefined,
): Promise<Caller> {
  const key = callerKey(userKey);
  if (!key) return { kind: "anonymous" };
  const [row] = await callerLicense.run(ctx.db, { productId, key });
  return judgeCaller(ctx, row);
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
  const verdict = await judgeLicense(ctx.config["Application:EncryptionKey"], row?.license, clock.now(), {
    productId: row?.askedProductId,
  });
  if (verdict.usable) return { kind: "licensed", license: verdict.license, customer: row?.customer ?? null };
  // Guessing user keys on the update routes counts like failed logins (SPEC "Limits" rule 5), refused keys too.
  ctx.waitUntil(countFailedLogin(ctx));
  if (verdict.refusal === "notFound" || verdict.refusal === "wrongProduct")
    return { kind: "unknown", reason: REFUSAL_REASONS[verdict.refusal] };
  throw updateRefusal(REVOKED_OR_EXPIRED, REFUSAL_REASONS[verdict.refusal]);
}

export function licenseOf(caller: Caller): LicenseRow | undefined {
  return caller.kind === "licensed" ? caller.license : undefined;
}

/** The license a download token was issued to must still be usable, as the license policy decides (otherwise the token's message). */
export async function requireTokenLicense(
  ctx: ServiceContext,
  licenseId: number | null,
): Promise<LicenseRow | undefined> {
  if (licenseId === null) return undefined;
  const license = await ctx.db.select().from(licenses).where(eq(licenses.id, licenseId)).get();
  const verdict = await judgeLicense(ctx.config["Application:EncryptionKey"], license, clock.now());
  if (!verdict.usable) throw badDownloadToken();
  return verdict.license;
}
