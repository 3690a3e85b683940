/**
 * The typed requests and results of the licensing operations. Names are CONTRACT section 4's REST bodies (camelCase);
 * both transports return exactly these shapes: dates are `Date` objects, enumerations their names, and a value the
 * service did not send is `undefined` (never `null`, never a protobuf default such as `""`). Where a type mirrors the
 * REST wire it derives from the service's OpenAPI document (`wire-types.ts`), restating only what the client changes
 * (dates, enumeration names, members it requires). The enumerations are the document's named ones (`LicenseTypeName`
 * …), the update check's parts its `UpdateCheckData`; only the license key's payload (a JWS payload) is stated here.
 */
import type { Answer, Body, PathParams, Query, Schemas, Without } from "./wire-types.js";

/**
 * `File`, `Activation` or `Floating` (CONTRACT section 3, License; REST may send the number, the client the name): the
 * document's named enumeration LicensingMode, whose names are LicensingModeName.
 */
export type LicensingMode = Schemas["LicensingModeName"];
/** `Standard`, `Demo` or `Trial` (as LicensingMode): the document's LicenseTypeName. */
export type LicenseType = Schemas["LicenseTypeName"];
/** A license's computed status (CONTRACT section 4), as validate answers it. */
export type LicenseStatus = Answer<"validateLicense">["status"];

/** Who the license is for. */
export type Licensee = Schemas["LicenseInfo"]["licensee"];

/**
 * What an application knows of its license, as activate, validate and request answer it: the wire's `license` with
 * enumerations as names and dates as `Date`. `licenseKey` is a compact JWS (ES256) to verify offline with
 * {@link verifyLicenseOffline}, present only where it proves a usable license on this machine.
 */
export interface License
  extends Without<
    Schemas["LicenseInfo"],
    "licensingMode" | "licenseType" | "issueDate" | "expireAt" | "supportExpireAt" | "licensee"
  > {
  licensingMode: LicensingMode;
  licenseType: LicenseType;
  issueDate?: Date;
  /** When the license expires; `undefined` = perpetual. */
  expireAt?: Date;
  /** When maintenance (support and updates) ends. */
  supportExpireAt?: Date;
  /** `undefined` when the service knows no licensee (an empty one on the wire). */
  licensee?: Licensee;
}

/** Fields every licensing request may carry; `userKey` defaults to the client's. */
interface WithUserKey {
  /** The license's user key; defaults to the `userKey` the client was created with. */
  userKey?: string;
}

/** `POST /v1/license/activate` / `LicenseServer/ActivateLicense`. */
export interface ActivateRequest extends WithUserKey, Body<"activateLicense"> {
  machineId: string;
}

/** What an activation answers: the activation token (`actk_…`) for validate and deactivate; `maxClientCount` 0 = unlimited. */
export interface ActivateResult extends Without<Answer<"activateLicense">, "tokenExpireAt" | "license"> {
  tokenExpireAt?: Date;
  license: License;
}

/** `POST /v1/license/deactivate` / `LicenseServer/DeactivateLicense`. */
export interface DeactivateRequest extends WithUserKey, Body<"deactivateLicense"> {
  machineId: string;
}

/** What a deactivation answers. */
export interface DeactivateResult extends Answer<"deactivateLicense"> {}

/** `POST /v1/license/validate` / `LicenseServer/ValidateLicense`. */
export interface ValidateRequest extends WithUserKey, Body<"validateLicense"> {}

/**
 * What a validation answers (only for a usable license; other states are {@link LicensingError}s): `serverTime` is
 * the service's clock, to detect a tampered local clock; `nonce` echoes the request's.
 */
export interface ValidateResult
  extends Without<Answer<"validateLicense">, "license" | "tokenExpireAt" | "serverTime" | "status"> {
  status: LicenseStatus;
  license: License;
  tokenExpireAt?: Date;
  serverTime: Date;
}

/** `POST /v1/license/request` / `LicenseServer/RequestFloatingLicense`. */
export interface RequestFloatingRequest extends WithUserKey, Body<"requestFloatingLicense"> {
  machineId: string;
  /** Required for a floating license: one seat per (machine, client). */
  clientId: string;
}

/**
 * What a granted floating seat answers: the seat's token (`fltk_…`) and the seconds between heartbeats the service
 * expects.
 */
export interface FloatingGrant extends Without<Answer<"requestFloatingLicense">, "tokenExpireAt" | "license"> {
  tokenExpireAt?: Date;
  license: License;
}

