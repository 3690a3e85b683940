/**
 * `/v1/licenses` and the licenses of a customer, an order and a template, driven through the API: generated
 * identifiers, template defaults, the computed status in every state (Tampered by a change behind the API),
 * revocation by explicit values only, active clients, deletion cascades, both forms of `{licenseId}`, and refused
 * requests that write nothing.
 */
import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { getDb } from "../src/db/client";
import { createLicense, generateLicenseKeys } from "../src/licensing/license-core";
import { admin, countRows, setSetting } from "./helpers";
import type { JsonBody } from "./json-body.ts";
import { newCustomer, newOrder, newProduct } from "./samples/commerce";
import { newLicense } from "./samples/licenses";

const DAY = 86_400_000;
const LICENSE_ID = /^lic[0-9A-F]{8}$/;
const USER_KEY = /^[0-9A-HJKMNP-TV-Z]{5}(-[0-9A-HJKMNP-TV-Z]{5}){4}$/;

interface LicenseRecord extends JsonBody {
  id: number;
  licenseId: string;
  userKey: string;
  status: string;
  activeClientCount: number;
}

/** The license as the list returns it. */
async function read(id: number | string): Promise<LicenseRecord> {
  const filter = typeof id === "number" ? `id == ${id}` : `licenseId == "${id}"`;
  const res = await admin("GET", `/v1/licenses?filter=${encodeURIComponent(filter)}`);
  expect(res.status, res.text).toBe(200);
  expect(res.body["licenses"]).toHaveLength(1);
  return res.body["licenses"][0];
}

async function put(license: Record<string, unknown>) {
  return admin("PUT", "/v1/licenses", { license });
}

async function issueToken(licenseId: string | number, machineId: string, extra: Record<string, unknown> = {}) {
  return admin("POST", `/v1/licenses/${licenseId}/tokens`, { licenseToken: { machineId, ...extra } });
}

/** A token row written as the licensing runtime would (floating seats, tokens that have expired). */
async function insertToken(
  licenseKey: number,
  values: { kind?: number; machineId?: string; expireDate?: string | null },
) {
  const now = new Date().toISOString();
  await env.DB.prepare(
    "INSERT INTO license_tokens (token_digest, token_prefix, kind, license_id, machine_id, issue_date, expire_date, created_at, updated_at) VALUES (?, 'x', ?, ?, ?, ?, ?, ?, ?)",
  )
    .bind(
      crypto.randomUUID(),
      values.kind ?? 0,
      licenseKey,
      values.machineId ?? "M",
      now,
      values.expireDate ?? null,
      now,
      now,
    )
    .run();
}

let productId: number;
beforeAll(async () => {
  productId = await newProduct();
});

