/**
 * The documentation is a map that stays true (issue 35): the README is a front page of at most 250 lines, no page of
 * docs/ (nor CONTRIBUTING.md) runs past 400 lines, and every file of the repository a page names (`src/…`, `test/…`,
 * `docs/…`, a relative link) exists. A move that leaves a page pointing at nothing fails here.
 */
import { existsSync, readFileSync, readdirSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";
// @ts-expect-error: a plain JavaScript module shared with the benchmark
import { root } from "../../scripts/local-worker.mjs";

function pages(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return pages(path);
    return name.endsWith(".md") ? [path] : [];
  });
}

const ALL = [join(root, "README.md"), join(root, "CONTRIBUTING.md"), ...pages(join(root, "docs"))].filter((p) =>
  existsSync(p),
);
const lines = (path: string) => readFileSync(path, "utf8").split("\n").length;

/** The top folders whose files a page may name by path from the repository's root. */
const ROOTS = "src|test|docs|scripts|bench|tools|client|clients|console|proto|migrations|examples|\\.ci";
const CITED = new RegExp(`(?<![\\w./-])(?:${ROOTS})/[\\w./@-]*[\\w-]\\.[A-Za-z]{1,5}\\b`, "g");
/** Relative links of markdown: `[text](path)`, not URLs or anchors. */
const LINK = /\]\((?!https?:|mailto:|#)([^)\s#]+)(?:#[^)]*)?\)/g;

/** Paths of a vendor's own project given as examples, and build output (bench/.out/): not files of this repository. */
const NOT_OURS = /^(?:(?:src|test)\/(?:main|app|lib)\.(?:rs|py|go|c|cpp|js)$|bench\/\.out\/)/;

describe("the documentation", () => {
  it("has a README of at most 250 lines", () => {
    expect(lines(join(root, "README.md"))).toBeLessThanOrEqual(250);
  });

  it("has no page over 400 lines", () => {
    const long = ALL.filter((p) => lines(p) > 400).map((p) => `${relative(root, p)}: ${lines(p)} lines`);
    expect(long).toEqual([]);
  });

  it("names only files that exist", () => {
    const missing: string[] = [];
    for (const page of ALL) {
      const text = readFileSync(page, "utf8");
      for (const [path] of text.matchAll(CITED)) {
        const clean = path.replace(/[.,:;]+$/, "");
        if (NOT_OURS.test(clean) || clean.includes("*")) continue;
        if (!existsSync(join(root, clean))) missing.push(`${relative(root, page)}: ${clean}`);
      }
      for (const [, link] of text.matchAll(LINK)) {
        const target = resolve(dirname(page), decodeURIComponent(link!));
        if (!existsSync(target)) missing.push(`${relative(root, page)}: link ${link}`);
      }
    }
    expect(missing).toEqual([]);
  });
});
