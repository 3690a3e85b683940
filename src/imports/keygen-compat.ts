/**
 * Keygen-compatible answers (CONTRACT 16), for applications built against Keygen whose vendor pointed their domain
 * at this service: validate-key, machine activation and deactivation, in Keygen's documented shapes and codes, on the
 * service's own licensing operations (licensing/validation.ts, activation.ts), so limits, webhooks, traces and the
 * audit trail follow as for any client. Off unless Compat:Keygen:Account names the account the applications use.
 * Free of HTTP: each answer is a status and a JSON:API body.
 *
 * A license and a machine are named by their Keygen ids when they were imported from Keygen (their source ids), else
 * by the service's own (`lic…`, a new machine's UUID). Keygen signs its answers with the account's key; this service
 * cannot (docs/migrating.md says what an application that verifies them needs).
 */
import { and, eq, sql } from "drizzle-orm";
import { licenseTokens, products } from "../db/schema";
import type { ClientInfo, ServiceContext } from "../http/context";
import { clock } from "../kernel/clock";
import type { Config } from "../kernel/config";
import { sha256Hex } from "../kernel/crypto";
import { LicensingError } from "../kernel/errors";
import { activate, deactivate } from "../licensing/activation";
import type { LicenseRow } from "../licensing/license-core";
import { type LicenseWithProduct, Reasons, findByUserKey } from "../licensing/license-lookup";
import { validate } from "../licensing/validation";
import { Mode, TokenKind } from "../records/vocabulary";

/** A Keygen answer: its status and JSON:API body. */
export interface KeygenAnswer {
  status: number;
  body: unknown;
}

const KEYGEN = "keygen:";

/** Keygen's error document. */
const failure = (status: number, title: string, detail: string, code?: string, pointer?: string): KeygenAnswer => ({
  status,
  body: { errors: [{ title, detail, ...(code ? { code } : {}), ...(pointer ? { source: { pointer } } : {}) }] },
});

/** Whether the account in the path is the one Compat:Keygen:Account names (its id or slug); 404 otherwise. */
export function keygenAccount(config: Config, account: string): KeygenAnswer | undefined {
  const names = (config["Compat:Keygen:Account"] ?? "").split(",").map((name) => name.trim());
  if (account !== "" && names.includes(account)) return undefined;
  return failure(404, "Not found", `The requested account '${account}' was not found`, "NOT_FOUND");
}

/** The id a Keygen application knows a record by: its Keygen id when imported from Keygen, else the service's. */
const keygenId = (sourceId: string | null, own: string) => (sourceId?.startsWith(KEYGEN) ? sourceId.slice(7) : own);

/** The license's machines (live activations) and whether one of them is the fingerprint. */
async function machinesOf(ctx: ServiceContext, licenseRowId: number, fingerprint: string | undefined) {
  const t = licenseTokens;
  const row = await ctx.db
    .select({
      count: sql<number>`count(DISTINCT ${t.machineId})`,
      matched: sql<number>`coalesce(max(${t.machineId} = ${fingerprint ?? null}), 0)`,
    })
    .from(t)
    .where(
      and(
        eq(t.licenseId, licenseRowId),
        eq(t.kind, TokenKind.Activation),
        sql`(${t.expireDate} IS NULL OR ${t.expireDate} > ${clock.now().toISOString()})`,
      ),
    )
    .get();
  return { count: Number(row?.count ?? 0), matched: Boolean(row?.matched) };
}

/** The license as Keygen's license resource. */
function licenseResource(account: string, license: LicenseRow, key: string, productId: string, machines: number) {
  const id = keygenId(license.sourceId, license.licenseId);
  const now = clock.now().toISOString();
  const expired = license.expireDate !== null && license.expireDate <= now;
  const floating = license.licensingMode === Mode.Floating || license.maxClients !== 1;
  const base = `/v1/accounts/${account}`;
  return {
    id,
    type: "licenses",
    attributes: {
      name: null,
      key,
      expiry: license.expireDate,
      status: license.revoked ? "SUSPENDED" : expired ? "EXPIRED" : "ACTIVE",
      uses: 0,
      suspended: license.revoked,
      scheme: null,
      encrypted: false,
      strict: false,
      floating,
      protected: true,
      version: null,
      maxMachines: license.licensingMode === Mode.Floating || license.maxClients === 0 ? null : license.maxClients,
      maxProcesses: license.licensingMode === Mode.Floating ? license.maxClients || null : null,
      maxCores: null,
      maxUses: null,
      requireHeartbeat: false,
      requireCheckIn: license.checkInDays > 0,
      lastValidated: now,
      lastCheckIn: license.lastCheckIn,
      nextCheckIn: null,
      metadata: {},
      created: license.createdAt,
      updated: license.updatedAt,
    },
    relationships: {
      account: { links: { related: base }, data: { type: "accounts", id: account } },
      product: { links: { related: `${base}/licenses/${id}/product` }, data: { type: "products", id: productId } },
      machines: { links: { related: `${base}/licenses/${id}/machines` }, meta: { count: machines } },
    },
    links: { self: `${base}/licenses/${id}` },
  };
}

