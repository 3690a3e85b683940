/**
 * The Keygen-compatible routes (CONTRACT 16), as an application built against Keygen calls them once its vendor has
 * imported the Keygen data and pointed the domain here: validate-key answers each of Keygen's documented codes, and
 * machines are created and deleted with `Authorization: License <key>`, through the service's own licensing
 * operations (their limits and traces). Off until Compat:Keygen:Account names the account.
 */
import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { ADMIN, admin, call, queuedTraces, setSetting } from "./helpers";
import { ID, KEYGEN_ROWS, keygenData, licenseId, machineId } from "./fixtures/keygen/keygen-fixtures";

const ACCOUNT = "acme";
const JSON_API = { "content-type": "application/vnd.api+json", accept: "application/vnd.api+json" };
const [nodeLocked, multi, , suspended, expired, alans] = KEYGEN_ROWS;

const validateKey = (key: string, scope?: Record<string, string>, account = ACCOUNT) =>
  call("POST", `/v1/accounts/${account}/licenses/actions/validate-key`, {
    headers: JSON_API,
    body: { meta: { key, ...(scope ? { scope } : {}) } },
  });
const createMachine = (key: string | undefined, fingerprint: string, license: string) =>
  call("POST", `/v1/accounts/${ACCOUNT}/machines`, {
    headers: { ...JSON_API, ...(key ? { authorization: `License ${key}` } : {}) },
    body: {
      data: {
        type: "machines",
        attributes: { fingerprint, name: "Test machine" },
        relationships: { license: { data: { type: "licenses", id: license } } },
      },
    },
  });
const deleteMachine = (key: string, id: string) =>
  call("DELETE", `/v1/accounts/${ACCOUNT}/machines/${id}`, { headers: { authorization: `License ${key}` } });

/** A license made here with a legacy key: mode Activation, its limit, no machine. */
async function legacyLicense(legacyKey: string, maxClients: number, productId: number): Promise<number> {
  const res = await admin("POST", "/v1/licenses", {
    license: { productId, licensingMode: "Activation", maxClients, legacyKey },
  });
  expect(res.status, res.text).toBe(200);
  return res.body["id"];
}

let desktopId = 0;

beforeAll(async () => {
  for (const code of ["acme-desktop", "acme-server"]) {
    const res = await admin("POST", "/v1/products", { product: { code, name: code, isApplication: true } });
    expect(res.status, res.text).toBe(200);
    if (code === "acme-desktop") desktopId = res.body["productId"];
  }
  const data = keygenData();
  for (const product of data.products.data) product.attributes.code ??= "acme-server";
  const imported = await call("POST", "/v1/imports", { key: ADMIN.key, body: { source: "keygen", data } });
  expect(imported.body["data"], imported.text).toMatchObject({ status: "done", errorCount: 0 });
});

