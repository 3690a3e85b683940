/** The console's pages beyond the plain resources: products and releases, licenses, webhooks, keys, settings, log. */
import { useEffect, useState } from "preact/hooks";
import { api, call, must } from "./api/client";
import {
  CopyButton,
  EntityForm,
  ErrorBox,
  type FieldSpec,
  ListView,
  Notice,
  Ref,
  Table,
  cell,
  shown,
  useAction,
} from "./ui";
import { ArtifactUpload, ReleaseDownloads, SignerChanges } from "./release-files";
import { FeedPreview } from "./feed-preview";
import { ReleaseRollout } from "./rollout";
import { OrderCommerce } from "./commerce";
import { CheckInFact, LicenseFiles } from "./license-files";
import { LICENSING_MODES, PERMISSIONS, formatDate, labelOf, permissionMask, permissionNames } from "./words";
import { all, one, useLoad } from "./load";
import { type FilterField, filterBy } from "./filters";

type Row = Record<string, unknown>;
const managers = ["Administrator", "LicenseManager"];
/** Everyone the management API lets in (SPEC's access table: products, releases and licenses are theirs too). */
const staff = ["Administrator", "LicenseManager", "Sales"];
const can = (roles: string[], allowed: string[]) => roles.some((r) => allowed.includes(r));
const link = (href: string, text: unknown) => <a href={href}>{cell(text)}</a>;

// ---------------------------------------------------------------- products and releases

const productFields: FieldSpec[] = [
  { name: "code", label: "Code", required: true, hint: "Used in update URLs" },
  { name: "name", label: "Name", required: true },
  { name: "description", label: "Description" },
  { name: "isApplication", label: "Application (receives releases)", kind: "bool" },
  { name: "purchaseUrl", label: "Purchase URL" },
  { name: "supportEmail", label: "Support email" },
  {
    name: "windowsPublisherNames",
    label: "Windows publisher names",
    kind: "lines",
    hint: "One per line: the signing certificate's CN (electron-builder's publisherName)",
  },
  {
    name: "macTeamIds",
    label: "Apple Team IDs",
    kind: "lines",
    hint: "One per line, e.g. 7Z6EMTD2C6 (codesign -dv: TeamIdentifier)",
  },
  {
    name: "tauriPublicKey",
    label: "Tauri public key",
    nullable: true,
    hint: "tauri.conf.json's pubkey: uploaded .sig files must verify with it",
  },
];

export function Products({ roles }: { roles: string[] }) {
  const [creating, setCreating] = useState(false);
  const [reload, setReload] = useState(0);
  return (
    <>
      <div class="page-head">
        <h2>Products</h2>
        {can(roles, staff) && !creating ? (
          <button type="button" class="primary" onClick={() => setCreating(true)}>
            New product
          </button>
        ) : null}
      </div>
      {creating ? (
        <EntityForm
          title="New product"
          fields={productFields}
          submitLabel="Create product"
          onSubmit={async (product) => must(await api.POST("/v1/products", { body: { product } as never }))}
          onDone={(r) => {
            setCreating(false);
            setReload((n) => n + 1);
            location.hash = `#/products/${String((r as Row)["productId"])}`;
          }}
          onCancel={() => setCreating(false)}
        />
      ) : null}
      <ListView
        title="Products"
        path="/v1/products"
        reload={reload}
        filterHint='name.Contains("Studio")'
        filters={[filterBy.search("Search", "name", "code")]}
        columns={[
          { key: "id", label: "Id" },
          { key: "code", label: "Code", render: (r) => link(`#/products/${String(r["id"])}`, r["code"]) },
          { key: "name", label: "Name" },
          { key: "isApplication", label: "Application" },
        ]}
      />
    </>
  );
}

const releaseFields: FieldSpec[] = [
  { name: "version", label: "Version", required: true, hint: "Semantic version, e.g. 1.2.3" },
  { name: "name", label: "Name" },
  { name: "channel", label: "Channel", kind: "select", options: ["stable", "insider"] },
  { name: "releaseDate", label: "Release date", kind: "date" },
  { name: "public", label: "Published (clients see it)", kind: "bool" },
  {
    name: "stagingPercentage",
    label: "Staged rollout %",
    kind: "number",
    hint: "0–100: the share of clients offered this release",
  },
  { name: "requiresMaintenance", label: "Requires maintenance", kind: "bool" },
  { name: "releaseNotes", label: "Release notes", kind: "textarea" },
];

