/**
 * The reactions one domain's events cause in another domain above it (DESIGN "Layers and layout"), wired here where
 * the app is assembled, so that no domain imports a domain above it. Like the queue's job table (index.ts), the
 * table is typed: an event without its reaction does not type-check.
 */
import type { LicensingReactions } from "../licensing/reactions";
import { adoptionRunning } from "../updates/adoption";
import { haltOnReports } from "../updates/release-control";

export const licensingReactions: LicensingReactions = {
  // Release adoption: the install runs this version (gathered off the request path, like the trace).
  "license.validated": (ctx, seen) => adoptionRunning(ctx, seen),
  // A release of the license's product with this version may halt itself on its reports.
  "report.stored": (ctx, report) => haltOnReports(ctx, report.licenseId, report.version),
};
