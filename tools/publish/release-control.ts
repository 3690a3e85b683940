/**
 * What a publication sets on its release besides the artifacts (CONTRACT section 8): the rollout percentage, scheduled
 * steps, `critical`, the automatic halts (on reports, on the release's health), and release notes read from a Markdown file. Each value is read
 * from the command line's words and checked here, before anything is sent (the service checks again); publish.ts
 * sets what differs from the release as it is, before the first upload.
 */
import { readFileSync } from "node:fs";

/** A scheduled rollout step, as the service stores it (`at` an ISO 8601 instant, UTC). */
export interface RolloutStep {
  percentage: number;
  at: string;
}

/** The release control fields a publication sets; each one left out is left as the release has it. */
export interface ReleaseControl {
  /** The share of installs offered the release, 0-100. */
  stagingPercentage?: number;
  /** Later steps of the rollout: strictly increasing in `at`, all in the future. */
  rolloutSchedule?: RolloutStep[];
  /** Installs below it must update (`required: true` in the update check). */
  critical?: boolean;
  /** Halt the release when `count` different licenses report its version within `minutes`. */
  haltOnReports?: { count: number; minutes: number };
  /** Halt the release itself when its crash rate is surely too high (CONTRACT section 13). */
  healthGate?: HealthGate;
  /** The release notes, Markdown (replacing those the build output gives). */
  releaseNotes?: string;
}

/** A release's health gate as the service stores it (its defaults filled in). */
export interface HealthGate {
  maxCrashRate?: number;
  maxCrashRateRatio?: number;
  minSessions: number;
  minInstalls: number;
  action: "halt" | "rollback";
}

/** The service's limits (src/records/releases.ts). */
const MAX_STEPS = 50;
const MAX_NOTES = 100_000;
const MAX_MINUTES = 525_600;
const MAX_INT32 = 2_147_483_647;

/** An instant with its date, time and zone written out: `2026-12-01T00:00:00Z`, `2026-12-01T09:00+02:00`. */
const INSTANT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}:\d{2})$/i;

function percentage(text: string, what: string): number {
  if (!/^\d{1,3}$/.test(text.trim()) || Number(text) > 100)
    throw new Error(`${what} is a whole number from 0 to 100, not ${JSON.stringify(text)}`);
  return Number(text);
}

/** `--staging-percentage N`: 0 to 100. */
export function parseStagingPercentage(text: string): number {
  return percentage(text, "--staging-percentage");
}

/**
 * `--rollout-schedule "25@2026-12-01T00:00:00Z,50@2026-12-03T00:00:00Z"`: comma-separated steps, each a percentage,
 * `@` and an instant with its zone (a time without one would depend on the machine that publishes). The steps are
 * checked against `now` as the service checks them when saved.
 */
export function parseRolloutSchedule(text: string, now = Date.now()): RolloutStep[] {
  const words = text
    .split(",")
    .map((w) => w.trim())
    .filter((w) => w !== "");
  if (words.length === 0)
    throw new Error("--rollout-schedule names no step: give PERCENT@INSTANT[,…], e.g. 25@2026-12-01T00:00:00Z");
  const steps = words.map((word, i) => {
    const at = word.indexOf("@");
    if (at < 0)
      throw new Error(
        `--rollout-schedule step ${i + 1} (${word}): write PERCENT@INSTANT, e.g. 25@2026-12-01T00:00:00Z`,
      );
    const instant = word.slice(at + 1).trim();
    if (!INSTANT.test(instant) || Number.isNaN(Date.parse(instant)))
      throw new Error(
        `--rollout-schedule step ${i + 1} (${word}): ${JSON.stringify(instant)} is not an ISO 8601 instant with its zone (2026-12-01T00:00:00Z)`,
      );
    return {
      percentage: percentage(word.slice(0, at), `--rollout-schedule step ${i + 1} (${word}): its percentage`),
      at: new Date(instant).toISOString(),
    };
  });
  checkSchedule(steps, now, words);
  return steps;
}

/**
 * A schedule the service would take: at most 50 steps, strictly increasing in `at`, every one in the future. `words`
 * are the steps as written, for the messages.
 */
function checkSchedule(steps: readonly RolloutStep[], now: number, words?: readonly string[]): void {
  if (steps.length > MAX_STEPS) throw new Error(`--rollout-schedule has ${steps.length} steps; at most ${MAX_STEPS}`);
  steps.forEach((step, i) => {
    const written = words?.[i] ?? `${step.percentage}@${step.at}`;
    const at = Date.parse(step.at);
    if (!Number.isInteger(step.percentage) || step.percentage < 0 || step.percentage > 100)
      throw new Error(`--rollout-schedule step ${i + 1}: its percentage is a whole number from 0 to 100`);
    if (Number.isNaN(at)) throw new Error(`--rollout-schedule step ${i + 1}: ${step.at} is not an instant`);
    if (at <= now)
      throw new Error(
        `--rollout-schedule step ${i + 1} (${written}) is not in the future: every step must start after now`,
      );
    if (i > 0 && at <= Date.parse(steps[i - 1]!.at))
      throw new Error(
        `--rollout-schedule step ${i + 1} (${written}) does not come after step ${i}: the steps go in increasing order of time`,
      );
  });
}

