/**
 * `/v1/resources`, the first resource on the generic CRUD builder, driven through the API: create, list with every
 * list convention, partial update, delete, and SPEC's answers to bad input, with nothing written when refused.
 */
import { decode as decodeToon } from "@toon-format/toon";
import { beforeAll, describe, expect, it } from "vitest";
import { ADMIN, admin, call, countRows, setSetting } from "./helpers";
import type { JsonBody } from "./json-body.ts";

async function createResource(resource: Record<string, unknown>): Promise<number> {
  const res = await admin("POST", "/v1/resources", { resource });
  expect(res.status, res.text).toBe(200);
  expect(res.body).toMatchObject({ success: true, code: 0 });
  return res.body["resourceId"];
}

const ids: Record<string, number> = {};
beforeAll(async () => {
  ids["alpha"] = await createResource({
    name: "Alpha",
    type: "File",
    code: "A-1",
    description: "first 50% done",
    dataFormat: "text",
  });
  ids["beta"] = await createResource({ name: "beta", type: "File", code: "B_2", description: "second" });
  ids["gamma"] = await createResource({
    name: "Gamma",
    type: "EmailTemplate",
    code: "C-3",
    data: "Hello {CustomerName}",
  });
  ids["delta"] = await createResource({ name: "Delta", type: "SignatureKey", code: "D-4", password: "s3cret" });
});

