import { env } from "cloudflare:workers";
import { and, eq } from "drizzle-orm";
import { drizzle } from "drizzle-orm/d1";
import { SQLiteSyncDialect } from "drizzle-orm/sqlite-core";
import { beforeAll, describe, expect, it } from "vitest";
import { ApiError } from "../src/kernel/errors";
import { compileFilter, resolveProperty } from "../src/http/filter";
import { filterItems } from "./filter-items";

// A table of its own, so the rows exercise every field type and the awkward characters of the language.
const { items, schema, createTable } = filterItems("filter_items");

const ALL = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10];
const rows: (typeof items.$inferInsert)[] = [
  row(1, "Alpha", "A-1", 5, 9.99, true, "2024-01-01T00:00:00.000Z", 0, ["x"]),
  row(2, "beta", "b_2", 10, 19.5, false, "2024-06-15T12:30:00.000Z", 1, null),
  row(3, "100% off", "c%3", 0, 0, true, "2025-01-01T00:00:00.000Z", 2, []),
  row(4, "C:\\temp\\file", "D_4", null, null, false, null, 0, null),
  row(5, null, "e", 3, 2.5, true, "2024-03-01T08:00:00.000Z", null, null),
  row(6, 'say "hi"\n\tok', "under_score", 7, 7, false, "2024-12-31T23:59:59.999Z", 1, ["a", "b"]),
  row(7, "a'); DROP TABLE filter_items; --", "ALPHA", 1, 1, true, "2023-05-05T05:05:05.005Z", 2, null),
  row(8, 'x" OR 1=1 --', "alpha", 2, 2, false, "2023-01-01T00:00:00.000Z", 0, null),
  row(9, "Ünïcode ✓", "", 4, 4, true, "2026-01-01T00:00:00.000Z", 1, null),
  row(10, "%", "_", 0, 0.5, false, "2022-01-01T00:00:00.000Z", 0, null),
];

function row(
  id: number,
  name: string | null,
  code: string,
  qty: number | null,
  price: number | null,
  active: boolean,
  createdAt: string | null,
  kind: number | null,
  tags: string[] | null,
): typeof items.$inferInsert {
  return { id, name, code, qty, price, active, createdAt, kind, tags };
}

const db = drizzle(env.DB);
const dialect = new SQLiteSyncDialect();

beforeAll(async () => {
  await env.DB.exec(createTable);
  await db.insert(items).values(rows);
});

/** Ids of the rows the filter matches. */
async function ids(filter: string): Promise<number[]> {
  const found = await db.select({ id: items.id }).from(items).where(compileFilter(schema, filter)).orderBy(items.id);
  return found.map((r) => r.id);
}

function render(filter: string): { sql: string; params: unknown[] } {
  const { sql, params } = dialect.sqlToQuery(compileFilter(schema, filter));
  return { sql, params };
}

/** The ApiError the filter is rejected with. */
function rejection(filter: string): { status: number; message: string } {
  try {
    compileFilter(schema, filter);
  } catch (error) {
    if (error instanceof ApiError) return { status: error.status, message: error.message };
    throw error;
  }
  throw new Error(`filter was accepted: ${filter}`);
}

async function tableRowCount(): Promise<number | undefined> {
  const result = await env.DB.prepare("SELECT count(*) AS n FROM filter_items").first<{ n: number }>();
  return result?.n;
}

