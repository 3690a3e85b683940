/**
 * A license's files (CONTRACT section 11): `GET /v1/licenses/{licenseId}/files` lists the license files checked out
 * and the seats borrowed (with whether each borrow is still held), and
 * `POST /v1/licenses/{licenseId}/files/{fileId}/return` returns a borrowed seat early (the console's Return). The
 * files are made by licensing/license-file.ts; this module only shows them.
 */
import { type RouteHandler, createRoute, z } from "@hono/zod-openapi";
import { access, Roles } from "../../auth/guard";
import { clock } from "../../kernel/clock";
import type { Config } from "../../kernel/config";
import { licenseFiles } from "../../db/schema";
import type { Db } from "../../db/client";
import { serviceContext } from "../../http/context";
import { enveloped, errorResponses, int32PathParam, json } from "../../http/openapi";
import type { Row } from "../../http/repository";
import { resolveId } from "../../http/repository";
import { ok } from "../../http/respond";
import type { AppEnv } from "../../http/app-env";
import type { Router } from "../../http/router";
import { LicenseFile } from "../../licensing/license-file";
import { License, showPublicLicenseIds } from "../../licensing/license-records";
import { heldBorrows, returnBorrowed } from "../../licensing/offline";
import { crud, idParamSchema } from "../crud";

/** List `decorate`: whether each borrow is still held, and the license's lic… id. */
async function showFiles(items: Row[], rows: Row[], context: { db: Db; config: Config }): Promise<void> {
  const held = await heldBorrows(context.db, rows as unknown as Parameters<typeof heldBorrows>[1], clock.now());
  items.forEach((item, i) => (item["borrowed"] = held.has(rows[i]?.["id"] as number)));
  await showPublicLicenseIds(items, rows, context);
}

const all = Roles.management;

const returnBorrowedSeatRoute = createRoute({
  method: "post",
  path: "/v1/licenses/{licenseId}/files/{fileId}/return",
  tags: ["Licenses"],
  operationId: "returnBorrowedSeat",
  summary: "Return a borrowed floating seat early (frees the seat; license.seat.released)",
  description:
    "The borrow's license file stays valid offline until its expiresAt (it cannot be recalled); the seat is free " +
    "for another client at once. 400 when the file is not a borrow that is still held.",
  ...access.key(all),
  request: {
    params: z.object({ licenseId: idParamSchema(License, "licenseId"), fileId: int32PathParam("fileId") }),
  },
  responses: { 200: json(enveloped({ returned: z.literal(true) }), "The seat was freed"), ...errorResponses },
});

const returnBorrowedSeat: RouteHandler<typeof returnBorrowedSeatRoute, AppEnv> = async (c) => {
  const ctx = serviceContext(c);
  const { licenseId, fileId } = c.req.valid("param");
  const licenseRowId = Number(await resolveId(ctx.db, License, licenseId));
  await returnBorrowed(ctx, licenseRowId, fileId);
  return ok(c, { returned: true as const });
};

export function registerLicenseFiles(app: Router): void {
  crud(app, {
    entity: LicenseFile,
    path: "/v1/licenses/{licenseId}/files",
    tag: "Licenses",
    operationIds: { list: "listFilesOfLicense" },
    label: "license file",
    operations: ["list"],
    roles: { list: all, create: all, update: all, delete: all },
    idParam: "fileId",
    scope: { param: "licenseId", parent: License, column: licenseFiles.licenseId },
    list: { decorate: showFiles },
  });
  app.openapi(returnBorrowedSeatRoute, returnBorrowedSeat);
}
