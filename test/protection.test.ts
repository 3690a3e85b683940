/**
 * SPEC "Limits" and the 403/429/500 rules of "Errors": per-IP request limits in the RATE_LIMITER Durable Object
 * (window roll-over, block expiry, concurrency), the IP lists (IPv4, IPv6, CIDR), excluded paths, and login
 * brute-force protection across REST, gRPC and the update routes. The clock is injected.
 */
import { exports } from "cloudflare:workers";
import { Code, type ConnectError, createClient } from "@connectrpc/connect";
import { createGrpcWebTransport } from "@connectrpc/connect-web";
import { describe, expect, it } from "vitest";
import { Authentication } from "../src/gen/licensing/v1/authentication_pb";
import { ipInList, parseIp } from "../src/protection/ip";
import { ADMIN, BASE, call, movableClock, setSetting } from "./helpers";

const advance = (await movableClock()).move;

const from = (ip: string) => ({ "cf-connecting-ip": ip });
const keys = (ip: string) => call("GET", "/v1/extensions/keys", { headers: from(ip) });

async function withSettings(values: Record<string, string>, run: () => Promise<void>): Promise<void> {
  for (const [name, value] of Object.entries(values)) await setSetting(name, value);
  try {
    await run();
  } finally {
    for (const name of Object.keys(values)) await setSetting(name, null);
  }
}

describe("IP addresses", () => {
  it("reads IPv4 and IPv6 in any spelling, IPv4-mapped IPv6 as IPv4", () => {
    expect(parseIp("::1")).toEqual(parseIp("0:0:0:0:0:0:0:1"));
    expect(parseIp("[2001:db8::1]")).toEqual(parseIp("2001:0DB8:0000:0000:0000:0000:0000:0001"));
    expect(parseIp("::ffff:127.0.0.1")).toEqual(Uint8Array.from([127, 0, 0, 1]));
    for (const bad of ["256.1.1.1", "1.2.3", "::1::2", "gggg::1", "localhost", ""])
      expect(parseIp(bad), bad).toBeUndefined();
  });

  it("matches single addresses and CIDR ranges", () => {
    const list = ["10.0.0.0/8", "192.168.1.7", "2001:db8::/32", "::1"];
    expect(ipInList("10.200.3.4", list)).toBe(true);
    expect(ipInList("11.0.0.1", list)).toBe(false);
    expect(ipInList("192.168.1.7", list)).toBe(true);
    expect(ipInList("192.168.1.8", list)).toBe(false);
    expect(ipInList("2001:db8:abcd::42", list)).toBe(true);
    expect(ipInList("2001:db9::1", list)).toBe(false);
    expect(ipInList("0:0:0:0:0:0:0:1", list)).toBe(true);
    expect(ipInList("::ffff:10.1.1.1", list)).toBe(true);
  });
});

describe("request limits", () => {
  it("blocks an IP over the limit with 429, Retry-After and a text body, until the block expires", async () => {
    await withSettings({ "IpFiltering:BruteForceProtection:MaxRequestsPerTimeFrame": "3" }, async () => {
      const ip = "203.0.113.10";
      for (let i = 0; i < 3; i++) expect((await keys(ip)).status).toBe(200);
      const blocked = await keys(ip);
      expect(blocked.status).toBe(429);
      expect(blocked.headers.get("retry-after")).toBe("900");
      expect(blocked.text).toBe("Too many requests. Try again in 900 seconds.");
      advance(10 * 60_000);
      const later = await keys(ip);
      expect(later.status).toBe(429);
      expect(later.headers.get("retry-after")).toBe("300");
      advance(5 * 60_000 + 1000);
      expect((await keys(ip)).status).toBe(200);
      // Other IPs were never affected.
      expect((await keys("203.0.113.11")).status).toBe(200);
    });
  });

  it("starts a new count when the time frame rolls over", async () => {
    await withSettings({ "IpFiltering:BruteForceProtection:MaxRequestsPerTimeFrame": "3" }, async () => {
      const ip = "203.0.113.20";
      for (let i = 0; i < 3; i++) expect((await keys(ip)).status).toBe(200);
      advance(61_000);
      for (let i = 0; i < 3; i++) expect((await keys(ip)).status).toBe(200);
      expect((await keys(ip)).status).toBe(429);
    });
  });

  it("never lets more than the limit through when 100 requests arrive at once", async () => {
    const ip = "203.0.113.30";
    const results = await Promise.all(Array.from({ length: 100 }, () => keys(ip)));
    expect(results.filter((r) => r.status === 200)).toHaveLength(60);
    expect(results.filter((r) => r.status === 429)).toHaveLength(40);
  });

  it("never counts whitelisted IPs (IPv4 range, IPv6 any spelling) or excluded paths, and stops when disabled", async () => {
    await withSettings(
      {
        "IpFiltering:BruteForceProtection:MaxRequestsPerTimeFrame": "2",
        "IpFiltering:Whitelist": "127.0.0.1, ::1, 198.51.100.0/24, 2001:db8::7",
      },
      async () => {
        for (let i = 0; i < 5; i++) {
          expect((await keys("198.51.100.200")).status).toBe(200);
          expect((await keys("2001:0db8:0:0:0:0:0:7")).status).toBe(200);
          const beat = await call("POST", "/v1/license/heartbeat", {
            headers: from("203.0.113.40"),
            key: ADMIN.key,
            body: { licenseToken: "fltk_unknown" },
          });
          expect(beat.status).toBe(525);
        }
        expect((await keys("203.0.113.40")).status).toBe(200);
        await setSetting("IpFiltering:BruteForceProtection:Enabled", "false");
        try {
          for (let i = 0; i < 5; i++) expect((await keys("203.0.113.41")).status).toBe(200);
        } finally {
          await setSetting("IpFiltering:BruteForceProtection:Enabled", null);
        }
      },
    );
  });

  it("answers 403 to blacklisted IPs before anything else, IPv6 in any spelling", async () => {
    await withSettings({ "IpFiltering:Blacklist": "203.0.113.66, 2001:db8::bad" }, async () => {
      for (const ip of ["203.0.113.66", "2001:0DB8::0BAD", "::ffff:203.0.113.66"]) {
        const res = await call("GET", "/health", { headers: from(ip) });
        expect(res.status, ip).toBe(403);
        expect(
          (
            await call("POST", "/v1/auth/login", {
              headers: from(ip),
              body: { username: "admin", password: ADMIN.password },
            })
          ).status,
        ).toBe(403);
      }
      expect((await call("GET", "/health", { headers: from("203.0.113.67") })).status).toBe(200);
    });
  });
});