describe("comparison operators", () => {
  it("== and = are equality", async () => {
    expect(await ids("qty == 5")).toEqual([1]);
    expect(await ids("qty = 5")).toEqual([1]);
  });

  it("!= and <> are inequality and, like C#, keep rows whose value is NULL", async () => {
    expect(await ids("qty != 5")).toEqual([2, 3, 4, 5, 6, 7, 8, 9, 10]);
    expect(await ids("qty <> 5")).toEqual([2, 3, 4, 5, 6, 7, 8, 9, 10]);
  });

  it("<, <=, > and >= order numbers and never match NULL", async () => {
    expect(await ids("qty < 3")).toEqual([3, 7, 8, 10]);
    expect(await ids("qty <= 3")).toEqual([3, 5, 7, 8, 10]);
    expect(await ids("qty > 5")).toEqual([2, 6]);
    expect(await ids("qty >= 5")).toEqual([1, 2, 6]);
  });

  it("compares decimal literals and decimal columns", async () => {
    expect(await ids("price > 9.5")).toEqual([1, 2]);
    expect(await ids("price <= 0.5")).toEqual([3, 10]);
    expect(await ids("price == 2.5")).toEqual([5]);
    expect(await ids("qty > 4.5")).toEqual([1, 2, 6]);
  });

  it("accepts negative numeric literals", async () => {
    expect(await ids("qty > -1")).toEqual([1, 2, 3, 5, 6, 7, 8, 9, 10]);
    expect(await ids("price >= - 0.25")).toEqual([1, 2, 3, 5, 6, 7, 8, 9, 10]);
  });

  it("compares two properties of the same type, null == null being true as in C#", async () => {
    expect(await ids("qty == price")).toEqual([3, 4, 6, 7, 8, 9]);
    expect(await ids("qty < price")).toEqual([1, 2, 10]);
    expect(await ids("code == code")).toEqual(ALL);
  });

  it("compares two literals", async () => {
    expect(await ids('"a" == "a"')).toEqual(ALL);
    expect(await ids("1 > 2")).toEqual([]);
  });
});

describe("logical operators and precedence", () => {
  it("binds && tighter than ||", async () => {
    expect(await ids("qty == 0 || qty == 10 && active")).toEqual([3, 10]);
    expect(await ids("(qty == 0 || qty == 10) && active")).toEqual([3]);
    expect(render("(qty == 0 || qty == 10) && active").sql).toBe(
      '(("filter_items"."qty" IS ? OR "filter_items"."qty" IS ?) AND "filter_items"."active" = 1)',
    );
    expect(await ids("active && qty == 0 || qty == 10")).toEqual([2, 3]);
  });

  it("accepts and/or/not keywords in any case", async () => {
    expect(await ids("qty == 0 or qty == 10 and active")).toEqual([3, 10]);
    expect(await ids("qty == 0 OR qty == 10 AND Active")).toEqual([3, 10]);
    expect(await ids("NOT active")).toEqual([2, 4, 6, 8, 10]);
    expect(await ids("not(qty >= 5) And Not active")).toEqual([4, 8, 10]);
  });

  it("binds ! tighter than comparisons, so !x == y negates x", () => {
    expect(rejection("!qty == 5")).toEqual({
      status: 500,
      message: "Operator '!' incompatible with operand type 'Int32'",
    });
    expect(rejection('not name == "x"').message).toBe("Operator 'not' incompatible with operand type 'String'");
  });

  it("binds ! tighter than && and ||", async () => {
    expect(await ids("!active && qty >= 5")).toEqual([2, 6]);
    expect(await ids("!(active && qty >= 5)")).toEqual([2, 3, 4, 5, 6, 7, 8, 9, 10]);
    expect(await ids("!active || qty == 5")).toEqual([1, 2, 4, 6, 8, 10]);
  });

  it("makes !p the exact complement of p, NULL rows included", async () => {
    expect(await ids("!(qty > 5)")).toEqual([1, 3, 4, 5, 7, 8, 9, 10]);
    expect(await ids('!name.StartsWith("A")')).toEqual([2, 3, 4, 5, 6, 7, 8, 9, 10]);
    expect(await ids("!!(qty > 5)")).toEqual([2, 6]);
    expect(await ids("!!active")).toEqual([1, 3, 5, 7, 9]);
  });

  it("nests parentheses", async () => {
    expect(await ids("((qty == 1 || (qty == 2)) && ((!active)))")).toEqual([8]);
  });

  it("wraps the fragment in parentheses so a route scope ANDs with all of it", async () => {
    const filter = compileFilter(schema, "qty == 0 || qty == 10");
    const found = await db
      .select({ id: items.id })
      .from(items)
      .where(and(eq(items.active, true), filter));
    expect(found.map((r) => r.id)).toEqual([3]);
  });
});

