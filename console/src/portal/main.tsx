/**
 * The customer portal (CONTRACT section 12): the vendor's customers sign in with a license's user key or an emailed
 * link, see their licenses (machines, floating seats, dates, renewal), free a machine, download their builds, read
 * their orders and change the licensee name. Every word of a refusal is the service's own. Branded from
 * `GET /v1/portal/branding` (Portal:Title, Portal:AccentColor, Portal:LogoUrl through the Worker's /portal/logo).
 */
import { render } from "preact";
import { useEffect, useState } from "preact/hooks";
import {
  type Branding,
  type Client,
  type Deactivations,
  type Download,
  type License,
  type Order,
  Refusal,
  type Session,
  api,
  must,
  setSession,
  whenEnded,
} from "./api";
import "./style.css";

/**
 * Why an emailed link did not sign in: the service sends the browser to /portal/#link-refused (used, expired or
 * unknown) or #sign-in-blocked (past the login limit). Fixed fragments worded here: no text from the address is shown.
 */
const LINK_REFUSALS: Record<string, string> = {
  "#link-refused": "This sign-in link is unknown, expired or already used: ask for a new one.",
  "#sign-in-blocked": "Too many failed sign-ins from this address: try again later.",
};

/**
 * The token of the emailed link that brought the customer here: the service sends the browser on to
 * /portal/#link=TOKEN and signs in no one until the customer, shown whose account it is, confirms (login CSRF).
 * Taken out of the address bar at once.
 */
function linkToken(): string | undefined {
  const token = /^#link=([0-9A-Za-z]{32})$/.exec(location.hash)?.[1];
  if (token) history.replaceState(null, "", location.pathname);
  return token;
}

function linkRefusal(): string | undefined {
  const said = LINK_REFUSALS[location.hash];
  if (said) history.replaceState(null, "", location.pathname);
  return said;
}

const PLATFORMS: Record<string, string> = {
  "win-x64": "Windows (x64)",
  "win-arm64": "Windows (Arm)",
  "darwin-arm64": "macOS (Apple silicon)",
  "darwin-x64": "macOS (Intel)",
  "linux-x64": "Linux (x64)",
  "linux-arm64": "Linux (Arm)",
};

/** A date as the service's UTC day (YYYY-MM-DD): the same for every reader, whatever their time zone. */
const day = (iso: string | null | undefined) => (iso ? iso.slice(0, 10) : "—");
const messageOf = (e: unknown) => (e instanceof Error ? e.message : String(e));

/** Text on the accent colour: black or white, whichever reads better (WCAG relative luminance). */
function inkOn(hex: string): string {
  const [r, g, b] = [1, 3, 5].map((i) => {
    const c = Number.parseInt(hex.slice(i, i + 2), 16) / 255;
    return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
  });
  return 0.2126 * r! + 0.7152 * g! + 0.0722 * b! > 0.179 ? "#111111" : "#ffffff";
}

/** Applies the vendor's branding: the title and the accent colour (set through the CSSOM, which the CSP allows). */
function brand(b: Branding): void {
  document.title = b.title;
  const root = document.documentElement.style;
  root.setProperty("--accent", b.accentColor);
  root.setProperty("--on-accent", inkOn(b.accentColor));
}

function useHash(): string {
  const [hash, setHash] = useState(location.hash);
  useEffect(() => {
    const on = () => setHash(location.hash);
    addEventListener("hashchange", on);
    return () => removeEventListener("hashchange", on);
  }, []);
  return hash;
}

/** Runs an action, keeping its failure (the service's message) and whether it is under way. */
function useAction() {
  const [error, setError] = useState<string>();
  const [busy, setBusy] = useState(false);
  const run = async (action: () => Promise<void>) => {
    setBusy(true);
    setError(undefined);
    try {
      await action();
    } catch (e) {
      setError(messageOf(e));
    } finally {
      setBusy(false);
    }
  };
  return { error, busy, run, setError };
}

/** Loads `load` now and again on `reload()`; its data or its failure. */
function useLoad<T>(load: () => Promise<T>, deps: unknown[]) {
  const [state, setState] = useState<{ data?: T; error?: string }>({});
  const [round, setRound] = useState(0);
  useEffect(() => {
    let live = true;
    load().then(
      (data) => live && setState({ data }),
      (e: unknown) => live && setState({ error: messageOf(e) }),
    );
    return () => {
      live = false;
    };
  }, [...deps, round]);
  return { ...state, reload: () => setRound((n) => n + 1) };
}

