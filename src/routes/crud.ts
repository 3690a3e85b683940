/**
 * The generic CRUD builder (DESIGN house style): a resource with SPEC's list/create/update/delete shape is declared,
 * not written. Given an entity, a path, a tag and the roles of each operation, it registers
 *   GET    <path>              list conventions -> envelope + <plural> + total<Plural>Count
 *   GET    <path>/{<idParam>}  -> envelope + <singular> (only when `operations` names "get"; 404 when unknown)
 *   POST   <path>              { <singular>: {...} } -> envelope + <singular>Id
 *   PUT    <path>              { <singular>: { id, ...partial } } -> envelope
 *   DELETE <path>/{<idParam>}  -> envelope
 * with OpenAPI contracts, credential checks and zod validation. Only special cases are code, through hooks.
 * Nested collections (`/v1/users/{userId}/settings`) declare a `scope`: the parent id from the path restricts
 * every operation and is written into created rows.
 */
import { type RouteConfig, createRoute, z } from "@hono/zod-openapi";
import { type SQL, and, eq } from "drizzle-orm";
import type { Context } from "hono";
import type { SQLiteColumn } from "drizzle-orm/sqlite-core";
import type { AppEnv, Role } from "../http/app-env";
import { access } from "../auth/guard";
import {
  type Id,
  type Row,
  checkReferences,
  deleteRow,
  findById,
  insertRow,
  requireById,
  resolveId,
  updateRow,
} from "../http/repository";
import { type ServiceContext, serviceContext } from "../http/context";
import type { Entity } from "../http/entity";
import { type ListOptions, type ListParam, type ListParams, listBody, listQuery } from "../http/list";
import { Envelope, enveloped, errorResponses, int32, int32PathParam, int64, json, jsonBody } from "../http/openapi";
import { ok } from "../http/respond";
import { ApiError, notFound400 } from "../kernel/errors";
import type { Router } from "../http/router";

export type Operation = "list" | "get" | "create" | "update" | "delete";
/** The operations that change a row (what `written` hears of). */
type Write = Exclude<Operation, "list" | "get">;

export interface CrudHooks {
  /** Completes the values of a new row (generated codes, hashed secrets); may throw ApiError. */
  create?: (ctx: ServiceContext, values: Row, input: Row) => Promise<Row> | Row;
  /** Completes the changed values of an update, knowing the stored row; may throw ApiError. */
  update?: (ctx: ServiceContext, values: Row, existing: Row, input: Row) => Promise<Row> | Row;
  /** Runs before a delete (refuse with ApiError when something still depends on the row). */
  delete?: (ctx: ServiceContext, existing: Row) => Promise<void> | void;
  /** Stores the new row instead of insertRow (generated keys retried on a collision, a conditional insert). */
  insert?: (ctx: ServiceContext, values: Row) => Promise<Row>;
  /** Carries out a delete instead of deleteRow (a record that must outlive its deletion in another form). */
  remove?: (ctx: ServiceContext, id: Id, existing: Row) => Promise<void>;
  /** Stores an update instead of updateRow (a conditional UPDATE for values derived from the whole row). */
  save?: (ctx: ServiceContext, id: Id, values: Row, existing: Row) => Promise<Row>;
  /** Extra properties of the create answer besides `<singular>Id` (a secret shown once); see createdShape. */
  created?: (ctx: ServiceContext, row: Row, values: Row) => Record<string, unknown>;
  /** After any successful write (cache invalidation, generation bumps, events through ctx.waitUntil). */
  written?: (ctx: ServiceContext, operation: Write, row: Row, previous?: Row) => Promise<void> | void;
}

export interface CrudDefinition {
  entity: Entity;
  /** Collection path, e.g. `/v1/resources` or `/v1/users/{userId}/settings`. */
  path: string;
  tag: string;
  /** The roles of each operation; `get` has the list's unless given. */
  roles: Readonly<Record<Exclude<Operation, "get">, readonly Role[]>> & { readonly get?: readonly Role[] };
  /** Which operations to register (default list, create, update and delete: a GET by id is asked for by name). */
  operations?: readonly Operation[];
  /** The list parameters SPEC gives this route (default select, filter, sort, take, skip). */
  listParams?: readonly ListParam[];
  /** Path parameter naming the id on GET by id and DELETE (default `<singular>Id`). */
  idParam?: string;
  /** Nested collection (`/v1/users/{userId}/settings`): see CrudScope. */
  scope?: CrudScope;
  /** Body properties that reference other entities' ids: checked to exist (400 naming them). */
  references?: Readonly<Record<string, Entity>>;
  hooks?: CrudHooks;
  list?: Pick<ListOptions, "includes" | "decorate"> & {
    /** Rows the caller may see, by who calls (e.g. audit log entries for Administrators only); ANDed with the scope. */
    visible?: (ctx: ServiceContext) => SQL | undefined;
  };
  /** Schema of the create answer's properties beside `<singular>Id` (or replacing it), valued by hooks.created. */
  createdShape?: z.ZodRawShape;
  /**
   * The operationId of each operation registered, written out where the resource is declared, so that every
   * operationId of the OpenAPI document can be found by searching the source for it.
   */
  operationIds: Readonly<Partial<Record<Operation, string>>>;
  /** OpenAPI descriptions of operations (what else a delete removes). */
  descriptions?: Partial<Record<Operation, string>>;
  /** Summary words for the OpenAPI document, e.g. "stored resource". */
  label?: string;
}

