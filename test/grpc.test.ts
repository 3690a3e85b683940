/**
 * The gRPC services through real clients: @connectrpc/connect-web's gRPC-Web transport (binary) and Connect
 * transport against the Worker, plus a gRPC-Web text call by hand. Each LicenseServer method succeeds and answers
 * its licensing errors as gRPC statuses with SPEC's messages; credentials travel as metadata.
 */
import { env, exports } from "cloudflare:workers";
import { Code, ConnectError, createClient, type Client } from "@connectrpc/connect";
import { createConnectTransport, createGrpcWebTransport } from "@connectrpc/connect-web";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { Authentication } from "../src/gen/licensing/v1/authentication_pb";
import {
  LicenseServer,
  LicenseStatus,
  ValidateLicenseRequestSchema,
  ValidateLicenseResponseSchema,
} from "../src/gen/licensing/v1/license_server_pb";
import { ReportServer } from "../src/gen/licensing/v1/report_server_pb";
import { ADMIN, BASE, admin, setSetting } from "./helpers";
import { newLicense } from "./samples/licensing";

// connect-web asks fetch for `redirect: "error"`, which browsers accept and workerd does not: the test's fetch
// (the Worker called in-process) answers redirects manually instead, which a gRPC call never receives anyway.
const fetchWorker: typeof fetch = (input, init) =>
  exports.default.fetch(input as RequestInfo, {
    ...init,
    ...(init?.redirect === "error" ? { redirect: "manual" as const } : {}),
  });
const grpcWeb = createGrpcWebTransport({ baseUrl: BASE, fetch: fetchWorker });
const connect = createConnectTransport({ baseUrl: BASE, fetch: fetchWorker });
const withKey = { headers: { "x-api-key": ADMIN.key } };

const licenses: Client<typeof LicenseServer> = createClient(LicenseServer, grpcWeb);
const auth = createClient(Authentication, grpcWeb);

async function expectStatus(promise: Promise<unknown>, code: Code, message: string): Promise<void> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ConnectError);
  expect((error as ConnectError).code).toBe(code);
  expect((error as ConnectError).rawMessage).toBe(message);
}