const Alert = ({ text }: { text: string | undefined }) =>
  text ? (
    <p class="alert" role="alert">
      {text}
    </p>
  ) : null;
const Note = ({ text }: { text: string | undefined }) =>
  text ? (
    <p class="note" role="status">
      {text}
    </p>
  ) : null;

// ---------------------------------------------------------------- sign-in

function SignIn({ reason, onSignedIn }: { reason: string | undefined; onSignedIn: (s: Session) => void }) {
  const key = useAction();
  const mail = useAction();
  const [sent, setSent] = useState<string>();
  return (
    <main class="narrow">
      <Alert text={reason} />
      <section class="card">
        <h2>Sign in with your user key</h2>
        <p>The user key of any of your licenses, as it came with your purchase.</p>
        <form
          noValidate
          onSubmit={(e) => {
            e.preventDefault();
            const userKey = String(new FormData(e.currentTarget).get("userKey")).trim();
            void key.run(async () => {
              const answer = must(await api.POST("/v1/portal/sign-in", { body: { userKey } }));
              onSignedIn({
                customer: answer.customer ?? null,
                signedInWith: "userKey",
                csrfToken: answer.csrfToken!,
              });
            });
          }}
        >
          <label for="user-key">User key</label>
          <input
            id="user-key"
            name="userKey"
            autoComplete="off"
            spellcheck={false}
            placeholder="XXXXX-XXXXX-XXXXX-XXXXX-XXXXX"
          />
          <button type="submit" disabled={key.busy}>
            Sign in
          </button>
        </form>
        <Alert text={key.error} />
      </section>
      <section class="card">
        <h2>Or get a sign-in link by email</h2>
        <p>The email address your licenses were sold to. The link works once.</p>
        <form
          noValidate
          onSubmit={(e) => {
            e.preventDefault();
            const email = String(new FormData(e.currentTarget).get("email")).trim();
            setSent(undefined);
            void mail.run(async () => {
              const answer = must(await api.POST("/v1/portal/sign-in", { body: { email } }));
              setSent(`Check your inbox. ${(answer as { message?: string }).message ?? ""}`.trim());
            });
          }}
        >
          <label for="email">Email</label>
          <input id="email" name="email" type="email" autoComplete="email" placeholder="name@example.com" />
          <button type="submit" disabled={mail.busy}>
            Email me a sign-in link
          </button>
        </form>
        <Alert text={mail.error} />
        <Note text={sent} />
      </section>
    </main>
  );
}

/** An emailed link's account, and the customer's confirmation before it signs in (nothing is spent until then). */
function ConfirmLink({
  token,
  onSignedIn,
  onDone,
}: {
  token: string;
  onSignedIn: (s: Session) => void;
  onDone: (why?: string) => void;
}) {
  const action = useAction();
  const link = useLoad(
    async () =>
      must(
        await api.GET("/v1/portal/sign-in/{token}", {
          params: { path: { token } },
          headers: { accept: "application/json" },
        }),
      ),
    [token],
  );
  useEffect(() => {
    if (link.error) onDone(link.error);
  }, [link.error]);
  if (!link.data)
    return (
      <main class="narrow">
        <p>Checking your sign-in link…</p>
      </main>
    );
  const customer = link.data.customer!; // never null here (the component is shared with sessions without a customer)
  return (
    <main class="narrow">
      <section class="card">
        <h2>Sign in with your emailed link</h2>
        <p>
          This link signs in to the account of <strong>{customer.name}</strong>
          {customer.email ? ` (${customer.email})` : ""}, customer {customer.code}.
        </p>
        <p>Continue only if this is your account. If you did not ask for a sign-in link, choose “Not me”.</p>
        <div class="links">
          <button
            type="button"
            disabled={action.busy}
            onClick={() =>
              void action.run(async () => {
                const answer = must(await api.POST("/v1/portal/sign-in", { body: { linkToken: token } }));
                onSignedIn({ customer: answer.customer ?? null, signedInWith: "email", csrfToken: answer.csrfToken! });
              })
            }
          >
            Continue as {customer.name}
          </button>
          <button type="button" class="quiet" onClick={() => onDone()}>
            Not me
          </button>
        </div>
        <Alert text={action.error} />
      </section>
    </main>
  );
}

// ---------------------------------------------------------------- licenses

