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
import licensesPage1 from "./fixtures/keygen/licenses-page-1.json";
import licensesPage2 from "./fixtures/keygen/licenses-page-2.json";
import machinesPage1 from "./fixtures/keygen/machines-page-1.json";
import machinesPage2 from "./fixtures/keygen/machines-page-2.json";
import policies from "./fixtures/keygen/policies.json";
import products from "./fixtures/keygen/products.json";
import users from "./fixtures/keygen/users.json";
import type { JsonBody } from "./json-body";

type Json = JsonBody;

/** A fresh copy of the fixtures, as the import receives them: licenses and machines in two pages each. */
function keygenData(): Json {
  return structuredClone({
    products,
    policies,
    licenses: [licensesPage1, licensesPage2],
    machines: [machinesPage1, machinesPage2],
    users,
  });
}

/** The license of a row (1-based across the two pages of three). */
function license(data: Json, row: number): Json {
  return data["licenses"][Math.floor((row - 1) / 3)].data[(row - 1) % 3];
}

const ID = {
  nodeLocked: "6b0c1d2e-3f40-4a5b-8c6d-7e8f90a1b2c3",
  floating: "7c1d2e3f-4051-4b6c-9d7e-8f90a1b2c3d4",
  concurrent: "8d2e3f40-5162-4c7d-8e8f-90a1b2c3d4e5",
  annual: "9e3f4051-6273-4d8e-9f90-a1b2c3d4e5f6",
  server: "e4b7a6c5-2d18-4f39-9a0b-1c2d3e4f5a6b",
};
/** The Keygen id of the license of row n (the fixtures' licenses in their order), and of machine n. */
const licenseId = (n: number) => `a1b2c3d4-000${n}-4e5f-8a9b-0c1d2e3f4a5${n}`;
const machineId = (n: number) => `c0ffee00-000${n}-4abc-9def-11223344556${n}`;
const JANE = {
  sourceId: "2f8e6a4c-1b3d-4e5f-a7b9-c0d1e2f3a4b5",
  email: "jane.doe@example.com",
  firstName: "Jane",
  lastName: "Doe",
};
const ALAN = {
  sourceId: "4bab8c6e-3d5f-4071-89db-e2f3a4b5c6d7",
  email: "alan@turing.example",
  firstName: "Alan",
  lastName: "Turing",
};

