/** Customers and their contacts as records (SPEC "Customer"). */
import { contacts, customers } from "../db/schema";
import { ApiError } from "../kernel/errors";
import { defineEntity, f } from "../http/entity";
import { type Row, generateCode } from "../http/repository";

/** CONTRACT section 3: one of company, lastName or email identifies a customer. */
export function requireIdentity(row: Row): void {
  if (!["company", "lastName", "email"].some((k) => typeof row[k] === "string" && (row[k] as string).trim() !== "")) {
    throw new ApiError(400, "A customer needs one of company, lastName or email");
  }
}

/** The values of a new customer (POST /v1/customers, a purchase's buyer): identified, its code generated unless given. */
export function newCustomerValues(values: Row): Row {
  requireIdentity(values);
  return { ...values, code: values["code"] ?? generateCode("C") };
}

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
