/**
 * Property tests of the filter compiler (src/http/filter.ts), with fast-check. Expressions are drawn from the filter
 * grammar as a small syntax tree, written out with random spacing, keyword spellings, casing and escapes, compiled,
 * and run against random rows in a real D1 table. An in-memory evaluator of the documented semantics (C# null rules,
 * ordinal comparisons, ASCII-only ToLower/ToUpper, a negation that is the exact complement) says which rows must
 * match. Properties:
 *   - the SQL is parameterized: it consists only of column names, operators, SQL keywords and `?`, and every string
 *     literal of the filter is a bound value;
 *   - the rows D1 returns are exactly the rows the evaluator accepts;
 *   - any text at all, valid or not, compiles or fails with the parser's ApiError (400 or 500), and whatever compiles
 *     runs in D1.
 * String values here hold no NUL: SQLite's length() stops at one (test/security/unicode.test.ts covers NUL).
 */
import { env } from "cloudflare:workers";
import { drizzle } from "drizzle-orm/d1";
import { SQLiteSyncDialect } from "drizzle-orm/sqlite-core";
import fc from "fast-check";
import { beforeAll, describe, expect, it } from "vitest";
import { ApiError } from "../../src/kernel/errors";
import { compileFilter } from "../../src/http/filter";
import { KINDS, filterItems } from "../filter-items";

const { items, schema, createTable } = filterItems("prop_items");

const db = drizzle(env.DB);
const dialect = new SQLiteSyncDialect();

beforeAll(async () => {
  await env.DB.exec(createTable);
});

// ---------------------------------------------------------------------------------------------------------------
// Values: small pools, so that random literals often meet random row values.

/** Characters with a meaning somewhere: LIKE wildcards, escapes, quotes, SQL comment and statement marks, non-ASCII. */
const CHARS = ["a", "b", "A", "B", "%", "_", "\\", "'", '"', "-", ";", " ", "é", "É", "ß", "😀", "\n", "(", ")", "="];
const textValue = fc.array(fc.constantFrom(...CHARS), { maxLength: 4 }).map((cs) => cs.join(""));
const INSTANTS = [
  "2024-01-01T00:00:00.000Z",
  "2024-06-15T12:30:00.000Z",
  "2025-01-01T00:00:00.000Z",
  "2023-12-31T23:59:59.999Z",
];
const PRICES = [-1.5, 0, 0.5, 2.5, 3];

interface Row {
  id: number;
  name: string | null;
  code: string;
  qty: number | null;
  price: number | null;
  active: boolean;
  createdAt: string | null;
  kind: number | null;
}

const rowsArb = fc
  .array(
    fc.record({
      name: fc.option(textValue, { nil: null }),
      code: textValue,
      qty: fc.option(fc.integer({ min: -5, max: 5 }), { nil: null }),
      price: fc.option(fc.constantFrom(...PRICES), { nil: null }),
      active: fc.boolean(),
      createdAt: fc.option(fc.constantFrom(...INSTANTS), { nil: null }),
      kind: fc.option(fc.integer({ min: 0, max: 2 }), { nil: null }),
    }),
    { maxLength: 8 },
  )
  .map((rows) => rows.map((r, i): Row => ({ id: i + 1, ...r })));

// ---------------------------------------------------------------------------------------------------------------
// The syntax tree, its text and its meaning

type CmpOp = "==" | "!=" | "<" | "<=" | ">" | ">=";
type StrExpr = { prop: "name" | "code"; fold: "none" | "lower" | "upper" };
type NumExpr = { kind: "prop"; prop: "qty" | "price" } | { kind: "length"; of: StrExpr };

type Cond =
  | { t: "str"; left: StrExpr; op: CmpOp; value: string | null; flipped: boolean }
  | { t: "method"; left: StrExpr; method: "StartsWith" | "EndsWith" | "Contains"; value: string }
  | { t: "num"; left: NumExpr; op: CmpOp; value: number | null; flipped: boolean }
  | { t: "date"; op: CmpOp; value: string | null; form: "iso" | "day" }
  | { t: "enum"; op: CmpOp; value: number | string | null }
  | { t: "flag"; compare: boolean | null; negatedCompare: boolean }
  | { t: "not"; inner: Cond; keyword: boolean }
  | { t: "and" | "or"; left: Cond; right: Cond; keyword: boolean };

const cmpOp = fc.constantFrom<CmpOp>("==", "!=", "<", "<=", ">", ">=");
const strExpr = fc.record({
  prop: fc.constantFrom("name" as const, "code" as const),
  fold: fc.constantFrom("none" as const, "lower" as const, "upper" as const),
});
const numExpr: fc.Arbitrary<NumExpr> = fc.oneof(
  fc.record({ kind: fc.constant("prop" as const), prop: fc.constantFrom("qty" as const, "price" as const) }),
  fc.record({ kind: fc.constant("length" as const), of: strExpr }),
);
/** `== null` and `!= null` only: an ordered comparison with null is a type error. */
const nullable = <T>(op: CmpOp, value: fc.Arbitrary<T>) =>
  op === "==" || op === "!=" ? fc.option(value, { nil: null }) : value;

