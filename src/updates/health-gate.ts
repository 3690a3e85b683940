/**
 * Release health's gate (CONTRACT section 13): a release with a `healthGate` halts itself (with `rollback` when its
 * action says so) when its crash rate is surely too high. Judged by the consumer of session pings (sessions.ts), right
 * after it wrote a batch's sessions, for the releases those sessions ran: so within seconds of the sessions that
 * cross it, never on a request's path.
 *
 * "Surely": the gate compares the lower bound of the 95 % Wilson score interval of the crash rate (crashed sessions /
 * sessions, all the release's counted sessions since it was published), not the rate itself, so a small cohort does
 * not halt on one unlucky crash and a real regression does not hide in noise. The absolute rule compares that bound
 * with `maxCrashRate`; the ratio rule with `maxCrashRateRatio` x the previous admissible release's crash rate (its point
 * estimate), when that release has `minSessions` sessions of its own. Nothing is judged before the release has
 * `minSessions` sessions and `minInstalls` installs. A gate halts; it never resumes a release (a person does).
 */
import { and, eq, isNotNull, or } from "drizzle-orm";
import { clock } from "../kernel/clock";
import { type HealthGate, productReleases } from "../db/schema";
import { backgroundContext } from "../webhooks/emit";
import { type HealthFigures, releaseTotals } from "./health-figures";
import { haltIfRunning, previousRelease } from "./release-control";

/** The normal quantile of the 95 % two-sided interval. */
export const WILSON_Z = 1.96;

/** The lower bound of the Wilson score interval of `crashed` of `sessions` (0 with no session). */
export function wilsonLowerBound(crashed: number, sessions: number, z = WILSON_Z): number {
  if (sessions <= 0) return 0;
  const p = crashed / sessions;
  const z2 = z * z;
  const centre = p + z2 / (2 * sessions);
  const spread = z * Math.sqrt((p * (1 - p)) / sessions + z2 / (4 * sessions * sessions));
  return Math.max(0, (centre - spread) / (1 + z2 / sessions));
}

/** What the gate saw: the release's figures, its baseline's, and the rule that halts it (none: it goes on). */
export interface GateVerdict {
  sessions: number;
  crashedSessions: number;
  installs: number;
  crashedInstalls: number;
  crashRate: number | null;
  /** The lower bound of its crash rate's 95 % Wilson interval. */
  crashRateLowerBound: number | null;
  /** The previous admissible release, when there is one; `counted` when it has minSessions of its own. */
  baseline: { version: string; sessions: number; crashRate: number | null; counted: boolean } | null;
  /** The rule crossed, and the crash rate it allows. */
  crossed?: { rule: "maxCrashRate" | "maxCrashRateRatio"; limit: number; ratio?: number };
}

const rateOf = (f: HealthFigures) => (f.sessions === 0 ? null : f.crashedSessions / f.sessions);

/** The gate's verdict on a release's figures beside its baseline's (pure: the gate tests read it by table). */
export function judgeGate(
  gate: HealthGate,
  release: HealthFigures,
  baseline?: HealthFigures & { version: string },
): GateVerdict {
  const counted = baseline !== undefined && baseline.sessions >= gate.minSessions && baseline.sessions > 0;
  const verdict: GateVerdict = {
    sessions: release.sessions,
    crashedSessions: release.crashedSessions,
    installs: release.installs,
    crashedInstalls: release.crashedInstalls,
    crashRate: rateOf(release),
    crashRateLowerBound: release.sessions === 0 ? null : wilsonLowerBound(release.crashedSessions, release.sessions),
    baseline: baseline
      ? { version: baseline.version, sessions: baseline.sessions, crashRate: rateOf(baseline), counted }
      : null,
  };
  if (release.sessions < gate.minSessions || release.installs < gate.minInstalls) return verdict;
  const bound = verdict.crashRateLowerBound ?? 0;
  if (gate.maxCrashRate !== undefined && bound > gate.maxCrashRate)
    return { ...verdict, crossed: { rule: "maxCrashRate", limit: gate.maxCrashRate } };
  const baseRate = counted ? verdict.baseline?.crashRate : undefined;
  if (gate.maxCrashRateRatio !== undefined && baseRate !== undefined && baseRate !== null) {
    const limit = gate.maxCrashRateRatio * baseRate;
    if (bound > limit)
      return { ...verdict, crossed: { rule: "maxCrashRateRatio", limit, ratio: gate.maxCrashRateRatio } };
  }
  return verdict;
}

const percent = (rate: number | null) => (rate === null ? "-" : `${(rate * 100).toFixed(1)} %`);

/**
 * What the gate saw, in words, as the release's haltNote: `Health gate: 6.0 % of 500 sessions crashed (at least
 * 4.2 %) on 48 installs, above 2 x 2.0.3's 1.0 % (2.0 %).`
 */
export function healthNote(verdict: GateVerdict): string {
  const { crossed, baseline } = verdict;
  const seen = `${percent(verdict.crashRate)} of ${verdict.sessions.toLocaleString("en-US")} sessions crashed (at least ${percent(verdict.crashRateLowerBound)}) on ${verdict.installs.toLocaleString("en-US")} installs`;
  const above =
    crossed?.rule === "maxCrashRateRatio" && baseline
      ? `above ${crossed.ratio} x ${baseline.version}'s ${percent(baseline.crashRate)} (${percent(crossed.limit)})`
      : `above the gate's ${percent(crossed?.limit ?? null)}`;
  return `Health gate: ${seen}, ${above}.`;
}

/**
 * Judges the gates of the releases the sessions of a queue batch ran (`[productId, version]`): those public, not
 * halted and gated are read in one statement (none: nothing more is read), and each judged on its figures since it
 * was published beside its previous admissible release's. A release crossing its gate halts (once, however many
 * consumers judge it at once: release-control.ts haltIfRunning), with `rollback` when its action is `rollback` and a
 * previous release exists, and `release.halted` carries the figures as `health`.
 */
export async function judgeHealthGates(
  env: Bindings,
  execution: Pick<ExecutionContext, "waitUntil">,
  released: [number, string][],
): Promise<void> {
  const ctx = await backgroundContext(env, (p) => execution.waitUntil(p));
  const r = productReleases;
  const gated = await ctx.db
    .select()
    .from(r)
    .where(
      and(
        isNotNull(r.healthGate),
        eq(r.public, true),
        eq(r.halted, false),
        or(...released.map(([productId, version]) => and(eq(r.productId, productId), eq(r.version, version)))),
      ),
    );
  const now = clock.now();
  for (const release of gated) {
    const gate = release.healthGate!;
    const previous = await previousRelease(ctx, release);
    const [figures, base] = await releaseTotals(ctx.db, previous ? [release.id, previous.id] : [release.id], now);
    const verdict = judgeGate(gate, figures!, previous && base ? { ...base, version: previous.version } : undefined);
    if (!verdict.crossed) continue;
    await haltIfRunning(ctx, release.id, "health", healthNote(verdict), {
      rollback: gate.action === "rollback" && previous !== undefined,
      health: { ...verdict, gate },
    });
  }
}