function DeactivationCount({ d }: { d: Deactivations }) {
  if (d.limit === 0) return <p class="count">Machines may be deactivated without a monthly limit.</p>;
  const left = Math.max(0, d.limit - d.used);
  return left > 0 ? (
    <p class="count">
      {left} of {d.limit} deactivations left this month.
    </p>
  ) : (
    <p class="count limit">No deactivations left this month: more from {day(d.resetsAt)} (UTC).</p>
  );
}

function Clients({
  caption,
  rows,
  onDeactivate,
}: {
  caption: string;
  rows: Client[];
  onDeactivate?: (machineId: string) => void;
}) {
  return (
    <table>
      <caption>{caption}</caption>
      <thead>
        <tr>
          <th scope="col">Machine</th>
          <th scope="col">Name</th>
          <th scope="col">Since</th>
          <th scope="col">Last seen</th>
          {onDeactivate ? <th scope="col">Free it</th> : null}
        </tr>
      </thead>
      <tbody>
        {rows.map((m) => (
          <tr key={m.machineId}>
            <td>
              <code>{m.machineId}</code>
            </td>
            <td>{m.clientName ?? "—"}</td>
            <td>{day(m.since)}</td>
            <td>{day(m.lastSeenAt)}</td>
            {onDeactivate ? (
              <td>
                <button
                  type="button"
                  aria-label={`Deactivate ${m.machineId}`}
                  onClick={() => onDeactivate(m.machineId)}
                >
                  Deactivate
                </button>
              </td>
            ) : null}
          </tr>
        ))}
      </tbody>
    </table>
  );
}

function LicenseCard({ licenseId }: { licenseId: string }) {
  const detail = useLoad(
    async () => must(await api.GET("/v1/portal/licenses/{licenseId}", { params: { path: { licenseId } } })).license,
    [licenseId],
  );
  const action = useAction();
  const [notice, setNotice] = useState<string>();
  const l = detail.data;
  if (!l) return <section class="card">{detail.error ? <Alert text={detail.error} /> : <p>Loading…</p>}</section>;
  const deactivate = (machineId: string) => {
    if (!confirm(`Deactivate ${machineId}? The application on it stops working until it is activated again.`)) return;
    setNotice(undefined);
    void action.run(async () => {
      try {
        const done = must(
          await api.POST("/v1/portal/licenses/{licenseId}/machines/{machineId}/deactivate", {
            params: { path: { licenseId, machineId } },
          }),
        );
        setNotice(`${machineId} is deactivated: ${done.activeClientCount} machine(s) active now.`);
      } finally {
        detail.reload();
      }
    });
  };
  const name = `licensee-${l.licenseId}`;
  return (
    <section class="card" aria-labelledby={`title-${l.licenseId}`}>
      <div class="card-head">
        <h2 id={`title-${l.licenseId}`}>
          {l.product.name}
          {l.edition ? <span class="edition"> {l.edition}</span> : null}
        </h2>
        <span class={l.expired ? "badge expired" : "badge"}>{l.expired ? "Expired" : "Active"}</span>
      </div>
      <dl class="facts">
        <dt>User key</dt>
        <dd>
          <code>{l.userKey}</code>
        </dd>
        <dt>Licensed to</dt>
        <dd>{l.licenseeName ?? "—"}</dd>
        <dt>License</dt>
        <dd>
          {l.licenseType}, {l.licensingMode}
        </dd>
        <dt>Issued</dt>
        <dd>{day(l.issueDate)}</dd>
        <dt>Expires</dt>
        <dd>{l.expireDate ? day(l.expireDate) : "Never"}</dd>
        <dt>Support until</dt>
        <dd>{day(l.supportExpireDate ?? l.maintenanceUntil)}</dd>
        <dt>{l.licensingMode === "Floating" ? "Seats" : "Machines"}</dt>
        <dd>
          {l.activeClientCount} of {l.maxClients === 0 ? "unlimited" : l.maxClients} in use
        </dd>
      </dl>
      {l.renewalUrl || l.purchaseUrl ? (
        <p class="links">
          {l.renewalUrl ? (
            <a class="button" href={l.renewalUrl} rel="noopener noreferrer">
              Renew
            </a>
          ) : null}
          {l.purchaseUrl ? (
            <a href={l.purchaseUrl} rel="noopener noreferrer">
              Buy more
            </a>
          ) : null}
        </p>
      ) : null}
      <form
        class="inline"
        onSubmit={(e) => {
          e.preventDefault();
          const value = String(new FormData(e.currentTarget).get("name")).trim();
          setNotice(undefined);
          void action.run(async () => {
            const changed = must(
              await api.PUT("/v1/portal/licenses/{licenseId}/licensee", {
                params: { path: { licenseId } },
                body: { name: value },
              }),
            );
            setNotice(`The licensee name is now ${changed.license.licenseeName ?? value}.`);
            detail.reload();
          });
        }}
      >
        <label for={name}>Licensee name</label>
        <input id={name} name="name" defaultValue={l.licenseeName ?? ""} key={l.licenseeName ?? ""} />
        <button type="submit" disabled={action.busy}>
          Save name
        </button>
      </form>
      <Alert text={action.error} />
      <Note text={notice} />
      {l.licensingMode === "Floating" || l.seats.length > 0 ? (
        l.seats.length ? (
          <Clients caption="Floating seats in use now" rows={l.seats} />
        ) : (
          <p>No floating seat is in use now.</p>
        )
      ) : null}
      {l.licensingMode !== "Floating" || l.machines.length > 0 ? (
        <>
          {l.machines.length ? (
            <Clients caption="Activated machines" rows={l.machines} onDeactivate={deactivate} />
          ) : (
            <p>No machine is activated.</p>
          )}
          <DeactivationCount d={l.deactivations} />
        </>
      ) : null}
    </section>
  );
}

