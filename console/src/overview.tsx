/**
 * The overview (issue 37, "a console for the business"): what an owner asks first, from one request
 * (`GET /v1/overview`): licenses active and expiring, seats in use, revenue and refunds per month and currency,
 * releases rolling out or halted (who halted them, and the health of the first few: health.tsx, one request each),
 * webhook deliveries given up; the activity charts below. What is running and the row counts are the Diagnostics
 * page's (`GET /v1/info`).
 */
import type { ComponentChildren } from "preact";
import { api, call, must } from "./api/client";
import type { components } from "./api/client";
import { Activity } from "./activity";
import { HealthLine } from "./health";
import { useLoad } from "./load";
import { ErrorBox, cell } from "./ui";
import { formatDate, haltedBy, labelOf } from "./words";

type Figures = components["schemas"]["Overview"];
type Month = components["schemas"]["OverviewMonthRevenue"];

/** An amount in its currency, in the viewer's locale; a code that is no ISO currency is written after the number. */
export function money(amount: number, currency: string | null | undefined): string {
  if (currency && /^[A-Za-z]{3}$/.test(currency))
    try {
      return new Intl.NumberFormat(undefined, { style: "currency", currency: currency.toUpperCase() }).format(amount);
    } catch {
      // not a currency the browser knows: fall through
    }
  const number = new Intl.NumberFormat(undefined, { maximumFractionDigits: 2 }).format(amount);
  return currency ? `${number} ${currency}` : number;
}

/** `yyyy-MM` in words in the viewer's locale: "November 2026". */
function monthName(month: string): string {
  const date = new Date(`${month}-01T00:00:00Z`);
  return Number.isNaN(date.getTime())
    ? month
    : new Intl.DateTimeFormat(undefined, { month: "long", year: "numeric", timeZone: "UTC" }).format(date);
}

function Tile({ label, value, detail }: { label: string; value: ComponentChildren; detail?: string }) {
  return (
    <div class="tile card">
      <span class="n">{value}</span>
      <span class="label">{label}</span>
      {detail ? <small>{detail}</small> : null}
    </div>
  );
}

/** This month's and last month's net per currency, and every month of the year in a table. */
function Revenue({ revenue }: { revenue: Figures["revenue"] }) {
  const months = [...new Set(revenue.periods.map((p) => p.month))];
  const row = (p: Month) => (
    <tr>
      <th scope="row" class="month">
        {monthName(p.month)}
      </th>
      <td>{p.currency ?? "(none)"}</td>
      <td class="num">
        {money(p.paid, p.currency)} <small>({p.paidOrders})</small>
      </td>
      <td class="num">
        {money(p.refunded, p.currency)} <small>({p.refundedOrders})</small>
      </td>
      <td class="num">{money(p.paid - p.refunded, p.currency)}</td>
    </tr>
  );
  return (
    <section class="card wide" aria-label="Revenue and refunds">
      <h3>Revenue and refunds (last {revenue.months} months)</h3>
      {months.length === 0 ? (
        <p class="empty">No paid order since {formatDate(revenue.since)}.</p>
      ) : (
        <div class="table-wrap">
          <table>
            <caption class="sr-only">Revenue and refunds per month and currency</caption>
            <thead>
              <tr>
                <th scope="col">Month</th>
                <th scope="col">Currency</th>
                <th scope="col">Paid (orders)</th>
                <th scope="col">Refunded (orders)</th>
                <th scope="col">Net</th>
              </tr>
            </thead>
            <tbody>{revenue.periods.map(row)}</tbody>
          </table>
        </div>
      )}
      <p class="hint">
        Paid: orders paid in the month (their payment date), refunded ones included. Refunded: orders refunded in the
        month.
      </p>
    </section>
  );
}