export function Product({ id, roles }: { id: number; roles: string[] }) {
  const product = useLoad(() => one("/v1/products", `id == ${id}`), [id]);
  const [editing, setEditing] = useState(false);
  const [creating, setCreating] = useState(false);
  const [reload, setReload] = useState(0);
  const p = product.data;
  const write = can(roles, staff);
  return (
    <>
      <p>
        <a href="#/products">← Products</a>
      </p>
      <ErrorBox error={product.error} />
      {p ? (
        <>
          <div class="page-head">
            <h2>
              {cell(p["name"])} <small>({cell(p["code"])})</small>
            </h2>
            {write ? (
              <span>
                <button type="button" onClick={() => setEditing(!editing)}>
                  Edit product
                </button>{" "}
                <button type="button" class="primary" onClick={() => setCreating(true)}>
                  New release
                </button>
              </span>
            ) : null}
          </div>
          {editing ? (
            <EntityForm
              title="Edit product"
              fields={productFields}
              initial={p}
              submitLabel="Save"
              onSubmit={(values) => call("PUT", "/v1/products", { body: { product: { ...values, id } } })}
              onDone={() => {
                setEditing(false);
                return product.reload();
              }}
              onCancel={() => setEditing(false)}
            />
          ) : null}
          {creating ? (
            <EntityForm
              title="New release"
              fields={releaseFields}
              initial={{ channel: "stable", public: false, requiresMaintenance: true }}
              submitLabel="Create release"
              onSubmit={(productRelease) => call("POST", `/v1/products/${id}/releases`, { body: { productRelease } })}
              onDone={(r) => {
                setCreating(false);
                setReload((n) => n + 1);
                location.hash = `#/products/${id}/releases/${String((r as Row)["productReleaseId"])}`;
              }}
              onCancel={() => setCreating(false)}
            />
          ) : null}
          <ListView
            title="Releases"
            path={`/v1/products/${id}/releases`}
            reload={reload}
            filterHint='channel == "stable"'
            columns={[
              {
                key: "version",
                label: "Version",
                render: (r) => link(`#/products/${id}/releases/${String(r["id"])}`, r["version"]),
              },
              { key: "name", label: "Name" },
              { key: "channel", label: "Channel" },
              { key: "public", label: "Published" },
              { key: "stagingPercentage", label: "Rollout %" },
              { key: "releaseDate", label: "Date" },
            ]}
          />
        </>
      ) : null}
    </>
  );
}

export function Release({ productId, releaseId, roles }: { productId: number; releaseId: number; roles: string[] }) {
  const base = `/v1/products/${productId}/releases`;
  const release = useLoad(() => one(base, `id == ${releaseId}`), [releaseId]);
  const product = useLoad(() => one("/v1/products", `id == ${productId}`), [productId]);
  const [reload, setReload] = useState(0);
  const [notice, setNotice] = useState<string>();
  const action = useAction();
  const write = can(roles, staff);
  // Artifacts (list, upload, verify) are the managers' (SPEC's access table).
  const artifacts = can(roles, managers);
  const r = release.data;
  const update = (values: Row, said: string) =>
    action.run(async () => {
      await call("PUT", base, { body: { productRelease: { ...values, id: releaseId } } });
      setNotice(said);
      release.reload();
    });
  return (
    <>
      <p>
        <a href={`#/products/${productId}`}>← {cell(product.data?.["name"] ?? "Product")}</a>
      </p>
      <ErrorBox error={release.error} />
      {r ? (
        <>
          <h2>
            Release {cell(r["version"])}{" "}
            <small data-testid="release-state">{r["halted"] ? "halted" : r["public"] ? "published" : "hidden"}</small>
          </h2>
          <dl class="facts">
            <dt>Channel</dt>
            <dd>{cell(r["channel"])}</dd>
            <dt>Release date</dt>
            <dd>{cell(r["releaseDate"])}</dd>
          </dl>
          {write ? (
            <div class="actions">
              {r["public"] ? (
                <button type="button" onClick={() => update({ public: false }, "The release is hidden")}>
                  Hide
                </button>
              ) : (
                <button
                  type="button"
                  class="primary"
                  onClick={() => update({ public: true }, "The release is published")}
                >
                  Publish
                </button>
              )}
              {artifacts ? (
                <button
                  type="button"
                  onClick={() =>
                    action.run(async () => {
                      const res = await call("POST", `${base}/${releaseId}/downloads/verify`, { body: {} });
                      setNotice(
                        `Verified: ${JSON.stringify(Object.fromEntries(Object.entries(res).filter(([k]) => k !== "success" && k !== "code")))}`,
                      );
                    })
                  }
                >
                  Verify artifacts
                </button>
              ) : null}
            </div>
          ) : null}
          <ErrorBox error={action.error} />
          <Notice text={notice} />
          <SignerChanges changes={r["signerChanges"]} />
          <ReleaseRollout
            productId={productId}
            releaseId={releaseId}
            release={r}
            write={can(roles, managers)}
            changed={release.reload}
          />
          {write ? (
            <form
              class="card form"
              aria-label="Release notes"
              onSubmit={(e) => {
                e.preventDefault();
                const releaseNotes = String(new FormData(e.currentTarget).get("releaseNotes") ?? "");
                void update({ releaseNotes }, "Release notes saved");
              }}
            >
              <h3>Release notes</h3>
              <div class="field">
                <label for="release-notes">
                  What is new in {cell(r["version"])} (shown to clients with the update)
                </label>
                <textarea
                  id="release-notes"
                  name="releaseNotes"
                  rows={5}
                  key={String(r["updatedAt"] ?? "")}
                  defaultValue={typeof r["releaseNotes"] === "string" ? r["releaseNotes"] : ""}
                />
              </div>
              <div class="actions">
                <button type="submit" disabled={action.busy}>
                  Save release notes
                </button>
              </div>
            </form>
          ) : r["releaseNotes"] ? (
            <section class="card" aria-label="Release notes">
              <h3>Release notes</h3>
              <pre class="notes">{cell(r["releaseNotes"])}</pre>
            </section>
          ) : null}
          {artifacts ? (
            <ArtifactUpload
              productId={productId}
              releaseId={releaseId}
              admin={can(roles, ["Administrator"])}
              onUploaded={(said) => {
                setNotice(said);
                setReload((n) => n + 1);
                release.reload();
              }}
            />
          ) : null}
          {artifacts ? <ReleaseDownloads path={`${base}/${releaseId}/downloads`} reload={reload} /> : null}
          <FeedPreview
            productId={productId}
            productCode={String(product.data?.["code"] ?? "")}
            channel={r["channel"] === "insider" ? "insider" : "stable"}
          />
        </>
      ) : null}
    </>
  );
}

