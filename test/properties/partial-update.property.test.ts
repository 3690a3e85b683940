/**
 * SPEC's partial update rule (PUT changes only the fields present; an explicit false, 0 or null is applied), as
 * properties: `toRow` (src/http/entity.ts) keeps exactly the writable keys it is given, and a random subset of
 * fields sent through `PUT /v1/customers` and `PUT /v1/orders` (the CRUD builder) changes exactly those fields.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { admin } from "../helpers";
import { Customer } from "../../src/records/customers";
import { Order, OrderStatus, PaymentStatus } from "../../src/records/orders";

/** Text of 1 to `max` UTF-16 units (the unit zod counts), any graphemes. */
const text = (max: number) =>
  fc.string({ unit: "grapheme", minLength: 1, maxLength: Math.min(max, 12) }).filter((t) => t.length <= max);

/**
 * Customer fields and values a client may send: not `code` (unique) nor `company`, which stays set, since a customer
 * needs one of company, lastName or email (a PUT clearing all three is refused, rightly).
 */
const customerFields = {
  title: text(64),
  firstName: text(128),
  lastName: text(128),
  email: text(256),
  city: text(128),
  countryCode: text(8),
  notes: text(400),
  isReseller: fc.boolean(),
  rating: fc.integer({ min: 0, max: 100 }),
};
type CustomerValues = { [K in keyof typeof customerFields]?: unknown };

/** Stored NOT NULL: null is refused for them, so a patch sends a value. */
const NOT_NULL = new Set(["isReseller"]);

/** A full record and a patch of some of its fields, each set to a value or to null (clear). */
const full = fc.record(customerFields);
const patch = fc.record(
  Object.fromEntries(
    Object.entries(customerFields).map(([k, arb]) => [
      k,
      NOT_NULL.has(k) ? arb : fc.option(arb as fc.Arbitrary<unknown>, { nil: null, freq: 3 }),
    ]),
  ),
  { requiredKeys: [] },
) as fc.Arbitrary<CustomerValues>;

/** The record as the API shows it: null properties are omitted (Application:IgnoreJSonDefaultValues). */
function shown(values: CustomerValues): CustomerValues {
  return Object.fromEntries(Object.entries(values).filter(([, v]) => v !== null));
}

async function readCustomer(id: number): Promise<Record<string, unknown>> {
  const res = await admin("GET", `/v1/customers?filter=${encodeURIComponent(`id == ${id}`)}`);
  expect(res.status, res.text).toBe(200);
  return res.body["customers"][0];
}

describe("toRow", () => {
  it("keeps exactly the writable keys sent, converting enum names and normalizing dates", () => {
    const orderInput = fc.record(
      {
        id: fc.integer({ min: 1 }),
        orderNumber: text(64),
        customerId: fc.integer({ min: 1, max: 1000 }),
        status: fc.oneof(fc.constantFrom(...OrderStatus), fc.integer({ min: 0, max: 3 })),
        paymentStatus: fc.option(fc.constantFrom(...PaymentStatus), { nil: null }),
        total: fc.double({ min: 0, max: 1e6, noNaN: true }),
        paymentDate: fc.option(
          fc
            .date({ min: new Date("2000-01-01"), max: new Date("2100-01-01"), noInvalidDate: true })
            .map((d) => d.toISOString().replace(".000Z", "Z")),
          { nil: null },
        ),
        createdAt: fc.constant("2026-01-01T00:00:00.000Z"),
        description: fc.constant(undefined),
      },
      { requiredKeys: [] },
    );
    fc.assert(
      fc.property(orderInput, (input) => {
        const row = Order.toRow(input as Record<string, unknown>);
        const writable = Object.keys(input).filter(
          (k) =>
            input[k as keyof typeof input] !== undefined && !Order.fields[k as keyof typeof Order.fields]?.readOnly,
        );
        expect(Object.keys(row).sort()).toEqual(writable.sort());
        if (typeof input.status === "string") expect(row["status"]).toBe(OrderStatus.indexOf(input.status));
        if (typeof input.status === "number") expect(row["status"]).toBe(input.status);
        if (typeof input.paymentDate === "string")
          expect(row["paymentDate"]).toBe(new Date(input.paymentDate).toISOString());
        if (input.paymentStatus === null) expect(row["paymentStatus"]).toBeNull();
      }),
      { numRuns: 500 },
    );
  });
});

