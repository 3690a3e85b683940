/**
 * Events about a license's clients (CONTRACT section 7): activations, deactivations and floating seats. Their data
 * is the license as the API returns it (status and activeClientCount as they are after the change) with `client`
 * naming the machine and client the event is about. Shared by the licensing runtime (REST and gRPC) and the
 * LicenseSeats alarm's queue job (consumeExpiredSeats), for lapsed seats it reclaimed.
 */
import { eq } from "drizzle-orm";
import type { Job, JobOf } from "../kernel/jobs";
import { licenses } from "../db/schema";
import { type EmitContext, backgroundContext, emit } from "../webhooks/emit";
import type { EventType } from "../webhooks/events";
import { licenseRecords } from "./license-records";

/** The client an event is about. */
export interface EventClient {
  machineId: string | null;
  clientId?: string | null;
  clientName?: string | null;
}

type ClientEvent = Extract<EventType, "license.activated" | "license.deactivated" | `license.seat.${string}`>;

/** Emits a client event of a stored license row (any row of the licenses table). */
export function emitClientEvent(
  ctx: EmitContext,
  type: ClientEvent,
  license: typeof licenses.$inferSelect,
  client: EventClient,
): Promise<void> {
  return emit(ctx, type, async () => {
    const [record] = await licenseRecords(ctx.db, ctx.config, [license]);
    return {
      data: {
        ...record,
        client: {
          machineId: client.machineId,
          clientId: client.clientId || null,
          clientName: client.clientName ?? null,
        },
      },
    };
  });
}

/**
 * license.seat.expired for seats a LicenseSeats alarm reclaimed (after their token rows are gone). Awaited by the
 * alarm, and never throws: a failure to emit must not make the alarm reclaim the seats again.
 */
export async function emitSeatsExpired(
  env: Bindings,
  waitUntil: (promise: Promise<unknown>) => void,
  licenseRowId: number,
  seats: readonly EventClient[],
): Promise<void> {
  try {
    const ctx = await backgroundContext(env, waitUntil);
    if (!ctx.config["Webhooks:Enabled"]) return;
    const license = await ctx.db.select().from(licenses).where(eq(licenses.id, licenseRowId)).get();
    if (!license) return;
    await Promise.all(seats.map((seat) => emitClientEvent(ctx, "license.seat.expired", license, seat)));
  } catch (e) {
    console.error(`webhooks: license.seat.expired of license ${licenseRowId} failed`, e);
  }
}

/** The consumer of `license.seats.expired` jobs: a LicenseSeats alarm's reclaimed seats, as license.seat.expired events. */
export async function consumeExpiredSeats(message: Message<Job>, env: Bindings, ctx: ExecutionContext): Promise<void> {
  const job = message.body as Partial<JobOf<"license.seats.expired">>;
  if (typeof job.licenseRowId !== "number" || !Array.isArray(job.seats)) {
    console.error(`license seats: malformed job ${message.id}`, JSON.stringify(job).slice(0, 200));
    return message.ack();
  }
  await emitSeatsExpired(env, (p) => ctx.waitUntil(p), job.licenseRowId, job.seats);
  message.ack();
}
