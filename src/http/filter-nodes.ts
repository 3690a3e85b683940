/**
 * The filter language's typed operands and what they compile to (filter.ts): properties, literals, flags and
 * predicates; comparisons with C#'s typing (a string never equals a number, dates compare as ISO text, enum members by
 * name or number); string members (Contains, StartsWith, EndsWith, ToLower, ToUpper, Length).
 */
import { type SQL, sql } from "drizzle-orm";
import type { SQLiteColumn } from "drizzle-orm/sqlite-core";
import { type ApiError, RefusalError } from "../kernel/errors";

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

/** A boolean column or literal: kept as a value so `!flag` can stay `= 0` (NULL matches neither, like `bool?`). */
export interface FlagNode {
  kind: "flag";
  sql: SQL;
  negated: boolean;
}
/** A condition. `nullable` when its SQL can yield NULL, which a WHERE treats as false. */
export interface PredicateNode {
  kind: "predicate";
  sql: SQL;
  nullable: boolean;
  /** The condition this one negates, so `!!p` gives p back instead of nesting SQL. */
  negates?: PredicateNode;
  /** An AND/OR list, which needs parentheses inside another one. */
  compound?: boolean;
}
/** A non-boolean column or computed value (ToLower, Length). */
export interface ValueNode {
  kind: "value";
  type: Exclude<FieldType, "boolean">;
  typeName: string;
  sql: SQL;
}
export interface LiteralNode {
  kind: "literal";
  value: string | number;
  typeName: "String" | "Int32" | "Int64" | "Decimal";
}
export interface NullNode {
  kind: "null";
}
export type Node = FlagNode | PredicateNode | ValueNode | LiteralNode | NullNode;

export type Category = "string" | "numeric" | "boolean" | "date" | "enum" | "json" | "null";

