/** The admin console: sign-in, the navigation the user's roles allow, and the pages (hash routes under /console/). */
import { render } from "preact";
import { useEffect, useState } from "preact/hooks";
import { type Session, api, errorText, loadSession, setSession, whenExpired } from "./api/client";
import {
  ApiKeys,
  Audit,
  License,
  Licenses,
  Log,
  OrderLines,
  Product,
  Products,
  Release,
  Settings,
  Webhook,
  Webhooks,
} from "./pages";
import { ResourcePage, resources } from "./resources";
import { Diagnostics, Overview } from "./overview";
import { Outbox } from "./outbox";
import { CommerceMappings, MAPPING_ROLES } from "./commerce";
import { PortalActivity } from "./portal-activity";
import { Import } from "./imports";
import "./style.css";
import { ErrorBox } from "./ui";
import type { Role } from "./words";

// Roles are the document's RoleName values: a role renamed or removed in the service fails `tsc -p console` here.
const ALL: Role[] = ["Administrator", "LicenseManager", "Sales"];
const MANAGERS: Role[] = ["Administrator", "LicenseManager"];
const ADMIN: Role[] = ["Administrator"];

/** Navigation: each entry names the roles the API lets use it, so nobody sees a page that would only answer 403. */
const NAV: { href: string; label: string; roles: Role[] }[] = [
  { href: "#/", label: "Overview", roles: ALL },
  { href: "#/products", label: "Products & releases", roles: ALL },
  { href: "#/customers", label: "Customers", roles: ALL },
  { href: "#/contacts", label: "Contacts", roles: ALL },
  { href: "#/orders", label: "Orders", roles: ALL },
  { href: "#/templates", label: "License templates", roles: ALL },
  { href: "#/licenses", label: "Licenses", roles: ALL },
  { href: "#/commerce-mappings", label: "Commerce mappings", roles: MAPPING_ROLES as Role[] },
  { href: "#/webhooks", label: "Webhooks", roles: MANAGERS },
  { href: "#/users", label: "Users", roles: ADMIN },
  { href: "#/api-keys", label: "API keys", roles: ADMIN },
  { href: "#/settings", label: "Settings", roles: ADMIN },
  // "Import", not "Import licenses": a link named "Licenses" stays one (the browser tests find links by part of a name).
  { href: "#/import", label: "Import", roles: ADMIN },
  { href: "#/outbox", label: "Outbox", roles: ADMIN },
  { href: "#/log", label: "Service log", roles: ALL },
  { href: "#/audit", label: "Audit trail", roles: ADMIN },
  { href: "#/diagnostics", label: "Diagnostics", roles: ALL },
];

function useHash(): string {
  const [hash, setHash] = useState(location.hash || "#/");
  useEffect(() => {
    const on = () => setHash(location.hash || "#/");
    addEventListener("hashchange", on);
    return () => removeEventListener("hashchange", on);
  }, []);
  return hash;
}

function SignIn({ onSignedIn, reason }: { onSignedIn: (s: Session) => void; reason?: string }) {
  const [error, setError] = useState<string | undefined>(reason);
  const [busy, setBusy] = useState(false);
  return (
    <main class="signin">
      <form
        class="card form"
        aria-label="Sign in"
        onSubmit={async (e) => {
          e.preventDefault();
          const data = new FormData(e.currentTarget);
          setBusy(true);
          const res = await api.POST("/v1/auth/console/login", {
            body: { username: String(data.get("username")), password: String(data.get("password")) },
          });
          setBusy(false);
          if (res.data)
            onSignedIn({
              user: res.data.user,
              roles: res.data.roles,
              csrfToken: res.data.csrfToken,
              expiresAt: res.data.expiresAt,
            });
          else setError(errorText(res.error, res.response));
        }}
      >
        <h1>Licensing console</h1>
        <div class="field">
          <label for="username">User name</label>
          <input id="username" name="username" autocomplete="username" required autofocus />
        </div>
        <div class="field">
          <label for="password">Password</label>
          <input id="password" name="password" type="password" autocomplete="current-password" required />
        </div>
        <ErrorBox error={error} />
        <button type="submit" class="primary" disabled={busy}>
          Sign in
        </button>
      </form>
    </main>
  );
}

