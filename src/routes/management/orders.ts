/**
 * Orders (`/v1/orders`, `/v1/customers/{customerId}/orders`, `/v1/products/{productId}/orders`) and their lines
 * (`/v1/orders/{orderId}/products[/{productId}]`). An order's number (`O-XXXXXXXX`) is generated unless given.
 * Deleting an order deletes its lines and is refused while licenses point at it.
 */
import { type RouteHandler, createRoute, z } from "@hono/zod-openapi";
import { and, eq, sql } from "drizzle-orm";
import { Roles, access } from "../../auth/guard";
import type { Db } from "../../db/client";
import { deleteRow, refuseIfReferenced, requireById, updateRow } from "../../http/repository";
import { licenses, orderProducts, orders } from "../../db/schema";
import { serviceContext } from "../../http/context";
import { crud, intIdParam } from "../crud";
import { ApiError } from "../../kernel/errors";
import { enveloped, errorResponses, int32, json, jsonBody } from "../../http/openapi";
import { ok } from "../../http/respond";
import type { AppEnv } from "../../http/app-env";
import type { Router } from "../../http/router";
import { addOrderLine, emitOrderChange, emitOrderLinesChanged, newOrderValues } from "../../licensing/order-writes";
import { Customer } from "../../records/customers";
import { Order, OrderProduct } from "../../records/orders";
import { Product } from "../../records/products";

export function registerOrders(app: Router): void {
  const all = Roles.management;
  const roles = { list: all, create: all, update: all, delete: all };
  crud(app, {
    entity: Order,
    path: "/v1/orders",
    tag: "Orders",
    operationIds: { list: "listOrders", create: "createOrder", update: "updateOrder", delete: "deleteOrder" },
    roles,
    references: { customerId: Customer, resellerId: Customer },
    hooks: {
      create: (_ctx, values) => newOrderValues(values),
      update: (_ctx, values) => {
        if (values["orderNumber"] === null) throw new ApiError(400, "An order's number cannot be cleared");
        return values;
      },
      delete: (ctx, existing) =>
        refuseIfReferenced(ctx.db, Order, existing["id"] as number, [
          { label: "licenses", table: licenses, column: licenses.orderId },
        ]),
      written: emitOrderChange,
    },
  });
  crud(app, {
    entity: Order,
    path: "/v1/customers/{customerId}/orders",
    tag: "Customers",
    operationIds: { list: "listCustomerOrders" },
    operations: ["list"],
    roles,
    scope: { param: "customerId", parent: Customer, column: orders.customerId },
  });
  crud(app, {
    entity: Order,
    path: "/v1/products/{productId}/orders",
    tag: "Products",
    operationIds: { list: "listProductOrders" },
    operations: ["list"],
    roles,
    scope: {
      param: "productId",
      parent: Product,
      // Orders with a line for the product: a subquery, so the list stays one statement.
      where: (productId) =>
        sql`${orders.id} IN (SELECT ${orderProducts.orderId} FROM ${orderProducts} WHERE ${orderProducts.productId} = ${productId})`,
    },
  });
  crud(app, {
    entity: OrderProduct,
    path: "/v1/orders/{orderId}/products",
    tag: "Orders",
    operationIds: { list: "listOrderProducts" },
    operations: ["list"],
    roles,
    scope: { param: "orderId", parent: Order, column: orderProducts.orderId },
  });
  registerOrderLines(app);
}

const lineParams = z.object({ orderId: intIdParam("orderId"), productId: intIdParam("productId") });
const LineBody = z.object({ orderProduct: OrderProduct.createInput });

/** The order's line for the product, or 400 saying the order (or its line) does not exist. */
async function requireLine(db: Db, { orderId, productId }: { orderId: number; productId: number }) {
  await requireById(db, Order, orderId);
  const line = await db
    .select()
    .from(orderProducts)
    .where(and(eq(orderProducts.orderId, orderId), eq(orderProducts.productId, productId)))
    .get();
  if (!line) throw new ApiError(400, `Order ${orderId} has no line for product ${productId}`);
  return line;
}

/** What the three line routes declare: the path, the Orders tag and the management roles. */
const base = (operationId: string, summary: string) => ({
  path: "/v1/orders/{orderId}/products/{productId}",
  tags: ["Orders"],
  operationId,
  summary,
  ...access.key(Roles.management),
});
const withBody = { params: lineParams, body: jsonBody(LineBody) };

const addOrderProductRoute = createRoute({
  method: "post",
  ...base("addOrderProduct", "Add a product to an order"),
  request: withBody,
  responses: { 200: json(enveloped({ orderProductId: int32(1) }), "The line was added"), ...errorResponses },
});

const addOrderProduct: RouteHandler<typeof addOrderProductRoute, AppEnv> = async (c) => {
  const ctx = serviceContext(c);
  const { orderId, productId } = c.req.valid("param");
  await requireById(ctx.db, Order, orderId);
  await requireById(ctx.db, Product, productId);
  const row = await addOrderLine(ctx, orderId, productId, OrderProduct.toRow(c.req.valid("json").orderProduct));
  return ok(c, { orderProductId: row["id"] as number });
};

const updateOrderProductRoute = createRoute({
  method: "put",
  ...base("updateOrderProduct", "Change an order's line for a product (only the properties sent)"),
  request: withBody,
  responses: { 200: json(enveloped({}), "The line was changed"), ...errorResponses },
});

const updateOrderProduct: RouteHandler<typeof updateOrderProductRoute, AppEnv> = async (c) => {
  const ctx = serviceContext(c);
  const line = await requireLine(ctx.db, c.req.valid("param"));
  const values = OrderProduct.toRow(c.req.valid("json").orderProduct);
  if (Object.keys(values).length > 0) {
    await updateRow(ctx.db, OrderProduct, line.id, values);
    emitOrderLinesChanged(ctx, line.orderId);
  }
  return ok(c, {});
};

const removeOrderProductRoute = createRoute({
  method: "delete",
  ...base("removeOrderProduct", "Remove a product from an order"),
  request: { params: lineParams },
  responses: { 200: json(enveloped({}), "The line was removed"), ...errorResponses },
});

const removeOrderProduct: RouteHandler<typeof removeOrderProductRoute, AppEnv> = async (c) => {
  const ctx = serviceContext(c);
  const line = await requireLine(ctx.db, c.req.valid("param"));
  await deleteRow(ctx.db, OrderProduct, line.id);
  emitOrderLinesChanged(ctx, line.orderId);
  return ok(c, {});
};

/** `POST/PUT/DELETE /v1/orders/{orderId}/products/{productId}`: an order's line for one product. */
function registerOrderLines(app: Router): void {
  app.openapi(addOrderProductRoute, addOrderProduct);
  app.openapi(updateOrderProductRoute, updateOrderProduct);
  app.openapi(removeOrderProductRoute, removeOrderProduct);
}
