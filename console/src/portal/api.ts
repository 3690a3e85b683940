/**
 * The customer portal's one client of the service: openapi-fetch typed by the console's schema.ts (generated from the
 * OpenAPI document by `npm run console:schema`; only types are imported, so the portal ships none of the console).
 * The session lives in the HttpOnly cookie `/v1/portal/sign-in` sets; this module keeps the CSRF token the sign-in
 * (or `GET /v1/portal/me` after a reload) returned and sends it with every request.
 */
import createClient, { type Middleware } from "openapi-fetch";
import type { components, paths } from "../api/schema";

type Schemas = components["schemas"];
export type Branding = Pick<Schemas["PortalBranding"], "title" | "accentColor" | "logoUrl">;
export type Customer = Schemas["PortalCustomer"];
export type License = Schemas["PortalLicense"];
export type LicenseDetail = Schemas["PortalLicenseDetail"];
export type Client = Schemas["PortalClient"];
export type Deactivations = Schemas["PortalDeactivations"];
export type Download = Schemas["PortalDownload"];
export type Order = Schemas["PortalOrder"];

export interface Session {
  customer: Customer;
  signedInWith: "userKey" | "email";
  csrfToken: string;
}

let csrfToken: string | undefined;
let onEnded: () => void = () => undefined;

/** Starts (or, with undefined, ends) the session this tab sends its CSRF token for. */
export function setSession(session: Session | undefined): void {
  csrfToken = session?.csrfToken;
}

/** Called when the service answers 401 to a signed-in request: the session ended (expired, revoked, signed out). */
export function whenEnded(handler: () => void): void {
  onEnded = handler;
}

const csrf: Middleware = {
  onRequest({ request }) {
    if (csrfToken) request.headers.set("X-CSRF-Token", csrfToken);
    return request;
  },
  onResponse({ response }) {
    if (response.status === 401 && csrfToken) onEnded();
    return response;
  },
};

export const api = createClient<paths>({ baseUrl: location.origin, credentials: "same-origin" });
api.use(csrf);

/** A refusal of the service, in its own words (written for the customer), with the answer's status. */
export class Refusal extends Error {
  constructor(
    message: string,
    readonly status: number,
  ) {
    super(message);
  }
}

/** Unwraps an openapi-fetch result: its data, or a Refusal carrying the service's message. */
export function must<T>(result: { data?: T; error?: unknown; response: Response }): T {
  if (result.error === undefined && result.response.ok) return result.data as T;
  const error = result.error as { message?: unknown; title?: unknown } | undefined;
  const message =
    typeof error?.message === "string" && error.message
      ? error.message
      : typeof error?.title === "string"
        ? error.title
        : `The service answered HTTP ${result.response.status}.`;
  throw new Refusal(message, result.response.status);
}
