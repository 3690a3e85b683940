/** Validation (CONTRACT section 4): is this license, and this machine's activation, good now? Free of HTTP. */
import { eq, sql } from "drizzle-orm";
import { sha256Hex } from "../kernel/crypto";
import { type Params, checkable } from "../db/compiled";
import { tokenIsLive } from "../db/rules";
import { licenseTokens, licenses, products } from "../db/schema";
import type { ServiceContext } from "../http/context";
import { GrpcCode } from "../kernel/errors";
import { type ViewedLicense, viewedLicenseColumns } from "./license-core";
import { type LicenseStatus, Mode, TokenKind, TraceAction } from "../records/vocabulary";
import type { ClientInfo } from "../http/context";
import { react } from "./reactions";
import { isReleaseVersion } from "../records/versions";
import { type LicenseView, licenseView, trace } from "./license-view";
import { Messages, fail, userKeyOf, foundLicense, requireUsable, requireOwnLicense, now } from "./license-lookup";
import { batchReads } from "../db/compiled";
import { clientToken, refuseTamperedToken } from "./client-tokens";
import { userKeyIs } from "./user-key";
import { seats } from "./license-limit";
import type { ValidateInput } from "./inputs";

export interface ValidateResult {
  licenseId: string;
  status: LicenseStatus;
  license: LicenseView;
  licenseToken?: string;
  tokenExpireAt?: string;
  serverTime: string;
  nonce?: string;
  /** Licensing:OfflineGraceDays (CONTRACT 11); the license key's payload carries it signed. */
  offlineGraceDays: number;
}

/**
 * Validates a license for a client. Answers only for a usable license: Activated, or NotActivated when no machine
 * was named or the license is File mode; a named machine without an activation is 529.
 */
export async function validate(ctx: ServiceContext, input: ValidateInput, client: ClientInfo): Promise<ValidateResult> {
  const key = await userKeyOf(input.userKey);
  const machineId = input.machineId?.trim() || undefined;
  const clientId = input.clientId?.trim() ?? "";
  const givenToken = input.licenseToken?.trim() || undefined;
  const named = machineId !== undefined || (input.licenseToken ?? "") !== "";
  const at = now();
  // One D1 statement: the license and, when the client names a machine or a token, the live tokens that can be
  // the activation it names (which one it is needs the license's id: liveActivation decides).
  const [rows] = await batchReads(ctx.db, [
    licenseToValidate.with({
      key: key.compact,
      legacy: key.legacy,
      named: named ? 1 : 0,
      digest: givenToken ? await sha256Hex(givenToken) : null,
      machineId: machineId ?? "",
      clientId,
      at: at.toISOString(),
    }),
  ]);
  const candidates = rows[0]?.candidates ?? [];
  const license = foundLicense(rows[0]);
  requireOwnLicense(ctx, license);
  await requireUsable(ctx.config, license, now(), input.productCode);
  // The live token the client names, and the machine and client it belongs to (what the license key will name).
  let token: { value: string; expireAt?: string; until?: number; machineId?: string; clientId?: string } | undefined;
  if (license.licensingMode === Mode.Activation && named) {
    token = await liveActivation(ctx, license, machineId, clientId, givenToken, candidates);
    // A token the license holds for another machine is not this machine's (529); one it holds nowhere may be altered.
    if (!token && givenToken && machineId !== undefined) {
      const digest = await sha256Hex(givenToken);
      if (!candidates.some((t) => t.tokenDigest === digest))
        await refuseTamperedToken(ctx.config, license.id, machineId, clientId, givenToken);
    }
  } else if (license.licensingMode === Mode.Floating && (input.licenseToken || (machineId && clientId))) {
    const value =
      input.licenseToken?.trim() ||
      (await clientToken(ctx.config, TokenKind.Floating, license.id, machineId ?? "", clientId));
    const seat = await seats(ctx, license.id).seat(await sha256Hex(value), at.getTime());
    // A seat held by another machine is not this machine's: as for an activation, it is not found.
    if (seat.live && (machineId === undefined || seat.machineId === machineId)) {
      token = {
        value,
        expireAt: new Date(seat.expiresAt!).toISOString(),
        until: seat.expiresAt!,
        machineId: seat.machineId,
        clientId: seat.clientId,
      };
    }
  }
  if (license.licensingMode !== Mode.File && named && !token)
    throw fail(GrpcCode.FailedPrecondition, Messages.notActivated);
  trace(ctx, license, TraceAction.Validate, client, { machineId: machineId ?? null, clientId: clientId || null });
  // The install runs this version: release adoption hears of it (app/reactions.ts), off the request path.
  if (input.version !== undefined && isReleaseVersion(input.version))
    await react(ctx, "license.validated", {
      productId: license.productId,
      version: input.version,
      installId: client.installId,
      licenseId: license.id,
      machineId: machineId ?? null,
    });
  return {
    licenseId: license.licenseId,
    status: token ? "Activated" : "NotActivated",
    // The key proves the license usable on this machine: File mode always, otherwise only with its live token.
    license: await licenseView(
      ctx,
      license,
      license.licensingMode === Mode.File || token
        ? {
            status: token ? "Activated" : "NotActivated",
            machineId: token?.machineId ?? machineId,
            ...((token?.clientId ?? clientId) ? { clientId: token?.clientId ?? clientId } : {}),
            nonce: input.nonce,
            until: token?.until ?? (token?.expireAt ? Date.parse(token.expireAt) : undefined),
          }
        : undefined,
    ),
    ...(token ? { licenseToken: token.value, ...(token.expireAt ? { tokenExpireAt: token.expireAt } : {}) } : {}),
    serverTime: at.toISOString(),
    ...(input.nonce !== undefined ? { nonce: input.nonce } : {}),
    offlineGraceDays: ctx.config["Licensing:OfflineGraceDays"],
  };
}

