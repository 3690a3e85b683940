/**
 * What the licensing runtime causes on the release side, as reactions: licensing says what happened (a validation
 * naming the version its install runs, a report about a version), and the app wires who reacts (app/reactions.ts:
 * release adoption counts the install as running; a release may halt itself on its reports). Licensing imports
 * nothing of updates/, so the layers point one way (DESIGN "Layers and layout"), and the table is typed like the
 * queue's job table: an event without its reaction does not type-check.
 */
import type { ServiceContext } from "../http/context";

/** Every event licensing raises for another domain, and what it carries. */
export interface LicensingEvents {
  /** A license was validated by an install that said which release version it runs. */
  "license.validated": {
    productId: number;
    version: string;
    installId?: string | undefined;
    licenseId: number;
    machineId: string | null;
  };
  /** An application of a license reported about one of its product's versions (stored before this is raised). */
  "report.stored": { licenseId: number; version: string };
}

/** One reaction per event, no more, no less. A reaction may finish after the answer (it decides, with waitUntil). */
export type LicensingReactions = {
  [K in keyof LicensingEvents]: (ctx: ServiceContext, event: LicensingEvents[K]) => void | Promise<void>;
};

let wired: LicensingReactions | undefined;

/** Wires the reactions; the app does it once, when it is assembled (app/app.ts createApp). */
export function wireLicensingReactions(reactions: LicensingReactions): void {
  wired = reactions;
}

/** Raises `kind`: its reaction runs now (awaited when it returns a promise). */
export async function react<K extends keyof LicensingEvents>(
  ctx: ServiceContext,
  kind: K,
  event: LicensingEvents[K],
): Promise<void> {
  if (!wired) throw new Error(`licensing event ${kind} raised before the app wired its reactions (app/reactions.ts)`);
  await wired[kind](ctx, event);
}
