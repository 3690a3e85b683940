/**
 * The LicenseSeats Durable Object the Worker exports: the seat store of durable/license-seats.ts with the licensing
 * domain's part of its alarm: the license policy decides whether the license may still be used (when it may not,
 * every seat is reclaimed), and a reclaimed seat records a TokenExpired trace.
 */
import { eq } from "drizzle-orm";
import { loadConfig } from "../config";
import { getDb } from "../db/client";
import { licenses } from "../db/schema";
import { SeatStore } from "../durable/license-seats";
import { judgeLicense } from "./policy";
import { TraceAction } from "./vocabulary";

export class LicenseSeats extends SeatStore {
  protected readonly reclaimedSeatAction = TraceAction.TokenExpired;

  protected async licenseUsable(licenseId: number, now: Date): Promise<boolean> {
    const { config } = await loadConfig(this.env, this.env.DB);
    const license = await getDb(this.env.DB).select().from(licenses).where(eq(licenses.id, licenseId)).get();
    return (await judgeLicense(config["Application:EncryptionKey"], license, now)).usable;
  }
}
