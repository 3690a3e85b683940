/**
 * `GET /v1/products/{productId}/releases/{releaseId}/health` (CONTRACT section 13; the roles of adoption): a
 * release's sessions and installs, crashed and crash-free, per UTC day and platform, beside the same figures of its
 * baseline, the previous admissible release (updates/release-control.ts previousRelease, the release a rollback
 * offers), over the same span. The sessions are those the queue consumer counted (updates/sessions.ts).
 */
import { type RouteHandler, createRoute, z } from "@hono/zod-openapi";
import { eq } from "drizzle-orm";
import { Roles, access } from "../../auth/guard";
import { productReleases } from "../../db/schema";
import { clock } from "../../kernel/clock";
import type { AppEnv } from "../../http/app-env";
import { serviceContext } from "../../http/context";
import { enveloped, errorResponses, int32PathParam, int64, json } from "../../http/openapi";
import { requireById } from "../../http/repository";
import { ok } from "../../http/respond";
import type { Router } from "../../http/router";
import { Product } from "../../records/products";
import { ProductRelease } from "../../records/releases";
import { previousRelease } from "../../updates/release-control";
import { readHealth } from "../../updates/health-figures";
import { AdoptionQuery, MAX_ADOPTION_DAYS, adoptionSpan } from "./adoption";

const rate = (what: string) =>
  z
    .number()
    .nullable()
    .openapi({ description: `1 − ${what} (a fraction 0–1); null (omitted) when there is nothing to divide by.` });

const Figures = {
  sessions: int64().openapi({
    description: "Counted sessions: final ones, and those still `started` 24 hours after they started (abnormal).",
  }),
  crashedSessions: int64().openapi({ description: "Sessions that ended `crashed` or `abnormal`." }),
  crashFreeSessions: rate("crashedSessions / sessions"),
  installs: int64().openapi({ description: "Distinct installs with a counted session." }),
  crashedInstalls: int64().openapi({ description: "Installs with at least one crashed or abnormal session." }),
  crashFreeInstalls: rate("crashedInstalls / installs"),
};

const HealthData = z
  .object({
    from: z.string().openapi({ format: "date" }),
    to: z.string().openapi({ format: "date" }),
    ...Figures,
    days: z.array(z.object({ day: z.string().openapi({ format: "date" }), ...Figures })).openapi({
      description: "Per UTC day a session started; only days with counted sessions.",
    }),
    platforms: z
      .array(
        z.object({
          platform: z.string().optional().openapi({ description: "Absent: pings that named no platform." }),
          ...Figures,
        }),
      )
      .openapi({ description: "Per platform over the whole span." }),
    baseline: z
      .object({ releaseId: int64(), version: z.string(), ...Figures })
      .nullable()
      .openapi({
        description:
          "The same figures of the previous admissible release (the one a rollback offers) over the same span; null (omitted) when there is none.",
      }),
  })
  .openapi("ReleaseHealth");

const healthRoute = createRoute({
  method: "get",
  path: "/v1/products/{productId}/releases/{releaseId}/health",
  tags: ["Product releases"],
  operationId: "getReleaseHealth",
  summary: "A release's health: sessions and installs, crashed and crash-free, beside its baseline",
  description:
    "Counted off the request path through the queue, so the last few seconds may not be counted yet. One address adds " +
    "at most Updates:HealthInstallsPerAddress unlicensed installs per release per day, one install at most " +
    `Updates:HealthSessionsPerInstall sessions per day. Days are UTC; the span is at most ${MAX_ADOPTION_DAYS} days.`,
  ...access.key(Roles.management),
  request: {
    params: z.object({ productId: int32PathParam("productId"), releaseId: int32PathParam("releaseId") }),
    query: AdoptionQuery,
  },
  responses: {
    200: json(enveloped({ data: HealthData }), "The release's health"),
    ...errorResponses,
  },
});

const getHealth: RouteHandler<typeof healthRoute, AppEnv> = async (c) => {
  const ctx = serviceContext(c);
  const { productId, releaseId } = c.req.valid("param");
  const span = adoptionSpan(c.req.valid("query"));
  await requireById(ctx.db, Product, productId);
  const release = await requireById(ctx.db, ProductRelease, releaseId, eq(productReleases.productId, productId));
  const baseline = await previousRelease(ctx, release);
  return ok(c, { data: await readHealth(ctx.db, releaseId, baseline, { ...span, now: clock.now() }) });
};

export function registerReleaseHealth(app: Router): void {
  app.openapi(healthRoute, getHealth);
}
