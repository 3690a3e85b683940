/**
 * Imports (CONTRACT 16) through the public API: Keygen's documents and a CSV text, a dry run that changes nothing, a
 * report per row, a second run that creates nothing, keys that work as typed afterwards, and a large import written
 * off the request path through the queue, with its progress.
 */
import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { ADMIN, admin, call, keyFor } from "./helpers";
import { KEYGEN_ROWS, keygenData } from "./fixtures/keygen/keygen-fixtures";
import type { JsonBody } from "./json-body";
import { getDb } from "../src/db/client";
import { loadConfig } from "../src/db/settings-store";
import { writeChunk } from "../src/imports/import-writes";
import { type LicenseKeyGenerator, generateLicenseKeys } from "../src/licensing/license-core";

const count = async (table: string) =>
  (await env.DB.prepare(`SELECT count(*) AS n FROM ${table}`).first<{ n: number }>())?.n ?? 0;
const counts = async () => ({
  customers: await count("customers"),
  licenses: await count("licenses"),
  tokens: await count("license_tokens"),
});
const start = (body: Record<string, unknown>, key = ADMIN.key) => call("POST", "/v1/imports", { key, body });
const validate = (userKey: string) => call("POST", "/v1/license/validate", { key: ADMIN.key, body: { userKey } });

/** Keygen's fixtures, the server product given a code the service knows. */
function keygen() {
  const data = keygenData();
  for (const product of data.products.data) product.attributes.code ??= "acme-server";
  return data;
}

let desktop = 0;

beforeAll(async () => {
  for (const code of ["acme-desktop", "acme-server"]) {
    const res = await admin("POST", "/v1/products", { product: { code, name: code, isApplication: true } });
    expect(res.status, res.text).toBe(200);
    if (code === "acme-desktop") desktop = res.body["productId"];
  }
});

describe("an import from Keygen", () => {
  it("is judged by a dry run that writes nothing, then imported, then found imported by a second run", async () => {
    const before = await counts();
    const dry = await start({ source: "keygen", dryRun: true, data: keygen() });
    expect(dry.status, dry.text).toBe(200);
    const expected = { customers: 3, licenses: KEYGEN_ROWS.length, activations: 6 };
    expect(dry.body["data"]).toMatchObject({ status: "done", dryRun: true, created: expected, skipped: 0, errors: [] });
    expect(await counts()).toEqual(before);

    const done = await start({ source: "keygen", data: keygen() });
    expect(done.status, done.text).toBe(200);
    expect(done.body["data"]).toMatchObject({ status: "done", total: 6, processed: 6, created: expected, errors: [] });
    expect(done.body["data"].unsupported.length).toBeGreaterThan(0);
    expect(await counts()).toEqual({
      customers: before.customers + 3,
      licenses: before.licenses + 6,
      tokens: before.tokens + 6,
    });
    const again = await call("GET", `/v1/imports/${done.body["data"].id}`, { key: ADMIN.key });
    expect(again.body["data"]).toEqual(done.body["data"]);

    const second = await start({ source: "keygen", data: keygen() });
    expect(second.body["data"]).toMatchObject({
      created: { customers: 0, licenses: 0, activations: 0 },
      skipped: 6,
      errors: [],
    });
    expect(await counts()).toEqual({
      customers: before.customers + 3,
      licenses: before.licenses + 6,
      tokens: before.tokens + 6,
    });
  });

  it("leaves keys that work as typed, with their machines, limits and revocations", async () => {
    const [nodeLocked, floating, , suspended, , sheet] = KEYGEN_ROWS;
    // Its imported machine is activated as activate would have done it: validate finds it.
    const onMachine = await call("POST", "/v1/license/validate", {
      key: ADMIN.key,
      body: { userKey: nodeLocked!.legacyKey, machineId: nodeLocked!.machines[0]!.fingerprint },
    });
    expect(onMachine.status, onMachine.text).toBe(200);
    expect(onMachine.body["status"]).toBe("Activated");
    // A node-locked license holds its imported machine: that one activates again, another does not.
    const same = await call("POST", "/v1/license/activate", {
      key: ADMIN.key,
      body: { userKey: nodeLocked!.legacyKey, machineId: nodeLocked!.machines[0]!.fingerprint },
    });
    expect(same.status, same.text).toBe(200);
    const other = await call("POST", "/v1/license/activate", {
      key: ADMIN.key,
      body: { userKey: nodeLocked!.legacyKey, machineId: "A-NEW-MACHINE" },
    });
    expect(other.status, other.text).toBe(526);
    // Its policy's 10 machines: a third one activates beside the two imported.
    const third = await call("POST", "/v1/license/activate", {
      key: ADMIN.key,
      body: { userKey: floating!.legacyKey, machineId: "STUDIO-PC-3" },
    });
    expect(third.status, third.text).toBe(200);
    expect((await validate(suspended!.legacyKey)).status).toBe(527);
    const login = await call("POST", "/v1/auth/login", { body: { userKey: sheet!.legacyKey } });
    expect(login.status, login.text).toBe(200);
    const license = await env.DB.prepare(
      "SELECT l.source_id, l.licensing_mode, l.max_clients, c.email FROM licenses l JOIN customers c ON c.id = l.customer_id WHERE l.source_id = ?",
    )
      .bind(`keygen:${floating!.sourceId}`)
      .first();
    expect(license).toEqual({
      source_id: `keygen:${floating!.sourceId}`,
      licensing_mode: 1,
      max_clients: 10,
      email: "ops@northwind.example",
    });
  });

  it("reports a product the service does not have, and malformed documents, with their rows", async () => {
    const data = keygenData();
    // The server product has no code, and its name is no product's code here.
    const res = await start({ source: "keygen", dryRun: true, data });
    expect(res.status, res.text).toBe(200);
    const errors = res.body["data"].errors as { row: number; field: string }[];
    expect(errors.filter((e) => e.field === "product").map((e) => e.row)).toEqual([3, 5]);
    const malformed = await start({ source: "keygen", dryRun: true, data: { licenses: { data: "nope" } } });
    expect(malformed.status).toBe(200);
    expect(malformed.body["data"]).toMatchObject({ created: { licenses: 0 } });
    expect(malformed.body["data"].errors[0]).toMatchObject({ row: 0 });
  });
});

