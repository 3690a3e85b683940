/**
 * Offline licensing (CONTRACT section 11): license files checked out for a machine, and floating seats borrowed and
 * returned. Free of HTTP: the REST routes (routes/licensing/licensing.ts) and the air-gapped activation call these; the file
 * itself is made by license-file.ts.
 */
import { and, eq, inArray, isNotNull, isNull, sql } from "drizzle-orm";
import { sha256Hex } from "../kernel/crypto";
import { tokenIsLive } from "../db/rules";
import { licenseFiles, licenseTokens, licenses } from "../db/schema";
import type { ClientInfo, ServiceContext } from "../http/context";
import { ApiError, GrpcCode, notFound400 } from "../kernel/errors";
import { clientToken } from "./client-tokens";
import type { CountResult } from "./activation";
import { leaseMs, releaseSeat, seatAsked, takeSeat } from "./floating";
import type { BorrowInput, CheckoutInput, ReturnInput } from "./inputs";
import { emitClientEvent } from "./license-events";
import { type LicenseFileAnswer, makeLicenseFile } from "./license-file";
import { seats } from "./license-limit";
import { type LicenseWithProduct, Messages, fail, now, openLicense, required } from "./license-lookup";
import { trace } from "./license-view";
import { Mode, TokenKind, TraceAction } from "../records/vocabulary";

const HOUR_MS = 3_600_000;

/**
 * Until when this machine (and client) may use the license: undefined when nothing limits it (File mode, an
 * activation without expiry); 529 `notActivated` when the machine holds no live activation (Activation mode) or seat
 * (Floating mode).
 */
async function machineEntitlement(
  ctx: ServiceContext,
  license: LicenseWithProduct,
  machineId: string,
  clientId: string,
  at: Date,
): Promise<number | undefined> {
  if (license.licensingMode === Mode.Activation) {
    const held = await ctx.db
      .select({ expireDate: licenseTokens.expireDate })
      .from(licenseTokens)
      .where(
        and(
          eq(licenseTokens.licenseId, license.id),
          eq(licenseTokens.kind, TokenKind.Activation),
          eq(licenseTokens.machineId, machineId),
          clientId ? eq(licenseTokens.clientId, clientId) : undefined,
          tokenIsLive(at.toISOString()),
        ),
      );
    if (held.length === 0) throw fail(GrpcCode.FailedPrecondition, Messages.notActivated);
    if (held.some((t) => t.expireDate === null)) return undefined;
    return Math.max(...held.map((t) => Date.parse(t.expireDate!)));
  }
  if (license.licensingMode === Mode.Floating) {
    const id = required(clientId, Messages.clientRequired);
    const token = await clientToken(ctx.config, TokenKind.Floating, license.id, machineId, id);
    const seat = await seats(ctx, license.id).seat(await sha256Hex(token), at.getTime());
    if (!seat.live || seat.machineId !== machineId) throw fail(GrpcCode.FailedPrecondition, Messages.notActivated);
    return seat.expiresAt;
  }
  return undefined;
}

/**
 * A license file for a machine (POST /v1/license/checkout). The license must be usable; in Activation mode the
 * machine must hold a live activation, in Floating mode a live (or borrowed) seat, whose end the file does not
 * outlive. An encrypted file needs the machine id it is encrypted for (400). Refusals change nothing.
 */
export async function checkout(
  ctx: ServiceContext,
  input: CheckoutInput,
  client: ClientInfo,
): Promise<LicenseFileAnswer> {
  if (input.encrypt === true && !input.machineId?.trim())
    throw new ApiError(
      400,
      "machineId is required for an encrypted license file (encrypt: true): it is encrypted for that machine",
    );
  const license = await openLicense(ctx, input.userKey, input.productCode);
  const machineId = required(input.machineId, Messages.machineRequired);
  const clientId = input.clientId?.trim() ?? "";
  const at = now();
  const until = await machineEntitlement(ctx, license, machineId, clientId, at);
  const file = await makeLicenseFile(
    ctx,
    license,
    {
      machineId,
      clientId,
      typedKey: input.userKey,
      ttlMs: input.ttl !== undefined ? input.ttl * 1000 : undefined,
      encrypt: input.encrypt,
      nonce: input.nonce,
      until,
    },
    at,
  );
  trace(ctx, license, TraceAction.Checkout, client, { machineId, clientId: clientId || null });
  return file;
}

export interface BorrowResult extends LicenseFileAnswer {
  /** The seat's token: POST /v1/license/return takes it. */
  licenseToken: string;
  /** The borrow's end (the seat is free again then). */
  borrowUntil: string;
  activeClientCount: number;
  maxClientCount: number;
}

/**
 * Borrows a floating seat for `hours` (1 to Licensing:MaxBorrowHours): the license's LicenseSeats object holds it
 * until then with no heartbeat (a seat whose lease is the borrow; it decides alone, so concurrent borrows never
 * exceed the seats), and the answer carries a license file that ends with it. A seat this machine and client
 * already hold becomes the borrowed one. 528 when every seat is taken; nothing is changed by a refusal.
 */
