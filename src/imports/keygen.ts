/**
 * Keygen's reader (CONTRACT section 16): the JSON:API documents Keygen's list endpoints answer (products, policies,
 * licenses, machines, users; https://keygen.sh/docs/api/) become ImportRows, one a license in the order of its pages.
 * `data` is `{ products?, policies?, licenses, machines?, users? }`, each a list document `{ data: [...], links?, meta? }`
 * or an array of them (one a page). A license takes its product (code, else name) from its own product relationship,
 * else from its policy's; its licensing mode, limits, edition and (without an `expiry` attribute) its expiry from its
 * policy, with its own maxMachines/maxProcesses first; its customer from its owner (older API versions: user); its
 * machines from the machines naming it. Pure: no D1, no HTTP; never throws for bad data.
 */
import {
  type ImportCustomer,
  type ImportMachine,
  type ImportProblem,
  type ImportRow,
  legacyKeyProblem,
  type ReadSource,
} from "./rows";

type Json = Record<string, unknown>;
/** Records a problem of what is being read: the field (a row field, or a path into the data) and why. */
type Add = (field: string, message: string) => void;
type Problem = readonly [field: string, message: string];

const KINDS = ["products", "policies", "licenses", "machines", "users"] as const;
type Kind = (typeof KINDS)[number];

/** The longest edition (UTF-16 code units, as the CSV reader counts): a longer policy name is cut (and reported). */
const EDITION_MAX = 64;
/** Keygen's counts (maxMachines, maxProcesses, duration) are 4-byte integers, as is the licenses' maxClients. */
const COUNT_MAX = 2_147_483_647;
/** The last instant an expiry may be (the end of year 9999); the first is the Unix epoch. */
const LAST_INSTANT = Date.UTC(9999, 11, 31, 23, 59, 59, 999);
/** ISO 8601 as Keygen writes timestamps ("2026-01-01T00:00:00.000Z"), also a date alone or another offset. */
const ISO_8601 = /^(\d{4})-(\d{2})-(\d{2})(?:[Tt ](\d{2}):(\d{2})(?::(\d{2})(\.\d+)?)?([Zz]|[+-]\d{2}:?\d{2})?)?$/;
/** Policy attributes of Keygen with no equivalent here when set (not null), reported with their value. */
const POLICY_LIMITS = ["maxCores", "maxUses", "maxMemory", "maxDisk", "maxUsers"];
/** Policy strategies of Keygen with no equivalent here when other than Keygen's default. */
const POLICY_STRATEGIES: Record<string, string> = {
  expirationStrategy: "RESTRICT_ACCESS",
  overageStrategy: "NO_OVERAGE",
};

/** A JSON:API resource as read, with where it stands in the data (e.g. "licenses[1].data[3]"). */
interface Resource {
  id: string;
  at: string;
  raw: unknown;
  attributes: Json;
  relationships: Json;
}

/** A policy as licenses take it. */
interface Policy {
  edition?: string;
  floating: boolean;
  maxMachines?: number | null;
  maxProcesses?: number | null;
  duration?: number | null;
  productId?: string;
  attributes: Json;
  problems: Problem[];
}

/** What a product (its code), a user (the customer) or machines give the licenses naming them, with its problems. */
interface Given<T> {
  value: T;
  problems: Problem[];
}

interface Context {
  products: Map<string, Given<string | undefined>>;
  policies: Map<string, Policy>;
  users: Map<string, Given<ImportCustomer>>;
  machines: Map<string, Given<ImportMachine[]>>;
  unsupported: Set<string>;
}

