/**
 * Floating mode (CONTRACT section 4): seats requested, kept alive and released through the LicenseSeats Durable Object.
 */
import { and, eq, sql } from "drizzle-orm";
import { sha256Hex, timingSafeEqualText } from "../kernel/crypto";
import type { Config } from "../kernel/config";
import { type CheckableQuery, type Params, checkable } from "../db/compiled";
import { licenseTokens, licenses, products } from "../db/schema";
import type { SeatGrant } from "../durable/license-seats";
import type { ServiceContext } from "../http/context";
import { GrpcCode } from "../kernel/errors";
import { emitClientEvent } from "./license-events";
import { judgedLicenseColumns } from "./license-core";
import { tokenPrefix } from "./tokens";
import { licenseBudget, seats, withinBudget } from "./license-limit";
import { Mode, TokenKind, TraceAction } from "../records/vocabulary";
import type { ClientInfo } from "../http/context";
import { licenseView, trace } from "./license-view";
import { recordCheckIn } from "./traces";
import {
  type LicenseWithProduct,
  Messages,
  fail,
  requireUsable,
  requireOwnLicense,
  openLicense,
  now,
  required,
} from "./license-lookup";
import { batchReads } from "../db/compiled";
import { clientToken } from "./client-tokens";
import { keyNames, typedKey } from "./user-key";
import type { ActivateResult, CountResult } from "./activation";
import type { HeartbeatInput, ReleaseInput, RequestInput } from "./inputs";

/** A seat lives twice the heartbeat interval plus 30 s after its last heartbeat (CONTRACT section 4). */
export function leaseMs(config: Config): number {
  return 2 * config["Licensing:HeartbeatInterval"] + 30_000;
}

export interface RequestResult extends Omit<ActivateResult, "newMachine"> {
  heartbeatInterval: number;
  tokenExpireAt: string;
  /** A seat the client did not already hold (for the license.seat.requested event). */
  newSeat: boolean;
}

/** Grants a floating seat, or returns the seat this machine and client already hold; 528 when all are taken. */
export async function requestSeat(
  ctx: ServiceContext,
  input: RequestInput,
  client: ClientInfo,
): Promise<RequestResult> {
  const { license, seat } = await seatAsked(ctx, input, client);
  const at = now();
  const { grant, token } = await takeSeat(ctx, license, seat, client, at, { ms: leaseMs(ctx.config), borrow: false });
  const { machineId, clientId } = seat;
  return {
    licenseToken: token,
    tokenExpireAt: new Date(grant.expiresAt).toISOString(),
    heartbeatInterval: Math.round(ctx.config["Licensing:HeartbeatInterval"] / 1000),
    activeClientCount: grant.active,
    maxClientCount: license.maxClients,
    license: await licenseView(ctx, license, { status: "Activated", machineId, clientId, until: grant.expiresAt }),
    newSeat: !grant.renewed,
  };
}

/** Who takes a floating seat: the machine and client, and what the token row keeps of them. */
export interface SeatTaker {
  machineId: string;
  clientId: string;
  clientName: string | null;
  address: string;
}

/**
 * The floating license a seat request or a borrow names, and who asks for the seat: refused when the license is not
 * floating, or without a machine or a client.
 */
export async function seatAsked(
  ctx: ServiceContext,
  input: RequestInput,
  client: ClientInfo,
): Promise<{ license: LicenseWithProduct; seat: SeatTaker }> {
  const license = await openLicense(ctx, input.userKey);
  if (license.licensingMode !== Mode.Floating) throw fail(GrpcCode.FailedPrecondition, Messages.notFloating);
  const machineId = required(input.machineId, Messages.machineRequired);
  const clientId = required(input.clientId, Messages.clientRequired);
  return { license, seat: { machineId, clientId, clientName: input.clientName ?? null, address: client.address } };
}

/**
 * A floating seat taken in the license's Durable Object, its token row written, its trace kept and, for a seat the
 * client did not hold, `license.seat.requested` emitted: a request's (`lease.ms` the heartbeat lease) and a borrow's
 * (`lease.ms` the borrow; `lease.borrow`: renewing the row never shortens its end, and it keeps no heartbeat) take
 * their seat here, so both are limited and recorded alike. Refuses when no seat is free.
 */
