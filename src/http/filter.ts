/**
 * The `filter` parameter of list routes (CONTRACT section 2 "Filter language"): a safe subset of System.Linq.Dynamic
 * compiled to one parameterized SQL fragment over a per-entity whitelist of columns.
 *
 * Grammar (keywords, property and method names case-insensitive):
 *   filter     := or
 *   or         := and (("||" | "or") and)*
 *   and        := comparison (("&&" | "and") comparison)*
 *   comparison := unary (("==" | "=" | "!=" | "<>" | "<" | "<=" | ">" | ">=") unary)*
 *   unary      := ("!" | "not") unary | postfix
 *   postfix    := primary ("." identifier ["(" [or ("," or)*] ")"])*
 *   primary    := string | number | "-" number | true | false | null | property | "(" or ")"
 *
 * Semantics follow C#: string comparisons are ordinal (SQLite BINARY, and `instr`/`substr` rather than LIKE, which
 * ignores ASCII case and treats `%` `_` as wildcards); `==`/`!=` are null-safe (`IS`/`IS NOT`), so `name != "x"`
 * keeps rows whose name is NULL; an ordered comparison or a string method on NULL is false; `!p` is the exact
 * complement of a condition p. A boolean column is a C# `bool?`: `flag` is `= 1` and `!flag` is `= 0`.
 * Known gaps: ToLower/ToUpper fold ASCII only and Length counts code points, not UTF-16 units.
 */
import { type SQL, sql } from "drizzle-orm";
import { type SQLiteColumn, SQLiteSyncDialect } from "drizzle-orm/sqlite-core";
// A filter the parser refuses answers 500 (SPEC list rule 4) but is the client's mistake, not a failure of the
// service: RefusalError keeps it out of the service log.
import { ApiError, RefusalError } from "../kernel/errors";

/** How a property is stored and compared. Dates are ISO-8601 UTC text "yyyy-MM-ddTHH:mm:ss.fffZ"; booleans 0/1
 * integers; enums integers (compare with a number or with a member name string, case-insensitive); "json" columns
 * (arrays) can only be compared with null. */
export type FieldType = "string" | "integer" | "number" | "boolean" | "date" | "json" | { enum: readonly string[] };
export interface QueryField {
  /** A column, or an SQL expression for a property stored elsewhere (see Field.sql in entity.ts). */
  column: SQLiteColumn | SQL;
  type: FieldType;
}
/** `entity` is the type name used in messages ("Resource"); `fields` keys are camelCase property names. */
export interface QuerySchema {
  entity: string;
  fields: Readonly<Record<string, QueryField>>;
}

/** Longest filter accepted, in characters (CONTRACT section 2). */
export const MAX_FILTER_LENGTH = 2000;
/** Most terms (comparisons, method predicates, bare boolean predicates) in one filter (CONTRACT section 2). */
export const MAX_FILTER_TERMS = 50;
/** Most bound values: D1 binds at most 100 per statement and the route adds its scope and paging. */
export const MAX_FILTER_PARAMETERS = 90;
/** Deepest nesting of parentheses and method arguments: the parser recurses once per level. */
export const MAX_FILTER_DEPTH = 100;

/** Resolves a property name case-insensitively (camelCase or PascalCase) to its key in schema.fields; throws
 * RefusalError(500, `No property or field '<name>' exists in type '<Entity>'`) when unknown.
 * Used by sort and select too. */
export function resolveProperty(schema: QuerySchema, name: string): string {
  return findField(schema, name)[0];
}

/** Compiles a filter expression to ONE parenthesized, fully parameterized drizzle SQL fragment.
 * Errors: 400 past the limits above; 500 for unknown names, type errors and syntax errors
 * ("Syntax error at position N: ...", N counted from 0 like Dynamic LINQ). */
export function compileFilter(schema: QuerySchema, input: string): SQL {
  if (input.length > MAX_FILTER_LENGTH) {
    throw new ApiError(400, `The filter is too long: at most ${MAX_FILTER_LENGTH} characters are allowed.`);
  }
  const fragment = sql`(${new Parser(schema, tokenize(input)).parse()})`;
  if (dialect.sqlToQuery(fragment).params.length > MAX_FILTER_PARAMETERS) {
    throw new ApiError(400, `The filter has too many values: at most ${MAX_FILTER_PARAMETERS} are allowed.`);
  }
  return fragment;
}