/** An import's report once its queued chunks are written (polled as a client would). */
async function finished(report: JsonBody): Promise<JsonBody> {
  let current = report;
  for (let i = 0; i < 120 && current["status"] === "running"; i++) {
    await new Promise((resolve) => setTimeout(resolve, 500));
    current = (await call("GET", `/v1/imports/${report["id"]}`, { key: ADMIN.key })).body["data"];
  }
  return current;
}

describe("an import from a CSV text", () => {
  const header = "legacyKey,product,customerEmail,customerName,edition,expireDate,maxActivations,machines";

  it("imports the good rows, reports each bad one by line and field, and a dry run changes nothing", async () => {
    const csv = [
      header,
      "SHEET-KEY-0001,acme-desktop,ann@example.com,Ann Smith,Pro,2030-01-01,2,PC-1;PC-2",
      "SHEET-KEY-0002,acme-desktop,bob@example.com,Bob,,,0,",
      "SHEET-KEY-0003,no-such-product,,,,,,",
      "SHEET-KEY-0004,acme-desktop,,,,1899-01-01,,",
      "SHEET-KEY-0001,acme-desktop,,,,,,",
      "short,acme-desktop,,,,,,",
    ].join("\n");
    const before = await counts();
    const dry = await start({ source: "csv", dryRun: true, data: csv });
    expect(dry.status, dry.text).toBe(200);
    expect(await counts()).toEqual(before);
    const res = await start({ source: "csv", data: csv });
    expect(res.status, res.text).toBe(200);
    const report = res.body["data"];
    expect(report).toMatchObject({ total: 6, created: { customers: 2, licenses: 2, activations: 2 }, skipped: 0 });
    expect(report.errors.map((e: { row: number; field: string }) => [e.row, e.field])).toEqual([
      [4, "product"],
      [5, "expireDate"],
      [6, "legacyKey"],
      [7, "legacyKey"],
    ]);
    expect(dry.body["data"]).toMatchObject({ created: report.created, errorCount: report.errorCount });
    expect(await counts()).toEqual({
      customers: before.customers + 2,
      licenses: before.licenses + 2,
      tokens: before.tokens + 2,
    });
    expect((await validate("SHEET-KEY-0002")).status).toBe(200);
    // A perpetual license keeps its updates: its maintenance never ends (SPEC's default would end it a year on).
    const perpetual = await env.DB.prepare(
      "SELECT expire_date, support_expire_date FROM licenses WHERE legacy_key_hint = '0002' ORDER BY id DESC",
    ).first();
    expect(perpetual).toEqual({ expire_date: null, support_expire_date: "9999-12-31T23:59:59.999Z" });
  });

  it("writes more than 1,000 rows off the request path, with progress, and the same again creates nothing", async () => {
    const rows = Array.from({ length: 1500 }, (_, i) => `BULK-KEY-${String(i).padStart(6, "0")},acme-server,,,,,1,`);
    const csv = [header, ...rows].join("\n");
    const before = await count("licenses");
    const res = await start({ source: "csv", data: csv });
    expect(res.status, res.text).toBe(202);
    expect(res.body["data"]).toMatchObject({ status: "running", total: 1500 });
    const report = await finished(res.body["data"]);
    expect(report).toMatchObject({ status: "done", processed: 1500, created: { licenses: 1500 }, errorCount: 0 });
    expect(await count("licenses")).toBe(before + 1500);
    expect((await validate("BULK-KEY-001499")).status).toBe(200);
    // Its chunks' objects are gone once written.
    expect((await env.ARTIFACTS!.list({ prefix: `imports/${report.id}/` })).objects).toEqual([]);

    const again = await start({ source: "csv", data: csv });
    expect(again.status).toBe(202);
    expect(await finished(again.body["data"])).toMatchObject({
      status: "done",
      processed: 1500,
      created: { customers: 0, licenses: 0, activations: 0 },
      skipped: 1500,
    });
    expect(await count("licenses")).toBe(before + 1500);
  });
});