export async function takeSeat(
  ctx: ServiceContext,
  license: LicenseWithProduct,
  seat: SeatTaker,
  client: ClientInfo,
  at: Date,
  lease: { ms: number; borrow: boolean },
): Promise<{ grant: Extract<SeatGrant, { granted: true }>; token: string; digest: string }> {
  const token = await clientToken(ctx.config, TokenKind.Floating, license.id, seat.machineId, seat.clientId);
  const digest = await sha256Hex(token);
  const grant: SeatGrant = withinBudget(
    await seats(ctx, license.id).request(
      {
        tokenDigest: digest,
        tokenPrefix: tokenPrefix(token),
        ...seat,
        maxClients: license.maxClients,
        leaseMs: lease.ms,
        now: at.getTime(),
      },
      licenseBudget(ctx),
    ),
  );
  if (!grant.granted) throw fail(GrpcCode.ResourceExhausted, Messages.exhausted);
  const stamp = at.toISOString();
  await ctx.db
    .insert(licenseTokens)
    .values({
      tokenDigest: digest,
      tokenPrefix: tokenPrefix(token),
      kind: TokenKind.Floating,
      licenseId: license.id,
      ...seat,
      issueDate: stamp,
      expireDate: new Date(grant.expiresAt).toISOString(),
      lastHeartbeat: stamp,
      createdAt: stamp,
      updatedAt: stamp,
    })
    .onConflictDoUpdate({
      target: licenseTokens.tokenDigest,
      set: {
        ...(lease.borrow
          ? { expireDate: sql`max(coalesce(${licenseTokens.expireDate}, ''), excluded.expire_date)` }
          : { expireDate: sql`excluded.expire_date`, lastHeartbeat: sql`excluded.last_heartbeat` }),
        clientName: sql`coalesce(excluded.client_name, ${licenseTokens.clientName})`,
        address: sql`excluded.address`,
        updatedAt: sql`excluded.updated_at`,
      },
    })
    .run();
  const who = { machineId: seat.machineId, clientId: seat.clientId, clientName: seat.clientName };
  trace(ctx, license, lease.borrow ? TraceAction.Borrow : TraceAction.Request, client, who);
  if (!grant.renewed) void emitClientEvent(ctx, "license.seat.requested", license, who);
  return { grant, token, digest };
}

// The token's columns are aliased: a D1 batch keys each row by column name, and the license's id, license_id,
// issue_date, expire_date and created_at would otherwise overwrite the token's.
const tokenExpiry = sql<string | null>`${licenseTokens.expireDate}`.as("token_expire_date");
const tokenMachine = sql<string | null>`${licenseTokens.machineId}`.as("token_machine_id");
const tokenClient = sql<string | null>`${licenseTokens.clientId}`.as("token_client_id");
const byDigest = (p: Params<{ digest: string; kind: number }>) =>
  and(eq(licenseTokens.tokenDigest, p.digest), eq(licenseTokens.kind, p.kind));

/** A floating token's row with its whole license and product code: a release's event carries the license's record. */
const seatTokenByDigest = checkable((db, p: Params<{ digest: string; kind: number }>, checked) =>
  db
    .select({
      token: {
        expireDate: tokenExpiry,
        machineId: tokenMachine,
        clientId: tokenClient,
        clientName: sql<string | null>`${licenseTokens.clientName}`.as("token_client_name"),
      },
      license: licenses,
      productCode: products.code,
      checked: sql<number>`${checked}`,
    })
    .from(licenseTokens)
    .innerJoin(licenses, eq(licenses.id, licenseTokens.licenseId))
    .innerJoin(products, eq(products.id, licenses.productId))
    .where(byDigest(p))
    .limit(1),
);

/**
 * A heartbeat's read, the hot path's: the token's expiry and only the license columns the policy judges (its core
 * fields and HMAC) with its row id, no product. Each column and join is D1's work at every beat: in a Worker with no
 * logic, this read costs about 0.08 ms of CPU less than the whole row with its product (docs/performance.md). The
 * benchmark's heartbeat floor runs this very statement (bench/floor-statements.mjs, held equal by a test).
 */
export const seatToBeat = checkable((db, p: Params<{ digest: string; kind: number }>, checked) =>
  db
    .select({
      token: { expireDate: tokenExpiry, machineId: tokenMachine, clientId: tokenClient },
      license: judgedLicenseColumns,
      checked: sql<number>`${checked}`,
    })
    .from(licenseTokens)
    .innerJoin(licenses, eq(licenses.id, licenseTokens.licenseId))
    .where(byDigest(p))
    .limit(1),
);

/** What a seat token's row must hold for the token to be the one the service issued for it. */
interface SeatBinding {
  token: { machineId: string | null; clientId: string | null };
  license: { id: number; licenseId: string };
}

