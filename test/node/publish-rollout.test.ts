/**
 * licensing-publish sets a release's rollout on publish (issue 37), as a user runs it against the bundled Worker:
 * --staging-percentage, --rollout-schedule, --critical, --halt-on-reports and --notes-file land on the release before
 * the first upload (on the release it creates, and on one already there: only what differs is sent, so a second run
 * sends nothing), and bad values are refused with a clear message before anything is uploaded (exit 2, no release).
 */
import { execFile } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
// @ts-expect-error: a plain JavaScript module shared with the benchmark
import { root, startLocalWorker } from "../../scripts/local-worker.mjs";
import type { JsonBody } from "../json-body.ts";

const KEY = "api_PublishRolloutKey000000000000000";
const run = promisify(execFile);
let worker: { url: URL; dispose(): Promise<void> };
let dir: string;
let productId: number;

const DAY = 86_400_000;
const inDays = (n: number) => new Date(Date.now() + n * DAY).toISOString().replace(/\.\d{3}Z$/, "Z");
const NOTES = "# Studio 3.0\n\n- A new editor\n- **Faster** start\n";

/** An electron-builder folder of `version`: one Windows installer and latest.yml. */
function folder(version: string): string {
  const out = mkdtempSync(join(dir, "dist-"));
  const exe = randomBytes(50_000);
  const name = `Studio Setup ${version}.exe`;
  writeFileSync(join(out, name), exe);
  const sha512 = createHash("sha512").update(exe).digest("base64");
  writeFileSync(
    join(out, "latest.yml"),
    [
      `version: ${version}`,
      "files:",
      `  - url: ${name}`,
      `    sha512: ${sha512}`,
      `    size: ${exe.byteLength}`,
      `path: ${name}`,
      `sha512: ${sha512}`,
      "releaseNotes: From the build",
      "",
    ].join("\n"),
  );
  return out;
}

