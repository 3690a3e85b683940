/**
 * An entity is declared once: its fields say how each property is validated on input, documented and written on
 * output, filtered and sorted. From that one declaration come the OpenAPI record schema, the create and partial
 * update schemas (no mass assignment: read-only fields are never taken from a body), the filter whitelist and the
 * row <-> wire mapping (enumerations as numbers or names, write-only fields never returned).
 *
 * Hidden values stay hidden (issue "Trust at the edges"): filters and sorts see a property exactly as the answers
 * show it, so no comparison, `Length`, `StartsWith` or sort can read what an answer leaves out. From the same field
 * declaration: a write-only field (`writeOnly`) is in no answer, so `filter`, `sort` and `select` know it no more
 * than an unknown name; a field shown transformed (`show`: masked) is neither filtered nor sorted; a field hidden on
 * some rows (`hiddenWhen`: a signing key's `data`) is left out of those rows' answers and is NULL to filters and
 * sorts on them. Columns that are no field (digests, encrypted secrets) are never reachable.
 */
import { z } from "@hono/zod-openapi";
import { type SQL, sql } from "drizzle-orm";
import type { SQLiteColumn, SQLiteTable } from "drizzle-orm/sqlite-core";
import type { Config } from "../kernel/config";
import type { FieldType, QuerySchema } from "./filter";
import { INT32_MAX, INT32_MIN, int32 } from "./openapi";

export interface Field<Out extends z.ZodType = z.ZodType, In extends z.ZodType = z.ZodType> {
  /** How the property is compared by filters; undefined = not filterable or sortable. */
  filter?: FieldType;
  /** Wire schema of the value in responses. */
  output: Out;
  /** Schema of the value in request bodies. */
  input: In;
  /** Server-owned: never read from a body (ids, timestamps, generated codes, digests). */
  readOnly?: boolean;
  /** Accepted in bodies, never returned (passwords). */
  writeOnly?: boolean;
  /** How a stored value is shown in answers, when not as stored (secrets masked); not called for null. */
  show?: (value: unknown) => unknown;
  /** Enumeration member names, index = stored number. */
  enumNames?: readonly string[];
  /** Dates are normalized to ISO 8601 UTC with milliseconds on the way in. */
  isDate?: boolean;
  /**
   * Filter and sort on this expression instead of the same-named column: for a property whose wire value lives in
   * another table (the `lic…` id of the license a token points at by its integer key).
   */
  sql?: SQL;
  /**
   * Rows whose answers leave this property out: those whose stored `property` (another field of the entity) is one
   * of `in` (a resource's `data` when it is a signing key's private part). Filters and sorts see it as NULL there.
   */
  hiddenWhen?: HiddenWhen;
}

/** See Field.hiddenWhen. The values are the declaration's constants, written into the SQL as literals. */
export interface HiddenWhen {
  property: string;
  in: readonly (string | number)[];
}

interface Options {
  description?: string;
  readOnly?: boolean;
  writeOnly?: boolean;
}

/**
 * Characters that make a name display as something it is not: C0 and C1 controls, and the bidirectional marks,
 * embeddings, overrides and isolates (`Setup\u202Eexe.pdf` shows as `Setupfdp.exe`). As the body of a regex
 * character class; names that identify (user names, artifact file names) refuse them, free text keeps them.
 */
export const DECEPTIVE_CHARACTERS = "\\u0000-\\u001f\\u007f-\\u009f\\u061c\\u200e\\u200f\\u202a-\\u202e\\u2066-\\u2069";

function describe<T extends z.ZodType>(schema: T, description?: string): T {
  return description ? (schema.openapi({ description }) as T) : schema;
}

// 64 characters hold any ISO 8601 date-time with fractions and an offset; longer text is no date.
const isoDate = z
  .string()
  .max(64)
  .refine((s) => !Number.isNaN(Date.parse(s)), { message: "Not a valid ISO 8601 date" });

/** The named enumerations declared so far, by component name (one declaration per name, see namedEnum). */
const namedEnums = new Map<string, { names: readonly string[]; schemas: unknown }>();

/**
 * An enumeration stored as its index, named in the OpenAPI document: component `id` holds its numbers (an int32
 * `enum`, with `x-enum-varnames` naming each number, index order) and `<id>Name` its names in the same order, so
 * generators (openapi-typescript's `--enum-values`, the console and @licensing/client) take numbers and names from
 * the document instead of copying them. The same id always means the same names (a second, different declaration
 * throws at start-up).
 */
