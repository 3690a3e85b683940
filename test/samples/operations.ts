/**
 * Sample requests for the service operations: settings, the service log, server info and email. The writing ones are
 * harmless to the rest of the walk: PUT stores a setting's default value, DELETE removes only entries from before
 * 2000, and mail goes to the outbox (no EMAIL binding in tests).
 */
import { env } from "cloudflare:workers";
import { type Samples, created } from "./kit";
import { newProduct } from "./commerce";

const hex = (n: number) =>
  [...crypto.getRandomValues(new Uint8Array(n))]
    .map((b) => b.toString(16).padStart(2, "0"))
    .join("")
    .toUpperCase();

/**
 * Inserts a license row directly (the license routes are another module's), for a product made through the API.
 * Returns its public id and integer id.
 */
export async function newLicenseRow(
  fields: {
    productId?: number;
    customerId?: number | null;
    licenseeName?: string | null;
    licenseeEmail?: string | null;
  } = {},
) {
  const productId = fields.productId ?? (await newProduct());
  const licenseId = `lic${hex(4)}`;
  const userKey = [hex(3), hex(3), hex(3), hex(3), hex(3)].map((part) => part.slice(0, 5)).join("-");
  const now = new Date().toISOString();
  const row = await env.DB.prepare(
    `INSERT INTO licenses (license_id, user_key, product_id, customer_id, licensee_name, licensee_email, issue_date, created_at, updated_at)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`,
  )
    .bind(
      licenseId,
      userKey,
      productId,
      fields.customerId ?? null,
      fields.licenseeName ?? null,
      fields.licenseeEmail ?? null,
      now,
      now,
      now,
    )
    .first<{ id: number }>();
  return { licenseId, id: row!.id, userKey, productId };
}

/** An EmailTemplate resource, so the license email has something to render. */
export const newEmailTemplate = (
  data = "Dear {CustomerName}, your key for {ProductName} is {UserKey} ({LicenseId}).",
) => created("/v1/resources", { resource: { name: "Your license", type: "EmailTemplate", data } }, "resourceId");

export const operationSamples: Samples = {
  "GET /v1/settings": async () => ({}),
  "PUT /v1/settings": async () => ({ body: { settings: [{ name: "Updates:FeedCacheSeconds", value: "60" }] } }),
  "GET /v1/log": async () => ({}),
  "GET /v1/log/levels": async () => ({}),
  "DELETE /v1/log": async () => ({ path: "/v1/log?before=2000-01-01T00:00:00.000Z" }),
  "GET /v1/info": async () => ({}),
  "GET /v1/overview": async () => ({}),
  "POST /v1/email/send": async () => ({ body: { to: "someone@example.com", subject: "Sample", body: "Hello" } }),
  "POST /v1/email/license": async () => {
    await newEmailTemplate();
    const license = await newLicenseRow({ licenseeEmail: "licensee@example.com" });
    return { body: { licenseId: license.licenseId } };
  },
  "POST /v1/email/preview": async () => {
    await newEmailTemplate();
    return { body: {} };
  },
  "GET /v1/email/outbox": async () => ({}),
  "POST /v1/email/outbox/{emailId}/resend": async () => {
    const emailId = await created(
      "/v1/email/send",
      { to: "someone@example.com", subject: "Again", body: "Hi" },
      "emailId",
    );
    return { path: `/v1/email/outbox/${emailId}/resend` };
  },
};
