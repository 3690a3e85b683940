/**
 * Keygen's reader (src/imports/keygen.ts, CONTRACT section 16): the pages Keygen's list endpoints answer, laid out as
 * Keygen's serializers write them (test/fixtures/keygen/), read into the rows the import writes: product by code or
 * name, licensing mode and limits from the policy with the license's own limits first, expiry (or created + the
 * policy's duration), customer, machines, suspension, and what has no equivalent. Then each bad input: its problem
 * (row and field), the other rows still read.
 */
import { describe, expect, it } from "vitest";
import { readKeygen } from "../src/imports/keygen";
import type { ImportRow } from "../src/imports/rows";
import { ID, JANE, KEYGEN_ROWS, keygenData, licenseId, machineId } from "./fixtures/keygen/keygen-fixtures";
import licensesPage2 from "./fixtures/keygen/licenses-page-2.json";
import type { JsonBody } from "./json-body";

type Json = JsonBody;

/** The license of a row (1-based across the two pages of three). */
function license(data: Json, row: number): Json {
  return data["licenses"][Math.floor((row - 1) / 3)].data[(row - 1) % 3];
}

describe("Keygen's documents read into rows", () => {
  it("reads the fixtures: six licenses over two pages, their products, policies, owners and machines", () => {
    const read = readKeygen(keygenData());
    expect(read.errors).toEqual([]);
    expect(read.rows).toEqual(KEYGEN_ROWS);
    expect(read.unsupported).toEqual([
      `policy 'Server Annual' (${ID.annual}): maxCores 16`,
      `policy 'Server Annual' (${ID.annual}): maxUses 1000`,
      `policy 'Server Annual' (${ID.annual}): requireHeartbeat (heartbeatDuration 600 s)`,
      "license metadata (1 of the licenses have some)",
    ]);
  });

  it("reads a single list document as one page, and licenses alone (no machines, no users needed)", () => {
    const data = keygenData();
    const alone = readKeygen({ products: data["products"], policies: data["policies"], licenses: licensesPage2 });
    // Row 4 and 6 name owners: without the users they are problems; row 5 has none.
    expect(alone.rows.map((r) => [r.row, r.sourceId])).toEqual([[2, licenseId(5)]]);
    expect(alone.errors.map((e) => [e.row, e.field])).toEqual([
      [1, "owner"],
      [3, "user"],
    ]);
  });

  const variants: { name: string; change: (data: Json) => void; row: number; expected: Partial<ImportRow> }[] = [
    {
      name: "status BANNED revokes as banned",
      change: (d) => Object.assign(license(d, 1).attributes, { status: "BANNED" }),
      row: 1,
      expected: { revoked: true, description: "Banned in Keygen" },
    },
    {
      name: "suspended: true alone revokes",
      change: (d) => Object.assign(license(d, 2).attributes, { suspended: true }),
      row: 2,
      expected: { revoked: true, description: "Suspended in Keygen" },
    },
    {
      name: "the license's maxProcesses makes it floating",
      change: (d) => Object.assign(license(d, 6).attributes, { maxProcesses: 7 }),
      row: 6,
      expected: { licensingMode: "floating", maxClients: 7 },
    },
    {
      name: "a license maxMachines of null takes the policy's",
      change: (d) => Object.assign(license(d, 2).attributes, { maxMachines: null }),
      row: 2,
      expected: { licensingMode: "activation", maxClients: 3 },
    },
    {
      name: "a floating policy without maxMachines is unlimited",
      change: (d) => {
        Object.assign(license(d, 6).attributes, { maxMachines: null });
        d["policies"].data[2].attributes.maxMachines = null;
      },
      row: 6,
      expected: { licensingMode: "activation", maxClients: 0 },
    },
    {
      name: "the product comes from the policy when the license names none",
      change: (d) => delete license(d, 3).relationships.product,
      row: 3,
      expected: { product: "Acme Server" },
    },
    {
      name: "Keygen's empty product linkage { type, id: null } names none",
      change: (d) => (license(d, 1).relationships.product.data.id = null),
      row: 1,
      expected: { product: "acme-desktop" },
    },
    {
      name: "an expiry with an offset becomes an instant",
      change: (d) => (license(d, 1).attributes.expiry = "2027-03-01T02:00:00+02:00"),
      row: 1,
      expected: { expireDate: "2027-03-01T00:00:00.000Z" },
    },
    {
      name: "an expiry of a date alone is its midnight (UTC)",
      change: (d) => (license(d, 1).attributes.expiry = "2027-03-01"),
      row: 1,
      expected: { expireDate: "2027-03-01T00:00:00.000Z" },
    },
    {
      name: "an expiry of null stays perpetual even with the policy's duration",
      change: (d) => (license(d, 5).attributes.expiry = null),
      row: 5,
      expected: { expireDate: undefined },
    },
    {
      name: "a key is trimmed",
      change: (d) => (license(d, 6).attributes.key = "  ACME-DESKTOP-2024-000042\t"),
      row: 6,
      expected: { legacyKey: "ACME-DESKTOP-2024-000042" },
    },
    {
      name: "a policy name longer than 64 characters is cut",
      change: (d) => (d["policies"].data[3].attributes.name = `Desktop ${"N".repeat(70)}`),
      row: 1,
      expected: { edition: `Desktop ${"N".repeat(56)}` },
    },
    {
      name: "a policy name is cut at a whole character (64 UTF-16 code units at most)",
      change: (d) => (d["policies"].data[3].attributes.name = `${"N".repeat(63)}\u{1F511}Pro`),
      row: 1,
      expected: { edition: "N".repeat(63) },
    },
    {
      name: "a fullName of one word is the first name",
      change: (d) =>
        Object.assign(d["users"].data[0].attributes, { firstName: null, lastName: null, fullName: "Cher" }),
      row: 1,
      expected: { customer: { sourceId: JANE.sourceId, email: JANE.email, firstName: "Cher" } },
    },
  ];
  it.each(variants)("$name", ({ change, row, expected }) => {
    const data = keygenData();
    change(data);
    const read = readKeygen(data);
    expect(read.errors).toEqual([]);
    expect(read.rows).toHaveLength(6);
    expect(read.rows.find((r) => r.row === row)).toEqual({ ...KEYGEN_ROWS[row - 1], ...expected });
  });

  const extras: { name: string; change: (data: Json) => void; unsupported: string }[] = [
    {
      name: "a signing scheme",
      change: (d) => (d["policies"].data[2].attributes.scheme = "ED25519_SIGN"),
      unsupported: `policy 'Desktop Floating' (${ID.floating}): scheme ED25519_SIGN (signed keys)`,
    },
    {
      name: "a check-in requirement",
      change: (d) =>
        Object.assign(d["policies"].data[3].attributes, {
          requireCheckIn: true,
          checkInInterval: "WEEK",
          checkInIntervalCount: 2,
        }),
      unsupported: `policy 'Desktop Node-Locked' (${ID.nodeLocked}): requireCheckIn (every 2 WEEK)`,
    },
    {
      name: "another expiration strategy",
      change: (d) => (d["policies"].data[1].attributes.expirationStrategy = "MAINTAIN_ACCESS"),
      unsupported: `policy 'Server Concurrent' (${ID.concurrent}): expirationStrategy MAINTAIN_ACCESS`,
    },
    {
      name: "a license's own maxUses",
      change: (d) => (license(d, 2).attributes.maxUses = 50),
      unsupported: `license ${licenseId(2)}: maxUses 50`,
    },
    {
      name: "a group",
      change: (d) => (license(d, 3).relationships.group.data = { type: "groups", id: "g-1" }),
      unsupported: "groups (1 of the resources are in one)",
    },
    {
      name: "an environment",
      change: (d) => (d["users"].data[1].relationships.environment.data = { type: "environments", id: "e-1" }),
      unsupported: "environments (1 of the resources are in one)",
    },
    {
      name: "entitlements beside the five lists",
      change: (d) => (d["entitlements"] = { data: [] }),
      unsupported: "entitlements: not read (no equivalent here)",
    },
  ];
  it.each(extras)("reports $name as unsupported, once, and still reads every row", ({ change, unsupported }) => {
    const data = keygenData();
    change(data);
    const read = readKeygen(data);
    expect(read.errors).toEqual([]);
    expect(read.rows).toHaveLength(6);
    expect(read.unsupported.filter((u) => u === unsupported)).toHaveLength(1);
  });
});