/** The rows of Keygen's documents, the problems of those it cannot take, and what has no equivalent here. */
export function readKeygen(data: unknown): ReadSource {
  const errors: ImportProblem[] = [];
  const unsupported = new Set<string>();
  if (!isJson(data)) return { rows: [], errors: [{ row: 0, field: "(root)", message: WHOLE_SHAPE }], unsupported: [] };
  for (const key of Object.keys(data))
    if (!(KINDS as readonly string[]).includes(key)) unsupported.add(`${key}: not read (no equivalent here)`);
  if (data["licenses"] === undefined)
    errors.push({ row: 0, field: "licenses", message: `No licenses: ${WHOLE_SHAPE}` });
  const licenses = resourcesOf(data, "licenses", (row, field, message) => errors.push({ row, field, message }));
  const present = licenses.filter((r) => r !== undefined);
  const [products, policies, users, machines] = (["products", "policies", "users", "machines"] as const).map((kind) =>
    indexOf(data, kind, errors),
  ) as [Map<string, Resource>, Map<string, Resource>, Map<string, Resource>, Map<string, Resource>];
  const ctx: Context = {
    products: mapOf(products, productOf),
    policies: mapOf(policies, (r) => policyOf(r, unsupported)),
    users: mapOf(users, userOf),
    machines: machinesOf(machines, new Set(present.map((r) => r.id)), errors),
    unsupported,
  };
  const others = [products, policies, users, machines].flatMap((index) => [...index.values()]);
  tally(present, others, unsupported);

  const rows: ImportRow[] = [];
  const keys = new Map<string, number>();
  const ids = new Map<string, number>();
  licenses.forEach((r, i) => {
    if (!r) return;
    const row = i + 1;
    const problems: Problem[] = [];
    const read = licenseOf(r, ctx, (field, message) => problems.push([field, message]));
    const key = read.legacyKey;
    if (key && keys.has(key)) problems.push(["key", `Duplicate of row ${keys.get(key)}`]);
    else if (key) keys.set(key, row);
    if (ids.has(r.id)) problems.push([`${r.at}.id`, `License ${r.id} repeats row ${ids.get(r.id)}`]);
    else ids.set(r.id, row);
    if (problems.length === 0) rows.push({ row, ...read });
    for (const [field, message] of problems) errors.push({ row, field, message });
  });
  errors.sort((a, b) => a.row - b.row);
  return { rows, errors, unsupported: [...unsupported] };
}

const WHOLE_SHAPE =
  "Keygen's data is an object { products, policies, licenses, machines, users }, each a list document or an array of them";

