/**
 * A session a user key opened shows that one key in full (issue 36, N14): any key of a customer, an expired
 * license's included, would otherwise list the user keys of all the customer's licenses. The customer's other
 * licenses are still listed, their keys shown by their last group only; a session opened by the emailed link (which
 * proves the customer's address) shows every key.
 */
import { describe, expect, it } from "vitest";
import { admin, call } from "./helpers";

const COOKIE = "__Host-portal-session";

async function license(values: Record<string, unknown>): Promise<{ id: number; userKey: string }> {
  const created = await admin("POST", "/v1/licenses", { license: values });
  expect(created.status, created.text).toBe(200);
  const id = created.body["id"] as number;
  const listed = await admin("GET", `/v1/licenses?filter=${encodeURIComponent(`id == ${id}`)}&select=userKey`);
  return { id, userKey: listed.body["licenses"][0].userKey };
}

async function portalLicenses(userKey: string) {
  const signIn = await call("POST", "/v1/portal/sign-in", {
    body: { userKey },
    headers: { "cf-connecting-ip": `198.51.100.${Math.floor(Math.random() * 250) + 1}` },
  });
  expect(signIn.status, signIn.text).toBe(200);
  const cookie = `${COOKIE}=${new RegExp(`${COOKIE}=([^;]+)`).exec(signIn.headers.get("set-cookie") ?? "")?.[1]}`;
  const res = await call("GET", "/v1/portal/licenses", {
    headers: { cookie, "x-csrf-token": signIn.body["csrfToken"] },
  });
  expect(res.status, res.text).toBe(200);
  return res;
}

describe("a user-key portal session", () => {
  it("shows its own key in full and the customer's other keys by their last group only, an expired key's too", async () => {
    const product = await admin("POST", "/v1/products", {
      product: { code: `keys-${crypto.randomUUID().slice(0, 8)}`, name: "Keys" },
    });
    const productId = product.body["productId"];
    const customer = await admin("POST", "/v1/customers", {
      customer: { firstName: "Kay", lastName: "Keys", email: `keys-${crypto.randomUUID().slice(0, 6)}@example.com` },
    });
    const customerId = customer.body["customerId"];
    const live = await license({ productId, customerId });
    const expired = await license({ productId, customerId, expireDate: "2020-01-01T00:00:00.000Z" });
    for (const [mine, theirs] of [
      [live, expired],
      [expired, live],
    ] as const) {
      const res = await portalLicenses(mine.userKey);
      const cards = res.body["licenses"] as { userKey: string }[];
      expect(cards).toHaveLength(2);
      expect(res.text).toContain(mine.userKey);
      expect(res.text).not.toContain(theirs.userKey);
      const masked = cards.find((c) => c.userKey !== mine.userKey)!.userKey;
      expect(masked.endsWith(theirs.userKey.split("-").at(-1)!)).toBe(true);
      expect(masked).toMatch(/^[•-]+-[0-9A-Z]+$/);
    }
  });
});
