/**
 * SPEC "List conventions" on every list route of the service (taken from the OpenAPI document): each accepts the
 * parameters it documents, filters, sorts, pages and selects through the one list implementation, counts all
 * matches, and answers unknown names with 500 and bad paging with problem details.
 */
import { exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { BASE, admin } from "./helpers";
import { SAMPLES } from "./samples";

interface Operation {
  parameters?: { name: string; in: string }[];
  responses: Record<
    string,
    {
      content?: Record<
        string,
        { schema: { properties?: Record<string, unknown>; allOf?: { properties?: Record<string, unknown> }[] } }
      >;
    }
  >;
}
const document = (await (await exports.default.fetch(`${BASE}/swagger/v1/swagger.json`)).json()) as {
  paths: Record<string, Record<string, Operation>>;
};

const lists = Object.entries(document.paths).flatMap(([path, item]) => {
  const op = item["get"];
  const params = (op?.parameters ?? []).filter((p) => p.in === "query").map((p) => p.name);
  if (!op || !params.includes("filter")) return [];
  const schema = op.responses["200"]?.content?.["application/json"]?.schema;
  const properties = Object.keys(
    schema?.properties ?? Object.assign({}, ...(schema?.allOf ?? []).map((s) => s.properties ?? {})),
  );
  const plural = properties.find((p) => !["success", "code", "message"].includes(p) && !/^total.*Count$/.test(p))!;
  const total = properties.find((p) => /^total.*Count$/.test(p))!;
  return [{ path, params, plural, total }];
});

describe("every list route", () => {
  it("is found in the document", () => {
    expect(lists.length).toBeGreaterThan(20);
  });

  describe.each(lists.map((l) => [l.path, l] as const))("%s", (_path, list) => {
    async function target(query: string) {
      const sample = await SAMPLES[`GET ${list.path}`]!();
      return admin("GET", `${sample.path ?? list.path}?${query}`);
    }

    it("filters, sorts, pages and selects, and counts all matches", async () => {
      // Root collections get two records through their own create sample, so the page has something to order.
      const create = list.path.includes("{") ? undefined : SAMPLES[`POST ${list.path}`];
      if (create) {
        for (let i = 0; i < 2; i++) {
          const sample = await create();
          expect((await admin("POST", sample.path ?? list.path, sample.body)).status).toBeLessThan(300);
        }
      }
      const select = list.params.includes("select") ? "&select=id" : "";
      const res = await target(`filter=${encodeURIComponent("id != null")}&sort=-id&skip=0&take=2${select}`);
      expect(res.status, res.text).toBe(200);
      const items = res.body[list.plural] as Record<string, unknown>[];
      expect(Array.isArray(items)).toBe(true);
      expect(items.length).toBeLessThanOrEqual(2);
      if (create) expect(items.length).toBe(2);
      expect(res.body[list.total]).toBeGreaterThanOrEqual(items.length);
      const ids = items.map((i) => i["id"] as number | string);
      expect(ids).toEqual([...ids].sort((a, b) => (a < b ? 1 : a > b ? -1 : 0)));
      if (select) for (const item of items) expect(Object.keys(item)).toEqual(["id"]);
    });

    it("answers 500 naming an unknown property in filter and sort", async () => {
      const filter = await target(`filter=${encodeURIComponent("noSuchProperty == 1")}`);
      expect(filter.status).toBe(500);
      expect(filter.body["message"]).toMatch(/^No property or field 'noSuchProperty' exists in type '\w+'$/);
      if (list.params.includes("sort")) expect((await target("sort=noSuchProperty")).status).toBe(500);
    });

    it("answers problem details to a negative skip or a non-numeric take", async () => {
      for (const query of ["skip=-1", "take=many"]) {
        const res = await target(query);
        expect(res.status, query).toBe(400);
        expect(res.headers.get("content-type")).toContain("application/problem+json");
      }
    });
  });
});
