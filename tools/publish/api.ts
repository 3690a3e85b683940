/**
 * The few Management API calls the publisher makes (API key in `x-api-key`), with the service's error envelope
 * turned into exceptions that say which call failed and why. The key goes only where it is safe: never over plain
 * http:// beyond this machine (unless `insecure`), never to another origin on a redirect; a failed connection says
 * why (a self-signed certificate, a refused connection…) and how to fix it.
 */
import { openAsBlob } from "node:fs";
import * as tls from "node:tls";
import { Agent } from "undici";
import { explainNetworkFailure } from "./network.ts";

/**
 * Why the service refused an upload (CONTRACT section 15): `reason` signerChanged (with the identities `expected`
 * and the one `found`), unsigned or signatureInvalid; `artifact` the file, `entry` the executable inside a package.
 */
export interface Refusal {
  reason: string;
  artifact?: string;
  expected?: string[];
  found?: string | null;
  entry?: string;
}

/** The refusal an error body carries, or undefined when it has no `reason`. */
function refusalOf(body: Record<string, unknown>): Refusal | undefined {
  if (typeof body["reason"] !== "string") return undefined;
  const refusal: Refusal = { reason: body["reason"] };
  if (typeof body["artifact"] === "string") refusal.artifact = body["artifact"];
  if (Array.isArray(body["expected"])) refusal.expected = body["expected"].map(String);
  if (typeof body["found"] === "string" || body["found"] === null) refusal.found = body["found"] as string | null;
  if (typeof body["entry"] === "string") refusal.entry = body["entry"];
  return refusal;
}

/** A refusal's fields as lines under the message: reason, expected, found, entry. */
function refusalLines(refusal: Refusal): string {
  const lines = [`  reason: ${refusal.reason}`];
  if (refusal.expected) lines.push(`  expected: ${refusal.expected.map((e) => JSON.stringify(e)).join(" or ")}`);
  if (refusal.found !== undefined)
    lines.push(`  found: ${refusal.found === null ? "no signer (unsigned)" : JSON.stringify(refusal.found)}`);
  if (refusal.entry) lines.push(`  in: ${refusal.entry}`);
  return lines.join("\n");
}

/** A refused or failed call: the method, path, status and the service's message (and its refusal's fields). */
export class ApiFailure extends Error {
  readonly status: number;
  /** Seconds the service asked to wait (Retry-After), at most a minute. */
  retryAfter: number | undefined;
  /** Why an upload was refused, when the service said (409 signerChanged, unsigned, signatureInvalid). */
  readonly refusal: Refusal | undefined;

  constructor(method: string, path: string, status: number, detail: string, refusal?: Refusal) {
    super(`${method} ${path}: ${status} ${detail}${refusal ? `\n${refusalLines(refusal)}` : ""}`);
    this.status = status;
    this.refusal = refusal;
  }
}

/**
 * The service could not be reached: the message names the cause and its fix (`self-signed certificate: pass --ca FILE
 * or set NODE_EXTRA_CA_CERTS`); `transient` says whether trying again can help (never for a certificate).
 */
export class ConnectionFailure extends Error {
  readonly code: string | undefined;
  readonly transient: boolean;
  /** The message without the call: `could not reach ORIGIN: cause: fix`. */
  readonly reason: string;

  constructor(method: string, path: string, origin: string, error: unknown, trustHint: string) {
    const failure = explainNetworkFailure(error, trustHint);
    const reason = `could not reach ${origin}: ${failure.message}`;
    super(`${method} ${path}: ${reason}`, { cause: error });
    this.code = failure.code;
    this.transient = failure.transient;
    this.reason = reason;
  }
}

/** Whether a host is this machine: 127.0.0.0/8, ::1 or `localhost` (a URL's hostname, IPv6 in brackets). */
export function isLoopback(hostname: string): boolean {
  return hostname === "localhost" || hostname === "[::1]" || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(hostname);
}

/**
 * The service's address, checked: http(s) only, and plain http:// only to loopback unless `insecure` (the API key
 * would cross the network readable by anyone on the way). Throws an Error that says what to do, naming the settings
 * as `names` says (the CLI's `--url` and `--insecure`).
 */
export function serviceUrl(url: string, insecure = false, names: { url?: string; insecure?: string } = {}): URL {
  const name = names.url ?? "the service URL";
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new Error(`${name} must be an http(s) URL, not ${url}`);
  }
  if (parsed.protocol !== "https:" && parsed.protocol !== "http:")
    throw new Error(`${name} must be an http(s) URL, not ${url}`);
  if (parsed.protocol === "http:" && !isLoopback(parsed.hostname) && !insecure)
    throw new Error(
      `refusing to send the API key over plain http:// to ${parsed.host}: use https://, or ${names.insecure ?? "pass --insecure"} to send it unencrypted anyway (http:// is allowed without it only to this machine: 127.0.0.0/8, ::1, localhost)`,
    );
  return parsed;
}