describe("login protection", () => {
  const login = (ip: string, password: string) =>
    call("POST", "/v1/auth/login", { headers: from(ip), body: { username: "admin", password } });
  const fetchFrom =
    (ip: string): typeof fetch =>
    (input, init) => {
      const headers = new Headers(init?.headers);
      headers.set("cf-connecting-ip", ip);
      return exports.default.fetch(input as RequestInfo, {
        ...init,
        headers,
        ...(init?.redirect === "error" ? { redirect: "manual" as const } : {}),
      });
    };

  it("blocks logins from an IP after MaxFailedAttempts, even with the right password, across REST and gRPC", async () => {
    const ip = "203.0.113.50";
    for (let i = 0; i < 4; i++) expect((await login(ip, "wrong")).status).toBe(401);
    const grpc = createClient(Authentication, createGrpcWebTransport({ baseUrl: BASE, fetch: fetchFrom(ip) }));
    const fifth = await grpc.authenticate({ username: "admin", password: "wrong" }).catch((e: unknown) => e);
    expect((fifth as ConnectError).code).toBe(Code.Unauthenticated);

    const blocked = await login(ip, ADMIN.password);
    expect(blocked.status).toBe(500);
    expect(blocked.body["message"]).toBe("Too many failed logins from this address. Try again in 300 seconds.");
    const grpcBlocked = await grpc
      .authenticate({ username: "admin", password: ADMIN.password })
      .catch((e: unknown) => e);
    expect((grpcBlocked as ConnectError).code).toBe(Code.Internal);
    // Other requests from the IP go on; other IPs log in.
    expect((await keys(ip)).status).toBe(200);
    expect((await login("203.0.113.51", ADMIN.password)).status).toBe(200);

    advance(5 * 60_000 + 1000);
    expect((await login(ip, ADMIN.password)).status).toBe(200);
  });

  it("counts wrong user keys at sign-in and on the update routes, and clears the count on success", async () => {
    const ip = "203.0.113.60";
    for (let i = 0; i < 3; i++) expect((await login(ip, "wrong")).status).toBe(401);
    expect((await login(ip, ADMIN.password)).status).toBe(200);
    for (let i = 0; i < 4; i++) expect((await login(ip, "wrong")).status).toBe(401);
    expect((await login(ip, ADMIN.password)).status).toBe(200);

    const guesser = "203.0.113.61";
    expect(
      (await call("POST", "/v1/auth/login", { headers: from(guesser), body: { userKey: "GUESS-1" } })).status,
    ).toBe(401);
    await call("POST", "/v1/products", {
      key: ADMIN.key,
      body: { product: { code: "guarded", name: "Guarded", isApplication: true } },
    });
    for (let i = 0; i < 4; i++) {
      const res = await call("GET", "/v1/updates/guarded?platform=win-x64&version=1.0.0", {
        headers: { ...from(guesser), "X-Service-User-Key": `GUESS-${i + 2}` },
      });
      expect(res.status).toBe(200);
    }
    await new Promise((r) => setTimeout(r, 50));
    expect((await login(guesser, ADMIN.password)).status).toBe(500);
  });

  it("never blocks whitelisted IPs", async () => {
    for (let i = 0; i < 7; i++) expect((await login("127.0.0.1", "wrong")).status).toBe(401);
    expect((await login("127.0.0.1", ADMIN.password)).status).toBe(200);
  });
});