// ---------------------------------------------------------------- licenses

/** "Now" and "in 30 days" as the filter language compares dates (ISO text), when the filter is applied. */
const inDays = (days: number) => JSON.stringify(new Date(Date.now() + days * 86_400_000).toISOString());

/** The licenses list's simple filters: text, state, product, mode, expiry. */
const LICENSE_FILTERS: FilterField[] = [
  filterBy.search("Search", "licenseId", "licenseeName", "licenseeEmail", "licenseeCompany"),
  filterBy.choice("State", [
    { label: "Active", filter: () => `revoked == false && (expireDate == null || expireDate > ${inDays(0)})` },
    {
      label: "Expiring in 30 days",
      filter: () => `revoked == false && expireDate > ${inDays(0)} && expireDate <= ${inDays(30)}`,
    },
    { label: "Expired", filter: () => `revoked == false && expireDate <= ${inDays(0)}` },
    { label: "Revoked", filter: "revoked == true" },
  ]),
  filterBy.ref("Product", "productId", "products"),
  filterBy.values("Mode", "licensingMode", LICENSING_MODES),
  filterBy.dates("Expires", "expireDate"),
];

export function Licenses({ roles }: { roles: string[] }) {
  const templates = useLoad(() => all("/v1/license-templates"), []);
  const [creating, setCreating] = useState(false);
  const [reload, setReload] = useState(0);
  const [created, setCreated] = useState<Row>();
  return (
    <>
      <div class="page-head">
        <h2>Licenses</h2>
        {can(roles, staff) && !creating ? (
          <button type="button" class="primary" onClick={() => setCreating(true)}>
            New license from a template
          </button>
        ) : null}
      </div>
      {creating ? (
        <EntityForm
          title="New license from a template"
          fields={[
            {
              name: "templateId",
              label: "Template",
              kind: "select",
              required: true,
              options: (templates.data ?? []).map((t) => `${String(t["id"])}: ${String(t["name"])}`),
            },
            { name: "licenseeName", label: "Licensee name" },
            { name: "licenseeEmail", label: "Licensee email" },
            { name: "customerId", label: "Customer id", kind: "number", ref: "customers" },
            { name: "orderId", label: "Order id", kind: "number", ref: "orders" },
          ]}
          submitLabel="Create license"
          onSubmit={async (values) => {
            const templateId = Number(String(values["templateId"]).split(":")[0]);
            const template = templates.data?.find((t) => t["id"] === templateId);
            return call("POST", "/v1/licenses", {
              body: { license: { ...values, templateId, productId: template?.["productId"] } },
            });
          }}
          onDone={(r) => {
            setCreating(false);
            setCreated(r as Row);
            setReload((n) => n + 1);
          }}
          onCancel={() => setCreating(false)}
        />
      ) : null}
      {created ? <Notice text={`License ${String(created["licenseId"])} created`} /> : null}
      <ListView
        title="Licenses"
        path="/v1/licenses"
        reload={reload}
        filterHint='licenseeName.Contains("Ini") && revoked == false'
        filters={LICENSE_FILTERS}
        columns={[
          {
            key: "licenseId",
            label: "License",
            render: (r) => link(`#/licenses/${String(r["licenseId"])}`, r["licenseId"]),
          },
          { key: "licenseeName", label: "Licensee" },
          { key: "productId", label: "Product", ref: "products" },
          { key: "licensingMode", label: "Mode" },
          { key: "status", label: "Status" },
          { key: "activeClientCount", label: "Clients" },
          { key: "maxClients", label: "Max" },
          { key: "expireDate", label: "Expires" },
        ]}
      />
    </>
  );
}