describe("booleans", () => {
  it("treats a bare boolean property as = 1 and its negation as = 0", async () => {
    expect(await ids("active")).toEqual([1, 3, 5, 7, 9]);
    expect(await ids("!active")).toEqual([2, 4, 6, 8, 10]);
    expect(render("active").sql).toBe('("filter_items"."active" = 1)');
    expect(render("!active").sql).toBe('("filter_items"."active" = 0)');
  });

  it("compares boolean properties with true and false", async () => {
    expect(await ids("active == true")).toEqual([1, 3, 5, 7, 9]);
    expect(await ids("active == false")).toEqual([2, 4, 6, 8, 10]);
    expect(await ids("active != true")).toEqual([2, 4, 6, 8, 10]);
    expect(await ids("false == active")).toEqual([2, 4, 6, 8, 10]);
    expect(await ids("!active == false")).toEqual([1, 3, 5, 7, 9]);
  });

  it("accepts true and false alone as predicates", async () => {
    expect(await ids("true")).toEqual(ALL);
    expect(await ids("FALSE")).toEqual([]);
    expect(await ids("!false")).toEqual(ALL);
    expect(await ids("active && true")).toEqual([1, 3, 5, 7, 9]);
  });

  it("compares conditions as boolean values", async () => {
    expect(await ids("active == (qty > 3)")).toEqual([1, 4, 8, 9, 10]);
  });

  it("rejects ordering and numbers on booleans", () => {
    expect(rejection("active > false").message).toBe(
      "Operator '>' incompatible with operand types 'Boolean' and 'Boolean'",
    );
    expect(rejection("active == 1").message).toBe(
      "Operator '==' incompatible with operand types 'Boolean' and 'Int32'",
    );
  });
});

describe("strings", () => {
  it("compares ordinally and case-sensitively", async () => {
    expect(await ids('name == "Alpha"')).toEqual([1]);
    expect(await ids('name == "alpha"')).toEqual([]);
    expect(await ids('name != "Alpha"')).toEqual([2, 3, 4, 5, 6, 7, 8, 9, 10]);
    expect(await ids('name < "C"')).toEqual([1, 3, 10]);
    expect(await ids('code == ""')).toEqual([9]);
  });

  it('decodes \\" \\\\ \\n \\t and \\uXXXX escapes', async () => {
    expect(await ids(String.raw`name == "say \"hi\"\n\tok"`)).toEqual([6]);
    expect(await ids(String.raw`name == "C:\\temp\\file"`)).toEqual([4]);
    expect(await ids(String.raw`name == "\u00dcn\u00EFcode \u2713"`)).toEqual([9]);
  });

  it("StartsWith, EndsWith and Contains are case-sensitive", async () => {
    expect(await ids('code.StartsWith("A")')).toEqual([1, 7]);
    expect(await ids('code.StartsWith("a")')).toEqual([8]);
    expect(await ids('code.Contains("lph")')).toEqual([8]);
    expect(await ids('code.EndsWith("HA")')).toEqual([7]);
    expect(await ids('code.EndsWith("ha")')).toEqual([8]);
  });

  it("matches % and _ literally, never as LIKE wildcards", async () => {
    expect(await ids('name.Contains("%")')).toEqual([3, 10]);
    expect(await ids('code.Contains("%")')).toEqual([3]);
    expect(await ids('code.Contains("_")')).toEqual([2, 4, 6, 10]);
    expect(await ids('code.StartsWith("_")')).toEqual([10]);
    expect(await ids('code.EndsWith("_")')).toEqual([10]);
    expect(await ids('code.StartsWith("%")')).toEqual([]);
    expect(await ids('name == "%"')).toEqual([10]);
  });

  it("matches backslashes literally", async () => {
    expect(await ids(String.raw`name.Contains("\\")`)).toEqual([4]);
    expect(await ids(String.raw`name.StartsWith("C:\\")`)).toEqual([4]);
    expect(await ids(String.raw`name.EndsWith("\\file")`)).toEqual([4]);
    expect(await ids(String.raw`name.Contains("\\%")`)).toEqual([]);
  });

  it("compiles the string methods to instr/substr, not LIKE", () => {
    expect(render('name.StartsWith("a%")')).toEqual({ sql: '(instr("filter_items"."name", ?) = 1)', params: ["a%"] });
    expect(render('name.Contains("_")')).toEqual({ sql: '(instr("filter_items"."name", ?) > 0)', params: ["_"] });
    expect(render('name.EndsWith("✓x")')).toEqual({
      sql: '(substr("filter_items"."name", ?) = ?)',
      params: [-2, "✓x"],
    });
  });

  it("handles empty and over-long arguments, and never matches NULL", async () => {
    expect(await ids('code.EndsWith("")')).toEqual(ALL);
    expect(await ids('name.EndsWith("")')).toEqual([1, 2, 3, 4, 6, 7, 8, 9, 10]);
    expect(await ids('name.StartsWith("")')).toEqual([1, 2, 3, 4, 6, 7, 8, 9, 10]);
    expect(await ids('name.Contains("")')).toEqual([1, 2, 3, 4, 6, 7, 8, 9, 10]);
    expect(await ids('code.EndsWith("A-1")')).toEqual([1]);
    expect(await ids('code.EndsWith("xA-1")')).toEqual([]);
    expect(await ids('name.EndsWith("code ✓")')).toEqual([9]);
  });

  it("accepts a property as the argument", async () => {
    expect(await ids("code.EndsWith(code)")).toEqual(ALL);
    expect(await ids("name.EndsWith(code)")).toEqual([9]);
    expect(await ids("name.StartsWith(name)")).toEqual([1, 2, 3, 4, 6, 7, 8, 9, 10]);
    expect(await ids("code.Contains(name)")).toEqual([]);
  });

  it("chains ToLower and ToUpper with comparisons and methods", async () => {
    expect(await ids('code.ToLower() == "alpha"')).toEqual([7, 8]);
    expect(await ids('code.ToUpper().StartsWith("ALP")')).toEqual([7, 8]);
    expect(await ids('code.ToLower().Contains("lph")')).toEqual([7, 8]);
    expect(await ids('name.ToLower().ToUpper() == "ALPHA"')).toEqual([1]);
    expect(await ids('"ALPHA".ToLower() == code')).toEqual([8]);
  });

  it("resolves method names case-insensitively", async () => {
    expect(await ids('code.startswith("A")')).toEqual([1, 7]);
    expect(await ids('code.TOLOWER().CONTAINS("lph")')).toEqual([7, 8]);
    expect(await ids("code.length == 0")).toEqual([9]);
  });

  it("compares Length as an integer, counting characters", async () => {
    expect(await ids("name.Length > 8")).toEqual([4, 6, 7, 8, 9]);
    expect(await ids("name.Length == 9")).toEqual([9]);
    expect(await ids("code.Length == 0")).toEqual([9]);
    expect(await ids("name.ToLower().Length == 5")).toEqual([1]);
    expect(rejection('name.Length == "5"').message).toBe(
      "Operator '==' incompatible with operand types 'Int32' and 'String'",
    );
  });
});

