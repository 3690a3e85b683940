/**
 * Release health in the console (CONTRACT section 13): a release's crash-free sessions per day beside its baseline's
 * (the previous admissible release, the one a rollback offers), read from GET .../health, with the sentence a release
 * manager reads (words.ts healthSentence) and the figures per platform; and that sentence alone for the overview.
 */
import { useEffect, useState } from "preact/hooks";
import { api, must } from "./api/client";
import type { components } from "./api/schema";
import { lastDays } from "./load";
import { ErrorBox } from "./ui";
import { crashFreePercent, crashFreeRate, formatCount, formatDay, formatPercent, healthSentence } from "./words";

export type Health = components["schemas"]["ReleaseHealth"];

/** The chart's span, as the adoption chart's: the last CHART_DAYS UTC days, today included. */
const CHART_DAYS = 14;
const RELEASE_COLOR = "#1f7a4d";
const BASELINE_COLOR = "#8a8f98";

/**
 * Answers read within the last few seconds, by request: the overview's two lists name some releases twice, and the
 * release page reads its baseline's days once per change of the release.
 */
const recent = new Map<string, { at: number; answer: Promise<Health> }>();
const REUSE_MS = 5_000;

/** A release's health from `from` (a UTC day; the route's default span without it) to today. */
export function healthOf(productId: number, releaseId: number, from?: string): Promise<Health> {
  const key = `${productId}/${releaseId}/${from ?? ""}`;
  const known = recent.get(key);
  if (known && Date.now() - known.at < REUSE_MS) return known.answer;
  const answer = api
    .GET("/v1/products/{productId}/releases/{releaseId}/health", {
      params: { path: { productId, releaseId }, query: from ? { from } : {} },
    })
    .then((res) => must(res).data);
  recent.set(key, { at: Date.now(), answer });
  answer.catch(() => recent.delete(key));
  return answer;
}

/** Loads again whenever `deps` change; the data or the API's error. */
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

type Line = { name: string; color: string; values: (number | undefined)[] };

/** A day's rate in words: "97.8 %", or a dash for a day without sessions. */
const said = (v: number | undefined) => (v === undefined ? "—" : `${formatPercent(v)} %`);

/** Crash-free sessions per day, as a percentage with one decimal (rounded down), or undefined without sessions. */
function rateByDay(days: readonly string[], rows: Health["days"]): (number | undefined)[] {
  const byDay = new Map(rows.map((r) => [r.day, r]));
  return days.map((d) => {
    const row = byDay.get(d);
    return row ? crashFreeRate(row.sessions, row.crashedSessions) : undefined;
  });
}

