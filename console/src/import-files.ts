/**
 * The files an import sends (CONTRACT section 16), read in the browser before anything is sent: a CSV file is sent as
 * its text; Keygen's data is either one JSON file holding the whole export, `{ products, policies, licenses, machines,
 * users }` (each a list document or an array of its pages), or several JSON files, one a page of a Keygen list as its
 * API answers it (`{ data: [...], links, meta }`, e.g. licenses-page-1.json), put together by their resources' `type`
 * in the order of the files' names (page 2 before page 10). Pure: no DOM beyond the file's name and text.
 */

/** The lists of Keygen's export the import reads (src/imports/keygen.ts). */
export const KEYGEN_LISTS = ["products", "policies", "licenses", "machines", "users"] as const;

/** A file as the page read it. */
export interface ChosenFile {
  name: string;
  text: string;
}

/** What a set of Keygen files comes to: the import's `data`, what each file was taken as, and the files refused. */
export interface KeygenData {
  data: Record<string, unknown[]>;
  /** One line a file: "licenses-page-1.json: 3 licenses". */
  taken: string[];
  /** One line a file that cannot be used, and why; nothing is sent while there is one. */
  problems: string[];
}

type Json = Record<string, unknown>;
const isJson = (value: unknown): value is Json => typeof value === "object" && value !== null && !Array.isArray(value);

/** A resource type as Keygen writes it ("licenses"), also singular or capitalised ("License"), as the list's key. */
export function listOfType(type: unknown): string | undefined {
  if (typeof type !== "string" || type.trim() === "") return undefined;
  const t = type.trim().toLowerCase();
  if (t === "policy") return "policies";
  return (KEYGEN_LISTS as readonly string[]).includes(`${t}s`) ? `${t}s` : t;
}

/** The list a file's name says it holds ("licenses-page-2.json": licenses), for a page without resources. */
function listOfName(name: string): string | undefined {
  const base = name.replace(/^.*[\\/]/, "").toLowerCase();
  return KEYGEN_LISTS.find((list) => base.startsWith(list) || base.startsWith(list.replace(/ies$/, "y")));
}

/** "3 licenses", "1 policy". */
function counted(n: number, list: string): string {
  const one = list === "policies" ? "policy" : list.replace(/s$/, "");
  return `${n.toLocaleString()} ${n === 1 ? one : list}`;
}

/** Files in the order of their names, numbers by value: licenses-page-2.json before licenses-page-10.json. */
export function byName<T extends { name: string }>(files: readonly T[]): T[] {
  return [...files].sort((a, b) => a.name.localeCompare(b.name, undefined, { numeric: true, sensitivity: "base" }));
}

/** Whether a JSON value is the whole export: an object naming some of Keygen's lists, not a page of one. */
function isWholeExport(value: Json): boolean {
  return !("data" in value) && Object.keys(value).some((key) => (KEYGEN_LISTS as readonly string[]).includes(key));
}

/** A page's resources grouped by their list, in their order; a resource without a type goes under `fallback`. */
function splitPage(page: Json, fallback: string | undefined): Map<string | undefined, unknown[]> {
  const items: unknown[] = Array.isArray(page["data"]) ? page["data"] : [page["data"]];
  const lists = new Map<string | undefined, unknown[]>();
  for (const item of items) {
    const list = (isJson(item) ? listOfType(item["type"]) : undefined) ?? fallback;
    lists.set(list, [...(lists.get(list) ?? []), item]);
  }
  return lists;
}

/**
 * Keygen's files as the import's `data`. One file holding the whole export is sent as it is; otherwise each file is a
 * page of a list (or an array of pages, or a whole export whose lists are added), and the pages of each list are sent
 * as that list's array of pages, in the order of the files' names.
 */
export function keygenData(files: readonly ChosenFile[]): KeygenData {
  const data: Record<string, unknown[]> = {};
  const taken: string[] = [];
  const problems: string[] = [];
  const add = (list: string, page: unknown) => (data[list] ??= []).push(page);
  for (const file of byName(files)) {
    let value: unknown;
    try {
      value = JSON.parse(file.text.replace(/^\uFEFF/, ""));
    } catch (e) {
      problems.push(`${file.name} is not JSON: ${e instanceof Error ? e.message : String(e)}`);
      continue;
    }
    if (isJson(value) && isWholeExport(value)) {
      const lists = Object.keys(value);
      for (const list of lists) {
        const pages = value[list];
        for (const page of Array.isArray(pages) ? pages : [pages]) add(list, page);
      }
      taken.push(`${file.name}: the whole export (${lists.join(", ")})`);
      continue;
    }
    const pages = Array.isArray(value) ? value : [value];
    if (pages.length === 0 || !pages.every((page) => isJson(page) && "data" in page)) {
      problems.push(
        `${file.name} is neither Keygen's whole export ({ products, policies, licenses, machines, users }) nor a page of one of its lists ({ data: [...] })`,
      );
      continue;
    }
    const found = new Map<string, number>();
    for (const page of pages as Json[]) {
      for (const [list, items] of splitPage(page, listOfName(file.name))) {
        if (list === undefined) {
          problems.push(`${file.name}: its resources name no type, nor does its name say which list it is`);
          continue;
        }
        // The page itself when it holds one list (its links and meta kept), else a page of its own per list.
        add(list, Array.isArray(page["data"]) && items.length === page["data"].length ? page : { data: items });
        found.set(list, (found.get(list) ?? 0) + items.length);
      }
    }
    if (found.size > 0) taken.push(`${file.name}: ${[...found].map(([list, n]) => counted(n, list)).join(", ")}`);
    else if (!problems.some((p) => p.startsWith(`${file.name}:`)))
      taken.push(`${file.name}: an empty page, nothing to import`);
  }
  return { data, taken, problems };
}

/** The lists of Keygen's export missing from `data` (the import needs licenses; the others give them their details). */
export function missingLists(data: Record<string, unknown[]>): string[] {
  return KEYGEN_LISTS.filter((list) => !data[list]);
}