/** `--halt-on-reports COUNT/MINUTES`: halt when COUNT different licenses report the version within MINUTES. */
export function parseHaltOnReports(text: string): { count: number; minutes: number } {
  const match = /^\s*(\d{1,10})\s*\/\s*(\d{1,10})\s*$/.exec(text);
  const count = Number(match?.[1]);
  const minutes = Number(match?.[2]);
  if (!match || count < 1 || count > MAX_INT32 || minutes < 1 || minutes > MAX_MINUTES)
    throw new Error(
      `--halt-on-reports is COUNT/MINUTES (e.g. 5/60: five licenses reporting the version within an hour), COUNT at least 1 and MINUTES from 1 to ${MAX_MINUTES}, not ${JSON.stringify(text)}`,
    );
  return { count, minutes };
}

const GATE_USAGE =
  "--health-gate is KEY=VALUE pairs, comma-separated: maxCrashRate=2% (or 0.02), ratio=2 (maxCrashRateRatio: times the " +
  "previous release's crash rate), minSessions=100, minInstalls=20, action=halt|rollback; at least one of maxCrashRate " +
  "and ratio";

/** A fraction 0-1 written as one (0.02) or as a percentage (2%). */
function fraction(text: string, key: string): number {
  const percent = text.endsWith("%");
  const number = Number(percent ? text.slice(0, -1) : text);
  const value = percent ? number / 100 : number;
  if (text === "" || text === "%" || !Number.isFinite(value) || value < 0 || value > 1)
    throw new Error(`--health-gate ${key}: a rate from 0 to 1 (or 0% to 100%), not ${JSON.stringify(text)}`);
  return value;
}

function count(text: string, key: string): number {
  if (!/^\d{1,10}$/.test(text) || Number(text) > MAX_INT32)
    throw new Error(`--health-gate ${key}: a whole number from 0, not ${JSON.stringify(text)}`);
  return Number(text);
}

/**
 * `--health-gate "maxCrashRate=2%,ratio=2,minSessions=200,action=rollback"`: the release halts itself (or rolls back)
 * when the lower bound of its crash rate is above maxCrashRate, or above ratio x the previous release's crash rate,
 * once it has minSessions sessions (100) and minInstalls installs (20).
 */
export function parseHealthGate(text: string): HealthGate {
  const gate: HealthGate = { minSessions: 100, minInstalls: 20, action: "halt" };
  const pairs = text
    .split(",")
    .map((w) => w.trim())
    .filter((w) => w !== "");
  if (pairs.length === 0) throw new Error(GATE_USAGE);
  for (const pair of pairs) {
    const at = pair.indexOf("=");
    const key = at < 0 ? pair : pair.slice(0, at).trim();
    const value = at < 0 ? "" : pair.slice(at + 1).trim();
    if (at < 0) throw new Error(`--health-gate ${pair}: write KEY=VALUE. ${GATE_USAGE}`);
    if (key === "maxCrashRate") gate.maxCrashRate = fraction(value, key);
    else if (key === "ratio" || key === "maxCrashRateRatio") {
      const ratio = Number(value);
      if (value === "" || !Number.isFinite(ratio) || ratio <= 0 || ratio > 1000)
        throw new Error(`--health-gate ${key}: a multiple above 0 and at most 1000, not ${JSON.stringify(value)}`);
      gate.maxCrashRateRatio = ratio;
    } else if (key === "minSessions" || key === "minInstalls") gate[key] = count(value, key);
    else if (key === "action") {
      if (value !== "halt" && value !== "rollback")
        throw new Error(`--health-gate action: halt or rollback, not ${JSON.stringify(value)}`);
      gate.action = value;
    } else throw new Error(`--health-gate: unknown key ${JSON.stringify(key)}. ${GATE_USAGE}`);
  }
  if (gate.maxCrashRate === undefined && gate.maxCrashRateRatio === undefined) throw new Error(GATE_USAGE);
  // In the order the service answers it, so a gate the release has already compares equal (controlChanges).
  return {
    ...(gate.maxCrashRate !== undefined ? { maxCrashRate: gate.maxCrashRate } : {}),
    ...(gate.maxCrashRateRatio !== undefined ? { maxCrashRateRatio: gate.maxCrashRateRatio } : {}),
    minSessions: gate.minSessions,
    minInstalls: gate.minInstalls,
    action: gate.action,
  };
}

/** The gate in the words of its flag, for checks and the log. */
function gateWords(gate: HealthGate): string {
  const rules = [
    ...(gate.maxCrashRate !== undefined ? [`maxCrashRate=${gate.maxCrashRate}`] : []),
    ...(gate.maxCrashRateRatio !== undefined ? [`ratio=${gate.maxCrashRateRatio}`] : []),
  ];
  return [...rules, `minSessions=${gate.minSessions}`, `minInstalls=${gate.minInstalls}`, `action=${gate.action}`].join(
    ",",
  );
}

