/**
 * Money adds up whatever order a provider's events arrive in, however often (issue 36), with fast-check: for each
 * provider, a purchase of 1 to 4 licenses or seats, perhaps its renewal for the same, fewer (a downgrade) or, in
 * seats, more, perhaps its refund or dispute; the events shuffled and some delivered again. At the end there is one
 * order. Refunded or disputed, every license of it is revoked and the order cancelled (a refund: refunded).
 * Otherwise the licenses are exactly what was paid for, none revoked: N licenses, or one seats license of N × the
 * template's seats, until the purchase's period; renewed, the licenses the renewal paid for (or the seats license
 * with its seats) until the renewal's period and the others until the purchase's.
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

const at = (iso: string) => Date.parse(iso);

describe.each(KITS)("$name purchases in any order, delivered any number of times", (kit) => {
  it("make one order and exactly the licenses paid for, renewals and downgrades applied, all revoked when the money goes back", async () => {
    const endings = kit.dispute ? (["none", "refund", "dispute"] as const) : (["none", "refund"] as const);
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 4 }),
        fc.boolean(),
        fc.option(fc.integer({ min: 1, max: 4 }), { nil: undefined }),
        fc.constantFrom(...endings),
        fc.array(fc.nat(1000), { minLength: 8, maxLength: 8 }),
        fc.array(fc.boolean(), { minLength: 8, maxLength: 8 }),
        async (quantity, seats, renewedFor, ending, order, again) => {
          const sale = kit.sale();
          const item = seats ? kit.ids.seats : kit.ids.licenses;
          const [firstEnd, renewedEnd] = [inDays(30), inDays(60)];
          // A renewal in licenses mode pays for as many licenses or fewer (an upgrade there is new licenses, which
          // the vendor issues); in seats mode for any number of seats.
          const renewal = renewedFor === undefined ? undefined : seats ? renewedFor : Math.min(renewedFor, quantity);
          const events = [
            ...kit.purchase(sale, { item, quantity, periodEnd: firstEnd }),
            ...(renewal ? [kit.renewal(sale, renewedEnd, { item, quantity: renewal })] : []),
            ...(ending === "refund" ? [kit.refund(sale)] : ending === "dispute" ? [kit.dispute!(sale)] : []),
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
            .body["licenses"] as { revoked: boolean; maxClients: number; expireDate: string }[];
          const placed = (await admin("GET", `/v1/orders?filter=${encodeURIComponent(`id == ${orderId}`)}`)).body[
            "orders"
          ][0];
          if (ending !== "none") {
            expect(licenses.every((l) => l.revoked)).toBe(true);
            expect(placed).toMatchObject({
              status: OrderStatus.indexOf("Cancelled"),
              paymentStatus: PaymentStatus.indexOf(ending === "refund" ? "Refunded" : "Paid"),
            });
            return;
          }
          expect(licenses.some((l) => l.revoked)).toBe(false);
          const until = (l: { expireDate: string }) => at(l.expireDate);
          if (seats) {
            expect(licenses.map((l) => l.maxClients)).toEqual([SEATS_PER * (renewal ?? quantity)]);
            expect(licenses.map(until)).toEqual([at(renewal ? renewedEnd : firstEnd)]);
          } else {
            expect(licenses).toHaveLength(quantity);
            const renewedCount = licenses.filter((l) => until(l) === at(renewedEnd)).length;
            const firstCount = licenses.filter((l) => until(l) === at(firstEnd)).length;
            expect([renewedCount, firstCount]).toEqual(renewal ? [renewal, quantity - renewal] : [0, quantity]);
          }
        },
      ),
      {
        numRuns: 16,
        // Found by this test: a renewal between the payment and its invoice opened a purchase of its own, which the
        // purchase then ignored (its period and what it paid for lost).
        examples: [
          [1, false, 1, "none", [10, 0, 0, 0, 0, 0, 0, 0], Array<boolean>(8).fill(false)],
          [2, false, 1, "none", [0, 287, 0, 0, 0, 0, 0, 0], Array<boolean>(8).fill(false)],
          [1, true, 2, "none", [1, 0, 0, 0, 0, 0, 0, 0], Array<boolean>(8).fill(false)],
        ],
      },
    );
  }, 180_000);
});
