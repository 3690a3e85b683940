/**
 * What Stripe's webhook events leave out, read with the official SDK (`stripe`, its fetch client: it runs in workerd)
 * and the vendor's restricted key (`Commerce:Stripe:ApiKey`, read access to Checkout Sessions): the line items of a
 * Checkout Session, which `checkout.session.completed` never carries (Stripe: "retrieve them with the API"). Only
 * reads; one list call per session (at most 100 lines, as Checkout allows), through `Commerce:Stripe:ApiUrl`.
 */
import Stripe from "stripe";
import type { Config } from "../kernel/config";
import type { PurchaseLine } from "./provider-events";

/** Why a Checkout purchase cannot be read: no key is set (the vendor sets one, then redelivers the event). */
export const NO_API_KEY =
  "Stripe Checkout sends no line items in checkout.session.completed: set Commerce:Stripe:ApiKey (a restricted key with read access to Checkout Sessions), then redeliver the event";

/** The SDK for the configured key and API address (stripe-mock in the tests), or undefined without a key. */
function client(config: Config): Stripe | undefined {
  const key = config["Commerce:Stripe:ApiKey"];
  if (!key) return undefined;
  const api = new URL(config["Commerce:Stripe:ApiUrl"]);
  const protocol = api.protocol === "http:" ? "http" : "https";
  return new Stripe(key, {
    httpClient: Stripe.createFetchHttpClient(),
    host: api.hostname,
    port: api.port || (protocol === "http" ? 80 : 443),
    protocol,
    maxNetworkRetries: 2,
    timeout: 10_000,
  });
}

/**
 * The lines of a Checkout Session: each line item's price and product ids (what a mapping names), quantity, unit
 * price and description; or the reason none can be read. A failure of Stripe's API throws (the event is then failed
 * and Stripe delivers it again).
 */
export async function checkoutLines(config: Config, sessionId: string): Promise<PurchaseLine[] | { failed: string }> {
  const stripe = client(config);
  if (!stripe) return { failed: NO_API_KEY };
  const items = await stripe.checkout.sessions.listLineItems(sessionId, { limit: 100 });
  return items.data.map((item) => {
    const price = item.price;
    const product = typeof price?.product === "string" ? price.product : (price?.product?.id ?? null);
    const quantity = item.quantity ?? 1;
    return {
      ids: [price?.id, product].filter((id): id is string => !!id),
      quantity,
      unitPrice: price?.unit_amount != null ? price.unit_amount / 100 : null,
      description: item.description || null,
    };
  });
}
