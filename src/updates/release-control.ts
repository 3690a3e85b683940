/**
 * Release control's writes (CONTRACT section 8), free of HTTP: the checks a release's rollout fields pass before they
 * are saved (400 naming the field, nothing changed), halting and resuming (by hand, or by its reports: haltOnReports),
 * and the webhook events of a release's changes (`release.published`, `release.rollout.changed`, `release.halted`,
 * `release.resumed`). What the answers make of these fields is admission.ts and delivery/selection.ts feedRelease.
 */
import { type Column, and, eq, getTableName, sql } from "drizzle-orm";
import { clock, nowIso } from "../kernel/clock";
import { type SignerChange, licenses, productReleases, reports } from "../db/schema";
import { ApiError } from "../kernel/errors";
import { isManager } from "../auth/guard";
import type { ServiceContext } from "../http/context";
import { type Row, requireById, updateRow } from "../http/repository";
import { type EmitContext, type EventBody, emit } from "../webhooks/emit";
import { checkAudience } from "./audience";
import { type HaltReason, ProductRelease } from "../records/releases";
import { compareVersions, isReleaseVersion } from "../records/versions";

/** The wire record of a release row (the webhook events' `data`). */
function releaseRecord(ctx: Pick<ServiceContext, "config">, row: Row): Record<string, unknown> {
  return ProductRelease.toWire(row, ctx.config) as Record<string, unknown>;
}

/**
 * Checks the release control fields of a create or an update (`values` as they will be stored, `existing` the stored
 * row on an update): a schedule strictly increasing in `at` and wholly in the future, an audience the filter language
 * accepts, a rollback only when a previous admissible release exists. 400 naming the field.
 */
export async function checkReleaseControl(ctx: ServiceContext, values: Row, existing?: Row): Promise<void> {
  requireControlRole(ctx, values, existing);
  const schedule = values["rolloutSchedule"] as { percentage: number; at: string }[] | null | undefined;
  if (schedule) {
    const now = clock.now().getTime();
    let previous = Number.NEGATIVE_INFINITY;
    schedule.forEach((step, i) => {
      const at = Date.parse(step.at);
      if (Number.isNaN(at)) throw new ApiError(400, `rolloutSchedule[${i}].at: not an ISO 8601 instant`);
      if (at <= now) throw new ApiError(400, `rolloutSchedule[${i}].at: ${step.at} is not in the future`);
      if (at <= previous)
        throw new ApiError(400, `rolloutSchedule[${i}].at: the steps must be in increasing order of \`at\``);
      previous = at;
    });
    // Stored normalised: the effective percentage compares instants, the console shows ISO text.
    values["rolloutSchedule"] = schedule.map((s) => ({ percentage: s.percentage, at: new Date(s.at).toISOString() }));
  }
  const audience = values["audience"];
  if (typeof audience === "string") checkAudience(audience);
  if (values["rollback"] === true) {
    const merged = { ...existing, ...values };
    if (!(await previousRelease(ctx, merged)))
      throw new ApiError(
        400,
        "rollback: there is no previous release to roll back to (public, not halted, same channel, older)",
      );
  }
}

/** The fields that decide who is offered a release, beyond publishing it: release control (CONTRACT section 8). */
const CONTROL_FIELDS = [
  "stagingPercentage",
  "rolloutSchedule",
  "rollback",
  "audience",
  "haltOnReports",
  "healthGate",
  "critical",
];

/**
 * Release control follows the roles of halt (Administrator, LicenseManager): a caller who may not halt a release may
 * not stop its rollout (stagingPercentage 0), roll it back or aim it either. 403 naming the first field set to a new
 * value; a field sent with the value it has is no change.
 */
function requireControlRole(ctx: ServiceContext, values: Row, existing?: Row): void {
  if (isManager(ctx.principal)) return;
  // Against the stored value on an update; on a create, against what controls nothing (no rollout, no rollback, …).
  const neutral = (field: string, value: unknown) =>
    value === null || value === false || (field === "stagingPercentage" && value === 100);
  const changed = CONTROL_FIELDS.find((field) => {
    const value = values[field];
    if (value === undefined) return false;
    if (existing) return JSON.stringify(value) !== JSON.stringify(existing[field] ?? null);
    return !neutral(field, value);
  });
  if (changed)
    throw new ApiError(
      403,
      `${changed}: release control follows the roles of halt (Administrator, LicenseManager); nothing was changed`,
    );
}