/** What the zod validators of a generated route hand its handler. */
interface Validated {
  in: object;
  out: { json: Record<string, Row>; query: ListParams; param: Record<string, Id> };
}
type CrudHandler = (c: Context<AppEnv, string, Validated>) => Promise<Response>;

/**
 * Registers a generated route. Its schemas are built at run time from the entity, so TypeScript cannot relate
 * them to the handler's return type: this is the one place that widens the handler (its body is checked against
 * `Validated` above, and the OpenAPI contract comes from the same schemas the validators use).
 */
function register(app: Router, route: RouteConfig, handler: CrudHandler): void {
  app.openapi(route, handler as never);
}

/**
 * A collection below a parent record. The parent id comes from the path parameter `param` and must exist (400
 * naming it otherwise). Rows belong to the parent through `column`, which created rows get; `where` replaces the
 * column condition for collections related through another table (a product's orders). `parentScope` names the
 * parent's own parent in the path (`/v1/products/{productId}/releases/{releaseId}/assemblies`): the release must
 * belong to that product.
 */
export interface CrudScope {
  param: string;
  parent: Entity;
  column?: SQLiteColumn;
  where?: (parentId: Id) => SQL;
  parentScope?: { param: string; column: SQLiteColumn; parent: Entity };
}

const DEFAULT_LIST_PARAMS = ["select", "filter", "sort", "take", "skip"] as const;

/** How a missing record is refused: 400 on writes and lists (CONTRACT section 2), 404 on a GET by id. */
type Absent = (thing: string, id: Id) => ApiError;

/**
 * A GET by id names one record by its URL: when the record, or a parent the path names, does not exist (or the record
 * is under another parent), there is nothing at that URL, so 404 (SPEC "Errors": unknown route) with the same
 * `<Thing> <id> not found` message the writes give with 400.
 */
const notFound404: Absent = (thing, id) => new ApiError(404, `${thing} ${id} not found`);

/**
 * An update through a nested path keeps the row under the parent the path names: a body naming another parent (a
 * release assembly's `releaseId`) is refused with 400 naming the field, not carried out as a move to a parent the
 * path never checked; the same parent is no change and is dropped.
 */
function stayInScope(values: Row, scoped: Row, label: string): Row {
  const kept = { ...values };
  for (const [field, parentId] of Object.entries(scoped)) {
    if (kept[field] === undefined) continue;
    if (kept[field] !== parentId)
      throw new ApiError(
        400,
        `${field} cannot be changed through this path: the ${label} stays under ${field} ${String(parentId)} that the path names`,
      );
    delete kept[field];
  }
  return kept;
}

/** An int32 id in the path. */
export function intIdParam(name: string) {
  return int32PathParam(name);
}

/** The path parameter schema of an entity's id: int32 for integer keys, a string otherwise. */
export function idParamSchema(entity: Entity, name: string) {
  if (entity.publicIdColumn) {
    return z
      .string()
      .min(1)
      .max(64)
      .openapi({
        param: { name, in: "path" },
        description: `The ${entity.name}'s public identifier or its integer id.`,
      });
  }
  if (entity.fields["id"]?.filter === "integer") return intIdParam(name);
  return z
    .string()
    .min(1)
    .max(64)
    .openapi({ param: { name, in: "path" } });
}