/** One license as a row (without its position); its problems go to `add`. */
function licenseOf(r: Resource, ctx: Context, add: Add): Omit<ImportRow, "row"> {
  const a = r.attributes;
  const at = `${r.at}.attributes`;
  let legacyKey = "";
  const key = a["key"];
  if (typeof key !== "string")
    add(`${at}.key`, key === undefined ? "No key (Keygen keeps none for a legacy encrypted license)" : "Not a string");
  else {
    legacyKey = key.trim();
    const problem = legacyKeyProblem(legacyKey);
    if (problem) add("key", problem);
  }

  const policyId = relatedId(r, "policy", "policies", add);
  const policy = policyId === undefined ? undefined : ctx.policies.get(policyId);
  if (policyId !== undefined && !policy) add("policy", `Names policy ${policyId}, which is not among the policies`);
  for (const [field, message] of policy?.problems ?? []) add(field, message);

  let product = "";
  const productId = relatedId(r, "product", "products", add) ?? policy?.productId;
  const found = productId === undefined ? undefined : ctx.products.get(productId);
  if (productId === undefined) add("product", "Names no product, nor does its policy");
  else if (!found) add("product", `Names product ${productId}, which is not among the products`);
  else {
    for (const [field, message] of found.problems) add(field, message);
    product = found.value ?? "";
  }

  const ownMachines = countOf(r, "maxMachines", add);
  const ownProcesses = countOf(r, "maxProcesses", add);
  // Keygen's license `floating` is inherited from its policy: read on the license only when its policy is not given.
  const floating = policy ? policy.floating : flagOf(r, "floating", add) === true;
  const maxProcesses = ownProcesses ?? policy?.maxProcesses ?? null;
  let licensingMode: ImportRow["licensingMode"] = "activation";
  let maxClients: number;
  if (maxProcesses !== null) {
    licensingMode = "floating";
    maxClients = maxProcesses;
  } else if (floating) maxClients = ownMachines ?? policy?.maxMachines ?? 0;
  else maxClients = ownMachines ?? 1;
  for (const limit of ["maxCores", "maxUses"]) {
    const value = a[limit];
    if (value !== undefined && value !== null && value !== policy?.attributes[limit])
      ctx.unsupported.add(`license ${r.id}: ${limit} ${JSON.stringify(value)}`);
  }

  const expireDate = expiryOf(r, policy, add);

  const suspended = flagOf(r, "suspended", add);
  const status = textOf(r, "status", add)?.toUpperCase();
  const revoked = status === "BANNED" || status === "SUSPENDED" || suspended === true;
  const description = status === "BANNED" ? "Banned in Keygen" : "Suspended in Keygen";

  let customer: ImportCustomer | undefined;
  for (const relation of ["owner", "user"]) {
    const userId = relatedId(r, relation, "users", add);
    if (userId === undefined) continue;
    const user = ctx.users.get(userId);
    if (!user) add(relation, `Names user ${userId}, which is not among the users`);
    else {
      for (const [field, message] of user.problems) add(field, message);
      customer = user.value;
    }
    break;
  }

  const machines = ctx.machines.get(r.id);
  for (const [field, message] of machines?.problems ?? []) add(field, message);

  return {
    sourceId: r.id,
    legacyKey,
    product,
    ...(productId !== undefined && { productSourceId: productId }),
    ...(customer && { customer }),
    ...(policy?.edition !== undefined && { edition: policy.edition }),
    ...(expireDate !== undefined && { expireDate }),
    licensingMode,
    maxClients,
    ...(revoked && { revoked, description }),
    machines: machines?.value ?? [],
  };
}

/**
 * The license's expiry as an ISO instant (undefined: perpetual): its `expiry`, or without that attribute at all, its
 * `created` plus its policy's duration (seconds).
 */
function expiryOf(r: Resource, policy: Policy | undefined, add: Add): string | undefined {
  const expiry = r.attributes["expiry"];
  let ms: number | undefined;
  if (Object.hasOwn(r.attributes, "expiry")) {
    if (expiry === null) return undefined;
    ms = typeof expiry === "string" ? instantOf(expiry) : undefined;
    if (ms === undefined) {
      add("expiry", `Not an ISO 8601 timestamp: ${JSON.stringify(expiry)}`);
      return undefined;
    }
  } else {
    const duration = policy?.duration;
    if (duration === undefined || duration === null) return undefined;
    const created = r.attributes["created"];
    const start = typeof created === "string" ? instantOf(created) : undefined;
    if (start === undefined) {
      add("expiry", `No expiry, and its created time is no ISO 8601 timestamp: ${JSON.stringify(created)}`);
      return undefined;
    }
    ms = start + duration * 1000;
  }
  if (ms < 0 || ms > LAST_INSTANT) {
    add("expiry", `${new Date(ms).toISOString()} lies before 1970 or after 9999`);
    return undefined;
  }
  return new Date(ms).toISOString();
}

/** The instant of an ISO 8601 timestamp in milliseconds (no offset: UTC); undefined when it is none. */
function instantOf(text: string): number | undefined {
  const m = ISO_8601.exec(text.trim());
  if (!m) return undefined;
  const [year, month, day, hour, minute, second] = m.slice(1, 7).map((part) => Number(part ?? 0)) as number[];
  const date = new Date(0);
  date.setUTCFullYear(year!, month! - 1, day!);
  date.setUTCHours(hour!, minute!, second!, Math.floor(Number(`0${m[7] ?? ""}`) * 1000));
  // A day, hour or minute past its end (2026-02-30, 24:00) rolls over in Date: such a text is no timestamp.
  if (date.getUTCMonth() !== month! - 1 || date.getUTCDate() !== day! || hour! > 23 || minute! > 59 || second! > 59)
    return undefined;
  const zone = m[8];
  if (!zone || zone.toUpperCase() === "Z") return date.getTime();
  const [hours, minutes] = [Number(zone.slice(1, 3)), Number(zone.slice(-2))];
  if (hours > 23 || minutes > 59) return undefined;
  return date.getTime() - (zone[0] === "-" ? -1 : 1) * (hours * 60 + minutes) * 60_000;
}

