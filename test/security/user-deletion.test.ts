/**
 * Deleting a user ends, at once and on every route, everything that acts for them: their API keys, their console
 * sessions (API keys in a cookie) and their bearer tokens (password sign-in). Each is used once first, so this
 * isolate has cached the keys; then the user is deleted, through the API in this isolate or by another isolate
 * (whose cache invalidation never reaches this one), and each credential is refused 401 on a Management route, on
 * `GET /v1/auth/session` and on the licensing routes over REST and gRPC-Web, without waiting for
 * Application:ApiKeyCacheDuration (src/auth/api-key-service.ts `recheck`, src/routes/management/users.ts `removeUser`).
 */
import { env, exports } from "cloudflare:workers";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createGrpcWebTransport } from "@connectrpc/connect-web";
import { describe, expect, it } from "vitest";
import { LicenseServer } from "../../src/gen/licensing/v1/license_server_pb";
import { BASE, admin, call, login } from "../helpers";
import { newLicense } from "../samples/licensing";

const fetchWorker: typeof fetch = (input, init) =>
  exports.default.fetch(input as RequestInfo, {
    ...init,
    ...(init?.redirect === "error" ? { redirect: "manual" as const } : {}),
  });
const licensing = createClient(LicenseServer, createGrpcWebTransport({ baseUrl: BASE, fetch: fetchWorker }));

type Credential = "apiKey" | "console" | "bearer";

/** A LicenseManager with a password, signed in three ways: an API key, a console session and a bearer token. */
async function signedInUser(): Promise<{
  userId: string;
  key: string;
  headers: Record<Credential, Record<string, string>>;
}> {
  const userName = `gone${crypto.randomUUID().slice(0, 8)}`;
  const password = "Deleted-user-1234";
  const user = await admin("POST", "/v1/users", { user: { userName, password, roles: ["LicenseManager"] } });
  expect(user.status, user.text).toBe(200);
  const userId = user.body["userId"] as string;
  const created = await admin("POST", "/v1/api-keys", { apiKey: { name: "to be deleted", ownerId: userId } });
  expect(created.status, created.text).toBe(200);
  const key = created.body["key"] as string;
  const consoleLogin = await call("POST", "/v1/auth/console/login", { body: { username: userName, password } });
  expect(consoleLogin.status, consoleLogin.text).toBe(200);
  const cookie = /__Host-console-key=[^;]+/.exec(consoleLogin.headers.get("set-cookie") ?? "")![0];
  const token = await login(userName, password);
  return {
    userId,
    key,
    headers: {
      apiKey: { "x-api-key": key },
      console: { cookie, "x-csrf-token": consoleLogin.body["csrfToken"] as string },
      bearer: { authorization: `Bearer ${token}` },
    },
  };
}

async function grpcValidate(userKey: string, headers: Record<string, string>): Promise<Code | "ok"> {
  return licensing.validateLicense({ userKey }, { headers }).then(
    () => "ok" as const,
    (e: unknown) => (e instanceof ConnectError ? e.code : Code.Unknown),
  );
}

/** What each credential gets on a Management route, the session route and validate (REST and gRPC-Web). */
async function answers(userKey: string, headers: Record<string, string>) {
  return {
    management: (await call("GET", "/v1/products", { headers })).status,
    session: (await call("GET", "/v1/auth/session", { headers })).status,
    validate: (await call("POST", "/v1/license/validate", { headers, body: { userKey } })).status,
    grpc: await grpcValidate(userKey, headers),
  };
}

const CREDENTIALS: readonly Credential[] = ["apiKey", "console", "bearer"];
const REFUSED = { management: 401, session: 401, validate: 401, grpc: Code.Unauthenticated };

/** Signs a user in three ways and uses each credential once on every route (so the keys are cached), then deletes. */
async function deleteAndCheck(remove: (userId: string) => Promise<void>): Promise<void> {
  const lic = await newLicense("File");
  const user = await signedInUser();
  for (const credential of CREDENTIALS)
    expect(await answers(lic.userKey, user.headers[credential]), `${credential} before`).toEqual({
      // Management routes take API keys only (SPEC rule 3): a bearer token is refused there before and after.
      management: credential === "bearer" ? 401 : 200,
      session: 200,
      validate: 200,
      grpc: "ok",
    });
  await remove(user.userId);
  for (const credential of CREDENTIALS)
    expect(await answers(lic.userKey, user.headers[credential]), `${credential} after`).toEqual(REFUSED);
  // Nothing of the user is left to act for them: no key row, and so no ownerless key (SPEC rule 8) either.
  const left = await env.DB.prepare("SELECT count(*) AS n FROM api_keys WHERE owner_id = ? OR key_prefix = ?")
    .bind(user.userId, `${user.key.slice(0, 8)}…`)
    .first<{ n: number }>();
  expect(left?.n).toBe(0);
}