describe("create", () => {
  it("generates licenseId and userKey and answers both ids, with stored defaults", async () => {
    const res = await admin("POST", "/v1/licenses", { license: { productId, licenseeName: "Ada" } });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toEqual({
      success: true,
      code: 0,
      licenseId: expect.stringMatching(LICENSE_ID),
      id: expect.any(Number),
    });
    const license = await read(res.body["id"]);
    expect(license).toMatchObject({
      id: res.body["id"],
      licenseId: res.body["licenseId"],
      productId,
      licenseType: 0,
      licensingMode: 0,
      maxClients: 0,
      revoked: false,
      trace: true,
      licenseeName: "Ada",
      status: "NotActivated",
      activeClientCount: 0,
    });
    expect(license.userKey).toMatch(USER_KEY);
    expect(Math.abs(Date.parse(license["issueDate"]) - Date.now())).toBeLessThan(60_000);
    expect(license["expireDate"]).toBeUndefined();
    expect(license["integrity"]).toBeUndefined();
  });

  it("never takes server-owned properties from the body", async () => {
    const res = await admin("POST", "/v1/licenses", {
      license: {
        productId,
        id: 777_777,
        licenseId: "licAAAAAAAA",
        userKey: "MINE",
        status: "Activated",
        activeClientCount: 9,
        integrity: "x",
      },
    });
    expect(res.status, res.text).toBe(200);
    expect(res.body["id"]).not.toBe(777_777);
    expect(res.body["licenseId"]).not.toBe("licAAAAAAAA");
    const license = await read(res.body["id"]);
    expect(license.userKey).not.toBe("MINE");
    expect(license).toMatchObject({ status: "NotActivated", activeClientCount: 0 });
  });

  it("gives every license its own identifiers", async () => {
    const made = await Promise.all(Array.from({ length: 20 }, () => newLicense()));
    const keys = await Promise.all(made.map((m) => read(m.id)));
    expect(new Set(made.map((m) => m.licenseId)).size).toBe(20);
    expect(new Set(keys.map((k) => k.userKey)).size).toBe(20);
  });

  it("shapes user keys by Licensing:UserKeyFormat", async () => {
    await setSetting("Licensing:UserKeyFormat", "XXXX-XXXX-XX");
    try {
      const { id } = await newLicense();
      expect((await read(id)).userKey).toMatch(/^[0-9A-HJKMNP-TV-Z]{4}-[0-9A-HJKMNP-TV-Z]{4}-[0-9A-HJKMNP-TV-Z]{2}$/);
    } finally {
      await setSetting("Licensing:UserKeyFormat", null);
    }
  });

  it("draws a generated identifier again when it is already taken", async () => {
    const taken = await read((await newLicense()).id);
    const drawn: string[] = [];
    const generate = (format: string) => {
      const keys =
        drawn.length === 0 ? { licenseId: taken.licenseId, userKey: taken.userKey } : generateLicenseKeys(format);
      drawn.push(keys.licenseId);
      return keys;
    };
    const settings = { secret: "test-encryption-key", userKeyFormat: "XXXXX-XXXXX" };
    const row = await createLicense(getDb(env.DB), settings, { productId }, new Date(), generate);
    expect(drawn).toHaveLength(2);
    expect(row.licenseId).toBe(drawn[1]);
    expect((await read(row.id)).status).toBe("NotActivated");

    const before = await countRows("licenses");
    let attempts = 0;
    const alwaysTaken = () => {
      attempts++;
      return { licenseId: taken.licenseId, userKey: `K${attempts}` };
    };
    const failure = await createLicense(getDb(env.DB), settings, { productId }, new Date(), alwaysTaken).catch(
      (e: Error) => e,
    );
    expect(String((failure as Error).cause)).toMatch(/UNIQUE constraint failed: licenses\.license_id/);
    expect(attempts).toBe(5);
    expect(await countRows("licenses")).toBe(before);
  });

  it("requires an existing product and existing references, naming them, and writes nothing", async () => {
    const before = await countRows("licenses");
    const missing = await admin("POST", "/v1/licenses", { license: { edition: "Pro" } });
    expect(missing.status).toBe(400);
    expect(missing.headers.get("content-type")).toContain("application/problem+json");
    expect(Object.keys(missing.body["errors"])).toEqual(["license.productId"]);
    const cases: [Record<string, unknown>, string][] = [
      [{ productId: 999_999 }, "Product 999999 not found (productId)"],
      [{ productId, customerId: 999_998 }, "Customer 999998 not found (customerId)"],
      [{ productId, orderId: 999_997 }, "Order 999997 not found (orderId)"],
      [{ productId, templateId: 999_996 }, "LicenseTemplate 999996 not found (templateId)"],
    ];
    for (const [license, message] of cases) {
      const res = await admin("POST", "/v1/licenses", { license });
      expect(res.status, message).toBe(400);
      expect(res.body).toEqual({ success: false, code: 400, message });
    }
    const badEnum = await admin("POST", "/v1/licenses", { license: { productId, licensingMode: "Dongle" } });
    expect(badEnum.status).toBe(400);
    expect(await countRows("licenses")).toBe(before);
  });

  it("accepts enumerations by name and writes them as names when SerializeJSonEnumAsString", async () => {
    const { id } = await newLicense({ licenseType: "Demo", licensingMode: "Floating" });
    expect(await read(id)).toMatchObject({ licenseType: 1, licensingMode: 2 });
    await setSetting("Application:SerializeJSonEnumAsString", "true");
    try {
      expect(await read(id)).toMatchObject({ licenseType: "Demo", licensingMode: "Floating" });
    } finally {
      await setSetting("Application:SerializeJSonEnumAsString", null);
    }
  });
});