export async function borrowSeat(ctx: ServiceContext, input: BorrowInput, client: ClientInfo): Promise<BorrowResult> {
  const max = ctx.config["Licensing:MaxBorrowHours"];
  if (!Number.isInteger(input.hours) || input.hours < 1 || input.hours > max)
    throw new ApiError(
      400,
      `hours must be a whole number of hours from 1 to ${max} (Licensing:MaxBorrowHours), got ${input.hours}`,
    );
  const { license, seat } = await seatAsked(ctx, input, client);
  const { machineId, clientId } = seat;
  const at = now();
  // Never past the license's expiry: the seat would outlive what it is a seat of.
  const ends = [at.getTime() + input.hours * HOUR_MS];
  if (license.expireDate) ends.push(Date.parse(license.expireDate));
  const until = Math.min(...ends);
  const lease = { ms: Math.max(until - at.getTime(), leaseMs(ctx.config)), borrow: true };
  const { grant, token, digest } = await takeSeat(ctx, license, seat, client, at, lease);
  const borrowEnd = grant.expiresAt;
  const expireAt = new Date(borrowEnd).toISOString();
  const file = await makeLicenseFile(
    ctx,
    license,
    {
      machineId,
      clientId,
      typedKey: input.userKey,
      encrypt: input.encrypt,
      nonce: input.nonce,
      borrow: { until: borrowEnd, tokenDigest: digest },
    },
    at,
  );
  return {
    ...file,
    licenseToken: token,
    borrowUntil: expireAt,
    activeClientCount: grant.active,
    maxClientCount: license.maxClients,
  };
}

/**
 * Returns a borrowed seat early (POST /v1/license/return): freed at once, as a release frees a seat, and its borrow
 * recorded as returned. By the seat's token, or by the user key with the machine and client that borrowed it.
 */
export async function returnSeat(ctx: ServiceContext, input: ReturnInput, client: ClientInfo): Promise<CountResult> {
  let token = input.licenseToken?.trim() ?? "";
  if (token === "") {
    const license = await openLicense(ctx, input.userKey);
    if (license.licensingMode !== Mode.Floating) throw fail(GrpcCode.FailedPrecondition, Messages.notFloating);
    const machineId = required(input.machineId, Messages.machineRequired);
    const clientId = required(input.clientId, Messages.clientRequired);
    token = await clientToken(ctx.config, TokenKind.Floating, license.id, machineId, clientId);
  }
  const released = await releaseSeat(ctx, { licenseToken: token, userKey: input.userKey }, client);
  await markReturned(ctx, await sha256Hex(token), now());
  return released;
}

/** Records the borrows of a seat as returned (the seat was freed before the borrow's end). */
export async function markReturned(ctx: Pick<ServiceContext, "db">, tokenDigest: string, at: Date): Promise<void> {
  const stamp = at.toISOString();
  await ctx.db
    .update(licenseFiles)
    .set({ returnedAt: stamp })
    .where(
      and(
        eq(licenseFiles.tokenDigest, tokenDigest),
        isNotNull(licenseFiles.borrowUntil),
        isNull(licenseFiles.returnedAt),
        sql`${licenseFiles.borrowUntil} > ${stamp}`,
      ),
    )
    .run();
}

/**
 * Which of these license files are borrows still held: not ended, not returned, and their seat's token row is still
 * there (a release or an administrator's delete frees the seat without a return). One query.
 */
export async function heldBorrows(
  db: ServiceContext["db"],
  files: readonly { id: number; tokenDigest: string | null; borrowUntil: string | null; returnedAt: string | null }[],
  at: Date,
): Promise<Set<number>> {
  const stamp = at.toISOString();
  const candidates = files.filter((f) => f.tokenDigest && f.borrowUntil && f.borrowUntil > stamp && !f.returnedAt);
  if (candidates.length === 0) return new Set();
  const live = await db
    .select({ digest: licenseTokens.tokenDigest })
    .from(licenseTokens)
    .where(
      and(
        inArray(
          licenseTokens.tokenDigest,
          candidates.map((f) => f.tokenDigest!),
        ),
        tokenIsLive(stamp),
      ),
    );
  const digests = new Set(live.map((t) => t.digest));
  return new Set(candidates.filter((f) => digests.has(f.tokenDigest!)).map((f) => f.id));
}

/**
 * An administrator returns a borrowed seat (the console's Return): the seat is freed in the license's Durable
 * Object, its token row goes, the borrow is recorded as returned and license.seat.released is emitted. 400 when the
 * file is not a borrow that is still held.
 */
export async function returnBorrowed(ctx: ServiceContext, licenseRowId: number, fileRowId: number): Promise<void> {
  const at = now();
  const file = await ctx.db
    .select()
    .from(licenseFiles)
    .where(and(eq(licenseFiles.id, fileRowId), eq(licenseFiles.licenseId, licenseRowId)))
    .get();
  if (!file) throw notFound400("LicenseFile", fileRowId);
  if (!(await heldBorrows(ctx.db, [file], at)).has(file.id))
    throw new ApiError(400, `License file ${fileRowId} is not a borrowed seat that is still held`);
  await seats(ctx, licenseRowId).drop([file.tokenDigest!]);
  await ctx.db.delete(licenseTokens).where(eq(licenseTokens.tokenDigest, file.tokenDigest!)).run();
  await markReturned(ctx, file.tokenDigest!, at);
  const license = await ctx.db.select().from(licenses).where(eq(licenses.id, licenseRowId)).get();
  if (license)
    void emitClientEvent(ctx, "license.seat.released", license, {
      machineId: file.machineId,
      clientId: file.clientId,
    });
}