/** The id Keygen's application knows the license's product by. */
async function productIdOf(ctx: ServiceContext, productRowId: number): Promise<string> {
  const product = await ctx.db
    .select({ code: products.code, sourceId: products.sourceId })
    .from(products)
    .where(eq(products.id, productRowId))
    .get();
  return product ? keygenId(product.sourceId, product.code) : String(productRowId);
}

/** The licensing refusals validate-key answers in Keygen's words; any other refusal is thrown on. */
const VALIDATION_CODES: Record<string, [string, string]> = {
  [Reasons.keyNotFound]: ["NOT_FOUND", "does not exist"],
  [Reasons.revoked]: ["SUSPENDED", "is suspended"],
  [Reasons.tampered]: ["SUSPENDED", "is suspended"],
  [Reasons.expired]: ["EXPIRED", "is expired"],
  [Reasons.invalidKey]: ["NOT_FOUND", "does not exist"],
  [Reasons.wrongProduct]: ["PRODUCT_SCOPE_MISMATCH", "product scope does not match"],
};

export interface ValidateKeyBody {
  meta?: { key?: unknown; scope?: { fingerprint?: unknown; product?: unknown } };
}

/**
 * `POST /v1/accounts/{account}/licenses/actions/validate-key`: the license a key names, judged by the service's
 * validate (its trace and limits), then by Keygen's scopes: the product, the fingerprint among its machines, and its
 * machine limit. Answers 200 with `meta: { valid, code, detail }` and the license (null when none).
 */
export async function validateKey(
  ctx: ServiceContext,
  account: string,
  body: ValidateKeyBody,
  client: ClientInfo,
): Promise<KeygenAnswer> {
  const key = body.meta?.key;
  if (typeof key !== "string" || key.trim() === "")
    return failure(400, "Bad request", "is missing", "KEY_BLANK", "/meta/key");
  const scope = body.meta?.scope ?? {};
  const fingerprint = typeof scope.fingerprint === "string" ? scope.fingerprint : undefined;
  const meta = (valid: boolean, code: string, detail: string) => ({
    ts: clock.now().toISOString(),
    valid,
    detail,
    code,
    ...(Object.keys(scope).length > 0 ? { scope } : {}),
  });
  let license: LicenseWithProduct;
  try {
    license = await findByUserKey(ctx.db, key);
  } catch {
    return { status: 200, body: { meta: meta(false, "NOT_FOUND", "does not exist"), data: null } };
  }
  const productId = await productIdOf(ctx, license.productId);
  const machines = await machinesOf(ctx, license.id, fingerprint);
  const data = licenseResource(account, license, key, productId, machines.count);
  const answer = (valid: boolean, code: string, detail: string): KeygenAnswer => ({
    status: 200,
    body: { meta: meta(valid, code, detail), data },
  });
  // Keygen's order: the license's own state (suspended, expired) before any scope.
  try {
    await validate(ctx, { userKey: key, productCode: license.productCode }, client);
  } catch (e) {
    const known = e instanceof LicensingError && e.reason ? VALIDATION_CODES[e.reason] : undefined;
    if (!known) throw e;
    return answer(false, known[0], known[1]);
  }
  if (typeof scope.product === "string" && scope.product !== productId && scope.product !== license.productCode)
    return answer(false, "PRODUCT_SCOPE_MISMATCH", "product scope does not match");
  const nodeLocked = license.licensingMode === Mode.Activation && license.maxClients === 1;
  if (fingerprint !== undefined && machines.count === 0)
    return nodeLocked
      ? answer(false, "NO_MACHINE", "fingerprint is not activated (has no associated machine)")
      : answer(false, "NO_MACHINES", "fingerprint is not activated (has no associated machines)");
  if (fingerprint !== undefined && !machines.matched)
    return answer(
      false,
      "FINGERPRINT_SCOPE_MISMATCH",
      "fingerprint is not activated (does not match any associated machines)",
    );
  if (license.maxClients > 0 && license.licensingMode === Mode.Activation && machines.count > license.maxClients)
    return answer(false, "TOO_MANY_MACHINES", "has too many associated machines");
  return answer(true, "VALID", "is valid");
}