/**
 * The release a rollback offers, the previous admissible release: the newest public, not halted release of the
 * product and channel older than `row` (its id and version). Release health's baseline is this release too.
 */
export async function previousRelease(
  ctx: Pick<ServiceContext, "db">,
  row: Row,
): Promise<{ id: number; version: string } | undefined> {
  const version = row["version"] as string;
  if (!isReleaseVersion(version)) return undefined;
  const rows = await ctx.db
    .select({ id: productReleases.id, version: productReleases.version })
    .from(productReleases)
    .where(
      and(
        eq(productReleases.productId, row["productId"] as number),
        eq(productReleases.channel, (row["channel"] as string | undefined) ?? "stable"),
        eq(productReleases.public, true),
        eq(productReleases.halted, false),
      ),
    );
  const older = rows.filter((r) => isReleaseVersion(r.version) && compareVersions(r.version, version) < 0);
  // The newest of the older ones, whatever order D1 hands the rows in.
  return older.sort((a, b) => compareVersions(b.version, a.version))[0];
}

/**
 * `release.published`'s body: the release, and `signerChanged: { from, to }` when an Administrator accepted a change
 * of signing identity for one of its builds (the latest one accepted; every one is on the release's signerChanges).
 */
function publishedEvent(ctx: ServiceContext, row: Row): EventBody {
  const changes = (row["signerChanges"] ?? null) as SignerChange[] | null;
  const last = changes?.[changes.length - 1];
  return { data: releaseRecord(ctx, row), ...(last ? { signerChanged: { from: last.from, to: last.to } } : {}) };
}

/**
 * The events of a release's create or update: `release.published` when it became public, `release.rollout.changed`
 * when its stagingPercentage or rolloutSchedule changed.
 */
export function releaseChangeEvents(ctx: ServiceContext, row: Row, previous?: Row): void {
  if (row["public"] && !previous?.["public"]) emit(ctx, "release.published", () => publishedEvent(ctx, row));
  const rolloutOf = (r: Row | undefined) =>
    JSON.stringify([r?.["stagingPercentage"] ?? null, r?.["rolloutSchedule"] ?? null]);
  if (previous && rolloutOf(row) !== rolloutOf(previous))
    emit(ctx, "release.rollout.changed", () => ({
      data: releaseRecord(ctx, row),
      previous: {
        stagingPercentage: previous["stagingPercentage"] ?? null,
        rolloutSchedule: previous["rolloutSchedule"] ?? null,
      },
    }));
}

/**
 * Halts a public release for everyone not yet on it, at once (its product's release generation moves, so no memo
 * or cache keeps offering it). Only a release that is not halted yet changes, in one conditional statement, so a
 * release halts once however many halts race; the one that halted it keeps `note` (why, in words) as the release's
 * haltNote and emits `release.halted` with its reason and note. Answers the release as it is now, and whether this
 * call halted it.
 */
export async function haltRelease(
  ctx: ServiceContext,
  productId: number,
  releaseId: number,
  reason: HaltReason,
  note?: string,
): Promise<{ row: Row; halted: boolean }> {
  const existing = await requireById(ctx.db, ProductRelease, releaseId, eq(productReleases.productId, productId));
  if (!existing["public"]) throw new ApiError(400, "public: only a public release can be halted");
  if (existing["halted"]) return { row: existing, halted: false };
  const row = await haltIfRunning(ctx, releaseId, reason, note);
  return row ? { row, halted: true } : { row: existing, halted: false };
}

/**
 * The conditional halt: the row when this call halted it, undefined when it was halted already. The note is written
 * with the halt, in the same statement, so a release never shows one halt's reason with another's note. The health
 * gate (health-gate.ts) halts with `rollback` when its action says so, and its figures in the event (`health`).
 */
