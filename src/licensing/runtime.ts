/**
 * The licensing operations of protected applications (CONTRACT section 4), free of HTTP: REST (/v1/license/...) and
 * gRPC (LicenseServer) both call these. Every operation finds the license by its user key and refuses it in one
 * order: not found (525) -> tampered (535) -> revoked (527) -> expired (527) -> wrong product (527); then the
 * mode-specific rules. Errors are LicensingError (HTTP 520 + gRPC code, SPEC's messages).
 *
 * Client tokens are derived, not stored: an HMAC (keyed from Application:EncryptionKey) of the kind, license,
 * machine and client. So a repeated activation or seat request returns the same token while D1 keeps only its
 * digest, and the unique digest index makes activation idempotent under concurrency.
 */
import { and, eq, gt, isNull, or, sql } from "drizzle-orm";
import type { BatchItem, BatchResponse } from "drizzle-orm/batch";
import type { Role } from "../app-env";
import { issueToken } from "../auth/bearer";
import { BASE62, sha256Hex } from "../auth/crypto";
import { deriveKey, requireEncryptionKey } from "../auth/secrets";
import { clock } from "../clock";
import type { Config } from "../config";
import type { Db } from "../db/client";
import { licenseTokens, licenses, products } from "../db/schema";
import type { SeatGrant } from "../durable/license-seats";
import type { ServiceContext } from "../http/context";
import { ApiError, GrpcCode, LicensingError } from "../http/errors";
import { signJws } from "../updates/signing-keys";
import { emitClientEvent } from "../webhooks/license-events";
import { type LicenseRow, activeClientCounts, clientCount } from "./licenses";
import { type LicenseRefusal, judgeLicense } from "./policy";
import { activationStatement, tokenPrefix } from "./tokens";
import { spendLicenseBudget } from "./license-limit";
import { recordTrace } from "./traces";
import { LICENSE_TYPES, LICENSING_MODES, type LicenseStatus, Mode, TOKEN_PREFIXES, TokenKind, TraceAction } from "./vocabulary";

/** Who is asking, as the transport saw it. */
export interface ClientInfo {
  address: string;
  /** `request.cf` geodata as JSON (country, region, city, latitude, longitude, timezone), when known. */
  geoLocation?: string | undefined;
}

/** What an application knows of its license (CONTRACT section 4 `license`). */
export interface LicenseView {
  licenseId: string;
  licensingMode: number | string;
  licenseType: number | string;
  edition?: string | undefined;
  issueDate: string;
  expireAt?: string | undefined;
  supportExpireAt?: string | undefined;
  features: string[];
  licensee: { name?: string | undefined; email?: string | undefined; company?: string | undefined };
  /** A compact JWS (ES256) that verifies offline against GET /v1/extensions/keys; only where it proves a usable license. */
  licenseKey?: string;
}

export const Messages = {
  invalidKey: "Invalid license key",
  machineRequired: "The machine code is required for license activation",
  clientRequired: "The client id is required for a floating license",
  keyNotFound: "License key not found",
  tokenNotFound: "License token not found",
  alreadyActivated: "The license has already been activated",
  revoked: "The license has been revoked",
  expired: "The license has expired",
  tokenExpired: "The license token has expired",
  wrongProduct: "The license is not valid for this product",
  exhausted: "The maximum number of concurrent users for the license has been reached",
  notActivated: "The license has not been activated",
  notFloating: "The license is not a floating license",
  noActivation: "The license does not require activation",
  tampered: "The license has been tampered",
  tokenTampered: "The license token has been tampered",
} as const;

/**
 * The machine-readable reason of each message (LicensingError.reason): stable names an application can switch on,
 * whatever the wording of the message.
 */
