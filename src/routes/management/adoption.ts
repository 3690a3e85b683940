/**
 * `GET /v1/products/{productId}/releases/{releaseId}/adoption` (CONTRACT section 8; the roles that read releases):
 * distinct installs offered, downloaded and running a release, per UTC day and platform, as the queue consumer wrote
 * them (updates/adoption.ts).
 */
import { type RouteHandler, createRoute, z } from "@hono/zod-openapi";
import { eq } from "drizzle-orm";
import { Roles, access } from "../../auth/guard";
import { productReleases } from "../../db/schema";
import { ApiError } from "../../kernel/errors";
import { clock } from "../../kernel/clock";
import type { AppEnv } from "../../http/app-env";
import { serviceContext } from "../../http/context";
import { enveloped, errorResponses, int32PathParam, int64, json } from "../../http/openapi";
import { requireById } from "../../http/repository";
import { ok } from "../../http/respond";
import type { Router } from "../../http/router";
import { Product } from "../../records/products";
import { readAdoption } from "../../updates/adoption";
import { ProductRelease } from "../../records/releases";

/** The span an answer covers when the query names none: the last 30 days, today included. */
export const DEFAULT_ADOPTION_DAYS = 30;
/** The longest span one answer covers. */
export const MAX_ADOPTION_DAYS = 366;
const DAY_MS = 86_400_000;

const isoDay = (description: string) =>
  z
    .string()
    .max(64)
    .refine((s) => /^\d{4}-\d{2}-\d{2}/.test(s) && !Number.isNaN(Date.parse(s)), {
      message: "Not a valid ISO 8601 date (YYYY-MM-DD or an instant)",
    })
    .optional()
    .openapi({ format: "date", description });

/** The span query of adoption and of release health (`from`, `to`). */
export const AdoptionQuery = z.object({
  from: isoDay(`The first UTC day counted (default: ${DEFAULT_ADOPTION_DAYS - 1} days before \`to\`).`),
  to: isoDay("The last UTC day counted (default: today)."),
});

const count = (what: string) => int64().openapi({ description: `Distinct installs ${what}.` });
const StageCounts = {
  offered: count("a feed or an update check offered the release"),
  downloaded: count("that downloaded one of its artifacts"),
  running: count("that reported running its version (update check, feed poll or validation)"),
};

const AdoptionData = z
  .object({
    from: z.string().openapi({ format: "date" }),
    to: z.string().openapi({ format: "date" }),
    totals: z
      .object(StageCounts)
      .openapi({ description: "Over the whole span: an install seen on several days or platforms counts once." }),
    days: z.array(
      z.object({
        day: z.string().openapi({ format: "date" }),
        platform: z
          .string()
          .optional()
          .openapi({ description: "The platform the requests named; absent when they named none (a validation)." }),
        ...StageCounts,
      }),
    ),
  })
  .openapi("ReleaseAdoption", {
    description:
      "Distinct installs (install id, else license and machine) per UTC day and platform; only days and platforms with sightings are listed.",
  });

const dayOf = (s: string) => new Date(s).toISOString().slice(0, 10);

const adoptionRoute = createRoute({
  method: "get",
  path: "/v1/products/{productId}/releases/{releaseId}/adoption",
  tags: ["Product releases"],
  operationId: "getReleaseAdoption",
  summary: "A release's adoption: installs offered, downloaded and running it, by day and platform",
  description:
    "Gathered off the request path through the queue, so the last few seconds may not be counted yet. " +
    `Days are UTC; the span is at most ${MAX_ADOPTION_DAYS} days.`,
  ...access.key(Roles.management),
  request: {
    params: z.object({ productId: int32PathParam("productId"), releaseId: int32PathParam("releaseId") }),
    query: AdoptionQuery,
  },
  responses: {
    200: json(enveloped({ data: AdoptionData }), "The release's adoption"),
    ...errorResponses,
  },
});

const getAdoption: RouteHandler<typeof adoptionRoute, AppEnv> = async (c) => {
  const ctx = serviceContext(c);
  const { productId, releaseId } = c.req.valid("param");
  await requireById(ctx.db, Product, productId);
  await requireById(ctx.db, ProductRelease, releaseId, eq(productReleases.productId, productId));
  const { from, to } = adoptionSpan(c.req.valid("query"));
  return ok(c, { data: await readAdoption(ctx.db, releaseId, from, to) });
};

/**
 * The UTC days a query of AdoptionQuery names (default: the last DEFAULT_ADOPTION_DAYS, today included); 400 when
 * `from` is after `to` or the span is longer than MAX_ADOPTION_DAYS.
 */
export function adoptionSpan(query: z.infer<typeof AdoptionQuery>): { from: string; to: string } {
  const to = query.to !== undefined ? dayOf(query.to) : dayOf(clock.now().toISOString());
  const from =
    query.from !== undefined
      ? dayOf(query.from)
      : dayOf(new Date(Date.parse(to) - (DEFAULT_ADOPTION_DAYS - 1) * DAY_MS).toISOString());
  if (from > to) throw new ApiError(400, `from (${from}) is after to (${to})`);
  if ((Date.parse(to) - Date.parse(from)) / DAY_MS >= MAX_ADOPTION_DAYS)
    throw new ApiError(400, `from (${from}) is more than ${MAX_ADOPTION_DAYS} days before to (${to})`);
  return { from, to };
}

export function registerAdoption(app: Router): void {
  app.openapi(adoptionRoute, getAdoption);
}
