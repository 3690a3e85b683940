/**
 * Finding a license by its user key and refusing it in CONTRACT section 4's order; the operations' shared vocabulary
 * (messages, trace actions). Free of HTTP.
 */
import { GrpcCode, LicensingError } from "../kernel/errors";
import type { LicenseRow, ViewedLicense } from "./license-core";
import { eq, sql } from "drizzle-orm";
import { clock } from "../kernel/clock";
import type { Config } from "../kernel/config";
import type { Db } from "../db/client";
import { licenses, products } from "../db/schema";
import type { ServiceContext } from "../http/context";
import { type Params, batchReads, checkable } from "../db/compiled";
import { type JudgedLicense, type LicenseRefusal, judgeLicense } from "./policy";
import { type TypedKey, typedKey, userKeyIs } from "./user-key";

export const Messages = {
  invalidKey: "Invalid license key",
  machineRequired: "The machine code is required for license activation",
  clientRequired: "The client id is required for a floating license",
  keyNotFound: "License key not found",
  tokenNotFound: "License token not found",
  alreadyActivated: "The license has already been activated",
  revoked: "The license has been revoked",
  expired: "The license has expired",
  tokenExpired: "The license token has expired",
  wrongProduct: "The license is not valid for this product",
  exhausted: "The maximum number of concurrent users for the license has been reached",
  notActivated: "The license has not been activated",
  notFloating: "The license is not a floating license",
  noActivation: "The license does not require activation",
  tampered: "The license has been tampered",
  tokenTampered: "The license token has been tampered",
  deactivationLimit: "The license has used its machine deactivations for this month",
  fileHeld: "The machine holds a license file that has not expired",
} as const;

/**
 * The machine-readable reason of each message (LicensingError.reason): stable names an application can switch on,
 * whatever the wording of the message.
 */
export const Reasons = {
  invalidKey: "invalidUserKey",
  machineRequired: "machineIdRequired",
  clientRequired: "clientIdRequired",
  keyNotFound: "licenseNotFound",
  tokenNotFound: "licenseTokenNotFound",
  alreadyActivated: "alreadyActivated",
  revoked: "licenseRevoked",
  expired: "licenseExpired",
  tokenExpired: "licenseTokenExpired",
  wrongProduct: "wrongProduct",
  exhausted: "seatsExhausted",
  notActivated: "notActivated",
  notFloating: "notFloating",
  noActivation: "activationNotRequired",
  tampered: "licenseTampered",
  tokenTampered: "licenseTokenTampered",
  deactivationLimit: "deactivationLimit",
  fileHeld: "licenseFileHeld",
} as const satisfies Record<keyof typeof Messages, string>;

/** A licensing refusal's message: one of {@link Messages}, so every refusal has its reason. */
export type LicensingMessage = (typeof Messages)[keyof typeof Messages];

const reasonOfMessage = new Map<string, string>(
  Object.entries(Messages).map(([name, message]) => [message, Reasons[name as keyof typeof Messages]]),
);

/** The licensing error of a message, with the message's reason. */
export const fail = (code: GrpcCode, message: LicensingMessage, headers?: Record<string, string>) =>
  new LicensingError(code, message, reasonOfMessage.get(message) ?? "licensingRefused", headers);

export type LicenseWithProduct = LicenseRow & { productCode: string };

/**
 * A user key as the operations take it (user-key.ts typedKey): read as Crockford base32 is typed (any case, spaces and
 * dashes ignored) for the service's keys, and as typed for a legacy key; 523 `invalidUserKey` when it can be neither.
 */
export async function userKeyOf(userKey: string | undefined): Promise<TypedKey> {
  const key = await typedKey(userKey ?? "");
  if (key.compact === "" && key.legacy === "") throw fail(GrpcCode.InvalidArgument, Messages.invalidKey);
  return key;
}

const licenseWithProduct = checkable((db, p: Params<{ key: string; legacy: string }>, checked) =>
  db
    .select({ license: licenses, productCode: products.code, checked: sql<number>`${checked}` })
    .from(licenses)
    .innerJoin(products, eq(products.id, licenses.productId))
    .where(userKeyIs(p.key, p.legacy))
    .limit(1),
);

/** The license with this user key and its product's code, unexecuted (operations batch it with other reads). */
export function licenseByUserKey(key: TypedKey) {
  return licenseWithProduct.with({ key: key.compact, legacy: key.legacy });
}

export function foundLicense<L extends ViewedLicense = LicenseRow>(
  row: { license: L; productCode: string } | undefined,
): L & { productCode: string } {
  if (!row) throw fail(GrpcCode.NotFound, Messages.keyNotFound);
  return { ...row.license, productCode: row.productCode };
}

/** The license a user key names, with its product's code; 523 for a malformed key, 525 for an unknown one. */
export async function findByUserKey(db: Db, userKey: string | undefined): Promise<LicenseWithProduct> {
  const [[row]] = await batchReads(db, [licenseByUserKey(await userKeyOf(userKey))]);
  return foundLicense(row);
}

/** findByUserKey for an operation (its read carries the request's deferred checks: db/first-batch.ts). */
async function findLicense(ctx: ServiceContext, userKey: string | undefined): Promise<LicenseWithProduct> {
  const key = await userKeyOf(userKey);
  const [rows] = await batchReads(ctx.db, [licenseByUserKey(key)]);
  return foundLicense(rows[0]);
}

/** The licensing operations' answer to each refusal of the license policy (CONTRACT section 4's table). */
const REFUSAL_ERRORS: Record<LicenseRefusal, () => LicensingError> = {
  notFound: () => fail(GrpcCode.NotFound, Messages.keyNotFound),
  tampered: () => fail(GrpcCode.DataLoss, Messages.tampered),
  revoked: () => fail(GrpcCode.PermissionDenied, Messages.revoked),
  expired: () => fail(GrpcCode.PermissionDenied, Messages.expired),
  wrongProduct: () => fail(GrpcCode.PermissionDenied, Messages.wrongProduct),
};

/** Asks the license policy (licensing/policy.ts) and throws its refusal as the licensing error (52x). */
export async function requireUsable(
  config: Config,
  license: JudgedLicense & { productCode?: string },
  now: Date,
  productCode?: string,
): Promise<void> {
  const verdict = await judgeLicense(config["Application:EncryptionKey"], license, now, { productCode });
  if (!verdict.usable) throw REFUSAL_ERRORS[verdict.refusal]();
}

/** A license-bound bearer token may act only for its own license. */
export function requireOwnLicense(ctx: ServiceContext, license: Pick<LicenseRow, "licenseId">): void {
  const bound = ctx.principal?.licenseId;
  if (bound !== undefined && bound !== license.licenseId) throw fail(GrpcCode.PermissionDenied, Messages.wrongProduct);
}

export async function openLicense(
  ctx: ServiceContext,
  userKey: string | undefined,
  productCode?: string,
): Promise<LicenseWithProduct> {
  const license = await findLicense(ctx, userKey);
  requireOwnLicense(ctx, license);
  await requireUsable(ctx.config, license, now(), productCode);
  return license;
}

export const now = (): Date => clock.now();

export function required(value: string | undefined | null, message: LicensingMessage): string {
  const v = value?.trim() ?? "";
  if (v === "") throw fail(GrpcCode.InvalidArgument, message);
  return v;
}
