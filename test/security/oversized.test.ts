/**
 * Oversized input (issue 9, adversarial catalogue): bodies over the JSON limit, with and without Content-Length and
 * in every JSON media type; fields over their limits; deep nesting; long query parameters; and the same limits on
 * the gRPC edge. Each is refused with SPEC's 400 (problem details) or 413 (the envelope), never a 500, and nothing is
 * written.
 */
import { exports } from "cloudflare:workers";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createGrpcWebTransport } from "@connectrpc/connect-web";
import { describe, expect, it } from "vitest";
import { LicenseServer } from "../../src/gen/licensing/v1/license_server_pb";
import { ReportServer } from "../../src/gen/licensing/v1/report_server_pb";
import { MAX_JSON_BODY_BYTES } from "../../src/http/body-limit";
import { ADMIN, BASE, admin, call, countRows } from "../helpers";
import { newLicense } from "../samples/licensing";

const MiB = 1024 * 1024;

/** A JSON body of about `bytes` bytes whose only oversized part is an unknown property (the schema would accept it). */
function padded(body: Record<string, unknown>, bytes: number): string {
  return JSON.stringify({ ...body, padding: "x".repeat(bytes) });
}

async function expectTooLarge(res: { status: number; body: Record<string, unknown> }): Promise<void> {
  expect(res.status).toBe(413);
  expect(res.body).toEqual({ success: false, code: 413, message: "The request body is larger than 4 MiB" });
}

describe("request bodies over 4 MiB", () => {
  it("answer 413 on Management routes and write nothing, whatever JSON media type says so", async () => {
    const before = await countRows("resources");
    for (const type of [
      "application/json",
      "application/json-patch+json",
      "text/json",
      "Application/JSON; charset=utf-8",
    ]) {
      const res = await call("POST", "/v1/resources", {
        key: ADMIN.key,
        raw: padded({ resource: { name: "big" } }, 5 * MiB),
        headers: { "content-type": type },
      });
      await expectTooLarge(res);
    }
    expect(await countRows("resources")).toBe(before);
    await expectTooLarge(
      await call("PUT", "/v1/settings", {
        key: ADMIN.key,
        raw: padded({ settings: [{ name: "Application:DefaultPageSize", value: "7" }] }, 5 * MiB),
      }),
    );
    expect(await countRows("settings")).toBe(0);
  });

  it("answer 413 when the body streams without a Content-Length", async () => {
    const text = new TextEncoder().encode(padded({ resource: { name: "streamed" } }, MAX_JSON_BODY_BYTES));
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        for (let at = 0; at < text.byteLength; at += 256 * 1024) controller.enqueue(text.slice(at, at + 256 * 1024));
        controller.close();
      },
    });
    const res = await exports.default.fetch(`${BASE}/v1/resources`, {
      method: "POST",
      headers: { "x-api-key": ADMIN.key, "content-type": "application/json" },
      body,
    });
    await expectTooLarge({ status: res.status, body: (await res.json()) as Record<string, unknown> });
    expect(await countRows("resources")).toBe(0);
  });

  it("are refused before the credential matters: a login body is limited too", async () => {
    await expectTooLarge(
      await call("POST", "/v1/auth/login", { raw: padded({ username: "admin", password: "x" }, 5 * MiB) }),
    );
  });

  it("let a body just under the limit through to validation", async () => {
    const res = await call("POST", "/v1/resources", {
      key: ADMIN.key,
      raw: padded({ resource: { name: "fits" } }, MAX_JSON_BODY_BYTES - 1024),
    });
    expect(res.status, res.text).toBe(200);
  });
});

describe("fields over their limits", () => {
  const long = "n".repeat(100 * 1024);

  it("answer 400 naming the field, and nothing is written", async () => {
    const cases: [string, string, unknown, string][] = [
      ["POST", "/v1/resources", { resource: { name: long } }, "resource.name"],
      ["POST", "/v1/users", { user: { userName: long, password: "Secret#123456" } }, "user.userName"],
      ["POST", "/v1/products", { product: { code: "p", name: long } }, "product.name"],
      ["POST", "/v1/customers", { customer: { company: long } }, "customer.company"],
      ["POST", "/v1/resources", { resource: { name: "tags", meta: "m".repeat(4001) } }, "resource.meta"],
      [
        "PUT",
        "/v1/settings",
        { settings: [{ name: "Application:HealthCheckEndPoint", value: "h".repeat(100_001) }] },
        "settings[0].value",
      ],
    ];
    const tables = ["resources", "users", "products", "customers", "settings"];
    const before = await Promise.all(tables.map(countRows));
    for (const [method, path, body, field] of cases) {
      const res = await admin(method, path, body);
      expect(res.status, `${path} ${field}`).toBe(400);
      expect(Object.keys(res.body["errors"] ?? {}), `${path} ${field}`).toContain(field);
    }
    expect(await Promise.all(tables.map(countRows))).toEqual(before);
  });

  it("bound arrays and the licensing fields an application sends", async () => {
    const lic = await newLicense("Activation");
    const features = await admin("POST", "/v1/licenses", {
      license: { productId: 1, features: Array.from({ length: 257 }, (_, i) => `f${i}`) },
    });
    expect(features.status).toBe(400);
    const machine = await admin("POST", "/v1/license/activate", { userKey: lic.userKey, machineId: long });
    expect(machine.status).toBe(400);
    expect(Object.keys(machine.body["errors"])).toEqual(["machineId"]);
    expect(await countRows("license_tokens")).toBe(0);
  });

  it("bound list parameters: a filter over 2,000 characters, a sort, select or include over 2,000", async () => {
    const filter = await admin("GET", `/v1/resources?filter=${encodeURIComponent(`name == "${"a".repeat(2000)}"`)}`);
    expect(filter.body).toEqual({
      success: false,
      code: 400,
      message: "The filter is too long: at most 2000 characters are allowed.",
    });
    for (const param of ["sort", "select"]) {
      const res = await admin("GET", `/v1/resources?${param}=${"name,".repeat(500)}`);
      expect(res.status, param).toBe(400);
      expect(Object.keys(res.body["errors"]), param).toEqual([param]);
    }
  });
});

