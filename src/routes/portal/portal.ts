/**
 * `/v1/portal/*`: the customer portal's API (CONTRACT section 12), for the vendor's customers, never staff. Every
 * route but branding and sign-in takes the portal session only (portal-session.ts: its cookie, and `X-CSRF-Token`
 * on writes); an API key, a bearer token or the console's cookie opens none of them. Another customer's ids in a
 * path answer 404, as ids that do not exist.
 */
import type { Router } from "../../http/router";
import {
  portalLicensesHandler,
  portalLicensesRoute,
  portalLicenseHandler,
  portalLicenseRoute,
  portalDeactivateMachineHandler,
  portalDeactivateMachineRoute,
  portalDownloadsHandler,
  portalDownloadsRoute,
  portalOrdersHandler,
  portalOrdersRoute,
  portalChangeLicenseeHandler,
  portalChangeLicenseeRoute,
} from "./licenses";
import {
  portalBrandingHandler,
  portalBrandingRoute,
  portalSignInHandler,
  portalSignInRoute,
  portalSignInLinkHandler,
  portalSignInLinkRoute,
  portalSignOutHandler,
  portalSignOutRoute,
  portalMeHandler,
  portalMeRoute,
} from "./session";

/** Registers the portal's routes, in the order of the OpenAPI document: the session's, then the licenses'. */
export function registerPortal(app: Router): void {
  app.openapi(portalBrandingRoute, portalBrandingHandler);
  app.openapi(portalSignInRoute, portalSignInHandler);
  app.openapi(portalSignInLinkRoute, portalSignInLinkHandler);
  app.openapi(portalSignOutRoute, portalSignOutHandler);
  app.openapi(portalMeRoute, portalMeHandler);
  app.openapi(portalLicensesRoute, portalLicensesHandler);
  app.openapi(portalLicenseRoute, portalLicenseHandler);
  app.openapi(portalDeactivateMachineRoute, portalDeactivateMachineHandler);
  app.openapi(portalDownloadsRoute, portalDownloadsHandler);
  app.openapi(portalOrdersRoute, portalOrdersHandler);
  app.openapi(portalChangeLicenseeRoute, portalChangeLicenseeHandler);
}