const dialect = new SQLiteSyncDialect();

function findField(schema: QuerySchema, name: string): [string, QueryField] {
  const wanted = name.toLowerCase();
  const entry = Object.entries(schema.fields).find(([key]) => key.toLowerCase() === wanted);
  if (!entry) throw new RefusalError(500, `No property or field '${name}' exists in type '${schema.entity}'`);
  return entry;
}

// ---------------------------------------------------------------------------------------------------------------
// Tokens

type Token =
  | { kind: "identifier" | "operator" | "end"; text: string; pos: number }
  | { kind: "string"; text: string; value: string; pos: number }
  | { kind: "number"; text: string; value: number; integer: boolean; pos: number };

/** Longest first, so `<=` is not read as `<` then `=`. */
const OPERATORS = ["==", "!=", "<>", "<=", ">=", "&&", "||", "=", "<", ">", "!", "(", ")", ".", ",", "-"];
const ESCAPES: Readonly<Record<string, string>> = {
  '"': '"',
  "\\": "\\",
  "'": "'",
  n: "\n",
  t: "\t",
  r: "\r",
  "0": "\0",
};
const IDENTIFIER = /[A-Za-z_][A-Za-z0-9_]*/y;
const NUMBER = /\d+(\.\d+)?([eE][+-]?\d+)?/y;

function syntaxError(pos: number, message: string): ApiError {
  return new RefusalError(500, `Syntax error at position ${pos}: ${message}`);
}

function tokenize(input: string): Token[] {
  const tokens: Token[] = [];
  let pos = 0;
  while (pos < input.length) {
    if (/\s/.test(input.charAt(pos))) {
      pos++;
      continue;
    }
    const token = readToken(input, pos);
    tokens.push(token);
    pos += token.text.length;
  }
  tokens.push({ kind: "end", text: "", pos });
  return tokens;
}

function readToken(input: string, pos: number): Token {
  const c = input.charAt(pos);
  if (c === '"') return readString(input, pos);
  const identifier = matchAt(IDENTIFIER, input, pos);
  if (identifier) return { kind: "identifier", text: identifier, pos };
  const number = matchAt(NUMBER, input, pos);
  if (number) return readNumber(number, pos);
  const operator = OPERATORS.find((op) => input.startsWith(op, pos));
  if (operator) return { kind: "operator", text: operator, pos };
  throw syntaxError(pos, `Invalid character '${c}'`);
}

function matchAt(pattern: RegExp, input: string, pos: number): string | undefined {
  pattern.lastIndex = pos;
  return pattern.exec(input)?.[0];
}

function readNumber(text: string, pos: number): Token {
  const value = Number(text);
  const integer = /^\d+$/.test(text);
  if (integer ? !Number.isSafeInteger(value) : !Number.isFinite(value)) {
    throw syntaxError(pos, `Invalid ${integer ? "integer" : "real"} literal '${text}'`);
  }
  return { kind: "number", text, value, integer, pos };
}

function readString(input: string, start: number): Token {
  let value = "";
  let pos = start + 1;
  while (pos < input.length) {
    const c = input.charAt(pos);
    if (c === '"') return { kind: "string", text: input.slice(start, pos + 1), value, pos: start };
    if (c !== "\\") {
      value += c;
      pos++;
      continue;
    }
    const [decoded, length] = readEscape(input, pos);
    value += decoded;
    pos += length;
  }
  throw syntaxError(start, "Unterminated string literal");
}

/** The escape at `pos` (a backslash): its character and how many input characters it spans. */
function readEscape(input: string, pos: number): [string, number] {
  const c = input.charAt(pos + 1);
  const simple = ESCAPES[c];
  if (simple !== undefined) return [simple, 2];
  const hex = input.slice(pos + 2, pos + 6);
  if (c === "u" && /^[0-9A-Fa-f]{4}$/.test(hex)) return [String.fromCharCode(parseInt(hex, 16)), 6];
  if (pos + 1 >= input.length) throw syntaxError(pos, "Unterminated string literal");
  throw syntaxError(pos, `Invalid escape sequence '\\${c}'`);
}

// ---------------------------------------------------------------------------------------------------------------
// Typed operands