describe("deep nesting", () => {
  const deep = (levels: number) => "[".repeat(levels) + '"x"' + "]".repeat(levels);

  it("in a known field is a schema violation (400), never a stack overflow", async () => {
    const res = await call("POST", "/v1/resources", {
      key: ADMIN.key,
      raw: `{"resource":{"name":"deep","meta":${deep(100_000)}}}`,
    });
    expect(res.status).toBe(400);
    expect(Object.keys(res.body["errors"])).toEqual(["resource.meta"]);
  });

  it("in an unknown property is ignored, like any unknown property (CONTRACT section 2)", async () => {
    const res = await call("POST", "/v1/resources", {
      key: ADMIN.key,
      raw: `{"resource":{"name":"ignored"},"extra":${deep(100_000)}}`,
    });
    expect(res.status, res.text).toBe(200);
  });

  it("that is not JSON at all is problem details", async () => {
    const res = await call("POST", "/v1/resources", { key: ADMIN.key, raw: `{"resource":${"[".repeat(10_000)}` });
    expect(res.status).toBe(400);
    expect(res.headers.get("content-type")).toContain("application/problem+json");
  });
});

describe("the gRPC edge", () => {
  const fetchWorker: typeof fetch = (input, init) =>
    exports.default.fetch(input as RequestInfo, {
      ...init,
      ...(init?.redirect === "error" ? { redirect: "manual" as const } : {}),
    });
  const transport = createGrpcWebTransport({ baseUrl: BASE, fetch: fetchWorker });
  const withKey = { headers: { "x-api-key": ADMIN.key } };

  async function grpcCode(promise: Promise<unknown>): Promise<Code | undefined> {
    return promise.then(
      () => undefined,
      (e: unknown) => (e instanceof ConnectError ? e.code : undefined),
    );
  }

  it("applies REST's field limits: a 1 MB machine id is InvalidArgument and stores nothing", async () => {
    const lic = await newLicense("Activation");
    const licenses = createClient(LicenseServer, transport);
    expect(
      await grpcCode(licenses.activateLicense({ userKey: lic.userKey, machineId: "M".repeat(1_000_000) }, withKey)),
    ).toBe(Code.InvalidArgument);
    expect(
      await grpcCode(
        licenses.activateLicense({ userKey: lic.userKey, machineId: "PC", version: "1".repeat(65) }, withKey),
      ),
    ).toBe(Code.InvalidArgument);
    expect(await countRows("license_tokens")).toBe(0);
    expect(
      (await licenses.activateLicense({ userKey: lic.userKey, machineId: "M".repeat(256) }, withKey)).licenseToken,
    ).toMatch(/^actk_/);
  });

  it("bounds a report's content and properties as REST does", async () => {
    const reports = createClient(ReportServer, transport);
    const before = await countRows("reports");
    expect(
      await grpcCode(
        reports.sendReport(
          {
            name: "ExceptionReport",
            content: "c",
            properties: Array.from({ length: 1001 }, () => ({ name: "n", value: "v" })),
          },
          withKey,
        ),
      ),
    ).toBe(Code.InvalidArgument);
    expect(
      await grpcCode(
        reports.sendReport(
          { name: "ExceptionReport", content: "c", properties: [{ name: "n", value: "v".repeat(4097) }] },
          withKey,
        ),
      ),
    ).toBe(Code.InvalidArgument);
    expect(await grpcCode(reports.sendReport({ name: "ExceptionReport", content: "y".repeat(5 * MiB) }, withKey))).toBe(
      Code.ResourceExhausted,
    );
    expect(await countRows("reports")).toBe(before);
  });
});
