/**
 * A floating seat's token and its integrity (CONTRACT section 4's table), over REST and gRPC-Web:
 * - a seat token whose row was changed outside the API (moved to another machine, client or license) answers 535
 *   `The license token has been tampered` (reason licenseTokenTampered; gRPC DataLoss), on heartbeat and release;
 * - an unknown well-formed token keeps 525 `License token not found`;
 * - a heartbeat or release without a token answers 525 with that same message (code and message agree).
 */
import { env, exports } from "cloudflare:workers";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createGrpcWebTransport } from "@connectrpc/connect-web";
import { describe, expect, it } from "vitest";
import { LicenseServer } from "../src/gen/licensing/v1/license_server_pb";
import { sha256Hex } from "../src/kernel/crypto";
import { ADMIN, BASE, call } from "./helpers";
import { newLicense } from "./samples/licensing";

const op = (name: string, body: Record<string, unknown>) =>
  call("POST", `/v1/license/${name}`, { body, key: ADMIN.key });

const fetchWorker: typeof fetch = (input, init) =>
  exports.default.fetch(input as RequestInfo, {
    ...init,
    ...(init?.redirect === "error" ? { redirect: "manual" as const } : {}),
  });
const grpc = createClient(LicenseServer, createGrpcWebTransport({ baseUrl: BASE, fetch: fetchWorker }));
const withKey = { headers: { "x-api-key": ADMIN.key } };

function expectRefusal(
  res: { status: number; body: Record<string, unknown> },
  status: number,
  message: string,
  reason: string,
): void {
  expect(res.status, JSON.stringify(res.body)).toBe(status);
  expect(res.body).toEqual({ success: false, code: status, message, reason });
}

async function expectGrpc(promise: Promise<unknown>, code: Code, message: string, reason: string): Promise<void> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ConnectError);
  expect((error as ConnectError).code).toBe(code);
  expect((error as ConnectError).rawMessage).toBe(message);
  expect((error as ConnectError).metadata.get("licensing-reason")).toBe(reason);
}

/** A live seat of a fresh floating license: its token, and the license's row id. */
async function seat(machineId = "m1", clientId = "c1"): Promise<{ token: string; licenseRowId: number }> {
  const lic = await newLicense("Floating", 5);
  const res = await op("request", { userKey: lic.userKey, machineId, clientId });
  expect(res.status, res.text).toBe(200);
  return { token: res.body["licenseToken"] as string, licenseRowId: lic.id };
}

/** Changes the seat token's row in D1 directly, as someone with database access would. */
async function changeRow(token: string, set: string, ...values: unknown[]): Promise<void> {
  const digest = await sha256Hex(token);
  const done = await env.DB.prepare(`UPDATE license_tokens SET ${set} WHERE token_digest = ?`)
    .bind(...values, digest)
    .run();
  expect(done.meta.changes).toBe(1);
}

const TAMPERED = ["The license token has been tampered", "licenseTokenTampered"] as const;
const NOT_FOUND = ["License token not found", "licenseTokenNotFound"] as const;

describe("a seat token whose row was changed outside the API", () => {
  it("answers 535 licenseTokenTampered on heartbeat and release (REST) when its machine or client was changed", async () => {
    const moved = await seat();
    expect((await op("heartbeat", { licenseToken: moved.token })).status).toBe(200);
    await changeRow(moved.token, "machine_id = ?", "another-machine");
    expectRefusal(await op("heartbeat", { licenseToken: moved.token }), 535, ...TAMPERED);
    expectRefusal(await op("release", { licenseToken: moved.token }), 535, ...TAMPERED);

    const client = await seat("m2", "c2");
    await changeRow(client.token, "client_id = ?", "another-client");
    expectRefusal(await op("heartbeat", { licenseToken: client.token }), 535, ...TAMPERED);
  });

  it("answers 535 when the row was moved to another license, and DataLoss over gRPC", async () => {
    const moved = await seat();
    const other = await newLicense("Floating", 5);
    await changeRow(moved.token, "license_id = ?", other.id);
    expectRefusal(await op("heartbeat", { licenseToken: moved.token }), 535, ...TAMPERED);
    await expectGrpc(grpc.heartbeat({ licenseToken: moved.token }, withKey), Code.DataLoss, ...TAMPERED);
    await expectGrpc(grpc.releaseFloatingLicense({ licenseToken: moved.token }, withKey), Code.DataLoss, ...TAMPERED);
  });

  it("keeps an untouched seat working, and a changed client name (no part of the token) too", async () => {
    const kept = await seat();
    await changeRow(kept.token, "client_name = ?", "renamed");
    expect((await op("heartbeat", { licenseToken: kept.token })).status).toBe(200);
    expect((await grpc.heartbeat({ licenseToken: kept.token }, withKey)).heartbeatInterval).toBeGreaterThan(0);
    expect((await op("release", { licenseToken: kept.token })).status).toBe(200);
  });
});

describe("unknown and missing seat tokens", () => {
  it("answers an unknown well-formed token 525 licenseTokenNotFound (REST and gRPC)", async () => {
    const { token } = await seat();
    // The same shape, one character changed: a token the service never issued.
    const unknown = token.slice(0, -1) + (token.endsWith("A") ? "B" : "A");
    expectRefusal(await op("heartbeat", { licenseToken: unknown }), 525, ...NOT_FOUND);
    expectRefusal(await op("release", { licenseToken: unknown }), 525, ...NOT_FOUND);
    await expectGrpc(grpc.heartbeat({ licenseToken: unknown }, withKey), Code.NotFound, ...NOT_FOUND);
    await expectGrpc(grpc.releaseFloatingLicense({ licenseToken: unknown }, withKey), Code.NotFound, ...NOT_FOUND);
  });

  it("answers a heartbeat or release without a token 525 with the message of 525 (REST and gRPC)", async () => {
    for (const body of [{}, { licenseToken: "" }, { licenseToken: "   " }]) {
      expectRefusal(await op("heartbeat", body), 525, ...NOT_FOUND);
      expectRefusal(await op("release", body), 525, ...NOT_FOUND);
    }
    await expectGrpc(grpc.heartbeat({}, withKey), Code.NotFound, ...NOT_FOUND);
    await expectGrpc(grpc.releaseFloatingLicense({}, withKey), Code.NotFound, ...NOT_FOUND);
  });
});