/** What the four operations of one declared resource share: its names, its scope and its referenced ids. */
function prepare(def: CrudDefinition) {
  const { entity, scope } = def;
  const label = def.label ?? entity.name.toLowerCase();
  const idParam = def.idParam ?? entity.idName;
  const scopeParams = scope
    ? z.object({
        ...(scope.parentScope
          ? { [scope.parentScope.param]: idParamSchema(scope.parentScope.parent, scope.parentScope.param) }
          : {}),
        [scope.param]: idParamSchema(scope.parent, scope.param),
      })
    : undefined;
  const named = (op: Operation) => {
    const operationId = def.operationIds[op];
    if (!operationId) throw new Error(`crud ${def.path}: operationIds.${op} is not declared`);
    return { operationId, ...(def.descriptions?.[op] ? { description: def.descriptions[op] } : {}) };
  };

  /**
   * The parent id from the path, checked to exist (within its own parent; refused by `absent`), and the scope
   * condition it implies.
   */
  async function scopeOf(ctx: ServiceContext, params: Record<string, unknown>, absent: Absent = notFound400) {
    if (!scope) return { values: {}, where: undefined };
    const parentId = await resolveId(ctx.db, scope.parent, params[scope.param] as Id, absent);
    const outer = scope.parentScope;
    const withinOuter = outer
      ? eq(outer.column, await resolveId(ctx.db, outer.parent, params[outer.param] as Id, absent))
      : undefined;
    if (!(await findById(ctx.db, scope.parent, parentId, withinOuter))) throw absent(scope.parent.name, parentId);
    const where = scope.where ? scope.where(parentId) : scope.column ? eq(scope.column, parentId) : undefined;
    const key = scope.column ? Object.entries(entity.table).find(([, col]) => col === scope.column)?.[0] : undefined;
    return { values: key ? { [key]: parentId } : {}, where };
  }

  function references(input: Row) {
    return Object.entries(def.references ?? {})
      .filter(([field]) => input[field] !== undefined && input[field] !== null)
      .map(([field, target]) => ({ entity: target, id: input[field] as Id, field }));
  }

  return { entity, label, idParam, scopeParams, named, scopeOf, references };
}

type Prepared = ReturnType<typeof prepare>;

/** Registers the CRUD routes of one declared resource on `app`, in the order list, get, create, update, delete. */
export function crud(app: Router, def: CrudDefinition): void {
  const ops = new Set(def.operations ?? ["list", "create", "update", "delete"]);
  const prepared = prepare(def);
  if (ops.has("list")) registerList(app, def, prepared);
  if (ops.has("get")) registerGet(app, def, prepared);
  if (ops.has("create")) registerCreate(app, def, prepared);
  if (ops.has("update")) registerUpdate(app, def, prepared);
  if (ops.has("delete")) registerDelete(app, def, prepared);
}

function registerList(app: Router, def: CrudDefinition, p: Prepared): void {
  const { entity, label, scopeParams, named, scopeOf } = p;
  const query = listQuery(def.listParams ?? DEFAULT_LIST_PARAMS);
  const route = createRoute({
    method: "get",
    path: def.path,
    tags: [def.tag],
    ...named("list"),
    summary: `List ${entity.plural}`,
    ...access.key(def.roles.list),
    request: { query, ...(scopeParams ? { params: scopeParams } : {}) },
    responses: {
      200: json(
        enveloped({ [entity.plural]: z.array(entity.record), [entity.totalName]: int64() }),
        `A page of ${label} records and the count of all that match the filter`,
      ),
      ...errorResponses,
    },
  });
  register(app, route, async (c) => {
    const ctx = serviceContext(c);
    const { where: scoped } = await scopeOf(ctx, c.req.valid("param") ?? {});
    const where = and(scoped, def.list?.visible?.(ctx));
    const body = await listBody(ctx.db, entity, c.req.valid("query"), ctx.config, {
      ...def.list,
      ...(where ? { scope: where } : {}),
    });
    return ok(c, body);
  });
}

/**
 * GET <path>/{<idParam>}: the record as the list gives it (visible to the caller, decorated), under `<singular>`;
 * 404 when the path names nothing.
 */
function registerGet(app: Router, def: CrudDefinition, p: Prepared): void {
  const { entity, label, idParam, scopeParams, named, scopeOf } = p;
  const params = z.object({ ...(scopeParams?.shape ?? {}), [idParam]: idParamSchema(entity, idParam) });
  const route = createRoute({
    method: "get",
    path: `${def.path}/{${idParam}}`,
    tags: [def.tag],
    ...named("get"),
    summary: `Get a ${label}`,
    ...access.key(def.roles.get ?? def.roles.list),
    request: { params },
    responses: {
      200: json(enveloped({ [entity.singular]: entity.record }), `The ${label}`),
      404: {
        description: `No ${label} with this id${def.scope ? " under the parent the path names" : ""}.`,
        content: { "application/json": { schema: Envelope } },
      },
      ...errorResponses,
    },
  });
  register(app, route, async (c) => {
    const ctx = serviceContext(c);
    const path = c.req.valid("param");
    const { where: scoped } = await scopeOf(ctx, path, notFound404);
    const id = await resolveId(ctx.db, entity, path[idParam] as Id, notFound404);
    // What the list would show of it: the rows the caller may see, decorated as a page of one.
    const row = await findById(ctx.db, entity, id, and(scoped, def.list?.visible?.(ctx)));
    if (!row) throw notFound404(entity.name, id);
    const item = entity.toWire(row, ctx.config);
    await def.list?.decorate?.([item], [row], { db: ctx.db, config: ctx.config });
    return ok(c, { [entity.singular]: item });
  });
}

