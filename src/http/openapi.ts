/** Shared OpenAPI pieces: the envelope, error responses and JSON bodies, so every route documents them alike. */
import { z } from "@hono/zod-openapi";
import { ROLES } from "./app-env";

export const INT32_MIN = -2147483648;
export const INT32_MAX = 2147483647;

/**
 * An int32 (SPEC types ids, enumerations and statuses so): the document states its format and bounds, and zod
 * enforces them on input.
 */
export function int32(min = INT32_MIN, max = INT32_MAX) {
  return z.int().min(min).max(max).openapi({ format: "int32" });
}

/** A count or a size in bytes: int64 within the integers a JSON number carries exactly (what zod's int accepts). */
export function int64(min = 0, max = Number.MAX_SAFE_INTEGER) {
  return z.int().min(min).max(max).openapi({ format: "int64" });
}

/**
 * A path parameter holding an int32 (1 or more): coerced from the path's text, so its OpenAPI type, format and
 * bounds are stated by hand (zod-openapi cannot read them through the coercion).
 */
export function int32PathParam(name: string, min = 1, max = INT32_MAX) {
  return z.coerce
    .number()
    .int()
    .min(min)
    .max(max)
    .openapi({ param: { name, in: "path" }, type: "integer", format: "int32", minimum: min, maximum: max });
}

/** A role's name (SPEC access table), named in the document so the console takes the roles from it. */
export const RoleName = z.enum(ROLES).openapi("RoleName");

export const Envelope = z
  .object({
    success: z.boolean(),
    code: int32(0, 599).openapi({ description: "0 on success; the HTTP status on error." }),
    message: z.string().optional(),
    reason: z.string().optional().openapi({
      description:
        "Licensing refusals (520 + gRPC code) only: a stable, machine-readable reason such as licenseRevoked.",
    }),
  })
  .openapi("Envelope");

export const ProblemDetails = z
  .object({
    type: z.string(),
    title: z.string(),
    status: int32(400, 499),
    errors: z.record(z.string(), z.array(z.string())),
    traceId: z.string().optional(),
  })
  .openapi("ProblemDetails");

/** The envelope extended with a route's data. */
export function enveloped<T extends z.ZodRawShape>(shape: T) {
  return Envelope.extend(shape);
}

/** The envelope without `code` (SPEC: webhook responses carry only success and message plus their data). */
export const MessageEnvelope = Envelope.omit({ code: true }).openapi("MessageEnvelope");

/** The envelope without `code`, extended with a route's data (answers written with `ok(..., { code: false })`). */
export function envelopedWithoutCode<T extends z.ZodRawShape>(shape: T) {
  return MessageEnvelope.extend(shape);
}

/** A JSON response of `schema`. */
export function json<T extends z.ZodType>(schema: T, description: string) {
  return { description, content: { "application/json": { schema } } };
}

/** A required JSON request body. Bodies sent as application/json-patch+json are read as JSON too. */
export function jsonBody<T extends z.ZodType>(schema: T) {
  return { required: true, content: { "application/json": { schema } } };
}

/**
 * 429 from the per-IP request limit (SPEC "Limits" rule 2): any counted route can answer it, with `Retry-After` and a
 * text body saying how long to wait (protection/limits.ts).
 */
export const tooManyRequests = {
  description:
    "Too many requests from the client's IP address (IpFiltering:BruteForceProtection); the text says how many seconds to wait.",
  headers: {
    "Retry-After": {
      description: "Seconds until the IP's block ends.",
      schema: { type: "integer", format: "int32", minimum: 1, maximum: INT32_MAX },
    },
  },
  content: {
    "text/plain": { schema: z.string().openapi({ example: "Too many requests. Try again in 840 seconds." }) },
  },
} as const;

/** The error answers every authenticated route can give. */
export const errorResponses = {
  400: {
    description: "Invalid request: problem details for unreadable or invalid bodies, the envelope otherwise.",
    content: { "application/problem+json": { schema: ProblemDetails }, "application/json": { schema: Envelope } },
  },
  401: { description: "No credential, or an invalid, expired or revoked one (empty body)." },
  403: {
    description:
      "Valid credential without the required role or permission bit (empty body), or a blacklisted client IP (the envelope).",
    content: { "application/json": { schema: Envelope } },
  },
  413: { description: "A JSON request body over 4 MiB.", content: { "application/json": { schema: Envelope } } },
  429: tooManyRequests,
  500: {
    description: "Any other error, including an invalid filter expression.",
    content: { "application/json": { schema: Envelope } },
  },
} as const;

/** Error answers of anonymous routes. */
export const anonymousErrorResponses = {
  400: errorResponses[400],
  413: errorResponses[413],
  429: tooManyRequests,
  500: errorResponses[500],
} as const;
