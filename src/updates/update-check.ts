/**
 * The signed update check (SPEC "Update check", CONTRACT section 5): what the newest release for a platform and
 * channel is, whether the caller may install it and why not, where to download it, and the caller's maintenance.
 * `data` is signed with ES256 over its RFC 8785 canonical JSON; `signature` is standard base64 of the 64-byte P1363
 * signature and `keyId` names the key in GET /v1/extensions/keys.
 */
import { z } from "@hono/zod-openapi";
import canonicalize from "canonicalize";
import { eq } from "drizzle-orm";
import { clock } from "../clock";
import { customers } from "../db/schema";
import type { ServiceContext } from "../http/context";
import { int32, int64 } from "../http/openapi";
import type { LicenseRow } from "../licensing/license-core";
import { type Caller, type CustomerName, licenseOf } from "./caller";
import { issueDownloadToken } from "./download-tokens";
import {
  type DownloadRow,
  PLATFORMS,
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
import { CHANNELS } from "../licensing/vocabulary";

export const UPDATE_CHECK_FORMAT = 2;
const DAY_MS = 86_400_000;

/** SPEC's `withheldReason` values: why the newest release is not offered to the caller. */
export const WITHHELD_REASONS = [
  "licenseRequired",
  "maintenanceExpired",
  "platformRequiresLicense",
  "platformRequiresEdition",
] as const satisfies readonly UpdateReason[];

/** Where to download a release's main file (CONTRACT section 5). */
export const DownloadInfo = z
  .object({
    fileName: z.string(),
    kind: z.string().openapi({ description: "The artifact's kind (installer, archive, …)." }),
    size: int64().openapi({ description: "Bytes." }),
    sha256: z.string().openapi({ description: "Hex SHA-256 of the file." }),
    sha512: z.string().openapi({ description: "Base64 SHA-512 of the file (electron-updater's hash)." }),
    url: z.string().openapi({
      description: "Absolute download URL; a release that needs maintenance carries a one-time token in it.",
    }),
  })
  .openapi("UpdateDownload");
export type DownloadInfo = z.infer<typeof DownloadInfo>;

/** The caller's maintenance, for a user key naming a license (SPEC "Update check"). */
export const MaintenanceInfo = z
  .object({
    until: z.string().openapi({ description: "When maintenance ends (ISO 8601)." }),
    expired: z.boolean(),
    expiresInDays: int32().openapi({ description: "Days until it ends; negative once it has ended." }),
    noticeDays: int32(0).openapi({ description: "How many days before the end the product asks to remind." }),
    renewalUrl: z.string().optional(),
    supportEmail: z.string().optional(),
    licenseId: z.string(),
    licensee: z.string().optional(),
  })
  .openapi("UpdateMaintenance");
export type MaintenanceInfo = z.infer<typeof MaintenanceInfo>;

/** The signed `data` of the update check (format 2; SPEC "Update check", CONTRACT section 5). */
export const UpdateCheckData = z
  .object({
    format: int32(1).openapi({ description: `The answer's format: ${UPDATE_CHECK_FORMAT}.` }),
    product: z.object({ code: z.string(), name: z.string() }),
    channel: z.string().openapi({ description: CHANNELS.join(" or ") }),
    platform: z.enum(PLATFORMS),
    current: z.string().openapi({ description: "The caller's version, as sent." }),
    latest: z.string().openapi({ description: "The newest release's version (the caller's when none)." }),
    release: z
      .object({ version: z.string(), publishedAt: z.string(), name: z.string().optional() })
      .optional()
      .openapi({ description: "The newest release; absent when nothing is published." }),
    updateAvailable: z.boolean(),
    installable: z.boolean(),
    withheldReason: z.enum(WITHHELD_REASONS).optional(),
    purchaseUrl: z.string().optional(),
    download: DownloadInfo.optional(),
    latestInstallable: z.string().optional().openapi({
      description: "The newest release the license can still install, when maintenance ended before the latest.",
    }),
    requiredEdition: z.string().optional().openapi({ description: "An edition entitled to the platform." }),
    maintenance: MaintenanceInfo.optional(),
  })
  .openapi("UpdateCheckData");
export type UpdateCheckData = z.infer<typeof UpdateCheckData>;

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