describe("Keygen's documents with problems", () => {
  const cases: {
    name: string;
    change?: (data: Json) => void;
    /** The data read instead of the fixtures. */
    whole?: unknown;
    errors: [row: number, field: string, message: RegExp][];
    rows: number[];
    /** The rows read exactly as from the fixtures (default: every row read). */
    same?: number[];
  }[] = [
    {
      name: "a key too short",
      change: (d) => (license(d, 2).attributes.key = "  ABC  "),
      errors: [[2, "key", /8 to 256 characters \(this one 3\)/]],
      rows: [1, 3, 4, 5, 6],
    },
    {
      name: "a key with a control character",
      change: (d) => (license(d, 3).attributes.key = "ABCDEFGH\u0007IJ"),
      errors: [[3, "key", /printable/]],
      rows: [1, 2, 4, 5, 6],
    },
    {
      name: "a key that is no string",
      change: (d) => (license(d, 1).attributes.key = 12345678),
      errors: [[1, "licenses[0].data[0].attributes.key", /Not a string/]],
      rows: [2, 3, 4, 5, 6],
    },
    {
      name: "no key (a legacy encrypted license)",
      change: (d) => delete license(d, 4).attributes.key,
      errors: [[4, "licenses[1].data[0].attributes.key", /No key/]],
      rows: [1, 2, 3, 5, 6],
    },
    {
      name: "a key twice (after trimming; another case is another key)",
      change: (d) => {
        license(d, 5).attributes.key = " C1B6DE-39A6E3-DE1529-8559A0-4AF593-V3 ";
        license(d, 6).attributes.key = "c1b6de-39a6e3-de1529-8559a0-4af593-v3";
      },
      errors: [[5, "key", /^Duplicate of row 1$/]],
      rows: [1, 2, 3, 4, 6],
      same: [1, 2, 3, 4],
    },
    {
      name: "a product not among the products",
      change: (d) => (license(d, 3).relationships.product.data.id = "0000-missing"),
      errors: [[3, "product", /0000-missing/]],
      rows: [1, 2, 4, 5, 6],
    },
    {
      name: "a product with neither code nor name",
      change: (d) => Object.assign(d["products"].data[0].attributes, { code: null, name: " " }),
      errors: [
        [3, "products.data[0].attributes.code", /neither a code nor a name/],
        [5, "products.data[0].attributes.code", /neither a code nor a name/],
      ],
      rows: [1, 2, 4, 6],
    },
    {
      name: "a policy not among the policies",
      change: (d) => (d["policies"].data = d["policies"].data.filter((p: Json) => p["id"] !== ID.concurrent)),
      errors: [[3, "policy", new RegExp(ID.concurrent)]],
      rows: [1, 2, 4, 5, 6],
    },
    {
      name: "a license maxMachines below 0",
      change: (d) => (license(d, 2).attributes.maxMachines = -1),
      errors: [[2, "licenses[0].data[1].attributes.maxMachines", /integer up to 2147483647: -1$/]],
      rows: [1, 3, 4, 5, 6],
    },
    {
      name: "a policy maxMachines as text: every license of the policy",
      change: (d) => (d["policies"].data[2].attributes.maxMachines = "3"),
      errors: [
        [2, "policies.data[2].attributes.maxMachines", /integer up to 2147483647: "3"$/],
        [6, "policies.data[2].attributes.maxMachines", /integer up to 2147483647: "3"$/],
      ],
      rows: [1, 3, 4, 5],
    },
    {
      name: "a policy duration of 1.5 seconds",
      change: (d) => (d["policies"].data[0].attributes.duration = 1.5),
      errors: [[5, "policies.data[0].attributes.duration", /integer up to 2147483647: 1.5$/]],
      rows: [1, 2, 3, 4, 6],
    },
    {
      name: "a license maxProcesses past a 4-byte integer",
      change: (d) => (license(d, 3).attributes.maxProcesses = 2_147_483_648),
      errors: [[3, "licenses[0].data[2].attributes.maxProcesses", /: 2147483648$/]],
      rows: [1, 2, 4, 5, 6],
    },
    {
      name: "suspended as text",
      change: (d) => (license(d, 4).attributes.suspended = "yes"),
      errors: [[4, "licenses[1].data[0].attributes.suspended", /Not true or false/]],
      rows: [1, 2, 3, 5, 6],
    },
    {
      name: "an expiry that does not parse",
      change: (d) => (license(d, 1).attributes.expiry = "next year"),
      errors: [[1, "expiry", /Not an ISO 8601 timestamp/]],
      rows: [2, 3, 4, 5, 6],
    },
    {
      name: "an expiry on a day that does not exist",
      change: (d) => (license(d, 1).attributes.expiry = "2026-02-30T00:00:00.000Z"),
      errors: [[1, "expiry", /Not an ISO 8601 timestamp/]],
      rows: [2, 3, 4, 5, 6],
    },
    {
      name: "an expiry as a number",
      change: (d) => (license(d, 1).attributes.expiry = 1767225600),
      errors: [[1, "expiry", /Not an ISO 8601 timestamp/]],
      rows: [2, 3, 4, 5, 6],
    },
    {
      name: "an expiry before 1970",
      change: (d) => (license(d, 3).attributes.expiry = "1969-12-31T23:59:59.000Z"),
      errors: [[3, "expiry", /before 1970 or after 9999/]],
      rows: [1, 2, 4, 5, 6],
    },
    {
      name: "an expiry after 9999 (by its offset)",
      change: (d) => (license(d, 3).attributes.expiry = "9999-12-31T23:00:00-05:00"),
      errors: [[3, "expiry", /^\+010000-01-01T04:00:00.000Z lies before 1970 or after 9999$/]],
      rows: [1, 2, 4, 5, 6],
    },
    {
      name: "created + the policy's duration past 9999",
      change: (d) => (license(d, 5).attributes.created = "9999-06-15T09:30:00.000Z"),
      errors: [[5, "expiry", /^\+010000-06-14T09:30:00.000Z lies before 1970 or after 9999$/]],
      rows: [1, 2, 3, 4, 6],
    },
    {
      name: "no expiry and a created time that does not parse",
      change: (d) => (license(d, 5).attributes.created = "yesterday"),
      errors: [[5, "expiry", /created time/]],
      rows: [1, 2, 3, 4, 6],
    },
    {
      name: "an owner not among the users",
      change: (d) => (d["users"].data = d["users"].data.slice(1)),
      errors: [
        [1, "owner", new RegExp(JANE.sourceId)],
        [4, "owner", new RegExp(JANE.sourceId)],
      ],
      rows: [2, 3, 5, 6],
    },
    {
      name: "a machine of a license not among the licenses",
      change: (d) => (d["machines"][1].data[1].relationships.license.data.id = "gone-license"),
      errors: [[0, "machines", new RegExp(`Machine ${machineId(5)} names license gone-license`)]],
      rows: [1, 2, 3, 4, 5, 6],
      same: [1, 2, 3, 4, 5],
    },
    {
      name: "a machine without a fingerprint",
      change: (d) => (d["machines"][0].data[0].attributes.fingerprint = null),
      errors: [[1, "machines[0].data[0].attributes.fingerprint", new RegExp(machineId(1))]],
      rows: [2, 3, 4, 5, 6],
    },
    {
      name: "two machines of a license with one fingerprint",
      change: (d) => (d["machines"][0].data[2].attributes.fingerprint = "3f9a1c0e7b2d4e6f8a0b1c2d3e4f5a6b"),
      errors: [[2, "machines", /share fingerprint 3f9a1c0e7b2d4e6f8a0b1c2d3e4f5a6b/]],
      rows: [1, 3, 4, 5, 6],
    },
    {
      name: "a license without an id",
      change: (d) => delete license(d, 4).id,
      errors: [[4, "licenses[1].data[0].id", /No id/]],
      rows: [1, 2, 3, 5, 6],
    },
    {
      name: "a machine among the licenses",
      change: (d) => (license(d, 5).type = "machines"),
      // Its machine (build-01) then names a license that is not there.
      errors: [
        [0, "machines", new RegExp(machineId(4))],
        [5, "licenses[1].data[1].type", /"machines" where the licenses are/],
      ],
      rows: [1, 2, 3, 4, 6],
    },
    {
      name: "a license that is no object",
      change: (d) => (d["licenses"][0].data[2] = "license"),
      errors: [
        [0, "machines", new RegExp(machineId(6))],
        [3, "licenses[0].data[2]", /Not a JSON:API resource/],
      ],
      rows: [1, 2, 4, 5, 6],
    },
    {
      name: "a license id twice",
      change: (d) => (license(d, 6).id = licenseId(1)),
      errors: [
        [0, "machines", new RegExp(machineId(5))],
        [6, "licenses[1].data[2].id", /repeats row 1/],
      ],
      rows: [1, 2, 3, 4, 5],
    },
    {
      name: "a malformed policy relationship",
      change: (d) => (license(d, 2).relationships.policy = { data: { type: "products", id: ID.floating } }),
      errors: [[2, "licenses[0].data[1].relationships.policy.data", /resource identifier of policies/]],
      rows: [1, 3, 4, 5, 6],
    },
    {
      name: "a policy without an id",
      change: (d) => delete d["policies"].data[1].id,
      errors: [
        [0, "policies.data[1].id", /No id/],
        [3, "policy", new RegExp(ID.concurrent)],
      ],
      rows: [1, 2, 4, 5, 6],
    },
    {
      name: "a page of machines without data",
      change: (d) => (d["machines"][1] = { links: d["machines"][1].links }),
      errors: [[0, "machines[1].data", /data array/]],
      rows: [1, 2, 3, 4, 5, 6],
      // Rows 3, 5 and 6 lose the machines of that page.
      same: [1, 2, 4],
    },
    {
      name: "users that are no document",
      change: (d) => (d["users"] = "users.json"),
      errors: [
        [0, "users", /JSON:API document/],
        [1, "owner", /not among the users/],
        [2, "owner", /not among the users/],
        [3, "owner", /not among the users/],
        [4, "owner", /not among the users/],
        [6, "user", /not among the users/],
      ],
      rows: [5],
    },
    {
      name: "a page of licenses that is no document",
      change: (d) => (d["licenses"][0] = null),
      errors: [
        [0, "licenses[0]", /JSON:API document/],
        [0, "machines", new RegExp(machineId(1))],
        [0, "machines", new RegExp(machineId(2))],
        [0, "machines", new RegExp(machineId(3))],
        [0, "machines", new RegExp(machineId(6))],
      ],
      // The second page's licenses are rows 1 to 3 now.
      rows: [1, 2, 3],
      same: [],
    },
    {
      name: "no licenses",
      change: (d) => delete d["licenses"],
      errors: [
        [0, "licenses", /No licenses/],
        ...[1, 2, 3, 4, 5, 6].map((n): [number, string, RegExp] => [0, "machines", new RegExp(machineId(n))]),
      ],
      rows: [],
    },
    { name: "data that is null", whole: null, errors: [[0, "(root)", /Keygen's data is an object/]], rows: [] },
    { name: "data that is a list", whole: [], errors: [[0, "(root)", /Keygen's data is an object/]], rows: [] },
    { name: "data that is text", whole: "{}", errors: [[0, "(root)", /Keygen's data is an object/]], rows: [] },
  ];
  it.each(cases)("$name: its problem, the other rows read", ({ change, whole, errors, rows, same }) => {
    const data = keygenData();
    change?.(data);
    const read = readKeygen(whole === undefined ? data : whole);
    const got = read.errors.map((e) => [e.row, e.field, e.message]);
    expect(got).toEqual(errors.map(([row, field, message]) => [row, field, expect.stringMatching(message)]));
    expect(read.rows.map((r) => r.row)).toEqual(rows);
    for (const row of same ?? rows) expect(read.rows.find((r) => r.row === row)).toEqual(KEYGEN_ROWS[row - 1]);
  });
});
