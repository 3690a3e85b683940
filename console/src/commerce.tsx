/**
 * Payments to licenses in the console (CONTRACT section 10): the commerce mappings (a provider's price, product or
 * variant -> a license template), and on an order and on each of its licenses the provider's purchase, links to it in
 * the provider's dashboard and the history of the events received for it.
 */
import { useEffect, useState } from "preact/hooks";
import { ApiFailure, call } from "./api/client";
import { commerceMappingProviderValues, commerceMappingQuantityModeValues } from "./api/schema";
import { ErrorBox, ListView, listOf } from "./ui";
import { type ResourceDef, ResourcePage } from "./resources";
import { formatDate } from "./words";

type Row = Record<string, unknown>;

// The providers and quantity modes are the document's: a provider added to the service without a name here fails
// `tsc -p console`.
type CommerceProvider = (typeof commerceMappingProviderValues)[number];
const PROVIDER_NAMES: Record<CommerceProvider, string> = {
  stripe: "Stripe",
  paddle: "Paddle",
  lemonsqueezy: "Lemon Squeezy",
};
/** Who may read and write mappings (the API's roles for /v1/commerce/mappings). */
export const MAPPING_ROLES = ["Administrator", "Sales"];

const providerName = (p: unknown) => PROVIDER_NAMES[p as CommerceProvider] ?? String(p ?? "");

/**
 * The provider dashboard's page of one of its ids, by the id's prefix (Stripe, Paddle) or the kind of id (Lemon
 * Squeezy's numeric order and customer ids); undefined when the id names nothing the dashboard shows.
 */
export function dashboardUrl(provider: unknown, id: unknown, kind: "purchase" | "customer" = "purchase") {
  if (typeof id !== "string" && typeof id !== "number") return undefined;
  const ref = encodeURIComponent(String(id));
  const s = String(id);
  switch (provider) {
    case "stripe": {
      const page = [
        ["sub_", "subscriptions"],
        ["evt_", "events"],
        ["in_", "invoices"],
        ["pi_", "payments"],
        ["ch_", "payments"],
        ["cus_", "customers"],
      ].find(([prefix]) => s.startsWith(prefix!));
      return page ? `https://dashboard.stripe.com/${page[1]}/${ref}` : undefined;
    }
    case "paddle": {
      const page = [
        ["sub_", "subscriptions-v2"],
        ["txn_", "transactions-v2"],
        ["ctm_", "customers-v2"],
      ].find(([prefix]) => s.startsWith(prefix!));
      return page ? `https://vendors.paddle.com/${page[1]}/${ref}` : undefined;
    }
    case "lemonsqueezy":
      return /^\d+$/.test(s)
        ? `https://app.lemonsqueezy.com/${kind === "customer" ? "customers" : "orders"}/${ref}`
        : undefined;
    default:
      return undefined;
  }
}

function DashboardLink({ provider, id, kind }: { provider: unknown; id: unknown; kind?: "purchase" | "customer" }) {
  const url = dashboardUrl(provider, id, kind);
  if (id === null || id === undefined || id === "") return null;
  return url ? (
    <a href={url} target="_blank" rel="noopener noreferrer">
      {String(id)} ↗
    </a>
  ) : (
    <code>{String(id)}</code>
  );
}

const mappings: ResourceDef = {
  title: "Commerce mappings",
  path: "/v1/commerce/mappings",
  singular: "mapping",
  writers: MAPPING_ROLES,
  filterHint: 'provider == "stripe"',
  columns: [
    { key: "id", label: "Id" },
    { key: "provider", label: "Provider", render: (row) => providerName(row["provider"]) },
    { key: "externalId", label: "Price, product or variant" },
    { key: "templateId", label: "License template", ref: "templates" },
    { key: "quantityMode", label: "Quantity makes" },
    { key: "description", label: "Description" },
  ],
  fields: [
    { name: "provider", label: "Provider", kind: "select", options: commerceMappingProviderValues, required: true },
    {
      name: "externalId",
      label: "Price, product or variant id",
      required: true,
      hint: "Stripe price_… or prod_…, Paddle pri_… or pro_…, Lemon Squeezy variant or product id",
    },
    { name: "templateId", label: "License template id", kind: "number", required: true, ref: "templates" },
    {
      name: "quantityMode",
      label: "Quantity makes",
      kind: "select",
      options: commerceMappingQuantityModeValues,
      hint: "licenses: N licenses for quantity N; seats: one license with N × the template's max clients",
    },
    { name: "description", label: "Description" },
  ],
};

/** The mappings page: list, create, edit and delete (docs/commerce/<provider>.md explain them). */
export function CommerceMappings({ roles }: { roles: string[] }) {
  return (
    <>
      <ResourcePage def={mappings} roles={roles} />
      <p class="hint">
        Each purchase of a mapped price, product or variant makes licenses from its template. Set up each provider as
        docs/commerce/stripe.md, paddle.md and lemonsqueezy.md describe.
      </p>
    </>
  );
}

/**
 * An order's payment provider: its purchases (provider, state, dashboard links) and the events received for it.
 * Shows nothing for an order no provider made, or to roles that cannot read the commerce records.
 */
export function OrderCommerce({ orderId }: { orderId: unknown }) {
  const [purchases, setPurchases] = useState<Row[]>();
  const [error, setError] = useState<string>();
  useEffect(() => {
    setPurchases(undefined);
    if (typeof orderId !== "number") return;
    let live = true;
    call("GET", "/v1/commerce/purchases", { query: { filter: `orderId == ${orderId}`, take: 10 } }).then(
      (data) => live && setPurchases(listOf(data).rows),
      // 403: roles without the commerce records see the order without them.
      (e: Error) => live && !(e instanceof ApiFailure && e.status === 403) && setError(e.message),
    );
    return () => {
      live = false;
    };
  }, [orderId]);
  if (typeof orderId !== "number") return null;
  if (error) return <ErrorBox error={error} />;
  if (!purchases || purchases.length === 0) return null;
  return (
    <section class="commerce" aria-label="Payment provider">
      <h3>Payment provider</h3>
      {purchases.map((p) => (
        <dl class="facts">
          <dt>Provider</dt>
          <dd>{providerName(p["provider"])}</dd>
          <dt>Purchase</dt>
          <dd>
            <DashboardLink provider={p["provider"]} id={p["purchaseRef"]} />
          </dd>
          <dt>Customer at the provider</dt>
          <dd>
            <DashboardLink provider={p["provider"]} id={p["customerRef"]} kind="customer" />
          </dd>
          <dt>State</dt>
          <dd>{String(p["state"] ?? "")}</dd>
          <dt>Paid period ends</dt>
          <dd>{typeof p["periodEnd"] === "string" ? formatDate(p["periodEnd"]) : "—"}</dd>
        </dl>
      ))}
      <ListView
        title="Provider events"
        path="/v1/commerce/events"
        query={{ filter: `orderId == ${orderId}` }}
        filterHint='status == "applied"'
        columns={[
          { key: "createdAt", label: "Received" },
          { key: "type", label: "Event" },
          { key: "action", label: "Meant" },
          { key: "status", label: "Outcome" },
          { key: "detail", label: "Detail" },
          {
            key: "eventId",
            label: "Event id",
            render: (row) => <DashboardLink provider={row["provider"]} id={row["eventId"]} />,
          },
        ]}
      />
    </section>
  );
}