/** What the license page shows, in this order; references by name beside the id. */
const LICENSE_FACTS: [string, ("products" | "customers" | "orders" | "templates")?][] = [
  ["licenseeName"],
  ["licenseeEmail"],
  ["productId", "products"],
  ["customerId", "customers"],
  ["orderId", "orders"],
  ["templateId", "templates"],
  ["licenseType"],
  ["edition"],
  ["licensingMode"],
  ["maxClients"],
  ["activeClientCount"],
  ["issueDate"],
  ["expireDate"],
  ["supportExpireDate"],
  ["userKey"],
  // The license's ?feed= token for update feeds (Tauri, Sparkle, Squirrel, Velopack, electron-builder).
  ["feedToken"],
  ["revoked"],
];

/** Machine ids longer than this are shown shortened, with the whole id one click away (a copy button, a tooltip). */
const SHORT_ID = 16;

/** A machine as people name it: its client name, and its id (shortened when long) with a copy button. */
function Machine({ row }: { row: Row }) {
  const id = typeof row["machineId"] === "string" ? row["machineId"] : "";
  const name = typeof row["clientName"] === "string" ? row["clientName"] : "";
  const short = id.length > SHORT_ID ? `${id.slice(0, 8)}…${id.slice(-4)}` : id;
  return (
    <span class="machine">
      {name ? <span class="machine-name">{name}</span> : null}
      {id ? (
        <span class="machine-id">
          <code title={id}>{short}</code> <CopyButton text={id} label="Copy id" />
        </span>
      ) : null}
    </span>
  );
}

export function License({ id, roles }: { id: string; roles: string[] }) {
  const license = useLoad(() => one("/v1/licenses", `licenseId == ${JSON.stringify(id)}`), [id]);
  const [tick, setTick] = useState(0);
  const [token, setToken] = useState<string>();
  const action = useAction();
  const write = can(roles, staff);
  // Seats and activations change while an application runs: read them again every few seconds.
  useEffect(() => {
    const timer = setInterval(() => {
      setTick((t) => t + 1);
      license.reload();
    }, 3000);
    return () => clearInterval(timer);
  }, [id]);
  const l = license.data;
  return (
    <>
      <p>
        <a href="#/licenses">← Licenses</a>
      </p>
      <ErrorBox error={license.error} />
      {l ? (
        <>
          <h2>
            License {cell(l["licenseId"])}
            {l["licenseeName"] ? ` (${cell(l["licenseeName"])})` : ""}{" "}
            <span class={`badge ${String(l["status"])}`}>{cell(l["status"])}</span>
          </h2>
          <dl class="facts">
            {LICENSE_FACTS.map(([k, table]) => (
              <>
                <dt>{labelOf(k)}</dt>
                <dd>{table ? <Ref table={table} id={l[k]} /> : shown(k, l[k])}</dd>
              </>
            ))}
          </dl>
          <CheckInFact license={l} />
          <OrderCommerce orderId={l["orderId"]} />
          {write ? (
            <div class="actions">
              {l["revoked"] ? (
                <button
                  type="button"
                  onClick={() =>
                    action.run(async () => {
                      await call("PUT", "/v1/licenses", { body: { license: { id: l["id"], revoked: false } } });
                      return license.reload();
                    })
                  }
                >
                  Un-revoke
                </button>
              ) : (
                <button
                  type="button"
                  class="danger"
                  onClick={() =>
                    confirm(`Revoke license ${id}?`) &&
                    action.run(async () => {
                      await call("PUT", "/v1/licenses", { body: { license: { id: l["id"], revoked: true } } });
                      return license.reload();
                    })
                  }
                >
                  Revoke
                </button>
              )}
              <form
                class="inline"
                onSubmit={(e) => {
                  e.preventDefault();
                  const until = String(new FormData(e.currentTarget).get("support"));
                  void action.run(async () => {
                    await call("PUT", "/v1/licenses", {
                      body: { license: { id: l["id"], supportExpireDate: new Date(until).toISOString() } },
                    });
                    return license.reload();
                  });
                }}
              >
                <label for="support">Support until</label>
                <input id="support" name="support" type="date" required />
                <button type="submit">Extend support</button>
              </form>
              <form
                class="inline"
                onSubmit={(e) => {
                  e.preventDefault();
                  const machineId = String(new FormData(e.currentTarget).get("machine"));
                  void action.run(async () => {
                    const res = await call("POST", `/v1/licenses/${encodeURIComponent(id)}/tokens`, {
                      body: { licenseToken: { machineId } },
                    });
                    setToken(String(res["token"]));
                    setTick((t) => t + 1);
                  });
                }}
              >
                <label for="machine">Machine id</label>
                <input id="machine" name="machine" required />
                <button type="submit">Issue offline activation token</button>
              </form>
            </div>
          ) : null}
          <ErrorBox error={action.error} />
          {token ? (
            <p class="notice" role="status">
              Offline activation token (shown once): <code>{token}</code> <CopyButton text={token} />
            </p>
          ) : null}
          <ListView
            title="Activations and floating seats"
            path={`/v1/licenses/${encodeURIComponent(id)}/tokens`}
            reload={tick}
            filterHint='machineId.StartsWith("PC")'
            filters={[
              filterBy.search("Machine or client", "machineId", "clientId", "clientName"),
              filterBy.values("Kind", "kind", ["Activation", "Floating"]),
            ]}
            columns={[
              { key: "kind", label: "Kind" },
              { key: "machineId", label: "Machine", render: (r) => <Machine row={r} /> },
              { key: "clientId", label: "Client" },
              { key: "issueDate", label: "Since" },
              { key: "lastHeartbeat", label: "Last heartbeat" },
              { key: "expireDate", label: "Expires" },
            ]}
            actions={
              write
                ? (row, refresh) => (
                    <button
                      type="button"
                      onClick={() =>
                        action.run(async () => {
                          await call("DELETE", `/v1/licenses/${encodeURIComponent(id)}/tokens/${String(row["id"])}`);
                          refresh();
                          return license.reload();
                        })
                      }
                    >
                      {row["kind"] === "Floating" || row["kind"] === 1 ? "Free seat" : "Free machine"}
                    </button>
                  )
                : undefined
            }
          />
          <LicenseFiles licenseId={id} write={write} reload={tick} />
          {can(roles, managers) ? (
            <ListView
              title="Traces"
              path="/v1/license-traces"
              query={{ filter: `licenseId == "${String(l["licenseId"])}"` }}
              reload={tick}
              filterHint='action == "Activate"'
              columns={[
                { key: "createdAt", label: "When" },
                { key: "action", label: "Action" },
                { key: "machineId", label: "Machine", render: (r) => <Machine row={r} /> },
                { key: "clientIp", label: "IP" },
              ]}
            />
          ) : null}
        </>
      ) : null}
    </>
  );
}

