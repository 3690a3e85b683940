/**
 * Customers (`/v1/customers`) and their contacts (`/v1/contacts`, `/v1/customers/{customerId}/contacts`).
 * A customer needs one of company, lastName or email; its code (`C-XXXXXXXX`) is generated unless given.
 * Deleting a customer deletes its contacts and is refused while orders or licenses point at it.
 */
import { Roles } from "../../auth/guard";
import { refuseIfReferenced } from "../../http/repository";
import { contacts, licenses, orders } from "../../db/schema";
import { crud } from "../crud";
import { ApiError } from "../../kernel/errors";
import type { Router } from "../../http/router";
import { Customer, Contact, newCustomerValues, requireIdentity } from "../../records/customers";

const all = { list: Roles.management, create: Roles.management, update: Roles.management, delete: Roles.management };

export function registerCustomers(app: Router): void {
  crud(app, {
    entity: Customer,
    path: "/v1/customers",
    tag: "Customers",
    operationIds: {
      list: "listCustomers",
      create: "createCustomer",
      update: "updateCustomer",
      delete: "deleteCustomer",
    },
    roles: all,
    hooks: {
      create: (_ctx, values) => newCustomerValues(values),
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
    operationIds: { list: "listContacts", create: "createContact", update: "updateContact", delete: "deleteContact" },
    roles: all,
    references: { customerId: Customer },
  });
  crud(app, {
    entity: Contact,
    path: "/v1/customers/{customerId}/contacts",
    tag: "Customers",
    operationIds: { list: "listCustomerContacts" },
    operations: ["list"],
    roles: all,
    scope: { param: "customerId", parent: Customer, column: contacts.customerId },
  });
}