/** A boolean column or literal: kept as a value so `!flag` can stay `= 0` (NULL matches neither, like `bool?`). */
interface FlagNode {
  kind: "flag";
  sql: SQL;
  negated: boolean;
}
/** A condition. `nullable` when its SQL can yield NULL, which a WHERE treats as false. */
interface PredicateNode {
  kind: "predicate";
  sql: SQL;
  nullable: boolean;
  /** The condition this one negates, so `!!p` gives p back instead of nesting SQL. */
  negates?: PredicateNode;
  /** An AND/OR list, which needs parentheses inside another one. */
  compound?: boolean;
}
/** A non-boolean column or computed value (ToLower, Length). */
interface ValueNode {
  kind: "value";
  type: Exclude<FieldType, "boolean">;
  typeName: string;
  sql: SQL;
}
interface LiteralNode {
  kind: "literal";
  value: string | number;
  typeName: "String" | "Int32" | "Int64" | "Decimal";
}
interface NullNode {
  kind: "null";
}
type Node = FlagNode | PredicateNode | ValueNode | LiteralNode | NullNode;

type Category = "string" | "numeric" | "boolean" | "date" | "enum" | "json" | "null";

function category(node: Node): Category {
  switch (node.kind) {
    case "flag":
    case "predicate":
      return "boolean";
    case "null":
      return "null";
    case "literal":
      return node.typeName === "String" ? "string" : "numeric";
    case "value":
      if (typeof node.type === "object") return "enum";
      return node.type === "integer" || node.type === "number" ? "numeric" : node.type;
  }
}

/** The .NET type name messages use. */
function typeName(node: Node): string {
  switch (node.kind) {
    case "flag":
    case "predicate":
      return "Boolean";
    case "null":
      return "Object";
    default:
      return node.typeName;
  }
}

function fieldTypeName(key: string, type: Exclude<FieldType, "boolean">): string {
  if (typeof type === "object") return key.charAt(0).toUpperCase() + key.slice(1);
  const names = { string: "String", integer: "Int32", number: "Decimal", date: "DateTime", json: "Object" } as const;
  return names[type];
}

function propertyNode(key: string, field: QueryField): Node {
  const column = sql`${field.column}`;
  if (field.type === "boolean") return { kind: "flag", sql: column, negated: false };
  return { kind: "value", type: field.type, typeName: fieldTypeName(key, field.type), sql: column };
}

function numberNode(value: number, integer: boolean): LiteralNode {
  const int32 = value >= -2147483648 && value <= 2147483647;
  return { kind: "literal", value, typeName: integer ? (int32 ? "Int32" : "Int64") : "Decimal" };
}

/** The SQL of an operand used as a value (compared, or passed to a function). Always one SQL primary. */
function valueSql(node: Node): SQL {
  switch (node.kind) {
    case "literal":
      return sql`${node.value}`;
    case "null":
      return sql`NULL`;
    case "value":
      return node.sql;
    case "flag":
      return node.negated ? sql`(NOT ${node.sql})` : node.sql;
    case "predicate":
      return node.nullable ? sql`coalesce(${node.sql}, 0)` : sql`(${node.sql})`;
  }
}

function negate(node: FlagNode | PredicateNode): Node {
  if (node.kind === "flag") return { ...node, negated: !node.negated };
  if (node.negates) return node.negates;
  const inner = node.nullable ? sql`coalesce(${node.sql}, 0)` : sql`(${node.sql})`;
  return { kind: "predicate", sql: sql`NOT ${inner}`, nullable: false, negates: node };
}

// ---------------------------------------------------------------------------------------------------------------
// Comparisons

/** SQL of each comparison operator; `==`/`!=` are null-safe like C# (`IS`), the others are false on NULL. */
interface Comparison {
  sql: string;
  nullSafe: boolean;
}
const COMPARISONS: Readonly<Record<string, Comparison>> = {
  "==": { sql: "IS", nullSafe: true },
  "=": { sql: "IS", nullSafe: true },
  "!=": { sql: "IS NOT", nullSafe: true },
  "<>": { sql: "IS NOT", nullSafe: true },
  "<": { sql: "<", nullSafe: false },
  "<=": { sql: "<=", nullSafe: false },
  ">": { sql: ">", nullSafe: false },
  ">=": { sql: ">=", nullSafe: false },
};

function incompatible(op: string, left: Node, right: Node): ApiError {
  return new RefusalError(
    500,
    `Operator '${op}' incompatible with operand types '${typeName(left)}' and '${typeName(right)}'`,
  );
}