// ---------------------------------------------------------------- webhooks

export function Webhooks() {
  const types = useLoad(async () => (await call("GET", "/v1/webhooks/event-types"))["eventTypes"] as unknown[], []);
  const [creating, setCreating] = useState(false);
  const [secret, setSecret] = useState<string>();
  const [reload, setReload] = useState(0);
  const typeNames = (types.data ?? []).map((t) =>
    typeof t === "string" ? t : String((t as Row)["name"] ?? (t as Row)["type"]),
  );
  return (
    <>
      <div class="page-head">
        <h2>Webhooks</h2>
        {!creating ? (
          <button type="button" class="primary" onClick={() => setCreating(true)}>
            New subscription
          </button>
        ) : null}
      </div>
      {creating ? (
        <EntityForm
          title="New subscription"
          fields={[
            { name: "name", label: "Name", required: true },
            { name: "url", label: "URL", required: true },
            { name: "eventTypes", label: "Event types", kind: "checks", options: ["*", ...typeNames] },
            { name: "maxRetryCount", label: "Max retries", kind: "number" },
            { name: "description", label: "Description" },
          ]}
          submitLabel="Subscribe"
          onSubmit={(subscription) => call("POST", "/v1/webhooks/subscriptions", { body: { subscription } })}
          onDone={(r) => {
            setCreating(false);
            setSecret(String(((r as Row)["subscription"] as Row)["secret"]));
            setReload((n) => n + 1);
          }}
          onCancel={() => setCreating(false)}
        />
      ) : null}
      {secret ? (
        <p class="notice" role="status">
          Signing secret (shown once): <code>{secret}</code> <CopyButton text={secret} />
        </p>
      ) : null}
      <ListView
        title="Subscriptions"
        path="/v1/webhooks/subscriptions"
        reload={reload}
        filterHint="isActive == true"
        columns={[
          { key: "name", label: "Name", render: (r) => link(`#/webhooks/${String(r["id"])}`, r["name"]) },
          { key: "url", label: "URL" },
          { key: "eventTypes", label: "Events" },
          { key: "isActive", label: "Active" },
          { key: "maxRetryCount", label: "Retries" },
        ]}
      />
    </>
  );
}