/** The key of `Authorization: License <key>`, or Keygen's 401. */
function licenseKeyOf(authorization: string | undefined): string | KeygenAnswer {
  const match = /^License\s+(.+)$/i.exec(authorization?.trim() ?? "");
  if (!match) return failure(401, "Unauthorized", "You must be authenticated to complete the request", "TOKEN_MISSING");
  return match[1]!.trim();
}

/**
 * The licensing refusals of a machine request in Keygen's words: the key's (401, 403), and any other the service's
 * operation answers (a license file the machine still holds, …) as Keygen's 422 with the service's reason as its code.
 */
function authFailure(e: unknown): KeygenAnswer | undefined {
  if (!(e instanceof LicensingError)) return undefined;
  if (e.reason === Reasons.revoked || e.reason === Reasons.tampered)
    return failure(403, "Forbidden", "License is suspended", "LICENSE_SUSPENDED");
  if (e.reason === Reasons.expired) return failure(403, "Forbidden", "License is expired", "LICENSE_EXPIRED");
  if (e.reason === Reasons.keyNotFound || e.reason === Reasons.invalidKey)
    return failure(401, "Unauthorized", "License key is invalid", "LICENSE_INVALID");
  const code = (e.reason ?? "licensingRefused").replace(/([a-z])([A-Z])/g, "$1_$2").toUpperCase();
  return failure(422, "Unprocessable resource", e.message, code);
}

/** The license a machine request's key names, or Keygen's refusal of the key. */
async function licenseOfKey(ctx: ServiceContext, key: string): Promise<LicenseWithProduct | KeygenAnswer> {
  try {
    return await findByUserKey(ctx.db, key);
  } catch (e) {
    const refused = authFailure(e);
    if (refused) return refused;
    throw e;
  }
}

export interface MachineBody {
  data?: {
    type?: unknown;
    attributes?: { fingerprint?: unknown; name?: unknown; platform?: unknown; hostname?: unknown };
    relationships?: { license?: { data?: { type?: unknown; id?: unknown } } };
  };
}

/**
 * `POST /v1/accounts/{account}/machines` with `Authorization: License <key>`: activates the fingerprint on the key's
 * license through the service's activate (its machine limit, webhook and trace), and names the machine with a new
 * UUID the application can delete it by. 201 with Keygen's machine resource.
 */