export const Reasons: Record<keyof typeof Messages, string> = {
  invalidKey: "invalidUserKey",
  machineRequired: "machineIdRequired",
  clientRequired: "clientIdRequired",
  keyNotFound: "licenseNotFound",
  tokenNotFound: "licenseTokenNotFound",
  alreadyActivated: "alreadyActivated",
  revoked: "licenseRevoked",
  expired: "licenseExpired",
  tokenExpired: "licenseTokenExpired",
  wrongProduct: "wrongProduct",
  exhausted: "seatsExhausted",
  notActivated: "notActivated",
  notFloating: "notFloating",
  noActivation: "activationNotRequired",
  tampered: "licenseTampered",
  tokenTampered: "licenseTokenTampered",
};
const reasonOfMessage = new Map(Object.entries(Messages).map(([name, message]) => [message as string, Reasons[name as keyof typeof Messages]]));

const fail = (code: GrpcCode, message: string) => new LicensingError(code, message, reasonOfMessage.get(message));

export { TraceAction };

type LicenseWithProduct = LicenseRow & { productCode: string };

// ---------------------------------------------------------------------------------------------------------------
// Finding and checking a license

/** A user key as the operations take it: trimmed; 523 when it is empty or too long to be one. */
function userKeyOf(userKey: string | undefined): string {
  const key = userKey?.trim() ?? "";
  if (key === "" || key.length > 128) throw fail(GrpcCode.InvalidArgument, Messages.invalidKey);
  return key;
}

/** The license with this user key and its product's code, unexecuted (operations batch it with other reads). */
function licenseByUserKey(db: Db, key: string) {
  return db.select({ license: licenses, productCode: products.code }).from(licenses).innerJoin(products, eq(products.id, licenses.productId)).where(eq(licenses.userKey, key)).limit(1);
}

function foundLicense(row: { license: LicenseRow; productCode: string } | undefined): LicenseWithProduct {
  if (!row) throw fail(GrpcCode.NotFound, Messages.keyNotFound);
  return { ...row.license, productCode: row.productCode };
}

/** The license a user key names, with its product's code; 523 for a malformed key, 525 for an unknown one. */
export async function findByUserKey(db: Db, userKey: string | undefined): Promise<LicenseWithProduct> {
  const [row] = await licenseByUserKey(db, userKeyOf(userKey));
  return foundLicense(row);
}

/**
 * An operation's first D1 round trip: its reads in one batch, together with the caller's bearer-token logout check
 * when the route deferred it (auth/guard.ts DeferredLogoutCheck), which is settled (401 for a logged-out token)
 * before anything read is used. So validate and heartbeat cost one round trip with a bearer token as with a key.
 */
async function firstReads<const Q extends readonly [BatchItem<"sqlite">, ...BatchItem<"sqlite">[]]>(ctx: ServiceContext, queries: Q): Promise<BatchResponse<Q>> {
  const check = ctx.logoutCheck && !ctx.logoutCheck.settled ? ctx.logoutCheck : undefined;
  if (!check) return (queries.length === 1 ? [await queries[0]] : await ctx.db.batch(queries)) as BatchResponse<Q>;
  const [loggedOut, ...rows] = await ctx.db.batch([check.query(ctx.db), ...queries]);
  check.settle(loggedOut);
  return rows as unknown as BatchResponse<Q>;
}

/** findByUserKey as an operation's first read (with the deferred logout check). */
async function findLicense(ctx: ServiceContext, userKey: string | undefined): Promise<LicenseWithProduct> {
  const key = userKeyOf(userKey);
  const [rows] = await firstReads(ctx, [licenseByUserKey(ctx.db, key)]);
  return foundLicense(rows[0]);
}

/** The licensing operations' answer to each refusal of the license policy (CONTRACT section 4's table). */
const REFUSAL_ERRORS: Record<LicenseRefusal, () => LicensingError> = {
  notFound: () => fail(GrpcCode.NotFound, Messages.keyNotFound),
  tampered: () => fail(GrpcCode.DataLoss, Messages.tampered),
  revoked: () => fail(GrpcCode.PermissionDenied, Messages.revoked),
  expired: () => fail(GrpcCode.PermissionDenied, Messages.expired),
  wrongProduct: () => fail(GrpcCode.PermissionDenied, Messages.wrongProduct),
};

