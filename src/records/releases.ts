/** The product release record (SPEC "Product release", CONTRACT section 3), shared by releases, templates and updates. */
import { z } from "@hono/zod-openapi";
import { sql } from "drizzle-orm";
import { productReleases } from "../db/schema";
import { CHANNELS } from "./vocabulary";
import { type Field, defineEntity, f } from "../http/entity";
import { int32 } from "../http/openapi";
import { MAX_FILTER_LENGTH } from "../http/filter";

export { CHANNELS };

/** Why a release is halted: by hand (POST .../halt), by its reports (haltOnReports) or by its health (healthGate). */
export const HALT_REASONS = ["manual", "reports", "health"] as const;
export type HaltReason = (typeof HALT_REASONS)[number];

/** A JSON value stored as text, neither filtered nor sorted. */
function json<T extends z.ZodType>(schema: T, description: string): Field<T, T> {
  const described = schema.openapi({ description }) as T;
  return { output: described, input: described };
}

export const ProductRelease = defineEntity({
  name: "ProductRelease",
  singular: "productRelease",
  plural: "productReleases",
  table: productReleases,
  // A release's writes bump its product's release generation (http/repository.ts).
  releaseGeneration: (id) =>
    sql`(SELECT ${productReleases.productId} FROM ${productReleases} WHERE ${productReleases.id} = ${id})`,
  fields: {
    id: f.id(),
    productId: f.int({ readOnly: true }),
    version: f.string({
      max: 64,
      pattern: /^\S+$/,
      description: "major.minor.patch (optionally -prerelease) for releases that receive downloads.",
    }),
    name: f.string({ max: 256 }),
    description: f.string(),
    releaseNotes: f.string({ max: 100_000 }),
    releaseDate: f.date(),
    channel: f.oneOf(CHANNELS, { description: "stable (default) or insider." }),
    public: f.bool(),
    requiresMaintenance: f.bool({
      description: "Default true: installable only while the license's maintenance covers the release date.",
    }),
    stagingPercentage: f.int({
      min: 0,
      max: 100,
      description:
        "Rollout: the share of callers admitted (by install id, else license; CONTRACT section 8). Unset = 100.",
    }),
    rolloutSchedule: json(
      z.array(z.object({ percentage: int32(0, 100), at: z.string().max(64).openapi({ format: "date-time" }) })).max(50),
      "Scheduled rollout steps, strictly increasing in `at` and in the future when saved: the effective percentage " +
        "is that of the last step whose `at` has passed, else stagingPercentage.",
    ),
    halted: f.bool({ readOnly: true, description: "Stopped for everyone not yet on it (POST .../halt, .../resume)." }),
    haltedAt: f.date({ readOnly: true }),
    haltReason: f.oneOf(HALT_REASONS, {
      readOnly: true,
      description: "manual (POST .../halt), reports (haltOnReports) or health (healthGate).",
    }),
    haltNote: f.string({
      readOnly: true,
      description: "Why it was halted, in words: the reason given to POST .../halt, or what the automatic halt saw.",
    }),
    bundleVersion: f.string({
      max: 64,
      pattern: /^\S+$/,
      description:
        "The build's own version as the platform compares it, when not `version`: Sparkle's sparkle:version (CFBundleVersion, e.g. a build number 300).",
    }),
    minimumSystemVersion: f.string({
      max: 32,
      pattern: /^\d+(\.\d+){0,2}$/,
      description: "Sparkle's sparkle:minimumSystemVersion: the oldest macOS it runs on (e.g. 12.0).",
    }),
    maximumSystemVersion: f.string({
      max: 32,
      pattern: /^\d+(\.\d+){0,2}$/,
      description: "Sparkle's sparkle:maximumSystemVersion: the newest macOS it runs on.",
    }),
    informationalUpdate: f.bool({
      description: "Sparkle's sparkle:informationalUpdate: the update is announced (with its notes), not installed.",
    }),
    releaseNotesHtml: f.string({
      max: 200_000,
      description:
        "The release notes as HTML (as Sparkle shows them), when they were given so; releaseNotes holds them as Markdown.",
    }),
    rollback: f.bool({
      description: "While halted, callers running it are offered the previous admissible release (a downgrade).",
    }),
    critical: f.bool({ description: "Callers below it get `required: true` in the update check." }),
    audience: f.string({
      max: MAX_FILTER_LENGTH,
      description:
        'Who the release is for: a filter over the license\'s fields (`edition == "Ultimate"`); anonymous callers never match.',
    }),
    haltOnReports: json(
      z.object({ count: int32(1), minutes: int32(1, 525_600) }),
      "Halt the release itself when reports naming its version arrive from `count` different licenses within `minutes` (many reports of one license count once).",
    ),
    healthGate: json(
      z
        .object({
          maxCrashRate: z.number().min(0).max(1).optional().openapi({
            description: "Halt when the crash rate's lower bound (95 % Wilson) is above this fraction (0-1).",
          }),
          maxCrashRateRatio: z.number().positive().max(1000).optional().openapi({
            description: "Halt when the crash rate's lower bound is above this many times the previous release's.",
          }),
          minSessions: int32(0).default(100).openapi({ description: "Judged only from this many sessions (100)." }),
          minInstalls: int32(0).default(20).openapi({ description: "Judged only from this many installs (20)." }),
          action: z.enum(["halt", "rollback"]).default("halt").openapi("HealthGateAction", {
            description: "halt, or rollback (halted with rollback: installs on it are offered the previous release).",
          }),
        })
        .refine((g) => g.maxCrashRate !== undefined || g.maxCrashRateRatio !== undefined, {
          message: "give maxCrashRate, maxCrashRateRatio or both",
          path: ["maxCrashRate"],
        }),
      "Release health's gate (CONTRACT section 13): the release halts itself, within a minute of the sessions that cross it, when the lower bound of its crash rate is above maxCrashRate or maxCrashRateRatio x the previous release's.",
    ),
    signerChanges: {
      ...json(
        z.array(
          z.object({
            platform: z.string(),
            fileName: z.string(),
            from: z.array(z.string()),
            to: z.string().nullable(),
            by: z.string(),
            at: z.string().openapi({ format: "date-time" }),
          }),
        ),
        "Changes of signing identity an Administrator accepted at upload (allowSignerChange, CONTRACT section 15): the identities expected, the one found, who and when.",
      ),
      readOnly: true,
    },
    createdAt: f.date({ readOnly: true }),
    updatedAt: f.date({ readOnly: true }),
  },
  required: ["version"],
});
