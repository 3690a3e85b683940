/**
 * The update routes' reasons (`X-Service-Reason`, reasons.ts) in words: constants only, so the console shows the same
 * words the OpenAPI document gives.
 */
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
  notOffered:
    "release control keeps the release from this caller: outside its rollout or audience, or halted (CONTRACT section 8)",
  downloadTokenInvalid: "the download token is invalid, expired, already used or not this license's",
} as const;
export type UpdateReason = keyof typeof UPDATE_REASONS;