export async function haltIfRunning(
  ctx: EmitContext,
  releaseId: number,
  reason: HaltReason,
  note?: string,
  gate?: { rollback: boolean; health: Record<string, unknown> },
): Promise<Row | undefined> {
  const said = note?.trim() || null;
  let row: Row;
  try {
    row = await updateRow(
      ctx.db,
      ProductRelease,
      releaseId,
      {
        halted: true,
        haltedAt: nowIso(),
        haltReason: reason,
        haltNote: said,
        ...(gate?.rollback ? { rollback: true } : {}),
      },
      and(eq(productReleases.halted, false), eq(productReleases.public, true)),
    );
  } catch (e) {
    if (e instanceof ApiError && e.status === 400) return undefined;
    throw e;
  }
  emit(ctx, "release.halted", () => ({
    data: {
      ...releaseRecord(ctx, row),
      reason,
      ...(said ? { note: said } : {}),
      ...(gate ? { health: gate.health } : {}),
    },
  }));
  return row;
}

/**
 * Resumes a halted release (400 naming `halted` when it is not), clearing the halt's time, reason and note; emits
 * `release.resumed` with the halt's reason.
 */
export async function resumeRelease(ctx: ServiceContext, productId: number, releaseId: number): Promise<Row> {
  const existing = await requireById(ctx.db, ProductRelease, releaseId, eq(productReleases.productId, productId));
  if (!existing["halted"]) throw new ApiError(400, "halted: the release is not halted");
  const row = await updateRow(ctx.db, ProductRelease, releaseId, {
    halted: false,
    haltedAt: null,
    haltReason: null,
    haltNote: null,
  });
  const reason = existing["haltReason"] ?? "manual";
  emit(ctx, "release.resumed", () => ({ data: { ...releaseRecord(ctx, row), reason } }));
  return row;
}

/**
 * After a report naming `version` for a license (`licenseId`, the integer key) was stored: the releases of the
 * license's product with that version, public, not halted, whose `haltOnReports` threshold the reports of the
 * product's licenses naming the version within its window now reach, halt themselves (reason `reports`, and a note
 * saying what was seen: `3 licenses reported version 2.1.0 within 60 minutes`). One statement finds them and counts
 * (none for a product without haltOnReports); each halts once (haltIfRunning).
 */
export async function haltOnReports(ctx: ServiceContext, licenseId: number, version: string): Promise<void> {
  const now = nowIso();
  const window = sql`strftime('%Y-%m-%dT%H:%M:%fZ', ${now}, '-' || json_extract(${named(productReleases.haltOnReports)}, '$.minutes') || ' minutes')`;
  // Reporters, not reports: one license sending many reports counts once, so it cannot halt a release alone. Its
  // columns are named with their tables: drizzle leaves them bare in the select list of a one-table query.
  const [r, l, p] = [reports, licenses, productReleases];
  const reporters = sql<number>`(SELECT count(DISTINCT ${named(r.licenseId)}) FROM ${r} JOIN ${l} ON ${named(l.id)} = ${named(r.licenseId)}
              WHERE ${named(l.productId)} = ${named(p.productId)} AND ${named(r.version)} = ${named(p.version)}
              AND ${named(r.createdAt)} >= ${window})`;
  const due = await ctx.db
    .select({ id: productReleases.id, reporters, threshold: productReleases.haltOnReports })
    .from(productReleases)
    .where(
      and(
        eq(
          productReleases.productId,
          sql`(SELECT ${licenses.productId} FROM ${licenses} WHERE ${licenses.id} = ${licenseId})`,
        ),
        eq(productReleases.version, version),
        eq(productReleases.public, true),
        eq(productReleases.halted, false),
        sql`${productReleases.haltOnReports} IS NOT NULL`,
        sql`${reporters} >= json_extract(${productReleases.haltOnReports}, '$.count')`,
      ),
    );
  for (const release of due)
    await haltIfRunning(ctx, release.id, "reports", reportsNote(release.reporters, version, release.threshold));
}

/** A column with its table's name, wherever the statement puts it. */
function named(column: Column) {
  return sql`${sql.identifier(getTableName(column.table))}.${sql.identifier(column.name)}`;
}

/** What the automatic halt saw, in words: `3 licenses reported version 2.1.0 within 60 minutes`. */
function reportsNote(reporters: number, version: string, threshold: { minutes: number } | null): string {
  const minutes = threshold?.minutes ?? 0;
  return `${reporters} ${reporters === 1 ? "license" : "licenses"} reported version ${version} within ${minutes} ${minutes === 1 ? "minute" : "minutes"}`;
}
