/**
 * Installer uploads with progress. Up to SINGLE_LIMIT a file goes in one multipart POST (the service hashes it while
 * it streams); larger files use the API's resumable upload (create, one PUT per part, complete), so a failed part is
 * sent again without starting over. XMLHttpRequest, because fetch reports no upload progress. A build the service
 * refuses for its signer (409, CONTRACT section 15) rejects with UploadRefused, which carries the service's reason,
 * what it expected and what it found; an Administrator may send it again with `allowSignerChange`.
 */
import { csrfHeaders, errorText } from "./api/client";

export const SINGLE_LIMIT = 90 * 1024 * 1024;
export const PART_SIZE = 16 * 1024 * 1024;

/** The service's refusal of a build (409): `reason` signerChanged, unsigned or signatureInvalid. */
export class UploadRefused extends Error {
  readonly reason: string;
  /** The identities the service expected (the product's list, or the previous release's signer). */
  readonly expected: string[];
  /** The signer found; null when the build is unsigned. */
  readonly found: string | null;

  constructor(message: string, body: Record<string, unknown>) {
    super(message);
    this.reason = String(body["reason"]);
    this.expected = Array.isArray(body["expected"]) ? body["expected"].map(String) : [];
    this.found = typeof body["found"] === "string" ? body["found"] : null;
  }
}

function send(
  method: string,
  url: string,
  body: Blob | FormData | string | null,
  onProgress: (sent: number) => void,
  json = false,
): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open(method, url);
    xhr.withCredentials = true;
    for (const [k, v] of Object.entries(csrfHeaders())) xhr.setRequestHeader(k, v);
    if (json) xhr.setRequestHeader("Content-Type", "application/json");
    else if (body instanceof Blob) xhr.setRequestHeader("Content-Type", "application/octet-stream");
    xhr.upload.onprogress = (e) => onProgress(e.loaded);
    xhr.onload = () => {
      let data: unknown = xhr.responseText;
      try {
        data = JSON.parse(xhr.responseText);
      } catch {
        // not JSON: the text itself is the message
      }
      if (xhr.status >= 200 && xhr.status < 300) return resolve(data as Record<string, unknown>);
      const message = errorText(data, new Response(null, { status: xhr.status }));
      const body = data && typeof data === "object" ? (data as Record<string, unknown>) : {};
      reject(
        xhr.status === 409 && typeof body["reason"] === "string"
          ? new UploadRefused(message, body)
          : new Error(message),
      );
    };
    xhr.onerror = () => reject(new Error("The upload failed: the connection was lost"));
    xhr.send(body);
  });
}

export interface UploadInput {
  productId: number;
  releaseId: number;
  platform: string;
  kind: string;
  file: File;
  /** An Administrator accepts a change of signer the service refused (allowSignerChange=true). */
  allowSignerChange?: boolean;
}

/** Uploads a file; `progress` gets the bytes sent so far. Resolves with the API's answer (size and hashes). */
export async function uploadArtifact(
  input: UploadInput,
  progress: (sent: number, total: number) => void,
): Promise<Record<string, unknown>> {
  const base = `/v1/products/${input.productId}/releases/${input.releaseId}/downloads`;
  const total = input.file.size;
  if (total <= SINGLE_LIMIT) {
    const form = new FormData();
    form.append("platform", input.platform);
    form.append("kind", input.kind);
    form.append("fileName", input.file.name);
    // A form field before the file: the service reads it before it checks the bytes.
    if (input.allowSignerChange) form.append("allowSignerChange", "true");
    form.append("file", input.file, input.file.name);
    return send("POST", base, form, (sent) => progress(Math.min(sent, total), total));
  }
  const created = await send(
    "POST",
    `${base}/uploads`,
    JSON.stringify({ upload: { platform: input.platform, kind: input.kind, fileName: input.file.name } }),
    () => undefined,
    true,
  );
  const uploadId = String(created["uploadId"]);
  let done = 0;
  for (let part = 1, offset = 0; offset < total; part++, offset += PART_SIZE) {
    const chunk = input.file.slice(offset, Math.min(offset + PART_SIZE, total));
    for (let attempt = 1; ; attempt++) {
      try {
        await send("PUT", `${base}/uploads/${uploadId}/parts/${part}`, chunk, (sent) => progress(done + sent, total));
        break;
      } catch (e) {
        if (attempt >= 3) throw e;
      }
    }
    done += chunk.size;
    progress(done, total);
  }
  const accept = input.allowSignerChange ? "?allowSignerChange=true" : "";
  return send("POST", `${base}/uploads/${uploadId}/complete${accept}`, null, () => undefined);
}
