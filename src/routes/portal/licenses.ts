/**
 * The customer portal's license routes (CONTRACT section 12): the customer's licenses, one with its machines, seats
 * and deactivations, a machine's deactivation, the builds the license may download, the orders, and the licensee
 * name. Every one takes the portal session (session.ts); portal.ts registers them all, in order.
 */
import { type RouteHandler, createRoute, z } from "@hono/zod-openapi";
import type { AppEnv } from "../../http/app-env";
import { clientInfo, publicOrigin, serviceContext } from "../../http/context";
import { ApiError } from "../../kernel/errors";
import { Envelope, enveloped, int32, json, jsonBody } from "../../http/openapi";
import { ok } from "../../http/respond";
import { PLATFORMS, type Platform, mainFile } from "../../delivery/catalog";
import { feedRelease } from "../../delivery/selection";
import { DownloadInfo, downloadFor } from "../../delivery/update-check";
import { callerAndReleases } from "../../delivery/poll";
import { downloadUrlFor } from "../../delivery/download-info";
import { UPDATE_REASONS } from "../../delivery/reasons";
import { eq } from "drizzle-orm";
import { products } from "../../db/schema";
import { compactUserKey } from "../../licensing/user-key";
import { portalAccess } from "../../portal/portal-session";
import {
  DEACTIVATIONS_RESET_HEADER,
  changeLicenseeName,
  deactivateMachine,
  licenseDetail,
  listLicenses,
  listOrders,
  ownLicense,
} from "../../portal/portal-service";
import { TAG, portalErrors, scopeOf } from "./session";

// ---------------------------------------------------------------------------------------------------------------
// Shapes

const licenseShape = {
  licenseId: z.string(),
  userKey: z.string(),
  product: z.object({ code: z.string(), name: z.string() }),
  edition: z.string().nullable(),
  licenseType: z.string(),
  licensingMode: z.string(),
  maxClients: int32(0).openapi({ description: "0 = unlimited." }),
  activeClientCount: int32(0),
  issueDate: z.string(),
  expireDate: z.string().nullable(),
  expired: z.boolean(),
  supportExpireDate: z.string().nullable(),
  maintenanceUntil: z.string().openapi({ description: "End of maintenance (support date, else a year from issue)." }),
  licenseeName: z.string().nullable(),
  renewalUrl: z.string().nullable(),
  purchaseUrl: z.string().nullable(),
};
const PortalLicense = z.object(licenseShape).openapi("PortalLicense");

const PortalClient = z
  .object({
    machineId: z.string(),
    clientId: z.string().nullable(),
    clientName: z.string().nullable(),
    since: z.string(),
    lastSeenAt: z.string(),
    expiresAt: z.string().nullable(),
  })
  .openapi("PortalClient");

const Deactivations = z
  .object({
    used: int32(0),
    limit: int32(0).openapi({ description: "Licensing:MaxDeactivationsPerMonth; 0 = no limit." }),
    resetsAt: z.string().openapi({ description: "When the month's count starts again (ISO 8601, UTC)." }),
  })
  .openapi("PortalDeactivations");

const PortalLicenseDetail = z
  .object({
    ...licenseShape,
    machines: z.array(PortalClient).openapi({ description: "Activated machines (Activation licenses)." }),
    seats: z.array(PortalClient).openapi({ description: "Live floating seats (Floating licenses)." }),
    deactivations: Deactivations,
  })
  .openapi("PortalLicenseDetail");

const PortalDownload = z
  .object({
    platform: z.enum(PLATFORMS),
    version: z.string().optional(),
    download: DownloadInfo.optional(),
    unavailable: z.string().optional().openapi({ description: "Why no build is offered for the platform." }),
  })
  .openapi("PortalDownload");

