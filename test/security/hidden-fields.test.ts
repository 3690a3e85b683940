/**
 * Fields the answers hide stay hidden (issue "Trust at the edges"): a property no answer shows (a resource's
 * `password`, a subscription's `secret`, a signing key's `data`) cannot be filtered, sorted or selected either, so no
 * comparison, `Length`, `StartsWith` or sort on it changes a count or an order. Every list route and its hidden
 * fields come from the OpenAPI document and the entity declarations (http/entity.ts), never from a list kept here:
 * a new hidden field, or a new list route of an entity with one, is covered without touching this file.
 *
 * - A field never shown as stored (`writeOnly`, or shown masked through `show`) answers every filter, sort and
 *   select on it exactly as an unknown name does (SPEC "List conventions" rule 4: 500 with the parser's message).
 * - A field hidden on some rows (`hiddenWhen`) is NULL to filters and sorts on those rows, whatever it holds.
 * - The walk: on every list route, each property a filter accepts matches what the answer shows of each item.
 */
import { exports } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import "../../src/app/app";
import { type Entity, declaredEntity } from "../../src/http/entity";
import { BASE, admin, call, keyFor } from "../helpers";
import { SAMPLES } from "../samples";

interface Operation {
  parameters?: { name: string; in: string }[];
  responses: Record<string, { content?: Record<string, { schema: Schema }> }>;
}
interface Schema {
  $ref?: string;
  allOf?: Schema[];
  properties?: Record<string, Schema>;
  items?: Schema;
}
const document = (await (await exports.default.fetch(`${BASE}/swagger/v1/swagger.json`)).json()) as {
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, Schema> };
};

/** The properties of an object schema, its `allOf` parts merged. */
function properties(schema: Schema | undefined): Record<string, Schema> {
  return Object.assign({}, schema?.properties ?? {}, ...(schema?.allOf ?? []).map((s) => properties(s)));
}

/** The component a schema is (or starts with, in an `allOf`). */
function refName(schema: Schema | undefined): string | undefined {
  const ref = schema?.$ref ?? schema?.allOf?.find((s) => s.$ref)?.$ref;
  return ref?.split("/").pop();
}

interface ListRoute {
  path: string;
  params: string[];
  plural: string;
  total: string;
  entity: Entity;
}

/** Every list route of the document, with the declared entity whose records it answers. */
const lists: ListRoute[] = Object.entries(document.paths).flatMap(([path, item]) => {
  const op = item["get"];
  const params = (op?.parameters ?? []).filter((p) => p.in === "query").map((p) => p.name);
  if (!op || !params.includes("filter")) return [];
  const body = properties(op.responses["200"]?.content?.["application/json"]?.schema);
  const plural = Object.keys(body).find((p) => body[p]?.items !== undefined)!;
  const total = Object.keys(body).find((p) => /^total.*Count$/.test(p))!;
  const name = refName(body[plural]?.items);
  const entity = name ? declaredEntity(name) : undefined;
  if (!entity) throw new Error(`${path}: its records (${name}) are no declared entity`);
  return [{ path, params, plural, total, entity }];
});

/** Fields whose stored value no answer shows as stored: never in the record (write-only) or shown masked. */
function unshownFields(entity: Entity): string[] {
  return Object.entries(entity.fields)
    .filter(([, field]) => field.writeOnly || field.show)
    .map(([key]) => key);
}
/** Fields hidden on some rows. */
function rowHiddenFields(entity: Entity): string[] {
  return Object.entries(entity.fields)
    .filter(([, field]) => field.hiddenWhen)
    .map(([key]) => key);
}

/** A string as a filter literal: `\"` and `\\`, and `\uXXXX` for every UTF-16 unit outside printable ASCII. */
function quote(text: string): string {
  let out = "";
  for (let i = 0; i < text.length; i++) {
    const c = text.charAt(i);
    const unit = text.charCodeAt(i);
    if (c === "\\" || c === '"') out += `\\${c}`;
    else if (unit >= 0x20 && unit < 0x7f) out += c;
    else out += `\\u${unit.toString(16).padStart(4, "0")}`;
  }
  return `"${out}"`;
}