const atom: fc.Arbitrary<Cond> = fc.oneof(
  fc
    .tuple(strExpr, cmpOp, fc.boolean())
    .chain(([left, op, flipped]) =>
      nullable(op, textValue).map((value): Cond => ({ t: "str", left, op, value, flipped })),
    ),
  fc.record({
    t: fc.constant("method" as const),
    left: strExpr,
    method: fc.constantFrom("StartsWith" as const, "EndsWith" as const, "Contains" as const),
    value: textValue,
  }),
  fc
    .tuple(numExpr, cmpOp, fc.boolean())
    .chain(([left, op, flipped]) =>
      nullable(op, fc.oneof(fc.integer({ min: -6, max: 6 }), fc.constantFrom(...PRICES))).map(
        (value): Cond => ({ t: "num", left, op, value, flipped }),
      ),
    ),
  fc
    .tuple(cmpOp, fc.constantFrom("iso" as const, "day" as const))
    .chain(([op, form]) =>
      nullable(op, fc.constantFrom(...INSTANTS, "2024-06-15T00:00:00.000Z")).map(
        (value): Cond => ({ t: "date", op, value, form }),
      ),
    ),
  cmpOp.chain((op) =>
    nullable(op, fc.oneof(fc.integer({ min: 0, max: 2 }), fc.constantFrom(...KINDS, "demo", "TRIAL"))).map(
      (value): Cond => ({ t: "enum", op, value }),
    ),
  ),
  fc.record({
    t: fc.constant("flag" as const),
    compare: fc.option(fc.boolean(), { nil: null }),
    negatedCompare: fc.boolean(),
  }),
);

const condition: fc.Arbitrary<Cond> = fc.letrec<{ cond: Cond }>((tie) => ({
  cond: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    atom,
    fc.record({ t: fc.constant("not" as const), inner: tie("cond"), keyword: fc.boolean() }),
    fc.record({
      t: fc.constantFrom("and" as const, "or" as const),
      left: tie("cond"),
      right: tie("cond"),
      keyword: fc.boolean(),
    }),
  ),
})).cond;

/** How the text is spelled: spaces, casing of names and keywords, `=`/`<>` for `==`/`!=`, `\u` escapes. */
interface Spelling {
  space: () => string;
  upperKeywords: boolean;
  pascalNames: boolean;
  altOperators: boolean;
  escapeUnicode: boolean;
}
const spelling: fc.Arbitrary<Spelling> = fc
  .record({
    spaces: fc.array(fc.constantFrom(" ", "  ", "\t", "\n "), { minLength: 1, maxLength: 4 }),
    upperKeywords: fc.boolean(),
    pascalNames: fc.boolean(),
    altOperators: fc.boolean(),
    escapeUnicode: fc.boolean(),
  })
  .map(({ spaces, ...rest }) => {
    let i = 0;
    return { ...rest, space: () => spaces[i++ % spaces.length]! };
  });

function quote(value: string, s: Spelling): string {
  let out = '"';
  for (const ch of value) {
    if (ch === '"' || ch === "\\") out += `\\${ch}`;
    else if (ch === "\n") out += "\\n";
    else if (s.escapeUnicode && ch.length === 1 && ch.charCodeAt(0) > 0x7e)
      out += `\\u${ch.charCodeAt(0).toString(16).padStart(4, "0")}`;
    else out += ch;
  }
  return `${out}"`;
}

