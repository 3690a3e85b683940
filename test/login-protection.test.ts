/**
 * Login protection that cannot be raced or reset (issue 14), through REST and gRPC: deciding and counting an attempt
 * is one step in the IP's RateLimiter object, so a parallel burst gets at most MaxFailedAttempts answers of 401; a
 * success clears that account's failures only; a user-key sign-in clears none; a revoked or expired license's key
 * and a refused API key count as failures; logins have their own per-IP request limit; IPv6 counts per /64; a
 * blocked login writes no service-log row per attempt, one audit entry per block.
 */
import { env, exports } from "cloudflare:workers";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createGrpcWebTransport } from "@connectrpc/connect-web";
import { describe, expect, it } from "vitest";
import { Authentication } from "../src/gen/licensing/v1/authentication_pb";
import { LicenseServer } from "../src/gen/licensing/v1/license_server_pb";
import { ADMIN, BASE, admin, call, setSetting } from "./helpers";
import { newLicense } from "./samples/licensing";

const from = (ip: string) => ({ "cf-connecting-ip": ip });
const login = (ip: string, username: string, password: string) =>
  call("POST", "/v1/auth/login", { headers: from(ip), body: { username, password } });
const keyLogin = (ip: string, userKey: string) =>
  call("POST", "/v1/auth/login", { headers: from(ip), body: { userKey } });

function transportFrom(ip: string) {
  const fetchFrom: typeof fetch = (input, init) => {
    const headers = new Headers(init?.headers);
    headers.set("cf-connecting-ip", ip);
    return exports.default.fetch(input as RequestInfo, {
      ...init,
      headers,
      ...(init?.redirect === "error" ? { redirect: "manual" as const } : {}),
    });
  };
  return createGrpcWebTransport({ baseUrl: BASE, fetch: fetchFrom });
}

const grpcFrom = (ip: string) => createClient(Authentication, transportFrom(ip));

async function newUser(userName: string, password: string): Promise<void> {
  const res = await admin("POST", "/v1/users", { user: { userName, password, roles: ["Sales"] } });
  expect(res.status, res.text).toBe(200);
}

/** Service-log rows mentioning `text` in their properties (the client IP is there), by category. */
async function logRows(
  text: string,
  category: "Service" | "Audit",
): Promise<{ message: string; properties: string }[]> {
  // Entries are written after the response (waitUntil): give them a moment.
  await new Promise((r) => setTimeout(r, 100));
  const rows = await env.DB.prepare("SELECT message, properties FROM logs WHERE category = ? AND properties LIKE ?")
    .bind(category, `%${text}%`)
    .all<{ message: string; properties: string }>();
  return rows.results;
}

describe("one step decides and counts", () => {
  it("answers at most MaxFailedAttempts of 20 parallel wrong passwords with 401, the rest as blocked (500)", async () => {
    const ip = "198.18.1.1";
    const answers = await Promise.all(Array.from({ length: 20 }, () => login(ip, "admin", "wrong-password")));
    const statuses = answers.map((a) => a.status);
    expect(statuses.filter((s) => s === 401).length).toBeGreaterThanOrEqual(1);
    expect(statuses.filter((s) => s === 401).length).toBeLessThanOrEqual(5);
    expect(statuses.filter((s) => s !== 401).every((s) => s === 500)).toBe(true);
    expect((await login(ip, "admin", ADMIN.password)).status).toBe(500);
  });

  it("does the same for 20 parallel gRPC Authenticate calls", async () => {
    const grpc = grpcFrom("198.18.1.2");
    const codes = await Promise.all(
      Array.from({ length: 20 }, () =>
        grpc.authenticate({ username: "admin", password: "wrong-password" }).then(
          () => undefined,
          (e: unknown) => (e as ConnectError).code,
        ),
      ),
    );
    expect(codes.filter((c) => c === Code.Unauthenticated).length).toBeLessThanOrEqual(5);
    expect(codes.filter((c) => c !== Code.Unauthenticated).every((c) => c === Code.Internal)).toBe(true);
    const after = await grpc.authenticate({ username: "admin", password: ADMIN.password }).catch((e: unknown) => e);
    expect((after as ConnectError).code).toBe(Code.Internal);
  });
});