describe("Authentication", () => {
  it("signs in with a password or a user key, and answers Unauthenticated with SPEC's messages", async () => {
    const signedIn = await auth.authenticate({ username: ADMIN.username, password: ADMIN.password });
    expect(signedIn.token.split(".")).toHaveLength(3);
    expect(signedIn.expiresIn).toBe(1800);
    expect(signedIn.roles).toEqual(["Administrator"]);
    await expectStatus(
      auth.authenticate({ username: "admin", password: "wrong" }),
      Code.Unauthenticated,
      "Invalid username or password.",
    );

    const lic = await newLicense("Activation");
    const app = await auth.authenticate({ userKey: lic.userKey });
    expect(app.roles).toEqual(["Application"]);
    await expectStatus(auth.authenticate({ userKey: "NOT-A-KEY" }), Code.Unauthenticated, "Invalid user key.");

    // The application's token is its credential for the licensing calls.
    const activated = await licenses.activateLicense(
      { userKey: lic.userKey, machineId: "PC-1" },
      { headers: { authorization: `Bearer ${app.token}` } },
    );
    expect(activated.licenseToken).toMatch(/^actk_/);
  });

  it("signs in and validates with a legacy key as typed (CONTRACT 16)", async () => {
    const product = await admin("POST", "/v1/products", {
      product: { code: `grpc-${crypto.randomUUID().slice(0, 8)}`, name: "G" },
    });
    const legacyKey = `grpc legacy ${crypto.randomUUID()}`;
    const made = await admin("POST", "/v1/licenses", {
      license: { productId: product.body["productId"], licensingMode: "Activation", legacyKey },
    });
    expect(made.status, made.text).toBe(200);
    const app = await auth.authenticate({ userKey: legacyKey });
    const bearer = { headers: { authorization: `Bearer ${app.token}` } };
    const validated = await licenses.validateLicense({ userKey: legacyKey }, bearer);
    expect(validated.licenseId).toBe(made.body["licenseId"]);
    await expectStatus(
      licenses.validateLicense({ userKey: legacyKey.toUpperCase() }, withKey),
      Code.NotFound,
      "License key not found",
    );
  });

  it("refuses licensing calls without a credential", async () => {
    await expectStatus(
      licenses.validateLicense({ userKey: "x" }),
      Code.Unauthenticated,
      "Invalid username or password.",
    );
    await expectStatus(
      licenses.validateLicense({ userKey: "x" }, { headers: { authorization: "Bearer nonsense" } }),
      Code.Unauthenticated,
      "Invalid username or password.",
    );
  });

  it("refuses a logged-out token before anything else is said of the call, though its check waits for the first D1 read", async () => {
    const lic = await newLicense("Activation");
    const reports = createClient(ReportServer, grpcWeb);
    const { token } = await auth.authenticate({ userKey: lic.userKey });
    const bearer = { headers: { authorization: `Bearer ${token}` } };
    // Refusals that come before any D1 read: a field over its limit, a report without a name.
    const tooLong = { userKey: "K".repeat(257) };
    // The credential comes first, as REST's guard comes before its body validation.
    await expectStatus(licenses.validateLicense(tooLong), Code.Unauthenticated, "Invalid username or password.");
    await expectStatus(
      licenses.validateLicense(tooLong, bearer),
      Code.InvalidArgument,
      "userKey is longer than 256 characters",
    );
    await expectStatus(reports.sendReport({ name: "" }, bearer), Code.InvalidArgument, "name is required");

    const logout = await exports.default.fetch(`${BASE}/v1/auth/logout`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: "{}",
    });
    expect(logout.status).toBe(200);
    await expectStatus(
      licenses.validateLicense(tooLong, bearer),
      Code.Unauthenticated,
      "Invalid username or password.",
    );
    await expectStatus(reports.sendReport({ name: "" }, bearer), Code.Unauthenticated, "Invalid username or password.");
    await expectStatus(
      licenses.validateLicense({ userKey: lic.userKey }, bearer),
      Code.Unauthenticated,
      "Invalid username or password.",
    );
  });
});