/** `left op right` as a condition; `op` is the operator as written, for messages. */
function compare(op: string, operator: Comparison, left: Node, right: Node): PredicateNode {
  if (left.kind === "null" || right.kind === "null") {
    if (!operator.nullSafe) throw incompatible(op, left, right);
    const other = left.kind === "null" ? right : left;
    return { kind: "predicate", sql: sql`${valueSql(other)} ${sql.raw(operator.sql)} NULL`, nullable: false };
  }
  const [l, r] = comparable(op, operator.nullSafe, left, right);
  return { kind: "predicate", sql: sql`${l} ${sql.raw(operator.sql)} ${r}`, nullable: !operator.nullSafe };
}

/** The two operands' SQL once their types agree, converting a literal to a date or enum column's storage. */
function comparable(op: string, equality: boolean, left: Node, right: Node): [SQL, SQL] {
  if (sameType(equality, left, right)) return [valueSql(left), valueSql(right)];
  const rightAsLeft = convertLiteral(left, right);
  if (rightAsLeft) return [valueSql(left), rightAsLeft];
  const leftAsRight = convertLiteral(right, left);
  if (leftAsRight) return [leftAsRight, valueSql(right)];
  throw incompatible(op, left, right);
}

/** Booleans have no order; json columns compare with null only. */
function sameType(equality: boolean, left: Node, right: Node): boolean {
  const kind = category(left);
  if (kind !== category(right) || kind === "json") return false;
  if (kind === "boolean") return equality;
  if (kind === "enum") return typeName(left) === typeName(right);
  return true;
}

/** A literal compared with a date column is an ISO date; with an enum column a member number or name. */
function convertLiteral(target: Node, literal: Node): SQL | undefined {
  if (target.kind !== "value" || literal.kind !== "literal") return undefined;
  const { type } = target;
  if (type === "date" && typeof literal.value === "string") return sql`${isoDate(literal.value)}`;
  if (typeof type !== "object") return undefined;
  if (typeof literal.value === "string") return sql`${enumMember(type.enum, target.typeName, literal.value)}`;
  return literal.typeName === "Decimal" ? undefined : sql`${literal.value}`;
}

/** yyyy-MM-dd, optionally with [T ]HH:mm[:ss[.fff…]] and Z or an offset. */
const ISO_DATE =
  /^(\d{4})-(\d{2})-(\d{2})(?:[T ]([01]\d|2[0-3]):([0-5]\d)(?::([0-5]\d)(\.\d+)?)?(Z|[+-]\d{2}:\d{2})?)?$/i;

/** Dates are stored as `toISOString()` text, so a literal is normalized to the same form (UTC when no offset). */
function isoDate(text: string): string {
  const m = ISO_DATE.exec(text.trim());
  if (!m || !isCalendarDay(Number(m[1]), Number(m[2]), Number(m[3]))) throw invalidDate(text);
  const time = `${m[4] ?? "00"}:${m[5] ?? "00"}:${m[6] ?? "00"}${(m[7] ?? "").slice(0, 4)}`;
  const date = new Date(`${m[1]}-${m[2]}-${m[3]}T${time}${(m[8] ?? "Z").toUpperCase()}`);
  if (Number.isNaN(date.getTime())) throw invalidDate(text);
  return date.toISOString();
}

/** Date parsing rolls 2024-02-30 over to March 1; .NET rejects it. */
function isCalendarDay(year: number, month: number, day: number): boolean {
  const date = new Date(0);
  date.setUTCFullYear(year, month - 1, day);
  return date.getUTCMonth() === month - 1 && date.getUTCDate() === day;
}

function invalidDate(text: string): ApiError {
  return new RefusalError(500, `String '${text}' was not recognized as a valid DateTime.`);
}

function enumMember(members: readonly string[], enumName: string, name: string): number {
  const index = members.findIndex((member) => member.toLowerCase() === name.toLowerCase());
  if (index < 0) {
    throw new RefusalError(500, `Requested value '${name}' was not found in '${enumName}' (${members.join(", ")}).`);
  }
  return index;
}

// ---------------------------------------------------------------------------------------------------------------
// String members

function noMethod(name: string, type: string): ApiError {
  return new RefusalError(500, `No applicable method '${name}' exists in type '${type}'`);
}

