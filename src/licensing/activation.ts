/** Activation mode (CONTRACT section 4): activate and deactivate a machine. Free of HTTP: REST and gRPC call these. */
import { and, desc, eq, gt, isNull } from "drizzle-orm";
import { sha256Hex } from "../kernel/crypto";
import { licenseFiles, licenseTokens } from "../db/schema";
import type { ServiceContext } from "../http/context";
import { GrpcCode } from "../kernel/errors";
import { isManager } from "../auth/guard";
import { emitClientEvent } from "./license-events";
import { activeClientCountsQuery, clientCount } from "./license-core";
import { activationInsert } from "./tokens";
import { Mode, TokenKind, TraceAction } from "../records/vocabulary";
import type { ClientInfo } from "../http/context";
import { type LicenseView, licenseView, trace, activeClients } from "./license-view";
import { Messages, fail, openLicense, now, required } from "./license-lookup";
import { clientToken, refuseTamperedToken } from "./client-tokens";
import { seats } from "./license-limit";
import type { ActivateInput, DeactivateInput } from "./inputs";

export interface ActivateResult {
  licenseToken: string;
  tokenExpireAt?: string | undefined;
  activeClientCount: number;
  maxClientCount: number;
  license: LicenseView;
  /** A machine that was not activated before (for the license.activated event). */
  newMachine: boolean;
}

/**
 * Activates a machine: idempotent per (license, machine, client), counting distinct machines against maxClients.
 * The limit check, the insert and the refresh of an existing activation are one statement, so two concurrent
 * activations can never exceed the limit.
 */
export async function activate(ctx: ServiceContext, input: ActivateInput, client: ClientInfo): Promise<ActivateResult> {
  const license = await openLicense(ctx, input.userKey, input.productCode);
  if (license.licensingMode !== Mode.Activation) throw fail(GrpcCode.FailedPrecondition, Messages.noActivation);
  const machineId = required(input.machineId, Messages.machineRequired);
  const clientId = input.clientId?.trim() ?? "";
  const token = await clientToken(ctx.config, TokenKind.Activation, license.id, machineId, clientId);
  const at = now();
  const insert = activationInsert(
    ctx.db,
    token,
    await sha256Hex(token),
    {
      licenseId: license.id,
      machineId,
      clientId,
      clientName: input.clientName ?? null,
      address: client.address,
      expireDate: "license",
    },
    at,
  );
  // The count of machines after the insert, in the same round trip (a batch runs its statements in order).
  const [inserted, counts] = await ctx.db.batch([insert, activeClientCountsQuery(ctx.db, [license.id], at)]);
  const row = inserted[0];
  if (!row) throw fail(GrpcCode.AlreadyExists, Messages.alreadyActivated);
  const newMachine = row.createdAt === row.updatedAt;
  trace(ctx, license, TraceAction.Activate, client, { machineId, clientId, clientName: input.clientName ?? null });
  if (newMachine)
    void emitClientEvent(ctx, "license.activated", license, {
      machineId,
      clientId,
      clientName: input.clientName ?? null,
    });
  const active = clientCount(license.licensingMode, counts[0]);
  const view = await licenseView(ctx, license, {
    status: "Activated",
    machineId,
    ...(clientId ? { clientId } : {}),
    nonce: input.nonce,
    ...(row.expireDate ? { until: Date.parse(row.expireDate) } : {}),
  });
  return {
    licenseToken: token,
    ...(row.expireDate ? { tokenExpireAt: row.expireDate } : {}),
    activeClientCount: active,
    maxClientCount: license.maxClients,
    license: view,
    newMachine,
  };
}

export interface CountResult {
  licenseId: string;
  activeClientCount: number;
  maxClientCount: number;
}

/** Frees a machine's activation (by its token, or by machine and client). */
/** The header a refusal to free a machine that holds a license file names the file's end with (ISO 8601). */
export const LICENSE_FILE_UNTIL_HEADER = "X-License-File-Until";

/**
 * A machine that holds an unexpired license file keeps running offline until the file ends, whatever the server
 * says: freeing its activation would let the license run on one more machine than it allows (activate, check out,
 * deactivate, repeat). It is refused, 529 `licenseFileHeld`, with the date the file ends.
 */
