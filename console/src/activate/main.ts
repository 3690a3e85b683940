/**
 * The air-gapped activation page (`/activate/`, CONTRACT section 11): a person enters the request code an offline
 * application shows; the service activates that machine (POST /v1/license/offline-activation) and the page shows the
 * response code, its QR code and the license file to download. Anonymous, and nothing from another origin: the QR code
 * is drawn here (client/src/qr.ts), the file is a blob of the answer.
 */
import { qrCodeSvg } from "../../../client/src/qr";
import "./style.css";

const element = <T extends HTMLElement>(id: string): T => document.getElementById(id) as T;

const form = element<HTMLFormElement>("request");
const input = element<HTMLTextAreaElement>("request-code");
const button = element<HTMLButtonElement>("activate");
const message = element<HTMLParagraphElement>("message");
const answer = element<HTMLElement>("answer");
const summary = element<HTMLParagraphElement>("summary");
const responseCode = element<HTMLTextAreaElement>("response-code");
const copy = element<HTMLButtonElement>("copy");
const download = element<HTMLAnchorElement>("download");
const qr = element<HTMLImageElement>("qr");

interface Activated {
  responseCode: string;
  licenseFile: string;
  fileName: string;
  licenseId: string;
  expiresAt: string;
  activeClientCount: number;
  maxClientCount: number;
}

/** What to tell the person for a refusal: the service's message, with a word more where the reason needs one. */
function refusalText(status: number, body: Record<string, unknown> | undefined, text: string): string {
  const said =
    (typeof body?.["message"] === "string" && body["message"]) ||
    (typeof body?.["title"] === "string" && body["title"]) ||
    text.trim();
  switch (body?.["reason"]) {
    case "wrongProduct":
      return `This license is for another product than the application that made the request code. (${said})`;
    case "alreadyActivated":
      return `${said}: every machine this license allows is already activated. Deactivate one, or ask for more machines.`;
    case "invalidUserKey":
    case "licenseNotFound":
      return "No license has the key in this request code. Check the key the application was given.";
    default:
      return said || `The service answered ${status}.`;
  }
}

function show(text: string | undefined): void {
  message.hidden = text === undefined;
  message.textContent = text ?? "";
}

let fileUrl: string | undefined;

function showAnswer(data: Activated): void {
  summary.textContent =
    data.maxClientCount > 0
      ? `License ${data.licenseId}: ${data.activeClientCount} of ${data.maxClientCount} machines activated. The license file is valid until ${new Date(data.expiresAt).toLocaleString()}.`
      : `License ${data.licenseId}. The license file is valid until ${new Date(data.expiresAt).toLocaleString()}.`;
  responseCode.value = data.responseCode;
  qr.src = `data:image/svg+xml,${encodeURIComponent(qrCodeSvg(data.responseCode))}`;
  if (fileUrl) URL.revokeObjectURL(fileUrl);
  fileUrl = URL.createObjectURL(new Blob([`${data.licenseFile}\n`], { type: "application/octet-stream" }));
  download.href = fileUrl;
  download.download = data.fileName;
  answer.hidden = false;
}

form.addEventListener("submit", async (event) => {
  event.preventDefault();
  show(undefined);
  answer.hidden = true;
  const requestCode = input.value.trim();
  if (requestCode === "") return show("Enter the request code the application shows.");
  button.disabled = true;
  try {
    const res = await fetch("/v1/license/offline-activation", {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json" },
      body: JSON.stringify({ requestCode }),
    });
    const text = await res.text();
    let body: Record<string, unknown> | undefined;
    try {
      body = JSON.parse(text) as Record<string, unknown>;
    } catch {
      body = undefined;
    }
    if (!res.ok || body?.["success"] === false) return show(refusalText(res.status, body, text));
    showAnswer(body as unknown as Activated);
  } catch (error) {
    show(`The service could not be reached: ${error instanceof Error ? error.message : String(error)}`);
  } finally {
    button.disabled = false;
  }
});

// A phone that scanned the application's QR code opens this page with the request code after `#`: fill it in (the
// part after `#` is never sent to the service; the person still presses Activate).
function fillFromAddress(): void {
  const given = decodeURIComponent(location.hash.slice(1)).trim();
  if (!/^LRQ\d-/i.test(given)) return;
  input.value = given;
  show(undefined);
  answer.hidden = true;
}
fillFromAddress();
window.addEventListener("hashchange", fillFromAddress);

copy.addEventListener("click", async () => {
  await navigator.clipboard.writeText(responseCode.value);
  copy.textContent = "Copied";
});