describe("what clears failures", () => {
  it("a success clears the failures of that account only: signing in to one's own account does not reset a guess run", async () => {
    await newUser("guesser-own", "Guesser#password1");
    const ip = "198.18.2.1";
    for (let i = 0; i < 4; i++) expect((await login(ip, "admin", `guess-${i}`)).status).toBe(401);
    expect((await login(ip, "guesser-own", "Guesser#password1")).status).toBe(200);
    // The fifth failure against the administrator still blocks the IP.
    expect((await login(ip, "admin", "guess-4")).status).toBe(401);
    expect((await login(ip, "guesser-own", "Guesser#password1")).status).toBe(500);
  });

  it("a success clears its own account's failures", async () => {
    await newUser("forgetful", "Forgetful#password1");
    const ip = "198.18.2.2";
    for (let i = 0; i < 4; i++) expect((await login(ip, "forgetful", `typo-${i}`)).status).toBe(401);
    expect((await login(ip, "forgetful", "Forgetful#password1")).status).toBe(200);
    for (let i = 0; i < 4; i++) expect((await login(ip, "forgetful", `typo-${i}`)).status).toBe(401);
    expect((await login(ip, "forgetful", "Forgetful#password1")).status).toBe(200);
  });

  it("a user-key sign-in never clears password failures (REST and gRPC)", async () => {
    const lic = await newLicense("Activation", 1);
    const ip = "198.18.2.3";
    for (let i = 0; i < 4; i++) expect((await login(ip, "admin", `guess-${i}`)).status).toBe(401);
    expect((await keyLogin(ip, lic.userKey)).status).toBe(200);
    expect((await grpcFrom(ip).authenticate({ userKey: lic.userKey })).token).toMatch(/^ey/);
    expect((await login(ip, "admin", "guess-4")).status).toBe(401);
    expect((await login(ip, "admin", ADMIN.password)).status).toBe(500);
  });

  it("a revoked or expired license's key is a failed attempt", async () => {
    const revoked = await newLicense("Activation", 1);
    const expired = await newLicense("Activation", 1);
    expect((await admin("PUT", "/v1/licenses", { license: { id: revoked.id, revoked: true } })).status).toBe(200);
    expect(
      (await admin("PUT", "/v1/licenses", { license: { id: expired.id, expireDate: "2020-01-01T00:00:00Z" } })).status,
    ).toBe(200);
    const ip = "198.18.2.4";
    for (const key of [revoked.userKey, expired.userKey, revoked.userKey]) {
      const res = await keyLogin(ip, key);
      expect(res.status).toBe(401);
      expect(res.body["message"]).toBe("Invalid user key.");
    }
    const grpc = grpcFrom(ip);
    for (const key of [revoked.userKey, expired.userKey]) {
      expect(((await grpc.authenticate({ userKey: key }).catch((e: unknown) => e)) as ConnectError).code).toBe(
        Code.Unauthenticated,
      );
    }
    expect((await login(ip, "admin", ADMIN.password)).status).toBe(500);
  });

  it("unknown API keys count like failed logins, on REST and gRPC", async () => {
    const ip = "198.18.2.5";
    const unknown = "api_Unknown0000000000000000000000000";
    for (let i = 0; i < 3; i++)
      expect((await call("GET", "/v1/products", { key: unknown, headers: from(ip) })).status).toBe(401);
    const grpc = createClient(LicenseServer, transportFrom(ip));
    for (let i = 0; i < 2; i++) {
      const e = await grpc
        .validateLicense({ userKey: "x" }, { headers: { "x-api-key": unknown } })
        .catch((err: unknown) => err);
      expect((e as ConnectError).code).toBe(Code.Unauthenticated);
    }
    await new Promise((r) => setTimeout(r, 100));
    expect((await login(ip, "admin", ADMIN.password)).status).toBe(500);
    // A known key from another IP is unaffected.
    expect((await call("GET", "/v1/products", { key: ADMIN.key, headers: from("198.18.2.6") })).status).toBe(200);
  });
});

