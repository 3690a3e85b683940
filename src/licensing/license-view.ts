import type { Config } from "../kernel/config";
import type { Db } from "../db/client";
import type { ServiceContext } from "../http/context";
import { signJws } from "../auth/signing-keys";
import { type LicenseRow, type ViewedLicense, activeClientCounts, clientCount } from "./license-core";
import { recordCheckIn, recordTrace } from "./traces";
import { LICENSE_TYPES, LICENSING_MODES, type LicenseStatus } from "../records/vocabulary";
import type { ClientInfo } from "../http/context";
import { now } from "./license-lookup";

/**
 * What an application is told of its license (the view, with its signed license key) and the traces of its operations.
 */
/** What an application knows of its license (CONTRACT section 4 `license`). */
export interface LicenseView {
  licenseId: string;
  licensingMode: number | string;
  licenseType: number | string;
  edition?: string | undefined;
  issueDate: string;
  expireAt?: string | undefined;
  supportExpireAt?: string | undefined;
  features: string[];
  licensee: { name?: string | undefined; email?: string | undefined; company?: string | undefined };
  /** A compact JWS (ES256) that verifies offline against GET /v1/extensions/keys; only where it proves a usable license. */
  licenseKey?: string;
}

function enumOut(names: readonly string[], value: number, config: Config): number | string {
  return config["Application:SerializeJSonEnumAsString"] ? (names[value] ?? value) : value;
}

/**
 * What a license key proves, when the caller may have one (CONTRACT section 4): the license is usable on this
 * machine. `proven` is set only where it is: File mode always, Activation mode for a machine holding a live
 * activation, Floating mode for the machine/client holding a live seat (`until`: the activation's or seat's end).
 */
export interface KeyProof {
  status: LicenseStatus;
  machineId?: string | undefined;
  clientId?: string | undefined;
  nonce?: string | undefined;
  /** The activation's or seat's own end (ms since the epoch); the key expires no later. */
  until?: number | undefined;
}

/** Seconds since the epoch, rounded down, so `exp` never outlives what it stands for. */
const seconds = (ms: number): number => Math.floor(ms / 1000);

/**
 * The `license` object of licensing answers; with a signed license key only when `proof` says the license is usable
 * on the caller's machine. The key's `exp` is no later than the key lifetime, the license's expiry and the
 * activation's or seat's end; it names the mode, status, machine (and client), and the request's nonce.
 */
export async function licenseView(
  ctx: ServiceContext,
  license: ViewedLicense & { productCode: string },
  proof?: KeyProof,
): Promise<LicenseView> {
  let licenseKey: string | undefined;
  if (proof) {
    const issuedAt = seconds(now().getTime());
    const ends = [issuedAt + seconds(ctx.config["Licensing:LicenseKeyLifetime"])];
    if (license.expireDate) ends.push(seconds(Date.parse(license.expireDate)));
    if (proof.until !== undefined) ends.push(seconds(proof.until));
    const payload = {
      licenseId: license.licenseId,
      productCode: license.productCode,
      licensingMode: LICENSING_MODES[license.licensingMode] ?? String(license.licensingMode),
      licenseType: LICENSE_TYPES[license.licenseType] ?? String(license.licenseType),
      edition: license.edition,
      features: license.features ?? [],
      status: proof.status,
      expireAt: license.expireDate,
      supportExpireAt: license.supportExpireDate,
      machineId: proof.machineId ?? null,
      clientId: proof.clientId ?? null,
      ...(proof.nonce !== undefined ? { nonce: proof.nonce } : {}),
      // Licensing:OfflineGraceDays, signed: how long the application may keep using the license offline (CONTRACT 11).
      offlineGraceDays: ctx.config["Licensing:OfflineGraceDays"],
      iat: issuedAt,
      exp: Math.min(...ends),
    };
    licenseKey = await signJws(ctx.db, ctx.config, payload);
  }
  return {
    licenseId: license.licenseId,
    licensingMode: enumOut(LICENSING_MODES, license.licensingMode, ctx.config),
    licenseType: enumOut(LICENSE_TYPES, license.licenseType, ctx.config),
    edition: license.edition ?? undefined,
    issueDate: license.issueDate,
    expireAt: license.expireDate ?? undefined,
    supportExpireAt: license.supportExpireDate ?? undefined,
    features: license.features ?? [],
    licensee: {
      name: license.licenseeName ?? undefined,
      email: license.licenseeEmail ?? undefined,
      company: license.licenseeCompany ?? undefined,
    },
    ...(licenseKey !== undefined ? { licenseKey } : {}),
  };
}

/**
 * Writes a trace when the license traces (CONTRACT section 3), and, traced or not, the license's check-in (CONTRACT
 * 11 `lastCheckIn`): both gathered off the request path (traces.ts).
 */
export function trace(
  ctx: ServiceContext,
  license: Pick<LicenseRow, "id" | "trace">,
  action: number,
  client: ClientInfo,
  who: { machineId?: string | null; clientId?: string | null; clientName?: string | null },
): void {
  const at = now().toISOString();
  if (license.trace)
    recordTrace(
      ctx,
      { licenseId: license.id, action, address: client.address, geoLocation: client.geoLocation, ...who },
      at,
    );
  recordCheckIn(ctx, license.id, at);
}

export async function activeClients(db: Db, license: LicenseRow): Promise<number> {
  const counts = await activeClientCounts(db, [license.id], now());
  return clientCount(license.licensingMode, counts.get(license.id));
}