function policyOf(r: Resource, unsupported: Set<string>): Policy {
  const problems: Problem[] = [];
  const add: Add = (field, message) => problems.push([field, message]);
  const a = r.attributes;
  const name = textOf(r, "name", add);
  const label = `policy '${name ?? ""}' (${r.id})`;
  const extras = POLICY_LIMITS.filter((k) => a[k] !== undefined && a[k] !== null).map(
    (k) => `${k} ${JSON.stringify(a[k])}`,
  );
  if (a["requireHeartbeat"] === true)
    extras.push(`requireHeartbeat (heartbeatDuration ${JSON.stringify(a["heartbeatDuration"] ?? null)} s)`);
  if (a["requireCheckIn"] === true)
    extras.push(`requireCheckIn (every ${a["checkInIntervalCount"] ?? 1} ${a["checkInInterval"] ?? "interval"})`);
  const scheme = a["scheme"];
  if (typeof scheme === "string")
    extras.push(`scheme ${scheme} (${scheme.includes("SIGN") ? "signed" : "encrypted"} keys)`);
  if (a["encrypted"] === true) extras.push("encrypted keys (legacy encryption)");
  if (a["usePool"] === true) extras.push("usePool (a pool of keys)");
  for (const [k, standard] of Object.entries(POLICY_STRATEGIES))
    if (typeof a[k] === "string" && a[k] !== standard) extras.push(`${k} ${a[k]}`);
  // Cut at a whole character: a surrogate pair is never split.
  let edition = "";
  for (const char of name ?? "") {
    if (edition.length + char.length > EDITION_MAX) break;
    edition += char;
  }
  if (name && name.length > EDITION_MAX) extras.push(`name longer than ${EDITION_MAX} characters (the edition is cut)`);
  for (const extra of extras) unsupported.add(`${label}: ${extra}`);
  return {
    ...(name !== undefined && { edition }),
    floating: flagOf(r, "floating", add) === true,
    maxMachines: countOf(r, "maxMachines", add),
    maxProcesses: countOf(r, "maxProcesses", add),
    duration: countOf(r, "duration", add),
    productId: relatedId(r, "product", "products", add),
    attributes: a,
    problems,
  };
}

function productOf(r: Resource): Given<string | undefined> {
  const problems: Problem[] = [];
  const add: Add = (field, message) => problems.push([field, message]);
  const code = textOf(r, "code", add) ?? textOf(r, "name", add);
  if (code === undefined) add(`${r.at}.attributes.code`, `Product ${r.id} has neither a code nor a name`);
  return { value: code, problems };
}

function userOf(r: Resource): Given<ImportCustomer> {
  const problems: Problem[] = [];
  const add: Add = (field, message) => problems.push([field, message]);
  const email = textOf(r, "email", add);
  let firstName = textOf(r, "firstName", add);
  let lastName = textOf(r, "lastName", add);
  const fullName = textOf(r, "fullName", add);
  if (firstName === undefined && lastName === undefined && fullName !== undefined) {
    const space = fullName.lastIndexOf(" ");
    firstName = space < 0 ? fullName : fullName.slice(0, space).trim();
    lastName = space < 0 ? undefined : fullName.slice(space + 1);
  }
  const value: ImportCustomer = {
    sourceId: r.id,
    ...(email !== undefined && { email }),
    ...(firstName !== undefined && { firstName }),
    ...(lastName !== undefined && { lastName }),
  };
  return { value, problems };
}

/**
 * The machines of each license by the license's id. A machine naming no license, or one not among the licenses, is a
 * problem of the whole; a machine's own problems (and a fingerprint twice on one license) are its license's.
 */