/** `--notes-file FILE`: the release notes, Markdown, as the file holds them (UTF-8; a byte order mark dropped). */
export function readNotesFile(path: string): string {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (e) {
    throw new Error(`--notes-file ${path}: ${e instanceof Error ? e.message : String(e)}`);
  }
  const notes = text.replace(/^\uFEFF/, "").trimEnd();
  if (notes.trim() === "") throw new Error(`--notes-file ${path} is empty: write the release notes in it (Markdown)`);
  if (notes.length > MAX_NOTES)
    throw new Error(`--notes-file ${path} holds ${notes.length} characters; release notes take at most ${MAX_NOTES}`);
  return notes;
}

/** Checks values given by a program rather than the command line (publish() and plan() call it first). */
export function checkReleaseControl(control: ReleaseControl | undefined, now = Date.now()): void {
  if (!control) return;
  if (control.stagingPercentage !== undefined) percentage(String(control.stagingPercentage), "stagingPercentage");
  if (control.rolloutSchedule) checkSchedule(control.rolloutSchedule, now);
  if (control.haltOnReports) parseHaltOnReports(`${control.haltOnReports.count}/${control.haltOnReports.minutes}`);
  if (control.healthGate) control.healthGate = parseHealthGate(gateWords({ ...control.healthGate }));
  if (control.releaseNotes !== undefined && control.releaseNotes.length > MAX_NOTES)
    throw new Error(`releaseNotes: at most ${MAX_NOTES} characters`);
}

/**
 * The fields to send: those given whose value differs from the release's (`release` as GET answers it). Notes from a
 * file replace the HTML notes a build gave too (a Sparkle appcast's description), so no updater shows the old ones.
 */
export function controlChanges(control: ReleaseControl | undefined, release: Record<string, unknown>) {
  const changes: Record<string, unknown> = {};
  if (control?.releaseNotes !== undefined && typeof release["releaseNotesHtml"] === "string")
    changes["releaseNotesHtml"] = null;
  for (const [field, value] of Object.entries(control ?? {})) {
    if (value === undefined) continue;
    const stored = release[field] ?? null;
    const same =
      field === "rolloutSchedule" && Array.isArray(stored)
        ? JSON.stringify((stored as RolloutStep[]).map((s) => [s.percentage, Date.parse(s.at)])) ===
          JSON.stringify((value as RolloutStep[]).map((s) => [s.percentage, Date.parse(s.at)]))
        : JSON.stringify(stored) === JSON.stringify(value);
    if (!same) changes[field] = value;
  }
  return changes;
}

/** The fields as words, for the log: `rollout 25 %, steps 50 % from …, critical, halt on 5 reports in 60 min`. */
export function describeControl(fields: ReleaseControl): string {
  const words: string[] = [];
  if (fields.stagingPercentage !== undefined) words.push(`rollout ${fields.stagingPercentage} %`);
  if (fields.rolloutSchedule)
    words.push(`steps ${fields.rolloutSchedule.map((s) => `${s.percentage} % from ${s.at}`).join(", ")}`);
  if (fields.critical) words.push("critical");
  if (fields.haltOnReports)
    words.push(
      `halt when ${fields.haltOnReports.count} licenses report it within ${fields.haltOnReports.minutes} minutes`,
    );
  if (fields.healthGate) words.push(`health gate ${gateWords(fields.healthGate)}`);
  if (fields.releaseNotes !== undefined) words.push(`release notes (${fields.releaseNotes.length} characters)`);
  if ("releaseNotesHtml" in fields) words.push("HTML release notes cleared");
  return words.join("; ");
}

/** The few calls the release control needs (api.ts ManagementApi). */
interface Caller {
  call<T = Record<string, unknown>>(method: string, path: string, body?: unknown): Promise<T>;
}

/**
 * Sets on the release what `control` asks and it does not have yet, in one PUT (none when it has it all, so a second
 * run changes nothing), before the first upload: a release never goes out before its rollout is in place. Reads the
 * release with GET .../releases/{releaseId}. Answers the names of the fields set.
 */
export async function applyReleaseControl(
  api: Caller,
  productId: number,
  releaseId: number,
  control: ReleaseControl | undefined,
  log: (line: string) => void,
): Promise<string[]> {
  if (!control || Object.values(control).every((v) => v === undefined)) return [];
  const { productRelease } = await api.call<{ productRelease: Record<string, unknown> }>(
    "GET",
    `/v1/products/${productId}/releases/${releaseId}`,
  );
  const changes = controlChanges(control, productRelease);
  if (Object.keys(changes).length === 0) {
    log("  release control: the release has it already");
    return [];
  }
  await api.call("PUT", `/v1/products/${productId}/releases`, { productRelease: { id: releaseId, ...changes } });
  log(`  release control set: ${describeControl(changes)}`);
  return Object.keys(changes);
}