describe("LicenseServer over gRPC-Web", () => {
  it("activates, validates and deactivates, with Timestamps and the status enum", async () => {
    const lic = await newLicense("Activation", 1);
    await admin("PUT", "/v1/licenses", {
      license: { id: lic.id, edition: "Ultimate", features: ["export"], expireDate: "2030-01-01T00:00:00Z" },
    });
    const activated = await licenses.activateLicense(
      { userKey: lic.userKey, machineId: "PC-1", clientName: "Desk" },
      withKey,
    );
    expect(activated).toMatchObject({ activeClientCount: 1, maxClientCount: 1 });
    expect(activated.license).toMatchObject({
      licenseId: lic.licenseId,
      licensingMode: "Activation",
      licenseType: "Standard",
      edition: "Ultimate",
      features: ["export"],
    });
    expect(activated.license?.expireAt?.seconds).toBe(BigInt(Date.parse("2030-01-01T00:00:00Z") / 1000));
    expect(activated.tokenExpireAt?.seconds).toBe(BigInt(Date.parse("2030-01-01T00:00:00Z") / 1000));

    const valid = await licenses.validateLicense({ userKey: lic.userKey, machineId: "PC-1", nonce: "n1" }, withKey);
    expect(valid).toMatchObject({
      licenseId: lic.licenseId,
      status: LicenseStatus.ACTIVATED,
      licenseToken: activated.licenseToken,
      nonce: "n1",
      // Licensing:OfflineGraceDays (issue 29), as REST tells it.
      offlineGraceDays: 7,
    });
    expect(Number(valid.serverTime?.seconds)).toBeGreaterThan(0);

    await expectStatus(
      licenses.activateLicense({ userKey: lic.userKey, machineId: "PC-2" }, withKey),
      Code.AlreadyExists,
      "The license has already been activated",
    );
    await expectStatus(
      licenses.activateLicense({ userKey: lic.userKey, machineId: "" }, withKey),
      Code.InvalidArgument,
      "The machine code is required for license activation",
    );
    await expectStatus(
      licenses.activateLicense({ userKey: "UNKNOWN-KEY", machineId: "PC" }, withKey),
      Code.NotFound,
      "License key not found",
    );

    expect(await licenses.deactivateLicense({ userKey: lic.userKey, machineId: "PC-1" }, withKey)).toMatchObject({
      licenseId: lic.licenseId,
      activeClientCount: 0,
    });
    await expectStatus(
      licenses.deactivateLicense({ userKey: lic.userKey, machineId: "PC-1" }, withKey),
      Code.FailedPrecondition,
      "The license has not been activated",
    );
  });

  it("answers PermissionDenied for revoked licenses and DataLoss for tampered ones", async () => {
    const revoked = await newLicense("Activation");
    await admin("PUT", "/v1/licenses", { license: { id: revoked.id, revoked: true } });
    await expectStatus(
      licenses.validateLicense({ userKey: revoked.userKey }, withKey),
      Code.PermissionDenied,
      "The license has been revoked",
    );
    const tampered = await newLicense("File");
    await env.DB.prepare("UPDATE licenses SET edition = 'Ultimate' WHERE id = ?").bind(tampered.id).run();
    await expectStatus(
      licenses.validateLicense({ userKey: tampered.userKey }, withKey),
      Code.DataLoss,
      "The license has been tampered",
    );
  });

  it("holds, renews and releases a floating seat, and answers ResourceExhausted when all are taken", async () => {
    const lic = await newLicense("Floating", 1);
    await expectStatus(
      licenses.requestFloatingLicense(
        { userKey: (await newLicense("File")).userKey, machineId: "m", clientId: "c" },
        withKey,
      ),
      Code.FailedPrecondition,
      "The license is not a floating license",
    );
    const seat = await licenses.requestFloatingLicense(
      { userKey: lic.userKey, machineId: "m1", clientId: "c1" },
      withKey,
    );
    expect(seat).toMatchObject({ heartbeatInterval: 300, activeClientCount: 1, maxClientCount: 1 });
    await expectStatus(
      licenses.requestFloatingLicense({ userKey: lic.userKey, machineId: "m2", clientId: "c2" }, withKey),
      Code.ResourceExhausted,
      "The maximum number of concurrent users for the license has been reached",
    );
    const beat = await licenses.heartbeat({ licenseToken: seat.licenseToken }, withKey);
    expect(beat.heartbeatInterval).toBe(300);
    expect(await licenses.releaseFloatingLicense({ licenseToken: seat.licenseToken }, withKey)).toMatchObject({
      licenseId: lic.licenseId,
      activeClientCount: 0,
    });
    await expectStatus(
      licenses.releaseFloatingLicense({ licenseToken: seat.licenseToken }, withKey),
      Code.NotFound,
      "License token not found",
    );
    await expectStatus(
      licenses.heartbeat({ licenseToken: seat.licenseToken }, withKey),
      Code.NotFound,
      "License token not found",
    );
  });

  it("sends a report through ReportServer", async () => {
    const reports = createClient(ReportServer, grpcWeb);
    const sent = await reports.sendReport(
      { name: "ExceptionReport", content: "stack trace", properties: [{ name: "os", value: "macOS" }] },
      withKey,
    );
    const [stored] = (await admin("GET", `/v1/reports?filter=${encodeURIComponent(`id == ${sent.reportId}`)}`)).body[
      "reports"
    ];
    expect(stored).toMatchObject({
      name: "ExceptionReport",
      content: "stack trace",
      properties: [{ name: "os", value: "macOS" }],
    });
  });

  it("answers an unexpected failure Internal, pointing at the service log entry it wrote, as REST does", async () => {
    const reports = createClient(ReportServer, grpcWeb);
    const requestId = `ray-grpc-${crypto.randomUUID()}`;
    // The report's INSERT fails inside D1, as a lost connection would.
    await env.DB.prepare(
      "CREATE TRIGGER grpc_fail_report BEFORE INSERT ON reports BEGIN SELECT RAISE(ABORT, 'injected failure'); END",
    ).run();
    try {
      await expectStatus(
        reports.sendReport(
          { name: "CrashReport", content: "x" },
          { headers: { ...withKey.headers, "cf-ray": requestId } },
        ),
        Code.Internal,
        `An unexpected error occurred. See the service log for request ${requestId}`,
      );
    } finally {
      await env.DB.prepare("DROP TRIGGER grpc_fail_report").run();
    }
    // The entry is written after the answer.
    let logs: { message: string; exception?: string }[] = [];
    for (let i = 0; i < 100 && logs.length === 0; i++) {
      logs = (await admin("GET", `/v1/log?filter=${encodeURIComponent(`requestId == "${requestId}"`)}`)).body["logs"];
      if (logs.length === 0) await new Promise((resolve) => setTimeout(resolve, 30));
    }
    expect(logs).toHaveLength(1);
    expect(logs[0]!.message).toMatch(/^Unhandled error: Failed query: insert into "reports"/);
    expect(logs[0]!.exception).toContain("injected failure");
  });
});

