/**
 * The LicenseSeats Durable Object the Worker exports: the seat store of durable/license-seats.ts with the licensing
 * domain's part of its alarm: the license policy decides whether the license may still be used (when it may not,
 * every seat is reclaimed), and a reclaimed seat's token row goes and it records a TokenExpired trace.
 */
import { and, eq } from "drizzle-orm";
import { loadConfig } from "../db/settings-store";
import { getDb } from "../db/client";
import { insertedRow } from "../db/insert-select";
import { licenseTokens, licenseTraces, licenses } from "../db/schema";
import { type ReclaimedSeat, SeatStore } from "../durable/license-seats";
import { judgeLicense } from "./policy";
import { TraceAction } from "../records/vocabulary";

export class LicenseSeats extends SeatStore {
  protected async licenseUsable(licenseId: number, now: Date): Promise<boolean> {
    const { config } = await loadConfig(this.env, this.env.DB);
    const license = await getDb(this.env.DB).select().from(licenses).where(eq(licenses.id, licenseId)).get();
    return (await judgeLicense(config["Application:EncryptionKey"], license, now)).usable;
  }

  /**
   * Per seat, its token row goes and, when the license (still) exists and traces, a TokenExpired trace is written:
   * one D1 batch, which succeeds or fails whole.
   */
  protected async writeThrough(licenseId: number, seats: readonly ReclaimedSeat[], now: Date): Promise<void> {
    const db = getDb(this.env.DB);
    const stamp = now.toISOString();
    const statements = seats.flatMap((seat) => [
      db.delete(licenseTokens).where(eq(licenseTokens.tokenDigest, seat.tokenDigest)),
      db.insert(licenseTraces).select(
        db
          .select(
            insertedRow(licenseTraces, {
              licenseId: licenses.id,
              action: TraceAction.TokenExpired,
              clientId: seat.clientId,
              machineId: seat.machineId,
              createdAt: stamp,
            }),
          )
          .from(licenses)
          .where(and(eq(licenses.id, licenseId), eq(licenses.trace, true))),
      ),
    ]);
    const [first, ...rest] = statements;
    if (first) await db.batch([first, ...rest]);
  }
}
