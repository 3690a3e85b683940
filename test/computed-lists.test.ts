/**
 * GET /v1/settings and GET /v1/roles are GET lists like every other (SPEC "List conventions"): take, skip, sort,
 * filter and select, the page under `settings` / `roles` and the count of all that match the filter in
 * `totalSettingsCount` / `totalRolesCount`; an unknown property answers 500 with the parser's message; the OpenAPI
 * document lists the parameters.
 */
import { describe, expect, it } from "vitest";
import { settingDefinitions } from "../src/kernel/config";
import { admin, call } from "./helpers";

const ROLES = ["Administrator", "LicenseManager", "Sales", "Customer", "Application"];

function list(path: string, query: Record<string, string> = {}) {
  return admin("GET", `${path}?${new URLSearchParams(query).toString()}`);
}

describe("GET /v1/roles", () => {
  it("takes take, skip, sort, filter and select", async () => {
    const all = await list("/v1/roles");
    expect(all.status, all.text).toBe(200);
    expect(all.body).toMatchObject({ success: true, code: 0, totalRolesCount: 5 });
    expect(all.body["roles"].map((r: { name: string }) => r.name)).toEqual(ROLES);

    const page = await list("/v1/roles", { skip: "1", take: "2" });
    expect(page.body["roles"].map((r: { name: string }) => r.name)).toEqual(["LicenseManager", "Sales"]);
    expect(page.body["totalRolesCount"]).toBe(5);

    const sorted = await list("/v1/roles", { sort: "-name" });
    expect(sorted.body["roles"].map((r: { name: string }) => r.name)).toEqual([...ROLES].sort().reverse());

    const filtered = await list("/v1/roles", { filter: 'name == "Sales" || name.StartsWith("Lic")' });
    expect(filtered.body["roles"].map((r: { name: string }) => r.name)).toEqual(["LicenseManager", "Sales"]);
    expect(filtered.body["totalRolesCount"]).toBe(2);

    const selected = await list("/v1/roles", { select: "name", filter: "id == 1" });
    expect(selected.body["roles"]).toEqual([{ name: "Administrator" }]);
  });

  it("answers an unknown property 500 with the parser's message, as every list", async () => {
    const queries: Record<string, string>[] = [{ filter: "nope == 1" }, { sort: "nope" }, { select: "nope" }];
    for (const query of queries) {
      const res = await list("/v1/roles", query);
      expect(res.status, JSON.stringify(query)).toBe(500);
      expect(res.body["message"]).toBe("No property or field 'nope' exists in type 'Role'");
    }
  });
});

describe("GET /v1/settings", () => {
  const names = Object.keys(settingDefinitions);

  it("takes take, skip, sort, filter and select", async () => {
    const all = await list("/v1/settings", { take: "1000" });
    expect(all.status, all.text).toBe(200);
    expect(all.body["totalSettingsCount"]).toBe(names.length);
    expect(all.body["settings"].map((s: { name: string }) => s.name)).toEqual(names);

    const page = await list("/v1/settings", { skip: "2", take: "3" });
    expect(page.body["settings"].map((s: { name: string }) => s.name)).toEqual(names.slice(2, 5));
    expect(page.body["totalSettingsCount"]).toBe(names.length);

    const sorted = await list("/v1/settings", { sort: "-name", take: "1000", select: "name" });
    expect(sorted.body["settings"]).toEqual(
      [...names].sort((a, b) => (a < b ? 1 : a > b ? -1 : 0)).map((name) => ({ name })),
    );

    const brute = names.filter((n) => n.startsWith("IpFiltering:BruteForceProtection:"));
    const filtered = await list("/v1/settings", {
      filter: 'category == "IpFiltering" && group == "BruteForceProtection"',
      select: "name,type,readOnly",
    });
    expect(filtered.body["totalSettingsCount"]).toBe(brute.length);
    expect(filtered.body["settings"].map((s: { name: string }) => s.name)).toEqual(brute);
    for (const s of filtered.body["settings"]) expect(Object.keys(s).sort()).toEqual(["name", "readOnly", "type"]);
  });

  it("filters booleans and a secret's absent value as the answer shows them", async () => {
    const secrets = await list("/v1/settings", { filter: "isSecret", take: "1000" });
    expect(secrets.body["totalSettingsCount"]).toBeGreaterThan(0);
    for (const s of secrets.body["settings"]) {
      expect(s.isSecret).toBe(true);
      expect(s).not.toHaveProperty("value");
    }
    // A secret's value is absent from the answer, and a filter sees it as null, never as what it holds.
    const readable = await list("/v1/settings", { filter: "isSecret && value != null" });
    expect(readable.body["totalSettingsCount"]).toBe(0);
    const jwt = await list("/v1/settings", { filter: 'name == "Application:JwtSecret" && value.Length > 0' });
    expect(jwt.body["totalSettingsCount"]).toBe(0);
  });

  it("answers an unknown property 500 with the parser's message, as every list", async () => {
    const res = await list("/v1/settings", { filter: 'nope == "x"' });
    expect(res.status).toBe(500);
    expect(res.body["message"]).toBe("No property or field 'nope' exists in type 'Setting'");
  });
});

describe("the OpenAPI document", () => {
  it("lists the list parameters of both routes", async () => {
    const document = (await call("GET", "/swagger/v1/swagger.json")).body as {
      paths: Record<string, { get: { parameters?: { name: string }[] } }>;
    };
    for (const path of ["/v1/roles", "/v1/settings"]) {
      const params = (document.paths[path]!.get.parameters ?? []).map((p) => p.name).sort();
      expect(params, path).toEqual(["filter", "select", "skip", "sort", "take"]);
    }
  });
});
