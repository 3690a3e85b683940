/**
 * License files (CONTRACT section 11): what an application keeps to run offline. A file is a compact JWS (ES256,
 * header `typ: license-file+jwt`) signed with the service's signing keys (auth/signing-keys.ts: the same JWKS as
 * validations), over `{ v: 1, fileId, license, entitlements, machine, issuedAt, expiresAt, nonce?, borrow? }`. With
 * `encrypt`, the signed payload is `{ v: 1, enc: "A256GCM", iv, ciphertext, machineHint }` instead: AES-256-GCM under
 * HKDF-SHA256(ikm = the license's user key in its compact form, salt = the machine id, info = "license-file") of the
 * plain payload's JSON, so only an application that knows both can read it. Every file issued is recorded
 * (license_files) for the console. Free of HTTP: checkout, borrow and the air-gapped activation make files here.
 */
import { signJws } from "../auth/signing-keys";
import { randomString, toBase64Url, toHex } from "../kernel/crypto";
import { licenseFiles } from "../db/schema";
import type { ServiceContext } from "../http/context";
import { defineEntity, f } from "../http/entity";
import type { ViewedLicense } from "./license-core";
import { licenseReference } from "./license-records";
import { type LicenseView, licenseView } from "./license-view";
import { compactUserKey } from "./user-key";
import { LICENSE_TYPES } from "../records/vocabulary";

/** The JWS header `typ` of a license file. */
export const LICENSE_FILE_TYP = "license-file+jwt";
/** The HKDF `info` of an encrypted file's key. */
export const LICENSE_FILE_KEY_INFO = "license-file";

/** What checkout and borrow answer (the envelope's data), and what the air-gapped page offers to download. */
export interface LicenseFileAnswer {
  /** The compact JWS: saved as it is to `<licenseId>.lic`. */
  licenseFile: string;
  issuedAt: string;
  expiresAt: string;
  encrypted: boolean;
}

/** What the license grants, as a file states it (the application enforces it offline). */
export interface Entitlements {
  productCode: string;
  licenseType: string;
  edition: string | null;
  features: string[];
  /** Machines (Activation mode) or seats (Floating); 0 = unlimited. */
  maxClients: number;
  expireAt: string | null;
  supportExpireAt: string | null;
}

/** A license file's plain payload. */
export interface LicenseFilePayload {
  v: 1;
  fileId: string;
  /** The license as a validation answers it, without its license key (the file is the proof). */
  license: Omit<LicenseView, "licenseKey">;
  entitlements: Entitlements;
  machine: { machineId: string; clientId?: string };
  issuedAt: string;
  expiresAt: string;
  nonce?: string;
  borrow?: { until: string };
}

export interface LicenseFileRequest {
  machineId: string;
  /**
   * The key the client named the license with, as typed: an encrypted file is encrypted for it (the client opens it
   * with the key it holds: the license's own, or its legacy key, CONTRACT 16); the license's own key when absent.
   */
  typedKey?: string | undefined;
  clientId?: string | undefined;
  /** Lifetime asked for (ms); Licensing:LicenseFileLifetime when absent or longer. */
  ttlMs?: number | undefined;
  encrypt?: boolean | undefined;
  nonce?: string | undefined;
  /** The activation's or seat's own end (ms since the epoch): the file ends no later. */
  until?: number | undefined;
  /** A borrowed seat's end (ms) and its token digest: the file ends with it and names it. */
  borrow?: { until: number; tokenDigest: string } | undefined;
}

const utf8 = new TextEncoder();

/** The AES-256-GCM key of an encrypted file: HKDF-SHA256(user key (compact), salt machine id, info "license-file"). */
export async function licenseFileKey(userKey: string, machineId: string): Promise<CryptoKey> {
  const ikm = await crypto.subtle.importKey("raw", utf8.encode(compactUserKey(userKey)), "HKDF", false, ["deriveKey"]);
  return crypto.subtle.deriveKey(
    { name: "HKDF", hash: "SHA-256", salt: utf8.encode(machineId), info: utf8.encode(LICENSE_FILE_KEY_INFO) },
    ikm,
    { name: "AES-GCM", length: 256 },
    false,
    ["encrypt", "decrypt"],
  );
}

/** The first 4 bytes of SHA-256(machine id), hex: tells an application which machine an encrypted file is for. */
export async function machineHint(machineId: string): Promise<string> {
  return toHex(new Uint8Array(await crypto.subtle.digest("SHA-256", utf8.encode(machineId))).slice(0, 4));
}

