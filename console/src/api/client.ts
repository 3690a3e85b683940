/**
 * The console's one client of the REST API: openapi-fetch typed by schema.ts, which openapi-typescript generates
 * from the service's OpenAPI document (`npm run console:schema`). The session's API key travels in the HttpOnly
 * cookie set by sign-in; this module adds the CSRF token sign-in returned to every request.
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

export const api = createClient<paths>({ baseUrl: location.origin, credentials: "same-origin" });
api.use(csrf);

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
