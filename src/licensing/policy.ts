/**
 * The license policy: the one decision of whether a license may be used (issue 12). Every path asks it: the
 * licensing operations (REST and gRPC), the update check and feeds, the download route with a token, hand-issued
 * activation tokens and the floating seats' reclaim. Each path maps a refusal to its own answer (52x for the
 * licensing operations, 403 `License revoked or expired` on the update routes, the bad-token message on the
 * download route, 400 on the Management API, reclaiming the seats in the seat object), but the decision and its
 * order are this function's: not found -> tampered -> revoked -> expired -> wrong product (CONTRACT section 4).
 *
 * Maintenance and editions are not part of it: they decide which releases and platforms a usable license may
 * install (delivery/catalog.ts), never whether the license itself may be used.
 */
import type { Db } from "../db/client";
import { type LicenseCore, type LicenseRow, activeClientCounts, clientCount, isLicenseIntact } from "./license-core";
import { type LicenseStatus, Mode } from "../records/vocabulary";

/** Why a license may not be used, in the order the policy checks. */
export type LicenseRefusal = "notFound" | "tampered" | "revoked" | "expired" | "wrongProduct";
export const LICENSE_REFUSALS: readonly LicenseRefusal[] = [
  "notFound",
  "tampered",
  "revoked",
  "expired",
  "wrongProduct",
];

export type LicenseVerdict<L> = { usable: true; license: L } | { usable: false; refusal: LicenseRefusal };

/** What the policy reads of a license row. */
export type JudgedLicense = LicenseCore & { integrity: string | null };

/** The product a path serves, by stored id or by code; absent when the path names none (heartbeat, release). */
export interface ExpectedProduct {
  productId?: number | undefined;
  /** Compared with `productCode` of the license (the product's code joined to its row). */
  productCode?: string | undefined;
}

/**
 * The policy's order once the license is found and its integrity is known (`intact`): what refuses it, if anything.
 * Synchronous, so a path that already checked the HMAC (a page of licenses) decides without checking it again.
 */
export function refusalOf(
  license: Pick<JudgedLicense, "revoked" | "expireDate" | "productId"> & { productCode?: string },
  intact: boolean,
  now: Date,
  expected: ExpectedProduct = {},
): Exclude<LicenseRefusal, "notFound"> | undefined {
  if (!intact) return "tampered";
  if (license.revoked) return "revoked";
  if (license.expireDate !== null && license.expireDate <= now.toISOString()) return "expired";
  if (expected.productId !== undefined && Number(license.productId) !== expected.productId) return "wrongProduct";
  if (expected.productCode !== undefined && expected.productCode !== "" && expected.productCode !== license.productCode)
    return "wrongProduct";
  return undefined;
}

/**
 * Whether a license may be used now, for a product when one is expected: the one decision of every path.
 * `secret` is Application:EncryptionKey (the integrity HMAC's key). An empty expected product code means none.
 */
export async function judgeLicense<L extends JudgedLicense & { productCode?: string }>(
  secret: string | undefined,
  license: L | undefined | null,
  now: Date,
  expected: ExpectedProduct = {},
): Promise<LicenseVerdict<L>> {
  if (!license) return { usable: false, refusal: "notFound" };
  const refusal = refusalOf(license, await isLicenseIntact(secret, license), now, expected);
  return refusal ? { usable: false, refusal } : { usable: true, license };
}

/** The `status` a refusal shows as (CONTRACT section 4); a wrong product is no status of the license itself. */
const STATUS_OF_REFUSAL = { tampered: "Tampered", revoked: "Revoked", expired: "Expired" } as const;

/** CONTRACT section 4, first match wins: the policy's refusals, then the activation state by mode. */
export function licenseStatus(
  license: Pick<JudgedLicense, "revoked" | "expireDate" | "licensingMode" | "productId">,
  facts: { intact: boolean; activeClients: number },
  now: Date,
): LicenseStatus {
  const refusal = refusalOf(license, facts.intact, now);
  if (refusal === "tampered" || refusal === "revoked" || refusal === "expired") return STATUS_OF_REFUSAL[refusal];
  if (license.licensingMode === Mode.File) return "NotActivated";
  return facts.activeClients > 0 ? "Activated" : "NotActivated";
}

/** Status and active client count of many licenses: one query for their tokens, HMACs checked in memory. */
export async function describeLicenses(
  db: Db,
  secret: string | undefined,
  rows: readonly LicenseRow[],
  now: Date,
): Promise<{ status: LicenseStatus; activeClientCount: number }[]> {
  const counts = await activeClientCounts(
    db,
    rows.map((r) => r.id),
    now,
  );
  return Promise.all(
    rows.map(async (row) => {
      const activeClients = clientCount(row.licensingMode, counts.get(row.id));
      const intact = await isLicenseIntact(secret, row);
      return { status: licenseStatus(row, { intact, activeClients }, now), activeClientCount: activeClients };
    }),
  );
}