/** Asks the license policy (licensing/policy.ts) and throws its refusal as the licensing error (52x). */
export async function requireUsable(config: Config, license: LicenseWithProduct, now: Date, productCode?: string): Promise<void> {
  const verdict = await judgeLicense(config["Application:EncryptionKey"], license, now, { productCode });
  if (!verdict.usable) throw REFUSAL_ERRORS[verdict.refusal]();
}

/** A license-bound bearer token may act only for its own license. */
function requireOwnLicense(ctx: ServiceContext, license: LicenseRow): void {
  const bound = ctx.principal?.licenseId;
  if (bound !== undefined && bound !== license.licenseId) throw fail(GrpcCode.PermissionDenied, Messages.wrongProduct);
}

async function openLicense(ctx: ServiceContext, userKey: string | undefined, productCode?: string): Promise<LicenseWithProduct> {
  const license = await findLicense(ctx, userKey);
  requireOwnLicense(ctx, license);
  await requireUsable(ctx.config, license, now(), productCode);
  return license;
}

const now = (): Date => clock.now();

function required(value: string | undefined | null, message: string): string {
  const v = value?.trim() ?? "";
  if (v === "") throw fail(GrpcCode.InvalidArgument, message);
  return v;
}

// ---------------------------------------------------------------------------------------------------------------
// Tokens, license view, traces

/**
 * What a client token's HMAC covers, one text per (kind, license, machine, client). Ids without a line feed keep the
 * original `kind\nlicense\nmachine\nclient` form (exactly three line feeds, so it reads back one way), which keeps
 * the tokens of existing activations; an id holding a line feed would make that form ambiguous (machine `a\nb` with
 * client `c` against machine `a` with client `b\nc`), so such ids are written as a JSON array, which never starts
 * with a digit as the original form does.
 */
function clientTokenInput(kind: TokenKind, licenseRowId: number, machineId: string, clientId: string): string {
  if (!machineId.includes("\n") && !clientId.includes("\n")) return `${kind}\n${licenseRowId}\n${machineId}\n${clientId}`;
  return JSON.stringify([kind, licenseRowId, machineId, clientId]);
}

/** The token of a (license, machine, client) for a kind: derived, so a repeat request gets the same token. */
export async function clientToken(config: Config, kind: TokenKind, licenseRowId: number, machineId: string, clientId: string): Promise<string> {
  const key = await deriveKey(
    requireEncryptionKey(config["Application:EncryptionKey"], "client tokens"),
    "licensing/client-token/v1",
    { name: "HMAC", hash: "SHA-256", length: 256 },
    ["sign"],
  );
  const mac = new Uint8Array(await crypto.subtle.sign("HMAC", key, new TextEncoder().encode(clientTokenInput(kind, licenseRowId, machineId, clientId))));
  const body = [...mac.slice(0, 24)].map((b) => BASE62[b % 62]).join("");
  return `${TOKEN_PREFIXES[kind]}${body}`;
}

function enumOut(names: readonly string[], value: number, config: Config): number | string {
  return config["Application:SerializeJSonEnumAsString"] ? (names[value] ?? value) : value;
}

/**
 * What a license key proves, when the caller may have one (CONTRACT section 4): the license is usable on this
 * machine. `proven` is set only where it is: File mode always, Activation mode for a machine holding a live
 * activation, Floating mode for the machine/client holding a live seat (`until`: the activation's or seat's end).
 */
export interface KeyProof {
  status: LicenseStatus;
  machineId?: string | undefined;
  clientId?: string | undefined;
  nonce?: string | undefined;
  /** The activation's or seat's own end (ms since the epoch); the key expires no later. */
  until?: number | undefined;
}

/** Seconds since the epoch, rounded down, so `exp` never outlives what it stands for. */
const seconds = (ms: number): number => Math.floor(ms / 1000);

/**
 * The `license` object of licensing answers; with a signed license key only when `proof` says the license is usable
 * on the caller's machine. The key's `exp` is no later than the key lifetime, the license's expiry and the
 * activation's or seat's end; it names the mode, status, machine (and client), and the request's nonce.
 */