/** `target.name` (args undefined) or `target.name(args)`; only strings have members. */
function member(target: Node, name: string, args: Node[] | undefined): Node {
  const type = typeName(target);
  const method = name.toLowerCase();
  if (category(target) !== "string") throw noMethod(name, type);
  const text = valueSql(target);
  if (!args) {
    if (method !== "length") throw noMethod(name, type);
    return { kind: "value", type: "integer", typeName: "Int32", sql: sql`length(${text})` };
  }
  if (method === "tolower" || method === "toupper") {
    if (args.length > 0) throw noMethod(name, type);
    const folded = method === "tolower" ? sql`lower(${text})` : sql`upper(${text})`;
    return { kind: "value", type: "string", typeName: "String", sql: folded };
  }
  const [arg, ...extra] = args;
  if (!arg || extra.length > 0 || category(arg) !== "string") throw noMethod(name, type);
  const predicate = stringPredicate(method, text, arg);
  if (!predicate) throw noMethod(name, type);
  return { kind: "predicate", sql: predicate, nullable: true };
}

/** StartsWith/EndsWith/Contains without LIKE: ordinal, and `%` `_` `\` in the argument are plain characters. */
function stringPredicate(method: string, text: SQL, arg: Node): SQL | undefined {
  const needle = valueSql(arg);
  switch (method) {
    case "startswith":
      return sql`instr(${text}, ${needle}) = 1`;
    case "contains":
      return sql`instr(${text}, ${needle}) > 0`;
    case "endswith":
      return endsWith(text, arg);
    default:
      return undefined;
  }
}

/** substr(x, 0) is the whole string, so an empty suffix needs its own case. A literal binds its length (in code
 * points, like SQLite) rather than the text three times. */
function endsWith(text: SQL, arg: Node): SQL {
  if (arg.kind === "literal" && typeof arg.value === "string") {
    const length = [...arg.value].length;
    return length === 0 ? sql`${text} IS NOT NULL` : sql`substr(${text}, ${-length}) = ${arg.value}`;
  }
  const suffix = valueSql(arg);
  return sql`substr(${text}, -length(${suffix}), length(${suffix})) = ${suffix}`;
}

// ---------------------------------------------------------------------------------------------------------------
// Parser

class Parser {
  private index = 0;
  private terms = 0;
  private depth = 0;
  private readonly end: Token;

  constructor(
    private readonly schema: QuerySchema,
    private readonly tokens: readonly Token[],
  ) {
    this.end = tokens[tokens.length - 1] ?? { kind: "end", text: "", pos: 0 };
  }

  /** The whole filter as a condition. */
  parse(): SQL {
    const node = this.or();
    if (this.token.kind !== "end") throw syntaxError(this.token.pos, "Operator or end of expression expected");
    if (node.kind !== "flag" && node.kind !== "predicate") {
      throw new RefusalError(500, "Expression of type 'Boolean' expected");
    }
    return this.condition(node).sql;
  }

  private get token(): Token {
    return this.tokens[this.index] ?? this.end;
  }

  private next(): Token {
    const token = this.token;
    this.index++;
    return token;
  }

  private isOperator(...texts: string[]): boolean {
    return this.token.kind === "operator" && texts.includes(this.token.text);
  }

  private isKeyword(keyword: string): boolean {
    return this.token.kind === "identifier" && this.token.text.toLowerCase() === keyword;
  }

  private expect(text: string, message: string): void {
    if (!this.isOperator(text)) throw syntaxError(this.token.pos, message);
    this.index++;
  }

  private countTerm(): void {
    this.terms++;
    if (this.terms > MAX_FILTER_TERMS) {
      throw new ApiError(400, `The filter has too many terms: at most ${MAX_FILTER_TERMS} conditions are allowed.`);
    }
  }

  /** A boolean operand of and/or/not or of the whole filter; a bare flag is a term of its own. */
  private condition(node: FlagNode | PredicateNode): PredicateNode {
    if (node.kind === "predicate") return node;
    this.countTerm();
    const test = node.negated ? sql`${node.sql} = 0` : sql`${node.sql} = 1`;
    return { kind: "predicate", sql: test, nullable: false };
  }

  private or(): Node {
    return this.logical(() => this.and(), "||", "or", "OR");
  }

  private and(): Node {
    return this.logical(() => this.comparison(), "&&", "and", "AND");
  }

