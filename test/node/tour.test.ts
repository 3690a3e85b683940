/**
 * The documentation runs: `npm run tour` (scripts/tour.mjs) executes every `<!-- tour -->` block of README.md and
 * docs/ against a fresh local service, twice, and compares each shown answer with the service's. Also the checker
 * itself: a drifted answer or an unexpected error status fails it.
 */
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
// @ts-expect-error: a plain JavaScript module
import { answerPattern, steps } from "../../scripts/tour.mjs";
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
    expect(stdout).toMatch(/run 1 passed/);
    expect(stdout).toMatch(/run 2 passed/);
  }, 240_000);

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