function machinesOf(index: Map<string, Resource>, licenseIds: Set<string>, errors: ImportProblem[]) {
  const byLicense = new Map<string, Given<ImportMachine[]>>();
  for (const r of index.values()) {
    const problems: Problem[] = [];
    const add: Add = (field, message) => problems.push([field, message]);
    const licenseId = relatedId(r, "license", "licenses", add);
    if (licenseId === undefined || !licenseIds.has(licenseId)) {
      const named = licenseId === undefined ? "no license" : `license ${licenseId}, which is not among the licenses`;
      errors.push({ row: 0, field: "machines", message: `Machine ${r.id} names ${named}` });
      for (const [field, message] of problems) errors.push({ row: 0, field, message });
      continue;
    }
    const fingerprint = r.attributes["fingerprint"];
    const name = textOf(r, "name", add);
    if (typeof fingerprint !== "string" || fingerprint.trim() === "")
      add(`${r.at}.attributes.fingerprint`, `Machine ${r.id} has no fingerprint (a string)`);
    const group = byLicense.get(licenseId) ?? { value: [], problems: [] };
    byLicense.set(licenseId, group);
    group.problems.push(...problems);
    if (typeof fingerprint !== "string" || problems.length > 0) continue;
    const twin = group.value.find((m) => m.fingerprint === fingerprint);
    if (twin)
      group.problems.push(["machines", `Machines ${twin.sourceId} and ${r.id} share fingerprint ${fingerprint}`]);
    group.value.push({ fingerprint, sourceId: r.id, ...(name !== undefined && { name }) });
  }
  return byLicense;
}

/** What no row holds, once each: groups, environments, and licenses' metadata. */
function tally(licenses: Resource[], others: Resource[], unsupported: Set<string>): void {
  const linked = (name: string) => (r: Resource) => {
    const relation = r.relationships[name];
    return isJson(relation) && isJson(relation["data"]);
  };
  const all = [...licenses, ...others];
  const groups = all.filter(linked("group")).length;
  const environments = all.filter(linked("environment")).length;
  const metadata = licenses.filter((r) => {
    const value = r.attributes["metadata"];
    return isJson(value) && Object.keys(value).length > 0;
  }).length;
  if (groups > 0) unsupported.add(`groups (${groups} of the resources are in one)`);
  if (environments > 0) unsupported.add(`environments (${environments} of the resources are in one)`);
  if (metadata > 0) unsupported.add(`license metadata (${metadata} of the licenses have some)`);
}

/**
 * The resources of one kind across its pages, in order; undefined for an element that is no resource of the kind,
 * reported through `bad` with its 1-based position across the pages (0 for a page that is no list document).
 */
function resourcesOf(
  data: Json,
  kind: Kind,
  bad: (position: number, field: string, message: string) => void,
): (Resource | undefined)[] {
  const out: (Resource | undefined)[] = [];
  const value = data[kind];
  if (value === undefined) return out;
  const pages: [unknown, string][] = Array.isArray(value)
    ? value.map((doc, i) => [doc, `${kind}[${i}]`])
    : [[value, kind]];
  for (const [doc, at] of pages) {
    if (!isJson(doc)) {
      bad(0, at, "Not a JSON:API document (an object with a data list)");
      continue;
    }
    const list = doc["data"];
    if (!Array.isArray(list)) {
      bad(0, `${at}.data`, "Not a list: a page of Keygen's list endpoint holds its resources in a data array");
      continue;
    }
    list.forEach((item, j) => {
      const where = `${at}.data[${j}]`;
      const problem = resourceProblem(item, kind);
      if (problem) bad(out.length + 1, where + problem[0], problem[1]);
      out.push(problem ? undefined : resourceOf(item as Json, where));
    });
  }
  return out;
}