/** The GET path of a list route with its placeholders filled (a fresh parent for nested routes). */
async function listPath(route: ListRoute): Promise<string> {
  const sample = await SAMPLES[`GET ${route.path}`]!();
  return sample.path ?? route.path;
}

function list(path: string, query: Record<string, string>, key?: string) {
  const search = new URLSearchParams(query).toString();
  return key ? call("GET", `${path}?${search}`, { key }) : admin("GET", `${path}?${search}`);
}

/** Filter, sort and select probes on a property: every comparison and string member, and sort both ways. */
function probes(name: string, params: readonly string[]): Record<string, string>[] {
  const filters = [
    `${name} == "a"`,
    `${name} != "a"`,
    `${name} < "m"`,
    `${name} > "m"`,
    `${name} <= "m"`,
    `${name} >= "m"`,
    `${name} == null`,
    `${name} != null`,
    `${name}.Length > 0`,
    `${name}.Length < 100`,
    `${name}.StartsWith("a")`,
    `${name}.EndsWith("a")`,
    `${name}.Contains("a")`,
    `${name}.ToLower() == "a"`,
    `id != null && ${name}.StartsWith("v1:")`,
  ];
  return [
    ...filters.map((filter) => ({ filter })),
    ...(params.includes("sort") ? [{ sort: name }, { sort: `-${name}` }, { sort: `id,${name}` }] : []),
    ...(params.includes("select") ? [{ select: name }, { select: `id,${name}` }] : []),
  ];
}

describe("the routes and their declarations", () => {
  it("every list route answers the records of a declared entity, with the properties the declaration shows", () => {
    expect(lists.length).toBeGreaterThan(20);
    for (const route of lists) {
      const record = properties(document.components.schemas[route.entity.name]);
      expect(Object.keys(record).sort(), route.path).toEqual(Object.keys(route.entity.record.shape).sort());
      for (const key of unshownFields(route.entity)) {
        // A write-only field is in no record; a masked one is, but no filter or sort reads what it stores.
        if (route.entity.fields[key]?.writeOnly) expect(record, `${route.path} ${key}`).not.toHaveProperty(key);
        expect(route.entity.query.fields, `${route.path} ${key}`).not.toHaveProperty(key);
      }
    }
  });

  it("the hidden fields of the service are found (so the walks below have something to hold)", () => {
    const hidden = lists.flatMap((r) =>
      [...unshownFields(r.entity), ...rowHiddenFields(r.entity)].map((k) => `${r.entity.name}.${k}`),
    );
    for (const known of ["Resource.password", "Resource.data", "User.password", "WebhookSubscription.secret"])
      expect(hidden).toContain(known);
  });
});

describe.each(
  lists
    .filter((route) => unshownFields(route.entity).length > 0)
    .flatMap((route) => unshownFields(route.entity).map((key) => [`${route.path} ${key}`, route, key] as const)),
)("%s (never shown as stored)", (_name, route, key) => {
  it("answers every filter, sort and select on it as on a name that does not exist", async () => {
    const path = await listPath(route);
    const capitalized = key.charAt(0).toUpperCase() + key.slice(1);
    for (const name of [key, capitalized]) {
      const real = probes(name, route.params);
      const unknown = probes("noSuchField", route.params);
      for (const [i, query] of real.entries()) {
        // A masked field may be selected: it is shown, masked.
        if (query["select"] && !route.entity.fields[key]?.writeOnly) continue;
        const res = await list(path, query);
        const control = await list(path, unknown[i]!);
        expect(control.status, JSON.stringify(unknown[i])).toBe(500);
        expect(res.status, `${JSON.stringify(query)}: ${res.text}`).toBe(500);
        const message = (control.body["message"] as string).replace("noSuchField", name);
        expect(res.body, JSON.stringify(query)).toEqual({ ...control.body, message });
      }
    }
  });
});

