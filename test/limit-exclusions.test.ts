/**
 * SPEC "Limits" rule 1: the floating license routes (request, release, heartbeat), their gRPC counterparts, login and
 * gRPC Authenticate are never counted or blocked by the per-IP request limit, so an application over the limit
 * elsewhere still holds and releases its seats; every other route, licensing ones included, is counted.
 */
import { exports } from "cloudflare:workers";
import { createClient } from "@connectrpc/connect";
import { createGrpcWebTransport } from "@connectrpc/connect-web";
import { describe, expect, it } from "vitest";
import { Authentication } from "../src/gen/licensing/v1/authentication_pb";
import { LicenseServer } from "../src/gen/licensing/v1/license_server_pb";
import { ADMIN, BASE, call, setSetting } from "./helpers";
import { newLicense } from "./samples/licensing";

const LIMIT = 2;
const fetchWorker: typeof fetch = (input, init) =>
  exports.default.fetch(input as RequestInfo, {
    ...init,
    ...(init?.redirect === "error" ? { redirect: "manual" as const } : {}),
  });
const transport = createGrpcWebTransport({ baseUrl: BASE, fetch: fetchWorker });
const grpc = createClient(LicenseServer, transport);
const auth = createClient(Authentication, transport);

const fromIp = (ip: string) => ({ "cf-connecting-ip": ip });
const rest = (ip: string, name: string, body: Record<string, unknown>) =>
  call("POST", `/v1/license/${name}`, { headers: fromIp(ip), key: ADMIN.key, body });

describe("the per-IP request limit", () => {
  it("never counts floating request, release and heartbeat, over REST or gRPC, nor gRPC Authenticate", async () => {
    const lic = await newLicense("Floating", 0);
    await setSetting("IpFiltering:BruteForceProtection:MaxRequestsPerTimeFrame", String(LIMIT));
    try {
      const ip = "203.0.113.150";
      const metadata = { headers: { ...fromIp(ip), "x-api-key": ADMIN.key } };
      for (let i = 0; i < LIMIT * 2; i++) {
        const seat = await rest(ip, "request", { userKey: lic.userKey, machineId: "m", clientId: "rest" });
        expect(seat.status, seat.text).toBe(200);
        const beat = await rest(ip, "heartbeat", { licenseToken: seat.body["licenseToken"] });
        expect(beat.status, beat.text).toBe(200);
        const released = await rest(ip, "release", { licenseToken: seat.body["licenseToken"] });
        expect(released.status, released.text).toBe(200);

        const held = await grpc.requestFloatingLicense(
          { userKey: lic.userKey, machineId: "m", clientId: "grpc" },
          metadata,
        );
        await grpc.heartbeat({ licenseToken: held.licenseToken }, metadata);
        await grpc.releaseFloatingLicense({ licenseToken: held.licenseToken }, metadata);
        expect((await auth.authenticate({ userKey: lic.userKey }, { headers: fromIp(ip) })).token).toMatch(
          /^[\w-]+\.[\w-]+\.[\w-]+$/,
        );
      }
      // None of them was counted: this IP still has its whole allowance on a counted route, then is refused.
      for (let i = 0; i < LIMIT; i++)
        expect((await call("GET", "/v1/extensions/keys", { headers: fromIp(ip) })).status).toBe(200);
      expect((await call("GET", "/v1/extensions/keys", { headers: fromIp(ip) })).status).toBe(429);
    } finally {
      await setSetting("IpFiltering:BruteForceProtection:MaxRequestsPerTimeFrame", null);
    }
  });

  it("counts the other licensing routes", async () => {
    const lic = await newLicense("Floating", 0);
    await setSetting("IpFiltering:BruteForceProtection:MaxRequestsPerTimeFrame", String(LIMIT));
    try {
      const ip = "203.0.113.151";
      for (let i = 0; i < LIMIT; i++) expect((await rest(ip, "validate", { userKey: lic.userKey })).status).toBe(200);
      expect((await rest(ip, "validate", { userKey: lic.userKey })).status).toBe(429);
    } finally {
      await setSetting("IpFiltering:BruteForceProtection:MaxRequestsPerTimeFrame", null);
    }
  });
});