describe("create and read", () => {
  it("stores the record and returns it in the list with server-owned timestamps", async () => {
    const res = await admin("GET", `/v1/resources?filter=${encodeURIComponent(`id == ${ids["gamma"]}`)}`);
    expect(res.status).toBe(200);
    expect(res.body["totalResourcesCount"]).toBe(1);
    const [gamma] = res.body["resources"];
    expect(gamma).toMatchObject({
      id: ids["gamma"],
      name: "Gamma",
      type: "EmailTemplate",
      code: "C-3",
      data: "Hello {CustomerName}",
    });
    expect(gamma.createdAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    expect(gamma.updatedAt).toBe(gamma.createdAt);
  });

  it("never returns the write-only password and omits null properties", async () => {
    const res = await admin("GET", `/v1/resources?filter=${encodeURIComponent('name == "Delta"')}`);
    const [delta] = res.body["resources"];
    expect(delta.password).toBeUndefined();
    expect(Object.values(delta)).not.toContain(null);
    expect(delta.description).toBeUndefined();
  });

  it("ignores server-owned and unknown properties in the body (no mass assignment)", async () => {
    const id = await createResource({ name: "owned", id: 999, createdAt: "2001-01-01T00:00:00.000Z", bogus: 1 });
    expect(id).not.toBe(999);
    const res = await admin("GET", `/v1/resources?filter=id==${id}`);
    expect(res.body["resources"][0].createdAt).not.toBe("2001-01-01T00:00:00.000Z");
    expect(res.body["resources"][0].bogus).toBeUndefined();
    expect((await admin("DELETE", `/v1/resources/${id}`)).status).toBe(200);
  });
});

describe("list conventions", () => {
  const list = (query: string) => admin("GET", `/v1/resources?${query}`);
  const names = (res: { body: JsonBody }) => (res.body["resources"] as { name: string }[]).map((r) => r.name);

  it("filters with the expression language and counts all matches", async () => {
    const res = await list(`filter=${encodeURIComponent('type == "File" && name.StartsWith("A")')}`);
    expect(names(res)).toEqual(["Alpha"]);
    expect(res.body["totalResourcesCount"]).toBe(1);
    const lower = await list(`filter=${encodeURIComponent('name.ToLower().StartsWith("b") || code.Contains("-3")')}`);
    expect(names(lower)).toEqual(["beta", "Gamma"]);
  });

  it("matches LIKE wildcards literally", async () => {
    expect(names(await list(`filter=${encodeURIComponent('description.Contains("50%")')}`))).toEqual(["Alpha"]);
    expect(names(await list(`filter=${encodeURIComponent('code.Contains("_")')}`))).toEqual(["beta"]);
    expect(names(await list(`filter=${encodeURIComponent('description.Contains("%")')}`))).toEqual(["Alpha"]);
  });

  it("sorts by several properties, descending with '-', ascending with '+' or nothing (ordinal order)", async () => {
    expect(names(await list("sort=-name"))).toEqual(["beta", "Gamma", "Delta", "Alpha"]);
    expect(names(await list("sort=type,-code"))).toEqual(["Gamma", "beta", "Alpha", "Delta"]);
    expect(names(await list("sort=%2Btype,Name"))).toEqual(["Gamma", "Alpha", "beta", "Delta"]);
  });

  it("pages by primary key when no sort is given, and counts all items", async () => {
    const page = await list("skip=1&take=2");
    expect((page.body["resources"] as { id: number }[]).map((r) => r.id)).toEqual([ids["beta"], ids["gamma"]]);
    expect(page.body["totalResourcesCount"]).toBe(4);
    expect(names(await list("skip=4"))).toEqual([]);
  });

  it("applies the default page size when take is omitted and clamps take to the maximum", async () => {
    await setSetting("Application:DefaultPageSize", "2");
    await setSetting("Application:MaxPageSize", "3");
    try {
      expect(names(await list(""))).toHaveLength(2);
      const clamped = await list("take=1000000");
      expect(clamped.status).toBe(200);
      expect(names(clamped)).toHaveLength(3);
      expect(clamped.body["totalResourcesCount"]).toBe(4);
    } finally {
      await setSetting("Application:DefaultPageSize", null);
      await setSetting("Application:MaxPageSize", null);
    }
  });

  it("returns only the selected properties", async () => {
    const res = await list(`select=Name,code&filter=${encodeURIComponent("id == " + ids["alpha"])}`);
    expect(res.body["resources"]).toEqual([{ name: "Alpha", code: "A-1" }]);
  });

  it("answers 500 with the parser message for unknown names in filter, sort and select", async () => {
    const filter = await list(`filter=${encodeURIComponent('colour == "red"')}`);
    expect(filter.status).toBe(500);
    expect(filter.body).toEqual({
      success: false,
      code: 500,
      message: "No property or field 'colour' exists in type 'Resource'",
    });
    const sort = await list("sort=-colour");
    expect(sort.status).toBe(500);
    expect(sort.body["message"]).toBe("No property or field 'colour' exists in type 'Resource'");
    const select = await list("select=name,password");
    expect(select.status).toBe(500);
    expect(select.body["message"]).toBe("No property or field 'password' exists in type 'Resource'");
  });

  it("refuses filtering on the write-only password", async () => {
    const res = await list(`filter=${encodeURIComponent('password == "s3cret"')}`);
    expect(res.status).toBe(500);
    expect(res.body["message"]).toBe("No property or field 'password' exists in type 'Resource'");
  });

  it("answers 500 with position for a malformed filter and 400 for an oversized one", async () => {
    const bad = await list(`filter=${encodeURIComponent('name == "x" &&')}`);
    expect(bad.status).toBe(500);
    expect(bad.body["message"]).toMatch(/position/i);
    const huge = await list(
      `filter=${encodeURIComponent(Array.from({ length: 60 }, (_, i) => `id == ${i}`).join(" || "))}`,
    );
    expect(huge.status).toBe(400);
  });

  it("answers problem details to non-numeric or negative skip and take", async () => {
    for (const query of ["take=ten", "skip=-1", "take=1.5", "take=99999999999"]) {
      const res = await list(query);
      expect(res.status, query).toBe(400);
      expect(res.headers.get("content-type")).toContain("application/problem+json");
    }
  });
});

describe("partial update", () => {
  it("changes only the properties sent; an explicit null clears one", async () => {
    const id = await createResource({ name: "partial", type: "File", code: "P", description: "keep me" });
    const before = (await admin("GET", `/v1/resources?filter=id==${id}`)).body["resources"][0];
    await new Promise((r) => setTimeout(r, 5));
    const res = await admin("PUT", "/v1/resources", { resource: { id, code: "P2", type: null } });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toEqual({ success: true, code: 0 });
    const after = (await admin("GET", `/v1/resources?filter=id==${id}`)).body["resources"][0];
    expect(after).toMatchObject({ name: "partial", code: "P2", description: "keep me" });
    expect(after.type).toBeUndefined();
    expect(after.createdAt).toBe(before.createdAt);
    expect(after.updatedAt > before.updatedAt).toBe(true);
  });

  it("answers 400 naming an id that does not exist, and writes nothing", async () => {
    const res = await admin("PUT", "/v1/resources", { resource: { id: 424242, name: "ghost" } });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ success: false, code: 400, message: "Resource 424242 not found" });
  });

  it("refuses to clear a required property", async () => {
    const res = await admin("PUT", "/v1/resources", { resource: { id: ids["alpha"], name: null } });
    expect(res.status).toBe(400);
    expect(res.headers.get("content-type")).toContain("application/problem+json");
  });
});