describe("templates", () => {
  let templateId: number;
  beforeAll(async () => {
    const res = await admin("POST", "/v1/license-templates", {
      licenseTemplate: {
        name: "Trial 30",
        productId,
        licenseType: "Trial",
        edition: "Professional",
        licensingMode: "Activation",
        maxClients: 3,
        expireDays: 30,
        supportDays: 365,
        features: ["export", "sync"],
      },
    });
    expect(res.status, res.text).toBe(200);
    templateId = res.body["licenseTemplateId"];
  });

  it("fills every omitted property, counting expireDays and supportDays from issueDate", async () => {
    const { id } = await newLicense({ productId, templateId, issueDate: "2030-01-01T00:00:00Z" });
    expect(await read(id)).toMatchObject({
      templateId,
      licenseType: 2,
      edition: "Professional",
      licensingMode: 1,
      maxClients: 3,
      features: ["export", "sync"],
      issueDate: "2030-01-01T00:00:00.000Z",
      expireDate: "2030-01-31T00:00:00.000Z",
      supportExpireDate: "2031-01-01T00:00:00.000Z",
      status: "NotActivated",
    });
  });

  it("counts from now when issueDate is omitted", async () => {
    const license = await read((await newLicense({ productId, templateId })).id);
    expect(Date.parse(license["expireDate"]) - Date.parse(license["issueDate"])).toBe(30 * DAY);
    expect(Date.parse(license["supportExpireDate"]) - Date.parse(license["issueDate"])).toBe(365 * DAY);
  });

  it("keeps what the body says, including an explicit null (a perpetual license)", async () => {
    const { id } = await newLicense({
      productId,
      templateId,
      edition: "Ultimate",
      maxClients: 0,
      features: [],
      expireDate: null,
      licensingMode: "File",
    });
    const license = await read(id);
    expect(license).toMatchObject({
      edition: "Ultimate",
      maxClients: 0,
      features: [],
      licensingMode: 0,
      licenseType: 2,
    });
    expect(license["expireDate"]).toBeUndefined();
    expect(license["supportExpireDate"]).toBeDefined();
  });

  it("refuses a template of another product, on create and on update, writing nothing", async () => {
    const otherProduct = await newProduct();
    const before = await countRows("licenses");
    const res = await admin("POST", "/v1/licenses", { license: { productId: otherProduct, templateId } });
    expect(res.status).toBe(400);
    expect(res.body["message"]).toBe(
      `LicenseTemplate ${templateId} is for product ${productId}, not product ${otherProduct}`,
    );
    expect(await countRows("licenses")).toBe(before);

    const { id } = await newLicense({ productId, templateId });
    expect((await put({ id, productId: otherProduct })).status).toBe(400);
    expect((await read(id))["productId"]).toBe(productId);
  });

  it("lists a template's licenses", async () => {
    const { id } = await newLicense({ productId, templateId });
    const res = await admin("GET", `/v1/license-templates/${templateId}/licenses?take=1000`);
    expect(res.status).toBe(200);
    expect(res.body["licenses"].map((l: LicenseRecord) => l.id)).toContain(id);
    expect(res.body["licenses"].every((l: LicenseRecord) => l["templateId"] === templateId)).toBe(true);
    expect(res.body["licenses"][0]).toHaveProperty("status");
  });
});

