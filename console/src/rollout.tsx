/**
 * Release control in the console (CONTRACT sections 8 and 13): a release's adoption chart (installs offered,
 * downloaded and running it, per day, from GET .../adoption) and its health chart (health.tsx) with the rollout
 * controls beside them (percentage, schedule, halt with its reason, resume, rollback, critical) and who halted a halted
 * release and why (its haltReason and haltNote), and the overview's adoption and health of each product's newest
 * release.
 */
import { useEffect, useState } from "preact/hooks";
import { api, call, must } from "./api/client";
import type { components } from "./api/schema";
import { HealthChart, HealthLine } from "./health";
import { ErrorBox, GroupedBarChart, Notice, cell, listOf, useAction } from "./ui";
import { formatDate, formatDay, haltedBy } from "./words";

type Row = Record<string, unknown>;
type Adoption = components["schemas"]["ReleaseAdoption"];

/** The chart's span: the last CHART_DAYS UTC days, today included. */
const CHART_DAYS = 14;
const SERIES = [
  { name: "Offered", color: "#2f5fb3" },
  { name: "Downloaded", color: "#5b2f8a" },
  { name: "Running", color: "#1f7a4d" },
];

function lastDays(n: number): string[] {
  const days: string[] = [];
  for (let i = n - 1; i >= 0; i--) days.push(new Date(Date.now() - i * 86_400_000).toISOString().slice(0, 10));
  return days;
}

async function adoptionOf(productId: number, releaseId: number, from?: string): Promise<Adoption> {
  const answer = must(
    await api.GET("/v1/products/{productId}/releases/{releaseId}/adoption", {
      params: { path: { productId, releaseId }, query: from ? { from } : {} },
    }),
  );
  return answer.data;
}

/** Loads `load` again whenever `tick` changes; the data or the API's error. */
function useLoaded<T>(load: () => Promise<T>, deps: unknown[]): { data?: T; error?: string } {
  const [state, setState] = useState<{ data?: T; error?: string }>({});
  useEffect(() => {
    let live = true;
    load().then(
      (data) => live && setState({ data }),
      (e: Error) => live && setState({ error: e.message }),
    );
    return () => {
      live = false;
    };
  }, deps);
  return state;
}

/** Distinct installs per stage, as one line. */
function Totals({ totals }: { totals: Adoption["totals"] }) {
  return (
    <p class="totals">
      <span>
        Offered <strong>{totals.offered}</strong>
      </span>
      <span>
        Downloaded <strong>{totals.downloaded}</strong>
      </span>
      <span>
        Running <strong>{totals.running}</strong>
      </span>
    </p>
  );
}

/** A release's adoption per day (all platforms together) over the last CHART_DAYS days, with its totals. */
export function AdoptionChart({
  productId,
  releaseId,
  stamp,
}: {
  productId: number;
  releaseId: number;
  stamp: string;
}) {
  const days = lastDays(CHART_DAYS);
  const { data, error } = useLoaded(() => adoptionOf(productId, releaseId, days[0]), [productId, releaseId, stamp]);
  if (error) return <ErrorBox error={error} />;
  if (!data) return <p aria-busy="true">Loading adoption…</p>;
  const byDay = new Map(days.map((d) => [d, [0, 0, 0]]));
  for (const row of data.days) {
    const values = byDay.get(row.day);
    if (!values) continue;
    values[0]! += row.offered;
    values[1]! += row.downloaded;
    values[2]! += row.running;
  }
  const platforms = [...new Set(data.days.map((d) => d.platform ?? "not named"))].sort();
  return (
    <div class="adoption">
      <GroupedBarChart
        title={`Installs per day (last ${CHART_DAYS} days)`}
        labelHeader="Day"
        series={SERIES}
        data={days.map((d) => ({ label: formatDay(d), values: byDay.get(d)! }))}
      />
      <Totals totals={data.totals} />
      {platforms.length ? <p class="hint">Platforms: {platforms.join(", ")}</p> : null}
    </div>
  );
}

/** The release's rollout as words: halted, a schedule, or a percentage. */
function rolloutWords(r: Row, now = Date.now()): string {
  if (r["halted"]) {
    return `Halted ${haltedBy(r["haltReason"])}${r["haltedAt"] ? ` at ${formatDate(String(r["haltedAt"]))}` : ""}${r["rollback"] ? ", rolling back" : ""}`;
  }
  const steps = (Array.isArray(r["rolloutSchedule"]) ? r["rolloutSchedule"] : []) as Step[];
  const passed = steps.filter((s) => Date.parse(s.at) <= now).at(-1);
  const percentage = passed?.percentage ?? (r["stagingPercentage"] as number | undefined) ?? 100;
  return `${percentage} %${r["critical"] ? ", critical" : ""}`;
}