function Page({ hash, roles }: { hash: string; roles: string[] }) {
  const parts = hash.replace(/^#\/?/, "").split("/").filter(Boolean).map(decodeURIComponent);
  const allowed = (href: string) => NAV.find((n) => n.href === href)?.roles.some((r) => roles.includes(r)) ?? true;
  const top = `#/${parts[0] ?? ""}`;
  if (!allowed(top)) return <ErrorBox error="Your roles do not allow this page." />;
  switch (parts[0]) {
    case undefined:
      return <Overview roles={roles} />;
    case "products":
      if (parts[1] && parts[2] === "releases" && parts[3])
        return <Release productId={Number(parts[1])} releaseId={Number(parts[3])} roles={roles} />;
      return parts[1] ? <Product id={Number(parts[1])} roles={roles} /> : <Products roles={roles} />;
    case "licenses":
      return parts[1] ? <License id={parts[1]} roles={roles} /> : <Licenses roles={roles} />;
    case "webhooks":
      return parts[1] ? <Webhook id={Number(parts[1])} /> : <Webhooks />;
    case "orders":
      return (
        <ResourcePage
          def={resources.orders!}
          roles={roles}
          extra={(row) => <a href={`#/order-lines/${String(row["id"])}`}>Order lines</a>}
        />
      );
    case "customers":
      return parts[1] && parts[2] === "portal" ? (
        <PortalActivity customerId={Number(parts[1])} />
      ) : (
        <ResourcePage
          def={resources.customers!}
          roles={roles}
          extra={(row) => <a href={`#/customers/${String(row["id"])}/portal`}>Portal activity</a>}
        />
      );
    case "order-lines":
      return <OrderLines orderId={Number(parts[1])} />;
    case "commerce-mappings":
      return <CommerceMappings roles={roles} />;
    case "api-keys":
      return <ApiKeys />;
    case "settings":
      return <Settings />;
    case "import":
      return <Import />;
    case "log":
      return <Log />;
    case "outbox":
      return <Outbox />;
    case "diagnostics":
      return <Diagnostics />;
    case "audit":
      return <Audit />;
    default: {
      const def = resources[parts[0]];
      return def ? <ResourcePage def={def} roles={roles} /> : <ErrorBox error={`No console page at ${hash}`} />;
    }
  }
}

function App() {
  const [session, setState] = useState<Session | undefined>(loadSession());
  const [reason, setReason] = useState<string>();
  const hash = useHash();
  const end = (why?: string) => {
    setSession(undefined);
    setState(undefined);
    setReason(why);
  };
  useEffect(() => whenExpired(() => end("Your session ended. Sign in again.")), []);
  // After a page change, keyboard and screen-reader users start at the new page's content.
  const [first, setFirst] = useState(true);
  useEffect(() => {
    if (first) setFirst(false);
    else document.getElementById("content")?.focus();
  }, [hash]);
  if (!session)
    return (
      <SignIn
        reason={reason}
        onSignedIn={(s) => {
          setSession(s);
          setState(s);
          setReason(undefined);
        }}
      />
    );
  const roles = session.roles;
  return (
    <div class="shell">
      {/* A button, not a link: the console's routes live in the URL's hash, which "#content" would replace. */}
      <button class="skip" type="button" onClick={() => document.getElementById("content")?.focus()}>
        Skip to content
      </button>
      <header>
        <strong>Licensing console</strong>
        <span class="who">
          {session.user} ({roles.join(", ")}){" "}
          <button
            type="button"
            onClick={async () => {
              await api.POST("/v1/auth/console/logout");
              end("You signed out.");
            }}
          >
            Sign out
          </button>
        </span>
      </header>
      <nav aria-label="Console">
        <ul>
          {NAV.filter((n) => n.roles.some((r) => roles.includes(r))).map((n) => (
            <li>
              <a
                href={n.href}
                aria-current={
                  hash === n.href || (n.href !== "#/" && hash.startsWith(`${n.href}/`)) ? "page" : undefined
                }
              >
                {n.label}
              </a>
            </li>
          ))}
        </ul>
      </nav>
      <main id="content" tabIndex={-1}>
        {/* Keyed by the address: another page starts afresh (a list's filter is not carried to the next list). */}
        <Page key={hash} hash={hash} roles={roles} />
      </main>
    </div>
  );
}

render(<App />, document.getElementById("app")!);