describe("status", () => {
  it("reads NotActivated for a File license and for an Activation license without live tokens", async () => {
    expect((await read((await newLicense()).id)).status).toBe("NotActivated");
    const activation = await newLicense({ licensingMode: "Activation" });
    await insertToken(activation.id, { expireDate: "2020-01-01T00:00:00.000Z" });
    expect(await read(activation.id)).toMatchObject({ status: "NotActivated", activeClientCount: 0 });
  });

  it("reads Activated while a live token exists, counting machines (Activation) or seats (Floating)", async () => {
    const activation = await newLicense({ licensingMode: "Activation" });
    expect((await issueToken(activation.licenseId, "M-1")).status).toBe(200);
    expect((await issueToken(activation.licenseId, "M-1", { clientId: "second app" })).status).toBe(200);
    expect(
      (await issueToken(activation.licenseId, "M-2", { expireDate: new Date(Date.now() + DAY).toISOString() })).status,
    ).toBe(200);
    expect(await read(activation.id)).toMatchObject({ status: "Activated", activeClientCount: 2 });

    const floating = await newLicense({ licensingMode: "Floating", maxClients: 5 });
    for (const machineId of ["A", "A", "B"])
      await insertToken(floating.id, { kind: 1, machineId, expireDate: new Date(Date.now() + 60_000).toISOString() });
    await insertToken(floating.id, { kind: 1, machineId: "C", expireDate: "2020-01-01T00:00:00.000Z" });
    expect(await read(floating.id)).toMatchObject({ status: "Activated", activeClientCount: 3 });
  });

  it("reads Expired past expireDate, and Revoked before Expired", async () => {
    const { id } = await newLicense({ licensingMode: "Activation", expireDate: "2020-06-01T00:00:00Z" });
    await insertToken(id, {});
    expect((await read(id)).status).toBe("Expired");
    expect((await put({ id, revoked: true })).status).toBe(200);
    expect((await read(id)).status).toBe("Revoked");
  });

  it("reads Tampered when a core field is changed behind the API, before every other state", async () => {
    const { id } = await newLicense({ maxClients: 2 });
    await env.DB.prepare("UPDATE licenses SET description = 'edited in the database' WHERE id = ?").bind(id).run();
    expect((await read(id)).status).toBe("NotActivated");
    await env.DB.prepare("UPDATE licenses SET max_clients = 99 WHERE id = ?").bind(id).run();
    expect(await read(id)).toMatchObject({ status: "Tampered", maxClients: 99 });

    const revoked = await newLicense();
    expect((await put({ id: revoked.id, revoked: true })).status).toBe(200);
    await env.DB.prepare("UPDATE licenses SET expire_date = '2099-01-01T00:00:00.000Z' WHERE id = ?")
      .bind(revoked.id)
      .run();
    expect((await read(revoked.id)).status).toBe("Tampered");

    for (const column of ["user_key = 'FORGED'", "revoked = 0", "features = '[\"all\"]'", "integrity = NULL"]) {
      const victim = await newLicense({ licensingMode: "Activation", features: ["basic"] });
      if (column === "revoked = 0") await put({ id: victim.id, revoked: true });
      await env.DB.prepare(`UPDATE licenses SET ${column} WHERE id = ?`).bind(victim.id).run();
      expect((await read(victim.id)).status, column).toBe("Tampered");
    }
  });

  it("keeps a tampered license Tampered through API writes, and re-signs an intact one", async () => {
    const tampered = await newLicense();
    await env.DB.prepare("UPDATE licenses SET license_type = 1 WHERE id = ?").bind(tampered.id).run();
    expect((await put({ id: tampered.id, description: "looked at it", maxClients: 4 })).status).toBe(200);
    expect(await read(tampered.id)).toMatchObject({ status: "Tampered", description: "looked at it", maxClients: 4 });

    const intact = await newLicense({ licensingMode: "Activation" });
    expect(
      (
        await put({
          id: intact.id,
          maxClients: 7,
          edition: "Ultimate",
          features: ["x"],
          expireDate: "2099-01-01T00:00:00Z",
        })
      ).status,
    ).toBe(200);
    expect(await read(intact.id)).toMatchObject({ status: "NotActivated", maxClients: 7, edition: "Ultimate" });
  });

  it("answers 500 naming Application:EncryptionKey when it is not set, writing nothing", async () => {
    await setSetting("Application:EncryptionKey", "");
    try {
      const before = await countRows("licenses");
      const create = await admin("POST", "/v1/licenses", { license: { productId } });
      expect(create.status).toBe(500);
      expect(create.body["message"]).toContain("Application:EncryptionKey");
      expect(await countRows("licenses")).toBe(before);
      const list = await admin("GET", "/v1/licenses");
      expect(list.status).toBe(500);
      expect(list.body["message"]).toContain("Application:EncryptionKey");
    } finally {
      await setSetting("Application:EncryptionKey", null);
    }
  });

  it("reads every license as Tampered under another Application:EncryptionKey", async () => {
    const { id } = await newLicense();
    await setSetting("Application:EncryptionKey", "a-rotated-key");
    try {
      expect((await read(id)).status).toBe("Tampered");
    } finally {
      await setSetting("Application:EncryptionKey", null);
    }
    expect((await read(id)).status).toBe("NotActivated");
  });
});