const PortalOrder = z
  .object({
    orderNumber: z.string(),
    status: z.string(),
    paymentStatus: z.string(),
    total: z.number().nullable(),
    currency: z.string().nullable(),
    invoiceNumber: z.string().nullable(),
    paymentDate: z.string().nullable(),
    createdAt: z.string(),
    lines: z.array(
      z.object({
        product: z.object({ code: z.string(), name: z.string() }),
        quantity: int32(0),
        unitPrice: z.number().nullable(),
        description: z.string().nullable(),
      }),
    ),
  })
  .openapi("PortalOrder");

const LicenseIdParam = z
  .string()
  .min(1)
  .max(64)
  .openapi({ param: { name: "licenseId", in: "path" }, description: "The license's public id (lic…)." });
const MachineIdParam = z
  .string()
  .min(1)
  .max(256)
  .openapi({ param: { name: "machineId", in: "path" }, description: "The machine's id as the application sent it." });

// ---------------------------------------------------------------------------------------------------------------
// Routes

export const portalLicensesRoute = createRoute({
  method: "get",
  path: "/v1/portal/licenses",
  tags: [TAG],
  operationId: "portalLicenses",
  summary: "The customer's licenses (or the one license a key with no customer signed in with)",
  ...portalAccess(),
  responses: { 200: json(enveloped({ licenses: z.array(PortalLicense) }), "The licenses"), ...portalErrors },
});

export const portalLicensesHandler: RouteHandler<typeof portalLicensesRoute, AppEnv> = async (c) =>
  ok(c, { licenses: await listLicenses(serviceContext(c), scopeOf(c)) });

export const portalLicenseRoute = createRoute({
  method: "get",
  path: "/v1/portal/licenses/{licenseId}",
  tags: [TAG],
  operationId: "portalLicense",
  summary: "One of the customer's licenses with its machines, live floating seats and this month's deactivations",
  ...portalAccess(),
  request: { params: z.object({ licenseId: LicenseIdParam }) },
  responses: { 200: json(enveloped({ license: PortalLicenseDetail }), "The license"), ...portalErrors },
});

export const portalLicenseHandler: RouteHandler<typeof portalLicenseRoute, AppEnv> = async (c) =>
  ok(c, { license: await licenseDetail(serviceContext(c), scopeOf(c), c.req.valid("param").licenseId) });

export const portalDeactivateMachineRoute = createRoute({
  method: "post",
  path: "/v1/portal/licenses/{licenseId}/machines/{machineId}/deactivate",
  tags: [TAG],
  operationId: "portalDeactivateMachine",
  summary: "Frees a machine's activation (at most Licensing:MaxDeactivationsPerMonth per license and month)",
  ...portalAccess(),
  request: { params: z.object({ licenseId: LicenseIdParam, machineId: MachineIdParam }) },
  responses: {
    200: json(
      enveloped({
        licenseId: z.string(),
        machineId: z.string(),
        activeClientCount: int32(0),
        maxClientCount: int32(0),
        deactivations: Deactivations,
      }),
      "Deactivated",
    ),
    ...portalErrors,
    429: {
      description: `The month's deactivations are spent: the message and ${DEACTIVATIONS_RESET_HEADER} say when they reset (or the per-IP limit)`,
      headers: {
        "Retry-After": {
          description: "Seconds until the count resets (or the per-IP block ends).",
          schema: { type: "integer", format: "int32", minimum: 1 },
        },
        [DEACTIVATIONS_RESET_HEADER]: {
          description: "When the count resets (ISO 8601, UTC).",
          schema: { type: "string" },
        },
      },
      content: { "application/json": { schema: Envelope } },
    },
  },
});

export const portalDeactivateMachineHandler: RouteHandler<typeof portalDeactivateMachineRoute, AppEnv> = async (c) => {
  const { licenseId, machineId } = c.req.valid("param");
  return ok(c, await deactivateMachine(serviceContext(c), scopeOf(c), licenseId, machineId, clientInfo(c)));
};