interface Step {
  percentage: number;
  at: string;
}

/**
 * Who halted a halted release and why, in words, as a banner: "Halted by its health gate: <what the gate saw>",
 * "Halted by reports: …", "Halted by hand: <the reason given to the halt>".
 */
function HaltNote({ release: r }: { release: Row }) {
  if (!r["halted"]) return null;
  const note = typeof r["haltNote"] === "string" && r["haltNote"] ? r["haltNote"] : undefined;
  const by = `Halted ${haltedBy(r["haltReason"])}`;
  return (
    <p class="halt-note" data-testid="halt-banner">
      <strong>{note ? `${by}:` : `${by}.`}</strong> {note ? <q data-testid="halt-note">{note}</q> : null}
    </p>
  );
}

/**
 * The rollout controls of a release: percentage, schedule (steps added and removed), halt and resume, rollback while
 * halted, critical. Each change is one API call; `changed` reloads the release.
 */
export function RolloutControls({
  productId,
  releaseId,
  release: r,
  changed,
}: {
  productId: number;
  releaseId: number;
  release: Row;
  changed: () => void;
}) {
  const base = `/v1/products/${productId}/releases`;
  const action = useAction();
  const [notice, setNotice] = useState<string>();
  const steps = (Array.isArray(r["rolloutSchedule"]) ? r["rolloutSchedule"] : []) as Step[];
  const run = (said: string, work: () => Promise<unknown>) =>
    action.run(async () => {
      await work();
      setNotice(said);
      changed();
    });
  const put = (values: Row, said: string) =>
    run(said, () => call("PUT", base, { body: { productRelease: { ...values, id: releaseId } } }));
  const halted = r["halted"] === true;
  return (
    <section class="card rollout-controls" aria-label="Rollout">
      <h3>Rollout</h3>
      <HaltNote release={r} />
      <p>
        Now: <strong data-testid="rollout-state">{rolloutWords(r)}</strong>
      </p>
      <form
        class="inline"
        onSubmit={(e) => {
          e.preventDefault();
          const v = Number(new FormData(e.currentTarget).get("rollout"));
          void put({ stagingPercentage: v }, `Rollout set to ${v} %`);
        }}
      >
        <label for="rollout">Rollout %</label>
        <input
          id="rollout"
          name="rollout"
          type="number"
          min={0}
          max={100}
          required
          placeholder={String(r["stagingPercentage"] ?? 100)}
        />
        <button type="submit" disabled={action.busy}>
          Set rollout
        </button>
      </form>

      <h4>Schedule</h4>
      {steps.length ? (
        <ul class="steps" aria-label="Rollout schedule">
          {steps.map((s, i) => (
            <li>
              {s.percentage} % from {formatDate(s.at)}{" "}
              <button
                type="button"
                aria-label={`Remove the step ${s.percentage} % from ${formatDate(s.at)}`}
                disabled={action.busy}
                onClick={() =>
                  void put(
                    { rolloutSchedule: steps.length > 1 ? steps.filter((_, j) => j !== i) : null },
                    "Step removed",
                  )
                }
              >
                Remove
              </button>
            </li>
          ))}
        </ul>
      ) : (
        <p class="hint">No scheduled steps: the percentage above holds.</p>
      )}
      <form
        class="inline"
        onSubmit={(e) => {
          e.preventDefault();
          const data = new FormData(e.currentTarget);
          const at = new Date(String(data.get("at")));
          if (Number.isNaN(at.getTime())) return action.setError("Choose when the step starts");
          const step = { percentage: Number(data.get("percentage")), at: at.toISOString() };
          const next = [...steps, step].sort((a, b) => Date.parse(a.at) - Date.parse(b.at));
          void put({ rolloutSchedule: next }, `Step added: ${step.percentage} % from ${formatDate(step.at)}`);
        }}
      >
        <label for="step-percentage">Step %</label>
        <input id="step-percentage" name="percentage" type="number" min={0} max={100} required />
        <label for="step-at">from</label>
        <input id="step-at" name="at" type="datetime-local" required />
        <button type="submit" disabled={action.busy}>
          Add step
        </button>
      </form>

      <div class="actions">
        {halted ? (
          <button
            type="button"
            class="primary"
            disabled={action.busy}
            onClick={() => void run("The release is resumed", () => call("POST", `${base}/${releaseId}/resume`))}
          >
            Resume
          </button>
        ) : (
          <form
            class="inline"
            onSubmit={(e) => {
              e.preventDefault();
              const reason = String(new FormData(e.currentTarget).get("reason") ?? "").trim();
              void run("The release is halted: callers get the previous release", () =>
                call("POST", `${base}/${releaseId}/halt`, { body: reason ? { reason } : {} }),
              );
            }}
          >
            <label for="halt-reason">Reason</label>
            <input
              id="halt-reason"
              name="reason"
              maxLength={256}
              placeholder="Why, in words (kept until resumed)"
              disabled={!r["public"]}
            />
            <button
              type="submit"
              class="danger"
              disabled={action.busy || !r["public"]}
              title={r["public"] ? undefined : "Only a published release can be halted"}
            >
              Halt
            </button>
          </form>
        )}
        <label class="check">
          <input
            type="checkbox"
            checked={r["rollback"] === true}
            disabled={action.busy || !halted}
            onChange={(e) =>
              void put(
                { rollback: e.currentTarget.checked },
                e.currentTarget.checked ? "Rollback on: installs running it get the previous release" : "Rollback off",
              )
            }
          />{" "}
          Roll back installs running it (while halted)
        </label>
        <label class="check">
          <input
            type="checkbox"
            checked={r["critical"] === true}
            disabled={action.busy}
            onChange={(e) =>
              void put(
                { critical: e.currentTarget.checked },
                e.currentTarget.checked ? "Marked critical: older installs must update" : "No longer critical",
              )
            }
          />{" "}
          Critical
        </label>
      </div>
      <ErrorBox error={action.error} />
      <Notice text={notice} />
    </section>
  );
}

