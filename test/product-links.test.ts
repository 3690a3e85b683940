/**
 * A product's purchaseUrl and renewalUrl are links customers click (the customer portal, the update check): http(s)
 * only (issue 36, N17). The API refuses `javascript:` and `data:` (400 naming the field), and a value stored before
 * the rule (written straight into D1 here) is never handed to a customer by the portal.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { admin, call } from "./helpers";

const COOKIE = "__Host-portal-session";
const code = () => `links-${crypto.randomUUID().slice(0, 8)}`;

describe("product links", () => {
  it.each(["javascript:alert(document.cookie)", "data:text/html,<script>alert(1)</script>", "ftp://example.com/x"])(
    "refuses %s as purchaseUrl or renewalUrl, on create and on update",
    async (url) => {
      for (const field of ["purchaseUrl", "renewalUrl"]) {
        const created = await admin("POST", "/v1/products", { product: { code: code(), name: "L", [field]: url } });
        expect(created.status, created.text).toBe(400);
        expect(created.text).toContain(field);
      }
      const ok = await admin("POST", "/v1/products", {
        product: {
          code: code(),
          name: "L",
          purchaseUrl: "https://shop.example.com/buy",
          renewalUrl: "http://x.test/r",
        },
      });
      expect(ok.status, ok.text).toBe(200);
      const id = ok.body["productId"];
      const updated = await admin("PUT", "/v1/products", { product: { id, renewalUrl: url } });
      expect(updated.status, updated.text).toBe(400);
      const listed = await admin("GET", `/v1/products?filter=${encodeURIComponent(`id == ${id}`)}`);
      expect(listed.body["products"][0].renewalUrl).toBe("http://x.test/r");
    },
  );

  it("never hands a customer a link stored before the rule", async () => {
    const product = await admin("POST", "/v1/products", { product: { code: code(), name: "Legacy" } });
    const productId = product.body["productId"] as number;
    await env.DB.prepare("UPDATE products SET renewal_url = ?, purchase_url = ? WHERE id = ?")
      .bind("javascript:alert(1)", "https://shop.example.com/buy", productId)
      .run();
    const email = `links-${crypto.randomUUID().slice(0, 6)}@example.com`;
    const customer = await admin("POST", "/v1/customers", { customer: { firstName: "Ann", lastName: "L", email } });
    const license = await admin("POST", "/v1/licenses", {
      license: { productId, customerId: customer.body["customerId"] },
    });
    expect(license.status, license.text).toBe(200);
    const listed = await admin(
      "GET",
      `/v1/licenses?filter=${encodeURIComponent(`id == ${license.body["id"]}`)}&select=userKey`,
    );
    const signIn = await call("POST", "/v1/portal/sign-in", {
      body: { userKey: listed.body["licenses"][0].userKey },
      headers: { "cf-connecting-ip": `203.0.113.${Math.floor(Math.random() * 250) + 1}` },
    });
    expect(signIn.status, signIn.text).toBe(200);
    const cookie = `${COOKIE}=${new RegExp(`${COOKIE}=([^;]+)`).exec(signIn.headers.get("set-cookie") ?? "")?.[1]}`;
    const licenses = await call("GET", "/v1/portal/licenses", {
      headers: { cookie, "x-csrf-token": signIn.body["csrfToken"] },
    });
    expect(licenses.status, licenses.text).toBe(200);
    const [card] = licenses.body["licenses"];
    expect(card.purchaseUrl).toBe("https://shop.example.com/buy");
    expect(card.renewalUrl ?? null).toBeNull();
    expect(licenses.text).not.toContain("javascript:");
  });
});