/** The end of a file issued at `issuedAt`: its lifetime (ttl never longer), the license's expiry, `until`, the borrow. */
export function licenseFileEnd(
  ctx: Pick<ServiceContext, "config">,
  license: { expireDate: string | null },
  issuedAt: number,
  request: Pick<LicenseFileRequest, "ttlMs" | "until" | "borrow">,
): number {
  const lifetime = ctx.config["Licensing:LicenseFileLifetime"];
  const ends = [issuedAt + Math.min(lifetime, request.ttlMs ?? lifetime)];
  if (license.expireDate) ends.push(Date.parse(license.expireDate));
  if (request.until !== undefined) ends.push(request.until);
  if (request.borrow) ends.push(request.borrow.until);
  return Math.min(...ends);
}

/**
 * THE license file maker: signs (and, with `encrypt`, encrypts) a file of this license for this machine and records
 * it (license_files). The caller has judged the license usable and the machine entitled (activation, seat, borrow).
 */
export async function makeLicenseFile(
  ctx: ServiceContext,
  license: ViewedLicense & { productCode: string },
  request: LicenseFileRequest,
  at: Date,
): Promise<LicenseFileAnswer> {
  const issuedAt = at.toISOString();
  const expiresAt = new Date(licenseFileEnd(ctx, license, at.getTime(), request)).toISOString();
  const fileId = randomString(20);
  const clientId = request.clientId?.trim() || undefined;
  const { licenseKey: _key, ...view } = await licenseView(ctx, license);
  const payload: LicenseFilePayload = {
    v: 1,
    fileId,
    license: view,
    entitlements: {
      productCode: license.productCode,
      licenseType: LICENSE_TYPES[license.licenseType] ?? String(license.licenseType),
      edition: license.edition,
      features: license.features ?? [],
      maxClients: license.maxClients,
      expireAt: license.expireDate,
      supportExpireAt: license.supportExpireDate,
    },
    machine: { machineId: request.machineId, ...(clientId ? { clientId } : {}) },
    issuedAt,
    expiresAt,
    ...(request.nonce !== undefined ? { nonce: request.nonce } : {}),
    ...(request.borrow ? { borrow: { until: new Date(request.borrow.until).toISOString() } } : {}),
  };
  const encrypted = request.encrypt === true;
  let signed: object = payload;
  if (encrypted) {
    const iv = crypto.getRandomValues(new Uint8Array(12));
    const key = await licenseFileKey(request.typedKey?.trim() || license.userKey, request.machineId);
    const ciphertext = await crypto.subtle.encrypt({ name: "AES-GCM", iv }, key, utf8.encode(JSON.stringify(payload)));
    signed = {
      v: 1,
      enc: "A256GCM",
      iv: toBase64Url(iv),
      ciphertext: toBase64Url(ciphertext),
      machineHint: await machineHint(request.machineId),
    };
  }
  const licenseFile = await signJws(ctx.db, ctx.config, signed, LICENSE_FILE_TYP);
  await ctx.db
    .insert(licenseFiles)
    .values({
      licenseId: license.id,
      fileId,
      machineId: request.machineId,
      clientId: clientId ?? null,
      encrypted,
      issuedAt,
      expiresAt,
      borrowUntil: request.borrow ? new Date(request.borrow.until).toISOString() : null,
      tokenDigest: request.borrow?.tokenDigest ?? null,
      createdAt: issuedAt,
    })
    .run();
  return { licenseFile, issuedAt, expiresAt, encrypted };
}

const ro = { readOnly: true } as const;

/** The license files issued, as the Management API lists them (`GET /v1/licenses/{licenseId}/files`). */
export const LicenseFile = defineEntity({
  name: "LicenseFile",
  singular: "licenseFile",
  plural: "licenseFiles",
  table: licenseFiles,
  fields: {
    id: f.id(),
    licenseId: licenseReference(licenseFiles.licenseId),
    fileId: f.string({ ...ro, description: "The file's id (its payload's fileId)." }),
    machineId: f.string(ro),
    clientId: f.string(ro),
    encrypted: f.bool(ro),
    issuedAt: f.date(ro),
    expiresAt: f.date(ro),
    borrowUntil: f.date({ ...ro, description: "A borrowed floating seat's end; none for a checkout." }),
    returnedAt: f.date({ ...ro, description: "When the borrowed seat was returned early." }),
    borrowed: f.bool({
      ...ro,
      description: "Computed (not filterable): the borrowed seat is still held (not ended, returned or freed).",
    }),
    createdAt: f.date(ro),
  },
});