/** A line per series over the days (a gap where a day has no sessions), the numbers also in a table. */
function RateChart({ title, days, lines }: { title: string; days: string[]; lines: Line[] }) {
  // Narrower than the adoption chart's: it sits in the rollout column, and its words stay legible there.
  const width = 360;
  const height = 140;
  const known = lines.flatMap((l) => l.values.filter((v): v is number => v !== undefined));
  // The axis starts a little below the lowest rate, at a whole ten, so 97 % and 99 % do not look alike.
  const floor = Math.max(0, Math.min(90, Math.floor((Math.min(100, ...known) - 1) / 10) * 10));
  // A margin on each side, so today's label at the right edge is not cut off.
  const margin = 12;
  const step = (width - 2 * margin) / days.length;
  const x = (i: number) => margin + step * i + step / 2;
  const y = (v: number) => 14 + ((100 - v) / (100 - floor)) * (height - 22);
  const shown = days.flatMap((_, i) => (lines.some((l) => l.values[i] !== undefined) ? [i] : []));
  const spoken = shown.map(
    (i) => `${formatDay(days[i]!)} ${lines.map((l) => `${l.name} ${said(l.values[i])}`).join(" ")}`,
  );
  return (
    <figure class="chart health-chart">
      <figcaption>{title}</figcaption>
      <ul class="legend" aria-hidden="true">
        {lines.map((l) => (
          <li>
            <span class="swatch" style={{ background: l.color }} />
            {l.name}
          </li>
        ))}
      </ul>
      <svg
        viewBox={`0 0 ${width} ${height + 20}`}
        role="img"
        aria-label={`${title}: ${spoken.join(", ") || "no sessions"}`}
      >
        {[floor, (floor + 100) / 2, 100].map((v) => (
          <>
            <line x1="0" y1={y(v)} x2={width} y2={y(v)} stroke="#e3e5e9" />
            <text x="2" y={y(v) - 2} font-size="9" fill="#666">
              {said(v)}
            </text>
          </>
        ))}
        {lines.map((l) => {
          // Consecutive days with sessions are joined; a day without breaks the line.
          const runs: number[][] = [];
          l.values.forEach((v, i) => {
            if (v === undefined) return;
            const last = runs.at(-1);
            if (last && last.at(-1) === i - 1) last.push(i);
            else runs.push([i]);
          });
          return (
            <g>
              {runs.map((run) => (
                <polyline
                  fill="none"
                  stroke={l.color}
                  stroke-width="2"
                  points={run.map((i) => `${x(i)},${y(l.values[i]!)}`).join(" ")}
                />
              ))}
              {l.values.map((v, i) =>
                v === undefined ? null : (
                  <circle cx={x(i)} cy={y(v)} r="3.5" fill={l.color}>
                    <title>{`${formatDay(days[i]!)}, ${l.name}: ${said(v)}`}</title>
                  </circle>
                ),
              )}
            </g>
          );
        })}
        {days.map((d, i) =>
          // Every other day named, today's always: fourteen labels would touch.
          (days.length - 1 - i) % 2 === 0 ? (
            <text x={x(i)} y={height + 14} text-anchor="middle" font-size="10" fill="#333">
              {formatDay(d)}
            </text>
          ) : null,
        )}
      </svg>
      {shown.length === 0 ? (
        <p class="hint">No sessions in these days.</p>
      ) : (
        <table class="chart-table">
          <caption class="sr-only">{`${title}, as a table`}</caption>
          <thead>
            <tr>
              <th scope="col">Day</th>
              {lines.map((l) => (
                <th scope="col">{l.name}</th>
              ))}
            </tr>
          </thead>
          <tbody>
            {shown.map((i) => (
              <tr>
                <th scope="row">{formatDay(days[i]!)}</th>
                {lines.map((l) => (
                  <td>{said(l.values[i])}</td>
                ))}
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </figure>
  );
}

/** Each platform's figures in one line: "win-x64 98.7 % of 800 · darwin-arm64 96 % of 404". */
function Platforms({ platforms }: { platforms: Health["platforms"] }) {
  const named = platforms.filter((p) => p.sessions > 0);
  if (named.length === 0) return null;
  return (
    <p class="hint" data-testid="health-platforms">
      Per platform:{" "}
      {named
        .map(
          (p) =>
            `${p.platform ?? "not named"} ${crashFreePercent(p.sessions, p.crashedSessions)} % of ${formatCount(p.sessions)}`,
        )
        .join(" · ")}
    </p>
  );
}

/** The release's and its baseline's health over the chart's days: the baseline's days need its own answer. */
async function healthWithBaseline(productId: number, releaseId: number, from: string) {
  const health = await healthOf(productId, releaseId, from);
  const baseline = health.baseline ? await healthOf(productId, health.baseline.releaseId, from) : undefined;
  return { health, baselineDays: baseline?.days ?? [] };
}

/**
 * A release's crash-free sessions per day over the last CHART_DAYS days beside its baseline's, the sentence under it,
 * its installs and its platforms. `stamp` (the release's updatedAt) reads it again after a change.
 */
export function HealthChart({
  productId,
  releaseId,
  version,
  stamp,
}: {
  productId: number;
  releaseId: number;
  version: string;
  stamp: string;
}) {
  const days = lastDays(CHART_DAYS);
  const { data, error } = useLoaded(
    () => healthWithBaseline(productId, releaseId, days[0]!),
    [productId, releaseId, stamp],
  );
  if (error) return <ErrorBox error={error} />;
  if (!data) return <p aria-busy="true">Loading health…</p>;
  const { health, baselineDays } = data;
  const lines: Line[] = [{ name: version, color: RELEASE_COLOR, values: rateByDay(days, health.days) }];
  if (health.baseline)
    lines.push({
      name: `${health.baseline.version} (baseline)`,
      color: BASELINE_COLOR,
      values: rateByDay(days, baselineDays),
    });
  const installs = crashFreePercent(health.installs, health.crashedInstalls);
  return (
    <div class="health">
      <RateChart title={`Crash-free sessions per day (last ${CHART_DAYS} days)`} days={days} lines={lines} />
      <p class="health-sentence" data-testid="health-sentence">
        {healthSentence(version, health, health.baseline)}
      </p>
      {installs === undefined ? null : (
        <p class="hint">
          {formatCount(health.installs)} install{health.installs === 1 ? "" : "s"}, {installs} % crash-free (
          {formatCount(health.crashedInstalls)} with a crash)
        </p>
      )}
      <Platforms platforms={health.platforms} />
    </div>
  );
}

/** The overview's line for a release: its health sentence when it has sessions (the route's default span), else nothing. */
export function HealthLine({
  productId,
  releaseId,
  version,
}: {
  productId: number;
  releaseId: number;
  version: string;
}) {
  const { data } = useLoaded(() => healthOf(productId, releaseId), [productId, releaseId]);
  if (!data || data.sessions === 0) return null;
  return (
    <div class="health-line" data-testid="health-line">
      {healthSentence(version, data, data.baseline)}
    </div>
  );
}
