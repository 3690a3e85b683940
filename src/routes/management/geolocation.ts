/**
 * `POST /v1/license-traces/geolocation` and `POST /v1/reports/geolocation` (CONTRACT section 3): one route shape over
 * licensing/geo-lookup.ts. Body `{ ids?: number[] }` (none: every record lacking a geolocation); answer envelope +
 * `updated` (records) + `failed` (addresses not located), with a message saying why when any failed.
 */
import { type RouteHandler, createRoute, z } from "@hono/zod-openapi";
import { Roles, access } from "../../auth/guard";
import { serviceContext } from "../../http/context";
import { enveloped, errorResponses, int32, int64, json } from "../../http/openapi";
import { ok } from "../../http/respond";
import type { AppEnv } from "../../http/app-env";
import {
  GEO_SETTING,
  type GeoFillResult,
  type GeoTarget,
  MAX_ADDRESSES_PER_CALL,
  fillGeoLocations,
  geoLocationTemplate,
} from "../../licensing/geo-lookup";

const GeoRequest = z.object({
  ids: z
    .array(int32(1))
    .max(1000)
    .optional()
    .openapi({ description: "Only these records; default every record without a geolocation." }),
});

function summary(result: GeoFillResult): string | undefined {
  const parts: string[] = [];
  if (result.failed > 0) parts.push(`${result.failed} address(es) could not be located: ${result.errors.join("; ")}`);
  if (result.more)
    parts.push(`more than ${MAX_ADDRESSES_PER_CALL} addresses lack a geolocation: call again for the rest`);
  return parts.length > 0 ? parts.join(". ") : undefined;
}

/** Declares the geolocation route of traces or reports; each declares its own with a literal operationId. */
export function geoLocationRoute(options: { path: string; tag: string; operationId: string; label: string }) {
  return createRoute({
    method: "post",
    path: options.path,
    tags: [options.tag],
    operationId: options.operationId,
    summary: `Fill the missing geolocation of ${options.label} through ${GEO_SETTING}`,
    description:
      `One lookup per distinct address, at most ${MAX_ADDRESSES_PER_CALL} per call. An address that cannot be located is ` +
      `counted in failed and named in message; a missing or invalid ${GEO_SETTING} answers 400.`,
    ...access.key(Roles.managers),
    request: { body: { required: false, content: { "application/json": { schema: GeoRequest } } } },
    responses: {
      200: json(
        enveloped({
          updated: int64().openapi({ description: "Records that received a geolocation." }),
          failed: int64().openapi({ description: "Addresses not located." }),
        }),
        "Geolocations filled",
      ),
      ...errorResponses,
    },
  });
}

/** The handler of a geolocation route: fills the missing geolocations of `target`'s records. */
export function fillGeoLocationsOf(target: GeoTarget): RouteHandler<ReturnType<typeof geoLocationRoute>, AppEnv> {
  return async (c) => {
    const ctx = serviceContext(c);
    const template = geoLocationTemplate(ctx.config[GEO_SETTING]);
    const body = c.req.valid("json") as z.infer<typeof GeoRequest> | undefined;
    const result = await fillGeoLocations(ctx.db, template, target, body?.ids);
    const message = summary(result);
    return ok(c, { updated: result.updated, failed: result.failed, ...(message ? { message } : {}) });
  };
}
