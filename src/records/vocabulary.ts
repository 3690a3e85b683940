/**
 * The licensing vocabulary, in one place (issue 12 "One policy, one vocabulary"): the stored numbers and the names
 * of license types, licensing modes, license token kinds and their prefixes, trace actions, release channels and
 * how editions compare. Every module (SQL included) names these values through this file, never as literals, so a
 * renumbering or a new value is one edit. Constants only: nothing here reads a database or a request.
 */

/** `licenseType` names, index = stored number (CONTRACT section 3). */
export const LICENSE_TYPES = ["Standard", "Demo", "Trial"] as const;
/** Stored numbers of `licenseType`. */
export const LicenseTypeCode = { Standard: 0, Demo: 1, Trial: 2 } as const;

/** `licensingMode` names, index = stored number (CONTRACT section 3). */
export const LICENSING_MODES = ["File", "Activation", "Floating"] as const;
/** Stored numbers of `licensingMode` (CONTRACT section 3: File 0, Activation 1, Floating 2). */
export const Mode = { File: 0, Activation: 1, Floating: 2 } as const;

/** `status` of a license (CONTRACT section 4), a string enum on the wire. */
export const LICENSE_STATUSES = ["Activated", "NotActivated", "Expired", "Revoked", "Tampered"] as const;
export type LicenseStatus = (typeof LICENSE_STATUSES)[number];

/** `kind` of a license token, index = stored number. */
export const TOKEN_KINDS = ["Activation", "Floating"] as const;
export const TokenKind = { Activation: 0, Floating: 1 } as const;
export type TokenKind = (typeof TokenKind)[keyof typeof TokenKind];
/** What every token of a kind starts with (CONTRACT section 3). */
export const TOKEN_PREFIXES: Readonly<Record<TokenKind, string>> = {
  [TokenKind.Activation]: "actk_",
  [TokenKind.Floating]: "fltk_",
};

/** `action` of a license trace, index = stored number (CONTRACT section 3). */
export const TRACE_ACTIONS = [
  "Activate",
  "Deactivate",
  "Validate",
  "Request",
  "Release",
  "Heartbeat",
  "Report",
  "UpdateCheck",
  "Download",
  "TokenExpired",
  "Checkout",
  "Borrow",
] as const;
/** Stored numbers of trace actions, by name. */
export const TraceAction = {
  Activate: 0,
  Deactivate: 1,
  Validate: 2,
  Request: 3,
  Release: 4,
  Heartbeat: 5,
  Report: 6,
  UpdateCheck: 7,
  Download: 8,
  TokenExpired: 9,
  Checkout: 10,
  Borrow: 11,
} as const satisfies { [K in (typeof TRACE_ACTIONS)[number]]: number };

/** Release channels (SPEC "Update check"): `stable` is the default. */
export const CHANNELS = ["stable", "insider"] as const;

/** The platforms a release's artifacts are built for; each belongs to a family (delivery/catalog.ts `family`). */
export const PLATFORMS = ["win-x64", "win-arm64", "darwin-arm64", "darwin-x64", "linux-x64", "linux-arm64"] as const;
export type Platform = (typeof PLATFORMS)[number];

/**
 * Whether a license's edition is one of `editions`. Editions are free text on licenses and in
 * Updates:PlatformEditions, compared without regard to case; a license without an edition matches none.
 */
export function editionIn(edition: string | null | undefined, editions: readonly string[]): boolean {
  const own = (edition ?? "").toLowerCase();
  return own !== "" && editions.some((e) => e.toLowerCase() === own);
}

/**
 * An email address of a plain shape (name@domain.tld): what the portal's sign-in by email and an import's
 * `customerEmail` accept.
 */
export const EMAIL_ADDRESS = /^[^\s@<>",;()[\]\\]+@[^\s@<>",;()[\]\\]+\.[^\s@<>",;()[\]\\]+$/;
