/**
 * Air-gapped activation from the application's side (CONTRACT section 11): make the request code (and its QR code) to
 * show, then verify the response code or license file the person brings back from the service's `/activate/` page,
 * all without the network.
 */
import { type LicenseFile, type LicenseFileOptions, verifyLicenseFile } from "./license-file.js";
import { encodeRequestCode, readResponseCode } from "./offline-codes.js";
import { qrCodeSvg } from "./qr.js";

/** What {@link createActivationRequest} needs. */
export interface ActivationRequestInput {
  /** The license's user key. */
  userKey: string;
  /** This machine's id (`machineId()` from `@licensing/client/node`). */
  machineId: string;
  /** The client on the machine, when the application uses one. */
  clientId?: string;
  /** The application's product code: the service refuses another product's license. */
  productCode?: string;
  /** The nonce (default: 16 random bytes, hex). Keep it: the response must name it. */
  nonce?: string;
  /**
   * The service's activation page (`https://licensing.example.com/activate/`): the QR code then holds the page's
   * address with the code after `#`, so a phone that scans it opens the page with the code filled in (the part after
   * `#` never leaves the phone but for the page itself). Without it, the QR code holds the code alone.
   */
  activationPageUrl?: string;
}

/** A request to show the person: the code, its QR code, and the nonce to keep until the answer comes back. */
export interface ActivationRequest {
  /** `LRQ1-…`: the code to type into the `/activate/` page. */
  requestCode: string;
  /** The nonce the response must name (keep it with the pending request, e.g. in the application's settings). */
  nonce: string;
  /** The request code as a QR code: an SVG document, to show as `data:image/svg+xml,` or inline. */
  qrSvg: string;
  /** What the QR code holds: the request code, or the activation page's address with it after `#`. */
  qrText: string;
}

function randomNonce(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

/** The request code, its QR code and its nonce, for a machine to activate without a network. */
export function createActivationRequest(input: ActivationRequestInput): ActivationRequest {
  const nonce = input.nonce ?? randomNonce();
  const requestCode = encodeRequestCode({
    userKey: input.userKey,
    machineId: input.machineId,
    ...(input.clientId !== undefined ? { clientId: input.clientId } : {}),
    nonce,
    ...(input.productCode !== undefined ? { productCode: input.productCode } : {}),
  });
  const qrText =
    input.activationPageUrl === undefined
      ? requestCode
      : `${new URL(input.activationPageUrl).href.replace(/#.*$/, "")}#${requestCode}`;
  return { requestCode, nonce, qrSvg: qrCodeSvg(qrText), qrText };
}

/** Options of {@link verifyActivationResponse}: those of {@link verifyLicenseFile}, with the request's nonce required. */
export interface ActivationResponseOptions extends LicenseFileOptions {
  /** The nonce of the request this answers ({@link ActivationRequest.nonce}). */
  nonce: string;
}

/**
 * Verifies what the person brought back from the `/activate/` page, offline: a response code (`LRS2-…` as the service
 * issues it, or an `LRS1-…` handed out earlier; its checksum first: an `OfflineCodeError` when mistyped) or the
 * downloaded license file's text. Returns the verified content and `licenseFile`, to save as the application's license
 * file and verify at each start with {@link verifyLicenseFile}: the file's compact JWS, or the `LRS2` code itself
 * (upper case, in groups of five). Refusals are those of {@link verifyLicenseFile}; `nonce` is required, so a response
 * to another request is refused.
 */
export async function verifyActivationResponse(
  response: string,
  options: ActivationResponseOptions,
): Promise<LicenseFile & { licenseFile: string }> {
  const text = response.trim();
  // A code (a response, or a request pasted by mistake: readResponseCode says which) or the file's JWS itself.
  const read = /^LR[A-Z]\d/i.test(text) ? readResponseCode(text) : undefined;
  const licenseFile = read === undefined ? text : read.version === 1 ? read.licenseFile : read.code;
  return { ...(await verifyLicenseFile(licenseFile, options)), licenseFile };
}