const EXPECTED_ROWS: ImportRow[] = [
  {
    row: 1,
    sourceId: licenseId(1),
    legacyKey: "C1B6DE-39A6E3-DE1529-8559A0-4AF593-V3",
    product: "acme-desktop",
    customer: JANE,
    edition: "Desktop Node-Locked",
    expireDate: "2027-03-01T00:00:00.000Z",
    licensingMode: "activation",
    maxClients: 1,
    machines: [
      {
        fingerprint: "8c:1e:42:7a:90:3b:d5:f6:0e:21:c4:9b:57:aa:13:6d",
        sourceId: machineId(1),
        name: "Jane's MacBook Pro",
      },
    ],
  },
  {
    row: 2,
    sourceId: licenseId(2),
    legacyKey: "8F2A91-D04C7B-E5A316-9B7E20-C4D18F-V3",
    product: "acme-desktop",
    // No first or last name in Keygen: its fullName split at the last space.
    customer: {
      sourceId: "3a9f7b5d-2c4e-4f60-b8ca-d1e2f3a4b5c6",
      email: "ops@northwind.example",
      firstName: "Grace Brewster",
      lastName: "Hopper",
    },
    edition: "Desktop Floating",
    // expiry null: perpetual. The license's maxMachines (10) wins over its floating policy's (3).
    licensingMode: "activation",
    maxClients: 10,
    machines: [
      { fingerprint: "3f9a1c0e7b2d4e6f8a0b1c2d3e4f5a6b", sourceId: machineId(2), name: "Studio PC 1" },
      { fingerprint: "7d4e2b9a0c1f3e5d6a8b9c0d1e2f3a4b", sourceId: machineId(3) },
    ],
  },
  {
    row: 3,
    sourceId: licenseId(3),
    legacyKey: "4E7D2C-B91A05-36F8E4-D2C719-A0B65E-V3",
    // The product has no code in Keygen: its name.
    product: "Acme Server",
    customer: ALAN,
    edition: "Server Concurrent",
    expireDate: "2026-12-31T23:59:59.000Z",
    licensingMode: "floating",
    maxClients: 5,
    machines: [
      {
        fingerprint: "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
        sourceId: machineId(6),
        name: "app-server",
      },
    ],
  },
  {
    row: 4,
    sourceId: licenseId(4),
    legacyKey: "7A3F0E-C62D91-84B5E7-1F9C3A-D6E280-V3",
    product: "acme-desktop",
    customer: JANE,
    edition: "Desktop Node-Locked",
    expireDate: "2026-09-30T00:00:00.000Z",
    licensingMode: "activation",
    maxClients: 1,
    revoked: true,
    description: "Suspended in Keygen",
    machines: [],
  },
  {
    row: 5,
    sourceId: licenseId(5),
    legacyKey: "B5C8E1-2F7A94-D03B6C-E81F45-9A2D70-V3",
    product: "Acme Server",
    // No owner: no customer. No expiry attribute: created (2025-06-15T09:30Z) + the policy's 31536000 s.
    edition: "Server Annual",
    expireDate: "2026-06-15T09:30:00.000Z",
    licensingMode: "activation",
    maxClients: 2,
    machines: [
      {
        fingerprint: "b1946ac92492d2347c6235b4d2611184a8f3e3b0c44298fc1c149afbf4c8996f",
        sourceId: machineId(4),
        name: "build-01",
      },
    ],
  },
  {
    row: 6,
    sourceId: licenseId(6),
    legacyKey: "ACME-DESKTOP-2024-000042",
    product: "acme-desktop",
    // The older API's `user` relationship.
    customer: ALAN,
    edition: "Desktop Floating",
    expireDate: "2028-01-15T12:00:00.000Z",
    licensingMode: "activation",
    maxClients: 3,
    machines: [{ fingerprint: "DESKTOP-7QK2M4P", sourceId: machineId(5), name: "Alan's workstation" }],
  },
];

describe("Keygen's documents read into rows", () => {
  it("reads the fixtures: six licenses over two pages, their products, policies, owners and machines", () => {
    const read = readKeygen(keygenData());
    expect(read.errors).toEqual([]);
    expect(read.rows).toEqual(EXPECTED_ROWS);
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
    expect(read.rows.find((r) => r.row === row)).toEqual({ ...EXPECTED_ROWS[row - 1], ...expected });
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
      errors: [[2, "licenses[0].data[1].attributes.maxMachines", /non-negative integer: -1/]],
      rows: [1, 3, 4, 5, 6],
    },
    {
      name: "a policy maxMachines as text: every license of the policy",
      change: (d) => (d["policies"].data[2].attributes.maxMachines = "3"),
      errors: [
        [2, "policies.data[2].attributes.maxMachines", /non-negative integer: "3"/],
        [6, "policies.data[2].attributes.maxMachines", /non-negative integer: "3"/],
      ],
      rows: [1, 3, 4, 5],
    },
    {
      name: "a policy duration of 1.5 seconds",
      change: (d) => (d["policies"].data[0].attributes.duration = 1.5),
      errors: [[5, "policies.data[0].attributes.duration", /non-negative integer/]],
      rows: [1, 2, 3, 4, 6],
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
      name: "a policy duration past 9999",
      change: (d) => (d["policies"].data[0].attributes.duration = 300_000_000_000),
      errors: [[5, "expiry", /after 9999/]],
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
    for (const row of same ?? rows) expect(read.rows.find((r) => r.row === row)).toEqual(EXPECTED_ROWS[row - 1]);
  });
});