/** A delivery event's state: delivered, given up (recorded from the dead-letter queue), a retry due, or failed. */
function deliveryStatus(row: Row): string {
  if (row["isSuccess"]) return "Delivered";
  if (row["deadLetteredAt"]) return `Given up ${formatDate(String(row["deadLetteredAt"]))}`;
  if (row["nextRetryAt"]) return "Retry due";
  return row["sentAt"] ? "Failed" : "Pending";
}

/** The last answer in brief: the error (or the body of a 2xx), cut to a line. */
function lastAnswer(row: Row): string {
  const text = String(row["errorMessage"] ?? row["response"] ?? "");
  return text.length > 60 ? `${text.slice(0, 60)}…` : text;
}

export function Webhook({ id }: { id: number }) {
  const sub = useLoad(async () => (await call("GET", `/v1/webhooks/subscriptions/${id}`))["subscription"] as Row, [id]);
  const [reload, setReload] = useState(0);
  const [shown, setShown] = useState<Row>();
  const [notice, setNotice] = useState<string>();
  const action = useAction();
  const s = sub.data;
  return (
    <>
      <p>
        <a href="#/webhooks">← Webhooks</a>
      </p>
      <ErrorBox error={sub.error} />
      {s ? (
        <>
          <h2>Subscription {cell(s["name"])}</h2>
          <dl class="facts">
            <dt>URL</dt>
            <dd>{cell(s["url"])}</dd>
            <dt>Events</dt>
            <dd>{cell(s["eventTypes"])}</dd>
            <dt>Active</dt>
            <dd>{cell(s["isActive"])}</dd>
          </dl>
          <div class="actions">
            <button
              type="button"
              onClick={() =>
                action.run(async () => {
                  const res = await call("POST", `/v1/webhooks/subscriptions/${id}/test`, { body: {} });
                  setNotice(String(res["message"]));
                  setReload((n) => n + 1);
                })
              }
            >
              Send a test delivery
            </button>
            <button
              type="button"
              onClick={() =>
                action.run(async () => {
                  await call("PUT", `/v1/webhooks/subscriptions/${id}`, {
                    body: { subscription: { isActive: !s["isActive"] } },
                  });
                  return sub.reload();
                })
              }
            >
              {s["isActive"] ? "Deactivate" : "Activate"}
            </button>
          </div>
          <ErrorBox error={action.error} />
          <Notice text={notice} />
          <ListView
            title="Delivery history"
            path={`/v1/webhooks/subscriptions/${id}/events`}
            reload={reload}
            filterHint="isSuccess == false"
            columns={[
              { key: "eventId", label: "Event" },
              { key: "eventType", label: "Type" },
              { key: "status", label: "Status", render: deliveryStatus },
              { key: "statusCode", label: "HTTP" },
              { key: "lastAnswer", label: "Last answer", render: lastAnswer },
              { key: "retryCount", label: "Retries" },
              { key: "nextRetryAt", label: "Next retry" },
              { key: "sentAt", label: "Sent" },
            ]}
            actions={(row, refresh) => (
              <>
                <button type="button" onClick={() => setShown(row)}>
                  Details
                </button>
                {row["deadLetteredAt"] ? (
                  // Given up (recorded from the dead-letter queue): an Administrator queues it again.
                  <button
                    type="button"
                    onClick={() =>
                      action.run(async () => {
                        const res = await call(
                          "POST",
                          `/v1/webhooks/subscriptions/${id}/events/${String(row["id"])}/redeliver`,
                          { body: {} },
                        );
                        setNotice(String(res["message"]));
                        setShown(res["event"] as Row);
                        refresh();
                      })
                    }
                  >
                    Queue again
                  </button>
                ) : row["isSuccess"] ? null : (
                  <button
                    type="button"
                    onClick={() =>
                      action.run(async () => {
                        const res = await call(
                          "POST",
                          `/v1/webhooks/subscriptions/${id}/events/${String(row["id"])}/retry`,
                          { body: {} },
                        );
                        setNotice(`Retry of ${String(row["eventId"])}: ${String(res["message"])}`);
                        setShown(res["event"] as Row);
                        refresh();
                      })
                    }
                  >
                    Retry now
                  </button>
                )}
              </>
            )}
          />
          {shown ? (
            <section class="card" aria-label="Delivery details">
              <h3>Delivery {cell(shown["eventId"])}</h3>
              <dl class="facts">
                <dt>Status</dt>
                <dd>{deliveryStatus(shown)}</dd>
                <dt>HTTP status</dt>
                <dd>{cell(shown["statusCode"])}</dd>
                <dt>Error</dt>
                <dd>{cell(shown["errorMessage"])}</dd>
                <dt>Retries</dt>
                <dd>{cell(shown["retryCount"])}</dd>
              </dl>
              <h4>Response</h4>
              <pre class="feed">{cell(shown["response"])}</pre>
              <h4>Payload</h4>
              <pre class="feed">{cell(shown["payload"])}</pre>
            </section>
          ) : null}
        </>
      ) : null}
    </>
  );
}

