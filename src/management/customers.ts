/**
 * Customers (`/v1/customers`) and their contacts (`/v1/contacts`, `/v1/customers/{customerId}/contacts`).
 * A customer needs one of company, lastName or email; its code (`C-XXXXXXXX`) is generated unless given.
 * Deleting a customer deletes its contacts and is refused while orders or licenses point at it.
 */
import { Roles } from "../auth/guard";
import { type Row, generateCode, refuseIfReferenced } from "../db/repository";
import { contacts, customers, licenses, orders } from "../db/schema";
import { crud } from "../http/crud";
import { defineEntity, f } from "../http/entity";
import { ApiError } from "../http/errors";
import type { Router } from "../http/router";

const all = { list: Roles.management, create: Roles.management, update: Roles.management, delete: Roles.management };

export const Customer = defineEntity({
  name: "Customer",
  singular: "customer",
  plural: "customers",
  table: customers,
  fields: {
    id: f.id(),
    code: f.string({ max: 64, description: "Generated (C-XXXXXXXX) when omitted; unique." }),
    title: f.string({ max: 64 }),
    firstName: f.string({ max: 128 }),
    lastName: f.string({ max: 128 }),
    company: f.string({ max: 256 }),
    email: f.string({ max: 256 }),
    phone: f.string({ max: 64 }),
    mobile: f.string({ max: 64 }),
    fax: f.string({ max: 64 }),
    website: f.string({ max: 512 }),
    address: f.string({ max: 512 }),
    postalCode: f.string({ max: 32 }),
    city: f.string({ max: 128 }),
    region: f.string({ max: 128 }),
    country: f.string({ max: 128 }),
    countryCode: f.string({ max: 8 }),
    vatCode: f.string({ max: 64 }),
    isReseller: f.bool(),
    rating: f.int({ min: 0, max: 100 }),
    notes: f.string(),
    meta: f.string(),
    createdAt: f.date({ readOnly: true }),
    updatedAt: f.date({ readOnly: true }),
  },
});

export const Contact = defineEntity({
  name: "Contact",
  singular: "contact",
  plural: "contacts",
  table: contacts,
  fields: {
    id: f.id(),
    customerId: f.int({ min: 1 }),
    title: f.string({ max: 64 }),
    firstName: f.string({ max: 128 }),
    lastName: f.string({ max: 128 }),
    email: f.string({ max: 256 }),
    phone: f.string({ max: 64 }),
    mobile: f.string({ max: 64 }),
    fax: f.string({ max: 64 }),
    details: f.string(),
    notify: f.bool(),
    meta: f.string(),
    createdAt: f.date({ readOnly: true }),
    updatedAt: f.date({ readOnly: true }),
  },
  required: ["customerId", "lastName"],
});

/** CONTRACT section 3: one of company, lastName or email identifies a customer. */
function requireIdentity(row: Row): void {
  if (!["company", "lastName", "email"].some((k) => typeof row[k] === "string" && (row[k] as string).trim() !== "")) {
    throw new ApiError(400, "A customer needs one of company, lastName or email");
  }
}

export function registerCustomers(app: Router): void {
  crud(app, {
    entity: Customer,
    path: "/v1/customers",
    tag: "Customers",
    roles: all,
    hooks: {
      create: (_ctx, values) => {
        requireIdentity(values);
        return { ...values, code: values["code"] ?? generateCode("C") };
      },
      update: (_ctx, values, existing) => {
        requireIdentity({ ...existing, ...values });
        if (values["code"] === null) throw new ApiError(400, "A customer's code cannot be cleared");
        return values;
      },
      delete: (ctx, existing) =>
        refuseIfReferenced(ctx.db, Customer, existing["id"] as number, [
          { label: "orders", table: orders, column: orders.customerId },
          { label: "orders as reseller", table: orders, column: orders.resellerId },
          { label: "licenses", table: licenses, column: licenses.customerId },
        ]),
    },
  });
  crud(app, {
    entity: Contact,
    path: "/v1/contacts",
    tag: "Contacts",
    roles: all,
    references: { customerId: Customer },
  });
  crud(app, {
    entity: Contact,
    path: "/v1/customers/{customerId}/contacts",
    tag: "Customers",
    operations: ["list"],
    roles: all,
    scope: { param: "customerId", parent: Customer, column: contacts.customerId },
  });
}