async function rest(method: string, path: string, body?: unknown): Promise<JsonBody> {
  const res = await fetch(new URL(path, worker.url), {
    method,
    headers: { "x-api-key": KEY, "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return (await res.json()) as JsonBody;
}

/** Runs `licensing-publish --product studio --dir DIR …` and answers its exit code and output, failing or not. */
async function cli(dist: string, ...extra: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(
      process.execPath,
      ["tools/publish/main.ts", "--product", "studio", "--dir", dist, ...extra],
      { cwd: root, env: { ...process.env, LICENSING_API_KEY: KEY, LICENSING_URL: worker.url.toString() } },
    );
    return { code: 0, stdout, stderr };
  } catch (e) {
    const failure = e as { code: number; stdout: string; stderr: string };
    return { code: failure.code, stdout: failure.stdout, stderr: failure.stderr };
  }
}

async function releaseOf(version: string): Promise<JsonBody | undefined> {
  const filter = encodeURIComponent(`version == "${version}"`);
  const listed = await rest("GET", `/v1/products/${productId}/releases?filter=${filter}&select=id`);
  const id = listed["productReleases"][0]?.["id"];
  return id === undefined
    ? undefined
    : (await rest("GET", `/v1/products/${productId}/releases/${id}`))["productRelease"];
}

beforeAll(async () => {
  worker = await startLocalWorker({
    bindings: {
      Application__JwtSecret: "publish-rollout-jwt-secret-0123456789abcdef",
      Application__EncryptionKey: "publish-rollout-encryption-key",
      Application__AdminUsername: "admin",
      Application__AdminPassword: "Publish-12345",
      Application__AdminApiKey: KEY,
    },
  });
  dir = mkdtempSync(join(tmpdir(), "publish-rollout-"));
  writeFileSync(join(dir, "notes.md"), `\uFEFF${NOTES}`);
  productId = (
    await rest("POST", "/v1/products", { product: { code: "studio", name: "Studio", isApplication: true } })
  )["productId"];
}, 180_000);
afterAll(async () => {
  await worker?.dispose();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe("licensing-publish sets the release's rollout", () => {
  it("sets rollout, schedule, critical, automatic halt and notes on the release it creates, before the first upload", async () => {
    const schedule = [inDays(1), inDays(3)];
    const dist = folder("3.0.0");
    const args = [
      "--staging-percentage",
      "10",
      "--rollout-schedule",
      `50@${schedule[0]}, 100@${schedule[1]}`,
      "--critical",
      "--halt-on-reports",
      "5/60",
      "--health-gate",
      "maxCrashRate=2%, ratio=1.5, action=rollback",
      "--notes-file",
      join(dir, "notes.md"),
      "--public",
    ];
    const first = await cli(dist, ...args);
    expect(first.code, first.stderr).toBe(0);
    const lines = first.stdout.split("\n");
    const set = lines.findIndex((l) => l.includes("release control set:"));
    const upload = lines.findIndex((l) => l.includes(": uploading"));
    expect(set, first.stdout).toBeGreaterThan(-1);
    expect(set, "the rollout is in place before the first upload").toBeLessThan(upload);
    expect(lines[set]).toContain("rollout 10 %");
    expect(await releaseOf("3.0.0")).toMatchObject({
      public: true,
      stagingPercentage: 10,
      rolloutSchedule: [
        { percentage: 50, at: new Date(schedule[0]!).toISOString() },
        { percentage: 100, at: new Date(schedule[1]!).toISOString() },
      ],
      critical: true,
      haltOnReports: { count: 5, minutes: 60 },
      healthGate: { maxCrashRate: 0.02, maxCrashRateRatio: 1.5, minSessions: 100, minInstalls: 20, action: "rollback" },
      releaseNotes: NOTES.trimEnd(),
    });

    // Run again: the release has it all, nothing is sent (and the schedule, still in the future, is not refused).
    const second = await cli(dist, ...args, "--json");
    expect(second.code, second.stderr).toBe(0);
    expect(second.stderr).toContain("release control: the release has it already");
    expect(JSON.parse(second.stdout)).toMatchObject({ controlled: [], unchanged: ["Studio Setup 3.0.0.exe"] });
  });

  it("changes only what differs on a release already there", async () => {
    const dist = folder("3.1.0");
    expect((await cli(dist)).code).toBe(0);
    const before = await releaseOf("3.1.0");
    expect(before).toMatchObject({ releaseNotes: "From the build" });
    expect(before).not.toHaveProperty("stagingPercentage");
    const out = await cli(dist, "--staging-percentage", "30", "--critical", "--json");
    expect(out.code, out.stderr).toBe(0);
    expect(JSON.parse(out.stdout)["controlled"].sort()).toEqual(["critical", "stagingPercentage"]);
    expect(await releaseOf("3.1.0")).toMatchObject({
      stagingPercentage: 30,
      critical: true,
      releaseNotes: "From the build",
    });
    const again = await cli(dist, "--staging-percentage", "30", "--json");
    expect(JSON.parse(again.stdout)["controlled"]).toEqual([]);

    // Notes from a file replace the HTML notes a build gave (a Sparkle appcast's), so no updater shows the old ones.
    const id = before!["id"];
    await rest("PUT", `/v1/products/${productId}/releases`, { productRelease: { id, releaseNotesHtml: "<p>Old</p>" } });
    const notes = await cli(dist, "--notes-file", join(dir, "notes.md"), "--json");
    expect(JSON.parse(notes.stdout)["controlled"].sort()).toEqual(["releaseNotes", "releaseNotesHtml"]);
    const after = await releaseOf("3.1.0");
    expect(after).toMatchObject({ releaseNotes: NOTES.trimEnd(), stagingPercentage: 30 });
    expect(after).not.toHaveProperty("releaseNotesHtml");
  });

  it("--dry-run says what it would set, without contacting the service", async () => {
    const out = await cli(
      folder("3.2.0"),
      "--dry-run",
      "--url",
      "http://127.0.0.1:9",
      "--staging-percentage",
      "20",
      "--halt-on-reports",
      "3/15",
    );
    expect(out.code, out.stderr).toBe(0);
    expect(out.stdout).toContain("would set: rollout 20 %; halt when 3 licenses report it within 15 minutes");
  });

  it("refuses bad values with a clear message before anything is uploaded", async () => {
    const dist = folder("3.3.0");
    const cases: [string[], RegExp][] = [
      [["--staging-percentage", "101"], /--staging-percentage is a whole number from 0 to 100, not "101"/],
      [["--staging-percentage", "ten"], /--staging-percentage is a whole number from 0 to 100/],
      [["--rollout-schedule", "50"], /--rollout-schedule step 1 \(50\): write PERCENT@INSTANT/],
      [["--rollout-schedule", `150@${inDays(1)}`], /step 1 .*its percentage is a whole number from 0 to 100/],
      [["--rollout-schedule", "50@2026-12-01 10:00"], /is not an ISO 8601 instant with its zone/],
      [["--rollout-schedule", "50@2026-12-01T10:00:00"], /is not an ISO 8601 instant with its zone/],
      [["--rollout-schedule", "50@2020-01-01T00:00:00Z"], /step 1 \(50@2020-01-01T00:00:00Z\) is not in the future/],
      [
        ["--rollout-schedule", `50@${inDays(3)},100@${inDays(2)}`],
        /step 2 \(100@.*\) does not come after step 1: the steps go in increasing order of time/,
      ],
      [["--rollout-schedule", " , "], /--rollout-schedule names no step/],
      [["--halt-on-reports", "5"], /--halt-on-reports is COUNT\/MINUTES/],
      [["--halt-on-reports", "0/60"], /--halt-on-reports is COUNT\/MINUTES .* not "0\/60"/],
      [["--halt-on-reports", "5/600000"], /MINUTES from 1 to 525600/],
      [
        ["--health-gate", "maxCrashRate=150%"],
        /--health-gate maxCrashRate: a rate from 0 to 1 \(or 0% to 100%\), not "150%"/,
      ],
      [["--health-gate", "maxCrashRate=-0.1"], /--health-gate maxCrashRate: a rate from 0 to 1/],
      [["--health-gate", "ratio=0"], /--health-gate ratio: a multiple above 0/],
      [
        ["--health-gate", "maxCrashRate=0.02,minSessions=-1"],
        /--health-gate minSessions: a whole number from 0, not "-1"/,
      ],
      [["--health-gate", "minSessions=10"], /at least one of maxCrashRate and ratio/],
      [["--health-gate", "maxCrashRate=0.02,action=explode"], /--health-gate action: halt or rollback, not "explode"/],
      [["--health-gate", "crashes=3"], /--health-gate: unknown key "crashes"/],
      [["--notes-file", join(dir, "missing.md")], /--notes-file .*missing\.md: ENOENT/],
    ];
    writeFileSync(join(dir, "empty.md"), "\n  \n");
    cases.push([["--notes-file", join(dir, "empty.md")], /--notes-file .*empty\.md is empty/]);
    writeFileSync(join(dir, "long.md"), "x".repeat(100_001));
    cases.push([["--notes-file", join(dir, "long.md")], /holds 100001 characters; release notes take at most 100000/]);
    for (const [args, message] of cases) {
      const out = await cli(dist, ...args);
      expect(out.code, args.join(" ")).toBe(2);
      expect(out.stderr, args.join(" ")).toMatch(message);
      expect(out.stderr).not.toMatch(/\n\s+at /);
    }
    expect(await releaseOf("3.3.0")).toBeUndefined();
  });
});
