/**
 * The license email (CONTRACT section 3 "POST /v1/email/license"), free of HTTP: finds the license, its customer
 * and product, picks the `EmailTemplate` resource (the one whose `code` is the product's code, else the oldest),
 * and renders its `name` as the subject and its `data` as the body. The body is HTML when the resource's
 * `dataFormat` says html; then every placeholder value is HTML-escaped.
 */
import { and, asc, desc, eq, sql } from "drizzle-orm";
import { z } from "zod";
import type { Db } from "../db/client";
import { customers, licenses, products, resources } from "../db/schema";
import { ApiError, notFound400 } from "../kernel/errors";
import type { OutgoingMail } from "./send";
import { escapeHtml } from "../kernel/markup";

/** The resource `type` of license email templates. */
export const EMAIL_TEMPLATE_TYPE = "EmailTemplate";
/** The placeholders a template may use, written `{Name}` (docs/email.md says what each becomes). */
export const PLACEHOLDERS = ["CustomerName", "ProductName", "LicenseId", "UserKey", "ProductDownload"] as const;
type Placeholder = (typeof PLACEHOLDERS)[number];

const address = z.email();

type LicenseRow = typeof licenses.$inferSelect;
type CustomerRow = typeof customers.$inferSelect;

/** A license by its public `lic…` id or its integer id (CONTRACT section 7). */
export async function findLicense(db: Db, licenseId: string | number): Promise<LicenseRow> {
  const byNumber = typeof licenseId === "number" || /^\d+$/.test(licenseId);
  const condition = byNumber ? eq(licenses.id, Number(licenseId)) : eq(licenses.licenseId, licenseId);
  const row = await db.select().from(licenses).where(condition).get();
  if (!row) throw notFound400("License", licenseId);
  return row;
}

/** Replaces each `{Placeholder}` with its value (HTML-escaped in HTML); unknown braces stay as written. */
export function renderTemplate(template: string, values: Readonly<Record<Placeholder, string>>, html: boolean): string {
  const pattern = new RegExp(`\\{(${PLACEHOLDERS.join("|")})\\}`, "g");
  return template.replace(pattern, (_, name: Placeholder) => (html ? escapeHtml(values[name]) : values[name]));
}

function customerName(license: LicenseRow, customer: CustomerRow | undefined): string {
  if (license.licenseeName) return license.licenseeName;
  const person = [customer?.firstName, customer?.lastName].filter(Boolean).join(" ");
  return person || customer?.company || "";
}

/** The recipient: the one asked for, else the licensee's email, else the customer's; 400 when there is none. */
function recipient(license: LicenseRow, customer: CustomerRow | undefined, to: string | undefined): string {
  const chosen = to ?? license.licenseeEmail ?? customer?.email ?? undefined;
  if (!chosen)
    throw new ApiError(400, `License ${license.licenseId} has no licensee or customer email address; send "to"`);
  if (!address.safeParse(chosen).success)
    throw new ApiError(400, `The stored email address of license ${license.licenseId} is not valid: ${chosen}`);
  return chosen;
}

/**
 * The EmailTemplate resource for the license's product: one whose code is the product's code first, else the
 * oldest; or the template `templateId` when one is chosen (a preview).
 */
function templateQuery(db: Db, productId: number, templateId?: number) {
  const productCode = sql`(SELECT ${products.code} FROM ${products} WHERE ${products.id} = ${productId})`;
  const chosen = templateId === undefined ? undefined : eq(resources.id, templateId);
  return db
    .select()
    .from(resources)
    .where(and(eq(resources.type, EMAIL_TEMPLATE_TYPE), chosen))
    .orderBy(desc(sql`coalesce(${resources.code} = ${productCode}, 0)`), asc(resources.id))
    .limit(1);
}

const noTemplate = () =>
  new ApiError(400, `No email template: store a resource of type ${EMAIL_TEMPLATE_TYPE} (name = subject, data = body)`);

/** What renders a license's email besides the license: its product, customer and template (one D1 batch). */
async function mailContext(db: Db, productId: number, customerId: number | null, templateId?: number) {
  const [product, customer, templates] = await db.batch([
    db.select().from(products).where(eq(products.id, productId)),
    db
      .select()
      .from(customers)
      .where(eq(customers.id, customerId ?? -1)),
    templateQuery(db, productId, templateId),
  ]);
  const productRow = product[0];
  if (!productRow) throw notFound400("Product", productId);
  const resource = templates[0];
  if (!resource && templateId !== undefined) throw notFound400(EMAIL_TEMPLATE_TYPE, templateId);
  if (!resource) throw noTemplate();
  if (!resource.data) throw new ApiError(400, `Email template ${resource.id} has no data`);
  return { product: productRow, customer: customer[0], resource };
}