describe("delete", () => {
  it("deletes by id and answers 400 for an unknown id", async () => {
    const id = await createResource({ name: "doomed" });
    expect((await admin("DELETE", `/v1/resources/${id}`)).body).toEqual({ success: true, code: 0 });
    const again = await admin("DELETE", `/v1/resources/${id}`);
    expect(again.status).toBe(400);
    expect(again.body["message"]).toBe(`Resource ${id} not found`);
  });

  it("answers problem details to an id that is not an int32", async () => {
    expect((await admin("DELETE", "/v1/resources/abc")).status).toBe(400);
    expect((await admin("DELETE", "/v1/resources/99999999999")).status).toBe(400);
  });
});

describe("bad input gets SPEC's answer and writes nothing", () => {
  it("answers malformed JSON with problem details", async () => {
    const before = await countRows("resources");
    const res = await call("POST", "/v1/resources", { key: ADMIN.key, raw: '{"resource": {"name": "x",' });
    expect(res.status).toBe(400);
    expect(res.headers.get("content-type")).toContain("application/problem+json");
    expect(res.body).toMatchObject({
      status: 400,
      title: expect.any(String),
      type: expect.stringMatching(/^https:\/\//),
    });
    expect(res.body["errors"]).toHaveProperty("");
    expect(await countRows("resources")).toBe(before);
  });

  it("answers wrong types and missing required fields with problem details naming each path", async () => {
    const before = await countRows("resources");
    const res = await admin("POST", "/v1/resources", { resource: { name: 42, code: ["x"] } });
    expect(res.status).toBe(400);
    expect(Object.keys(res.body["errors"]).sort()).toEqual(["resource.code", "resource.name"]);
    const missing = await admin("POST", "/v1/resources", { resource: { type: "File" } });
    expect(missing.status).toBe(400);
    expect(Object.keys(missing.body["errors"])).toEqual(["resource.name"]);
    const noBody = await call("POST", "/v1/resources", { key: ADMIN.key });
    expect(noBody.status).toBe(400);
    expect(await countRows("resources")).toBe(before);
  });

  it("reads application/json-patch+json and text/json bodies as JSON", async () => {
    for (const type of ["application/json-patch+json", "text/json", "application/json; charset=utf-8"]) {
      const res = await call("POST", "/v1/resources", {
        key: ADMIN.key,
        body: { resource: { name: `via ${type}` } },
        headers: { "content-type": type, accept: "text/plain" },
      });
      expect(res.status, type).toBe(200);
      expect(res.headers.get("content-type")).toContain("application/json");
      await admin("DELETE", `/v1/resources/${res.body["resourceId"]}`);
    }
  });

  it("refuses a body of another media type with 415", async () => {
    const res = await call("POST", "/v1/resources", {
      key: ADMIN.key,
      raw: "name=x",
      headers: { "content-type": "application/x-www-form-urlencoded" },
    });
    expect(res.status).toBe(415);
    expect(res.body).toMatchObject({ success: false, code: 415 });
  });

  it("answers an unknown route with 404 and the envelope", async () => {
    const res = await admin("GET", "/v1/nothing-here");
    expect(res.status).toBe(404);
    expect(res.body).toMatchObject({ success: false, code: 404 });
  });
});

describe("serialization", () => {
  it("answers TOON when asked with Accept: application/toon", async () => {
    const res = await call("GET", `/v1/resources?select=id,name&filter=${encodeURIComponent('type == "File"')}`, {
      key: ADMIN.key,
      headers: { accept: "application/toon" },
    });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toContain("application/toon");
    expect(decodeToon(res.text)).toEqual({
      success: true,
      code: 0,
      resources: [
        { id: ids["alpha"], name: "Alpha" },
        { id: ids["beta"], name: "beta" },
      ],
      totalResourcesCount: 2,
    });
  });

  it("writes null properties when Application:IgnoreJSonDefaultValues is false", async () => {
    await setSetting("Application:IgnoreJSonDefaultValues", "false");
    try {
      const res = await admin("GET", `/v1/resources?filter=id==${ids["beta"]}`);
      expect(res.body["resources"][0]).toHaveProperty("data", null);
      expect(res.body["resources"][0]).not.toHaveProperty("password");
    } finally {
      await setSetting("Application:IgnoreJSonDefaultValues", null);
    }
  });
});
