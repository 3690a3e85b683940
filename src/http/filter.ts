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
import { SQLiteSyncDialect } from "drizzle-orm/sqlite-core";
// A filter the parser refuses answers 500 (SPEC list rule 4) but is the client's mistake, not a failure of the
// service: RefusalError keeps it out of the service log.
import { ApiError, RefusalError } from "../kernel/errors";
import { type Token, syntaxError, tokenize } from "./filter-lexer";
import {
  type FlagNode,
  type PredicateNode,
  type Node,
  typeName,
  propertyNode,
  numberNode,
  negate,
  COMPARISONS,
  incompatible,
  compare,
  member,
  type QueryField,
  type QuerySchema,
} from "./filter-nodes";

export type { FieldType, QueryField, QuerySchema } from "./filter-nodes";

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
