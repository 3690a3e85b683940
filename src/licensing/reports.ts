/**
 * Reports sent by applications (`POST /v1/report`, gRPC ReportServer/SendReport): stored with their properties and
 * the sender's address and geodata. Content over 256 KiB goes to R2 (the ARTIFACTS bucket, under `reports/`), so a
 * D1 row stays small; a body over 4 MiB is refused (413) before it is read. An unknown user key does not refuse the
 * report: it is kept without a license (a crash report from an unlicensed copy is still worth having).
 */
import { eq } from "drizzle-orm";
import { nowIso } from "../clock";
import { licenses, reports } from "../db/schema";
import type { ServiceContext } from "../http/context";
import { ApiError, GrpcCode, LicensingError } from "../http/errors";
import { reportRecord } from "../management/reports";
import { emit } from "../webhooks/emit";
import { type ClientInfo, Messages } from "./runtime";
import { TraceAction } from "./vocabulary";
import { spendLicenseBudget } from "./license-limit";
import { recordTrace } from "./traces";

export const MAX_REPORT_BYTES = 4 * 1024 * 1024;
export const MAX_INLINE_CONTENT_BYTES = 256 * 1024;

export interface ReportInput {
  name: string;
  uid?: string | undefined;
  version?: string | undefined;
  date?: string | undefined;
  userKey?: string | undefined;
  machineId?: string | undefined;
  clientId?: string | undefined;
  clientName?: string | undefined;
  contentType?: string | undefined;
  content: string;
  properties?: { name: string; value: string | null }[] | undefined;
}

/**
 * Stores a report (and emits report.received); returns its id. A license's own bearer token (user-key sign-in)
 * reports for its license only: a user key naming another license (or none) is refused as on every licensing
 * operation (527), and a report without a user key is its license's.
 */
export async function storeReport(ctx: ServiceContext, input: ReportInput, client: ClientInfo): Promise<number> {
  const bound = ctx.principal?.licenseId;
  const userKey = input.userKey?.trim() || undefined;
  const columns = { id: licenses.id, licenseId: licenses.licenseId, trace: licenses.trace };
  const license = userKey
    ? await ctx.db.select(columns).from(licenses).where(eq(licenses.userKey, userKey)).get()
    : bound !== undefined
      ? await ctx.db.select(columns).from(licenses).where(eq(licenses.licenseId, bound)).get()
      : undefined;
  if (bound !== undefined && license?.licenseId !== bound) throw new LicensingError(GrpcCode.PermissionDenied, Messages.wrongProduct);
  // A report for a license spends its budget (license-limit.ts); one without is limited per IP only.
  if (license) await spendLicenseBudget(ctx, license.id);
  const bytes = new TextEncoder().encode(input.content);
  let content: string | null = input.content;
  let contentKey: string | null = null;
  if (bytes.byteLength > MAX_INLINE_CONTENT_BYTES) {
    if (!ctx.env.ARTIFACTS) throw new ApiError(413, "The report content is over 256 KiB and no ARTIFACTS bucket is bound to keep it");
    contentKey = `reports/${crypto.randomUUID()}`;
    await ctx.env.ARTIFACTS.put(contentKey, bytes, { httpMetadata: { contentType: input.contentType ?? "text/plain; charset=utf-8" } });
    content = null;
  }
  const now = nowIso();
  const [row] = await ctx.db
    .insert(reports)
    .values({
      uid: input.uid ?? null,
      name: input.name,
      version: input.version ?? null,
      date: input.date ? new Date(input.date).toISOString() : now,
      licenseId: license?.id ?? null,
      machineId: input.machineId ?? null,
      clientId: input.clientId ?? null,
      clientName: input.clientName ?? null,
      contentType: input.contentType ?? null,
      content,
      contentKey,
      address: client.address,
      geoLocation: client.geoLocation ?? null,
      properties: input.properties ?? null,
      createdAt: now,
      updatedAt: now,
    })
    .returning();
  if (!row) throw new Error("report insert returned no row");
  emit(ctx, "report.received", async () => ({ data: await reportRecord(ctx.db, ctx.config, row) }));
  if (license?.trace) {
    recordTrace(ctx, { licenseId: license.id, action: TraceAction.Report, address: client.address, geoLocation: client.geoLocation, ...input }, now);
  }
  return row.id;
}