export async function licenseView(ctx: ServiceContext, license: LicenseWithProduct, proof?: KeyProof): Promise<LicenseView> {
  let licenseKey: string | undefined;
  if (proof) {
    const issuedAt = seconds(now().getTime());
    const ends = [issuedAt + seconds(ctx.config["Licensing:LicenseKeyLifetime"])];
    if (license.expireDate) ends.push(seconds(Date.parse(license.expireDate)));
    if (proof.until !== undefined) ends.push(seconds(proof.until));
    const payload = {
      licenseId: license.licenseId,
      productCode: license.productCode,
      licensingMode: LICENSING_MODES[license.licensingMode] ?? String(license.licensingMode),
      licenseType: LICENSE_TYPES[license.licenseType] ?? String(license.licenseType),
      edition: license.edition,
      features: license.features ?? [],
      status: proof.status,
      expireAt: license.expireDate,
      supportExpireAt: license.supportExpireDate,
      machineId: proof.machineId ?? null,
      clientId: proof.clientId ?? null,
      ...(proof.nonce !== undefined ? { nonce: proof.nonce } : {}),
      iat: issuedAt,
      exp: Math.min(...ends),
    };
    licenseKey = await signJws(ctx.db, ctx.config, payload);
  }
  return {
    licenseId: license.licenseId,
    licensingMode: enumOut(LICENSING_MODES, license.licensingMode, ctx.config),
    licenseType: enumOut(LICENSE_TYPES, license.licenseType, ctx.config),
    edition: license.edition ?? undefined,
    issueDate: license.issueDate,
    expireAt: license.expireDate ?? undefined,
    supportExpireAt: license.supportExpireDate ?? undefined,
    features: license.features ?? [],
    licensee: { name: license.licenseeName ?? undefined, email: license.licenseeEmail ?? undefined, company: license.licenseeCompany ?? undefined },
    ...(licenseKey !== undefined ? { licenseKey } : {}),
  };
}

/** Writes a trace when the license traces (CONTRACT section 3). */
function trace(ctx: ServiceContext, license: LicenseRow, action: number, client: ClientInfo, who: { machineId?: string | null; clientId?: string | null; clientName?: string | null }): void {
  if (license.trace) recordTrace(ctx, { licenseId: license.id, action, address: client.address, geoLocation: client.geoLocation, ...who }, now().toISOString());
}

/** activeClientCounts (licenses.ts) of one license as raw SQL, for a D1 batch with raw statements: `?1` id, `?2` now. */
const ACTIVE_CLIENTS_SQL = `SELECT count(*) AS tokens, count(DISTINCT machine_id) AS machines FROM license_tokens
  WHERE license_id = ?1 AND (expire_date IS NULL OR expire_date > ?2)`;

async function activeClients(db: Db, license: LicenseRow): Promise<number> {
  const counts = await activeClientCounts(db, [license.id], now());
  return clientCount(license.licensingMode, counts.get(license.id));
}

// ---------------------------------------------------------------------------------------------------------------
// Activation mode

export interface ActivateInput {
  userKey?: string;
  machineId?: string;
  clientId?: string;
  clientName?: string;
  productCode?: string;
  version?: string;
  nonce?: string;
}

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
  const stamp = at.toISOString();
  const insert = await activationStatement(
    ctx.db,
    token,
    { licenseId: license.id, machineId, clientId, clientName: input.clientName ?? null, address: client.address, expireDate: "license" },
    at,
  );
  // The count of machines after the insert, in the same round trip (a batch runs its statements in order).
  const counted = ctx.db.$client.prepare(ACTIVE_CLIENTS_SQL).bind(license.id, stamp);
  const [inserted, counts] = await ctx.db.$client.batch<Record<string, unknown>>([insert, counted]);
  const row = inserted?.results[0] as { created_at: string; updated_at: string; expire_date: string | null } | undefined;
  if (!row) throw fail(GrpcCode.AlreadyExists, Messages.alreadyActivated);
  const newMachine = row.created_at === row.updated_at;
  trace(ctx, license, TraceAction.Activate, client, { machineId, clientId, clientName: input.clientName ?? null });
  if (newMachine) void emitClientEvent(ctx, "license.activated", license, { machineId, clientId, clientName: input.clientName ?? null });
  const active = clientCount(license.licensingMode, counts?.results[0] as { tokens: number; machines: number } | undefined);
  const view = await licenseView(ctx, license, {
    status: "Activated",
    machineId,
    ...(clientId ? { clientId } : {}),
    nonce: input.nonce,
    ...(row.expire_date ? { until: Date.parse(row.expire_date) } : {}),
  });
  return {
    licenseToken: token,
    ...(row.expire_date ? { tokenExpireAt: row.expire_date } : {}),
    activeClientCount: active,
    maxClientCount: license.maxClients,
    license: view,
    newMachine,
  };
}

