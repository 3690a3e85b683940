/**
 * The signed update check (SPEC "Update check", CONTRACT section 5): what the newest release for a platform and
 * channel is, whether the caller may install it and why not, where to download it, and the caller's maintenance.
 * `data` is signed with ES256 over its RFC 8785 canonical JSON; `signature` is standard base64 of the 64-byte P1363
 * signature and `keyId` names the key in GET /v1/extensions/keys.
 */
import canonicalize from "canonicalize";
import { eq } from "drizzle-orm";
import { clock } from "../clock";
import { customers } from "../db/schema";
import type { ServiceContext } from "../http/context";
import type { LicenseRow } from "../licensing/license-core";
import { type Caller, type CustomerName, licenseOf } from "./caller";
import { issueDownloadToken } from "./download-tokens";
import {
  type DownloadRow,
  type Platform,
  type ProductRow,
  type ReleaseWithFiles,
  coveredByMaintenance,
  mainFile,
  maintenanceEnd,
  platformVerdict,
  publishedAt,
} from "./catalog";
import { signBytes } from "../auth/signing-keys";
import { compareVersions } from "./versions";
import type { UpdateReason } from "./reasons";

export const UPDATE_CHECK_FORMAT = 2;
const DAY_MS = 86_400_000;

export interface DownloadInfo {
  fileName: string;
  kind: string;
  size: number;
  sha256: string;
  sha512: string;
  url: string;
}

export interface MaintenanceInfo {
  until: string;
  expired: boolean;
  expiresInDays: number;
  noticeDays: number;
  renewalUrl?: string;
  supportEmail?: string;
  licenseId: string;
  licensee?: string;
}

export interface UpdateCheckData {
  format: number;
  product: { code: string; name: string };
  channel: string;
  platform: Platform;
  current: string;
  latest: string;
  release?: { version: string; publishedAt: string; name?: string };
  updateAvailable: boolean;
  installable: boolean;
  withheldReason?: "licenseRequired" | "maintenanceExpired" | "platformRequiresLicense" | "platformRequiresEdition";
  purchaseUrl?: string;
  download?: DownloadInfo;
  latestInstallable?: string;
  requiredEdition?: string;
  maintenance?: MaintenanceInfo;
}

export interface UpdateCheckInput {
  product: ProductRow;
  platform: Platform;
  version: string;
  channel: string;
  caller: Caller;
  releases: ReleaseWithFiles[];
  /** Absolute URL of the download route for an artifact (CONTRACT section 5: URLs are absolute). */
  downloadUrl: (release: ReleaseWithFiles, file: DownloadRow, token?: string) => string;
}

/** The download of a release's main file; a gated release's URL carries a fresh token for a licensed caller. */
export async function downloadFor(
  ctx: ServiceContext,
  input: Pick<UpdateCheckInput, "caller" | "downloadUrl">,
  entry: ReleaseWithFiles,
  file: DownloadRow,
): Promise<DownloadInfo> {
  const license = licenseOf(input.caller);
  const token =
    entry.release.requiresMaintenance && license ? await issueDownloadToken(ctx, file.id, license.id) : undefined;
  return {
    fileName: file.fileName,
    kind: file.kind,
    size: file.size,
    sha256: file.sha256,
    sha512: file.sha512,
    url: input.downloadUrl(entry, file, token),
  };
}

/** `customer` is the license's customer as the caller's query read it; undefined when not read (then it is read here). */
async function maintenanceOf(
  ctx: ServiceContext,
  product: ProductRow,
  license: LicenseRow,
  customer?: CustomerName | null,
): Promise<MaintenanceInfo> {
  const until = maintenanceEnd(license);
  const left = Date.parse(until) - clock.now().getTime();
  let licensee = license.licenseeName ?? undefined;
  if (!licensee && license.customerId !== null) {
    if (customer === undefined)
      customer = await ctx.db.select().from(customers).where(eq(customers.id, license.customerId)).get();
    licensee = customer?.company ?? ([customer?.firstName, customer?.lastName].filter(Boolean).join(" ") || undefined);
  }
  return {
    until,
    expired: left < 0,
    expiresInDays: Math.ceil(left / DAY_MS),
    noticeDays: product.maintenanceNoticeDays,
    ...(product.renewalUrl ? { renewalUrl: product.renewalUrl } : {}),
    ...(product.supportEmail ? { supportEmail: product.supportEmail } : {}),
    licenseId: license.licenseId,
    ...(licensee ? { licensee } : {}),
  };
}

/** The update check's data for a caller (SPEC withheldReason rules). */
export async function checkForUpdate(ctx: ServiceContext, input: UpdateCheckInput): Promise<UpdateCheckData> {
  const { product, platform, version, channel, caller, releases } = input;
  const license = licenseOf(caller);
  const latest = releases[0];
  const data: UpdateCheckData = {
    format: UPDATE_CHECK_FORMAT,
    product: { code: product.code, name: product.name },
    channel,
    platform,
    current: version,
    latest: latest?.release.version ?? version,
    updateAvailable: latest !== undefined && compareVersions(latest.release.version, version) > 0,
    installable: false,
  };
  if (license)
    data.maintenance = await maintenanceOf(
      ctx,
      product,
      license,
      caller.kind === "licensed" ? caller.customer : undefined,
    );
  if (!latest) return data;
  data.release = {
    version: latest.release.version,
    publishedAt: publishedAt(latest.release),
    ...(latest.release.name ? { name: latest.release.name } : {}),
  };

  const platformRule = platformVerdict(ctx.config, platform, license);
  if (!platformRule.allowed) {
    data.withheldReason = platformRule.reason;
    if (platformRule.reason === "platformRequiresEdition") data.requiredEdition = platformRule.requiredEdition;
    if (product.purchaseUrl) data.purchaseUrl = product.purchaseUrl;
    return data;
  }
  if (!coveredByMaintenance(license, latest.release)) {
    if (!license) {
      data.withheldReason = "licenseRequired";
      if (product.purchaseUrl) data.purchaseUrl = product.purchaseUrl;
    } else {
      data.withheldReason = "maintenanceExpired";
      const installable = releases.find(
        (r) => coveredByMaintenance(license, r.release) && compareVersions(r.release.version, version) > 0,
      );
      if (installable) data.latestInstallable = installable.release.version;
    }
    return data;
  }
  data.installable = true;
  const file = mainFile(latest.files);
  if (data.updateAvailable && file) data.download = await downloadFor(ctx, input, latest, file);
  return data;
}

/**
 * Why an update check offers no download, for its X-Service-Reason header: a user key naming no license first, then
 * the withheld reason, then nothing published or nothing newer; undefined when it offers one (and the key is good).
 */
export function updateCheckReason(caller: Caller, data: UpdateCheckData): UpdateReason | undefined {
  if (caller.kind === "unknown") return caller.reason;
  if (data.withheldReason) return data.withheldReason;
  if (!data.release) return "noRelease";
  if (!data.updateAvailable) return "nothingNewer";
  return undefined;
}

/** The signed answer: `{ success, data, signature, keyId }`. */
export async function signUpdateCheck(
  ctx: ServiceContext,
  data: UpdateCheckData,
): Promise<{ success: true; data: UpdateCheckData; signature: string; keyId: string }> {
  const canonical = canonicalize(data);
  if (canonical === undefined) throw new Error("update check data could not be canonicalized");
  const { signature, keyId } = await signBytes(ctx.db, ctx.config, new TextEncoder().encode(canonical));
  return { success: true, data, signature, keyId };
}