describe("deleting a user", () => {
  it("through the API ends their API keys, console sessions and bearer tokens on every route", async () => {
    await deleteAndCheck(async (userId) => {
      expect((await admin("DELETE", `/v1/users/${userId}`)).status).toBe(200);
    });
  });

  it("in another isolate ends them at once here too, though this isolate cached the keys", async () => {
    // What the user delete writes, sent by another isolate: this isolate's key cache is not told.
    await deleteAndCheck(async (userId) => {
      await env.DB.batch([
        env.DB.prepare("DELETE FROM api_keys WHERE owner_id = ?").bind(userId),
        env.DB.prepare("DELETE FROM users WHERE id = ?").bind(userId),
      ]);
    });
  });

  it("refuses a cached key of a user deleted elsewhere on every licensing call, before it changes anything", async () => {
    const activation = await newLicense("Activation", 5);
    const floating = await newLicense("Floating", 5);
    const user = await signedInUser();
    const headers = user.headers.apiKey;
    const op = (name: string, body: unknown) => call("POST", `/v1/license/${name}`, { headers, body });
    expect((await op("activate", { userKey: activation.userKey, machineId: "PC-1" })).status).toBe(200);
    const seat = await op("request", { userKey: floating.userKey, machineId: "PC-1", clientId: "app" });
    expect(seat.status, seat.text).toBe(200);
    const licenseToken = seat.body["licenseToken"] as string;
    expect((await op("heartbeat", { licenseToken })).status).toBe(200);

    await env.DB.batch([
      env.DB.prepare("DELETE FROM api_keys WHERE owner_id = ?").bind(user.userId),
      env.DB.prepare("DELETE FROM users WHERE id = ?").bind(user.userId),
    ]);
    const calls: [string, unknown][] = [
      ["validate", { userKey: activation.userKey, machineId: "PC-1" }],
      ["activate", { userKey: activation.userKey, machineId: "PC-2" }],
      ["deactivate", { userKey: activation.userKey, machineId: "PC-1" }],
      ["request", { userKey: floating.userKey, machineId: "PC-2", clientId: "app" }],
      ["heartbeat", { licenseToken }],
      ["release", { licenseToken }],
      // Refused first even where the call itself would be refused: a missing key, a license that is not there.
      ["validate", { userKey: "" }],
      ["activate", { userKey: "NO-SUCH-KEY", machineId: "PC-3" }],
    ];
    for (const [name, body] of calls) {
      const res = await op(name, body);
      expect(res.status, `${name} ${JSON.stringify(body)}: ${res.text}`).toBe(401);
    }
    expect((await call("POST", "/v1/report", { headers, body: { name: "CrashReport", content: "x" } })).status).toBe(
      401,
    );
    // Nothing was changed by the refused calls: PC-1 is still the one activation, and the seat is still held.
    const held = await env.DB.prepare(
      "SELECT machine_id AS machine FROM license_tokens WHERE license_id IN (?, ?) ORDER BY id",
    )
      .bind(activation.id, floating.id)
      .all<{ machine: string }>();
    expect(held.results.map((r) => r.machine)).toEqual(["PC-1", "PC-1"]);
  });

  it("before this change left keys without an owner, which opened the licensing routes: migration 0003 deletes them", async () => {
    const lic = await newLicense("File");
    const user = await signedInUser();
    // What deleting the user did before: the foreign key set the key's owner to NULL (the key not yet cached here).
    await env.DB.prepare("UPDATE api_keys SET owner_id = NULL WHERE owner_id = ?").bind(user.userId).run();
    const validate = async () =>
      (await call("POST", "/v1/license/validate", { headers: user.headers.apiKey, body: { userKey: lic.userKey } }))
        .status;
    // An ownerless key has no role (SPEC rule 8), and validate asks for none.
    expect(await validate()).toBe(200);
    const migration = env.TEST_MIGRATIONS.find((m) => m.name.endsWith("_drop_ownerless_api_keys.sql"));
    expect(migration).toBeDefined();
    for (const query of migration!.queries) await env.DB.prepare(query).run();
    expect(await validate()).toBe(401);
  });

  it("keeps the licensing call with a cached API key at one D1 statement", async () => {
    const lic = await newLicense("File");
    const user = await signedInUser();
    const validate = () =>
      call("POST", "/v1/license/validate", { headers: user.headers.apiKey, body: { userKey: lic.userKey } });
    expect((await validate()).status).toBe(200);
    const cached = await validate();
    expect(cached.status).toBe(200);
    // The key's existence check rides as a column of the license's read (db/first-batch.ts).
    expect(cached.headers.get("server-timing")).toMatch(/d1-statements;desc="1".*d1-round-trips;desc="1"/);
  });
});