/** How the publisher reaches the service. */
export interface ConnectionOptions {
  /** Allow plain http:// to hosts other than this machine's loopback. */
  insecure?: boolean;
  /** PEM certificates to trust besides Node's default authorities (a self-signed service, a private authority). */
  ca?: string;
  /** What a certificate failure tells the reader to do (default: the CLI's `--ca FILE` or NODE_EXTRA_CA_CERTS). */
  trustHint?: string;
  /** Attempts per call (default 5); the dry run asks once, so an unreachable service does not hold it up. */
  attempts?: number;
}

/** An undici Agent trusting Node's default authorities (NODE_EXTRA_CA_CERTS included) and `ca`. */
function trustingAgent(ca: string): Agent {
  const defaults =
    typeof tls.getCACertificates === "function" ? tls.getCACertificates("default") : tls.rootCertificates;
  return new Agent({ connect: { ca: [...defaults, ca] } });
}

/** Redirects followed within the service's origin, at most. */
const MAX_REDIRECTS = 5;

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
  /** The vendor's signature, as uploaded. */
  signature?: string | null;
  /** The Authenticode signer (Windows) and Team ID (macOS) the service found in the uploaded bytes. */
  signer?: string | null;
  teamId?: string | null;
}

/** What the service answers when an artifact is added. */
export interface Added {
  releaseDownloadId: number;
  size: number;
  sha256: string;
  sha512: string;
  /** SHA1 hex, where the service keeps it (Squirrel and Velopack packages). */
  sha1?: string;
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
  // Redirects refused (another origin, a method change) and other 3xx and 4xx answers: the same again would fail.
  return status >= 500 && method !== "POST";
}

export class ManagementApi {
  readonly #base: string;
  readonly #origin: string;
  readonly #key: string;
  readonly #log: (line: string) => void;
  readonly #dispatcher: Agent | undefined;
  readonly #trustHint: string;
  readonly #attempts: number;

  /** Throws when `base` is not a URL the key may be sent to (see serviceUrl). */
  constructor(
    base: string,
    key: string,
    log: (line: string) => void = () => undefined,
    options: ConnectionOptions = {},
  ) {
    this.#origin = serviceUrl(base, options.insecure).origin;
    this.#base = base.replace(/\/+$/, "");
    this.#key = key;
    this.#log = log;
    this.#dispatcher = options.ca ? trustingAgent(options.ca) : undefined;
    this.#trustHint = options.trustHint ?? "pass --ca FILE or set NODE_EXTRA_CA_CERTS";
    this.#attempts = options.attempts ?? ATTEMPTS;
  }

  /** Closes the connections of a `ca` Agent; the API is not used after. */
  async close(): Promise<void> {
    await this.#dispatcher?.close();
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
        if (attempt >= this.#attempts || !retryable(method, status)) throw e;
        if (e instanceof ConnectionFailure && !e.transient) throw e;
        const wait =
          retryAfter !== undefined
            ? retryAfter * 1000
            : FIRST_WAIT_MS * 2 ** (attempt - 1) * (0.8 + Math.random() * 0.4);
        this.#log(
          `    ${method} ${path}: ${status ?? (e instanceof ConnectionFailure ? e.reason : e instanceof Error ? e.message : String(e))}; trying again in ${(wait / 1000).toFixed(1)} s (${attempt}/${this.#attempts - 1})`,
        );
        await new Promise((resolve) => setTimeout(resolve, wait));
      }
    }
  }

  /**
   * Sends one request, following redirects only within the service's origin: the API key is never sent to another
   * (fetch's own redirect handling would carry `x-api-key` along), and a redirect that would turn a write into a GET
   * is refused rather than silently dropping its body. A refused redirect is an ApiFailure naming the target.
   */
  async #send(method: string, path: string, headers: Record<string, string>, payload?: BodyInit): Promise<Response> {
    let target = new URL(`${this.#base}${path}`);
    for (let hops = 0; ; hops++) {
      let res: Response;
      try {
        res = await fetch(target, {
          method,
          headers,
          redirect: "manual",
          ...(payload !== undefined ? { body: payload } : {}),
          ...(this.#dispatcher ? { dispatcher: this.#dispatcher } : {}),
        } as RequestInit);
      } catch (e) {
        throw new ConnectionFailure(method, path, target.origin, e, this.#trustHint);
      }
      const location = res.headers.get("location");
      if (res.status < 300 || res.status > 399 || location === null) return res;
      await res.body?.cancel();
      let next: URL;
      try {
        next = new URL(location, target);
      } catch {
        throw new ApiFailure(method, path, res.status, `redirected to an invalid address: ${location}`);
      }
      if (next.origin !== this.#origin)
        throw new ApiFailure(
          method,
          path,
          res.status,
          `redirected to ${next.href}, another origin than ${this.#origin}: the API key is not sent there (if that is the licensing service, use its address as the URL)`,
        );
      if (res.status !== 307 && res.status !== 308 && method !== "GET" && method !== "HEAD")
        throw new ApiFailure(
          method,
          path,
          res.status,
          `redirected to ${next.href} with ${res.status}, which would turn the ${method} into a GET: use the address the service answers on as the URL`,
        );
      if (hops >= MAX_REDIRECTS)
        throw new ApiFailure(method, path, res.status, `more than ${MAX_REDIRECTS} redirects (last to ${next.href})`);
      target = next;
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
    const res = await this.#send(method, path, headers, payload);
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
        refusalOf(parsed),
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
