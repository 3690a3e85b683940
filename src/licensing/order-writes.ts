/**
 * The one way orders and their lines are written from outside their routes, free of HTTP: the Management API
 * (routes/management/orders.ts) and the commerce webhooks (commerce/) share it, so generated numbers and webhook events
 * follow every change alike.
 */
import { generateCode, insertRow, requireById, type Row, updateRow } from "../http/repository";
import type { ServiceContext } from "../http/context";
import { changedFields, emit } from "../webhooks/emit";
import type { EventType } from "../webhooks/events";
import { Order, OrderProduct } from "../records/orders";

const ORDER_EVENTS: Record<"create" | "update" | "delete", EventType> = {
  create: "order.created",
  update: "order.updated",
  delete: "order.deleted",
};

/** Order changes as events (the record as the API returns it; updates with the changed fields' former values). */
export function emitOrderChange(
  ctx: ServiceContext,
  operation: "create" | "update" | "delete",
  row: Row,
  previous?: Row,
): void {
  const data = Order.toWire(row, ctx.config);
  const changed =
    operation === "update" && previous ? changedFields(Order.toWire(previous, ctx.config), data) : undefined;
  if (changed && Object.keys(changed).length === 0) return;
  emit(ctx, ORDER_EVENTS[operation], () => ({ data, ...(changed ? { previous: changed } : {}) }));
}

/** A change of an order's lines is an order.updated of the order (read after the change, for a subscriber only). */
export function emitOrderLinesChanged(ctx: ServiceContext, orderId: number): void {
  emit(ctx, "order.updated", async () => ({
    data: Order.toWire(await requireById(ctx.db, Order, orderId), ctx.config),
  }));
}

/** The values of a new order: its number generated (O-XXXXXXXX) unless given. */
export function newOrderValues(values: Row): Row {
  return { ...values, orderNumber: values["orderNumber"] ?? generateCode("O") };
}

/** Creates an order as POST /v1/orders does (row form). */
export async function createOrder(ctx: ServiceContext, values: Row): Promise<Row> {
  const row = await insertRow(ctx.db, Order, newOrderValues(values));
  emitOrderChange(ctx, "create", row);
  return row;
}

/** Changes an order as PUT /v1/orders does (only the values given, row form). */
export async function changeOrder(ctx: ServiceContext, id: number, values: Row): Promise<Row> {
  const existing = await requireById(ctx.db, Order, id);
  const row = await updateRow(ctx.db, Order, id, values);
  emitOrderChange(ctx, "update", row, existing);
  return row;
}

/** Adds a product line to an order as POST /v1/orders/{orderId}/products/{productId} does. */
export async function addOrderLine(ctx: ServiceContext, orderId: number, productId: number, values: Row): Promise<Row> {
  const row = await insertRow(ctx.db, OrderProduct, { quantity: 1, ...values, orderId, productId });
  emitOrderLinesChanged(ctx, orderId);
  return row;
}
