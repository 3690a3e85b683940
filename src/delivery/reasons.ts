/**
 * Why an update route answered as it did, in words a program reads: the `X-Service-Reason` header of its 204 and 403
 * answers (and of a 200 that offers nothing: an update check without a download, an empty feed served as YAML), so a
 * vendor can tell a mistyped user key from "no update". The statuses and messages stay SPEC's; the names are the
 * licensing vocabulary's where one exists (license-lookup.ts `Reasons`: `licenseNotFound`, `licenseRevoked`, …) and
 * SPEC's `withheldReason` values otherwise.
 */
import { ApiError } from "../kernel/errors";
import type { LicenseRefusal } from "../licensing/policy";
import { Reasons } from "../licensing/license-lookup";
import { UPDATE_REASONS, type UpdateReason } from "./reason-words";

export const REASON_HEADER = "X-Service-Reason";

/** Every reason an update route gives, with what it means (the OpenAPI descriptions and docs/electron.md list them). */
export { UPDATE_REASONS, type UpdateReason };

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