/** What a heartbeat answers. */
export interface HeartbeatResult extends Without<Answer<"heartbeat">, "tokenExpireAt"> {
  tokenExpireAt?: Date;
}

/** `POST /v1/license/release` / `LicenseServer/ReleaseFloatingLicense`. */
export interface ReleaseRequest extends WithUserKey, Body<"releaseFloatingLicense"> {
  licenseToken: string;
}

/** What releasing a seat answers. */
export interface ReleaseResult extends Answer<"releaseFloatingLicense"> {}

type WireReportProperty = NonNullable<Body<"sendReport">["properties"]>[number];

/** One name/value property of a report (the wire also accepts a null value; the client sends none). */
export type ReportProperty = { [K in keyof WireReportProperty]: NonNullable<WireReportProperty[K]> };

/**
 * `POST /v1/report` / `ReportServer/SendReport`: an exception report, license report or a custom one (`name` is
 * `ExceptionReport`, `LicenseReport` or a custom name).
 */
export interface Report extends WithUserKey, Without<Body<"sendReport">, "date" | "properties"> {
  /** When it happened; the service's clock when omitted. */
  date?: Date;
  properties?: ReportProperty[];
}

/** What sending a report answers. */
export interface SendReportResult extends Answer<"sendReport"> {}

/** A platform of the update routes (SPEC "Release download"). */
export type Platform = Query<"checkForUpdate">["platform"];

/**
 * `GET /v1/updates/{productCode}`: `version` is the caller's current `major.minor.patch`, `channel` `stable` (the
 * service's default) or `insider`.
 */
export interface UpdateCheckRequest extends PathParams<"checkForUpdate">, Without<Query<"checkForUpdate">, "userKey"> {
  /** Sent as `X-Service-User-Key`; defaults to the client's user key. Without one only ungated releases are offered. */
  userKey?: string;
  /**
   * This installation's random id, sent as `X-Service-Install-Id`; defaults to the client's `installId`. The service
   * admits installs to a release's rollout by it (CONTRACT section 8), so the feed and this check agree for it.
   */
  installId?: string;
}

/** Why an update is not offered for installation (SPEC "withheldReason"). */
export type WithheldReason = NonNullable<Schemas["UpdateCheckData"]["withheldReason"]>;

/**
 * Why the caller is rolled back (CONTRACT sections 8 and 13): `halted`, the release it runs is halted and rolled back
 * for everyone; `crashLoop`, this install's last sessions of it all crashed soon after starting.
 */
export type RollbackReason = NonNullable<Schemas["UpdateCheckData"]["rollbackReason"]>;

/**
 * The artifact to install, present when the latest release is installable and newer than the caller's version. `url`
 * is absolute, on the service's download route; it carries `?token=` for a gated release.
 */
export type UpdateDownload = Schemas["UpdateDownload"];

/** The caller's maintenance, for a valid user key; read leniently: each member present when the service sent it. */
export type UpdateMaintenance = Partial<Schemas["UpdateMaintenance"]>;

/**
 * The signed update-check data (SPEC "Update check data", CONTRACT sections 5 and 7), exactly as signed: dates stay
 * ISO strings because the signature covers the JSON text.
 */
export interface UpdateCheckData {
  format: number;
  product: { code: string; name: string };
  channel: string;
  platform: string;
  current: string;
  latest?: string;
  release?: { version: string; publishedAt: string; name?: string };
  updateAvailable: boolean;
  installable: boolean;
  withheldReason?: WithheldReason;
  purchaseUrl?: string;
  download?: UpdateDownload;
  latestInstallable?: string;
  requiredEdition?: string;
  maintenance?: UpdateMaintenance;
  /**
   * The newest release's rollout for this caller (CONTRACT section 8): its effective percentage now, and whether the
   * caller (its install id, else its license) is admitted to it; when it is not, `release` is the newest release it
   * is admitted to and `latest` still names the newest. Absent when nothing is published, and from a service without
   * release control.
   */
  rollout?: UpdateRollout;
  /**
   * The caller must update: its `version` is below the product's minimum version, or a newer critical release is
   * admissible to it. `false` when the service did not say.
   */
  required: boolean;
  /**
   * The caller is to go back to the previous release (it runs a halted release that is rolled back, or it is in a
   * crash loop: `rollbackReason`): `download` is that release, older than `version`; install it as a downgrade
   * (electron-updater's `allowDowngrade`). `false` when the service did not say.
   */
  rollback: boolean;
  /** Why, with `rollback`: `halted` or `crashLoop`; absent otherwise, from an older service, or for a reason unknown. */
  rollbackReason?: RollbackReason;
}

