/**
 * `GET /v1/info` (Administrator, LicenseManager, Sales; SPEC access table "Log, server info, email"): what is
 * running (version, build date, runtime), how much it holds (row counts per entity, one D1 round trip) and which
 * switches are on. The build date is the upload time of the running Worker version, from the `CF_VERSION_METADATA`
 * binding (wrangler `[version_metadata]`), so no build step has to stamp it.
 */
import { type RouteHandler, createRoute, z } from "@hono/zod-openapi";
import { count } from "drizzle-orm";
import type { SQLiteTable } from "drizzle-orm/sqlite-core";
import { Roles, access } from "../../auth/guard";
import { nowIso } from "../../kernel/clock";
import type { Config } from "../../kernel/config";
import type { Db } from "../../db/client";
import * as schema from "../../db/schema";
import { enveloped, errorResponses, int64, json } from "../../http/openapi";
import { ok } from "../../http/respond";
import type { AppEnv } from "../../http/app-env";
import type { Router } from "../../http/router";
import { SERVICE_VERSION } from "../../kernel/version";

/** The tables counted, under CONTRACT section 2's plural names. */
const COUNTED = {
  customers: schema.customers,
  contacts: schema.contacts,
  products: schema.products,
  productReleases: schema.productReleases,
  releaseDownloads: schema.releaseDownloads,
  orders: schema.orders,
  orderProducts: schema.orderProducts,
  licenses: schema.licenses,
  licenseTemplates: schema.licenseTemplates,
  licenseTokens: schema.licenseTokens,
  licenseTraces: schema.licenseTraces,
  assemblies: schema.assemblies,
  reports: schema.reports,
  resources: schema.resources,
  users: schema.users,
  apiKeys: schema.apiKeys,
  subscriptions: schema.webhookSubscriptions,
  events: schema.webhookEvents,
  logs: schema.logs,
  emails: schema.emailOutbox,
  settings: schema.settings,
} as const satisfies Record<string, SQLiteTable>;
type Counts = Record<keyof typeof COUNTED, number>;

/** Row counts of every counted table, in one batch. */
export async function countEntities(db: Db): Promise<Counts> {
  const names = Object.keys(COUNTED) as (keyof typeof COUNTED)[];
  const [first, ...rest] = names.map((name) => db.select({ n: count() }).from(COUNTED[name]));
  const results = await db.batch([first!, ...rest]);
  return Object.fromEntries(names.map((name, i) => [name, results[i]?.[0]?.n ?? 0])) as Counts;
}

/** The switches an operator checks first, from the effective configuration and the bindings. */
export function featureSwitches(config: Config, env: Bindings) {
  return {
    webApi: config["Application:EnableWebApi"],
    swagger: config["Application:EnableSwagger"],
    grpcWeb: config["Application:EnableGrpcWeb"],
    healthCheck: config["Application:EnableHealthCheck"],
    webhooks: config["Webhooks:Enabled"],
    bruteForceProtection: config["IpFiltering:BruteForceProtection:Enabled"],
    enforcePlatformEditions: config["Updates:EnforcePlatformEditions"],
    enumsAsStrings: config["Application:SerializeJSonEnumAsString"],
    /** `binding`: mail goes out through the EMAIL send_email binding; `outbox`: it is stored in email_outbox. */
    email: env.EMAIL ? ("binding" as const) : ("outbox" as const),
    artifactStorage: env.ARTIFACTS !== undefined,
  };
}

const CountsSchema = z.object(
  Object.fromEntries(Object.keys(COUNTED).map((name) => [name, int64()])) as Record<keyof typeof COUNTED, z.ZodInt>,
);
const FeaturesSchema = z.object({
  webApi: z.boolean(),
  swagger: z.boolean(),
  grpcWeb: z.boolean(),
  healthCheck: z.boolean(),
  webhooks: z.boolean(),
  bruteForceProtection: z.boolean(),
  enforcePlatformEditions: z.boolean(),
  enumsAsStrings: z.boolean(),
  email: z.enum(["binding", "outbox"]),
  artifactStorage: z.boolean().openapi({ description: "Whether the ARTIFACTS R2 bucket is bound." }),
});

/** The answer of `GET /v1/info`. */
export const ServerInfo = enveloped({
  version: z.string(),
  buildDate: z.string().optional().openapi({
    format: "date-time",
    description: "Upload time of the running Worker version (absent without version metadata).",
  }),
  versionId: z.string().optional().openapi({ description: "Id of the running Worker version." }),
  versionTag: z.string().optional(),
  runtime: z.string(),
  serverTime: z.string().openapi({ format: "date-time" }),
  database: CountsSchema,
  features: FeaturesSchema,
}).openapi("ServerInfo");

const getServerInfoRoute = createRoute({
  method: "get",
  path: "/v1/info",
  tags: ["Service"],
  operationId: "getServerInfo",
  summary: "Version, build date, runtime, row counts and feature switches",
  ...access.key(Roles.management),
  responses: { 200: json(ServerInfo, "What is running and what it holds"), ...errorResponses },
});

const getServerInfo: RouteHandler<typeof getServerInfoRoute, AppEnv> = async (c) => {
  const metadata = c.env.CF_VERSION_METADATA;
  return ok(c, {
    version: SERVICE_VERSION,
    buildDate: metadata?.timestamp || undefined,
    versionId: metadata?.id || undefined,
    versionTag: metadata?.tag || undefined,
    runtime: "Cloudflare Workers",
    serverTime: nowIso(),
    database: await countEntities(c.get("db")),
    features: featureSwitches(c.get("config"), c.env),
  });
};

/** Registers `GET /v1/info`. */
export function registerInfo(app: Router): void {
  app.openapi(getServerInfoRoute, getServerInfo);
}