export const portalDownloadsRoute = createRoute({
  method: "get",
  path: "/v1/portal/licenses/{licenseId}/downloads",
  tags: [TAG],
  operationId: "portalDownloads",
  summary:
    "The newest build of each platform the license is entitled to (the feeds' selection, tokenised URLs); `platform` asks for one, 403 when not entitled",
  ...portalAccess(),
  request: {
    params: z.object({ licenseId: LicenseIdParam }),
    query: z.object({
      platform: z
        .string()
        .max(32)
        .optional()
        .openapi({ description: PLATFORMS.join(", ") }),
    }),
  },
  responses: {
    200: json(enveloped({ downloads: z.array(PortalDownload) }), "The builds, one per platform"),
    ...portalErrors,
  },
});

export const portalDownloadsHandler: RouteHandler<typeof portalDownloadsRoute, AppEnv> = async (c) => {
  const ctx = serviceContext(c);
  const { licenseId } = c.req.valid("param");
  const { platform: asked } = c.req.valid("query");
  if (asked !== undefined && !(PLATFORMS as readonly string[]).includes(asked))
    throw new ApiError(400, `Unknown platform ${asked}: one of ${PLATFORMS.join(", ")}`);
  const license = await ownLicense(ctx, scopeOf(c), licenseId);
  const product = await ctx.db.select().from(products).where(eq(products.id, license.productId)).get();
  if (!product) throw new ApiError(404, `License ${licenseId} not found`);
  // The license itself: its own key names it (a legacy key is not needed to find it).
  const credential = { key: { compact: compactUserKey(license.userKey), legacy: "" } };
  const platforms = (asked ? [asked] : PLATFORMS) as readonly Platform[];
  const downloads = [];
  for (const platform of platforms) {
    const { caller, releases, audienceMatched } = await callerAndReleases(ctx, product, credential, platform, "stable");
    const selection = await feedRelease(ctx, {
      caller,
      releases,
      platform,
      audienceMatched,
      minimumVersion: product.minimumVersion,
    });
    const file = selection.entry ? mainFile(selection.entry.files) : undefined;
    if (selection.entry && file) {
      const downloadUrl = downloadUrlFor(publicOrigin(c), product, platform);
      downloads.push({
        platform,
        version: selection.entry.release.version,
        download: await downloadFor(ctx, { caller, downloadUrl }, selection.entry, file),
      });
      continue;
    }
    const reason = selection.reason ?? "noRelease";
    const why = UPDATE_REASONS[reason];
    if (asked && (reason === "platformRequiresEdition" || reason === "platformRequiresLicense"))
      throw new ApiError(403, `License ${licenseId} is not entitled to ${platform} builds: ${why}`, {}, reason);
    downloads.push({ platform, unavailable: why });
  }
  return ok(c, { downloads });
};

export const portalOrdersRoute = createRoute({
  method: "get",
  path: "/v1/portal/orders",
  tags: [TAG],
  operationId: "portalOrders",
  summary: "The customer's orders with their lines",
  ...portalAccess(),
  responses: { 200: json(enveloped({ orders: z.array(PortalOrder) }), "The orders"), ...portalErrors },
});

export const portalOrdersHandler: RouteHandler<typeof portalOrdersRoute, AppEnv> = async (c) =>
  ok(c, { orders: await listOrders(serviceContext(c), scopeOf(c)) });

export const portalChangeLicenseeRoute = createRoute({
  method: "put",
  path: "/v1/portal/licenses/{licenseId}/licensee",
  tags: [TAG],
  operationId: "portalChangeLicensee",
  summary: "Changes the licensee name shown on the license (through the license write service: HMAC, webhooks, audit)",
  ...portalAccess(),
  request: {
    params: z.object({ licenseId: LicenseIdParam }),
    body: jsonBody(z.object({ name: z.string().max(256) }).openapi("PortalLicenseeRequest")),
  },
  responses: { 200: json(enveloped({ license: PortalLicense }), "Changed"), ...portalErrors },
});

export const portalChangeLicenseeHandler: RouteHandler<typeof portalChangeLicenseeRoute, AppEnv> = async (c) => {
  const { licenseId } = c.req.valid("param");
  const { name } = c.req.valid("json");
  return ok(c, { license: await changeLicenseeName(serviceContext(c), scopeOf(c), licenseId, name) });
};