describe.each(
  lists.flatMap((route) => rowHiddenFields(route.entity).map((key) => [`${route.path} ${key}`, route, key] as const)),
)("%s (hidden on some rows)", (_name, route, key) => {
  const hiddenWhen = () => route.entity.fields[key]!.hiddenWhen!;
  let path = "";
  /** Two rows that hide the field (created in this order) and one that shows it, all holding secrets. */
  const ids = { first: 0, second: 0, shown: 0 };
  const secrets = { first: "zz-first-secret", second: "aa-second-secret" };

  beforeAll(async () => {
    path = await listPath(route);
    const create = SAMPLES[`POST ${route.path}`];
    if (!create) throw new Error(`${route.path}: no POST sample to create rows with a hidden ${key}`);
    const make = async (values: Record<string, unknown>) => {
      const sample = await create();
      const base = (sample.body as Record<string, Record<string, unknown>>)[route.entity.singular];
      const body = { [route.entity.singular]: { ...base, ...values } };
      const res = await admin("POST", sample.path ?? route.path, body);
      expect(res.status, res.text).toBe(200);
      return res.body[route.entity.idName] as number;
    };
    const hiding = hiddenWhen().in[0]!;
    ids.first = await make({ [hiddenWhen().property]: hiding, [key]: secrets.first });
    ids.second = await make({ [hiddenWhen().property]: hiddenWhen().in.at(-1), [key]: secrets.second });
    ids.shown = await make({ [hiddenWhen().property]: "NotHidden", [key]: secrets.first });
  });

  const within = () => `(id == ${ids.first} || id == ${ids.second} || id == ${ids.shown})`;
  const count = async (filter: string) => {
    const res = await list(path, { filter: `${within()} && (${filter})` });
    expect(res.status, `${filter}: ${res.text}`).toBe(200);
    return res.body[route.total] as number;
  };

  it("is left out of the answers of the rows that hide it, and shown on the others", async () => {
    const res = await list(path, { filter: within() });
    const items = res.body[route.plural] as Record<string, unknown>[];
    expect(items.map((i) => i["id"])).toEqual([ids.first, ids.second, ids.shown]);
    expect(items[0]).not.toHaveProperty(key);
    expect(items[1]).not.toHaveProperty(key);
    expect(items[2]).toHaveProperty(key, secrets.first);
    if (route.params.includes("select")) {
      const selected = await list(path, { filter: within(), select: `id,${key}` });
      expect(selected.body[route.plural]).toEqual([
        { id: ids.first },
        { id: ids.second },
        { id: ids.shown, [key]: secrets.first },
      ]);
    }
  });

  it("no comparison, Length or string member on it sees what a hiding row holds", async () => {
    // Only the row that shows the field matches what it holds: the hiding rows are NULL to the filter.
    expect(await count(`${key} == ${quote(secrets.first)}`)).toBe(1);
    expect(await count(`${key} == ${quote(secrets.second)}`)).toBe(0);
    expect(await count(`${key} != null`)).toBe(1);
    expect(await count(`${key} == null`)).toBe(2);
    expect(await count(`${key}.Length > 0`)).toBe(1);
    expect(await count(`${key}.Length == ${secrets.second.length}`)).toBe(0);
    expect(await count(`${key} > ""`)).toBe(1);
    expect(await count(`${key} < "zzzzzzzz"`)).toBe(1);
    for (const prefix of ["a", "aa", "aa-", "z", "zz-"]) {
      expect(await count(`${key}.StartsWith(${quote(prefix)})`), prefix).toBe(prefix.startsWith("z") ? 1 : 0);
      expect(await count(`!${key}.StartsWith(${quote(prefix)})`), `!${prefix}`).toBe(prefix.startsWith("z") ? 2 : 3);
    }
    expect(await count(`${key}.Contains("second")`)).toBe(0);
    expect(await count(`${key}.EndsWith("secret")`)).toBe(1);
    expect(await count(`${key}.ToUpper().StartsWith("AA")`)).toBe(0);
  });

  it("no sort on it orders the hiding rows by what they hold", async () => {
    if (!route.params.includes("sort")) return;
    for (const sort of [key, `-${key}`]) {
      const res = await list(path, { filter: `${within()} && ${key} == null`, sort });
      // Both are NULL to the sort: the primary key decides, whatever their secrets would order.
      expect(
        (res.body[route.plural] as { id: number }[]).map((i) => i.id),
        sort,
      ).toEqual([ids.first, ids.second]);
    }
  });
});

