/** Shared OpenAPI pieces: the envelope, error responses and JSON bodies, so every route documents them alike. */
import { z } from "@hono/zod-openapi";

export const Envelope = z
  .object({
    success: z.boolean(),
    code: z.int().openapi({ description: "0 on success; the HTTP status on error." }),
    message: z.string().optional(),
  })
  .openapi("Envelope");

export const ProblemDetails = z
  .object({
    type: z.string(),
    title: z.string(),
    status: z.int(),
    errors: z.record(z.string(), z.array(z.string())),
    traceId: z.string().optional(),
  })
  .openapi("ProblemDetails");

/** The envelope extended with a route's data. */
export function enveloped<T extends z.ZodRawShape>(shape: T) {
  return Envelope.extend(shape);
}

/** A JSON response of `schema`. */
export function json<T extends z.ZodType>(schema: T, description: string) {
  return { description, content: { "application/json": { schema } } };
}

/** A required JSON request body. Bodies sent as application/json-patch+json are read as JSON too. */
export function jsonBody<T extends z.ZodType>(schema: T) {
  return { required: true, content: { "application/json": { schema } } };
}

/** The error answers every authenticated route can give. */
export const errorResponses = {
  400: {
    description: "Invalid request: problem details for unreadable or invalid bodies, the envelope otherwise.",
    content: { "application/problem+json": { schema: ProblemDetails }, "application/json": { schema: Envelope } },
  },
  401: { description: "No credential, or an invalid, expired or revoked one (empty body)." },
  403: { description: "Valid credential without the required role or permission bit (empty body)." },
  500: { description: "Any other error, including an invalid filter expression.", content: { "application/json": { schema: Envelope } } },
} as const;

/** Error answers of anonymous routes. */
export const anonymousErrorResponses = {
  400: errorResponses[400],
  500: errorResponses[500],
} as const;
