/**
 * Why an update route answered as it did, in words a program reads: the `X-Service-Reason` header of its 204 and 403
 * answers (and of a 200 that offers nothing: an update check without a download, an empty feed served as YAML), so a
 * vendor can tell a mistyped user key from "no update". The statuses and messages stay SPEC's; the names are the
 * licensing vocabulary's where one exists (license-lookup.ts `Reasons`: `licenseNotFound`, `licenseRevoked`, …) and
 * SPEC's `withheldReason` values otherwise.
 */
import { ApiError } from "../errors";
import type { LicenseRefusal } from "../licensing/policy";
import { Reasons } from "../licensing/license-lookup";

export const REASON_HEADER = "X-Service-Reason";

/** Every reason an update route gives, with what it means (the OpenAPI descriptions and docs/electron.md list them). */
export const UPDATE_REASONS = {
  licenseNotFound: "the user key names no license (mistyped?); the caller was answered as anonymous",
  wrongProduct: "the user key names a license of another product; the caller was answered as anonymous",
  licenseRevoked: "the user key's license is revoked",
  licenseExpired: "the user key's license has expired",
  licenseTampered: "the user key's license was changed outside the service",
  licenseRequired: "the release needs a license with maintenance and the caller has none",
  maintenanceExpired: "the license's maintenance ended before the release",
  platformRequiresLicense: "the platform is open to some editions only and the caller has no license",
  platformRequiresEdition: "the license's edition is not entitled to the platform",
  noRelease: "nothing is published for this channel and platform",
  nothingNewer: "the caller already has the newest release",
  downloadTokenInvalid: "the download token is invalid, expired, already used or not this license's",
} as const;
export type UpdateReason = keyof typeof UPDATE_REASONS;

/** The reason of a refusal of the license policy: the licensing operations' own name for it. */
export const REFUSAL_REASONS = {
  notFound: Reasons.keyNotFound,
  wrongProduct: Reasons.wrongProduct,
  revoked: Reasons.revoked,
  expired: Reasons.expired,
  tampered: Reasons.tampered,
} as const satisfies Record<LicenseRefusal, UpdateReason>;

/** The OpenAPI text listing the reasons an answer may carry. */
export function reasonsDescription(reasons: readonly UpdateReason[]): string {
  return `\`${REASON_HEADER}\` says why: ${reasons.map((r) => `\`${r}\` (${UPDATE_REASONS[r]})`).join(", ")}.`;
}

/** A 403 of the update routes with its reason in the header (the envelope stays SPEC's). */
export function updateRefusal(message: string, reason: UpdateReason): ApiError {
  return new ApiError(403, message, { [REASON_HEADER]: reason });
}

/** `res` with its reason header (none when `reason` is undefined). */
export function withReason(res: Response, reason: UpdateReason | undefined): Response {
  if (reason) res.headers.set(REASON_HEADER, reason);
  return res;
}
