import type { Config } from "../kernel/config";
import type { Db } from "../db/client";
import type { ServiceLog } from "../db/logging";

/** The roles of SPEC "Authentication" rule 12. */
export const ROLES = ["Administrator", "LicenseManager", "Sales", "Customer", "Application"] as const;
export type Role = (typeof ROLES)[number];

/** Who is calling, once a credential has been checked. */
export interface Principal {
  /** `customer`: a customer portal session (portal/portal-session.ts), never accepted by the staff guard. */
  kind: "key" | "bearer" | "customer";
  /** The user (absent for an ownerless API key and for a license's own bearer token). */
  userId?: string;
  userName?: string;
  roles: readonly Role[];
  /** API key permission bits (SPEC rule 5); absent for bearer tokens. */
  permissions?: number;
  keyId?: number;
  keyName?: string;
  /** Bearer token id and expiry, for logout. */
  jti?: string;
  /** Bearer token `iat` (seconds): compared with the user's tokens_valid_after. */
  issuedAt?: number;
  expiresAt?: number;
  /** A license's own bearer token (user-key sign-in): the license's public id. */
  licenseId?: string;
  /** A customer portal session: the customer it acts for (absent for a license with no customer). */
  customerId?: number;
}

/**
 * A route's declaration that its anonymous answer may be kept (delivery/answer-memo.ts): the route sets it, the
 * answer-memo layer (app/app.ts PRE_ROUTE) keeps it after the route answered, so no route fills the memo itself.
 */
export interface AnswerKeeping {
  /** The answer's normalised key (it carries the product's release generation and the origin of its URLs). */
  key: string;
  /** Until when the request's URL may point at the key (the product memo's trust in the generation). */
  until: number;
  /** The answer to keep (before any 304 for If-None-Match), absent when it came from the memo already. */
  answer?: Response;
  /** Its cache lifetime (Updates:FeedCacheSeconds). */
  maxAgeMs: number;
}

/** What a customer portal session opens (portal/portal-session.ts): its customer's licenses, or one license. */
export interface PortalScope {
  /** The customer whose licenses it opens; null for a license with no customer. */
  customerId: number | null;
  /** Without a customer: the one license (row id) it opens; null otherwise. */
  licenseRowId: number | null;
  signedInWith: "userKey" | "email";
  /** The license whose user key opened the session (null for an emailed link): the one key it may show in full. */
  keyLicenseRowId: number | null;
  expiresAt: string;
}

/** Hono's environment for every route: bindings and the per-request values the app middleware sets. */
export interface AppEnv {
  Bindings: Bindings;
  Variables: {
    config: Config;
    db: Db;
    requestId: string;
    clientIp: string;
    principal: Principal;
    /** The request's service log entries, written after the response (http/request-log.ts). */
    log: ServiceLog;
    /** Set when the request's API key was refused: it counts like a failed login (protection/limits.ts). */
    refusedApiKey: boolean;
    /** How the route's answer may be kept in the isolate's answer memo; kept by app/app.ts's answer-memo layer. */
    keep: AnswerKeeping | undefined;
    /** A customer portal session's scope, set by the portal's guard (portal/portal-session.ts). */
    portal: PortalScope;
  };
}