describe("a login flood", () => {
  it("meets its own per-IP limit (REST and gRPC together), apart from the request limit and never counted there", async () => {
    await setSetting("IpFiltering:AuthenticationProtection:MaxLoginRequestsPerTimeFrame", "3");
    await setSetting("IpFiltering:BruteForceProtection:MaxRequestsPerTimeFrame", "100");
    try {
      const ip = "198.18.3.1";
      expect((await login(ip, "admin", ADMIN.password)).status).toBe(200);
      expect((await grpcFrom(ip).authenticate({ username: "admin", password: ADMIN.password })).token).toMatch(/^ey/);
      expect((await login(ip, "admin", ADMIN.password)).status).toBe(200);
      const flooded = await login(ip, "admin", ADMIN.password);
      expect(flooded.status).toBe(429);
      expect(Number(flooded.headers.get("retry-after"))).toBeGreaterThan(0);
      // gRPC Authenticate shares the limit: refused too (HTTP 429 under gRPC-Web).
      expect(
        await grpcFrom(ip)
          .authenticate({ username: "admin", password: ADMIN.password })
          .catch((e: unknown) => e),
      ).toBeInstanceOf(ConnectError);
      // Other routes from that IP go on: the login limit is its own.
      expect((await call("GET", "/v1/extensions/keys", { headers: from(ip) })).status).toBe(200);
      expect((await login("198.18.3.2", "admin", ADMIN.password)).status).toBe(200);
    } finally {
      await setSetting("IpFiltering:AuthenticationProtection:MaxLoginRequestsPerTimeFrame", null);
      await setSetting("IpFiltering:BruteForceProtection:MaxRequestsPerTimeFrame", null);
    }
  });
});

describe("IPv6", () => {
  it("counts failures per /64: rotating the interface id does not escape the block", async () => {
    for (let i = 1; i <= 5; i++)
      expect((await login(`2001:db8:77:1::${i}`, "admin", "wrong-password")).status).toBe(401);
    expect((await login("2001:db8:77:1:ffff:ffff:ffff:fffe", "admin", ADMIN.password)).status).toBe(500);
    expect((await login("2001:0db8:0077:0001::abcd", "admin", ADMIN.password)).status).toBe(500);
    // The next /64 is another client.
    expect((await login("2001:db8:77:2::1", "admin", ADMIN.password)).status).toBe(200);
  });
});

describe("a blocked login", () => {
  it("answers 500 as SPEC says without a service-log row per attempt: one audit entry per block", async () => {
    const ip = "198.18.4.1";
    for (let i = 0; i < 5; i++) expect((await login(ip, "admin", "wrong-password")).status).toBe(401);
    for (let i = 0; i < 10; i++) {
      const res = await login(ip, "admin", ADMIN.password);
      expect(res.status).toBe(500);
      expect(res.body["message"]).toMatch(/^Too many failed logins from this address\. Try again in \d+ seconds\.$/);
    }
    expect(await logRows(ip, "Service")).toEqual([]);
    const audit = await logRows(ip, "Audit");
    expect(audit).toHaveLength(1);
    expect(audit[0]!.message).toBe(`Logins from ${ip} blocked for 300 seconds after 5 failed attempts`);
    expect(JSON.parse(audit[0]!.properties)).toMatchObject({ event: "LoginBlocked", clientIp: ip, failures: 5 });
  });
});

describe("the API-key cache duration", () => {
  it("has a ceiling of 10 minutes: a longer value is refused, naming the setting", async () => {
    const tooLong = await admin("PUT", "/v1/settings", {
      settings: [{ name: "Application:ApiKeyCacheDuration", value: "00:10:01" }],
    });
    expect(tooLong.status).toBe(400);
    expect(tooLong.text).toContain("Application:ApiKeyCacheDuration");
    const ceiling = await admin("PUT", "/v1/settings", {
      settings: [{ name: "Application:ApiKeyCacheDuration", value: "00:10:00" }],
    });
    expect(ceiling.status, ceiling.text).toBe(200);
    await setSetting("Application:ApiKeyCacheDuration", null);
  });
});
