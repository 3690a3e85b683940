/**
 * SPEC "Authentication" and its access table, walked for every route the service has. The routes come from the
 * generated OpenAPI document, so a new route cannot escape the walk: it must appear in SPEC_ACCESS (SPEC's table,
 * written out here independently of the code) and have a sample request below, or this test fails.
 * For each route: no credential -> 401; a bearer token on an API-key-only route -> 401; every role outside the
 * route's roles -> 403; a key without the method's permission bit -> 403; an ownerless key -> 403; each allowed
 * role (and a bearer token where accepted) -> 2xx with a real request.
 */
import { env, exports } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { ADMIN, BASE, admin, call, keyFor, login } from "./helpers";
import { SAMPLES } from "./samples";

type Credential = "none" | "key" | "bearer" | "either" | "portal";
type Role = "Administrator" | "LicenseManager" | "Sales" | "Customer" | "Application";
const ALL_ROLES: Role[] = ["Administrator", "LicenseManager", "Sales", "Customer", "Application"];
const MANAGEMENT: Role[] = ["Administrator", "LicenseManager", "Sales"];
const MANAGERS: Role[] = ["Administrator", "LicenseManager"];
const ADMINS: Role[] = ["Administrator"];

/** SPEC's access table, first match wins (more specific rows first). */
const SPEC_ACCESS: { methods?: string[]; path: RegExp; credential: Credential; roles?: Role[] }[] = [
  { methods: ["POST"], path: /^\/v1\/auth\/login$/, credential: "none" },
  // The admin console's sign-in and sign-out: anonymous routes; the session they make is an API key (issue 17).
  { methods: ["POST"], path: /^\/v1\/auth\/console\/(login|logout)$/, credential: "none" },
  { path: /^\/v1\/auth\/(user|logout)$/, credential: "bearer" },
  { path: /^\/v1\/auth\/session$/, credential: "either" },
  { path: /^\/v1\/(updates\/|extensions\/keys$)/, credential: "none" },
  // Air-gapped activation (CONTRACT section 11): the request code carries the user key; no credential.
  { methods: ["POST"], path: /^\/v1\/license\/offline-activation$/, credential: "none" },
  { path: /^\/v1\/(license\/|report$)/, credential: "either" },
  { methods: ["DELETE"], path: /^\/v1\/licenses\/\{licenseId\}$/, credential: "key", roles: MANAGERS },
  { methods: ["POST", "PUT", "DELETE"], path: /^\/v1\/license-templates/, credential: "key", roles: MANAGERS },
  { path: /^\/v1\/(license-traces|reports)/, credential: "key", roles: MANAGERS },
  { path: /^\/v1\/products\/\{productId\}\/releases\/\{releaseId\}\/downloads/, credential: "key", roles: MANAGERS },
  // Release control (CONTRACT section 8): halting and resuming a release are the managers'.
  {
    methods: ["POST"],
    path: /^\/v1\/products\/\{productId\}\/releases\/\{releaseId\}\/(halt|resume)$/,
    credential: "key",
    roles: MANAGERS,
  },
  // Sending a given-up delivery again is the Administrator's (issue "Trust at the edges": nothing lost silently).
  {
    methods: ["POST"],
    path: /^\/v1\/webhooks\/subscriptions\/\{id\}\/events\/\{eventId\}\/redeliver$/,
    credential: "key",
    roles: ADMINS,
  },
  { path: /^\/v1\/webhooks/, credential: "key", roles: MANAGERS },
  { path: /^\/v1\/(users|roles|api-keys)/, credential: "key", roles: ADMINS },
  { path: /^\/v1\/(assemblies|settings)/, credential: "key", roles: ADMINS },
  // Keygen-compatible routes (CONTRACT 16): an application's calls, with a license key of their own, or none.
  { path: /^\/v1\/accounts\//, credential: "none" },
  // Moving in from another system (CONTRACT 16): the Administrator's.
  { path: /^\/v1\/imports/, credential: "key", roles: ADMINS },
  // The email outbox holds a queued message's secrets (a user key, a sign-in link): the Administrator's (issue 37).
  { path: /^\/v1\/email\/outbox/, credential: "key", roles: ADMINS },
  // Payments to licenses (CONTRACT section 10): the providers' webhooks are anonymous and signed; mappings are
  // Administrator's and Sales'; the purchases and events lists are the management roles'.
  { methods: ["POST"], path: /^\/v1\/commerce\/\{provider\}\/webhook$/, credential: "none" },
  { path: /^\/v1\/commerce\/mappings/, credential: "key", roles: ["Administrator", "Sales"] },
  { path: /^\/v1\/commerce\//, credential: "key", roles: MANAGEMENT },
  // The customer portal (CONTRACT section 12): branding and sign-in anonymous, the rest its own session cookie only.
  { methods: ["GET"], path: /^\/v1\/portal\/(branding|sign-in\/\{token\})$/, credential: "none" },
  { methods: ["POST"], path: /^\/v1\/portal\/sign-in$/, credential: "none" },
  { path: /^\/v1\/portal\//, credential: "portal" },
  {
    path: /^\/v1\/(customers|contacts|products|orders|resources|licenses|license-tokens|license-templates|log|info|overview|email)/,
    credential: "key",
    roles: MANAGEMENT,
  },
];

function specAccess(method: string, path: string) {
  return SPEC_ACCESS.find((r) => (!r.methods || r.methods.includes(method)) && r.path.test(path));
}

const BIT: Record<string, number> = { GET: 1, HEAD: 1, PUT: 2, PATCH: 2, DELETE: 4, POST: 8 };

// ---------------------------------------------------------------------------------------------------------------

interface Operation {
  method: string;
  path: string;
  security: Record<string, string[]>[];
}
const document = (await (await exports.default.fetch(`${BASE}/swagger/v1/swagger.json`)).json()) as {
  paths: Record<string, Record<string, { security?: Record<string, string[]>[] }>>;
};
const operations: Operation[] = Object.entries(document.paths).flatMap(([path, item]) =>
  Object.entries(item).map(([method, op]) => ({ method: method.toUpperCase(), path, security: op.security ?? [] })),
);
const placeholderPath = (path: string) => path.replace(/\{[^}]+\}/g, "1");

const roleKeys = new Map<Role, string>();
let ownerlessKey = "";

beforeAll(async () => {
  for (const role of ALL_ROLES) roleKeys.set(role, await keyFor([role]));
  // A key without an owner has no role (SPEC rule 8). The API makes none (deleting a user deletes the user's keys,
  // test/security/user-deletion.test.ts), so the owner is taken from the row behind the API.
  const user = await admin("POST", "/v1/users", { user: { userName: "leaving", roles: ["Administrator"] } });
  const key = await admin("POST", "/v1/api-keys", { apiKey: { ownerId: user.body["userId"] } });
  ownerlessKey = key.body["key"];
  await env.DB.prepare("UPDATE api_keys SET owner_id = NULL WHERE id = ?").bind(key.body["apiKeyId"]).run();
});

describe("the access table of SPEC covers every route", () => {
  it("lists a rule and a sample for every operation in the OpenAPI document", () => {
    expect(operations.length).toBeGreaterThan(20);
    for (const op of operations) {
      expect(specAccess(op.method, op.path), `${op.method} ${op.path} is not in SPEC's access table`).toBeDefined();
      expect(SAMPLES[`${op.method} ${op.path}`], `${op.method} ${op.path} has no sample request`).toBeDefined();
    }
  });

  it("documents each route's credential as its security requirement", () => {
    for (const op of operations) {
      const schemes = op.security.flatMap((s) => Object.keys(s)).sort();
      const expected = {
        none: [],
        key: ["ApiKey"],
        bearer: ["Bearer"],
        either: ["ApiKey", "Bearer"],
        portal: ["PortalSession"],
      }[specAccess(op.method, op.path)!.credential];
      expect(schemes, `${op.method} ${op.path}`).toEqual(expected);
    }
  });
});

describe.each(operations.map((op) => [`${op.method} ${op.path}`, op] as const))("%s", (_name, op) => {
  const rule = specAccess(op.method, op.path)!;
  const sample = SAMPLES[`${op.method} ${op.path}`]!;

  async function send(credential: { key?: string; token?: string }) {
    const s = await sample(credential.key);
    return call(op.method, s.path ?? op.path, {
      ...credential,
      ...(s.body !== undefined ? { body: s.body } : {}),
      ...(s.headers ? { headers: s.headers } : {}),
    });
  }

  if (rule.credential === "portal") {
    it("answers 401 without a portal session, and to an API key, a bearer token or the console's cookie", async () => {
      const path = placeholderPath(op.path);
      for (const credential of [{}, { key: ADMIN.key }, { token: await login() }]) {
        const res = await call(op.method, path, credential);
        expect(res.status, JSON.stringify(credential)).toBe(401);
      }
    });
    it("serves a portal session (2xx)", async () => {
      const res = await send({});
      expect(res.status, res.text).toBeGreaterThanOrEqual(200);
      expect(res.status, res.text).toBeLessThan(300);
    });
  }

  if (rule.credential !== "none" && rule.credential !== "portal") {
    it("answers 401 with an empty body without a credential", async () => {
      const res = await call(op.method, placeholderPath(op.path));
      expect(res.status).toBe(401);
      expect(res.text).toBe("");
      expect(res.headers.get("www-authenticate")).toMatch(/^(ApiKey|Bearer)$/);
    });
    it("answers 401 to a made-up credential", async () => {
      const res = await call(
        op.method,
        placeholderPath(op.path),
        rule.credential === "bearer" ? { token: "not.a.jwt" } : { key: "api_unknown" },
      );
      expect(res.status).toBe(401);
    });
  }

  if (rule.credential === "key") {
    const roles = rule.roles!;
    it("answers 401 to an administrator's bearer token (API key only)", async () => {
      const res = await call(op.method, placeholderPath(op.path), { token: await login() });
      expect(res.status).toBe(401);
    });
    for (const role of ALL_ROLES.filter((r) => !roles.includes(r))) {
      it(`answers 403 with an empty body to the role ${role}`, async () => {
        const res = await call(op.method, placeholderPath(op.path), { key: roleKeys.get(role)! });
        expect(res.status).toBe(403);
        expect(res.text).toBe("");
      });
    }
    it("answers 403 to a key without the method's permission bit", async () => {
      const key = await keyFor([roles[0]!], 15 & ~BIT[op.method]!);
      const res = await call(op.method, placeholderPath(op.path), { key });
      expect(res.status).toBe(403);
    });
    it("answers 403 to a key without an owner", async () => {
      expect((await call(op.method, placeholderPath(op.path), { key: ownerlessKey })).status).toBe(403);
    });
    for (const role of roles) {
      it(`serves the role ${role} (2xx)`, async () => {
        const res = await send({ key: roleKeys.get(role)! });
        expect(res.status, res.text).toBeGreaterThanOrEqual(200);
        expect(res.status, res.text).toBeLessThan(300);
      });
    }
  }

  if (rule.credential === "bearer" || rule.credential === "either") {
    it("serves a bearer token (2xx)", async () => {
      const res = await send({ token: await login() });
      expect(res.status, res.text).toBeGreaterThanOrEqual(200);
      expect(res.status, res.text).toBeLessThan(300);
    });
  }
  if (rule.credential === "bearer") {
    it("answers 401 to an API key (bearer only)", async () => {
      expect((await call(op.method, placeholderPath(op.path), { key: ADMIN.key })).status).toBe(401);
    });
  }
  if (rule.credential === "either") {
    it("serves an API key of any role without checking permission bits (2xx)", async () => {
      const key = await keyFor(["Customer"], 0);
      const res = await send({ key });
      expect(res.status, res.text).toBeLessThan(300);
    });
  }
  if (rule.credential === "none") {
    it("serves an anonymous caller (2xx)", async () => {
      const res = await send({});
      expect(res.status, res.text).toBeLessThan(300);
    });
  }
});