describe("the issue's attack: a Sales key reading the private signing key through filter", () => {
  it("learns nothing of the stored key, byte by byte", async () => {
    // The service makes its signing key on first use.
    expect((await call("GET", "/v1/extensions/keys")).status).toBe(200);
    const sales = await keyFor(["Sales"]);
    const { env } = await import("cloudflare:workers");
    const row = await env.DB.prepare(
      "SELECT id, data FROM resources WHERE type = 'SignatureKey' AND data LIKE 'v1:%' ORDER BY id DESC",
    ).first<{
      id: number;
      data: string;
    }>();
    expect(row?.data.length).toBeGreaterThan(10);
    const probe = async (filter: string) => {
      const res = await list("/v1/resources", { filter: `id == ${row!.id} && ${filter}` }, sales);
      expect(res.status, res.text).toBe(200);
      return res.body["totalResourcesCount"] as number;
    };
    expect(await probe(`type == "SignatureKey"`)).toBe(1);
    // The true first bytes, the true length and the whole value match no more than a wrong guess does.
    for (const n of [1, 2, 3, 8]) expect(await probe(`data.StartsWith(${quote(row!.data.slice(0, n))})`)).toBe(0);
    expect(await probe(`data.Length == ${row!.data.length}`)).toBe(0);
    expect(await probe(`data == ${quote(row!.data)}`)).toBe(0);
    expect(await probe(`data >= ${quote(row!.data.slice(0, 1))}`)).toBe(0);
    expect(await probe(`data.Contains(${quote(row!.data.slice(3, 9))})`)).toBe(0);
    const answered = await list("/v1/resources", { filter: `id == ${row!.id}`, select: "id,data" }, sales);
    expect(answered.body["resources"]).toEqual([{ id: row!.id }]);
  });
});

/** A filter term saying a property is what the answer shows, or undefined when a filter cannot say it. */
function term(name: string, value: unknown): string | undefined {
  if (value === null || value === undefined) return `${name} == null`;
  if (typeof value === "string") return `${name} == ${quote(value)}`;
  if (typeof value === "boolean") return `${name} == ${value}`;
  if (typeof value === "number") return `${name} == ${value}`;
  // Arrays (json columns) compare with null only.
  if (Array.isArray(value)) return `${name} != null`;
  return undefined;
}

describe("the walk: on every list route, a filter sees each property exactly as the answer shows it", () => {
  const checked = new Set<string>();

  it.each(lists.map((route) => [route.path, route] as const))("%s", async (_path, route) => {
    // Root collections and collections created at their own path get a record through their create sample.
    const create = SAMPLES[`POST ${route.path}`];
    let path = await listPath(route);
    if (create) {
      const sample = await create();
      const res = await admin("POST", sample.path ?? route.path, sample.body);
      expect(res.status, res.text).toBeLessThan(300);
      if (sample.path && !sample.path.includes("{")) path = sample.path;
    }
    const page = await list(path, { ...(route.params.includes("sort") ? { sort: "-id" } : {}), take: "4" });
    expect(page.status, page.text).toBe(200);
    const items = page.body[route.plural] as Record<string, unknown>[];
    const queryable = Object.keys(route.entity.query.fields);
    const matches = async (item: Record<string, unknown>, terms: string[]) => {
      const id = typeof item["id"] === "string" ? quote(item["id"]) : String(item["id"]);
      const filter = [`id == ${id}`, ...terms].join(" && ");
      const res = await list(path, { filter, take: "1" });
      expect(res.status, `${filter}: ${res.text}`).toBe(200);
      return res.body[route.total] === 1;
    };
    for (const item of items) {
      const terms = queryable.flatMap((name) => term(name, item[name]) ?? []);
      // All of an item's properties at once (in slices within the filter's limits); a mismatch is then named.
      for (let i = 0; i < terms.length; i += 20) {
        const slice = terms.slice(i, i + 20);
        if (await matches(item, slice)) continue;
        for (const t of slice) expect(await matches(item, [t]), `${route.path}: ${t}`).toBe(true);
      }
      checked.add(route.entity.name);
    }
  });

  it("held an answered record of every entity with a hidden field", () => {
    const hiding = new Set(
      lists
        .filter((r) => unshownFields(r.entity).length + rowHiddenFields(r.entity).length > 0)
        .map((r) => r.entity.name),
    );
    for (const name of hiding) expect(checked, name).toContain(name);
  });
});