export interface DeactivateInput {
  userKey?: string;
  machineId?: string;
  clientId?: string;
  licenseToken?: string;
}

export interface CountResult {
  licenseId: string;
  activeClientCount: number;
  maxClientCount: number;
}

/** Frees a machine's activation (by its token, or by machine and client). */
export async function deactivate(ctx: ServiceContext, input: DeactivateInput, client: ClientInfo): Promise<CountResult> {
  const license = await openLicense(ctx, input.userKey);
  const machineId = required(input.machineId, Messages.machineRequired);
  const byToken = input.licenseToken?.trim();
  const where = byToken
    ? and(eq(licenseTokens.licenseId, license.id), eq(licenseTokens.tokenDigest, await sha256Hex(byToken)))
    : and(
        eq(licenseTokens.licenseId, license.id),
        eq(licenseTokens.kind, TokenKind.Activation),
        eq(licenseTokens.machineId, machineId),
        input.clientId !== undefined ? eq(licenseTokens.clientId, input.clientId) : undefined,
      );
  const removed = await ctx.db.delete(licenseTokens).where(where).returning({ id: licenseTokens.id });
  if (removed.length === 0) throw byToken ? fail(GrpcCode.NotFound, Messages.tokenNotFound) : fail(GrpcCode.FailedPrecondition, Messages.notActivated);
  trace(ctx, license, TraceAction.Deactivate, client, { machineId, clientId: input.clientId ?? null });
  void emitClientEvent(ctx, "license.deactivated", license, { machineId, clientId: input.clientId ?? null });
  return { licenseId: license.licenseId, activeClientCount: await activeClients(ctx.db, license), maxClientCount: license.maxClients };
}

// ---------------------------------------------------------------------------------------------------------------
// Validation

export interface ValidateInput {
  userKey?: string;
  machineId?: string;
  clientId?: string;
  licenseToken?: string;
  productCode?: string;
  version?: string;
  nonce?: string;
}

export interface ValidateResult {
  licenseId: string;
  status: LicenseStatus;
  license: LicenseView;
  licenseToken?: string;
  tokenExpireAt?: string;
  serverTime: string;
  nonce?: string;
}

/**
 * Validates a license for a client. Answers only for a usable license: Activated, or NotActivated when no machine
 * was named or the license is File mode; a named machine without an activation is 529.
 */
