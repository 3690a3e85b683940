/**
 * License tokens: every token (`/v1/license-tokens`) and a license's own (`/v1/licenses/{licenseId}/tokens`).
 * POST issues an activation token by hand (offline activation) within the license's `maxClients`; the full token
 * is returned only then, lists show its prefix. Issuing lives in licensing/tokens.ts.
 */
import { z } from "@hono/zod-openapi";
import { eq } from "drizzle-orm";
import { Roles } from "../../auth/guard";
import { clock } from "../../kernel/clock";
import type { Config } from "../../kernel/config";
import type { Db } from "../../db/client";
import type { Row } from "../../http/repository";
import { licenseTokens, licenses } from "../../db/schema";
import type { ServiceContext } from "../../http/context";
import { crud } from "../crud";
import { ApiError, notFound400 } from "../../kernel/errors";
import type { ListParam } from "../../http/list";
import type { Router } from "../../http/router";
import { type LicenseRefusal, judgeLicense } from "../../licensing/policy";
import { dropSeats, issueActivationToken, LicenseToken } from "../../licensing/tokens";
import { Mode, TokenKind } from "../../records/vocabulary";
import { License, showPublicLicenseIds } from "../../licensing/license-records";

const TOKEN_LIST_PARAMS: readonly ListParam[] = ["select", "filter", "sort", "take", "skip", "countOnly"];

/** List `decorate`: the masked token and the license's lic… id. */
async function showTokens(items: Row[], rows: Row[], context: { db: Db; config: Config }): Promise<void> {
  items.forEach((item, i) => (item["token"] = rows[i]?.["tokenPrefix"]));
  await showPublicLicenseIds(items, rows, context);
}

/** The Management API's words for each refusal of the license policy (licensing/policy.ts). */
const REFUSALS: Record<Exclude<LicenseRefusal, "notFound" | "wrongProduct">, (licenseId: string) => string> = {
  tampered: (id) => `License ${id} has been tampered with: its core fields were changed outside the API`,
  revoked: (id) => `License ${id} is revoked`,
  expired: (id) => `License ${id} has expired`,
};

/**
 * Only a license the policy finds usable, in Activation mode, gets a token by hand: File licenses need
 * no activation and Floating clients hold seats instead. The license's lic… id and limit ride along for messages.
 */
async function checkTokenRequest(ctx: ServiceContext, values: Row): Promise<Row> {
  const now = clock.now();
  const license = await ctx.db
    .select()
    .from(licenses)
    .where(eq(licenses.id, values["licenseId"] as number))
    .get();
  const verdict = await judgeLicense(ctx.config["Application:EncryptionKey"], license, now);
  if (!verdict.usable) {
    // No product is expected here, so a wrong product cannot happen; not found is the path's 400.
    if (!license || verdict.refusal === "notFound" || verdict.refusal === "wrongProduct")
      throw notFound400(License.name, values["licenseId"] as number);
    throw new ApiError(400, REFUSALS[verdict.refusal](license.licenseId));
  }
  const usable = verdict.license;
  if (usable.licensingMode === Mode.File)
    throw new ApiError(400, `License ${usable.licenseId} is a File license: it needs no activation`);
  if (usable.licensingMode === Mode.Floating) {
    throw new ApiError(
      400,
      `License ${usable.licenseId} is a Floating license: its clients hold seats (/v1/license/request), not activation tokens`,
    );
  }
  if (typeof values["expireDate"] === "string" && values["expireDate"] <= now.toISOString())
    throw new ApiError(400, "expireDate must be in the future");
  return { ...values, licensePublicId: usable.licenseId, licenseMaxClients: usable.maxClients };
}

/** The conditional insert; 400 when the license's clients are at its limit. */
async function issueToken(ctx: ServiceContext, values: Row): Promise<Row> {
  const issued = await issueActivationToken(
    ctx.db,
    {
      licenseId: values["licenseId"] as number,
      machineId: values["machineId"] as string,
      clientId: values["clientId"] as string | null | undefined,
      clientName: values["clientName"] as string | null | undefined,
      expireDate: values["expireDate"] as string | null | undefined,
    },
    clock.now(),
  );
  if (!issued) {
    throw new ApiError(
      400,
      `License ${String(values["licensePublicId"])} has reached its limit of ${String(values["licenseMaxClients"])} clients (machines holding a live token)`,
    );
  }
  return { ...issued.row, token: issued.token };
}

export function registerLicenseTokens(app: Router): void {
  const all = Roles.management;
  const roles = { list: all, create: all, update: all, delete: all };
  const list = { decorate: showTokens };
  crud(app, {
    entity: LicenseToken,
    path: "/v1/license-tokens",
    tag: "License tokens",
    operationIds: { list: "listLicenseTokens" },
    label: "license token",
    operations: ["list"],
    roles,
    listParams: TOKEN_LIST_PARAMS,
    list,
  });
  crud(app, {
    entity: LicenseToken,
    path: "/v1/licenses/{licenseId}/tokens",
    tag: "Licenses",
    operationIds: { list: "listTokensOfLicense", create: "issueLicenseToken", delete: "deleteLicenseToken" },
    label: "license token",
    operations: ["list", "create", "delete"],
    roles,
    idParam: "tokenId",
    scope: { param: "licenseId", parent: License, column: licenseTokens.licenseId },
    listParams: TOKEN_LIST_PARAMS,
    list,
    descriptions: {
      create:
        "Issues an activation token by hand (offline activation) for an Activation-mode license, counted against maxClients " +
        "(distinct machines holding a live token; 0 = unlimited). The full token is in this answer only.",
    },
    createdShape: { token: z.string().openapi({ description: "The full token (actk_…), shown only here." }) },
    hooks: {
      create: checkTokenRequest,
      insert: issueToken,
      created: (_ctx, row) => ({ token: row["token"] }),
      // A floating token holds a seat in the license's Durable Object: free it with the row.
      delete: async (ctx, existing) => {
        if (existing["kind"] === TokenKind.Floating)
          await dropSeats(ctx.env, existing["licenseId"] as number, [existing["tokenDigest"] as string]);
      },
    },
  });
}