export async function activateMachine(
  ctx: ServiceContext,
  account: string,
  authorization: string | undefined,
  body: MachineBody,
  client: ClientInfo,
): Promise<KeygenAnswer> {
  const key = licenseKeyOf(authorization);
  if (typeof key !== "string") return key;
  const attributes = body.data?.attributes ?? {};
  const fingerprint = typeof attributes.fingerprint === "string" ? attributes.fingerprint.trim() : "";
  if (body.data?.type !== "machines" && body.data?.type !== "machine")
    return failure(400, "Bad request", "type mismatch (expected machines)", "TYPE_MISMATCH", "/data/type");
  if (fingerprint === "" || fingerprint.length > 256)
    return failure(
      422,
      "Unprocessable resource",
      "cannot be blank",
      "FINGERPRINT_BLANK",
      "/data/attributes/fingerprint",
    );
  const name = typeof attributes.name === "string" ? attributes.name.slice(0, 256) : undefined;
  const license = await licenseOfKey(ctx, key);
  if ("status" in license) return license;
  const named = body.data?.relationships?.license?.data?.id;
  if (named !== keygenId(license.sourceId, license.licenseId) && named !== license.licenseId)
    return failure(403, "Access denied", "You do not have permission to complete the request", "LICENSE_NOT_ALLOWED");
  if (license.licensingMode !== Mode.Activation)
    return failure(
      422,
      "Unprocessable resource",
      "machine activation is not available for this license",
      "MACHINE_NOT_SUPPORTED",
    );
  let result: Awaited<ReturnType<typeof activate>>;
  try {
    result = await activate(
      ctx,
      { userKey: key, machineId: fingerprint, ...(name ? { clientName: name } : {}) },
      client,
    );
  } catch (e) {
    // At its limit, activate refuses a new machine as "already activated" (SPEC's message).
    if (e instanceof LicensingError && (e.reason === Reasons.alreadyActivated || e.reason === Reasons.exhausted))
      return failure(
        422,
        "Unprocessable resource",
        `machine count has exceeded maximum allowed for license (${license.maxClients})`,
        "MACHINE_LIMIT_EXCEEDED",
        "/data",
      );
    const refused = authFailure(e);
    if (refused) return refused;
    throw e;
  }
  if (!result.newMachine)
    return failure(
      422,
      "Unprocessable resource",
      "has already been taken",
      "FINGERPRINT_TAKEN",
      "/data/attributes/fingerprint",
    );
  const id = crypto.randomUUID();
  const digest = await sha256Hex(result.licenseToken);
  const stamp = clock.now().toISOString();
  await ctx.db
    .update(licenseTokens)
    .set({ sourceId: `${KEYGEN}${id}` })
    .where(and(eq(licenseTokens.licenseId, license.id), eq(licenseTokens.tokenDigest, digest)));
  const licenseId = keygenId(license.sourceId, license.licenseId);
  const base = `/v1/accounts/${account}`;
  return {
    status: 201,
    body: {
      data: {
        id,
        type: "machines",
        attributes: {
          fingerprint,
          cores: null,
          ip: client.address ?? null,
          hostname: typeof attributes.hostname === "string" ? attributes.hostname : null,
          platform: typeof attributes.platform === "string" ? attributes.platform : null,
          name: name ?? null,
          requireHeartbeat: false,
          heartbeatStatus: "NOT_STARTED",
          heartbeatDuration: null,
          lastHeartbeat: null,
          metadata: {},
          created: stamp,
          updated: stamp,
        },
        relationships: {
          account: { links: { related: base }, data: { type: "accounts", id: account } },
          product: { data: { type: "products", id: await productIdOf(ctx, license.productId) } },
          license: { links: { related: `${base}/machines/${id}/license` }, data: { type: "licenses", id: licenseId } },
        },
        links: { self: `${base}/machines/${id}` },
      },
    },
  };
}

/**
 * `DELETE /v1/accounts/{account}/machines/{id}` with `Authorization: License <key>`: deactivates a machine of the
 * key's license, named by its Keygen id (an imported machine's, or the one activateMachine gave), through the
 * service's deactivate (its monthly limit, webhook and trace). 204; 404 for a machine the license does not hold.
 */
export async function deactivateMachine(
  ctx: ServiceContext,
  authorization: string | undefined,
  machineId: string,
  client: ClientInfo,
): Promise<KeygenAnswer> {
  const key = licenseKeyOf(authorization);
  if (typeof key !== "string") return key;
  const license = await licenseOfKey(ctx, key);
  if ("status" in license) return license;
  const notFound = failure(404, "Not found", `The requested machine '${machineId}' was not found`, "NOT_FOUND");
  const token = await ctx.db
    .select({ machineId: licenseTokens.machineId })
    .from(licenseTokens)
    .where(
      and(
        eq(licenseTokens.licenseId, license.id),
        eq(licenseTokens.sourceId, `${KEYGEN}${machineId}`),
        eq(licenseTokens.kind, TokenKind.Activation),
      ),
    )
    .get();
  if (!token?.machineId) return notFound;
  try {
    await deactivate(ctx, { userKey: key, machineId: token.machineId }, client);
  } catch (e) {
    if (e instanceof LicensingError && e.reason === Reasons.deactivationLimit)
      return failure(
        422,
        "Unprocessable resource",
        "machine deactivation limit reached for this month",
        "MACHINE_DEACTIVATION_LIMIT",
      );
    if (e instanceof LicensingError && e.reason === Reasons.notActivated) return notFound;
    const refused = authFailure(e);
    if (refused) return refused;
    throw e;
  }
  return { status: 204, body: null };
}
