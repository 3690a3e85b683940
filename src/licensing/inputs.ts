/**
 * What the licensing operations take (CONTRACT section 4), declared once: each schema validates the REST route's
 * body and names it in the OpenAPI document (routes/licensing/licensing.ts), and the service's input type is inferred from it
 * (activation.ts, validation.ts, floating.ts, report-store.ts), so the gRPC services (src/rpc) type-check against
 * the same shape. A field added here is in the document, the route and the service at once.
 */
import { z } from "@hono/zod-openapi";
import { int32 } from "../http/openapi";

/** The body limit of POST /v1/report (and gRPC SendReport). */
export const MAX_REPORT_BYTES = 4 * 1024 * 1024;

const text = (max = 256) => z.string().max(max).optional();

export const ActivateRequest = z
  .object({
    userKey: text(),
    machineId: text(),
    clientId: text(),
    clientName: text(),
    productCode: text(),
    version: text(64),
    nonce: text(),
  })
  .openapi("ActivateRequest");
export type ActivateInput = z.infer<typeof ActivateRequest>;

export const DeactivateRequest = z
  .object({ userKey: text(), machineId: text(), clientId: text(), licenseToken: text() })
  .openapi("DeactivateRequest");
export type DeactivateInput = z.infer<typeof DeactivateRequest>;

export const ValidateRequest = z
  .object({
    userKey: text(),
    machineId: text(),
    clientId: text(),
    licenseToken: text(),
    productCode: text(),
    version: text(64),
    nonce: text(),
  })
  .openapi("ValidateRequest");
export type ValidateInput = z.infer<typeof ValidateRequest>;

export const FloatingRequest = z
  .object({ userKey: text(), machineId: text(), clientId: text(), clientName: text() })
  .openapi("FloatingRequest");
export type RequestInput = z.infer<typeof FloatingRequest>;

export const HeartbeatRequest = z.object({ licenseToken: text() }).openapi("HeartbeatRequest");
export type HeartbeatInput = z.infer<typeof HeartbeatRequest>;

export const ReleaseRequest = z.object({ licenseToken: text(), userKey: text() }).openapi("ReleaseRequest");
export type ReleaseInput = z.infer<typeof ReleaseRequest>;

export const CheckoutRequest = z
  .object({
    userKey: text(),
    machineId: text(),
    clientId: text(),
    productCode: text(),
    ttl: int32(60)
      .optional()
      .openapi({ description: "Seconds the file is valid; at most Licensing:LicenseFileLifetime (the default)." }),
    encrypt: z.boolean().optional().openapi({
      description: "Encrypt the payload so only this machine (user key and machineId) can read it; needs machineId.",
    }),
    nonce: text(),
  })
  .openapi("CheckoutRequest");
export type CheckoutInput = z.infer<typeof CheckoutRequest>;

export const BorrowRequest = z
  .object({
    userKey: text(),
    machineId: text(),
    clientId: text(),
    clientName: text(),
    // Whole hours from 1 to the setting: the service says so with the setting's value (400 naming hours).
    hours: z.number().openapi({
      description: "Hours the seat is borrowed: 1 to Licensing:MaxBorrowHours.",
      type: "integer",
      format: "int32",
      minimum: 1,
      maximum: 8760,
      example: 24,
    }),
    encrypt: z.boolean().optional().openapi({ description: "Encrypt the borrow's license file for this machine." }),
    nonce: text(),
  })
  .openapi("BorrowRequest");
export type BorrowInput = z.infer<typeof BorrowRequest>;

export const ReturnRequest = z
  .object({ licenseToken: text(), userKey: text(), machineId: text(), clientId: text() })
  .openapi("ReturnRequest", {
    description: "The borrowed seat's licenseToken, or the userKey with the machineId and clientId that borrowed it.",
  });
export type ReturnInput = z.infer<typeof ReturnRequest>;

const Property = z.object({ name: z.string().max(256), value: z.string().max(4096).nullable() });

export const SendReportRequest = z
  .object({
    name: z.string().min(1).max(256),
    uid: text(),
    version: text(64),
    date: z
      .string()
      .max(64)
      .refine((s) => !Number.isNaN(Date.parse(s)), { message: "Not a valid ISO 8601 date" })
      .optional(),
    userKey: text(),
    machineId: text(),
    clientId: text(),
    clientName: text(),
    contentType: text(),
    // The body limit (4 MiB) bounds it; a string never has more UTF-16 units than its UTF-8 bytes.
    content: z.string().max(MAX_REPORT_BYTES),
    properties: z.array(Property).max(1000).optional(),
  })
  .openapi("SendReportRequest");
export type ReportInput = z.infer<typeof SendReportRequest>;