async function refuseIfFileHeld(ctx: ServiceContext, licenseRowId: number, machineId: string): Promise<void> {
  const held = await ctx.db
    .select({ until: licenseFiles.expiresAt })
    .from(licenseFiles)
    .where(
      and(
        eq(licenseFiles.licenseId, licenseRowId),
        eq(licenseFiles.machineId, machineId),
        isNull(licenseFiles.borrowUntil),
        gt(licenseFiles.expiresAt, now().toISOString()),
      ),
    )
    .orderBy(desc(licenseFiles.expiresAt))
    .limit(1)
    .get();
  if (held) throw fail(GrpcCode.FailedPrecondition, Messages.fileHeld, { [LICENSE_FILE_UNTIL_HEADER]: held.until });
}

/** A calendar month (UTC) as the deactivation counter keys it, and when the next one starts. */
export function monthOf(now: Date): { month: string; resetsAt: string } {
  const next = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1));
  return { month: now.toISOString().slice(0, 7), resetsAt: next.toISOString() };
}

/** The header a refusal of the monthly deactivation limit names its reset with (ISO 8601, UTC). */
export const DEACTIVATIONS_RESET_HEADER = "X-Deactivations-Reset";

/**
 * Counts a deactivation against Licensing:MaxDeactivationsPerMonth in the license's Durable Object, whoever asks
 * for the licensee: the application (REST, gRPC) and the customer portal alike. Staff who manage licenses
 * (Administrator, LicenseManager) are not limited. Over the limit: 528 `deactivationLimit` with the reset date; else
 * the way to take the count back when nothing was freed (undefined when nothing was counted).
 */
async function countDeactivation(
  ctx: ServiceContext,
  licenseRowId: number,
): Promise<(() => Promise<void>) | undefined> {
  const limit = ctx.config["Licensing:MaxDeactivationsPerMonth"];
  if (limit === 0 || isManager(ctx.principal)) return undefined;
  const at = now();
  const { month, resetsAt } = monthOf(at);
  const counter = seats(ctx, licenseRowId);
  if (!(await counter.countDeactivation(month, limit)).allowed)
    throw fail(GrpcCode.ResourceExhausted, Messages.deactivationLimit, {
      [DEACTIVATIONS_RESET_HEADER]: resetsAt,
      "Retry-After": String(Math.max(1, Math.ceil((Date.parse(resetsAt) - at.getTime()) / 1000))),
    });
  return () => counter.uncountDeactivation(month);
}

export async function deactivate(
  ctx: ServiceContext,
  input: DeactivateInput,
  client: ClientInfo,
): Promise<CountResult> {
  const license = await openLicense(ctx, input.userKey);
  const machineId = required(input.machineId, Messages.machineRequired);
  const byToken = input.licenseToken?.trim();
  await refuseIfFileHeld(ctx, license.id, machineId);
  const uncount = await countDeactivation(ctx, license.id);
  const where = byToken
    ? and(eq(licenseTokens.licenseId, license.id), eq(licenseTokens.tokenDigest, await sha256Hex(byToken)))
    : and(
        eq(licenseTokens.licenseId, license.id),
        eq(licenseTokens.kind, TokenKind.Activation),
        eq(licenseTokens.machineId, machineId),
        input.clientId !== undefined ? eq(licenseTokens.clientId, input.clientId) : undefined,
      );
  const removed = await ctx.db.delete(licenseTokens).where(where).returning({ id: licenseTokens.id });
  if (removed.length === 0) {
    // Nothing was freed: the deactivation is not counted.
    await uncount?.();
    if (byToken) await refuseTamperedToken(ctx.config, license.id, machineId, input.clientId ?? "", byToken);
    throw byToken
      ? fail(GrpcCode.NotFound, Messages.tokenNotFound)
      : fail(GrpcCode.FailedPrecondition, Messages.notActivated);
  }
  trace(ctx, license, TraceAction.Deactivate, client, { machineId, clientId: input.clientId ?? null });
  void emitClientEvent(ctx, "license.deactivated", license, { machineId, clientId: input.clientId ?? null });
  return {
    licenseId: license.licenseId,
    activeClientCount: await activeClients(ctx.db, license),
    maxClientCount: license.maxClients,
  };
}
