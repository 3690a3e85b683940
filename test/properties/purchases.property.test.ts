/**
 * Money adds up whatever order a provider's events arrive in, however often (issue 36), with fast-check: for each
 * provider, a purchase of 1 to 4 licenses or seats, with or without its refund, the events shuffled and some delivered
 * again. At the end there is one order; with the refund every license of it is revoked and the order is refunded;
 * without it the licenses are exactly what was paid for (N licenses, or one seats license of N × the template's
 * seats), none revoked. Renewals are not in the model: a downgrade renewal delivered before its purchase is
 * remembered only as a period end (docs/decisions/0035-money-and-machines-add-up.md, still open).
 */
import fc from "fast-check";
import { beforeAll, describe, expect, it } from "vitest";
import { OrderStatus, PaymentStatus } from "../../src/records/orders";
import { KITS, deliver } from "../commerce-kit";
import { admin } from "../helpers";

const SEATS_PER = 3;
const inDays = (days: number) => new Date(Math.floor((Date.now() + days * 86_400_000) / 1000) * 1000).toISOString();

beforeAll(async () => {
  const product = await admin("POST", "/v1/products", {
    product: { code: `prop-${crypto.randomUUID().slice(0, 6)}`, name: "Property" },
  });
  const productId = product.body["productId"];
  const template = async (licensingMode: string, maxClients: number) =>
    (
      await admin("POST", "/v1/license-templates", {
        licenseTemplate: { name: `prop ${licensingMode}`, productId, licensingMode, maxClients, expireDays: 365 },
      })
    ).body["licenseTemplateId"];
  const licenses = await template("Activation", 2);
  const seats = await template("Floating", SEATS_PER);
  for (const kit of KITS)
    for (const [externalId, templateId, quantityMode] of [
      [kit.ids.licenses, licenses, "licenses"],
      [kit.ids.seats, seats, "seats"],
    ] as const) {
      const res = await admin("POST", "/v1/commerce/mappings", {
        mapping: { provider: kit.name, externalId, templateId, quantityMode },
      });
      expect([200, 400], res.text).toContain(res.status);
    }
});

describe.each(KITS)("$name purchases in any order, delivered any number of times", (kit) => {
  it("make one order and exactly the licenses paid for, all revoked when refunded", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 4 }),
        fc.boolean(),
        fc.boolean(),
        fc.array(fc.nat(1000), { minLength: 8, maxLength: 8 }),
        fc.array(fc.boolean(), { minLength: 8, maxLength: 8 }),
        async (quantity, seats, refunded, order, again) => {
          const sale = kit.sale();
          const item = seats ? kit.ids.seats : kit.ids.licenses;
          const events = [
            ...kit.purchase(sale, { item, quantity, periodEnd: inDays(30) }),
            ...(refunded ? [kit.refund(sale)] : []),
          ];
          const shuffled = events
            .map((event, i) => ({ event, key: order[i]! }))
            .sort((a, b) => a.key - b.key)
            .flatMap(({ event }, i) => (again[i] ? [event, event] : [event]));
          const orders = new Set<number>();
          for (const event of shuffled) {
            const res = await deliver(kit, event);
            expect(res.status, res.text).toBe(200);
            expect(["applied", "remembered", "duplicate"], res.text).toContain(res.body["result"]);
            if (res.body["orderId"]) orders.add(res.body["orderId"]);
          }
          expect([...orders]).toHaveLength(1);
          const [orderId] = [...orders];
          const licenses = (await admin("GET", `/v1/licenses?filter=${encodeURIComponent(`orderId == ${orderId}`)}`))
            .body["licenses"] as { revoked: boolean; maxClients: number }[];
          const placed = (await admin("GET", `/v1/orders?filter=${encodeURIComponent(`id == ${orderId}`)}`)).body[
            "orders"
          ][0];
          if (refunded) {
            expect(licenses.every((l) => l.revoked)).toBe(true);
            expect(placed).toMatchObject({
              status: OrderStatus.indexOf("Cancelled"),
              paymentStatus: PaymentStatus.indexOf("Refunded"),
            });
          } else {
            expect(licenses.some((l) => l.revoked)).toBe(false);
            if (seats) expect(licenses.map((l) => l.maxClients)).toEqual([SEATS_PER * quantity]);
            else expect(licenses).toHaveLength(quantity);
          }
        },
      ),
      { numRuns: 12 },
    );
  }, 120_000);
});