/** The newest release's rollout as the update check reports it for the caller. */
export interface UpdateRollout {
  /** The effective percentage now (the last passed `rolloutSchedule` step, else `stagingPercentage`). */
  percentage: number;
  /**
   * Whether the caller's cohort is below `percentage`; `true` when the service does not decide (anonymous, no install
   * id: apply `percentage` yourself, as electron-updater does with the feed's `stagingPercentage`).
   */
  admitted: boolean;
}

/**
 * An update check whose signature verified: `signature` is base64 of the 64-byte P1363 ES256 signature over the
 * canonical JSON of `data`, `keyId` the `kid` of the key that signed it.
 */
export interface VerifiedUpdateCheck extends Without<Schemas["SignedUpdateCheck"], "success" | "data"> {
  data: UpdateCheckData;
}

/**
 * A public key as `GET /v1/extensions/keys` publishes it (CONTRACT section 5). The members are the wire's, each a
 * string: keys an application configures itself (`trustedKeys`) need not be the service's P-256 keys to be read.
 */
export interface PublicJwk extends Partial<Record<keyof Schemas["Jwk"], string>> {
  kty: string;
}

/** A JWK Set: `{ keys: [...] }`. */
export interface JwkSet extends Record<keyof Schemas["JwkSet"], PublicJwk[]> {}

/** The payload of a license key (CONTRACT section 4), after its signature and expiry verified. */
export interface LicenseKeyPayload {
  licenseId: string;
  productCode?: string;
  licenseType: LicenseType;
  edition?: string;
  features: string[];
  /** ISO date the license expires; `undefined` = perpetual. */
  expireAt?: string;
  /** ISO date maintenance ends. */
  supportExpireAt?: string;
  /** The licensing mode the key proves a use of; Activation and Floating keys name their machine. */
  licensingMode?: LicensingMode;
  /** The license's status when the key was issued (Activated, or NotActivated for a File license). */
  status?: LicenseStatus;
  /** The machine the key was issued to. */
  machineId?: string;
  /** The client (Floating: the seat holder). */
  clientId?: string;
  /** The request's nonce, when the request sent one. */
  nonce?: string;
  /** Issued at, seconds since the epoch. */
  iat: number;
  /** Expiry of the key itself, seconds since the epoch. */
  exp?: number;
  /**
   * Days the license stays usable offline after this key's `iat` while the service cannot be reached
   * (`Licensing:OfflineGraceDays`; see `OfflineGrace`). `undefined` when the service signed none.
   */
  offlineGraceDays?: number;
}

/**
 * `POST /v1/license/checkout` (CONTRACT section 11): a license file for this machine, to run offline. `ttl` (seconds)
 * shortens its lifetime; `encrypt` seals it for this machine (user key + machine id).
 */
export interface CheckoutRequest extends WithUserKey, Without<Body<"checkoutLicenseFile">, "userKey"> {
  machineId: string;
}

/**
 * A license file as the service answers it: `licenseFile` is the compact JWS to save (as `<licenseId>.lic`) and check
 * with `verifyLicenseFile`.
 */
export interface LicenseFileAnswer extends Without<Answer<"checkoutLicenseFile">, "issuedAt" | "expiresAt"> {
  issuedAt: Date;
  expiresAt: Date;
}

/** `POST /v1/license/borrow`: a floating seat held for `hours` without heartbeats (at most Licensing:MaxBorrowHours). */
export interface BorrowRequest extends WithUserKey, Without<Body<"borrowFloatingLicense">, "userKey"> {
  machineId: string;
  clientId: string;
  hours: number;
}

/** A borrowed seat: its token (for `returnSeat`), when it ends, and a license file that ends with it. */
export interface BorrowResult
  extends Without<Answer<"borrowFloatingLicense">, "issuedAt" | "expiresAt" | "borrowUntil"> {
  issuedAt: Date;
  expiresAt: Date;
  borrowUntil: Date;
}

/** `POST /v1/license/return`: the borrowed seat's `licenseToken`, or the machine and client that borrowed it. */
export interface ReturnRequest extends WithUserKey, Without<Body<"returnFloatingLicense">, "userKey"> {}

/** What returning a borrowed seat answers. */
export interface ReturnResult extends Answer<"returnFloatingLicense"> {}