export function namedEnum<const N extends readonly [string, ...string[]]>(
  id: string,
  names: N,
): { code: ReturnType<typeof int32>; name: z.ZodEnum<{ [K in N[number]]: K }> } {
  type Schemas = ReturnType<typeof namedEnum<N>>;
  const known = namedEnums.get(id);
  if (known) {
    if (known.names.join("\n") !== names.join("\n"))
      throw new Error(`Enumeration ${id} is declared twice with different names`);
    return known.schemas as Schemas;
  }
  const numbers = names.map((_, i) => i);
  const code = int32(0, names.length - 1).openapi(id, {
    enum: numbers,
    "x-enum-varnames": [...names],
    description: names.map((n, i) => `${i} = ${n}`).join(", "),
  });
  const name = z.enum(names).openapi(`${id}Name`, { description: `The names of ${id}, in the order of its numbers.` });
  const schemas: Schemas = { code, name };
  namedEnums.set(id, { names, schemas });
  return schemas;
}

/** Field builders: one per kind of stored value. */
export const f = {
  id: (o: Options = {}) => ({
    filter: "integer" as const,
    output: describe(int32(1), o.description),
    input: int32(1),
    readOnly: true,
  }),
  /** A server-generated string key (user ids are strings in SPEC). */
  stringId: (o: Options = {}) => ({
    filter: "string" as const,
    output: describe(z.string(), o.description),
    input: z.string().max(64),
    readOnly: true,
  }),
  string: (o: Options & { min?: number; max?: number; pattern?: RegExp } = {}) => {
    let input = z.string().max(o.max ?? 4000);
    if (o.min !== undefined) input = input.min(o.min);
    if (o.pattern) input = input.regex(o.pattern);
    return {
      filter: "string" as const,
      output: describe(z.string(), o.description),
      input: describe(input, o.description),
      ...flags(o),
    };
  },
  int: (o: Options & { min?: number; max?: number } = {}) => ({
    filter: "integer" as const,
    output: describe(int32(o.min ?? INT32_MIN, o.max ?? INT32_MAX), o.description),
    input: describe(int32(o.min ?? INT32_MIN, o.max ?? INT32_MAX), o.description),
    ...flags(o),
  }),
  /** One of fixed strings, stored as text (a release's channel). */
  oneOf: <const V extends readonly [string, ...string[]]>(values: V, o: Options = {}) => ({
    filter: "string" as const,
    output: describe(z.enum(values), o.description),
    input: describe(z.enum(values), o.description),
    ...flags(o),
  }),
  /** A decimal amount (prices, totals). */
  number: (o: Options & { min?: number } = {}) => ({
    filter: "number" as const,
    output: describe(z.number(), o.description),
    input: describe(
      z
        .number()
        .min(o.min ?? -1e15)
        .max(1e15),
      o.description,
    ),
    ...flags(o),
  }),
  bool: (o: Options = {}) => ({
    filter: "boolean" as const,
    output: describe(z.boolean(), o.description),
    input: z.boolean(),
    ...flags(o),
  }),
  date: (o: Options = {}) => ({
    filter: "date" as const,
    output: describe(z.string().openapi({ format: "date-time" }), o.description),
    input: describe(isoDate.openapi({ format: "date-time" }), o.description),
    isDate: true,
    ...flags(o),
  }),
  /**
   * An enumeration stored as its index; accepted as number or name, written as number (or name, by setting). Its
   * numbers and names are the document's named enumeration `id` (see namedEnum).
   */
  enumOf: <const N extends readonly [string, ...string[]]>(id: string, names: N, o: Options = {}) => {
    const { code, name } = namedEnum(id, names);
    const wire = o.description ? z.union([code, name]).openapi({ description: o.description }) : z.union([code, name]);
    return {
      filter: { enum: names } as FieldType,
      output: wire,
      input: wire,
      enumNames: names,
      ...flags(o),
    };
  },
  /** A list of strings stored as JSON text; `values` restricts the members. */
  strings: <const V extends readonly [string, ...string[]]>(o: Options & { values?: V } = {}) => {
    const member = o.values ? z.enum(o.values) : z.string().max(256);
    return {
      filter: "json" as const,
      output: describe(z.array(member), o.description),
      input: describe(z.array(member).max(256), o.description),
      ...flags(o),
    };
  },
} satisfies Record<string, (...args: never[]) => Field>;