/**
 * The floating token's row and its license, by the token alone (heartbeat and release carry no user key). No token,
 * or one no row has, is 525 `License token not found` (CONTRACT section 4's table: a missing token is not found, as
 * an unknown one). A seat token is the HMAC of its license, machine and client (client-tokens.ts), so a row whose
 * license, machine, client or kind no longer gives the token it was found by was changed outside the API (moved to
 * another license or machine): 535 `The license token has been tampered`, before anything is done with it.
 */
async function findSeatToken<R extends SeatBinding>(
  ctx: ServiceContext,
  licenseToken: string | undefined,
  query: CheckableQuery<{ digest: string; kind: number }, R[]>,
): Promise<R & { digest: string }> {
  const token = licenseToken?.trim() ?? "";
  if (token === "") throw fail(GrpcCode.NotFound, Messages.tokenNotFound);
  const digest = await sha256Hex(token);
  const [rows] = await batchReads(ctx.db, [query.with({ digest, kind: TokenKind.Floating })]);
  const row = rows[0];
  if (!row) throw fail(GrpcCode.NotFound, Messages.tokenNotFound);
  const { machineId, clientId } = row.token;
  const issued = await clientToken(ctx.config, TokenKind.Floating, row.license.id, machineId ?? "", clientId ?? "");
  if (!timingSafeEqualText(issued, token)) throw fail(GrpcCode.DataLoss, Messages.tokenTampered);
  requireOwnLicense(ctx, row.license);
  return { ...row, digest };
}

export interface HeartbeatResult {
  tokenExpireAt: string;
  heartbeatInterval: number;
  activeClientCount: number;
  maxClientCount: number;
}

/**
 * Keeps a seat alive. The hot path: one D1 read (token and license) and one Durable Object call; the token row's
 * expiry in D1 is written behind, only when it would lapse within half a lease.
 */
export async function heartbeat(ctx: ServiceContext, input: HeartbeatInput): Promise<HeartbeatResult> {
  const { digest, token, license } = await findSeatToken(ctx, input.licenseToken, seatToBeat);
  const at = now();
  await requireUsable(ctx.config, license, at);
  const lease = leaseMs(ctx.config);
  const beat = withinBudget(await seats(ctx, license.id).heartbeat(digest, lease, at.getTime(), licenseBudget(ctx)));
  if (!beat.found) throw fail(GrpcCode.NotFound, Messages.tokenNotFound);
  if (beat.expired) throw fail(GrpcCode.PermissionDenied, Messages.tokenExpired);
  const expireAt = new Date(beat.expiresAt).toISOString();
  if (!token.expireDate || Date.parse(token.expireDate) - at.getTime() < lease / 2) {
    // A heartbeat is a check-in (CONTRACT 11); counted as rarely as the row is written behind, gathered with traces.
    recordCheckIn(ctx, license.id, at.toISOString());
    ctx.waitUntil(
      ctx.db
        .update(licenseTokens)
        .set({ expireDate: expireAt, lastHeartbeat: at.toISOString(), updatedAt: at.toISOString() })
        .where(eq(licenseTokens.tokenDigest, digest))
        .run(),
    );
  }
  return {
    tokenExpireAt: expireAt,
    heartbeatInterval: Math.round(ctx.config["Licensing:HeartbeatInterval"] / 1000),
    activeClientCount: beat.active,
    maxClientCount: license.maxClients,
  };
}

/** Frees a floating seat; 525 for a token that holds none. */
export async function releaseSeat(ctx: ServiceContext, input: ReleaseInput, client: ClientInfo): Promise<CountResult> {
  const found = await findSeatToken(ctx, input.licenseToken, seatTokenByDigest);
  const { digest, token } = found;
  const license = { ...found.license, productCode: found.productCode };
  if (input.userKey?.trim() && !keyNames(await typedKey(input.userKey), license))
    throw fail(GrpcCode.NotFound, Messages.tokenNotFound);
  const at = now();
  await requireUsable(ctx.config, license, at);
  const released = withinBudget(await seats(ctx, license.id).release(digest, at.getTime(), licenseBudget(ctx)));
  await ctx.db.delete(licenseTokens).where(eq(licenseTokens.tokenDigest, digest));
  if (!released.released) throw fail(GrpcCode.NotFound, Messages.tokenNotFound);
  trace(ctx, license, TraceAction.Release, client, { machineId: token.machineId, clientId: token.clientId });
  void emitClientEvent(ctx, "license.seat.released", license, {
    machineId: token.machineId,
    clientId: token.clientId,
    clientName: token.clientName,
  });
  return { licenseId: license.licenseId, activeClientCount: released.active, maxClientCount: license.maxClients };
}