describe("null", () => {
  it("compiles == null to IS NULL and != null to IS NOT NULL, on either side", async () => {
    expect(await ids("name == null")).toEqual([5]);
    expect(await ids("null == name")).toEqual([5]);
    expect(await ids("name != NULL")).toEqual([1, 2, 3, 4, 6, 7, 8, 9, 10]);
    expect(await ids("qty == null")).toEqual([4]);
    expect(await ids("createdAt == null")).toEqual([4]);
    expect(await ids("kind == null")).toEqual([5]);
    expect(render("name == null")).toEqual({ sql: '("filter_items"."name" IS NULL)', params: [] });
    expect(render("null <> name")).toEqual({ sql: '("filter_items"."name" IS NOT NULL)', params: [] });
  });

  it("compares json columns with null only", async () => {
    expect(await ids("tags == null")).toEqual([2, 4, 5, 7, 8, 9, 10]);
    expect(await ids("tags != null")).toEqual([1, 3, 6]);
    expect(rejection('tags == "x"').message).toBe(
      "Operator '==' incompatible with operand types 'Object' and 'String'",
    );
  });

  it("rejects ordered comparisons with null", () => {
    expect(rejection("qty > null")).toEqual({
      status: 500,
      message: "Operator '>' incompatible with operand types 'Int32' and 'Object'",
    });
  });
});

describe("enums", () => {
  it("compares with a number or a member name in any case", async () => {
    expect(await ids("kind == 1")).toEqual([2, 6, 9]);
    expect(await ids('kind == "Demo"')).toEqual([2, 6, 9]);
    expect(await ids('kind == "demo"')).toEqual([2, 6, 9]);
    expect(await ids('"TRIAL" == kind')).toEqual([3, 7]);
    expect(await ids('kind > "Standard"')).toEqual([2, 3, 6, 7, 9]);
    expect(await ids('kind != "Standard"')).toEqual([2, 3, 5, 6, 7, 9]);
    expect(render('kind == "demo"').params).toEqual([1]);
  });

  it("rejects unknown member names, decimals and booleans", () => {
    expect(rejection('kind == "Gold"')).toEqual({
      status: 500,
      message: "Requested value 'Gold' was not found in 'Kind' (Standard, Demo, Trial).",
    });
    expect(rejection("kind == 1.5").message).toBe("Operator '==' incompatible with operand types 'Kind' and 'Decimal'");
    expect(rejection("kind == true").message).toBe(
      "Operator '==' incompatible with operand types 'Kind' and 'Boolean'",
    );
  });
});

