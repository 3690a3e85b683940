/** Sample requests for the customer portal (/v1/portal/*): each signs in a fresh customer through the portal itself. */
import { env } from "cloudflare:workers";
import { ADMIN, admin, call } from "../helpers";
import { newCustomer } from "./commerce";
import type { Sample, Samples } from "./kit";
import { newLicense } from "./licenses";

let address = 0;
/** A fresh client address per sign-in, so the walk never meets login protection. */
const fresh = () => ({ "cf-connecting-ip": `203.0.${113 + Math.floor(++address / 250)}.${(address % 250) + 1}` });

/** A customer's Activation license with one activated machine: its ids, user key and the customer's email. */
async function customerLicense() {
  const email = `portal-${crypto.randomUUID().slice(0, 8)}@example.com`;
  const customerId = await newCustomer();
  await admin("PUT", "/v1/customers", { customer: { id: customerId, email } });
  const { id, licenseId } = await newLicense({ customerId, licensingMode: "Activation", maxClients: 5 });
  const listed = await admin("GET", `/v1/licenses?filter=${encodeURIComponent(`id == ${id}`)}&select=userKey`);
  const userKey = listed.body["licenses"][0].userKey as string;
  const activated = await call("POST", "/v1/license/activate", {
    key: ADMIN.key,
    body: { userKey, machineId: "PC-1" },
  });
  if (activated.status !== 200) throw new Error(`fixture activation: ${activated.status} ${activated.text}`);
  return { licenseId, userKey, email };
}

/** A portal session of a fresh customer: the cookie and CSRF header every portal route takes. */
async function session(): Promise<{ licenseId: string; headers: Record<string, string> }> {
  const license = await customerLicense();
  const res = await call("POST", "/v1/portal/sign-in", { body: { userKey: license.userKey }, headers: fresh() });
  if (res.status !== 200) throw new Error(`fixture portal sign-in: ${res.status} ${res.text}`);
  const cookie = /__Host-portal-session=[^;]+/.exec(res.headers.get("set-cookie") ?? "")![0];
  return { licenseId: license.licenseId, headers: { cookie, "x-csrf-token": res.body["csrfToken"] as string } };
}

/** The link of the newest sign-in email to `to` (sent after the answer: polled). */
async function emailedLink(to: string): Promise<string> {
  for (let i = 0; i < 100; i++) {
    const row = await env.DB.prepare("SELECT body FROM email_outbox WHERE to_address = ? ORDER BY id DESC LIMIT 1")
      .bind(to)
      .first<{ body: string }>();
    const link = /\/v1\/portal\/sign-in\/[0-9A-Za-z]{32}/.exec(row?.body ?? "")?.[0];
    if (link) return link;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`fixture: no sign-in email to ${to}`);
}

const inSession = (build: (s: { licenseId: string }) => Omit<Sample, "headers">) => async (): Promise<Sample> => {
  const s = await session();
  return { ...build(s), headers: s.headers };
};

export const portalSamples: Samples = {
  "GET /v1/portal/branding": async () => ({}),
  "POST /v1/portal/sign-in": async () => ({ body: { userKey: (await customerLicense()).userKey }, headers: fresh() }),
  "GET /v1/portal/sign-in/{token}": async () => {
    const { email } = await customerLicense();
    await call("POST", "/v1/portal/sign-in", { body: { email } });
    return { path: await emailedLink(email), headers: { accept: "application/json", ...fresh() } };
  },
  "POST /v1/portal/sign-out": inSession(() => ({})),
  "GET /v1/portal/me": inSession(() => ({})),
  "GET /v1/portal/licenses": inSession(() => ({})),
  "GET /v1/portal/licenses/{licenseId}": inSession((s) => ({ path: `/v1/portal/licenses/${s.licenseId}` })),
  "POST /v1/portal/licenses/{licenseId}/machines/{machineId}/deactivate": inSession((s) => ({
    path: `/v1/portal/licenses/${s.licenseId}/machines/PC-1/deactivate`,
  })),
  "GET /v1/portal/licenses/{licenseId}/downloads": inSession((s) => ({
    path: `/v1/portal/licenses/${s.licenseId}/downloads`,
  })),
  "GET /v1/portal/orders": inSession(() => ({})),
  "PUT /v1/portal/licenses/{licenseId}/licensee": inSession((s) => ({
    path: `/v1/portal/licenses/${s.licenseId}/licensee`,
    body: { name: "New Licensee" },
  })),
};