describe("PUT through the CRUD builder", () => {
  it("changes exactly the customer fields sent, applying false, 0 and null", async () => {
    await fc.assert(
      fc.asyncProperty(full, patch, async (initial, change) => {
        const created = await admin("POST", "/v1/customers", { customer: { ...initial, company: "Acme" } });
        expect(created.status, created.text).toBe(200);
        const id = created.body["customerId"] as number;
        const before = await readCustomer(id);
        const res = await admin("PUT", "/v1/customers", { customer: { id, ...change } });
        expect(res.status, res.text).toBe(200);
        const after = await readCustomer(id);
        const tracked = Object.keys(customerFields);
        const pick = (r: Record<string, unknown>) =>
          Object.fromEntries(tracked.filter((k) => k in r).map((k) => [k, r[k]]));
        expect(pick(after)).toEqual(shown({ ...pick(before), ...change }));
        // What the PUT did not name stays, server-owned fields included.
        expect(after["code"]).toBe(before["code"]);
        expect(after["createdAt"]).toBe(before["createdAt"]);
      }),
      { numRuns: 40 },
    );
  }, 120_000);

  it("changes exactly the order fields sent, enumerations by name or number", async () => {
    const customerId = (await admin("POST", "/v1/customers", { customer: { company: "Orders Inc" } })).body[
      "customerId"
    ] as number;
    const orderPatch = fc.record(
      {
        status: fc.oneof(fc.constantFrom(...OrderStatus), fc.integer({ min: 0, max: 3 })),
        paymentStatus: fc.oneof(fc.constantFrom(...PaymentStatus), fc.integer({ min: 0, max: 2 })),
        total: fc.option(fc.integer({ min: 0, max: 10_000 }), { nil: null }),
        currency: fc.option(fc.constantFrom("EUR", "USD", "NOK"), { nil: null }),
        description: fc.option(text(100), { nil: null }),
      },
      { requiredKeys: [] },
    );
    await fc.assert(
      fc.asyncProperty(orderPatch, async (change) => {
        const created = await admin("POST", "/v1/orders", {
          order: {
            customerId,
            status: "Processing",
            paymentStatus: "Unpaid",
            total: 10,
            currency: "EUR",
            description: "first",
          },
        });
        const id = created.body["orderId"] as number;
        const read = async () =>
          (await admin("GET", `/v1/orders?filter=${encodeURIComponent(`id == ${id}`)}`)).body["orders"][0] as Record<
            string,
            unknown
          >;
        const before = await read();
        expect((await admin("PUT", "/v1/orders", { order: { id, ...change } })).status).toBe(200);
        const after = await read();
        const asNumber = (v: unknown, names: readonly string[]) => (typeof v === "string" ? names.indexOf(v) : v);
        const expected: Record<string, unknown> = { ...before };
        for (const [k, v] of Object.entries(change)) {
          const value =
            k === "status" ? asNumber(v, OrderStatus) : k === "paymentStatus" ? asNumber(v, PaymentStatus) : v;
          if (value === null) delete expected[k];
          else expected[k] = value;
        }
        const { updatedAt: _a, ...rest } = after;
        const { updatedAt: _b, ...expectedRest } = expected;
        expect(rest).toEqual(expectedRest);
      }),
      { numRuns: 30 },
    );
  }, 120_000);
});

// The Customer entity is the declaration the PUT above goes through.
void Customer;
