/**
 * Reports sent by applications (`POST /v1/report`, gRPC ReportServer/SendReport): stored with their properties and
 * the sender's address and geodata. Content over 256 KiB goes to R2 (the ARTIFACTS bucket, under `reports/`), so a
 * D1 row stays small; a body over 4 MiB is refused (413) before it is read. An unknown user key does not refuse the
 * report: it is kept without a license (a crash report from an unlicensed copy is still worth having).
 */
import { eq } from "drizzle-orm";
import { nowIso } from "../kernel/clock";
import { licenses, reports } from "../db/schema";
import type { ServiceContext } from "../http/context";
import { ApiError, GrpcCode } from "../kernel/errors";
import { emit } from "../webhooks/emit";
import { react } from "./reactions";
import { TraceAction } from "../records/vocabulary";
import { licenseBudget, spendLicenseBudget } from "./license-limit";
import { spendCredentialBudget } from "../protection/limits";
import { recordTrace } from "./traces";
import type { ClientInfo } from "../http/context";
import { Messages, fail } from "./license-lookup";
import { typedKey, userKeyIs } from "./user-key";
import { z } from "@hono/zod-openapi";
import type { Config } from "../kernel/config";
import type { Db } from "../db/client";
import type { Row } from "../http/repository";
import { type Field, defineEntity, f } from "../http/entity";
import { licenseReference, showPublicLicenseIds } from "./license-records";
import { MAX_REPORT_BYTES, type ReportInput } from "./inputs";

export { MAX_REPORT_BYTES };
export const MAX_INLINE_CONTENT_BYTES = 256 * 1024;

/**
 * Stores a report (and emits report.received); returns its id. A license's own bearer token (user-key sign-in)
 * reports for its license only: a user key naming another license (or none) is refused as on every licensing
 * operation (527), and a report without a user key is its license's.
 */
export async function storeReport(ctx: ServiceContext, input: ReportInput, client: ClientInfo): Promise<number> {
  const bound = ctx.principal?.licenseId;
  const typed = await typedKey(input.userKey ?? "");
  const userKey = typed.compact || typed.legacy ? typed : undefined;
  const columns = { id: licenses.id, licenseId: licenses.licenseId, trace: licenses.trace };
  const license = userKey
    ? await ctx.db.select(columns).from(licenses).where(userKeyIs(userKey.compact, userKey.legacy)).get()
    : bound !== undefined
      ? await ctx.db.select(columns).from(licenses).where(eq(licenses.licenseId, bound)).get()
      : undefined;
  if (bound !== undefined && license?.licenseId !== bound) throw fail(GrpcCode.PermissionDenied, Messages.wrongProduct);
  // A report for a license spends its budget (license-limit.ts); one naming no license (or an unknown user key) spends
  // its credential's own, smaller budget (Licensing:MaxReportsWithoutLicense, protection/limits.ts), besides the
  // per-IP limit: rotating addresses does not multiply what one API key or user may store.
  if (license) await spendLicenseBudget(ctx, license.id);
  else {
    const { windowMs } = licenseBudget(ctx);
    await spendCredentialBudget(ctx, "reports", ctx.config["Licensing:MaxReportsWithoutLicense"], windowMs);
  }
  const bytes = new TextEncoder().encode(input.content);
  let content: string | null = input.content;
  let contentKey: string | null = null;
  if (bytes.byteLength > MAX_INLINE_CONTENT_BYTES) {
    if (!ctx.env.ARTIFACTS)
      throw new ApiError(413, "The report content is over 256 KiB and no ARTIFACTS bucket is bound to keep it");
    contentKey = `reports/${crypto.randomUUID()}`;
    await ctx.env.ARTIFACTS.put(contentKey, bytes, {
      httpMetadata: { contentType: input.contentType ?? "text/plain; charset=utf-8" },
    });
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
  // A release of the license's product with this version may halt itself on its reports (app/reactions.ts).
  if (license && row.version) await react(ctx, "report.stored", { licenseId: license.id, version: row.version });
  if (license?.trace) {
    recordTrace(
      ctx,
      {
        licenseId: license.id,
        action: TraceAction.Report,
        address: client.address,
        geoLocation: client.geoLocation,
        ...input,
      },
      now,
    );
  }
  return row.id;
}

/**
 * Removes the R2 body of a report that is being deleted (content over 256 KiB), before its row goes; a report whose
 * content is in its row has nothing there. Fails (and so keeps the row) when the body cannot be removed.
 */
export async function removeReportBody(env: Bindings, row: Row): Promise<void> {
  const key = row["contentKey"];
  if (typeof key !== "string" || key === "") return;
  if (!env.ARTIFACTS)
    throw new ApiError(500, "The report's content is in R2 and no ARTIFACTS bucket is bound to remove it");
  await env.ARTIFACTS.delete(key);
}

const ro = { readOnly: true } as const;

const Property = z.object({ name: z.string(), value: z.string().nullable() }).openapi("ReportProperty");

/** `properties`: name/value pairs sent with the report, stored as JSON. */
const properties: Field = { filter: "json", output: z.array(Property), input: z.array(Property), readOnly: true };

export const Report = defineEntity({
  name: "Report",
  singular: "report",
  plural: "reports",
  table: reports,
  fields: {
    id: f.id(),
    uid: f.string(ro),
    name: f.string({ ...ro, description: "ExceptionReport, LicenseReport or a custom name." }),
    version: f.string(ro),
    date: f.date(ro),
    licenseId: licenseReference(reports.licenseId),
    machineId: f.string(ro),
    clientId: f.string(ro),
    clientName: f.string(ro),
    contentType: f.string(ro),
    content: f.string(ro),
    address: f.string({ ...ro, description: "IP address the report came from." }),
    geoLocation: f.string({ ...ro, description: "JSON text: country, region, city, latitude, longitude, timezone." }),
    properties,
    createdAt: f.date(ro),
    updatedAt: f.date(ro),
  },
});

/** A received report as the API returns it (the license's lic… id), for events. */
export async function reportRecord(db: Db, config: Config, row: Row): Promise<Record<string, unknown>> {
  const item = Report.toWire(row, config) as Record<string, unknown>;
  await showPublicLicenseIds([item], [row], { db });
  return item;
}