// ---------------------------------------------------------------- API keys, settings, log, audit

export function ApiKeys() {
  const users = useLoad(() => all("/v1/users"), []);
  const revoke = useAction();
  const [creating, setCreating] = useState(false);
  const [created, setCreated] = useState<Row>();
  const [reload, setReload] = useState(0);
  return (
    <>
      <div class="page-head">
        <h2>API keys</h2>
        {!creating ? (
          <button
            type="button"
            class="primary"
            onClick={() => {
              setCreating(true);
              setCreated(undefined);
            }}
          >
            New API key
          </button>
        ) : null}
      </div>
      {creating ? (
        <EntityForm
          title="New API key"
          fields={[
            { name: "name", label: "Name", required: true },
            {
              name: "ownerId",
              label: "Owner",
              kind: "select",
              required: true,
              options: (users.data ?? []).map((u) => String(u["userName"])),
            },
            {
              name: "permissions",
              label: "Permissions",
              kind: "checks",
              options: PERMISSIONS.map((p) => p.name),
              hint: PERMISSIONS.map((p) => `${p.name}: ${p.allows}`).join("; "),
            },
            { name: "expireDate", label: "Expires", kind: "date" },
            { name: "description", label: "Description" },
          ]}
          submitLabel="Create key"
          onSubmit={async (values) => {
            const owner = users.data?.find((u) => u["userName"] === values["ownerId"]);
            const permissions = permissionMask(values["permissions"] as string[]);
            if (permissions === 0)
              throw new Error("Choose at least one permission: a key without any is refused everywhere.");
            return must(
              await api.POST("/v1/api-keys", {
                body: { apiKey: { ...values, permissions, ownerId: owner?.["id"] } } as never,
              }),
            );
          }}
          onDone={(r) => {
            setCreating(false);
            setCreated(r as Row);
            setReload((n) => n + 1);
          }}
          onCancel={() => setCreating(false)}
        />
      ) : null}
      {created ? (
        <section class="card notice" role="status" aria-label="New key">
          <p>
            <strong>Store this key now: it is shown only once.</strong>
          </p>
          <p>
            Key: <code id="new-key">{cell(created["key"])}</code>{" "}
            <CopyButton text={String(created["key"])} label="Copy key" />
          </p>
          <p>
            Client secret: <code>{cell(created["clientSecret"])}</code>{" "}
            <CopyButton text={String(created["clientSecret"])} label="Copy secret" />
          </p>
        </section>
      ) : null}
      <ErrorBox error={revoke.error} />
      <ListView
        title="API keys"
        path="/v1/api-keys"
        reload={reload}
        filterHint="revoked == false"
        columns={[
          { key: "id", label: "Id" },
          { key: "name", label: "Name" },
          { key: "key", label: "Key" },
          { key: "ownerId", label: "Owner", ref: "users" },
          { key: "permissions", label: "Permissions", render: (k) => permissionNames(Number(k["permissions"])) },
          { key: "expireDate", label: "Expires" },
          { key: "revoked", label: "Revoked" },
        ]}
        actions={(row, refresh) =>
          row["revoked"] ? null : (
            <button
              type="button"
              class="danger"
              onClick={() =>
                confirm(`Revoke the API key ${String(row["name"])}? Whoever uses it is refused from then on.`) &&
                revoke.run(async () => {
                  await call("PUT", "/v1/api-keys", { body: { apiKey: { id: row["id"], revoked: true } } });
                  return refresh();
                })
              }
            >
              Revoke
            </button>
          )
        }
      />
    </>
  );
}

export function Settings() {
  const settings = useLoad(async () => (await call("GET", "/v1/settings"))["settings"] as Row[], []);
  const action = useAction();
  const [notice, setNotice] = useState<string>();
  return (
    <>
      <h2>Settings</h2>
      <ErrorBox error={settings.error ?? action.error} />
      <Notice text={notice} />
      {settings.data ? (
        <Table
          caption="Settings"
          rows={settings.data}
          columns={[
            { key: "name", label: "Name" },
            {
              key: "value",
              label: "Value",
              render: (s) =>
                s["readOnly"] || s["isSecret"] ? (
                  <span>{s["isSecret"] ? (s["isSet"] ? "(set)" : "(not set)") : cell(s["value"])}</span>
                ) : (
                  <form
                    class="inline"
                    onSubmit={(e) => {
                      e.preventDefault();
                      const value = String(new FormData(e.currentTarget).get("value"));
                      void action.run(async () => {
                        await call("PUT", "/v1/settings", { body: { settings: [{ name: s["name"], value }] } });
                        setNotice(`${String(s["name"])} saved`);
                        return settings.reload();
                      });
                    }}
                  >
                    <label class="sr-only" for={`set-${String(s["name"])}`}>
                      {cell(s["name"])}
                    </label>
                    <input id={`set-${String(s["name"])}`} name="value" placeholder={cell(s["value"])} required />
                    <button type="submit">Save</button>
                  </form>
                ),
            },
            { key: "source", label: "Source" },
            { key: "description", label: "What it does" },
          ]}
        />
      ) : null}
    </>
  );
}

