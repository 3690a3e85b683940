/** Sample requests for customers, contacts, products, orders and their lines, releases, templates, assemblies. */
import { type Samples, created } from "./kit";

const unique = () => crypto.randomUUID().slice(0, 8);
export const newCustomer = () => created("/v1/customers", { customer: { company: `Acme ${unique()}` } }, "customerId");
export const newProduct = (isApplication = false) =>
  created("/v1/products", { product: { code: `P${unique()}`, name: "Product", isApplication } }, "productId");
const newContact = async () =>
  created("/v1/contacts", { contact: { customerId: await newCustomer(), lastName: "Doe" } }, "contactId");
export const newOrder = async () => created("/v1/orders", { order: { customerId: await newCustomer() } }, "orderId");
const newRelease = async () => {
  const productId = await newProduct();
  return {
    productId,
    releaseId: await created(
      `/v1/products/${productId}/releases`,
      { productRelease: { version: "1.0.0" } },
      "productReleaseId",
    ),
  };
};
const newReleaseAssembly = async () => {
  const r = await newRelease();
  const assemblyId = await created(
    `/v1/products/${r.productId}/releases/${r.releaseId}/assemblies`,
    { assembly: { name: "App.dll" } },
    "assemblyId",
  );
  return { ...r, assemblyId };
};
export const newTemplate = async () =>
  created(
    "/v1/license-templates",
    { licenseTemplate: { name: "Pro", productId: await newProduct() } },
    "licenseTemplateId",
  );
const newAssembly = () => created("/v1/assemblies", { assembly: { name: "Core.dll" } }, "assemblyId");
const newOrderLine = async () => {
  const orderId = await newOrder();
  const productId = await newProduct();
  await created(`/v1/orders/${orderId}/products/${productId}`, { orderProduct: { quantity: 2 } }, "orderProductId");
  return { orderId, productId };
};

export const commerceSamples: Samples = {
  "GET /v1/customers": async () => ({}),
  "POST /v1/customers": async () => ({ body: { customer: { lastName: "Smith" } } }),
  "PUT /v1/customers": async () => ({ body: { customer: { id: await newCustomer(), city: "Bergen" } } }),
  "DELETE /v1/customers/{customerId}": async () => ({ path: `/v1/customers/${await newCustomer()}` }),
  "GET /v1/customers/{customerId}/contacts": async () => ({ path: `/v1/customers/${await newCustomer()}/contacts` }),
  "GET /v1/customers/{customerId}/orders": async () => ({ path: `/v1/customers/${await newCustomer()}/orders` }),
  "GET /v1/contacts": async () => ({}),
  "POST /v1/contacts": async () => ({ body: { contact: { customerId: await newCustomer(), lastName: "Roe" } } }),
  "PUT /v1/contacts": async () => ({ body: { contact: { id: await newContact(), notify: true } } }),
  "DELETE /v1/contacts/{contactId}": async () => ({ path: `/v1/contacts/${await newContact()}` }),
  "GET /v1/products": async () => ({}),
  "POST /v1/products": async () => ({ body: { product: { code: `S${unique()}`, name: "Sample" } } }),
  "PUT /v1/products": async () => ({ body: { product: { id: await newProduct(), price: 99.5 } } }),
  "DELETE /v1/products/{productId}": async () => ({ path: `/v1/products/${await newProduct()}` }),
  "GET /v1/products/{productId}/orders": async () => ({ path: `/v1/products/${await newProduct()}/orders` }),
  "GET /v1/orders": async () => ({}),
  "POST /v1/orders": async () => ({ body: { order: { customerId: await newCustomer(), status: 1 } } }),
  "PUT /v1/orders": async () => ({ body: { order: { id: await newOrder(), paymentStatus: "Paid" } } }),
  "DELETE /v1/orders/{orderId}": async () => ({ path: `/v1/orders/${await newOrder()}` }),
  "GET /v1/orders/{orderId}/products": async () => ({ path: `/v1/orders/${await newOrder()}/products` }),
  "POST /v1/orders/{orderId}/products/{productId}": async () => ({
    path: `/v1/orders/${await newOrder()}/products/${await newProduct()}`,
    body: { orderProduct: { quantity: 3, unitPrice: 10 } },
  }),
  "PUT /v1/orders/{orderId}/products/{productId}": async () => {
    const line = await newOrderLine();
    return { path: `/v1/orders/${line.orderId}/products/${line.productId}`, body: { orderProduct: { quantity: 5 } } };
  },
  "DELETE /v1/orders/{orderId}/products/{productId}": async () => {
    const line = await newOrderLine();
    return { path: `/v1/orders/${line.orderId}/products/${line.productId}` };
  },
  "GET /v1/products/{productId}/releases": async () => ({ path: `/v1/products/${await newProduct()}/releases` }),
  "POST /v1/products/{productId}/releases": async () => ({
    path: `/v1/products/${await newProduct()}/releases`,
    body: { productRelease: { version: "2.0.0" } },
  }),
  "PUT /v1/products/{productId}/releases": async () => {
    const r = await newRelease();
    return {
      path: `/v1/products/${r.productId}/releases`,
      body: { productRelease: { id: r.releaseId, public: true } },
    };
  },
  "DELETE /v1/products/{productId}/releases/{releaseId}": async () => {
    const r = await newRelease();
    return { path: `/v1/products/${r.productId}/releases/${r.releaseId}` };
  },
  "GET /v1/products/{productId}/releases/{releaseId}/assemblies": async () => {
    const r = await newRelease();
    return { path: `/v1/products/${r.productId}/releases/${r.releaseId}/assemblies` };
  },
  "POST /v1/products/{productId}/releases/{releaseId}/assemblies": async () => {
    const r = await newRelease();
    return {
      path: `/v1/products/${r.productId}/releases/${r.releaseId}/assemblies`,
      body: { assembly: { name: "Lib.dll" } },
    };
  },
  "PUT /v1/products/{productId}/releases/{releaseId}/assemblies": async () => {
    const a = await newReleaseAssembly();
    return {
      path: `/v1/products/${a.productId}/releases/${a.releaseId}/assemblies`,
      body: { assembly: { id: a.assemblyId, version: "1.2.3.4" } },
    };
  },
  "DELETE /v1/products/{productId}/releases/{releaseId}/assemblies/{assemblyId}": async () => {
    const a = await newReleaseAssembly();
    return { path: `/v1/products/${a.productId}/releases/${a.releaseId}/assemblies/${a.assemblyId}` };
  },
  "GET /v1/products/{productId}/releases/{releaseId}/license-templates": async () => {
    const r = await newRelease();
    return { path: `/v1/products/${r.productId}/releases/${r.releaseId}/license-templates` };
  },
  "GET /v1/license-templates": async () => ({}),
  "POST /v1/license-templates": async () => ({
    body: { licenseTemplate: { name: "Trial", productId: await newProduct(), licenseType: "Trial", expireDays: 30 } },
  }),
  "PUT /v1/license-templates": async () => ({ body: { licenseTemplate: { id: await newTemplate(), maxClients: 3 } } }),
  "DELETE /v1/license-templates/{templateId}": async () => ({ path: `/v1/license-templates/${await newTemplate()}` }),
  "GET /v1/assemblies": async () => ({}),
  "POST /v1/assemblies": async () => ({ body: { assembly: { name: "Plugin.dll" } } }),
  "PUT /v1/assemblies": async () => ({ body: { assembly: { id: await newAssembly(), culture: "neutral" } } }),
  "DELETE /v1/assemblies/{assemblyId}": async () => ({ path: `/v1/assemblies/${await newAssembly()}` }),
};