type Resource = typeof resources.$inferSelect;

/** The template rendered with the placeholders' values: subject (never HTML) and body. */
function fill(resource: Resource, values: Readonly<Record<Placeholder, string>>) {
  const isHtml = /html/i.test(resource.dataFormat ?? "");
  return {
    subject: renderTemplate(resource.name, values, false),
    body: renderTemplate(resource.data ?? "", values, isHtml),
    isHtml,
  };
}

function render(license: LicenseRow, context: Awaited<ReturnType<typeof mailContext>>, to?: string): OutgoingMail {
  const { product, customer, resource } = context;
  const values: Record<Placeholder, string> = {
    CustomerName: customerName(license, customer),
    ProductName: product.name,
    LicenseId: license.licenseId,
    UserKey: license.userKey,
    ProductDownload: product.url ?? "",
  };
  return { to: recipient(license, customer, to), ...fill(resource, values), secrets: [license.userKey] };
}

/** The sample license a template is previewed with when no license is chosen (docs/email.md). */
export const SAMPLE_LICENSE = {
  to: "ada@example.com",
  values: {
    CustomerName: "Ada Lovelace",
    ProductName: "Sample product",
    LicenseId: "lic0000SAMPLE",
    UserKey: "SAMPL-E0000-00000-00000-00000",
    ProductDownload: "https://example.com/download",
  },
} as const satisfies { to: string; values: Record<Placeholder, string> };

/** A template rendered without sending: the message, and which template and license made it. */
export interface MailPreview {
  to: string;
  subject: string;
  body: string;
  isHtml: boolean;
  templateId: number;
  templateName: string;
  /** The license rendered, or none for the sample license. */
  licenseId?: string;
}

/**
 * Renders a license email without sending it: for `licenseId` exactly as POST /v1/email/license would send it (its
 * product's template, its address), or for the sample license (SAMPLE_LICENSE) with the oldest template; either with
 * the template `templateId` instead when one is chosen.
 */
export async function previewLicenseMail(
  db: Db,
  choice: { licenseId?: string | number | undefined; templateId?: number | undefined },
): Promise<MailPreview> {
  if (choice.licenseId !== undefined) {
    const license = await findLicense(db, choice.licenseId);
    const context = await mailContext(db, license.productId, license.customerId, choice.templateId);
    const { secrets: _, ...mail } = render(license, context);
    return {
      ...mail,
      templateId: context.resource.id,
      templateName: context.resource.name,
      licenseId: license.licenseId,
    };
  }
  const [resource] = await templateQuery(db, -1, choice.templateId);
  if (!resource && choice.templateId !== undefined) throw notFound400(EMAIL_TEMPLATE_TYPE, choice.templateId);
  if (!resource) throw noTemplate();
  return {
    to: SAMPLE_LICENSE.to,
    ...fill(resource, SAMPLE_LICENSE.values),
    templateId: resource.id,
    templateName: resource.name,
  };
}

/** The rendered license email for `licenseId`, addressed to `to` or the license's own address. */
export async function licenseMail(db: Db, licenseId: string | number, to?: string): Promise<OutgoingMail> {
  const license = await findLicense(db, licenseId);
  return render(license, await mailContext(db, license.productId, license.customerId), to);
}

/**
 * One email for several licenses (a purchase's, with every key): the template rendered for each license, the
 * bodies one after the other, the first's subject, addressed to `to` or the first license's own address. The
 * licenses are read in one query and each product's context once, so hundreds of keys cost a few D1 round trips.
 */
export async function licensesMail(db: Db, licenseIds: readonly number[], to?: string): Promise<OutgoingMail> {
  const rows = licenseIds.length
    ? await db
        .select()
        .from(licenses)
        .where(sql`${licenses.id} IN (SELECT value FROM json_each(${JSON.stringify(licenseIds)}))`)
        .orderBy(asc(licenses.id))
        .all()
    : [];
  const missing = licenseIds.find((id) => !rows.some((r) => r.id === id));
  if (missing !== undefined) throw notFound400("License", missing);
  const contexts = new Map<string, Promise<Awaited<ReturnType<typeof mailContext>>>>();
  const mails: OutgoingMail[] = [];
  for (const license of rows) {
    const key = `${license.productId}:${license.customerId ?? ""}`;
    let context = contexts.get(key);
    if (!context) contexts.set(key, (context = mailContext(db, license.productId, license.customerId)));
    mails.push(render(license, await context, to));
  }
  const first = mails[0];
  if (!first) throw new ApiError(400, "No license to email");
  return {
    ...first,
    body: mails.map((m) => m.body).join(first.isHtml ? "\n<hr>\n" : "\n\n"),
    secrets: mails.flatMap((m) => m.secrets ?? []),
  };
}