const logColumns = [
  { key: "timestamp", label: "When" },
  { key: "level", label: "Level" },
  { key: "message", label: "Message" },
  { key: "requestId", label: "Request" },
  { key: "properties", label: "Properties", render: (r: Row) => <code class="small">{cell(r["properties"])}</code> },
];

/** The service log's and the audit trail's simple filters. */
const LOG_FILTERS: FilterField[] = [
  filterBy.search("Message", "message"),
  filterBy.choice(
    "Level",
    ["Error", "Warning", "Information"].map((level) => ({
      label: `${level} and above`,
      filter: `level >= "${level}"`,
    })),
  ),
  filterBy.dates("Written", "timestamp"),
];

export function Log() {
  return (
    <>
      <h2>Service log</h2>
      <ListView
        title="Log entries"
        path="/v1/log"
        defaultSort="-timestamp"
        filterHint='level >= "Warning"'
        filters={LOG_FILTERS}
        columns={logColumns}
      />
    </>
  );
}

/** The audit trail: the service log's entries of category Audit (Administrators only). */
export function Audit() {
  return (
    <>
      <h2>Audit trail</h2>
      <ListView
        title="Audit entries"
        path="/v1/log"
        defaultSort="-timestamp"
        query={{ filter: 'category == "Audit"' }}
        filterHint='message.Contains("key")'
        filters={LOG_FILTERS}
        columns={logColumns}
      />
    </>
  );
}

// ---------------------------------------------------------------- order lines

const lineFields: FieldSpec[] = [
  { name: "quantity", label: "Quantity", kind: "number" },
  { name: "unitPrice", label: "Unit price", kind: "number" },
  { name: "discount", label: "Discount", kind: "number" },
  { name: "description", label: "Description" },
];

/** An order's lines: one per product, addressed as /v1/orders/{orderId}/products/{productId}. */
export function OrderLines({ orderId }: { orderId: number }) {
  const [mode, setMode] = useState<{ kind: "new" } | { kind: "edit"; row: Row }>();
  const [reload, setReload] = useState(0);
  const action = useAction();
  const path = (productId: unknown) => `/v1/orders/${orderId}/products/${encodeURIComponent(String(productId))}`;
  const done = () => {
    setMode(undefined);
    setReload((n) => n + 1);
  };
  return (
    <>
      <p>
        <a href="#/orders">← Orders</a>
      </p>
      <div class="page-head">
        <h2>Order {orderId}: lines</h2>
        {!mode ? (
          <button type="button" class="primary" onClick={() => setMode({ kind: "new" })}>
            Add a product
          </button>
        ) : null}
      </div>
      {mode?.kind === "new" ? (
        <EntityForm
          title="Add a product to the order"
          fields={[
            { name: "productId", label: "Product id", kind: "number", required: true, ref: "products" },
            ...lineFields,
          ]}
          submitLabel="Add line"
          onSubmit={({ productId, ...orderProduct }) => call("POST", path(productId), { body: { orderProduct } })}
          onDone={done}
          onCancel={() => setMode(undefined)}
        />
      ) : null}
      {mode?.kind === "edit" ? (
        <EntityForm
          title={`Edit the line of product ${String(mode.row["productId"])}`}
          fields={lineFields}
          initial={mode.row}
          submitLabel="Save"
          onSubmit={(orderProduct) => call("PUT", path(mode.row["productId"]), { body: { orderProduct } })}
          onDone={done}
          onCancel={() => setMode(undefined)}
        />
      ) : null}
      <ErrorBox error={action.error} />
      <ListView
        title="Order lines"
        path={`/v1/orders/${orderId}/products`}
        reload={reload}
        filterHint="quantity >= 1"
        columns={[
          { key: "productId", label: "Product", ref: "products" },
          { key: "quantity", label: "Quantity" },
          { key: "unitPrice", label: "Unit price" },
          { key: "discount", label: "Discount" },
          { key: "description", label: "Description" },
        ]}
        actions={(row, refresh) => (
          <>
            <button type="button" onClick={() => setMode({ kind: "edit", row })}>
              Edit
            </button>
            <button
              type="button"
              class="danger"
              onClick={() =>
                confirm(`Remove product ${String(row["productId"])} from the order?`) &&
                action.run(async () => {
                  await call("DELETE", path(row["productId"]));
                  return refresh();
                })
              }
            >
              Remove
            </button>
          </>
        )}
      />
      <OrderCommerce orderId={orderId} />
    </>
  );
}
