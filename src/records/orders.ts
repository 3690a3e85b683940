/** Orders and their lines as records (SPEC "Order"). */
import { orderProducts, orders } from "../db/schema";
import { defineEntity, f } from "../http/entity";

export const OrderStatus = ["Pending", "Processing", "Completed", "Cancelled"] as const;

export const PaymentStatus = ["Unpaid", "Paid", "Refunded"] as const;

export const Order = defineEntity({
  name: "Order",
  singular: "order",
  plural: "orders",
  table: orders,
  fields: {
    id: f.id(),
    orderNumber: f.string({ max: 64, description: "Generated (O-XXXXXXXX) when omitted; unique." }),
    customerId: f.int({ min: 1 }),
    resellerId: f.int({ min: 1 }),
    status: f.enumOf("OrderStatus", OrderStatus),
    paymentStatus: f.enumOf("PaymentStatus", PaymentStatus),
    total: f.number(),
    currency: f.string({ max: 8 }),
    purchaseOrder: f.string({ max: 128 }),
    invoiceNumber: f.string({ max: 128 }),
    paymentType: f.string({ max: 64 }),
    paymentNumber: f.string({ max: 128 }),
    paymentDate: f.date(),
    description: f.string(),
    meta: f.string(),
    createdAt: f.date({ readOnly: true }),
    updatedAt: f.date({ readOnly: true }),
  },
  required: ["customerId"],
});

export const OrderProduct = defineEntity({
  name: "OrderProduct",
  singular: "orderProduct",
  plural: "orderProducts",
  table: orderProducts,
  fields: {
    id: f.id(),
    orderId: f.int({ readOnly: true }),
    productId: f.int({ readOnly: true }),
    quantity: f.int({ min: 1 }),
    unitPrice: f.number(),
    discount: f.number(),
    taxes: f.number(),
    description: f.string(),
    createdAt: f.date({ readOnly: true }),
    updatedAt: f.date({ readOnly: true }),
  },
});
