/**
 * What a publication sets on its release besides the artifacts (CONTRACT section 8): the rollout percentage, scheduled
 * steps, `critical`, the automatic halt on reports, and release notes read from a Markdown file. Each value is read
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
  /** The release notes, Markdown (replacing those the build output gives). */
  releaseNotes?: string;
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
