/**
 * The tree stays readable (issue 35): no source file over 500 lines but the schema and generated code, and no
 * function over 150 lines. Measured on the syntax tree (swc, which dependency-cruiser already uses to read the
 * source), so a long function is found whatever its form: a declaration, an arrow, a method. The layers themselves
 * are kept by `npm run lint:deps` (.dependency-cruiser.cjs).
 */
import { readFileSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join, relative } from "node:path";
import { parseSync } from "@swc/core";
import { describe, expect, it } from "vitest";
// @ts-expect-error: a plain JavaScript module shared with the benchmark
import { root } from "../../scripts/local-worker.mjs";

const MAX_FILE_LINES = 500;
const MAX_FUNCTION_LINES = 150;
/** The D1 schema (one declaration per table) and buf's output are exempt. */
const EXEMPT = /^src\/(?:db\/schema\.ts|gen\/)/;

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sources(path);
    return name.endsWith(".ts") && !name.endsWith(".d.ts") ? [path] : [];
  });
}

const FILES = sources(join(root, "src"))
  .map((path) => ({ path, name: relative(root, path) }))
  .filter(({ name }) => !EXEMPT.test(name));

const FUNCTIONS = new Set([
  "FunctionDeclaration",
  "FunctionExpression",
  "ArrowFunctionExpression",
  "ClassMethod",
  "PrivateMethod",
  "Constructor",
]);

interface Node {
  type?: string;
  span?: { start: number; end: number };
  identifier?: { value?: string };
  key?: { value?: string };
  id?: { value?: string };
}

/** Every function of a file longer than the limit, as `file:line name (N lines)`. */
function longFunctions(path: string, name: string): string[] {
  const text = readFileSync(path, "utf8");
  const ast = parseSync(text, { syntax: "typescript" });
  // swc's spans count bytes from a position that grows with every parse: make them relative to this file.
  const bytes = Buffer.from(text);
  const lineStarts = [0];
  for (let i = 0; i < bytes.length; i++) if (bytes[i] === 10) lineStarts.push(i + 1);
  const lineOf = (pos: number) => {
    const offset = pos - ast.span.start;
    let lo = 0;
    let hi = lineStarts.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (lineStarts[mid]! <= offset) lo = mid;
      else hi = mid - 1;
    }
    return lo + 1;
  };
  const found: string[] = [];
  const visit = (node: unknown, named: string | undefined): void => {
    if (!node || typeof node !== "object") return;
    if (Array.isArray(node)) {
      for (const child of node) visit(child, named);
      return;
    }
    const n = node as Node & Record<string, unknown>;
    let label = named;
    if (n.type === "VariableDeclarator" && n.id?.value) label = n.id.value;
    if (n.type && FUNCTIONS.has(n.type) && n.span) {
      label = n.identifier?.value ?? n.key?.value ?? label ?? "(anonymous)";
      const first = lineOf(n.span.start);
      const lines = lineOf(n.span.end) - first + 1;
      if (lines > MAX_FUNCTION_LINES) found.push(`${name}:${first} ${label} (${lines} lines)`);
    }
    for (const [key, child] of Object.entries(n)) if (key !== "span") visit(child, label);
  };
  visit(ast.body, undefined);
  return found;
}

describe("the source tree", () => {
  it(`has no file over ${MAX_FILE_LINES} lines but the schema and generated code`, () => {
    const long = FILES.map(({ path, name }) => ({ name, lines: readFileSync(path, "utf8").split("\n").length }))
      .filter(({ lines }) => lines > MAX_FILE_LINES)
      .map(({ name, lines }) => `${name}: ${lines} lines`);
    expect(long).toEqual([]);
  });

  it(`has no function over ${MAX_FUNCTION_LINES} lines`, () => {
    expect(FILES.flatMap(({ path, name }) => longFunctions(path, name))).toEqual([]);
  });

  it("finds a long function when there is one (the measure itself works)", () => {
    const body = Array.from({ length: MAX_FUNCTION_LINES }, (_, i) => `  const v${i} = ${i};`).join("\n");
    const probe = join(root, "test", "node", "fixtures", "long-function.probe.ts");
    const text = `export function tooLong(): void {\n${body}\n}\n`;
    writeFileSync(probe, text);
    try {
      expect(longFunctions(probe, "probe")).toEqual([`probe:1 tooLong (${MAX_FUNCTION_LINES + 2} lines)`]);
    } finally {
      rmSync(probe);
    }
  });
});