/**
 * The release page's rollout section: the adoption chart, and beside it the rollout controls (those for writers only)
 * with the health chart under them.
 */
export function ReleaseRollout({
  productId,
  releaseId,
  release,
  write,
  changed,
}: {
  productId: number;
  releaseId: number;
  release: Row;
  write: boolean;
  changed: () => void;
}) {
  return (
    <div class="rollout">
      <section class="card" aria-label="Adoption">
        <h3>Adoption</h3>
        <AdoptionChart productId={productId} releaseId={releaseId} stamp={String(release["updatedAt"] ?? "")} />
      </section>
      <div class="rollout-side">
        {write ? (
          <RolloutControls productId={productId} releaseId={releaseId} release={release} changed={changed} />
        ) : (
          <section class="card" aria-label="Rollout">
            <h3>Rollout</h3>
            <HaltNote release={release} />
            <p>{rolloutWords(release)}</p>
          </section>
        )}
        <section class="card" aria-label="Health">
          <h3>Health</h3>
          <HealthChart
            productId={productId}
            releaseId={releaseId}
            version={cell(release["version"])}
            stamp={String(release["updatedAt"] ?? "")}
          />
        </section>
      </div>
    </div>
  );
}

/** At most this many products on the overview's adoption chart (the first ones by id). */
const OVERVIEW_PRODUCTS = 8;

/**
 * The overview's chart: each product's newest published release, its installs over the last 30 days; under it, the
 * health sentence of each of those releases with sessions.
 */
export function AdoptionOverview() {
  const { data, error } = useLoaded(async () => {
    const products = listOf(await call("GET", "/v1/products", { query: { take: OVERVIEW_PRODUCTS, sort: "id" } })).rows;
    const newest = await Promise.all(
      products.map(async (p) => {
        const r = listOf(
          await call("GET", `/v1/products/${String(p["id"])}/releases`, {
            query: { filter: "public == true", sort: "-id", take: 1 },
          }),
        ).rows[0];
        return r ? { product: p, release: r } : undefined;
      }),
    );
    return Promise.all(
      newest
        .filter((n): n is { product: Row; release: Row } => n !== undefined)
        .map(async ({ product, release }) => ({
          productId: Number(product["id"]),
          releaseId: Number(release["id"]),
          version: cell(release["version"]),
          label: `${cell(product["code"])} ${cell(release["version"])}`,
          totals: (await adoptionOf(Number(product["id"]), Number(release["id"]))).totals,
        })),
    );
  }, []);
  if (error) return <ErrorBox error={error} />;
  if (!data) return <p aria-busy="true">Loading adoption…</p>;
  return (
    <div class="chart-with-health">
      <GroupedBarChart
        title="Adoption of each product's newest release (installs, last 30 days)"
        labelHeader="Release"
        series={SERIES}
        data={data.map((d) => ({ label: d.label, values: [d.totals.offered, d.totals.downloaded, d.totals.running] }))}
      />
      <div class="health-lines" data-testid="newest-health">
        {data.map((d) => (
          <HealthLine key={d.label} productId={d.productId} releaseId={d.releaseId} version={d.label} />
        ))}
      </div>
    </div>
  );
}
