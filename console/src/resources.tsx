/**
 * Records with the CRUD builder's shape (list, create `{singular: {...}}`, partial update `PUT {singular: {id, ...}}`,
 * delete): one page definition each, drawn by ResourcePage.
 */
import { useState } from "preact/hooks";
import { call } from "./api/client";
import { type Column, EntityForm, ErrorBox, type FieldSpec, ListView, useAction } from "./ui";
import { LICENSE_TYPES, LICENSING_MODES, ORDER_STATUSES, PAYMENT_STATUSES } from "./words";
import { type FilterField, filterBy } from "./filters";

export interface ResourceDef {
  title: string;
  path: string;
  singular: string;
  columns: Column<Record<string, unknown>>[];
  fields: FieldSpec[];
  /** The filter box's placeholder: a filter that works on this list. */
  filterHint: string;
  /** Simple filter fields that write the expression (filters.tsx). */
  filters?: readonly FilterField[];
  /** Roles that may create, change and delete (the list is open to whoever the API lets read it). */
  writers: string[];
}

export const resources: Record<string, ResourceDef> = {
  customers: {
    title: "Customers",
    path: "/v1/customers",
    singular: "customer",
    writers: ["Administrator", "LicenseManager", "Sales"],
    filterHint: 'company.Contains("Initech")',
    filters: [
      filterBy.search("Search", "company", "firstName", "lastName", "email"),
      filterBy.dates("Created", "createdAt"),
    ],
    columns: [
      { key: "id", label: "Id" },
      { key: "company", label: "Company" },
      { key: "firstName", label: "First name" },
      { key: "lastName", label: "Last name" },
      { key: "email", label: "Email" },
      { key: "country", label: "Country" },
    ],
    fields: [
      { name: "company", label: "Company" },
      { name: "firstName", label: "First name" },
      { name: "lastName", label: "Last name" },
      { name: "email", label: "Email" },
      { name: "phone", label: "Phone" },
      { name: "country", label: "Country" },
      { name: "isReseller", label: "Reseller", kind: "bool" },
    ],
  },
  contacts: {
    title: "Contacts",
    path: "/v1/contacts",
    singular: "contact",
    writers: ["Administrator", "LicenseManager", "Sales"],
    filterHint: 'lastName.StartsWith("S")',
    columns: [
      { key: "id", label: "Id" },
      { key: "customerId", label: "Customer", ref: "customers" },
      { key: "firstName", label: "First name" },
      { key: "lastName", label: "Last name" },
      { key: "email", label: "Email" },
      { key: "notify", label: "Notify" },
    ],
    fields: [
      { name: "customerId", label: "Customer id", kind: "number", required: true, ref: "customers" },
      { name: "firstName", label: "First name" },
      { name: "lastName", label: "Last name" },
      { name: "email", label: "Email" },
      { name: "phone", label: "Phone" },
      { name: "notify", label: "Notify", kind: "bool" },
    ],
  },
  orders: {
    title: "Orders",
    path: "/v1/orders",
    singular: "order",
    writers: ["Administrator", "LicenseManager", "Sales"],
    filterHint: 'status == "Completed"',
    filters: [
      filterBy.search("Search", "orderNumber", "invoiceNumber", "purchaseOrder"),
      filterBy.values("Status", "status", ORDER_STATUSES),
      filterBy.values("Payment", "paymentStatus", PAYMENT_STATUSES),
      filterBy.ref("Customer", "customerId", "customers"),
      filterBy.dates("Paid", "paymentDate"),
    ],
    columns: [
      { key: "id", label: "Id" },
      { key: "orderNumber", label: "Number" },
      { key: "customerId", label: "Customer", ref: "customers" },
      { key: "status", label: "Status" },
      { key: "paymentStatus", label: "Payment" },
      { key: "total", label: "Total" },
      { key: "currency", label: "Currency" },
    ],
    fields: [
      { name: "customerId", label: "Customer id", kind: "number", required: true, ref: "customers" },
      { name: "status", label: "Status", kind: "select", options: ORDER_STATUSES },
      { name: "paymentStatus", label: "Payment status", kind: "select", options: PAYMENT_STATUSES },
      { name: "total", label: "Total", kind: "number" },
      { name: "currency", label: "Currency" },
      { name: "purchaseOrder", label: "Purchase order" },
    ],
  },
  templates: {
    title: "License templates",
    path: "/v1/license-templates",
    singular: "licenseTemplate",
    writers: ["Administrator", "LicenseManager"],
    filterHint: 'name.Contains("Studio")',
    filters: [
      filterBy.search("Search", "name", "edition"),
      filterBy.ref("Product", "productId", "products"),
      filterBy.values("Mode", "licensingMode", LICENSING_MODES),
    ],
    columns: [
      { key: "id", label: "Id" },
      { key: "name", label: "Name" },
      { key: "productId", label: "Product", ref: "products" },
      { key: "edition", label: "Edition" },
      { key: "licensingMode", label: "Mode" },
      { key: "maxClients", label: "Max clients" },
      { key: "expireDays", label: "Expire days" },
      { key: "supportDays", label: "Support days" },
    ],
    fields: [
      { name: "name", label: "Name", required: true },
      { name: "productId", label: "Product id", kind: "number", required: true, ref: "products" },
      { name: "licenseType", label: "License type", kind: "select", options: LICENSE_TYPES },
      { name: "licensingMode", label: "Licensing mode", kind: "select", options: LICENSING_MODES },
      { name: "edition", label: "Edition" },
      { name: "maxClients", label: "Max clients", kind: "number" },
      { name: "expireDays", label: "Expire days", kind: "number" },
      { name: "supportDays", label: "Support days", kind: "number" },
      { name: "features", label: "Features (comma separated)", kind: "list" },
    ],
  },
  users: {
    title: "Users",
    path: "/v1/users",
    singular: "user",
    writers: ["Administrator"],
    filterHint: 'userName.StartsWith("a")',
    columns: [
      { key: "userName", label: "User name" },
      { key: "email", label: "Email" },
      { key: "roles", label: "Roles" },
      { key: "lastLogIn", label: "Last sign-in" },
    ],
    fields: [
      { name: "userName", label: "User name", required: true },
      { name: "email", label: "Email" },
      { name: "password", label: "Password", kind: "password" },
      { name: "roles", label: "Roles (comma separated: Administrator, LicenseManager, Sales, Customer)", kind: "list" },
      { name: "firstName", label: "First name" },
      { name: "lastName", label: "Last name" },
    ],
  },
};