describe("dates", () => {
  it("compares with ISO date strings", async () => {
    expect(await ids('createdAt >= "2024-01-01"')).toEqual([1, 2, 3, 5, 6, 9]);
    expect(await ids('createdAt < "2024-01-01T00:00:00.001Z"')).toEqual([1, 7, 8, 10]);
    expect(await ids('createdAt > "2024-12-31T23:59:59.998Z"')).toEqual([3, 6, 9]);
    expect(await ids('"2024-01-01" == createdAt')).toEqual([1]);
  });

  it("normalizes the literal to the stored toISOString() form", async () => {
    expect(await ids('createdAt == "2024-06-15T12:30:00Z"')).toEqual([2]);
    expect(await ids('createdAt == "2024-06-15T14:30:00+02:00"')).toEqual([2]);
    expect(await ids('createdAt == "2024-06-15 12:30"')).toEqual([2]);
    expect(render('createdAt == "2024-06-15T14:30+02:00"').params).toEqual(["2024-06-15T12:30:00.000Z"]);
  });

  it("rejects unparseable dates and non-string operands", () => {
    expect(rejection('createdAt == "not a date"')).toEqual({
      status: 500,
      message: "String 'not a date' was not recognized as a valid DateTime.",
    });
    expect(rejection('createdAt == "2024-02-30"').message).toBe(
      "String '2024-02-30' was not recognized as a valid DateTime.",
    );
    expect(rejection("createdAt == 2024").message).toBe(
      "Operator '==' incompatible with operand types 'DateTime' and 'Int32'",
    );
    expect(rejection("createdAt == name").message).toBe(
      "Operator '==' incompatible with operand types 'DateTime' and 'String'",
    );
  });
});

describe("names", () => {
  it("resolves properties case-insensitively, camelCase or PascalCase", async () => {
    expect(await ids("Qty == 5")).toEqual([1]);
    expect(await ids("QTY == 5")).toEqual([1]);
    expect(await ids("CreatedAt == null")).toEqual([4]);
    expect(resolveProperty(schema, "CreatedAt")).toBe("createdAt");
    expect(resolveProperty(schema, "createdat")).toBe("createdAt");
  });

  it("answers 500 'No property or field' for an unknown property, SQL column names included", () => {
    for (const name of ["nope", "created_at", "sqlite_master", "filter_items"]) {
      expect(rejection(`${name} == 1`)).toEqual({
        status: 500,
        message: `No property or field '${name}' exists in type 'Item'`,
      });
      expect(() => resolveProperty(schema, name)).toThrow(`No property or field '${name}' exists in type 'Item'`);
    }
    expect(rejection("filter_items.name == 1").message).toBe(
      "No property or field 'filter_items' exists in type 'Item'",
    );
  });

  it("answers 500 'No applicable method' for any other member", () => {
    const cases: [string, string, string][] = [
      ["name.GetType() == null", "GetType", "String"],
      ["name.Substring(1) == null", "Substring", "String"],
      ["name.Substring == null", "Substring", "String"],
      ["name.Trim() == null", "Trim", "String"],
      ["name.Length() == 1", "Length", "String"],
      ["name.ToLower", "ToLower", "String"],
      ['name.ToLower("x") == "x"', "ToLower", "String"],
      ["name.Contains(5)", "Contains", "String"],
      ["name.Contains(null)", "Contains", "String"],
      ['name.StartsWith("a", "b")', "StartsWith", "String"],
      ["qty.ToString() == null", "ToString", "Int32"],
      ["createdAt.Length > 1", "Length", "DateTime"],
      ["active.Contains(1)", "Contains", "Boolean"],
    ];
    for (const [filter, method, type] of cases) {
      expect(rejection(filter)).toEqual({
        status: 500,
        message: `No applicable method '${method}' exists in type '${type}'`,
      });
    }
  });
});