function Licenses() {
  const list = useLoad(async () => must(await api.GET("/v1/portal/licenses")).licenses as License[], []);
  if (list.error) return <Alert text={list.error} />;
  if (!list.data) return <p>Loading…</p>;
  if (!list.data.length) return <p>No license is registered to you.</p>;
  return (
    <>
      {list.data.map((l) => (
        <LicenseCard key={l.licenseId} licenseId={l.licenseId} />
      ))}
    </>
  );
}

// ---------------------------------------------------------------- downloads

function LicenseDownloads({ license }: { license: License }) {
  const licenseId = license.licenseId;
  const list = useLoad(
    async () =>
      must(await api.GET("/v1/portal/licenses/{licenseId}/downloads", { params: { path: { licenseId } } }))
        .downloads as Download[],
    [licenseId],
  );
  return (
    <section class="card">
      <h2>
        {license.product.name}
        {license.edition ? <span class="edition"> {license.edition}</span> : null}
      </h2>
      <Alert text={list.error} />
      {list.data ? (
        <table>
          <caption class="sr-only">Builds of {license.product.name}</caption>
          <thead>
            <tr>
              <th scope="col">Platform</th>
              <th scope="col">Version</th>
              <th scope="col">File</th>
              <th scope="col">SHA-256</th>
            </tr>
          </thead>
          <tbody>
            {list.data.map((d) => (
              <tr key={d.platform}>
                <td>{PLATFORMS[d.platform] ?? d.platform}</td>
                <td>{d.version ?? "—"}</td>
                {d.download ? (
                  <>
                    <td>
                      {/* The URL carries a one-time token: a fresh list after each download gives new ones. */}
                      <a
                        href={d.download.url}
                        download={d.download.fileName}
                        aria-label={`Download ${d.download.fileName} for ${PLATFORMS[d.platform] ?? d.platform}`}
                        onClick={() => setTimeout(list.reload, 1500)}
                      >
                        {d.download.fileName}
                      </a>{" "}
                      <span class="small">({(d.download.size / 1048576).toFixed(1)} MB)</span>
                    </td>
                    <td>
                      <code class="hash">{d.download.sha256}</code>
                    </td>
                  </>
                ) : (
                  <td colSpan={2} class="small">
                    {d.unavailable ? `${d.unavailable.charAt(0).toUpperCase()}${d.unavailable.slice(1)}.` : "No build."}
                  </td>
                )}
              </tr>
            ))}
          </tbody>
        </table>
      ) : list.error ? null : (
        <p>Loading…</p>
      )}
    </section>
  );
}

function Downloads() {
  const list = useLoad(async () => must(await api.GET("/v1/portal/licenses")).licenses as License[], []);
  if (list.error) return <Alert text={list.error} />;
  if (!list.data) return <p>Loading…</p>;
  if (!list.data.length) return <p>No license is registered to you, so no build can be downloaded.</p>;
  return (
    <>
      {list.data.map((l) => (
        <LicenseDownloads key={l.licenseId} license={l} />
      ))}
    </>
  );
}

// ---------------------------------------------------------------- orders

const money = (amount: number | null, currency: string | null) =>
  amount === null ? "—" : `${amount.toFixed(2)}${currency ? ` ${currency}` : ""}`;

