/** Sample requests for licenses, license tokens, license traces and received reports. */
import { env } from "cloudflare:workers";
import { admin } from "../helpers";
import { newCustomer, newOrder, newProduct, newTemplate } from "./commerce";
import type { Samples } from "./kit";

/** A license created through the API: its integer id and its lic… id. */
export async function newLicense(license: Record<string, unknown> = {}): Promise<{ id: number; licenseId: string }> {
  const res = await admin("POST", "/v1/licenses", { license: { productId: await newProduct(), ...license } });
  if (res.status !== 200) throw new Error(`fixture license: ${res.status} ${res.text}`);
  return { id: res.body["id"], licenseId: res.body["licenseId"] };
}

/** An Activation-mode license with one hand-issued token. */
async function newToken(): Promise<{ licenseId: string; tokenId: number }> {
  const { licenseId } = await newLicense({ licensingMode: "Activation" });
  const res = await admin("POST", `/v1/licenses/${licenseId}/tokens`, { licenseToken: { machineId: "M-1" } });
  if (res.status !== 200) throw new Error(`fixture token: ${res.status} ${res.text}`);
  return { licenseId, tokenId: res.body["licenseTokenId"] };
}

/** A floating seat borrowed through the licensing API: its license's lic… id and its license file row's id. */
async function newBorrow(): Promise<{ licenseId: string; fileId: number }> {
  const { id, licenseId } = await newLicense({ licensingMode: "Floating", maxClients: 1 });
  const row = await env.DB.prepare("SELECT user_key FROM licenses WHERE id = ?").bind(id).first<{ user_key: string }>();
  const res = await admin("POST", "/v1/license/borrow", {
    userKey: row!.user_key,
    machineId: "m",
    clientId: "c",
    hours: 1,
  });
  if (res.status !== 200) throw new Error(`fixture borrow: ${res.status} ${res.text}`);
  const file = await env.DB.prepare("SELECT id FROM license_files WHERE license_id = ?")
    .bind(id)
    .first<{ id: number }>();
  return { licenseId, fileId: file!.id };
}

/** A received report, written as the licensing runtime would (no Management route creates one). */
export async function newReport(values: { address?: string; licenseId?: number } = {}): Promise<number> {
  const now = new Date().toISOString();
  const row = await env.DB.prepare(
    "INSERT INTO reports (name, address, license_id, created_at, updated_at) VALUES ('ExceptionReport', ?, ?, ?, ?) RETURNING id",
  )
    .bind(values.address ?? null, values.licenseId ?? null, now, now)
    .first<{ id: number }>();
  return row!.id;
}

export const licenseSamples: Samples = {
  "GET /v1/licenses": async () => ({}),
  "POST /v1/licenses": async () => ({
    body: { license: { productId: await newProduct(), licenseType: "Trial", maxClients: 2 } },
  }),
  "PUT /v1/licenses": async () => ({ body: { license: { id: (await newLicense()).id, edition: "Ultimate" } } }),
  "DELETE /v1/licenses/{licenseId}": async () => ({ path: `/v1/licenses/${(await newLicense()).licenseId}` }),
  "GET /v1/customers/{customerId}/licenses": async () => ({ path: `/v1/customers/${await newCustomer()}/licenses` }),
  "GET /v1/orders/{orderId}/licenses": async () => ({ path: `/v1/orders/${await newOrder()}/licenses` }),
  "GET /v1/license-templates/{templateId}/licenses": async () => ({
    path: `/v1/license-templates/${await newTemplate()}/licenses`,
  }),
  "GET /v1/license-tokens": async () => ({}),
  "GET /v1/licenses/{licenseId}/tokens": async () => ({
    path: `/v1/licenses/${(await newLicense()).licenseId}/tokens`,
  }),
  "POST /v1/licenses/{licenseId}/tokens": async () => ({
    path: `/v1/licenses/${(await newLicense({ licensingMode: "Activation" })).licenseId}/tokens`,
    body: { licenseToken: { machineId: "M-2", clientName: "Office PC" } },
  }),
  "DELETE /v1/licenses/{licenseId}/tokens/{tokenId}": async () => {
    const t = await newToken();
    return { path: `/v1/licenses/${t.licenseId}/tokens/${t.tokenId}` };
  },
  "GET /v1/licenses/{licenseId}/files": async () => ({
    path: `/v1/licenses/${(await newBorrow()).licenseId}/files`,
  }),
  "POST /v1/licenses/{licenseId}/files/{fileId}/return": async () => {
    const b = await newBorrow();
    return { path: `/v1/licenses/${b.licenseId}/files/${b.fileId}/return` };
  },
  "GET /v1/license-traces": async () => ({}),
  "DELETE /v1/license-traces": async () => ({ path: `/v1/license-traces?licenseId=${(await newLicense()).licenseId}` }),
  "POST /v1/license-traces/geolocation": async () => ({ body: {} }),
  "GET /v1/reports": async () => ({}),
  "DELETE /v1/reports/{reportId}": async () => ({ path: `/v1/reports/${await newReport()}` }),
  "POST /v1/reports/geolocation": async () => ({ body: { ids: [await newReport({ address: "203.0.113.7" })] } }),
};
