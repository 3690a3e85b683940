/**
 * `scripts/sample-dist.mjs`, the folder a vendor publishes to try the service without building an app (README): its
 * usage with -h/--help, and usage errors answered with exit 2, the usage and no stack trace.
 */
import { execFile } from "node:child_process";
import { mkdtempSync, readdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
// @ts-expect-error: a plain JavaScript module shared with the scripts
import { root } from "../../scripts/local-worker.mjs";

const script = join(root as string, "scripts/sample-dist.mjs");

async function run(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await promisify(execFile)(process.execPath, [script, ...args]);
    return { code: 0, stdout, stderr };
  } catch (e) {
    const failure = e as { code: number; stdout: string; stderr: string };
    return { code: failure.code, stdout: failure.stdout, stderr: failure.stderr };
  }
}

describe("sample-dist as a command", () => {
  it("prints its usage with -h and --help, refuses bad options with exit 2 and no stack trace, and writes the folder", async () => {
    for (const flag of ["-h", "--help"]) {
      const help = await run([flag]);
      expect(help.code).toBe(0);
      expect(help.stdout).toMatch(/^usage: node scripts\/sample-dist\.mjs --out DIR/);
    }
    for (const [args, message] of [
      [["--bogus"], /Unknown option '--bogus'/],
      [[], /^usage:/],
      [["--out", "x", "--size", "ten"], /--size must be a whole number of bytes/],
    ] as [string[], RegExp][]) {
      const out = await run(args);
      expect(out.code, args.join(" ")).toBe(2);
      expect(out.stderr).toMatch(message);
      expect(out.stderr).toContain("usage:");
      expect(out.stderr).not.toMatch(/\n\s+at /);
    }
    const dir = join(mkdtempSync(join(tmpdir(), "sample-dist-")), "dist");
    expect((await run(["--out", dir, "--version", "1.4.0", "--size", "1024"])).code).toBe(0);
    expect(readdirSync(dir)).toContain("latest.yml");
  });
});