/**
 * What filters and sorts read for a property, or undefined when they must not know it (see the file comment):
 * nothing for a write-only or masked field, the value as answers show it otherwise.
 */
function queryColumn(
  entity: string,
  columns: Record<string, SQLiteColumn | undefined>,
  key: string,
  field: Field,
): SQLiteColumn | SQL | undefined {
  if (field.writeOnly || field.show) return undefined;
  const column = field.sql ?? columns[key];
  if (!column || !field.hiddenWhen) return column;
  const { property, in: values } = field.hiddenWhen;
  const by = columns[property];
  if (!by || values.length === 0)
    throw new Error(`Entity ${entity}: ${key} is hidden by an unknown column or no value`);
  return sql`(CASE WHEN ${by} IN (${sql.raw(values.map(sqlLiteral).join(", "))}) THEN NULL ELSE ${column} END)`;
}

/** A declared constant as an SQL literal (not a bound value: a filter's values are capped by D1's 100). */
function sqlLiteral(value: string | number): string {
  if (typeof value === "number") {
    if (!Number.isSafeInteger(value)) throw new Error(`Not an integer literal: ${value}`);
    return String(value);
  }
  return `'${value.replaceAll("'", "''")}'`;
}

function flags(o: Options): { readOnly?: boolean; writeOnly?: boolean } {
  return { ...(o.readOnly ? { readOnly: true } : {}), ...(o.writeOnly ? { writeOnly: true } : {}) };
}

type Fields = Record<string, Field>;
type OutputShape<F extends Fields> = { [K in keyof F]: z.ZodOptional<F[K]["output"]> };
type InputKeys<F extends Fields> = { [K in keyof F]: F[K]["readOnly"] extends true ? never : K }[keyof F];
type Nullable<T extends z.ZodType> = z.ZodOptional<z.ZodNullable<T>>;
type CreateShape<F extends Fields, R extends keyof F> = { [K in InputKeys<F> & R]: F[K]["input"] } & {
  [K in Exclude<InputKeys<F>, R>]: Nullable<F[K]["input"]>;
};
type IdInput<F extends Fields> = F extends { id: Field } ? F["id"]["input"] : z.ZodInt;
type UpdateShape<F extends Fields, R extends keyof F> = { id: IdInput<F> } & {
  [K in InputKeys<F> & R]: z.ZodOptional<F[K]["input"]>;
} & {
  [K in Exclude<InputKeys<F>, R>]: Nullable<F[K]["input"]>;
};

export interface EntityDefinition<F extends Fields, R extends keyof F & string> {
  /** Type name used in messages and the OpenAPI components ("Resource"). */
  name: string;
  /** Body property and id names: `{ resource }`, `resourceId`; list `resources` + `totalResourcesCount`. */
  singular: string;
  plural: string;
  table: SQLiteTable;
  fields: F;
  /** Required on create (CONTRACT section 3, bold fields). */
  required?: readonly R[];
  /**
   * A generated public identifier (a unique string column) that paths accept beside the integer id: a license's
   * `lic…` (CONTRACT section 7). See `resolveId` in http/repository.ts.
   */
  publicId?: keyof F & string;
  /**
   * Rows of this entity feed the update answers (products, releases, artifacts): the SQL naming the id of the
   * product whose release generation a write of the row `id` bumps. The repository bumps it with every insert,
   * update and delete of such a row (http/repository.ts), so no writer can forget it.
   */
  releaseGeneration?: (id: SQL) => SQL;
}

/** What the shared machinery (CRUD builder, lists, repository) needs of any entity. */
export interface Entity {
  name: string;
  singular: string;
  plural: string;
  table: SQLiteTable;
  fields: Fields;
  idName: string;
  totalName: string;
  record: z.ZodObject;
  createInput: z.ZodObject;
  updateInput: z.ZodObject;
  query: QuerySchema;
  idColumn: SQLiteColumn;
  /** The column of the public identifier paths accept beside the id (EntityDefinition.publicId). */
  publicIdColumn?: SQLiteColumn;
  /** The product whose release generation a write of the row bumps (EntityDefinition.releaseGeneration). */
  releaseGeneration?: (id: SQL) => SQL;
  /** A stored row as the API returns it (write-only fields and the row's hidden ones dropped, enums by setting). */
  toWire(row: Record<string, unknown>, config: Config): Record<string, unknown>;
  /** Validated body values as column values (enum names to numbers, dates normalized); absent keys stay absent. */
  toRow(input: Record<string, unknown>): Record<string, unknown>;
}

