/**
 * The few Management API calls the publisher makes (API key in `x-api-key`), with the service's error envelope
 * turned into exceptions that say which call failed and why.
 */
import { openAsBlob } from "node:fs";

/** A refused or failed call: the method, path, status and the service's message. */
export class ApiFailure extends Error {
  readonly status: number;
  /** Seconds the service asked to wait (Retry-After), at most a minute. */
  retryAfter: number | undefined;

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

/** Attempts per call, and the first wait between them (doubled each time, with jitter; Retry-After wins). */
const ATTEMPTS = 5;
const FIRST_WAIT_MS = Number(process.env["LICENSING_PUBLISH_RETRY_MS"] ?? 1000);

/**
 * Whether a failed attempt is worth repeating: 429 and 5xx answers and network failures. A POST that the service
 * may have carried out (a 5xx other than 503) is not repeated: adding an artifact twice would be refused anyway,
 * and a re-run of the tool picks up where it stopped.
 */
function retryable(method: string, status: number | undefined): boolean {
  if (status === undefined || status === 429 || status === 503) return true;
  return status >= 500 && method !== "POST";
}

export class ManagementApi {
  readonly #base: string;
  readonly #key: string;
  readonly #log: (line: string) => void;

  constructor(base: string, key: string, log: (line: string) => void = () => undefined) {
    this.#base = base.replace(/\/+$/, "");
    this.#key = key;
    this.#log = log;
  }

  /** One call, retried with backoff on 429, 5xx and network failures (see retryable). */
  async call<T = Record<string, unknown>>(
    method: string,
    path: string,
    body?: unknown,
    init: { raw?: BodyInit; contentType?: string } = {},
  ): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      let status: number | undefined;
      let retryAfter: number | undefined;
      try {
        return await this.#once<T>(method, path, body, init);
      } catch (e) {
        status = e instanceof ApiFailure ? e.status : undefined;
        if (e instanceof ApiFailure) retryAfter = e.retryAfter;
        if (attempt >= ATTEMPTS || !retryable(method, status)) throw e;
        const wait =
          retryAfter !== undefined
            ? retryAfter * 1000
            : FIRST_WAIT_MS * 2 ** (attempt - 1) * (0.8 + Math.random() * 0.4);
        this.#log(
          `    ${method} ${path}: ${status ?? (e instanceof Error ? e.message : String(e))}; trying again in ${(wait / 1000).toFixed(1)} s (${attempt}/${ATTEMPTS - 1})`,
        );
        await new Promise((resolve) => setTimeout(resolve, wait));
      }
    }
  }

  /** One attempt; the JSON answer, or ApiFailure with the envelope's message (or problem details' errors). */
  async #once<T>(
    method: string,
    path: string,
    body?: unknown,
    init: { raw?: BodyInit; contentType?: string } = {},
  ): Promise<T> {
    const headers: Record<string, string> = { "x-api-key": this.#key, accept: "application/json" };
    let payload: BodyInit | undefined = init.raw;
    if (body !== undefined) {
      headers["content-type"] = "application/json";
      payload = JSON.stringify(body);
    } else if (init.contentType) headers["content-type"] = init.contentType;
    const res = await fetch(`${this.#base}${path}`, {
      method,
      headers,
      ...(payload !== undefined ? { body: payload } : {}),
    });
    const text = await res.text();
    let parsed: Record<string, unknown> = {};
    try {
      parsed = text ? (JSON.parse(text) as Record<string, unknown>) : {};
    } catch {
      parsed = { message: text.slice(0, 300) };
    }
    if (!res.ok) {
      const detail =
        (parsed["message"] as string | undefined) ??
        (parsed["errors"] ? JSON.stringify(parsed["errors"]) : res.statusText);
      const failure = new ApiFailure(
        method,
        path,
        res.status,
        detail || "(empty answer: check LICENSING_API_KEY and its roles)",
      );
      const after = Number(res.headers.get("retry-after"));
      if (Number.isFinite(after) && after >= 0 && res.headers.has("retry-after"))
        failure.retryAfter = Math.min(after, 60);
      throw failure;
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
