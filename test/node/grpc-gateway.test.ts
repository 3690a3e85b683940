/**
 * Native gRPC (HTTP/2, real trailers) through tools/grpc-gateway to the bundled Worker: a connect-node gRPC client
 * authenticates, validates a license and receives licensing errors as gRPC statuses.
 */
import type { Http2Server } from "node:http2";
import type { AddressInfo } from "node:net";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Authentication } from "../../src/gen/licensing/v1/authentication_pb";
import { LicenseServer, LicenseStatus } from "../../src/gen/licensing/v1/license_server_pb";
import { GATEWAY_CLIENT_HEADER, signClientAddress, startGateway } from "../../tools/grpc-gateway/gateway.ts";
// @ts-expect-error: a plain JavaScript module shared with the benchmark
import { startLocalWorker } from "../../scripts/local-worker.mjs";

const KEY = "api_GatewayAdminKey00000000000000000";
const GATEWAY_SECRET = "gateway-test-shared-secret-0123456789abcdef";
let worker: { url: URL; dispose(): Promise<void> };
let gateway: Http2Server;
let baseUrl: string;
/** A gateway without the secret: it passes no address of its own, so a client's claim would be all the Worker sees. */
let unsigned: Http2Server;
let unsignedUrl: string;

beforeAll(async () => {
  worker = await startLocalWorker({
    bindings: {
      Application__JwtSecret: "gateway-test-jwt-secret-0123456789abcdef",
      Application__EncryptionKey: "gateway-test-encryption-key",
      Application__AdminUsername: "admin",
      Application__AdminPassword: "Gateway-12345",
      Application__AdminApiKey: KEY,
      // A client claiming this address through headers would be refused: the gateway must not pass the claim on.
      IpFiltering__Blacklist: "203.0.113.66",
      IpFiltering__GatewaySecret: GATEWAY_SECRET,
    },
  });
  gateway = await startGateway({ upstream: worker.url.toString(), port: 0, secret: GATEWAY_SECRET });
  baseUrl = `http://127.0.0.1:${(gateway.address() as AddressInfo).port}`;
  unsigned = await startGateway({ upstream: worker.url.toString(), port: 0 });
  unsignedUrl = `http://127.0.0.1:${(unsigned.address() as AddressInfo).port}`;
}, 120_000);
afterAll(async () => {
  await new Promise((resolve) => gateway?.close(resolve));
  await new Promise((resolve) => unsigned?.close(resolve));
  await worker?.dispose();
});

async function rest(method: string, path: string, body?: unknown): Promise<Record<string, any>> {
  const res = await fetch(new URL(path, worker.url), {
    method,
    headers: { "x-api-key": KEY, "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return (await res.json()) as Record<string, any>;
}

describe("the native gRPC gateway", () => {
  it("carries calls, metadata and statuses between a gRPC client and the Worker", async () => {
    const transport = createGrpcTransport({ baseUrl });
    const auth = createClient(Authentication, transport);
    const signedIn = await auth.authenticate({ username: "admin", password: "Gateway-12345" });
    expect(signedIn.roles).toEqual(["Administrator"]);
    const refused = await auth.authenticate({ username: "admin", password: "nope" }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(ConnectError);
    expect((refused as ConnectError).code).toBe(Code.Unauthenticated);
    expect((refused as ConnectError).rawMessage).toBe("Invalid username or password.");

    const product = await rest("POST", "/v1/products", { product: { code: "gw", name: "Gateway" } });
    const created = await rest("POST", "/v1/licenses", {
      license: { productId: product["productId"], licensingMode: "Activation", maxClients: 1 },
    });
    const { licenses } = await rest(
      "GET",
      `/v1/licenses?filter=${encodeURIComponent(`id == ${created["id"]}`)}&select=userKey`,
    );
    const userKey = licenses[0].userKey as string;

    const server = createClient(LicenseServer, transport);
    const metadata = { headers: { authorization: `Bearer ${signedIn.token}` } };
    const activated = await server.activateLicense({ userKey, machineId: "PC-1" }, metadata);
    expect(activated.activeClientCount).toBe(1);
    const valid = await server.validateLicense({ userKey, machineId: "PC-1" }, { headers: { "x-api-key": KEY } });
    expect(valid.status).toBe(LicenseStatus.ACTIVATED);
    const exhausted = await server.activateLicense({ userKey, machineId: "PC-2" }, metadata).catch((e: unknown) => e);
    expect((exhausted as ConnectError).code).toBe(Code.AlreadyExists);
    expect((exhausted as ConnectError).rawMessage).toBe("The license has already been activated");
    const anonymous = await server.validateLicense({ userKey }).catch((e: unknown) => e);
    expect((anonymous as ConnectError).code).toBe(Code.Unauthenticated);
  });

  it("drops the address headers a client sends, so a client cannot choose the address it is limited by", async () => {
    const server = createClient(LicenseServer, createGrpcTransport({ baseUrl: unsignedUrl }));
    const claim = "203.0.113.66";
    const signed = signClientAddress("not-the-gateway-secret-0123456789abcdef", claim);
    for (const headers of [
      { "cf-connecting-ip": claim },
      { "x-forwarded-for": claim },
      { "x-real-ip": claim },
      { [GATEWAY_CLIENT_HEADER]: signed },
    ] as Record<string, string>[]) {
      // Unauthenticated (no credential), not PermissionDenied (the blacklist's 403): the claim never arrived.
      const answer = await server.validateLicense({ userKey: "X" }, { headers }).catch((e: unknown) => e);
      expect((answer as ConnectError).code, JSON.stringify(headers)).toBe(Code.Unauthenticated);
    }
    // The claim sent straight to the Worker is believed (no gateway in between, CF-Connecting-IP as Cloudflare sets it).
    const direct = await fetch(new URL("/v1/extensions/keys", worker.url), { headers: { "cf-connecting-ip": claim } });
    expect(direct.status).toBe(403);
  });
});