describe("update", () => {
  it("revokes with true, keeps the revocation when revoked is omitted, un-revokes only with an explicit false", async () => {
    const { id } = await newLicense({ licensingMode: "Activation", maxClients: 2 });
    expect((await put({ id, revoked: true })).body).toEqual({ success: true, code: 0 });
    expect(await read(id)).toMatchObject({ revoked: true, status: "Revoked" });
    expect((await put({ id, edition: "Professional", maxClients: 3 })).status).toBe(200);
    expect(await read(id)).toMatchObject({
      revoked: true,
      status: "Revoked",
      edition: "Professional",
      maxClients: 3,
      licensingMode: 1,
    });
    expect((await put({ id, revoked: false })).status).toBe(200);
    expect(await read(id)).toMatchObject({ revoked: false, status: "NotActivated", edition: "Professional" });
  });

  it("changes only what is sent, never the generated identifiers", async () => {
    const { id, licenseId } = await newLicense({ licenseeEmail: "a@example.com", features: ["a"] });
    const before = await read(id);
    const res = await put({
      id,
      licenseId: "licFFFFFFFF",
      userKey: "FORGED",
      description: "renewed",
      licenseeEmail: null,
    });
    expect(res.status, res.text).toBe(200);
    const after = await read(id);
    expect(after).toMatchObject({
      licenseId,
      userKey: before.userKey,
      description: "renewed",
      features: ["a"],
      status: "NotActivated",
    });
    expect(after["licenseeEmail"]).toBeUndefined();
    expect(after["createdAt"]).toBe(before["createdAt"]);
  });

  it("keeps the integrity through concurrent partial updates of different core fields", async () => {
    const { id } = await newLicense({ licensingMode: "Activation" });
    const changes = [
      { maxClients: 9 },
      { edition: "Ultimate" },
      { features: ["a", "b"] },
      { expireDate: "2099-01-01T00:00:00.000Z" },
      { supportExpireDate: "2098-01-01T00:00:00.000Z" },
      { licenseType: "Demo" },
      { description: "not a core field" },
    ];
    const answers = await Promise.all(changes.map((change) => put({ id, ...change })));
    expect(answers.map((a) => a.status)).toEqual(changes.map(() => 200));
    expect(await read(id)).toMatchObject({
      status: "NotActivated",
      maxClients: 9,
      edition: "Ultimate",
      features: ["a", "b"],
      expireDate: "2099-01-01T00:00:00.000Z",
      supportExpireDate: "2098-01-01T00:00:00.000Z",
      licenseType: 1,
      description: "not a core field",
    });
  });

  it("refuses clearing defaulted properties, unknown ids and unknown references", async () => {
    const { id } = await newLicense();
    const cleared = await put({ id, maxClients: null, revoked: null });
    expect(cleared.status).toBe(400);
    expect(cleared.body["message"]).toBe("A license's maxClients, revoked cannot be cleared");
    expect((await put({ id: 999_999, edition: "x" })).body).toEqual({
      success: false,
      code: 400,
      message: "License 999999 not found",
    });
    expect((await put({ id, customerId: 999_999 })).body["message"]).toBe("Customer 999999 not found (customerId)");
    const badProduct = await put({ id, productId: null });
    expect(badProduct.status).toBe(400);
    expect((await read(id)).status).toBe("NotActivated");
  });
});

