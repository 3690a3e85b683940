/** Sample requests for payments to licenses (CONTRACT section 10): the providers' webhook, mappings, purchases, events. */
import { toHex } from "../../src/kernel/crypto";
import { newTemplate } from "./commerce";
import { type Samples, created } from "./kit";

const unique = () => crypto.randomUUID().slice(0, 8);
const newMapping = async () =>
  created(
    "/v1/commerce/mappings",
    { mapping: { provider: "stripe", externalId: `price_${unique()}`, templateId: await newTemplate() } },
    "mappingId",
  );

/** A Lemon Squeezy event the service receives and ignores, signed as Lemon Squeezy signs (vitest.config.ts secret). */
async function signedIgnoredEvent() {
  const body = { meta: { event_name: "customer_created" }, data: { type: "customers", id: unique(), attributes: {} } };
  const enc = new TextEncoder();
  const key = await crypto.subtle.importKey(
    "raw",
    enc.encode("test-commerce-lemonsqueezy"),
    { name: "HMAC", hash: "SHA-256" },
    false,
    ["sign"],
  );
  const signature = toHex(await crypto.subtle.sign("HMAC", key, enc.encode(JSON.stringify(body))));
  return { path: "/v1/commerce/lemonsqueezy/webhook", body, headers: { "x-signature": signature } };
}

export const paymentSamples: Samples = {
  "POST /v1/commerce/{provider}/webhook": signedIgnoredEvent,
  "GET /v1/commerce/mappings": async () => ({}),
  "POST /v1/commerce/mappings": async () => ({
    body: { mapping: { provider: "paddle", externalId: `pri_${unique()}`, templateId: await newTemplate() } },
  }),
  "PUT /v1/commerce/mappings": async () => ({ body: { mapping: { id: await newMapping(), quantityMode: "seats" } } }),
  "DELETE /v1/commerce/mappings/{mappingId}": async () => ({ path: `/v1/commerce/mappings/${await newMapping()}` }),
  "GET /v1/commerce/purchases": async () => ({}),
  "GET /v1/commerce/events": async () => ({}),
};