/** A live token of the license that can be the activation a validate names (see licenseToValidate). */
interface Candidate {
  licenseId: number;
  tokenDigest: string;
  expireDate: string | null;
  machineId: string | null;
}

/**
 * A validate's one read (and one statement, the bearer token's logout check included when it comes along): the
 * license with this user key, its product's code, and, when the client names a machine or a token, the live tokens
 * that can be the activation it names, as a JSON column. A given token is found by its digest. A derived token
 * depends on the license's id, so the read takes the live tokens of the named machine and client, among which the
 * derived token's row is when it exists (activate stores it with exactly these values), and liveActivation picks it
 * by digest.
 */
export const licenseToValidate = checkable(
  (
    db,
    p: Params<{
      key: string;
      legacy: string;
      named: number;
      digest: string | null;
      machineId: string;
      clientId: string;
      at: string;
    }>,
    checked,
  ) =>
    db
      .select({
        license: viewedLicenseColumns,
        productCode: products.code,
        checked: sql<number>`${checked}`,
        candidates: sql<
          Candidate[]
        >`(SELECT json_group_array(json_object('licenseId', ${licenseTokens.licenseId}, 'tokenDigest', ${licenseTokens.tokenDigest}, 'expireDate', ${licenseTokens.expireDate}, 'machineId', ${licenseTokens.machineId}))
          FROM ${licenseTokens}
          WHERE ${p.named} = 1 AND ${licenseTokens.licenseId} = ${licenses.id}
            AND ${tokenIsLive(p.at)}
            AND CASE WHEN ${p.digest} IS NOT NULL THEN ${licenseTokens.tokenDigest} = ${p.digest}
              ELSE ${licenseTokens.machineId} = ${p.machineId} AND ${licenseTokens.clientId} = ${p.clientId} END)`
          .mapWith((json: string) => JSON.parse(json) as Candidate[])
          .as("candidates"),
      })
      .from(licenses)
      .innerJoin(products, eq(products.id, licenses.productId))
      .where(userKeyIs(p.key, p.legacy))
      .limit(1),
);

/** The activation a validate names, among the candidates read with the license (activationCandidates). */
async function liveActivation(
  ctx: ServiceContext,
  license: ViewedLicense,
  machineId: string | undefined,
  clientId: string,
  givenToken: string | undefined,
  candidates: readonly Candidate[],
): Promise<{ value: string; expireAt?: string; machineId?: string } | undefined> {
  const value =
    givenToken ?? (await clientToken(ctx.config, TokenKind.Activation, license.id, machineId ?? "", clientId));
  const digest = await sha256Hex(value);
  const row = candidates.find((t) => t.licenseId === license.id && t.tokenDigest === digest);
  if (!row || (machineId !== undefined && row.machineId !== machineId)) return undefined;
  return {
    value,
    ...(row.expireDate ? { expireAt: row.expireDate } : {}),
    ...(row.machineId ? { machineId: row.machineId } : {}),
  };
}
