/**
 * The console's one client of the REST API: openapi-fetch typed by schema.ts, which openapi-typescript generates
 * from the service's OpenAPI document (`npm run console:schema`). The session's API key travels in the HttpOnly
 * cookie set by sign-in; this module adds the CSRF token sign-in returned to every request, and an Idempotency-Key
 * to every management POST.
 */
import createClient, { type Middleware } from "openapi-fetch";
import type { paths } from "./schema";

export type { paths, components } from "./schema";

export interface Session {
  user: string;
  roles: string[];
  csrfToken: string;
  expiresAt: string;
}

const STORE = "licensing-console-session";

/** The session survives a reload of the tab (sessionStorage), never the tab itself; the key is not in it. */
export function loadSession(): Session | undefined {
  try {
    const raw = sessionStorage.getItem(STORE);
    return raw ? (JSON.parse(raw) as Session) : undefined;
  } catch {
    return undefined;
  }
}

let current: Session | undefined = loadSession();
let onExpired: () => void = () => undefined;

export function setSession(session: Session | undefined): void {
  current = session;
  if (session) sessionStorage.setItem(STORE, JSON.stringify(session));
  else sessionStorage.removeItem(STORE);
}

/** Called when the API answers 401 to a signed-in request: the session ended (expired or revoked). */
export function whenExpired(handler: () => void): void {
  onExpired = handler;
}

export function csrfHeaders(): Record<string, string> {
  return current ? { "X-CSRF-Token": current.csrfToken } : {};
}

const writeListeners = new Set<() => void>();

/** Calls `listener` after every request that may have changed records (any method but GET) and succeeded. */
export function onWrite(listener: () => void): void {
  writeListeners.add(listener);
}

const csrf: Middleware = {
  onRequest({ request }) {
    if (current) request.headers.set("X-CSRF-Token", current.csrfToken);
    return request;
  },
  onResponse({ response, request }) {
    if (response.status === 401 && current && !request.url.includes("/v1/auth/console/")) onExpired();
    if (response.ok && request.method !== "GET") for (const listener of writeListeners) listener();
    return response;
  },
};

/**
 * `Idempotency-Key` on every management POST (CONTRACT 10): one key per submission, and the same key again when
 * the same request is sent again after it got no answer (the network failed), a 409 (the first is still running)
 * or a 5xx; so a submission repeated because its answer was lost is answered the first answer, never made twice.
 * After any other answer the next submission, even of the same values, is a new one with a new key.
 */
const pendingKeys = new Map<string, string>();
const keyOfRequest = new Map<string, string>();

const idempotency: Middleware = {
  async onRequest({ request, id }) {
    const url = new URL(request.url);
    if (request.method !== "POST" || url.pathname.startsWith("/v1/auth/") || request.headers.has("Idempotency-Key"))
      return request;
    if (!(request.headers.get("content-type") ?? "").includes("json")) return request;
    const fingerprint = `${url.pathname}${url.search}\n${await request.clone().text()}`;
    const key = pendingKeys.get(fingerprint) ?? crypto.randomUUID();
    pendingKeys.set(fingerprint, key);
    keyOfRequest.set(id, fingerprint);
    request.headers.set("Idempotency-Key", key);
    return request;
  },
  onResponse({ response, id }) {
    const fingerprint = keyOfRequest.get(id);
    keyOfRequest.delete(id);
    if (fingerprint !== undefined && response.status !== 409 && response.status < 500) pendingKeys.delete(fingerprint);
    return response;
  },
  onError({ id }) {
    // No answer: the key stays for the same request sent again.
    keyOfRequest.delete(id);
  },
};

export const api = createClient<paths>({ baseUrl: location.origin, credentials: "same-origin" });
api.use(csrf, idempotency);

/** What an API error says, as the API words it: the envelope's message, or the problem details' title and errors. */
export function errorText(error: unknown, response?: Response): string {
  if (error && typeof error === "object") {
    const e = error as { message?: unknown; title?: unknown; errors?: Record<string, string[]> };
    if (typeof e.message === "string" && e.message) return e.message;
    if (typeof e.title === "string") {
      const details = Object.entries(e.errors ?? {}).map(([field, messages]) => `${field}: ${messages.join(" ")}`);
      return [e.title, ...details].join(" ");
    }
  }
  if (typeof error === "string" && error) return error;
  if (response)
    return `HTTP ${response.status}${response.status === 403 ? ": your roles or key do not allow this" : ""}`;
  return error instanceof Error ? error.message : String(error);
}

/** A thrown API error, carrying the API's words and the answer's status. */
export class ApiFailure extends Error {
  constructor(
    message: string,
    readonly status: number,
  ) {
    super(message);
  }
}

/** Unwraps an openapi-fetch result: the data, or an ApiFailure with the API's message. */
export function must<T>(result: { data?: T; error?: unknown; response: Response }): T {
  if (result.error !== undefined || !result.response.ok)
    throw new ApiFailure(errorText(result.error, result.response), result.response.status);
  return result.data as T;
}

/**
 * A request to a path known only at run time (the generic list and form pages): the same client and middleware,
 * the path checked against the document's paths by the caller's page definition.
 */
export async function call<T = Record<string, unknown>>(
  method: "GET" | "POST" | "PUT" | "DELETE",
  path: string,
  options: { query?: Record<string, unknown>; body?: unknown } = {},
): Promise<T> {
  const client = api as unknown as Record<
    string,
    (p: string, o: unknown) => Promise<{ data?: T; error?: unknown; response: Response }>
  >;
  const params = options.query
    ? { query: Object.fromEntries(Object.entries(options.query).filter(([, v]) => v !== undefined && v !== "")) }
    : undefined;
  return must(await client[method]!(path, { params, body: options.body }));
}