function registerCreate(app: Router, def: CrudDefinition, p: Prepared): void {
  const { entity, label, scopeParams, named, scopeOf, references } = p;
  const route = createRoute({
    method: "post",
    path: def.path,
    tags: [def.tag],
    ...named("create"),
    summary: `Create a ${label}`,
    ...access.key(def.roles.create),
    request: {
      body: jsonBody(z.object({ [entity.singular]: entity.createInput })),
      ...(scopeParams ? { params: scopeParams } : {}),
    },
    responses: {
      200: json(
        enveloped({ [entity.idName]: entity.fields["id"]?.output ?? int32(1), ...def.createdShape }),
        `The ${label} was created`,
      ),
      ...errorResponses,
    },
  });
  register(app, route, async (c) => {
    const ctx = serviceContext(c);
    const { values: scoped } = await scopeOf(ctx, c.req.valid("param") ?? {});
    const input = c.req.valid("json")[entity.singular] ?? {};
    await checkReferences(ctx.db, references(input));
    let values: Row = { ...entity.toRow(input), ...scoped };
    if (def.hooks?.create) values = await def.hooks.create(ctx, values, input);
    const row = def.hooks?.insert ? await def.hooks.insert(ctx, values) : await insertRow(ctx.db, entity, values);
    await def.hooks?.written?.(ctx, "create", row);
    return ok(c, { [entity.idName]: row["id"], ...def.hooks?.created?.(ctx, row, values) });
  });
}

function registerUpdate(app: Router, def: CrudDefinition, p: Prepared): void {
  const { entity, label, scopeParams, named, scopeOf, references } = p;
  const route = createRoute({
    method: "put",
    path: def.path,
    tags: [def.tag],
    ...named("update"),
    summary: `Update a ${label} (only the properties sent)`,
    ...access.key(def.roles.update),
    request: {
      body: jsonBody(z.object({ [entity.singular]: entity.updateInput })),
      ...(scopeParams ? { params: scopeParams } : {}),
    },
    responses: { 200: json(enveloped({}), `The ${label} was updated`), ...errorResponses },
  });
  register(app, route, async (c) => {
    const ctx = serviceContext(c);
    const { where, values: scoped } = await scopeOf(ctx, c.req.valid("param") ?? {});
    const input = c.req.valid("json")[entity.singular] ?? {};
    const id = input["id"] as Id;
    const existing = await requireById(ctx.db, entity, id, where);
    await checkReferences(ctx.db, references(input));
    let values = stayInScope(entity.toRow(input), scoped, label);
    if (def.hooks?.update) values = await def.hooks.update(ctx, values, existing, input);
    const save =
      def.hooks?.save ??
      ((_ctx: ServiceContext, rowId: Id, changes: Row) => updateRow(ctx.db, entity, rowId, changes, where));
    const row = Object.keys(values).length > 0 ? await save(ctx, id, values, existing) : existing;
    await def.hooks?.written?.(ctx, "update", row, existing);
    return ok(c, {});
  });
}

function registerDelete(app: Router, def: CrudDefinition, p: Prepared): void {
  const { entity, label, idParam, scopeParams, named, scopeOf } = p;
  const params = z.object({ ...(scopeParams?.shape ?? {}), [idParam]: idParamSchema(entity, idParam) });
  const route = createRoute({
    method: "delete",
    path: `${def.path}/{${idParam}}`,
    tags: [def.tag],
    ...named("delete"),
    summary: `Delete a ${label}`,
    ...access.key(def.roles.delete),
    request: { params },
    responses: { 200: json(enveloped({}), `The ${label} was deleted`), ...errorResponses },
  });
  register(app, route, async (c) => {
    const ctx = serviceContext(c);
    const path = c.req.valid("param");
    const { where } = await scopeOf(ctx, path);
    const id = await resolveId(ctx.db, entity, path[idParam] as Id);
    const existing = await requireById(ctx.db, entity, id, where);
    await def.hooks?.delete?.(ctx, existing);
    if (def.hooks?.remove) await def.hooks.remove(ctx, id, existing);
    else await deleteRow(ctx.db, entity, id, where);
    await def.hooks?.written?.(ctx, "delete", existing, existing);
    return ok(c, {});
  });
}