export function category(node: Node): Category {
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
export function typeName(node: Node): string {
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

export function fieldTypeName(key: string, type: Exclude<FieldType, "boolean">): string {
  if (typeof type === "object") return key.charAt(0).toUpperCase() + key.slice(1);
  const names = { string: "String", integer: "Int32", number: "Decimal", date: "DateTime", json: "Object" } as const;
  return names[type];
}

export function propertyNode(key: string, field: QueryField): Node {
  const column = sql`${field.column}`;
  if (field.type === "boolean") return { kind: "flag", sql: column, negated: false };
  return { kind: "value", type: field.type, typeName: fieldTypeName(key, field.type), sql: column };
}

export function numberNode(value: number, integer: boolean): LiteralNode {
  const int32 = value >= -2147483648 && value <= 2147483647;
  return { kind: "literal", value, typeName: integer ? (int32 ? "Int32" : "Int64") : "Decimal" };
}

/** The SQL of an operand used as a value (compared, or passed to a function). Always one SQL primary. */
export function valueSql(node: Node): SQL {
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

export function negate(node: FlagNode | PredicateNode): Node {
  if (node.kind === "flag") return { ...node, negated: !node.negated };
  if (node.negates) return node.negates;
  const inner = node.nullable ? sql`coalesce(${node.sql}, 0)` : sql`(${node.sql})`;
  return { kind: "predicate", sql: sql`NOT ${inner}`, nullable: false, negates: node };
}

// ---------------------------------------------------------------------------------------------------------------
// Comparisons

/** SQL of each comparison operator; `==`/`!=` are null-safe like C# (`IS`), the others are false on NULL. */
export interface Comparison {
  sql: string;
  nullSafe: boolean;
}
export const COMPARISONS: Readonly<Record<string, Comparison>> = {
  "==": { sql: "IS", nullSafe: true },
  "=": { sql: "IS", nullSafe: true },
  "!=": { sql: "IS NOT", nullSafe: true },
  "<>": { sql: "IS NOT", nullSafe: true },
  "<": { sql: "<", nullSafe: false },
  "<=": { sql: "<=", nullSafe: false },
  ">": { sql: ">", nullSafe: false },
  ">=": { sql: ">=", nullSafe: false },
};

export function incompatible(op: string, left: Node, right: Node): ApiError {
  return new RefusalError(
    500,
    `Operator '${op}' incompatible with operand types '${typeName(left)}' and '${typeName(right)}'`,
  );
}

/** `left op right` as a condition; `op` is the operator as written, for messages. */
export function compare(op: string, operator: Comparison, left: Node, right: Node): PredicateNode {
  if (left.kind === "null" || right.kind === "null") {
    if (!operator.nullSafe) throw incompatible(op, left, right);
    const other = left.kind === "null" ? right : left;
    return { kind: "predicate", sql: sql`${valueSql(other)} ${sql.raw(operator.sql)} NULL`, nullable: false };
  }
  const [l, r] = comparable(op, operator.nullSafe, left, right);
  return { kind: "predicate", sql: sql`${l} ${sql.raw(operator.sql)} ${r}`, nullable: !operator.nullSafe };
}

/** The two operands' SQL once their types agree, converting a literal to a date or enum column's storage. */
export function comparable(op: string, equality: boolean, left: Node, right: Node): [SQL, SQL] {
  if (sameType(equality, left, right)) return [valueSql(left), valueSql(right)];
  const rightAsLeft = convertLiteral(left, right);
  if (rightAsLeft) return [valueSql(left), rightAsLeft];
  const leftAsRight = convertLiteral(right, left);
  if (leftAsRight) return [leftAsRight, valueSql(right)];
  throw incompatible(op, left, right);
}

/** Booleans have no order; json columns compare with null only. */
export function sameType(equality: boolean, left: Node, right: Node): boolean {
  const kind = category(left);
  if (kind !== category(right) || kind === "json") return false;
  if (kind === "boolean") return equality;
  if (kind === "enum") return typeName(left) === typeName(right);
  return true;
}

/** A literal compared with a date column is an ISO date; with an enum column a member number or name. */
export function convertLiteral(target: Node, literal: Node): SQL | undefined {
  if (target.kind !== "value" || literal.kind !== "literal") return undefined;
  const { type } = target;
  if (type === "date" && typeof literal.value === "string") return sql`${isoDate(literal.value)}`;
  if (typeof type !== "object") return undefined;
  if (typeof literal.value === "string") return sql`${enumMember(type.enum, target.typeName, literal.value)}`;
  return literal.typeName === "Decimal" ? undefined : sql`${literal.value}`;
}

/** yyyy-MM-dd, optionally with [T ]HH:mm[:ss[.fff…]] and Z or an offset. */
export const ISO_DATE =
  /^(\d{4})-(\d{2})-(\d{2})(?:[T ]([01]\d|2[0-3]):([0-5]\d)(?::([0-5]\d)(\.\d+)?)?(Z|[+-]\d{2}:\d{2})?)?$/i;

/** Dates are stored as `toISOString()` text, so a literal is normalized to the same form (UTC when no offset). */
export function isoDate(text: string): string {
  const m = ISO_DATE.exec(text.trim());
  if (!m || !isCalendarDay(Number(m[1]), Number(m[2]), Number(m[3]))) throw invalidDate(text);
  const time = `${m[4] ?? "00"}:${m[5] ?? "00"}:${m[6] ?? "00"}${(m[7] ?? "").slice(0, 4)}`;
  const date = new Date(`${m[1]}-${m[2]}-${m[3]}T${time}${(m[8] ?? "Z").toUpperCase()}`);
  if (Number.isNaN(date.getTime())) throw invalidDate(text);
  return date.toISOString();
}

/** Date parsing rolls 2024-02-30 over to March 1; .NET rejects it. */
export function isCalendarDay(year: number, month: number, day: number): boolean {
  const date = new Date(0);
  date.setUTCFullYear(year, month - 1, day);
  return date.getUTCMonth() === month - 1 && date.getUTCDate() === day;
}

export function invalidDate(text: string): ApiError {
  return new RefusalError(500, `String '${text}' was not recognized as a valid DateTime.`);
}

export function enumMember(members: readonly string[], enumName: string, name: string): number {
  const index = members.findIndex((member) => member.toLowerCase() === name.toLowerCase());
  if (index < 0) {
    throw new RefusalError(500, `Requested value '${name}' was not found in '${enumName}' (${members.join(", ")}).`);
  }
  return index;
}

// ---------------------------------------------------------------------------------------------------------------
// String members

export function noMethod(name: string, type: string): ApiError {
  return new RefusalError(500, `No applicable method '${name}' exists in type '${type}'`);
}

/** `target.name` (args undefined) or `target.name(args)`; only strings have members. */
export function member(target: Node, name: string, args: Node[] | undefined): Node {
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
export function stringPredicate(method: string, text: SQL, arg: Node): SQL | undefined {
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
export function endsWith(text: SQL, arg: Node): SQL {
  if (arg.kind === "literal" && typeof arg.value === "string") {
    const length = [...arg.value].length;
    return length === 0 ? sql`${text} IS NOT NULL` : sql`substr(${text}, ${-length}) = ${arg.value}`;
  }
  const suffix = valueSql(arg);
  return sql`substr(${text}, -length(${suffix}), length(${suffix})) = ${suffix}`;
}
