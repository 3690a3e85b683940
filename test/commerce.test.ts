/**
 * Customers, contacts, products, orders and their lines, product releases (SPEC release rules), release assemblies
 * and templates, license templates and assemblies: create, list, partial update, delete and the referential rules,
 * through the API.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { admin, countRows, setSetting } from "./helpers";

async function post(path: string, body: unknown, idName: string): Promise<number> {
  const res = await admin("POST", path, body);
  expect(res.status, res.text).toBe(200);
  return res.body[idName];
}
const q = (expr: string) => encodeURIComponent(expr);

describe("customers and contacts", () => {
  it("generates a unique code and needs one of company, lastName or email", async () => {
    const id = await post(
      "/v1/customers",
      { customer: { company: "Initech", email: "it@initech.example", isReseller: true } },
      "customerId",
    );
    const [customer] = (await admin("GET", `/v1/customers?filter=${q(`id == ${id}`)}`)).body["customers"];
    expect(customer).toMatchObject({ company: "Initech", isReseller: true });
    expect(customer.code).toMatch(/^C-[0-9A-Z]{8}$/);

    const before = await countRows("customers");
    const nameless = await admin("POST", "/v1/customers", { customer: { city: "Oslo", firstName: "Ann" } });
    expect(nameless.status).toBe(400);
    expect(nameless.body["message"]).toBe("A customer needs one of company, lastName or email");
    expect(await countRows("customers")).toBe(before);

    const cleared = await admin("PUT", "/v1/customers", { customer: { id, company: null, email: null } });
    expect(cleared.status).toBe(400);
    expect((await admin("PUT", "/v1/customers", { customer: { id, company: null } })).status).toBe(200);

    const duplicate = await admin("POST", "/v1/customers", { customer: { lastName: "Dup", code: customer.code } });
    expect(duplicate.status).toBe(400);
    expect(duplicate.body["message"]).toBe("A Customer with the same code already exists");
  });

  it("keeps contacts under an existing customer, lists them per customer and deletes them with it", async () => {
    const customerId = await post("/v1/customers", { customer: { lastName: "Holder" } }, "customerId");
    const other = await post("/v1/customers", { customer: { lastName: "Other" } }, "customerId");
    const missing = await admin("POST", "/v1/contacts", { contact: { customerId: 987654, lastName: "Ghost" } });
    expect(missing.status).toBe(400);
    expect(missing.body["message"]).toBe("Customer 987654 not found (customerId)");
    expect((await admin("POST", "/v1/contacts", { contact: { customerId } })).status).toBe(400);

    const contactId = await post(
      "/v1/contacts",
      { contact: { customerId, lastName: "Doe", firstName: "Jo", notify: true } },
      "contactId",
    );
    await post("/v1/contacts", { contact: { customerId: other, lastName: "Else" } }, "contactId");
    const listed = await admin("GET", `/v1/customers/${customerId}/contacts`);
    expect(listed.body).toMatchObject({
      totalContactsCount: 1,
      contacts: [{ id: contactId, lastName: "Doe", notify: true, customerId }],
    });

    expect((await admin("DELETE", `/v1/customers/${customerId}`)).status).toBe(200);
    expect((await admin("GET", `/v1/contacts?filter=${q(`id == ${contactId}`)}`)).body["totalContactsCount"]).toBe(0);
    expect((await admin("GET", `/v1/customers/${customerId}/contacts`)).body["message"]).toBe(
      `Customer ${customerId} not found`,
    );
  });

  it("refuses to delete a customer with orders, saying why", async () => {
    const customerId = await post("/v1/customers", { customer: { company: "Busy" } }, "customerId");
    await post("/v1/orders", { order: { customerId } }, "orderId");
    await post("/v1/orders", { order: { customerId } }, "orderId");
    const res = await admin("DELETE", `/v1/customers/${customerId}`);
    expect(res.status).toBe(400);
    expect(res.body["message"]).toBe(`Customer ${customerId} still has 2 orders; delete or reassign them first`);
  });
});

describe("products", () => {
  it("stores a product with defaults, a unique code of safe characters and a decimal price", async () => {
    const id = await post(
      "/v1/products",
      { product: { code: "Studio.Pro-2", name: "Studio Pro", price: 149.99, currency: "EUR" } },
      "productId",
    );
    const [product] = (await admin("GET", `/v1/products?filter=${q('code == "Studio.Pro-2"')}`)).body["products"];
    expect(product).toMatchObject({ id, isApplication: false, maintenanceNoticeDays: 30, price: 149.99 });
    expect(
      (await admin("POST", "/v1/products", { product: { code: "Studio.Pro-2", name: "Again" } })).body["message"],
    ).toBe("A Product with the same code already exists");
    for (const code of ["has space", "slash/y", "", "x".repeat(65)]) {
      expect((await admin("POST", "/v1/products", { product: { code, name: "Bad" } })).status, code).toBe(400);
    }
  });

  it("refuses to delete a product that has releases", async () => {
    const productId = await post("/v1/products", { product: { code: "HasRel", name: "Has releases" } }, "productId");
    await post(`/v1/products/${productId}/releases`, { productRelease: { version: "1.0.0" } }, "productReleaseId");
    const res = await admin("DELETE", `/v1/products/${productId}`);
    expect(res.status).toBe(400);
    expect(res.body["message"]).toBe(`Product ${productId} still has 1 releases; delete or reassign them first`);
  });
});

describe("orders and their lines", () => {
  it("generates an order number, takes enumerations by number or name, and checks its customers", async () => {
    const customerId = await post("/v1/customers", { customer: { company: "Buyer" } }, "customerId");
    const id = await post(
      "/v1/orders",
      { order: { customerId, status: "Completed", paymentStatus: 1, total: 250.5 } },
      "orderId",
    );
    const [order] = (await admin("GET", `/v1/orders?filter=${q(`id == ${id}`)}`)).body["orders"];
    expect(order).toMatchObject({ customerId, status: 2, paymentStatus: 1, total: 250.5 });
    expect(order.orderNumber).toMatch(/^O-[0-9A-Z]{8}$/);
    expect(
      (await admin("GET", `/v1/orders?filter=${q('status == "Completed" && paymentStatus == "Paid"')}`)).body[
        "totalOrdersCount"
      ],
    ).toBe(1);

    await setSetting("Application:SerializeJSonEnumAsString", "true");
    try {
      const [named] = (await admin("GET", `/v1/orders?filter=${q(`id == ${id}`)}`)).body["orders"];
      expect(named).toMatchObject({ status: "Completed", paymentStatus: "Paid" });
    } finally {
      await setSetting("Application:SerializeJSonEnumAsString", null);
    }
    expect((await admin("POST", "/v1/orders", { order: { customerId, status: 9 } })).status).toBe(400);
    expect((await admin("POST", "/v1/orders", { order: { customerId, resellerId: 424242 } })).body["message"]).toBe(
      "Customer 424242 not found (resellerId)",
    );
    expect((await admin("GET", `/v1/customers/${customerId}/orders`)).body["totalOrdersCount"]).toBe(1);
  });

  it("adds, changes and removes a product line, and lists a product's orders", async () => {
    const customerId = await post("/v1/customers", { customer: { company: "Lines" } }, "customerId");
    const orderId = await post("/v1/orders", { order: { customerId } }, "orderId");
    const otherOrder = await post("/v1/orders", { order: { customerId } }, "orderId");
    const productId = await post("/v1/products", { product: { code: "LineProd", name: "Line product" } }, "productId");

    const lineId = await post(
      `/v1/orders/${orderId}/products/${productId}`,
      { orderProduct: { unitPrice: 20, productId: 999, orderId: 999 } },
      "orderProductId",
    );
    const again = await admin("POST", `/v1/orders/${orderId}/products/${productId}`, { orderProduct: {} });
    expect(again.status).toBe(400);
    expect(
      (
        await admin("PUT", `/v1/orders/${orderId}/products/${productId}`, {
          orderProduct: { quantity: 4, discount: 0 },
        })
      ).status,
    ).toBe(200);
    const lines = await admin("GET", `/v1/orders/${orderId}/products`);
    expect(lines.body).toMatchObject({
      totalOrderProductsCount: 1,
      orderProducts: [{ id: lineId, orderId, productId, quantity: 4, unitPrice: 20, discount: 0 }],
    });

    const ofProduct = await admin("GET", `/v1/products/${productId}/orders`);
    expect(ofProduct.body["orders"].map((o: { id: number }) => o.id)).toEqual([orderId]);
    expect(otherOrder).not.toBe(orderId);

    expect(
      (await admin("PUT", `/v1/orders/${otherOrder}/products/${productId}`, { orderProduct: { quantity: 1 } })).body[
        "message"
      ],
    ).toBe(`Order ${otherOrder} has no line for product ${productId}`);
    expect((await admin("POST", `/v1/orders/${orderId}/products/777777`, { orderProduct: {} })).body["message"]).toBe(
      "Product 777777 not found",
    );
    expect((await admin("DELETE", `/v1/orders/${orderId}/products/${productId}`)).status).toBe(200);
    expect((await admin("GET", `/v1/orders/${orderId}/products`)).body["totalOrderProductsCount"]).toBe(0);
  });

  it("deletes an order with its lines", async () => {
    const customerId = await post("/v1/customers", { customer: { company: "Gone" } }, "customerId");
    const orderId = await post("/v1/orders", { order: { customerId } }, "orderId");
    const productId = await post("/v1/products", { product: { code: "GoneProd", name: "p" } }, "productId");
    await post(`/v1/orders/${orderId}/products/${productId}`, { orderProduct: {} }, "orderProductId");
    expect((await admin("DELETE", `/v1/orders/${orderId}`)).status).toBe(200);
    const left = await env.DB.prepare("SELECT count(*) AS n FROM order_products WHERE order_id = ?")
      .bind(orderId)
      .first<{ n: number }>();
    expect(left?.n).toBe(0);
  });
});

describe("product releases", () => {
  const generation = async (productId: number) =>
    (await env.DB.prepare("SELECT release_generation AS g FROM products WHERE id = ?")
      .bind(productId)
      .first<{ g: number }>())!.g;

  it("defaults to stable, not public, requiring maintenance, and bumps the product's release generation on every change", async () => {
    const productId = await post(
      "/v1/products",
      { product: { code: "Rel", name: "Releases", isApplication: true } },
      "productId",
    );
    const g0 = await generation(productId);
    const releaseId = await post(
      `/v1/products/${productId}/releases`,
      { productRelease: { version: "1.2.3", releaseDate: "2026-01-15" } },
      "productReleaseId",
    );
    expect(await generation(productId)).toBe(g0 + 1);
    const [release] = (await admin("GET", `/v1/products/${productId}/releases`)).body["productReleases"];
    expect(release).toMatchObject({
      id: releaseId,
      productId,
      version: "1.2.3",
      channel: "stable",
      public: false,
      requiresMaintenance: true,
      releaseDate: "2026-01-15T00:00:00.000Z",
    });

    expect(
      (
        await admin("PUT", `/v1/products/${productId}/releases`, {
          productRelease: { id: releaseId, public: true, channel: "insider" },
        })
      ).status,
    ).toBe(200);
    expect(await generation(productId)).toBe(g0 + 2);
    expect((await admin("DELETE", `/v1/products/${productId}/releases/${releaseId}`)).status).toBe(200);
    expect(await generation(productId)).toBe(g0 + 3);
  });

  it("refuses requiresMaintenance false on an application product unless Updates:AllowPublicApplicationReleases", async () => {
    const app = await post("/v1/products", { product: { code: "App", name: "App", isApplication: true } }, "productId");
    const lib = await post("/v1/products", { product: { code: "Lib", name: "Lib" } }, "productId");
    const refused = await admin("POST", `/v1/products/${app}/releases`, {
      productRelease: { version: "1.0.0", requiresMaintenance: false },
    });
    expect(refused.status).toBe(400);
    expect(refused.body["message"]).toContain("Updates:AllowPublicApplicationReleases");
    expect((await admin("GET", `/v1/products/${app}/releases`)).body["totalProductReleasesCount"]).toBe(0);
    expect(
      (
        await admin("POST", `/v1/products/${lib}/releases`, {
          productRelease: { version: "1.0.0", requiresMaintenance: false },
        })
      ).status,
    ).toBe(200);

    const gated = await post(
      `/v1/products/${app}/releases`,
      { productRelease: { version: "1.0.1" } },
      "productReleaseId",
    );
    expect(
      (
        await admin("PUT", `/v1/products/${app}/releases`, {
          productRelease: { id: gated, requiresMaintenance: false },
        })
      ).status,
    ).toBe(400);
    await setSetting("Updates:AllowPublicApplicationReleases", "true");
    try {
      expect(
        (
          await admin("POST", `/v1/products/${app}/releases`, {
            productRelease: { version: "1.1.0", requiresMaintenance: false },
          })
        ).status,
      ).toBe(200);
    } finally {
      await setSetting("Updates:AllowPublicApplicationReleases", null);
    }
  });

  it("accepts only stable or insider, one release per version, and a release only through its own product", async () => {
    const productId = await post("/v1/products", { product: { code: "Chan", name: "Channels" } }, "productId");
    const otherProduct = await post("/v1/products", { product: { code: "Chan2", name: "Other" } }, "productId");
    expect(
      (
        await admin("POST", `/v1/products/${productId}/releases`, {
          productRelease: { version: "1.0.0", channel: "beta" },
        })
      ).status,
    ).toBe(400);
    const releaseId = await post(
      `/v1/products/${productId}/releases`,
      { productRelease: { version: "1.0.0" } },
      "productReleaseId",
    );
    expect(
      (await admin("POST", `/v1/products/${productId}/releases`, { productRelease: { version: "1.0.0" } })).body[
        "message"
      ],
    ).toBe("A ProductRelease with the same productId, version already exists");
    expect(
      (await admin("PUT", `/v1/products/${otherProduct}/releases`, { productRelease: { id: releaseId, name: "x" } }))
        .body["message"],
    ).toBe(`ProductRelease ${releaseId} not found`);
    expect((await admin("DELETE", `/v1/products/${otherProduct}/releases/${releaseId}`)).status).toBe(400);
    expect((await admin("GET", `/v1/products/${otherProduct}/releases/${releaseId}/assemblies`)).status).toBe(400);
  });

  it("keeps a release's assemblies and lists its license templates", async () => {
    const productId = await post("/v1/products", { product: { code: "Asm", name: "Assemblies" } }, "productId");
    const releaseId = await post(
      `/v1/products/${productId}/releases`,
      { productRelease: { version: "3.0.0" } },
      "productReleaseId",
    );
    const mapping = await post("/v1/resources", { resource: { name: "map.xml", type: "MappingFile" } }, "resourceId");
    const assemblyId = await post(
      `/v1/products/${productId}/releases/${releaseId}/assemblies`,
      { assembly: { name: "App.dll", version: "3.0.0.0", mappingFileId: mapping, releaseId: 999 } },
      "assemblyId",
    );
    expect((await admin("GET", `/v1/products/${productId}/releases/${releaseId}/assemblies`)).body).toMatchObject({
      totalAssembliesCount: 1,
      assemblies: [{ id: assemblyId, name: "App.dll", releaseId, mappingFileId: mapping }],
    });
    expect(
      (
        await admin("POST", `/v1/products/${productId}/releases/${releaseId}/assemblies`, {
          assembly: { name: "x", mappingFileId: 55555 },
        })
      ).body["message"],
    ).toBe("Resource 55555 not found (mappingFileId)");
    const templateId = await post(
      "/v1/license-templates",
      { licenseTemplate: { name: "For 3.0", productId, releaseId, supportDays: 365 } },
      "licenseTemplateId",
    );
    await post("/v1/license-templates", { licenseTemplate: { name: "Any release", productId } }, "licenseTemplateId");
    expect(
      (await admin("GET", `/v1/products/${productId}/releases/${releaseId}/license-templates`)).body,
    ).toMatchObject({
      totalLicenseTemplatesCount: 1,
      licenseTemplates: [{ id: templateId, name: "For 3.0" }],
    });
    // The assembly is also visible to administrators through /v1/assemblies.
    expect(
      (await admin("GET", `/v1/assemblies?filter=${q(`releaseId == ${releaseId}`)}`)).body["totalAssembliesCount"],
    ).toBe(1);
  });
});

describe("license templates and assemblies", () => {
  it("stores a template with its enumerations and features, and checks its product and release", async () => {
    const productId = await post("/v1/products", { product: { code: "Tpl", name: "Templates" } }, "productId");
    const id = await post(
      "/v1/license-templates",
      {
        licenseTemplate: {
          name: "Floating 5",
          productId,
          licensingMode: "Floating",
          licenseType: 0,
          maxClients: 5,
          features: ["export", "sync"],
          expireDays: 365,
        },
      },
      "licenseTemplateId",
    );
    const [template] = (await admin("GET", `/v1/license-templates?filter=${q(`id == ${id}`)}`)).body[
      "licenseTemplates"
    ];
    expect(template).toMatchObject({
      name: "Floating 5",
      licensingMode: 2,
      licenseType: 0,
      maxClients: 5,
      features: ["export", "sync"],
      expireDays: 365,
    });
    expect(
      (await admin("POST", "/v1/license-templates", { licenseTemplate: { name: "x", productId: 31337 } })).body[
        "message"
      ],
    ).toBe("Product 31337 not found (productId)");
    expect(
      (await admin("POST", "/v1/license-templates", { licenseTemplate: { name: "x", productId, releaseId: 31337 } }))
        .body["message"],
    ).toBe("ProductRelease 31337 not found (releaseId)");
    expect((await admin("PUT", "/v1/license-templates", { licenseTemplate: { id, features: null } })).status).toBe(200);
    const [cleared] = (await admin("GET", `/v1/license-templates?filter=${q(`id == ${id}`)}`)).body["licenseTemplates"];
    expect(cleared.features).toBeUndefined();
    expect((await admin("DELETE", `/v1/license-templates/${id}`)).status).toBe(200);
  });

  it("keeps assemblies with their mapping file", async () => {
    const id = await post(
      "/v1/assemblies",
      { assembly: { name: "Core.dll", version: "1.0.0.0", publicKeyToken: "b77a5c561934e089" } },
      "assemblyId",
    );
    expect((await admin("PUT", "/v1/assemblies", { assembly: { id, culture: "neutral" } })).status).toBe(200);
    const [assembly] = (
      await admin("GET", `/v1/assemblies?filter=${q('name.EndsWith(".dll") && culture == "neutral"')}`)
    ).body["assemblies"];
    expect(assembly).toMatchObject({ id, name: "Core.dll", publicKeyToken: "b77a5c561934e089", culture: "neutral" });
    expect((await admin("DELETE", `/v1/assemblies/${id}`)).status).toBe(200);
  });
});
