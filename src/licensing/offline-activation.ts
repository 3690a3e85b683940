/**
 * Air-gapped activation (CONTRACT section 11): the `/activate/` page sends the request code an offline application
 * showed; the service reads it (client/src/offline-codes.ts, the one definition of the codes, shared with the client
 * package and the page), activates exactly as `POST /v1/license/activate` does (activation.ts: the same limit, the
 * same token, the same events), and answers a license file for that machine and nonce (offline.ts checkout, made by
 * license-file.ts) with its response code. Free of HTTP.
 */
import {
  OfflineCodeError,
  type OfflineRequest,
  decodeRequestCode,
  encodeResponseCode,
} from "../../client/src/offline-codes";
import type { ClientInfo, ServiceContext } from "../http/context";
import { ApiError } from "../kernel/errors";
import { activate } from "./activation";
import { ActivateRequest } from "./inputs";
import type { LicenseFileAnswer } from "./license-file";
import { openLicense } from "./license-lookup";
import { checkout } from "./offline";
import { Mode } from "../records/vocabulary";

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

export interface OfflineActivationResult extends LicenseFileAnswer {
  /** `LRS1-…`: the license file as a code to type into the application. */
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
    responseCode: encodeResponseCode(file.licenseFile),
    fileName: `${license.licenseId}.lic`,
    licenseId: license.licenseId,
    ...counts,
  };
}
