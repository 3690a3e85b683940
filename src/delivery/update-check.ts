/**
 * The signed update check (SPEC "Update check", CONTRACT section 5): what the newest release for a platform and
 * channel is, whether the caller may install it and why not, where to download it, and the caller's maintenance.
 * `data` is signed with ES256 over its RFC 8785 canonical JSON; `signature` is standard base64 of the 64-byte P1363
 * signature and `keyId` names the key in GET /v1/extensions/keys.
 */
import { z } from "@hono/zod-openapi";
import canonicalize from "canonicalize";
import { eq } from "drizzle-orm";
import { clock } from "../kernel/clock";
import { customers } from "../db/schema";
import type { ServiceContext } from "../http/context";
import { int32 } from "../http/openapi";
import type { LicenseRow } from "../licensing/license-core";
import { type Caller, type CustomerName, licenseOf } from "./caller";
import {
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
import { httpUrl } from "../records/products";
import { compareVersions } from "../records/versions";
import type { UpdateReason } from "./reasons";
import { CHANNELS } from "../records/vocabulary";
import { type Asking, feedRelease } from "./selection";
import { DownloadInfo, type DownloadUrl, downloadFor } from "./download-info";

export { DownloadInfo, downloadFor };

export const UPDATE_CHECK_FORMAT = 2;
const DAY_MS = 86_400_000;

/** SPEC's `withheldReason` values: why the newest release is not offered to the caller. */
export const WITHHELD_REASONS = [
  "licenseRequired",
  "maintenanceExpired",
  "platformRequiresLicense",
  "platformRequiresEdition",
] as const satisfies readonly UpdateReason[];

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
    latest: z.string().openapi({
      description:
        "The newest release's version (the caller's when none), also when the caller is offered an older one " +
        "(outside the newest's rollout).",
    }),
    release: z
      .object({ version: z.string(), publishedAt: z.string(), name: z.string().optional() })
      .optional()
      .openapi({
        description:
          "The release offered to the caller: the newest it is admitted to (CONTRACT section 8); absent when none is.",
      }),
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
    rollout: z
      .object({
        percentage: int32(0, 100).openapi({ description: "The newest release's effective rollout percentage." }),
        admitted: z.boolean().openapi({
          description:
            "Whether the caller is admitted to the newest release (by install id, else license); true when the " +
            "server does not decide (anonymous with no install id: apply `percentage` yourself).",
        }),
      })
      .optional()
      .openapi({ description: "The newest release's rollout (CONTRACT section 8); absent when nothing is published." }),
    required: z.boolean().openapi({
      description:
        "The caller must update: its version is below the product's minimumVersion, or a newer critical release is offered.",
    }),
    rollback: z.boolean().openapi({
      description:
        "The caller is to go back to the previous release (allow the downgrade): `download` is it. Its reason is rollbackReason.",
    }),
    rollbackReason: z
      .enum(["halted", "crashLoop"])
      .optional()
      .openapi({
        description:
          "With rollback: `halted` (the release it runs was halted with rollback) or `crashLoop` (this install's " +
          "last sessions of the version it runs all crashed soon after starting: CONTRACT section 13).",
      }),
  })
  .openapi("UpdateCheckData");
export type UpdateCheckData = z.infer<typeof UpdateCheckData>;

export interface UpdateCheckInput extends Asking {
  product: ProductRow;
  platform: Platform;
  version: string;
  channel: string;
  caller: Caller;
  releases: ReleaseWithFiles[];
  /** Absolute URL of the download route for an artifact (CONTRACT section 5: URLs are absolute). */
  downloadUrl: DownloadUrl;
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
  const renewalUrl = httpUrl(product.renewalUrl);
  return {
    until,
    expired: left < 0,
    expiresInDays: Math.ceil(left / DAY_MS),
    noticeDays: product.maintenanceNoticeDays,
    ...(renewalUrl ? { renewalUrl } : {}),
    ...(product.supportEmail ? { supportEmail: product.supportEmail } : {}),
    licenseId: license.licenseId,
    ...(licensee ? { licensee } : {}),
  };
}

/**
 * The update check's data for a caller (SPEC withheldReason rules), over the release feedRelease selects (the one
 * selection of every update answer, delivery/formats/electron-builder.ts): the check and the feeds never disagree. `release` is the offered
 * release (the newest the caller is admitted to), `latest` the newest it may see.
 */
export async function checkForUpdate(ctx: ServiceContext, input: UpdateCheckInput): Promise<UpdateCheckData> {
  const { product, platform, version, channel, caller } = input;
  const license = licenseOf(caller);
  const selection = await feedRelease(ctx, {
    ...input,
    currentVersion: version,
    minimumVersion: input.minimumVersion ?? product.minimumVersion,
  });
  const releases = selection.admitted;
  const candidate = releases[0];
  const data: UpdateCheckData = {
    format: UPDATE_CHECK_FORMAT,
    product: { code: product.code, name: product.name },
    channel,
    platform,
    current: version,
    latest: selection.newest?.release.version ?? version,
    updateAvailable: candidate !== undefined && compareVersions(candidate.release.version, version) > 0,
    installable: false,
    ...(selection.rollout ? { rollout: selection.rollout } : {}),
    required: selection.required,
    rollback: false,
  };
  if (license)
    data.maintenance = await maintenanceOf(
      ctx,
      product,
      license,
      caller.kind === "licensed" ? caller.customer : undefined,
    );
  if (!candidate) return data;
  data.release = {
    version: candidate.release.version,
    publishedAt: publishedAt(candidate.release),
    ...(candidate.release.name ? { name: candidate.release.name } : {}),
  };

  const platformRule = platformVerdict(ctx.config, platform, license);
  if (!platformRule.allowed) {
    data.withheldReason = platformRule.reason;
    if (platformRule.reason === "platformRequiresEdition") data.requiredEdition = platformRule.requiredEdition;
    const purchaseUrl = httpUrl(product.purchaseUrl);
    if (purchaseUrl) data.purchaseUrl = purchaseUrl;
    return data;
  }
  if (!coveredByMaintenance(license, candidate.release)) {
    if (!license) {
      data.withheldReason = "licenseRequired";
      const purchaseUrl = httpUrl(product.purchaseUrl);
      if (purchaseUrl) data.purchaseUrl = purchaseUrl;
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
  data.rollback = selection.rollback && selection.entry === candidate;
  if (data.rollback && selection.rollbackReason) data.rollbackReason = selection.rollbackReason;
  const file = mainFile(candidate.files);
  if ((data.updateAvailable || data.rollback) && file) data.download = await downloadFor(ctx, input, candidate, file);
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