describe("the Keygen-compatible routes", () => {
  it("answer 404 until Compat:Keygen:Account names the account, and then only for it", async () => {
    expect((await validateKey(alans!.legacyKey)).status).toBe(404);
    await setSetting("Compat:Keygen:Account", `${ACCOUNT}, 4f2c1a9e-0000-4000-8000-000000000001`);
    expect((await validateKey(alans!.legacyKey)).status).toBe(200);
    expect((await validateKey(alans!.legacyKey, undefined, "4f2c1a9e-0000-4000-8000-000000000001")).status).toBe(200);
    const other = await validateKey(alans!.legacyKey, undefined, "someone-else");
    expect(other.status).toBe(404);
    expect(other.body).toMatchObject({ errors: [{ code: "NOT_FOUND" }] });
  });

  it("validate a key with Keygen's codes, naming the license by its Keygen id", async () => {
    const valid = await validateKey(alans!.legacyKey, { fingerprint: alans!.machines[0]!.fingerprint });
    expect(valid.headers.get("content-type")).toContain("application/vnd.api+json");
    expect(valid.body).toMatchObject({
      meta: { valid: true, code: "VALID", detail: "is valid" },
      data: {
        id: licenseId(6),
        type: "licenses",
        attributes: { key: alans!.legacyKey, status: "ACTIVE", maxMachines: 3, suspended: false },
        relationships: { product: { data: { type: "products", id: ID.desktop } }, machines: { meta: { count: 1 } } },
      },
    });
    const cases: [string, Record<string, string> | undefined, string, boolean][] = [
      ["NO-SUCH-KEY-AT-ALL", undefined, "NOT_FOUND", false],
      [suspended!.legacyKey, undefined, "SUSPENDED", false],
      [expired!.legacyKey, undefined, "EXPIRED", false],
      [nodeLocked!.legacyKey, { fingerprint: "not-this-machine" }, "FINGERPRINT_SCOPE_MISMATCH", false],
      [nodeLocked!.legacyKey, { product: ID.server }, "PRODUCT_SCOPE_MISMATCH", false],
      // The license's own state before any scope, as Keygen judges.
      [suspended!.legacyKey, { product: ID.server }, "SUSPENDED", false],
      [nodeLocked!.legacyKey, { product: ID.desktop }, "VALID", true],
      [multi!.legacyKey, { fingerprint: multi!.machines[1]!.fingerprint }, "VALID", true],
    ];
    for (const [key, scope, code, ok] of cases) {
      const res = await validateKey(key, scope);
      expect(res.status, key).toBe(200);
      expect(res.body.meta, `${key} ${JSON.stringify(scope)}`).toMatchObject({ valid: ok, code });
    }
    expect((await validateKey("NO-SUCH-KEY-AT-ALL")).body.data).toBeNull();

    await legacyLicense("LOCKED-NO-MACHINE-1", 1, desktopId);
    expect((await validateKey("LOCKED-NO-MACHINE-1", { fingerprint: "fp" })).body.meta).toMatchObject({
      valid: false,
      code: "NO_MACHINE",
    });
    await legacyLicense("MULTI-NO-MACHINE-1", 3, desktopId);
    expect((await validateKey("MULTI-NO-MACHINE-1", { fingerprint: "fp" })).body.meta).toMatchObject({
      code: "NO_MACHINES",
    });
    // Two machines, then the limit lowered below them.
    const id = await legacyLicense("TOO-MANY-MACHINES-1", 2, desktopId);
    const own = await admin("GET", `/v1/licenses?filter=${encodeURIComponent(`id == ${id}`)}`);
    for (const machine of ["m-1", "m-2"])
      expect((await createMachine("TOO-MANY-MACHINES-1", machine, own.body["licenses"][0].licenseId)).status).toBe(201);
    await admin("PUT", "/v1/licenses", { license: { id, maxClients: 1 } });
    expect((await validateKey("TOO-MANY-MACHINES-1")).body.meta).toMatchObject({ code: "TOO_MANY_MACHINES" });
    // A missing key is Keygen's 400.
    const blank = await call("POST", `/v1/accounts/${ACCOUNT}/licenses/actions/validate-key`, {
      headers: JSON_API,
      body: { meta: {} },
    });
    expect(blank.status).toBe(400);
    expect(blank.body.errors[0]).toMatchObject({ source: { pointer: "/meta/key" } });
  });

  it("create machines up to the license's limit, and delete them by their Keygen ids", async () => {
    const key = alans!.legacyKey;
    const created = await createMachine(key, "NEW-FINGERPRINT-1", licenseId(6));
    expect(created.status, created.text).toBe(201);
    expect(created.body.data).toMatchObject({
      type: "machines",
      attributes: { fingerprint: "NEW-FINGERPRINT-1", name: "Test machine" },
      relationships: { license: { data: { type: "licenses", id: licenseId(6) } } },
    });
    const newId = created.body.data.id as string;
    expect((await validateKey(key, { fingerprint: "NEW-FINGERPRINT-1" })).body.meta.code).toBe("VALID");
    const again = await createMachine(key, "NEW-FINGERPRINT-1", licenseId(6));

    expect([again.status, again.body.errors[0].code]).toEqual([422, "FINGERPRINT_TAKEN"]);
    expect((await createMachine(key, "NEW-FINGERPRINT-2", licenseId(6))).status).toBe(201);
    const over = await createMachine(key, "NEW-FINGERPRINT-3", licenseId(6));

    expect([over.status, over.body.errors[0].code]).toEqual([422, "MACHINE_LIMIT_EXCEEDED"]);

    const refusals: [string | undefined, string, number, string][] = [
      [undefined, licenseId(6), 401, "TOKEN_MISSING"],
      ["NO-SUCH-KEY-AT-ALL", licenseId(6), 401, "LICENSE_INVALID"],
      [suspended!.legacyKey, licenseId(4), 403, "LICENSE_SUSPENDED"],
      [key, licenseId(1), 403, "LICENSE_NOT_ALLOWED"],
    ];
    for (const [auth, license, status, code] of refusals) {
      const res = await createMachine(auth, "ANOTHER-MACHINE", license);
      expect([res.status, res.body.errors[0].code], `${auth} ${license}`).toEqual([status, code]);
    }

    // The imported machine, by the id Keygen gave it; then the one created here.
    expect((await deleteMachine(key, machineId(5))).status).toBe(204);
    expect((await validateKey(key, { fingerprint: alans!.machines[0]!.fingerprint })).body.meta.code).toBe(
      "FINGERPRINT_SCOPE_MISMATCH",
    );
    expect((await deleteMachine(key, newId)).status).toBe(204);
    expect((await deleteMachine(key, newId)).status).toBe(404);
    expect((await createMachine(key, "NEW-FINGERPRINT-3", licenseId(6))).status).toBe(201);

    // A machine that holds a live license file is not deactivated: the service's refusal, in Keygen's shape.
    const held = await createMachine(multi!.legacyKey, "FILE-HOLDER", licenseId(2));
    expect(held.status, held.text).toBe(201);
    const file = await call("POST", "/v1/license/checkout", {
      key: ADMIN.key,
      body: { userKey: multi!.legacyKey, machineId: "FILE-HOLDER" },
    });
    expect(file.status, file.text).toBe(200);
    const refused = await deleteMachine(multi!.legacyKey, held.body.data.id);
    expect([refused.status, refused.body.errors[0].code]).toEqual([422, "LICENSE_FILE_HELD"]);

    // Through the service's own operations: each left its trace (validations, activations, deactivations).
    const row = await env.DB.prepare("SELECT id FROM licenses WHERE source_id = ?")
      .bind(`keygen:${licenseId(6)}`)
      .first();
    const actions = await queuedTraces(Number(row?.["id"]), 8);
    expect(actions.length).toBeGreaterThanOrEqual(8);
  });
});