function Expiring({ licenses }: { licenses: Figures["licenses"] }) {
  return (
    <section class="card" aria-label="Licenses expiring soon">
      <h3>Licenses expiring in the next {licenses.expiringWithinDays} days</h3>
      {licenses.expiring.length === 0 ? (
        <p class="empty">None.</p>
      ) : (
        <table>
          <caption class="sr-only">Licenses expiring soon</caption>
          <thead>
            <tr>
              <th scope="col">License</th>
              <th scope="col">Licensee</th>
              <th scope="col">Product</th>
              <th scope="col">Expires</th>
            </tr>
          </thead>
          <tbody>
            {licenses.expiring.map((l) => (
              <tr>
                <td>
                  <a href={`#/licenses/${encodeURIComponent(l.licenseId)}`}>{l.licenseId}</a>
                </td>
                <td>{l.licenseeName ?? ""}</td>
                <td>{l.productName}</td>
                <td>{formatDate(l.expireDate)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {licenses.expiringSoon > licenses.expiring.length ? (
        <p class="hint">
          The {licenses.expiring.length} soonest of {licenses.expiringSoon}.
        </p>
      ) : null}
    </section>
  );
}

const STATE_WORDS = { staged: "Staged", scheduled: "Scheduled", halted: "Halted" } as const;
/** The health sentence is read (one request each) for this many releases of the list, the first ones. */
const HEALTH_LISTED = 5;

function Releases({ releases }: { releases: Figures["releases"] }) {
  return (
    <section class="card" aria-label="Releases rolling out">
      <h3>Releases rolling out</h3>
      {releases.list.length === 0 ? (
        <p class="empty">Every published release reaches everyone it is for.</p>
      ) : (
        <table>
          <caption class="sr-only">Releases staged, scheduled or halted</caption>
          <thead>
            <tr>
              <th scope="col">Release</th>
              <th scope="col">State</th>
              <th scope="col">Now</th>
              <th scope="col">Next or why</th>
            </tr>
          </thead>
          <tbody>
            {releases.list.map((r, i) => (
              <tr>
                <td>
                  <a href={`#/products/${r.productId}/releases/${r.releaseId}`}>
                    {r.productName} {r.version}
                  </a>{" "}
                  <small>{r.channel}</small>
                  {i < HEALTH_LISTED ? (
                    <HealthLine productId={r.productId} releaseId={r.releaseId} version={r.version} />
                  ) : null}
                </td>
                <td>
                  <span class={`badge ${r.state}`}>{STATE_WORDS[r.state]}</span>
                  {r.state === "halted" ? <small class="halted-by"> {haltedBy(r.haltReason)}</small> : null}
                </td>
                <td class="num">{r.state === "halted" ? "—" : `${r.percentage} %`}</td>
                <td>
                  {r.state === "halted"
                    ? [r.haltNote ?? r.haltReason ?? "", r.haltedAt ? ` (since ${formatDate(r.haltedAt)})` : ""].join(
                        "",
                      )
                    : r.nextStep
                      ? `${r.nextStep.percentage} % from ${formatDate(r.nextStep.at)}`
                      : ""}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}

function Webhooks({ webhooks }: { webhooks: NonNullable<Figures["webhooks"]> }) {
  return (
    <section class="card" aria-label="Failed webhook deliveries">
      <h3>Failed webhook deliveries</h3>
      <p>
        {webhooks.deadLetters} given up, {webhooks.failing} failing and retried.
      </p>
      {webhooks.recentDeadLetters.length > 0 ? (
        <table>
          <caption class="sr-only">The newest deliveries given up</caption>
          <thead>
            <tr>
              <th scope="col">Subscription</th>
              <th scope="col">Event</th>
              <th scope="col">Last answer</th>
              <th scope="col">Given up</th>
            </tr>
          </thead>
          <tbody>
            {webhooks.recentDeadLetters.map((d) => (
              <tr>
                <td>
                  <a href={`#/webhooks/${d.subscriptionId}`}>{d.subscriptionName}</a>
                </td>
                <td>
                  {d.eventType} <small>{d.eventId}</small>
                </td>
                <td>{d.statusCode ? `HTTP ${d.statusCode}` : "no answer"}</td>
                <td class="date">{formatDate(d.deadLetteredAt)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : null}
    </section>
  );
}

export function Overview({ roles }: { roles: string[] }) {
  const { data, error } = useLoad(async () => must(await api.GET("/v1/overview")), []);
  return (
    <>
      <h2>Overview</h2>
      <ErrorBox error={error} />
      {data ? (
        <>
          <section class="tiles" aria-label="Key figures">
            <Tile label="Active licenses" value={data.licenses.active} />
            <Tile
              label={`Expiring in ${data.licenses.expiringWithinDays} days`}
              value={data.licenses.expiringSoon}
              detail={`${data.licenses.expired} expired, ${data.licenses.revoked} revoked`}
            />
            <Tile
              label="Floating seats in use"
              value={`${data.seats.floatingInUse} of ${data.seats.floatingAllowed}`}
              detail={`${data.seats.activatedMachines} machines activated`}
            />
            <Tile
              label="Releases rolling out"
              value={data.releases.rollingOut}
              detail={`${data.releases.halted} halted`}
            />
            {data.webhooks ? (
              <Tile
                label="Webhook deliveries given up"
                value={data.webhooks.deadLetters}
                detail={`${data.webhooks.failing} failing`}
              />
            ) : null}
          </section>
          <div class="overview-grid">
            <Revenue revenue={data.revenue} />
            <Expiring licenses={data.licenses} />
            <Releases releases={data.releases} />
            {data.webhooks ? <Webhooks webhooks={data.webhooks} /> : null}
          </div>
          <Activity roles={roles} />
        </>
      ) : error ? null : (
        <p aria-busy="true">Loading…</p>
      )}
    </>
  );
}

/** Diagnostics: what is running (version, build, runtime, switches) and how many rows each table holds. */
export function Diagnostics() {
  const { data, error } = useLoad(() => call("GET", "/v1/info"), []);
  if (error) return <ErrorBox error={error} />;
  if (!data) return <p aria-busy="true">Loading…</p>;
  const counts = (data["database"] ?? {}) as Record<string, number>;
  const features = (data["features"] ?? {}) as Record<string, unknown>;
  return (
    <>
      <h2>Diagnostics</h2>
      <dl class="facts">
        {["version", "buildDate", "versionId", "runtime", "serverTime"].map((k) => (
          <>
            <dt>{labelOf(k)}</dt>
            <dd>{cell(data[k])}</dd>
          </>
        ))}
      </dl>
      <section class="card" aria-label="Feature switches">
        <h3>Feature switches</h3>
        <dl class="facts">
          {Object.entries(features).map(([k, v]) => (
            <>
              <dt>{labelOf(k)}</dt>
              <dd>{cell(v)}</dd>
            </>
          ))}
        </dl>
      </section>
      <section class="counts" aria-label="Counts">
        {Object.entries(counts).map(([name, n]) => (
          <div class="count card">
            <span class="n">{n}</span>
            <span>{labelOf(name)}</span>
          </div>
        ))}
      </section>
    </>
  );
}