export async function validate(ctx: ServiceContext, input: ValidateInput, client: ClientInfo): Promise<ValidateResult> {
  const key = userKeyOf(input.userKey);
  const machineId = input.machineId?.trim() || undefined;
  const clientId = input.clientId?.trim() ?? "";
  const givenToken = input.licenseToken?.trim() || undefined;
  const named = machineId !== undefined || (input.licenseToken ?? "") !== "";
  const at = now();
  // One D1 round trip: the license and, when the client names a machine or a token, the live tokens that can be
  // the activation it names (which one it is needs the license's id: liveActivation decides).
  const candidatesQuery = named ? activationCandidates(ctx.db, key, givenToken ? await sha256Hex(givenToken) : undefined, machineId ?? "", clientId, at) : undefined;
  const [licenseRows, candidates] = candidatesQuery
    ? await firstReads(ctx, [licenseByUserKey(ctx.db, key), candidatesQuery])
    : [(await firstReads(ctx, [licenseByUserKey(ctx.db, key)]))[0], []];
  const license = foundLicense(licenseRows[0]);
  requireOwnLicense(ctx, license);
  await requireUsable(ctx.config, license, now(), input.productCode);
  // The live token the client names, and the machine and client it belongs to (what the license key will name).
  let token: { value: string; expireAt?: string; until?: number; machineId?: string; clientId?: string } | undefined;
  if (license.licensingMode === Mode.Activation && named) {
    token = await liveActivation(ctx, license, machineId, clientId, givenToken, candidates);
  } else if (license.licensingMode === Mode.Floating && (input.licenseToken || (machineId && clientId))) {
    const value = input.licenseToken?.trim() || (await clientToken(ctx.config, TokenKind.Floating, license.id, machineId ?? "", clientId));
    const seat = await seats(ctx, license.id).seat(await sha256Hex(value), at.getTime());
    // A seat held by another machine is not this machine's: as for an activation, it is not found.
    if (seat.live && (machineId === undefined || seat.machineId === machineId)) {
      token = { value, expireAt: new Date(seat.expiresAt!).toISOString(), until: seat.expiresAt!, machineId: seat.machineId, clientId: seat.clientId };
    }
  }
  if (license.licensingMode !== Mode.File && named && !token) throw fail(GrpcCode.FailedPrecondition, Messages.notActivated);
  trace(ctx, license, TraceAction.Validate, client, { machineId: machineId ?? null, clientId: clientId || null });
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
  };
}

/**
 * The live tokens of the license with this user key that can be the activation a validate names, unexecuted: it is
 * batched with the license's read, before the license's id is known. A given token is found by its digest. A
 * derived token depends on the license's id, so the query takes the live tokens of the named machine and client,
 * among which the derived token's row is when it exists (activate stores it with exactly these values), and
 * liveActivation picks it by digest.
 */
function activationCandidates(db: Db, key: string, givenDigest: string | undefined, machineId: string, clientId: string, at: Date) {
  return db
    .select({ licenseId: licenseTokens.licenseId, tokenDigest: licenseTokens.tokenDigest, expireDate: licenseTokens.expireDate, machineId: licenseTokens.machineId })
    .from(licenseTokens)
    .where(
      and(
        sql`${licenseTokens.licenseId} = (SELECT ${licenses.id} FROM ${licenses} WHERE ${licenses.userKey} = ${key})`,
        givenDigest !== undefined ? eq(licenseTokens.tokenDigest, givenDigest) : and(eq(licenseTokens.machineId, machineId), eq(licenseTokens.clientId, clientId)),
        or(isNull(licenseTokens.expireDate), gt(licenseTokens.expireDate, at.toISOString())),
      ),
    );
}

/** The activation a validate names, among the candidates read with the license (activationCandidates). */
async function liveActivation(
  ctx: ServiceContext,
  license: LicenseRow,
  machineId: string | undefined,
  clientId: string,
  givenToken: string | undefined,
  candidates: readonly { licenseId: number; tokenDigest: string; expireDate: string | null; machineId: string | null }[],
): Promise<{ value: string; expireAt?: string; machineId?: string } | undefined> {
  const value = givenToken ?? (await clientToken(ctx.config, TokenKind.Activation, license.id, machineId ?? "", clientId));
  const digest = await sha256Hex(value);
  const row = candidates.find((t) => t.licenseId === license.id && t.tokenDigest === digest);
  if (!row || (machineId !== undefined && row.machineId !== machineId)) return undefined;
  return { value, ...(row.expireDate ? { expireAt: row.expireDate } : {}), ...(row.machineId ? { machineId: row.machineId } : {}) };
}

// ---------------------------------------------------------------------------------------------------------------
// Floating mode

function seats(ctx: ServiceContext, licenseRowId: number) {
  return ctx.env.LICENSE_SEATS.getByName(String(licenseRowId));
}