/** A list with create, edit and delete for one resource, shown to the roles the API lets write it. */
export function ResourcePage({
  def,
  roles,
  extra,
}: {
  def: ResourceDef;
  roles: string[];
  extra?: (row: Record<string, unknown>) => preact.ComponentChildren;
}) {
  const [mode, setMode] = useState<{ kind: "new" } | { kind: "edit"; row: Record<string, unknown> }>();
  const [reload, setReload] = useState(0);
  const del = useAction();
  const canWrite = roles.some((r) => def.writers.includes(r));
  const done = () => {
    setMode(undefined);
    setReload((n) => n + 1);
  };
  return (
    <>
      <div class="page-head">
        <h2>{def.title}</h2>
        {canWrite && !mode ? (
          <button type="button" class="primary" onClick={() => setMode({ kind: "new" })}>
            New {def.title.toLowerCase().replace(/s$/, "")}
          </button>
        ) : null}
      </div>
      {mode ? (
        <EntityForm
          title={mode.kind === "new" ? `New ${def.singular}` : `Edit ${def.singular} ${String(mode.row["id"])}`}
          fields={def.fields}
          initial={mode.kind === "edit" ? mode.row : undefined}
          submitLabel={mode.kind === "new" ? "Create" : "Save"}
          onSubmit={(values) =>
            mode.kind === "new"
              ? call("POST", def.path, { body: { [def.singular]: values } })
              : call("PUT", def.path, { body: { [def.singular]: { ...values, id: mode.row["id"] } } })
          }
          onDone={done}
          onCancel={() => setMode(undefined)}
        />
      ) : null}
      <ErrorBox error={del.error} />
      <ListView
        title={def.title}
        path={def.path}
        columns={def.columns}
        filterHint={def.filterHint}
        filters={def.filters}
        reload={reload}
        actions={
          canWrite || extra
            ? (row, refresh) => (
                <>
                  {extra?.(row)}
                  {canWrite ? (
                    <>
                      <button type="button" onClick={() => setMode({ kind: "edit", row })}>
                        Edit
                      </button>
                      <button
                        type="button"
                        class="danger"
                        onClick={() =>
                          confirm(`Delete ${def.singular} ${String(row["id"])}?`) &&
                          del.run(async () => {
                            await call("DELETE", `${def.path}/${encodeURIComponent(String(row["id"]))}`);
                            return refresh();
                          })
                        }
                      >
                        Delete
                      </button>
                    </>
                  ) : null}
                </>
              )
            : undefined
        }
      />
    </>
  );
}