describe("lists", () => {
  let customerId: number;
  let orderId: number;
  const made: { id: number; licenseId: string }[] = [];
  beforeAll(async () => {
    customerId = await newCustomer();
    orderId = await newOrder();
    made.push(await newLicense({ productId, customerId, edition: "Alpha", issueDate: "2031-03-01T00:00:00Z" }));
    made.push(
      await newLicense({
        productId,
        customerId,
        orderId,
        edition: "Beta",
        issueDate: "2031-01-01T00:00:00Z",
        licenseType: "Trial",
      }),
    );
    made.push(
      await newLicense({
        productId,
        orderId,
        edition: "Gamma",
        issueDate: "2031-02-01T00:00:00Z",
        licensingMode: "Activation",
      }),
    );
  });

  it("filters, sorts, pages and selects, with the computed properties", async () => {
    const filter = encodeURIComponent(`productId == ${productId} && issueDate >= "2031-01-01" && edition != null`);
    const sorted = await admin("GET", `/v1/licenses?filter=${filter}&sort=-issueDate`);
    expect(sorted.body["licenses"].map((l: LicenseRecord) => l["edition"])).toEqual(["Alpha", "Gamma", "Beta"]);
    expect(sorted.body["totalLicensesCount"]).toBe(3);
    const page = await admin(
      "GET",
      `/v1/licenses?filter=${filter}&sort=issueDate&skip=1&take=1&select=licenseId,status,activeClientCount`,
    );
    expect(page.body["licenses"]).toEqual([
      { licenseId: made[2]!.licenseId, status: "NotActivated", activeClientCount: 0 },
    ]);
    expect(page.body["totalLicensesCount"]).toBe(3);
    const byKey = await admin(
      "GET",
      `/v1/licenses?filter=${encodeURIComponent(`licenseId == "${made[1]!.licenseId}" && licenseType == "Trial"`)}`,
    );
    expect(byKey.body["licenses"].map((l: LicenseRecord) => l.id)).toEqual([made[1]!.id]);
  });

  it("answers 500 to a filter on the computed status", async () => {
    const res = await admin("GET", `/v1/licenses?filter=${encodeURIComponent('status == "Revoked"')}`);
    expect(res.status).toBe(500);
    expect(res.body["message"]).toBe("No property or field 'status' exists in type 'License'");
  });

  it("lists the licenses of a customer and of an order; unknown parents answer 400", async () => {
    const ofCustomer = await admin("GET", `/v1/customers/${customerId}/licenses?sort=edition`);
    expect(ofCustomer.body["licenses"].map((l: LicenseRecord) => l["edition"])).toEqual(["Alpha", "Beta"]);
    const ofOrder = await admin("GET", `/v1/orders/${orderId}/licenses?sort=edition&select=edition,status`);
    expect(ofOrder.body).toEqual({
      success: true,
      code: 0,
      licenses: [
        { edition: "Beta", status: "NotActivated" },
        { edition: "Gamma", status: "NotActivated" },
      ],
      totalLicensesCount: 2,
    });
    expect((await admin("GET", "/v1/customers/999999/licenses")).body["message"]).toBe("Customer 999999 not found");
    expect((await admin("GET", "/v1/orders/999999/licenses")).body["message"]).toBe("Order 999999 not found");
    expect((await admin("GET", "/v1/license-templates/999999/licenses")).body["message"]).toBe(
      "LicenseTemplate 999999 not found",
    );
  });

  it("describes a large page with one query for its tokens", async () => {
    const bulkProduct = await newProduct();
    const bulk = await Promise.all(
      Array.from({ length: 120 }, () => newLicense({ productId: bulkProduct, licensingMode: "Activation" })),
    );
    await insertToken(bulk[119]!.id, {});
    const res = await admin("GET", `/v1/licenses?filter=productId==${bulkProduct}&take=1000`);
    expect(res.status, res.text).toBe(200);
    expect(res.body["licenses"]).toHaveLength(120);
    const activated = res.body["licenses"].filter((l: LicenseRecord) => l.status === "Activated");
    expect(activated.map((l: LicenseRecord) => l.id)).toEqual([bulk[119]!.id]);
  });
});

