/**
 * The typed requests and results of the licensing operations. Names are CONTRACT section 4's REST bodies (camelCase);
 * both transports return exactly these shapes: dates are `Date` objects, enumerations their names, and a value the
 * service did not send is `undefined` (never `null`, never a protobuf default such as `""`).
 */

/** `File`, `Activation` or `Floating` (CONTRACT section 3, License). */
export type LicensingMode = "File" | "Activation" | "Floating";
/** `Standard`, `Demo` or `Trial` (CONTRACT section 3, License). */
export type LicenseType = "Standard" | "Demo" | "Trial";
/** A license's computed status (CONTRACT section 4). */
export type LicenseStatus = "Activated" | "NotActivated" | "Expired" | "Revoked" | "Tampered";

/** Who the license is for. */
export interface Licensee {
  name?: string;
  email?: string;
  company?: string;
}

/** What an application knows of its license, as activate, validate and request answer it. */
export interface License {
  /** The public `lic…` identifier. */
  licenseId: string;
  licensingMode: LicensingMode;
  licenseType: LicenseType;
  edition?: string;
  issueDate?: Date;
  /** When the license expires; `undefined` = perpetual. */
  expireAt?: Date;
  /** When maintenance (support and updates) ends. */
  supportExpireAt?: Date;
  features: string[];
  licensee?: Licensee;
  /**
   * Compact JWS (ES256) over the license; verify it offline with {@link verifyLicenseOffline}. Present only where it
   * proves a usable license on this machine: File mode always, Activation mode with a live activation of the machine,
   * Floating mode with a live seat of the machine and client.
   */
  licenseKey?: string;
}

/** Fields every licensing request may carry; `userKey` defaults to the client's. */
interface WithUserKey {
  /** The license's user key; defaults to the `userKey` the client was created with. */
  userKey?: string;
}

/** `POST /v1/license/activate` / `LicenseServer/ActivateLicense`. */
export interface ActivateRequest extends WithUserKey {
  machineId: string;
  clientId?: string;
  clientName?: string;
  productCode?: string;
  version?: string;
  nonce?: string;
}

/** What an activation answers. */
export interface ActivateResult {
  /** The activation token (`actk_…`) for validate and deactivate. */
  licenseToken: string;
  tokenExpireAt?: Date;
  activeClientCount: number;
  /** `maxClients` of the license; 0 = unlimited. */
  maxClientCount: number;
  license: License;
}

/** `POST /v1/license/deactivate` / `LicenseServer/DeactivateLicense`. */
export interface DeactivateRequest extends WithUserKey {
  machineId: string;
  clientId?: string;
  licenseToken?: string;
}

/** What a deactivation answers. */
export interface DeactivateResult {
  licenseId: string;
  activeClientCount: number;
  maxClientCount: number;
}

/** `POST /v1/license/validate` / `LicenseServer/ValidateLicense`. */
export interface ValidateRequest extends WithUserKey {
  machineId?: string;
  clientId?: string;
  licenseToken?: string;
  productCode?: string;
  version?: string;
  nonce?: string;
}

/** What a validation answers (only for a usable license; other states are {@link LicensingError}s). */
export interface ValidateResult {
  licenseId: string;
  status: LicenseStatus;
  license: License;
  licenseToken?: string;
  tokenExpireAt?: Date;
  /** The service's clock, to detect a tampered local clock. */
  serverTime: Date;
  /** The `nonce` of the request, echoed. */
  nonce?: string;
}

/** `POST /v1/license/request` / `LicenseServer/RequestFloatingLicense`. */
export interface RequestFloatingRequest extends WithUserKey {
  machineId: string;
  /** Required for a floating license: one seat per (machine, client). */
  clientId: string;
  clientName?: string;
}

/** What a granted floating seat answers. */
export interface FloatingGrant {
  /** The seat's token (`fltk_…`). */
  licenseToken: string;
  tokenExpireAt?: Date;
  activeClientCount: number;
  maxClientCount: number;
  license: License;
  /** Seconds between heartbeats the service expects. */
  heartbeatInterval: number;
}

/** What a heartbeat answers. */
export interface HeartbeatResult {
  tokenExpireAt?: Date;
  heartbeatInterval: number;
  activeClientCount: number;
  maxClientCount: number;
}

/** `POST /v1/license/release` / `LicenseServer/ReleaseFloatingLicense`. */
export interface ReleaseRequest extends WithUserKey {
  licenseToken: string;
}

/** What releasing a seat answers. */
export interface ReleaseResult {
  licenseId: string;
  activeClientCount: number;
  maxClientCount: number;
}

/** One name/value property of a report. */
export interface ReportProperty {
  name: string;
  value: string;
}

/** `POST /v1/report` / `ReportServer/SendReport`: an exception report, license report or a custom one. */
export interface Report extends WithUserKey {
  /** `ExceptionReport`, `LicenseReport` or a custom name. */
  name: string;
  content: string;
  uid?: string;
  version?: string;
  /** When it happened; the service's clock when omitted. */
  date?: Date;
  machineId?: string;
  clientId?: string;
  clientName?: string;
  contentType?: string;
  properties?: ReportProperty[];
}

/** What sending a report answers. */
export interface SendReportResult {
  reportId: number;
}

/** A platform of the update routes (SPEC "Release download"). */
export type Platform = "win-x64" | "win-arm64" | "darwin-arm64" | "darwin-x64" | "linux-x64" | "linux-arm64";

/** `GET /v1/updates/{productCode}`. */
export interface UpdateCheckRequest {
  productCode: string;
  platform: Platform;
  /** The caller's current `major.minor.patch`. */
  version: string;
  /** `stable` (the service's default) or `insider`. */
  channel?: "stable" | "insider";
  /** Sent as `X-Service-User-Key`; defaults to the client's user key. Without one only ungated releases are offered. */
  userKey?: string;
}

/** Why an update is not offered for installation (SPEC "withheldReason"). */
export type WithheldReason =
  | "licenseRequired"
  | "maintenanceExpired"
  | "platformRequiresLicense"
  | "platformRequiresEdition";

/** The artifact to install, present when the latest release is installable and newer than the caller's version. */
export interface UpdateDownload {
  fileName: string;
  kind: string;
  size: number;
  sha256: string;
  sha512: string;
  /** Absolute URL on the service's download route; carries `?token=` for a gated release. */
  url: string;
}

/** The caller's maintenance, for a valid user key; each member present when the service knows it. */
export interface UpdateMaintenance {
  until?: string;
  expired?: boolean;
  expiresInDays?: number;
  noticeDays?: number;
  renewalUrl?: string;
  supportEmail?: string;
  licenseId?: string;
  licensee?: string;
}

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
}

/** An update check whose signature verified. */
export interface VerifiedUpdateCheck {
  data: UpdateCheckData;
  /** Base64 of the 64-byte P1363 ES256 signature over the canonical JSON of `data`. */
  signature: string;
  /** The `kid` of the key that signed it. */
  keyId: string;
}

/** A public key as `GET /v1/extensions/keys` publishes it (CONTRACT section 5). */
export interface PublicJwk {
  kty: string;
  crv?: string;
  x?: string;
  y?: string;
  kid?: string;
  alg?: string;
  use?: string;
}

/** A JWK Set: `{ keys: [...] }`. */
export interface JwkSet {
  keys: PublicJwk[];
}

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
}
