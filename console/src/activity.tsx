/**
 * Activity over time, the overview's lower half: charts the console computes from the lists it may read (license
 * tokens, traces, webhook delivery histories) and each product's newest release's adoption (rollout.tsx).
 */
import { BarChart, ErrorBox, GroupedBarChart } from "./ui";
import { AdoptionOverview } from "./rollout";
import { all, allPages, dayKey, lastDays, useLoad } from "./load";
import { formatDay } from "./words";

type Row = Record<string, unknown>;
const managers = ["Administrator", "LicenseManager"];
const can = (roles: string[], allowed: string[]) => roles.some((r) => allowed.includes(r));

/** Update adoption looks this far back, over at most this many traces (the newest, when there are more). */
const ADOPTION_DAYS = 30;
const ADOPTION_TRACES = 20_000;
const NOT_RECORDED = "not recorded";

/** Compares major.minor.patch numerically; anything else sorts after. */
function byVersion(a: string, b: string): number {
  const pa = a.split(".").map(Number);
  const pb = b.split(".").map(Number);
  const oddA = pa.some(Number.isNaN);
  const oddB = pb.some(Number.isNaN);
  if (oddA || oddB) return oddA === oddB ? a.localeCompare(b) : oddA ? 1 : -1;
  for (let i = 0; i < Math.max(pa.length, pb.length); i++)
    if ((pa[i] ?? 0) !== (pb[i] ?? 0)) return (pa[i] ?? 0) - (pb[i] ?? 0);
  return 0;
}

/**
 * Update checks and downloads per version, from license traces (licenses that trace): an update check's meta names
 * the version the client runs, a download's the version it fetched. Traces from before versions were recorded (and
 * feed requests, which name no version) count as "not recorded".
 */
function adoptionByVersion(traces: Row[]): { label: string; values: number[] }[] {
  const counts = new Map<string, [number, number]>();
  for (const t of traces) {
    let version = NOT_RECORDED;
    try {
      const meta = typeof t["meta"] === "string" ? (JSON.parse(t["meta"]) as { version?: unknown }) : undefined;
      if (typeof meta?.version === "string") version = meta.version;
    } catch {
      // meta that is not JSON names no version
    }
    const entry = counts.get(version) ?? [0, 0];
    entry[t["action"] === "Download" || t["action"] === 8 ? 1 : 0]++;
    counts.set(version, entry);
  }
  return [...counts.keys()]
    .sort((a, b) => (a === NOT_RECORDED ? 1 : b === NOT_RECORDED ? -1 : byVersion(a, b)))
    .map((label) => ({ label, values: counts.get(label)! }));
}

/**
 * Activity over time, below the figures: activations and floating seats per day, update checks and downloads per
 * version, failed webhook deliveries per day, and each product's newest release's adoption.
 */
export function Activity({ roles }: { roles: string[] }) {
  const { data, error } = useLoad(async () => {
    const [tokens, traces] = await Promise.all([
      all("/v1/license-tokens", { sort: "-id" }),
      can(roles, managers)
        ? allPages(
            "/v1/license-traces",
            {
              filter: `(action == "UpdateCheck" || action == "Download") && createdAt >= "${lastDays(ADOPTION_DAYS)[0]}"`,
              select: "action,meta",
              sort: "-id",
            },
            ADOPTION_TRACES,
          )
        : Promise.resolve([] as Row[]),
    ]);
    let failed: Row[] = [];
    if (can(roles, managers)) {
      const subs = await all("/v1/webhooks/subscriptions");
      failed = (
        await Promise.all(
          subs.map((s) =>
            all(`/v1/webhooks/subscriptions/${String(s["id"])}/events`, { filter: "isSuccess == false" }),
          ),
        )
      ).flat();
    }
    return { tokens, traces, failed };
  }, []);
  if (error) return <ErrorBox error={error} />;
  if (!data) return <p aria-busy="true">Loading…</p>;
  const days = lastDays(14);
  const activations = days.map((d) => ({
    label: formatDay(d),
    value: data.tokens.filter(
      (t) => t["kind"] !== "Floating" && t["kind"] !== 1 && dayKey(t["issueDate"] ?? t["createdAt"]) === d,
    ).length,
  }));
  // A seat is in use on a day when it was taken on or before that day and had not expired before it.
  const seats = days.map((d) => ({
    label: formatDay(d),
    value: data.tokens.filter(
      (t) =>
        (t["kind"] === "Floating" || t["kind"] === 1) &&
        dayKey(t["issueDate"] ?? t["createdAt"]) <= d &&
        (!t["expireDate"] || dayKey(t["expireDate"]) >= d),
    ).length,
  }));
  const adoption = adoptionByVersion(data.traces);
  const failedByDay = days.map((d) => ({
    label: formatDay(d),
    value: data.failed.filter((e) => dayKey(e["createdAt"]) === d).length,
  }));
  return (
    <section aria-label="Activity">
      <h3>Activity</h3>
      <div class="charts">
        <BarChart title="Activations per day (last 14 days)" data={activations} />
        <BarChart title="Floating seats in use per day" data={seats} color="#1f7a4d" />
        {can(roles, managers) ? (
          <GroupedBarChart
            title={`Update checks and downloads per version (last ${ADOPTION_DAYS} days)`}
            labelHeader="Version"
            series={[
              { name: "Update checks", color: "#7a4d1f" },
              { name: "Downloads", color: "#5b2f8a" },
            ]}
            data={adoption}
          />
        ) : null}
        {can(roles, managers) ? (
          <BarChart title="Failed webhook deliveries per day" data={failedByDay} color="#b3261e" />
        ) : null}
        <AdoptionOverview />
      </div>
    </section>
  );
}
