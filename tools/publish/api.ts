/**
 * The few Management API calls the publisher makes (API key in `x-api-key`), with the service's error envelope
 * turned into exceptions that say which call failed and why.
 */
import { openAsBlob } from "node:fs";

/** A refused or failed call: the method, path, status and the service's message. */
export class ApiFailure extends Error {
  readonly status: number;

  constructor(method: string, path: string, status: number, detail: string) {
    super(`${method} ${path}: ${status} ${detail}`);
    this.status = status;
  }
}

/** An artifact row as the downloads list returns it. */
export interface RemoteDownload {
  id: number;
  platform: string;
  kind: string;
  fileName: string;
  sourceKind: string;
  size: number;
  sha256: string;
  sha512: string;
}

/** What the service answers when an artifact is added. */
export interface Added {
  releaseDownloadId: number;
  size: number;
  sha256: string;
  sha512: string;
}

export class ManagementApi {
  readonly #base: string;
  readonly #key: string;

  constructor(base: string, key: string) {
    this.#base = base.replace(/\/+$/, "");
    this.#key = key;
  }

  /** One call; the JSON answer, or ApiFailure with the envelope's message (or problem details' errors). */
  async call<T = Record<string, unknown>>(method: string, path: string, body?: unknown, init: { raw?: BodyInit; contentType?: string } = {}): Promise<T> {
    const headers: Record<string, string> = { "x-api-key": this.#key, accept: "application/json" };
    let payload: BodyInit | undefined = init.raw;
    if (body !== undefined) {
      headers["content-type"] = "application/json";
      payload = JSON.stringify(body);
    } else if (init.contentType) headers["content-type"] = init.contentType;
    const res = await fetch(`${this.#base}${path}`, { method, headers, ...(payload !== undefined ? { body: payload } : {}) });
    const text = await res.text();
    let parsed: Record<string, unknown> = {};
    try {
      parsed = text ? (JSON.parse(text) as Record<string, unknown>) : {};
    } catch {
      parsed = { message: text.slice(0, 300) };
    }
    if (!res.ok) {
      const detail = (parsed["message"] as string | undefined) ?? (parsed["errors"] ? JSON.stringify(parsed["errors"]) : res.statusText);
      throw new ApiFailure(method, path, res.status, detail || "(empty answer: check LICENSING_API_KEY and its roles)");
    }
    return parsed as T;
  }

  /** POSTs a file as multipart/form-data, streamed from disk (fields first, then the file part). */
  async uploadForm(path: string, file: string, fields: Record<string, string>): Promise<Added> {
    const form = new FormData();
    for (const [name, value] of Object.entries(fields)) form.set(name, value);
    form.set("file", await openAsBlob(file), fields["fileName"] ?? "file");
    return this.call<Added>("POST", path, undefined, { raw: form });
  }

  /** PUTs bytes [start, end) of a file as one upload part; the Blob slice gives fetch the Content-Length. */
  async uploadPart(path: string, file: string, start: number, end: number): Promise<void> {
    const slice = (await openAsBlob(file)).slice(start, end);
    await this.call("PUT", path, undefined, { raw: slice, contentType: "application/octet-stream" });
  }
}