describe("type checking", () => {
  it("rejects operands of different types with a .NET-style message", () => {
    const cases: [string, string][] = [
      ["name == 5", "Operator '==' incompatible with operand types 'String' and 'Int32'"],
      ['qty = "5"', "Operator '=' incompatible with operand types 'Int32' and 'String'"],
      ["name <> 1.5", "Operator '<>' incompatible with operand types 'String' and 'Decimal'"],
      ["qty == 3000000000 && name == qty", "Operator '==' incompatible with operand types 'String' and 'Int32'"],
      ["name == true", "Operator '==' incompatible with operand types 'String' and 'Boolean'"],
      ["name && active", "Operator '&&' incompatible with operand types 'String' and 'Boolean'"],
      ["active or qty", "Operator 'or' incompatible with operand types 'Boolean' and 'Int32'"],
    ];
    for (const [filter, message] of cases) expect(rejection(filter)).toEqual({ status: 500, message });
  });

  it("requires the whole filter to be a condition", () => {
    expect(rejection("qty")).toEqual({ status: 500, message: "Expression of type 'Boolean' expected" });
    expect(rejection('"text"').message).toBe("Expression of type 'Boolean' expected");
  });
});

describe("syntax errors", () => {
  it("answer 500 with the position (counted from 0) and Dynamic LINQ's wording", () => {
    const cases: [string, string][] = [
      ['name == "abc', "Syntax error at position 8: Unterminated string literal"],
      [String.raw`name == "abc\"`, "Syntax error at position 8: Unterminated string literal"],
      ["(qty == 1", "Syntax error at position 9: ')' or operator expected"],
      ["qty ==", "Syntax error at position 6: Expression expected"],
      ["qty == 1)", "Syntax error at position 8: Operator or end of expression expected"],
      ['name == "a" "b"', "Syntax error at position 12: Operator or end of expression expected"],
      ["and qty == 1", "Syntax error at position 0: Expression expected"],
      ["qty == 1 and", "Syntax error at position 12: Expression expected"],
      ["name.", "Syntax error at position 5: Identifier expected"],
      ['name.Contains("a"', "Syntax error at position 17: ')' or ',' expected"],
      [String.raw`name == "\q"`, String.raw`Syntax error at position 9: Invalid escape sequence '\q'`],
      [String.raw`name == "\u12"`, String.raw`Syntax error at position 9: Invalid escape sequence '\u'`],
      ["name == 'x'", "Syntax error at position 8: Invalid character '''"],
      ["qty & 1", "Syntax error at position 4: Invalid character '&'"],
      ["qty == - name", "Syntax error at position 9: Numeric literal expected"],
      ["qty == 99999999999999999999", "Syntax error at position 7: Invalid integer literal '99999999999999999999'"],
      ["price == 1e999", "Syntax error at position 9: Invalid real literal '1e999'"],
      ["", "Syntax error at position 0: Expression expected"],
      ["   ", "Syntax error at position 3: Expression expected"],
    ];
    for (const [filter, message] of cases) expect(rejection(filter)).toEqual({ status: 500, message });
  });
});