/** A declared entity with its schemas typed from its fields, for routes and tests. */
export interface TypedEntity<F extends Fields, R extends keyof F & string> extends Entity {
  fields: F;
  record: z.ZodObject<OutputShape<F>>;
  createInput: z.ZodObject<CreateShape<F, R>>;
  updateInput: z.ZodObject<UpdateShape<F, R>>;
  toWire(row: Record<string, unknown>, config: Config): z.infer<z.ZodObject<OutputShape<F>>>;
}

/** Every entity declared, by name: the walks over all of them (tests) read it. */
const declared = new Map<string, Entity>();

/** The declared entity of a name (its OpenAPI component name: the record schema of lists and answers). */
export function declaredEntity(name: string): Entity | undefined {
  return declared.get(name);
}

/** Declares an entity; see the file comment. */
export function defineEntity<const F extends Fields, const R extends keyof F & string = never>(
  def: EntityDefinition<F, R>,
): TypedEntity<F, R> {
  const columns = def.table as unknown as Record<string, SQLiteColumn | undefined>;
  const required = new Set<string>(def.required ?? []);
  const recordShape: Record<string, z.ZodType> = {};
  const createShape: Record<string, z.ZodType> = {};
  const updateShape: Record<string, z.ZodType> = { id: def.fields["id"]?.input ?? int32(1) };
  const queryFields: Record<string, { column: SQLiteColumn | SQL; type: FieldType }> = {};

  for (const [key, field] of Object.entries(def.fields)) {
    if (!field.writeOnly) recordShape[key] = field.output.optional();
    if (!field.readOnly) {
      createShape[key] = required.has(key) ? field.input : field.input.nullable().optional();
      updateShape[key] = required.has(key) ? field.input.optional() : field.input.nullable().optional();
    }
    const column = queryColumn(def.name, columns, key, field);
    if (column && field.filter !== undefined) queryFields[key] = { column, type: field.filter };
  }
  const idColumn = columns["id"];
  if (!idColumn) throw new Error(`Entity ${def.name}: table has no id column`);
  const publicIdColumn = def.publicId ? columns[def.publicId] : undefined;
  if (def.publicId && !publicIdColumn) throw new Error(`Entity ${def.name}: table has no ${def.publicId} column`);

  const upper = (s: string) => s.charAt(0).toUpperCase() + s.slice(1);
  const fieldEntries = Object.entries(def.fields);

  const entity: TypedEntity<F, R> = {
    ...def,
    idName: `${def.singular}Id`,
    totalName: `total${upper(def.plural)}Count`,
    record: z.object(recordShape).openapi(def.name) as unknown as z.ZodObject<OutputShape<F>>,
    createInput: z.object(createShape).openapi(`${def.name}Create`) as unknown as z.ZodObject<CreateShape<F, R>>,
    updateInput: z.object(updateShape).openapi(`${def.name}Update`) as unknown as z.ZodObject<UpdateShape<F, R>>,
    query: { entity: def.name, fields: queryFields },
    idColumn,
    ...(publicIdColumn ? { publicIdColumn } : {}),
    ...(def.releaseGeneration ? { releaseGeneration: def.releaseGeneration } : {}),
    toWire(row, config) {
      const out: Record<string, unknown> = {};
      for (const [key, field] of fieldEntries) {
        if (field.writeOnly) continue;
        const hiddenWhen = field.hiddenWhen;
        if (hiddenWhen?.in.includes(row[hiddenWhen.property] as string | number)) continue;
        let value: unknown = row[key] ?? null;
        if (field.enumNames && typeof value === "number" && config["Application:SerializeJSonEnumAsString"]) {
          value = field.enumNames[value] ?? value;
        }
        if (field.show && value !== null) value = field.show(value);
        out[key] = value;
      }
      return out as z.infer<z.ZodObject<OutputShape<F>>>;
    },
    toRow(input) {
      const out: Record<string, unknown> = {};
      for (const [key, value] of Object.entries(input)) {
        const field = def.fields[key];
        if (!field || field.readOnly || value === undefined) continue;
        if (value !== null && field.enumNames && typeof value === "string") out[key] = field.enumNames.indexOf(value);
        else if (value !== null && field.isDate && typeof value === "string") out[key] = new Date(value).toISOString();
        else out[key] = value;
      }
      return out;
    },
  };
  declared.set(def.name, entity);
  return entity;
}