function Orders() {
  const list = useLoad(async () => must(await api.GET("/v1/portal/orders")).orders as Order[], []);
  if (list.error) return <Alert text={list.error} />;
  if (!list.data) return <p>Loading…</p>;
  if (!list.data.length) return <p>No order is registered to you.</p>;
  return (
    <section class="card">
      <table>
        <caption>Your orders</caption>
        <thead>
          <tr>
            <th scope="col">Order</th>
            <th scope="col">Date</th>
            <th scope="col">Items</th>
            <th scope="col">Total</th>
            <th scope="col">Status</th>
            <th scope="col">Payment</th>
            <th scope="col">Invoice</th>
          </tr>
        </thead>
        <tbody>
          {list.data.map((o) => (
            <tr key={o.orderNumber}>
              <td>{o.orderNumber}</td>
              <td>{day(o.createdAt)}</td>
              <td>
                {o.lines.length
                  ? o.lines.map((line) => `${line.quantity} × ${line.description ?? line.product.name}`).join(", ")
                  : "—"}
              </td>
              <td>{money(o.total, o.currency)}</td>
              <td>{o.status}</td>
              <td>
                {o.paymentStatus}
                {o.paymentDate ? ` (${day(o.paymentDate)})` : ""}
              </td>
              <td>{o.invoiceNumber ?? "—"}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}

// ---------------------------------------------------------------- the page

const TABS = [
  { href: "#/licenses", label: "Licenses" },
  { href: "#/downloads", label: "Downloads" },
  { href: "#/orders", label: "Orders" },
];

function Screen({ hash }: { hash: string }) {
  if (hash === "#/downloads") return <Downloads />;
  if (hash === "#/orders") return <Orders />;
  return <Licenses />;
}

function App() {
  const [branding, setBranding] = useState<Branding>();
  // undefined: not known yet; null: signed out.
  const [session, setState] = useState<Session | null>();
  const [pending, setPending] = useState<string | undefined>(linkToken);
  const [reason, setReason] = useState<string | undefined>(linkRefusal);
  const hash = useHash();
  const start = (s: Session | null, why?: string) => {
    setSession(s ?? undefined);
    setState(s);
    setReason(why);
  };
  useEffect(() => {
    whenEnded(() => start(null, "Your session ended: sign in again."));
    api.GET("/v1/portal/branding").then(
      ({ data }) => {
        if (!data) return;
        brand(data);
        setBranding(data);
      },
      () => undefined,
    );
    api.GET("/v1/portal/me").then(
      ({ data }) =>
        data
          ? start({ customer: data.customer, signedInWith: data.signedInWith, csrfToken: data.csrfToken }, reason)
          : start(null, reason),
      (e: unknown) => start(null, messageOf(e)),
    );
  }, []);
  const signOut = async () => {
    try {
      must(await api.POST("/v1/portal/sign-out"));
      start(null, "You signed out.");
    } catch (e) {
      if (!(e instanceof Refusal && e.status === 401)) setReason(messageOf(e));
    }
  };
  const who = session?.customer ? session.customer.name || session.customer.email : undefined;
  const tab = TABS.some((t) => t.href === hash) ? hash : "#/licenses";
  return (
    <>
      <header class="top">
        <div class="brand">
          {branding?.logoUrl ? <img src="/portal/logo" alt="" /> : null}
          <h1>{branding?.title ?? "Customer portal"}</h1>
        </div>
        {session ? (
          <div class="who">
            {who ? <span>{who}</span> : null}
            <button type="button" class="quiet" onClick={() => void signOut()}>
              Sign out
            </button>
          </div>
        ) : null}
      </header>
      {session === undefined ? (
        <main class="narrow">
          <p>Loading…</p>
        </main>
      ) : pending ? (
        <ConfirmLink
          token={pending}
          onSignedIn={(s) => {
            setPending(undefined);
            start(s);
            location.hash = "#/licenses";
          }}
          onDone={(why) => {
            setPending(undefined);
            if (why) setReason(why);
          }}
        />
      ) : session === null ? (
        <SignIn
          reason={reason}
          onSignedIn={(s) => {
            start(s);
            location.hash = "#/licenses";
          }}
        />
      ) : (
        <>
          <nav aria-label="Portal">
            {TABS.map((t) => (
              <a key={t.href} href={t.href} aria-current={t.href === tab ? "page" : undefined}>
                {t.label}
              </a>
            ))}
          </nav>
          <main>
            <Alert text={reason} />
            <Screen key={tab} hash={tab} />
          </main>
        </>
      )}
    </>
  );
}

render(<App />, document.getElementById("app")!);