  /** One level of `a op b op c`, flattened into one list. */
  private logical(operand: () => Node, symbol: string, keyword: string, joiner: string): Node {
    const first = operand();
    const parts: PredicateNode[] = [];
    let left = first;
    while (this.isOperator(symbol) || this.isKeyword(keyword)) {
      const op = this.next().text;
      const right = operand();
      if (left.kind !== "flag" && left.kind !== "predicate") throw incompatible(op, left, right);
      if (right.kind !== "flag" && right.kind !== "predicate") throw incompatible(op, left, right);
      if (parts.length === 0) parts.push(this.condition(left));
      parts.push(this.condition(right));
      left = right;
    }
    if (parts.length === 0) return first;
    const nullable = parts.some((part) => part.nullable);
    const joined = sql.join(
      parts.map((part) => (part.compound ? sql`(${part.sql})` : part.sql)),
      sql.raw(` ${joiner} `),
    );
    return { kind: "predicate", sql: joined, nullable, compound: true };
  }

  private comparison(): Node {
    let left = this.unary();
    for (;;) {
      const operator = this.token.kind === "operator" ? COMPARISONS[this.token.text] : undefined;
      if (!operator) return left;
      const op = this.next().text;
      left = compare(op, operator, left, this.unary());
      this.countTerm();
    }
  }

  /** A loop rather than recursion: a long run of `!` must not exhaust the stack. */
  private unary(): Node {
    const ops: string[] = [];
    while (this.isOperator("!") || this.isKeyword("not")) ops.push(this.next().text);
    let node = this.postfix();
    for (const op of ops.reverse()) {
      if (node.kind !== "flag" && node.kind !== "predicate") {
        throw new RefusalError(500, `Operator '${op}' incompatible with operand type '${typeName(node)}'`);
      }
      node = negate(node);
    }
    return node;
  }

  private postfix(): Node {
    let node = this.primary();
    while (this.isOperator(".")) {
      this.index++;
      const name = this.token;
      if (name.kind !== "identifier") throw syntaxError(name.pos, "Identifier expected");
      this.index++;
      node = member(node, name.text, this.isOperator("(") ? this.nested(() => this.arguments()) : undefined);
      if (node.kind === "predicate") this.countTerm();
    }
    return node;
  }

  private arguments(): Node[] {
    this.index++;
    const args: Node[] = [];
    if (this.isOperator(")")) {
      this.index++;
      return args;
    }
    args.push(this.or());
    while (this.isOperator(",")) {
      this.index++;
      args.push(this.or());
    }
    this.expect(")", "')' or ',' expected");
    return args;
  }

  private primary(): Node {
    const token = this.token;
    if (token.kind === "string") {
      this.index++;
      return { kind: "literal", value: token.value, typeName: "String" };
    }
    if (token.kind === "number") {
      this.index++;
      return numberNode(token.value, token.integer);
    }
    if (token.kind === "identifier") return this.identifier();
    if (this.isOperator("(")) return this.nested(() => this.parenthesized());
    if (this.isOperator("-")) return this.negativeNumber();
    throw syntaxError(token.pos, "Expression expected");
  }

  private parenthesized(): Node {
    this.index++;
    const inner = this.or();
    this.expect(")", "')' or operator expected");
    return inner;
  }

  private nested<T>(parse: () => T): T {
    this.depth++;
    if (this.depth > MAX_FILTER_DEPTH) {
      throw new ApiError(400, `The filter is nested too deeply: at most ${MAX_FILTER_DEPTH} levels are allowed.`);
    }
    const result = parse();
    this.depth--;
    return result;
  }

  /** Minus applies to numeric literals only: there is no arithmetic. */
  private negativeNumber(): Node {
    this.index++;
    const token = this.token;
    if (token.kind !== "number") throw syntaxError(token.pos, "Numeric literal expected");
    this.index++;
    return numberNode(-token.value, token.integer);
  }

  private identifier(): Node {
    const token = this.next();
    switch (token.text.toLowerCase()) {
      case "true":
        return { kind: "flag", sql: sql`${1}`, negated: false };
      case "false":
        return { kind: "flag", sql: sql`${0}`, negated: false };
      case "null":
        return { kind: "null" };
      case "and":
      case "or":
      case "not":
        throw syntaxError(token.pos, "Expression expected");
      default:
        return propertyNode(...findField(this.schema, token.text));
    }
  }
}