/** A seat lives twice the heartbeat interval plus 30 s after its last heartbeat (CONTRACT section 4). */
export function leaseMs(config: Config): number {
  return 2 * config["Licensing:HeartbeatInterval"] + 30_000;
}

export interface RequestInput {
  userKey?: string;
  machineId?: string;
  clientId?: string;
  clientName?: string;
}

export interface RequestResult extends Omit<ActivateResult, "newMachine"> {
  heartbeatInterval: number;
  tokenExpireAt: string;
  /** A seat the client did not already hold (for the license.seat.requested event). */
  newSeat: boolean;
}

/** Grants a floating seat, or returns the seat this machine and client already hold; 528 when all are taken. */
export async function requestSeat(ctx: ServiceContext, input: RequestInput, client: ClientInfo): Promise<RequestResult> {
  const license = await openLicense(ctx, input.userKey);
  if (license.licensingMode !== Mode.Floating) throw fail(GrpcCode.FailedPrecondition, Messages.notFloating);
  await spendLicenseBudget(ctx, license.id);
  const machineId = required(input.machineId, Messages.machineRequired);
  const clientId = required(input.clientId, Messages.clientRequired);
  const token = await clientToken(ctx.config, TokenKind.Floating, license.id, machineId, clientId);
  const digest = await sha256Hex(token);
  const at = now();
  const grant: SeatGrant = await seats(ctx, license.id).request({
    tokenDigest: digest,
    tokenPrefix: tokenPrefix(token),
    machineId,
    clientId,
    clientName: input.clientName ?? null,
    address: client.address,
    maxClients: license.maxClients,
    leaseMs: leaseMs(ctx.config),
    now: at.getTime(),
  });
  if (!grant.granted) throw fail(GrpcCode.ResourceExhausted, Messages.exhausted);
  const expireAt = new Date(grant.expiresAt).toISOString();
  await ctx.db.$client
    .prepare(
      `INSERT INTO license_tokens
         (token_digest, token_prefix, kind, license_id, machine_id, client_id, client_name, address, issue_date, expire_date, last_heartbeat, created_at, updated_at)
       VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?9, ?9, ?9)
       ON CONFLICT (token_digest) DO UPDATE SET expire_date = excluded.expire_date, last_heartbeat = excluded.last_heartbeat,
         client_name = coalesce(excluded.client_name, client_name), address = excluded.address, updated_at = excluded.updated_at`,
    )
    .bind(digest, tokenPrefix(token), TokenKind.Floating, license.id, machineId, clientId, input.clientName ?? null, client.address, at.toISOString(), expireAt)
    .run();
  trace(ctx, license, TraceAction.Request, client, { machineId, clientId, clientName: input.clientName ?? null });
  if (!grant.renewed) void emitClientEvent(ctx, "license.seat.requested", license, { machineId, clientId, clientName: input.clientName ?? null });
  return {
    licenseToken: token,
    tokenExpireAt: expireAt,
    heartbeatInterval: Math.round(ctx.config["Licensing:HeartbeatInterval"] / 1000),
    activeClientCount: grant.active,
    maxClientCount: license.maxClients,
    license: await licenseView(ctx, license, { status: "Activated", machineId, clientId, until: grant.expiresAt }),
    newSeat: !grant.renewed,
  };
}

