/**
 * The documentation runs: `npm run tour` (scripts/tour.mjs) executes every `<!-- tour -->` block of README.md and
 * docs/ against a fresh local service over HTTPS (a certificate made as `npm run dev` makes its own, trusted only as
 * the docs say: `curl --cacert $CA`, licensing-publish `--ca $CA`), twice, and compares each shown answer with the
 * service's. Also the checker itself: a drifted answer, an unexpected error status or a step that turns certificate
 * checks off fails it.
 */
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
// @ts-expect-error: a plain JavaScript module
import { answerPattern, insecure, steps } from "../../scripts/tour.mjs";
// @ts-expect-error: a plain JavaScript module
import { root } from "../../scripts/local-worker.mjs";

const run = promisify(execFile);

describe("the README's tour", () => {
  it("runs as written, twice, against a fresh service", async () => {
    const { stdout } = await run(process.execPath, ["scripts/tour.mjs"], {
      cwd: root,
      env: process.env,
      maxBuffer: 16 * 1024 * 1024,
    });
    expect(stdout).toMatch(/ steps from \d+ files against https:\/\/127\.0\.0\.1:\d+\n/);
    expect(stdout).toMatch(/run 1 passed/);
    expect(stdout).toMatch(/run 2 passed/);
  }, 240_000);

  it("refuses a step that turns certificate checks off, and only such a step", () => {
    for (const command of [
      "curl -sk $BASE/health",
      "curl -k $BASE/health",
      "X=$(curl -s -k -X POST $BASE/x)",
      "curl --insecure $BASE",
      "echo 1 | curl -skL $BASE",
      "NODE_TLS_REJECT_UNAUTHORIZED=0 npm run -s publish-release -- --url $BASE",
    ])
      expect(insecure(command), command).toBeDefined();
    for (const command of [
      "curl -s --cacert $CA $BASE/health",
      "curl -s --cacert $CA -X POST $BASE/x -d '-k'",
      'curl -s --cacert $CA -G $BASE --data-urlencode "filter=name == \\"-k\\""',
      "LICENSING_API_KEY=$KEY npm run -s publish-release -- --url $BASE --ca $CA",
      "ssh-keygen -k",
    ])
      expect(insecure(command), command).toBeUndefined();
  });

  it("matches answers literally except … and ids, and reads answers, notes and explanations apart", () => {
    const pattern = answerPattern('{"success":true,"code":0,"licenseId":"lic…","id":1}');
    expect(pattern.test('{"success":true,"code":0,"licenseId":"lic3F9A","id":27}')).toBe(true);
    expect(pattern.test('{"success":true,"code":1,"licenseId":"lic3F9A","id":27}')).toBe(false);
    expect(answerPattern('{"code":523,"reason":"machineIdRequired"}').test('{"code":523,"reason":"other"}')).toBe(
      false,
    );
    const parsed = steps({
      file: "x.md",
      line: 1,
      lines: [
        "# explains",
        "curl a   # Healthy",
        "",
        "curl b \\",
        "  -d x",
        '# {"a":1}   a note',
        '#   "b":2}',
        "",
        "# explains too",
        "X=$(curl c)",
      ],
    });
    expect(parsed.map((s: { command: string; expected?: string }) => [s.command, s.expected])).toEqual([
      ["curl a", "Healthy"],
      ["curl b \\\n  -d x", '{"a":1}"b":2}'],
      ["X=$(curl c)", undefined],
    ]);
  });
});
