/**
 * Issue 14, "Abuse and growth": the floating routes (request, heartbeat, release; excluded from the per-IP limit by
 * SPEC) and the report route spend a per-license budget, Licensing:MaxRequestsPerLicense per
 * Licensing:LicenseRequestTimeFrame, shared by REST and gRPC; over it a call answers 429 with Retry-After (gRPC
 * ResourceExhausted), another license is unaffected, and the next time frame starts afresh.
 */
import { exports } from "cloudflare:workers";
import { Code, type ConnectError, createClient } from "@connectrpc/connect";
import { createGrpcWebTransport } from "@connectrpc/connect-web";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { LicenseServer } from "../src/gen/licensing/v1/license_server_pb";
import { ReportServer } from "../src/gen/licensing/v1/report_server_pb";
import { ADMIN, BASE, admin, movableClock, setSetting } from "./helpers";
import { newLicense } from "./samples/licensing";

const fetchWorker: typeof fetch = (input, init) =>
  exports.default.fetch(input as RequestInfo, {
    ...init,
    ...(init?.redirect === "error" ? { redirect: "manual" as const } : {}),
  });
const transport = createGrpcWebTransport({ baseUrl: BASE, fetch: fetchWorker });
const withKey = { headers: { "x-api-key": ADMIN.key } };
const clock = await movableClock();

beforeEach(async () => {
  await setSetting("Licensing:MaxRequestsPerLicense", "4");
  await setSetting("Licensing:LicenseRequestTimeFrame", "00:01:00");
});
afterEach(async () => {
  await setSetting("Licensing:MaxRequestsPerLicense", null);
  await setSetting("Licensing:LicenseRequestTimeFrame", null);
});

describe("the per-license limit", () => {
  it("bounds floating requests, heartbeats and releases of one license, REST and gRPC together", async () => {
    const license = await newLicense("Floating", 5);
    const other = await newLicense("Floating", 5);
    const grpc = createClient(LicenseServer, transport);
    const seat = await admin("POST", "/v1/license/request", {
      userKey: license.userKey,
      machineId: "m",
      clientId: "c",
    });
    expect(seat.status).toBe(200);
    const token = seat.body["licenseToken"] as string;
    expect((await admin("POST", "/v1/license/heartbeat", { licenseToken: token })).status).toBe(200);
    await grpc.heartbeat({ licenseToken: token }, withKey);
    await grpc.requestFloatingLicense({ userKey: license.userKey, machineId: "m2", clientId: "c2" }, withKey);

    const refused = await admin("POST", "/v1/license/heartbeat", { licenseToken: token });
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(refused.body["message"]).toMatch(/^Too many requests for this license/);
    expect((await admin("POST", "/v1/license/release", { licenseToken: token })).status).toBe(429);
    const grpcRefused = await grpc.heartbeat({ licenseToken: token }, withKey).catch((e: unknown) => e);
    expect((grpcRefused as ConnectError).code).toBe(Code.ResourceExhausted);

    // Another license has its own budget.
    expect(
      (await admin("POST", "/v1/license/request", { userKey: other.userKey, machineId: "m", clientId: "c" })).status,
    ).toBe(200);

    // The next time frame starts afresh.
    clock.move(61_000);
    expect((await admin("POST", "/v1/license/release", { licenseToken: token })).status).toBe(200);
  });

  it("bounds the reports sent for one license, REST and gRPC together", async () => {
    const license = await newLicense("Activation", 1);
    const reports = createClient(ReportServer, transport);
    const send = () =>
      admin("POST", "/v1/report", { name: "ExceptionReport", content: "boom", userKey: license.userKey });
    for (let i = 0; i < 3; i++) expect((await send()).status).toBe(200);
    await reports.sendReport({ name: "ExceptionReport", content: "boom", userKey: license.userKey }, withKey);
    expect((await send()).status).toBe(429);
    const grpcRefused = await reports
      .sendReport({ name: "ExceptionReport", content: "boom", userKey: license.userKey }, withKey)
      .catch((e: unknown) => e);
    expect((grpcRefused as ConnectError).code).toBe(Code.ResourceExhausted);
    // A report without a license is limited per IP only.
    expect((await admin("POST", "/v1/report", { name: "ExceptionReport", content: "boom" })).status).toBe(200);
  });
});