describe("delete", () => {
  it("accepts the lic… id or the integer id in the path", async () => {
    const byPublicId = await newLicense();
    expect((await admin("DELETE", `/v1/licenses/${byPublicId.licenseId}`)).body).toEqual({ success: true, code: 0 });
    const byId = await newLicense();
    expect((await admin("DELETE", `/v1/licenses/${byId.id}`)).status).toBe(200);
    for (const gone of [byPublicId, byId]) {
      const res = await admin("GET", `/v1/licenses?filter=id==${gone.id}`);
      expect(res.body["totalLicensesCount"]).toBe(0);
    }
    const again = await admin("DELETE", `/v1/licenses/${byPublicId.licenseId}`);
    expect(again.body).toEqual({ success: false, code: 400, message: `License ${byPublicId.licenseId} not found` });
    expect((await admin("DELETE", `/v1/licenses/${byId.id}`)).body["message"]).toBe(`License ${byId.id} not found`);
    expect((await admin("DELETE", "/v1/licenses/nonsense")).body["message"]).toBe("License nonsense not found");
  });

  it("deletes the license's tokens and traces; its reports stay without the link", async () => {
    const { id, licenseId } = await newLicense({ licensingMode: "Activation" });
    expect((await issueToken(licenseId, "M-1")).status).toBe(200);
    const now = new Date().toISOString();
    await env.DB.prepare("INSERT INTO license_traces (license_id, action, created_at) VALUES (?, 0, ?), (?, 2, ?)")
      .bind(id, now, id, now)
      .run();
    const report = await env.DB.prepare(
      "INSERT INTO reports (name, license_id, created_at, updated_at) VALUES ('LicenseReport', ?, ?, ?) RETURNING id",
    )
      .bind(id, now, now)
      .first<{ id: number }>();
    const count = async (table: string) =>
      (await env.DB.prepare(`SELECT count(*) AS n FROM ${table} WHERE license_id = ?`).bind(id).first<{ n: number }>())!
        .n;
    expect([await count("license_tokens"), await count("license_traces")]).toEqual([1, 2]);

    expect((await admin("DELETE", `/v1/licenses/${licenseId}`)).status).toBe(200);
    expect([await count("license_tokens"), await count("license_traces"), await count("reports")]).toEqual([0, 0, 0]);
    const kept = await env.DB.prepare("SELECT license_id FROM reports WHERE id = ?")
      .bind(report!.id)
      .first<{ license_id: number | null }>();
    expect(kept).toEqual({ license_id: null });
  });
});

describe("OpenAPI", () => {
  it("documents the create answer with the lic… licenseId and the integer id, and both forms of {licenseId}", async () => {
    const doc = (await admin("GET", "/swagger/v1/swagger.json")).body;
    const schema = doc.paths["/v1/licenses"].post.responses["200"].content["application/json"].schema;
    expect(schema.allOf[0].$ref).toBe("#/components/schemas/Envelope");
    const properties = schema.allOf[1].properties;
    expect(properties.licenseId.type).toBe("string");
    expect(properties.id.type).toBe("integer");
    const param = doc.paths["/v1/licenses/{licenseId}"].delete.parameters[0];
    expect(param).toMatchObject({ name: "licenseId", in: "path", schema: { type: "string" } });
    expect(doc.paths["/v1/licenses/{licenseId}"].delete.description).toMatch(/tokens and traces/);
    const ids = Object.values(doc["paths"] as Record<string, Record<string, { operationId: string }>>).flatMap((item) =>
      Object.values(item).map((op) => op.operationId),
    );
    expect(new Set(ids).size).toBe(ids.length);
  });
});
