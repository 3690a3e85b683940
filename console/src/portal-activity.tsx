/**
 * A customer's own doings in the customer portal (issue 30), on the customer's page: the audit entries whose actor is
 * that customer (`"actor":{"kind":"customer","customerId":N}` in the entry's properties, src/db/logging.ts), newest
 * first: sign-ins, machines freed, licensee names changed. The audit trail is the Administrators' (GET /v1/log).
 */
import { ListView } from "./ui";
import { formatDate } from "./words";

type Row = Record<string, unknown>;

/** What an entry touched, from its properties: the license and machine, the new name. */
function touched(row: Row): string {
  try {
    const p = JSON.parse(String(row["properties"] ?? "{}")) as Record<string, unknown>;
    return ["licenseId", "machineId", "licenseeName", "platform", "clientIp"]
      .filter((k) => p[k] !== undefined && p[k] !== null)
      .map((k) => `${k} ${String(p[k])}`)
      .join(", ");
  } catch {
    return "";
  }
}

/** The filter of one customer's portal entries: audit entries naming the customer as their actor. */
export function portalActivityFilter(customerId: number): string {
  const actor = JSON.stringify({ actor: { kind: "customer", customerId } }).slice(1, -1);
  return `category == "Audit" && properties.Contains(${JSON.stringify(actor)})`;
}

export function PortalActivity({ customerId }: { customerId: number }) {
  return (
    <>
      <p>
        <a href="#/customers">← Customers</a>
      </p>
      <h2>Customer {customerId}: portal activity</h2>
      <p>What the customer did in the customer portal (/portal/): sign-ins, machines deactivated, licensee names.</p>
      <ListView
        title="Portal activity"
        path="/v1/log"
        defaultSort="-timestamp"
        query={{ filter: portalActivityFilter(customerId) }}
        filterHint='message.Contains("sign-in")'
        columns={[
          { key: "timestamp", label: "When", render: (r) => formatDate(String(r["timestamp"])) },
          { key: "message", label: "What" },
          { key: "properties", label: "Details", render: (r) => <span class="small">{touched(r)}</span> },
        ]}
      />
    </>
  );
}
