/**
 * Air-gapped activation (CONTRACT section 11): the `/activate/` page sends the request code an offline application
 * showed; the service reads it (client/src/offline-codes.ts, the one definition of the codes, shared with the client
 * package and the page), activates exactly as `POST /v1/license/activate` does (activation.ts: the same limit, the
 * same token, the same events), and answers a license file for that machine and nonce (offline.ts checkout, made by
 * license-file.ts) with its response code: `LRS2-…`, the compact binary statement of what the application checks,
 * drawn from that file and signed with the same key (about 330 characters, where the file's `LRS1` code took 2,100).
 * Free of HTTP.
 */
import {
  COMPACT_HASH_BYTES,
  COMPACT_KEY_ID_BYTES,
  OfflineCodeError,
  type OfflineRequest,
  compactResponseSigningInput,
  decodeRequestCode,
  encodeCompactResponse,
  encodeCompactResponseCode,
  encodeResponseCode,
  shortHash,
} from "../../client/src/offline-codes";
import { signingKeys } from "../auth/signing-keys";
import type { ClientInfo, ServiceContext } from "../http/context";
import { fromBase64 } from "../kernel/crypto";
import { ApiError } from "../kernel/errors";
import { activate } from "./activation";
import { ActivateRequest } from "./inputs";
import type { LicenseFileAnswer, LicenseFilePayload } from "./license-file";
import { openLicense } from "./license-lookup";
import { checkout } from "./offline";
import { LICENSE_TYPES, LICENSING_MODES, Mode } from "../records/vocabulary";

/** Why a request code is refused (the answer's `reason`), by the decoder's problem. */
const CODE_REASONS: Record<OfflineCodeError["problem"], string> = {
  malformed: "requestCodeMalformed",
  wrongKind: "responseCodeGiven",
  unknownVersion: "requestCodeVersion",
  checksum: "requestCodeChecksum",
  content: "requestCodeMalformed",
};

/** The request a code carries, or 400 saying what is wrong with the code (nothing is changed). */
export function readRequestCode(code: string): OfflineRequest {
  let request: OfflineRequest;
  try {
    request = decodeRequestCode(code);
  } catch (error) {
    if (error instanceof OfflineCodeError) throw new ApiError(400, error.message, {}, CODE_REASONS[error.problem]);
    throw error;
  }
  // The fields keep the limits of the activation they stand for (inputs.ts ActivateRequest).
  const checked = ActivateRequest.safeParse(request);
  if (!checked.success)
    throw new ApiError(
      400,
      `The request code's ${checked.error.issues.map((i) => i.path.join(".")).join(", ")} is too long.`,
      {},
      "requestCodeMalformed",
    );
  return request;
}

/** Unix seconds of an ISO date, as an `LRS2` code holds it (0 = none); floored, so never later than the file's. */
const seconds = (iso: string | null | undefined): number => (iso ? Math.floor(Date.parse(iso) / 1000) : 0);

/** An enumeration's number, from its number or its name (as `Application:SerializeJSonEnumAsString` writes it). */
const numbered = (names: readonly string[], value: number | string): number =>
  typeof value === "number" ? value : names.indexOf(value);

/**
 * The response code of an unencrypted license file just made: `LRS2-…`, its payload's license (id, mode, type,
 * dates), entitlements, machine, client and nonce (as hashes), `issuedAt` and `expiresAt`, signed ES256 by the
 * signing key (client/src/offline-codes.ts, docs/reference/offline-codes.md). A license whose texts do not fit the
 * layout (one over 255 bytes, more than 255 features) gets the file's own `LRS1-…` code, which clients read too.
 */
export async function responseCodeOf(ctx: Pick<ServiceContext, "db" | "config">, licenseFile: string): Promise<string> {
  const part = licenseFile.split(".")[1] ?? "";
  const file = JSON.parse(
    new TextDecoder().decode(fromBase64(part.replace(/-/g, "+").replace(/_/g, "/"))),
  ) as LicenseFilePayload;
  const keys = await signingKeys(ctx.db, ctx.config);
  const hash = (text: string) => shortHash(text, COMPACT_HASH_BYTES);
  const body = encodeCompactResponse({
    keyId: await shortHash(keys.kid, COMPACT_KEY_ID_BYTES),
    issuedAt: seconds(file.issuedAt),
    expiresAt: seconds(file.expiresAt),
    machine: await hash(file.machine.machineId),
    client: file.machine.clientId === undefined ? undefined : await hash(file.machine.clientId),
    nonce: await hash(file.nonce ?? ""),
    licensingMode: numbered(LICENSING_MODES, file.license.licensingMode),
    licenseType: numbered(LICENSE_TYPES, file.license.licenseType),
    maxClients: file.entitlements.maxClients,
    issueDate: seconds(file.license.issueDate),
    expireAt: seconds(file.entitlements.expireAt),
    supportExpireAt: seconds(file.entitlements.supportExpireAt),
    licenseId: file.license.licenseId,
    productCode: file.entitlements.productCode,
    edition: file.entitlements.edition ?? "",
    features: file.entitlements.features,
  });
  if (!body) return encodeResponseCode(licenseFile);
  const signature = await crypto.subtle.sign(
    { name: "ECDSA", hash: "SHA-256" },
    keys.privateKey,
    compactResponseSigningInput(body),
  );
  return encodeCompactResponseCode(body, new Uint8Array(signature));
}

export interface OfflineActivationResult extends LicenseFileAnswer {
  /** `LRS2-…`: what the application checks, as a code to type into it (the license file is `licenseFile`). */
  responseCode: string;
  /** The name to save the license file under: `<licenseId>.lic`. */
  fileName: string;
  licenseId: string;
  /** Machines activated now (Activation mode), and the limit (0 = unlimited). */
  activeClientCount: number;
  maxClientCount: number;
}

/**
 * Activates the machine a request code names and answers its license file. Activation mode: `activate` first (it
 * counts against the license's machines, is idempotent per machine, refuses over the limit with 526); File mode needs
 * no activation. Floating licenses are refused as activate refuses them (a floating seat offline is a borrow). The
 * file names the request's nonce, so the application knows it answers the code it showed.
 */
export async function offlineActivation(
  ctx: ServiceContext,
  requestCode: string,
  client: ClientInfo,
): Promise<OfflineActivationResult> {
  const request = readRequestCode(requestCode);
  const license = await openLicense(ctx, request.userKey, request.productCode);
  let counts = { activeClientCount: 0, maxClientCount: license.maxClients };
  if (license.licensingMode !== Mode.File) {
    const activated = await activate(
      ctx,
      {
        userKey: request.userKey,
        machineId: request.machineId,
        clientId: request.clientId,
        productCode: request.productCode,
        nonce: request.nonce,
        clientName: "Air-gapped activation",
      },
      client,
    );
    counts = { activeClientCount: activated.activeClientCount, maxClientCount: activated.maxClientCount };
  }
  const file = await checkout(
    ctx,
    {
      userKey: request.userKey,
      machineId: request.machineId,
      clientId: request.clientId,
      productCode: request.productCode,
      nonce: request.nonce,
    },
    client,
  );
  return {
    ...file,
    responseCode: await responseCodeOf(ctx, file.licenseFile),
    fileName: `${license.licenseId}.lic`,
    licenseId: license.licenseId,
    ...counts,
  };
}