/** The floating token's row and its license, by the token alone (heartbeat and release carry no user key). */
async function findSeatToken(ctx: ServiceContext, licenseToken: string | undefined) {
  const token = required(licenseToken, Messages.tokenNotFound);
  const digest = await sha256Hex(token);
  // The token's columns are aliased: a D1 batch keys each row by column name, and the license's id, license_id,
  // issue_date, expire_date and created_at would otherwise overwrite the token's.
  const [rows] = await firstReads(ctx, [
    ctx.db
      .select({
        token: {
          expireDate: sql<string | null>`${licenseTokens.expireDate}`.as("token_expire_date"),
          machineId: sql<string | null>`${licenseTokens.machineId}`.as("token_machine_id"),
          clientId: sql<string | null>`${licenseTokens.clientId}`.as("token_client_id"),
          clientName: sql<string | null>`${licenseTokens.clientName}`.as("token_client_name"),
        },
        license: licenses,
        productCode: products.code,
      })
      .from(licenseTokens)
      .innerJoin(licenses, eq(licenses.id, licenseTokens.licenseId))
      .innerJoin(products, eq(products.id, licenses.productId))
      .where(and(eq(licenseTokens.tokenDigest, digest), eq(licenseTokens.kind, TokenKind.Floating)))
      .limit(1),
  ]);
  const row = rows[0];
  if (!row) throw fail(GrpcCode.NotFound, Messages.tokenNotFound);
  const license = { ...row.license, productCode: row.productCode };
  requireOwnLicense(ctx, license);
  return { digest, token: row.token, license };
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
export async function heartbeat(ctx: ServiceContext, input: { licenseToken?: string }): Promise<HeartbeatResult> {
  const { digest, token, license } = await findSeatToken(ctx, input.licenseToken);
  const at = now();
  await Promise.all([requireUsable(ctx.config, license, at), spendLicenseBudget(ctx, license.id)]);
  const lease = leaseMs(ctx.config);
  const beat = await seats(ctx, license.id).heartbeat(digest, lease, at.getTime());
  if (!beat.found) throw fail(GrpcCode.NotFound, Messages.tokenNotFound);
  if (beat.expired) throw fail(GrpcCode.PermissionDenied, Messages.tokenExpired);
  const expireAt = new Date(beat.expiresAt).toISOString();
  if (!token.expireDate || Date.parse(token.expireDate) - at.getTime() < lease / 2) {
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
export async function releaseSeat(ctx: ServiceContext, input: { licenseToken?: string; userKey?: string }, client: ClientInfo): Promise<CountResult> {
  const { digest, token, license } = await findSeatToken(ctx, input.licenseToken);
  if (input.userKey && input.userKey.trim() !== license.userKey) throw fail(GrpcCode.NotFound, Messages.tokenNotFound);
  await spendLicenseBudget(ctx, license.id);
  const at = now();
  await requireUsable(ctx.config, license, at);
  const released = await seats(ctx, license.id).release(digest, at.getTime());
  await ctx.db.delete(licenseTokens).where(eq(licenseTokens.tokenDigest, digest));
  if (!released.released) throw fail(GrpcCode.NotFound, Messages.tokenNotFound);
  trace(ctx, license, TraceAction.Release, client, { machineId: token.machineId, clientId: token.clientId });
  void emitClientEvent(ctx, "license.seat.released", license, { machineId: token.machineId, clientId: token.clientId, clientName: token.clientName });
  return { licenseId: license.licenseId, activeClientCount: released.active, maxClientCount: license.maxClients };
}


// ---------------------------------------------------------------------------------------------------------------
// Sign-in with a user key

export const INVALID_USER_KEY = "Invalid user key.";

/**
 * Signs an application in with its user key (CONTRACT section 4): a bearer token whose subject is the license
 * (role Application, claim `lic`). Only a key that names no license answers 401 `Invalid user key.`: a revoked,
 * expired or tampered license signs in, so the application learns why from its licensing calls (527, 535).
 */
export async function signInWithUserKey(ctx: ServiceContext, userKey: string): Promise<{ token: string; expiresIn: number; roles: Role[] }> {
  let license: LicenseWithProduct;
  try {
    license = await findByUserKey(ctx.db, userKey);
  } catch (e) {
    if (e instanceof LicensingError) throw new ApiError(401, INVALID_USER_KEY);
    throw e;
  }
  // A revoked or expired license's key signs nothing in, and counts as a failed attempt like an unknown key.
  if (license.revoked || (license.expireDate !== null && license.expireDate <= clock.now().toISOString())) throw new ApiError(401, INVALID_USER_KEY);
  const roles: Role[] = ["Application"];
  const issued = await issueToken(ctx.config, { subject: license.licenseId, name: license.licenseId, roles, licenseId: license.licenseId });
  return { ...issued, roles };
}