describe("injection attempts", () => {
  it("match the one row holding the payload as text, or nothing", async () => {
    expect(await ids(String.raw`name == "x\" OR 1=1 --"`)).toEqual([8]);
    expect(await ids(`name == "a'); DROP TABLE filter_items; --"`)).toEqual([7]);
    expect(await ids(`name == "' OR '1'='1"`)).toEqual([]);
    expect(await ids(`name.Contains("'); DROP TABLE filter_items; --")`)).toEqual([7]);
    expect(await ids(`"name" == "Alpha"`)).toEqual([]);
    expect(await tableRowCount()).toBe(10);
  });

  it("fail to parse when SQL is written outside a string", () => {
    const cases: [string, string][] = [
      ['name == "x" OR 1=1 --', "Syntax error at position 19: Operator or end of expression expected"],
      ["qty == 1; DROP TABLE filter_items", "Syntax error at position 8: Invalid character ';'"],
      ["name; DROP TABLE filter_items == 1", "Syntax error at position 4: Invalid character ';'"],
      ["[name] == 1", "Syntax error at position 0: Invalid character '['"],
      ['name/**/== "Alpha"', "Syntax error at position 4: Invalid character '/'"],
      ["`name` == 1", "Syntax error at position 0: Invalid character '`'"],
      ['name == "a" UNION SELECT 1', "Syntax error at position 12: Operator or end of expression expected"],
    ];
    for (const [filter, message] of cases) expect(rejection(filter)).toEqual({ status: 500, message });
  });

  it("bind every literal as a parameter and leave none of the input's text in the SQL", () => {
    const payloads = [`x\\" OR 1=1 --`, `a'); DROP TABLE filter_items; --`, `%' OR name LIKE '%`];
    for (const payload of payloads) {
      for (const template of ['name == "$"', 'name.Contains("$")', 'name.EndsWith("$")', 'code.ToLower() < "$"']) {
        const { sql, params } = render(template.replace("$", payload));
        expect(sql).not.toMatch(/DROP|1=1|'|LIKE/i);
        expect(params).toContain(payload.replace("\\", ""));
      }
    }
    expect(render("qty > 41 && price < 2.5")).toEqual({
      sql: '("filter_items"."qty" > ? AND "filter_items"."price" < ?)',
      params: [41, 2.5],
    });
    expect(render("true").params).toEqual([1]);
  });

  it("leave the table in place", async () => {
    const table = await env.DB.prepare("SELECT name FROM sqlite_master WHERE name = 'filter_items'").first();
    expect(table).not.toBeNull();
    expect(await tableRowCount()).toBe(10);
  });
});

describe("limits", () => {
  it("accepts 2,000 characters and answers 400 past them", async () => {
    const padded = (length: number) => `name == "${"x".repeat(length - 10)}"`;
    expect(padded(2000)).toHaveLength(2000);
    expect(await ids(padded(2000))).toEqual([]);
    expect(rejection(padded(2001))).toEqual({
      status: 400,
      message: "The filter is too long: at most 2000 characters are allowed.",
    });
  });

  it("accepts 50 terms and answers 400 past them, counting comparisons, methods and bare booleans", async () => {
    const tooMany = { status: 400, message: "The filter has too many terms: at most 50 conditions are allowed." };
    expect(await ids(Array(50).fill("qty == 1").join(" or "))).toEqual([7]);
    expect(rejection(Array(51).fill("qty == 1").join(" or "))).toEqual(tooMany);
    expect(rejection(Array(51).fill("active").join(" || "))).toEqual(tooMany);
    expect(rejection(Array(51).fill('name.Contains("a")').join(" && "))).toEqual(tooMany);
    expect(rejection(`${Array(25).fill("active").join(" or ")} or ${Array(26).fill("qty > 1").join(" or ")}`)).toEqual(
      tooMany,
    );
  });

  it("answers 400 past 90 bound values", async () => {
    expect(await ids(Array(45).fill('code.EndsWith("ab")').join(" || "))).toEqual([]);
    expect(render(Array(45).fill('code.EndsWith("ab")').join(" || ")).params).toHaveLength(90);
    expect(rejection(Array(46).fill('code.EndsWith("ab")').join(" || "))).toEqual({
      status: 400,
      message: "The filter has too many values: at most 90 are allowed.",
    });
  });

  it("accepts 100 nested parentheses and answers 400 past them", async () => {
    const nested = (depth: number) => `${"(".repeat(depth)}qty == 1${")".repeat(depth)}`;
    expect(await ids(nested(100))).toEqual([7]);
    expect(render(nested(100)).sql).toBe('("filter_items"."qty" IS ?)');
    const tooDeep = { status: 400, message: "The filter is nested too deeply: at most 100 levels are allowed." };
    expect(rejection(nested(101))).toEqual(tooDeep);
    expect(rejection(`${"name.Contains(".repeat(101)}"a"${")".repeat(101)}`)).toEqual(tooDeep);
  });

  it("collapses long runs of negation instead of nesting SQL", async () => {
    expect(await ids(`${"!".repeat(1000)}(qty == 1)`)).toEqual([7]);
    expect(await ids(`${"!".repeat(999)}(qty == 1)`)).toEqual([1, 2, 3, 4, 5, 6, 8, 9, 10]);
    expect(await ids(`${"!".repeat(999)}active`)).toEqual([2, 4, 6, 8, 10]);
    expect(render(`${"not ".repeat(400)}(qty > 1)`).sql).toBe('("filter_items"."qty" > ?)');
  });
});