describe("the other wire formats", () => {
  it("serves the Connect protocol", async () => {
    const lic = await newLicense("File");
    const overConnect = createClient(LicenseServer, connect);
    expect((await overConnect.validateLicense({ userKey: lic.userKey }, withKey)).status).toBe(
      LicenseStatus.NOT_ACTIVATED,
    );
    await expectStatus(
      overConnect.validateLicense({ userKey: "NOPE" }, withKey),
      Code.NotFound,
      "License key not found",
    );
  });

  it("serves gRPC-Web text (base64 frames)", async () => {
    const lic = await newLicense("File");
    const message = toBinary(
      ValidateLicenseRequestSchema,
      create(ValidateLicenseRequestSchema, { userKey: lic.userKey }),
    );
    const frame = new Uint8Array(5 + message.byteLength);
    new DataView(frame.buffer).setUint32(1, message.byteLength);
    frame.set(message, 5);
    const res = await exports.default.fetch(`${BASE}/licensing.v1.LicenseServer/ValidateLicense`, {
      method: "POST",
      headers: { "content-type": "application/grpc-web-text", "x-grpc-web": "1", "x-api-key": ADMIN.key },
      body: btoa(String.fromCharCode(...frame)),
    });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toContain("application/grpc-web-text");
    const bytes = Uint8Array.from(atob(await res.text()), (ch) => ch.charCodeAt(0));
    const length = new DataView(bytes.buffer).getUint32(1);
    expect(bytes[0]).toBe(0);
    const answer = fromBinary(ValidateLicenseResponseSchema, bytes.slice(5, 5 + length));
    expect(answer).toMatchObject({ licenseId: lic.licenseId, status: LicenseStatus.NOT_ACTIVATED });
    // The trailer frame follows, with grpc-status 0.
    expect(new TextDecoder().decode(bytes.slice(5 + length + 5))).toContain("grpc-status: 0");
  });

  it("is off (404) while Application:EnableGrpcWeb is false", async () => {
    await setSetting("Application:EnableGrpcWeb", "false");
    try {
      const res = await exports.default.fetch(`${BASE}/licensing.v1.LicenseServer/ValidateLicense`, {
        method: "POST",
        headers: { "content-type": "application/grpc-web+proto" },
        body: new Uint8Array(5),
      });
      expect(res.status).toBe(404);
    } finally {
      await setSetting("Application:EnableGrpcWeb", null);
    }
  });
});