function resourceProblem(item: unknown, kind: Kind): Problem | undefined {
  if (!isJson(item)) return ["", "Not a JSON:API resource (an object)"];
  const { id, type, attributes, relationships } = item;
  if (typeof id !== "string" || id === "") return [".id", "No id (a string)"];
  if (type !== kind) return [".type", `${JSON.stringify(type ?? null)} where the ${kind} are: not one of them`];
  if (attributes !== undefined && !isJson(attributes)) return [".attributes", "Not an object"];
  if (relationships !== undefined && !isJson(relationships)) return [".relationships", "Not an object"];
  return undefined;
}

function resourceOf(item: Json, at: string): Resource {
  const attributes = isJson(item["attributes"]) ? item["attributes"] : {};
  const relationships = isJson(item["relationships"]) ? item["relationships"] : {};
  return { id: item["id"] as string, at, raw: item, attributes, relationships };
}

/** The resources of one kind by id; a later resource of the same id is dropped (a problem when it differs). */
function indexOf(data: Json, kind: Kind, errors: ImportProblem[]): Map<string, Resource> {
  const index = new Map<string, Resource>();
  for (const r of resourcesOf(data, kind, (_, field, message) => errors.push({ row: 0, field, message }))) {
    if (!r) continue;
    const first = index.get(r.id);
    if (!first) index.set(r.id, r);
    else if (JSON.stringify(first.raw) !== JSON.stringify(r.raw))
      errors.push({ row: 0, field: `${r.at}.id`, message: `Repeats the id of ${first.at} with other content` });
  }
  return index;
}

function mapOf<T>(index: Map<string, Resource>, read: (r: Resource) => T): Map<string, T> {
  return new Map([...index].map(([id, r]) => [id, read(r)]));
}

/**
 * The id a relationship names (JSON:API resource linkage `{ data: { type, id } }`); undefined when it names none
 * (absent, `data: null`, or Keygen's `{ type, id: null }`) or is malformed (a problem).
 */
function relatedId(r: Resource, name: string, kind: Kind, add: Add): string | undefined {
  const relation = r.relationships[name];
  if (relation === undefined || relation === null) return undefined;
  const at = `${r.at}.relationships.${name}`;
  if (!isJson(relation)) {
    add(at, "Not a JSON:API relationship (an object)");
    return undefined;
  }
  const linkage = relation["data"];
  if (linkage === undefined || linkage === null) return undefined;
  if (isJson(linkage) && linkage["type"] === kind && linkage["id"] === null) return undefined;
  if (isJson(linkage) && linkage["type"] === kind && typeof linkage["id"] === "string" && linkage["id"] !== "")
    return linkage["id"];
  add(`${at}.data`, `Not a resource identifier of ${kind} ({ type, id })`);
  return undefined;
}

/** A count attribute (an integer, 0 to COUNT_MAX): undefined when absent (or wrong: a problem), null when null. */
function countOf(r: Resource, name: string, add: Add): number | null | undefined {
  const value = r.attributes[name];
  if (value === undefined || value === null) return value;
  if (typeof value === "number" && Number.isInteger(value) && value >= 0 && value <= COUNT_MAX) return value;
  add(`${r.at}.attributes.${name}`, `Not a non-negative integer up to ${COUNT_MAX}: ${JSON.stringify(value)}`);
  return undefined;
}

/** A text attribute trimmed: undefined when absent, null or blank (or not a string: a problem). */
function textOf(r: Resource, name: string, add: Add): string | undefined {
  const value = r.attributes[name];
  if (value === undefined || value === null) return undefined;
  if (typeof value === "string") return value.trim() || undefined;
  add(`${r.at}.attributes.${name}`, "Not a string");
  return undefined;
}

function flagOf(r: Resource, name: string, add: Add): boolean | undefined {
  const value = r.attributes[name];
  if (value === undefined || value === null || typeof value === "boolean") return value ?? undefined;
  add(`${r.at}.attributes.${name}`, `Not true or false: ${JSON.stringify(value)}`);
  return undefined;
}

function isJson(value: unknown): value is Json {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