const name = (n: string, s: Spelling) => (s.pascalNames ? n.charAt(0).toUpperCase() + n.slice(1) : n);
const op = (o: CmpOp, s: Spelling) => (s.altOperators && o === "==" ? "=" : s.altOperators && o === "!=" ? "<>" : o);
const flippedOp: Record<CmpOp, CmpOp> = { "==": "==", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<=" };

function strText(e: StrExpr, s: Spelling): string {
  const base = name(e.prop, s);
  return e.fold === "none"
    ? base
    : `${base}.${s.pascalNames ? (e.fold === "lower" ? "ToLower" : "ToUpper") : e.fold === "lower" ? "tolower" : "toupper"}()`;
}
const numText = (e: NumExpr, s: Spelling) =>
  e.kind === "prop" ? name(e.prop, s) : `${strText(e.of, s)}.${s.pascalNames ? "Length" : "length"}`;
const numLiteral = (n: number, s: Spelling) => (n < 0 ? `-${s.space()}${-n}` : String(n));

function render(c: Cond, s: Spelling): string {
  const sp = s.space;
  const compare = (left: string, o: CmpOp, right: string, flipped: boolean) =>
    flipped ? `${right}${sp()}${op(flippedOp[o], s)}${sp()}${left}` : `${left}${sp()}${op(o, s)}${sp()}${right}`;
  switch (c.t) {
    case "str":
      return compare(
        strText(c.left, s),
        c.op,
        c.value === null ? "null" : quote(c.value, s),
        c.flipped && c.value !== null,
      );
    case "method":
      return `${strText(c.left, s)}.${s.pascalNames ? c.method : c.method.toLowerCase()}(${sp()}${quote(c.value, s)}${sp()})`;
    case "num":
      return compare(
        numText(c.left, s),
        c.op,
        c.value === null ? "null" : numLiteral(c.value, s),
        c.flipped && c.value !== null,
      );
    case "date":
      return compare(
        name("createdAt", s),
        c.op,
        c.value === null
          ? "null"
          : quote(c.form === "day" && c.value.endsWith("T00:00:00.000Z") ? c.value.slice(0, 10) : c.value, s),
        false,
      );
    case "enum":
      return compare(
        name("kind", s),
        c.op,
        c.value === null ? "null" : typeof c.value === "number" ? String(c.value) : quote(c.value, s),
        false,
      );
    case "flag":
      return c.compare === null
        ? name("active", s)
        : `${name("active", s)}${sp()}${c.negatedCompare ? op("!=", s) : op("==", s)}${sp()}${c.compare}`;
    case "not":
      return c.keyword ? `${s.upperKeywords ? "NOT" : "not"} (${render(c.inner, s)})` : `!(${render(c.inner, s)})`;
    case "and":
    case "or": {
      const joiner = c.keyword ? (s.upperKeywords ? c.t.toUpperCase() : c.t) : c.t === "and" ? "&&" : "||";
      return `(${render(c.left, s)})${sp()}${joiner}${sp()}(${render(c.right, s)})`;
    }
  }
}

/** Ordinal order: by code point, as SQLite's BINARY collation orders UTF-8. */
function ordinal(a: string, b: string): number {
  const x = [...a].map((ch) => ch.codePointAt(0)!);
  const y = [...b].map((ch) => ch.codePointAt(0)!);
  for (let i = 0; i < Math.min(x.length, y.length); i++) if (x[i] !== y[i]) return x[i]! - y[i]!;
  return x.length - y.length;
}

/** C#'s comparison with SQL's null rules: `==`/`!=` are null-safe, ordered operators are false on null. */
function holds(
  o: CmpOp,
  left: string | number | boolean | null,
  right: string | number | boolean | null,
  order: (a: never, b: never) => number,
): boolean {
  if (o === "==") return left === right;
  if (o === "!=") return left !== right;
  if (left === null || right === null) return false;
  const d = order(left as never, right as never);
  return o === "<" ? d < 0 : o === "<=" ? d <= 0 : o === ">" ? d > 0 : d >= 0;
}

const asciiFold = (v: string, upper: boolean) =>
  v.replace(upper ? /[a-z]/g : /[A-Z]/g, (ch) => (upper ? ch.toUpperCase() : ch.toLowerCase()));
function strValue(e: StrExpr, row: Row): string | null {
  const v = row[e.prop];
  if (v === null || e.fold === "none") return v;
  return asciiFold(v, e.fold === "upper");
}
function numValue(e: NumExpr, row: Row): number | null {
  if (e.kind === "prop") return row[e.prop];
  const v = strValue(e.of, row);
  return v === null ? null : [...v].length;
}

function evaluate(c: Cond, row: Row): boolean {
  switch (c.t) {
    case "str":
      return holds(c.op, strValue(c.left, row), c.value, ordinal);
    case "method": {
      const v = strValue(c.left, row);
      if (v === null) return false;
      return c.method === "StartsWith"
        ? v.startsWith(c.value)
        : c.method === "EndsWith"
          ? v.endsWith(c.value)
          : v.includes(c.value);
    }
    case "num":
      return holds(c.op, numValue(c.left, row), c.value, (a: number, b: number) => a - b);
    case "date":
      return holds(c.op, row.createdAt, c.value, ordinal);
    case "enum": {
      const value =
        typeof c.value === "string"
          ? KINDS.findIndex((k) => k.toLowerCase() === (c.value as string).toLowerCase())
          : c.value;
      return holds(c.op, row.kind, value, (a: number, b: number) => a - b);
    }
    case "flag":
      if (c.compare === null) return row.active;
      return c.negatedCompare ? row.active !== c.compare : row.active === c.compare;
    case "not":
      return !evaluate(c.inner, row);
    case "and":
      return evaluate(c.left, row) && evaluate(c.right, row);
    case "or":
      return evaluate(c.left, row) || evaluate(c.right, row);
  }
}

function stringLiterals(c: Cond): string[] {
  switch (c.t) {
    case "str":
      return c.value === null ? [] : [c.value];
    case "method":
      return [c.value];
    case "not":
      return stringLiterals(c.inner);
    case "and":
    case "or":
      return [...stringLiterals(c.left), ...stringLiterals(c.right)];
    default:
      return [];
  }
}

// ---------------------------------------------------------------------------------------------------------------
// SQL shape

const SQL_TOKEN =
  /^(\s+|"prop_items"\."(id|name|code|qty|price|active|created_at|kind)"|\?|<=|>=|[()=<>,-]|IS\b|NOT\b|NULL\b|AND\b|OR\b|instr\b|substr\b|length\b|lower\b|upper\b|coalesce\b|[01]\b)/;

/** The part of `sql` that is not a column, operator, keyword or placeholder: empty for a parameterized fragment. */
function unexpectedSql(sql: string): string {
  let rest = sql;
  for (let m = SQL_TOKEN.exec(rest); m && rest.length > 0; m = SQL_TOKEN.exec(rest)) rest = rest.slice(m[0].length);
  return rest;
}

async function storeRows(rows: readonly Row[]): Promise<void> {
  await env.DB.exec("DELETE FROM prop_items");
  if (rows.length > 0) await db.insert(items).values([...rows]);
}

describe("the filter compiler", () => {
  it("writes parameterized SQL: no literal text, every string literal bound", () => {
    fc.assert(
      fc.property(condition, spelling, (cond, s) => {
        const text = render(cond, s);
        const { sql, params } = dialect.sqlToQuery(compileFilter(schema, text));
        expect(unexpectedSql(sql), `${text}\n${sql}`).toBe("");
        // An empty literal has no text to leak (EndsWith("") compiles to IS NOT NULL, binding nothing).
        for (const literal of stringLiterals(cond).filter((l) => l !== "")) expect(params, text).toContain(literal);
      }),
      { numRuns: 400 },
    );
  });

  it("matches exactly the rows the documented semantics accept", async () => {
    await fc.assert(
      fc.asyncProperty(rowsArb, condition, spelling, async (rows, cond, s) => {
        await storeRows(rows);
        const text = render(cond, s);
        const found = await db
          .select({ id: items.id })
          .from(items)
          .where(compileFilter(schema, text))
          .orderBy(items.id);
        const expected = rows.filter((row) => evaluate(cond, row)).map((row) => row.id);
        expect(
          found.map((r) => r.id),
          `${text}\nrows: ${JSON.stringify(rows)}`,
        ).toEqual(expected);
      }),
      { numRuns: 200 },
    );
  }, 60_000);

  const TOKENS = [
    "name",
    "code",
    "qty",
    "price",
    "active",
    "createdAt",
    "kind",
    "nope",
    "(",
    ")",
    ".",
    ",",
    "!",
    "not",
    "&&",
    "||",
    "and",
    "or",
    "==",
    "=",
    "!=",
    "<>",
    "<",
    "<=",
    ">",
    ">=",
    "-",
    '"a"',
    '"%"',
    '"\\u0041"',
    '"\\q"',
    '"',
    "1",
    "2.5",
    "1e400",
    "99999999999999999999",
    "true",
    "false",
    "null",
    "StartsWith",
    "EndsWith",
    "Contains",
    "ToLower",
    "ToUpper",
    "Length",
    "GetType",
    "'",
    ";",
    "--",
    "$",
    "\u0000",
    "é",
  ];
  const anyText = fc.oneof(
    fc.string({ unit: "binary", maxLength: 120 }),
    fc.array(fc.constantFrom(...TOKENS), { maxLength: 30 }).map((ts) => ts.join(" ")),
    fc.array(fc.constantFrom(...TOKENS), { maxLength: 30 }).map((ts) => ts.join("")),
    fc.tuple(condition, spelling, fc.nat(), fc.string({ unit: "binary", maxLength: 3 })).map(([cond, s, at, junk]) => {
      const valid = render(cond, s);
      const i = at % (valid.length + 1);
      return valid.slice(0, i) + junk + valid.slice(i + 1);
    }),
  );

  it("compiles any text or refuses it with the parser's ApiError; what compiles is parameterized and runs", async () => {
    await fc.assert(
      fc.asyncProperty(anyText, async (text) => {
        let fragment;
        try {
          fragment = compileFilter(schema, text);
        } catch (error) {
          expect(error, JSON.stringify(text)).toBeInstanceOf(ApiError);
          expect([400, 500], JSON.stringify(text)).toContain((error as ApiError).status);
          return;
        }
        expect(unexpectedSql(dialect.sqlToQuery(fragment).sql), JSON.stringify(text)).toBe("");
        await db.select({ id: items.id }).from(items).where(fragment);
      }),
      { numRuns: 400 },
    );
  }, 60_000);
});