describe("an import's writes", () => {
  it("draw new identifiers for a license whose generated id is taken, and write it whole", async () => {
    const taken = await admin("POST", "/v1/licenses", { license: { productId: desktop, licensingMode: "Activation" } });
    const takenId = taken.body["licenseId"] as string;
    let calls = 0;
    const generate: LicenseKeyGenerator = (format) => {
      const fresh = generateLicenseKeys(format);
      // The first license drawn gets the id of a license already there, as a 32-bit id does among 100,000.
      return calls++ === 0 ? { ...fresh, licenseId: takenId } : fresh;
    };
    const { config } = await loadConfig(env, env.DB);
    const outcome = await writeChunk(
      getDb(env.DB),
      "csv",
      [{ row: 2, legacyKey: "COLLIDING-KEY-1", product: "acme-desktop", machines: [{ fingerprint: "PC-9" }] }],
      { config, products: new Map([["acme-desktop", desktop]]), now: new Date(), dryRun: false, generate },
    );
    expect(outcome).toMatchObject({ created: { licenses: 1, activations: 1 }, errors: [] });
    expect(calls).toBe(2);
    const onMachine = await call("POST", "/v1/license/validate", {
      key: ADMIN.key,
      body: { userKey: "COLLIDING-KEY-1", machineId: "PC-9" },
    });
    expect(onMachine.body["status"], onMachine.text).toBe("Activated");
  });
});

describe("an import refuses", () => {
  it("what is not an import, with 400, 403 or 413 naming it, and writes nothing", async () => {
    const before = await counts();
    expect((await start({ source: "keygen-v2", data: {} })).status).toBe(400);
    const csv = await start({ source: "csv", data: { rows: [] } });
    expect(csv.status).toBe(400);
    expect(csv.text).toContain("data");
    const manager = await keyFor(["LicenseManager"]);
    expect((await start({ source: "csv", data: "legacyKey,product\n" }, manager)).status).toBe(403);
    const huge = await call("POST", "/v1/imports", {
      key: ADMIN.key,
      headers: { "content-length": String(50 * 1024 * 1024) },
      body: { source: "csv", data: "" },
    });
    expect(huge.status).toBe(413);
    expect(huge.text).toContain("16 MiB");
    expect(await counts()).toEqual(before);
  });
});
