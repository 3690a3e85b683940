/**
 * Issue 14, "Abuse and growth": a malformed gRPC-Web or Connect body is the client's error (InvalidArgument, or
 * the HTTP 4xx of a body that is not a gRPC request at all), never an Internal error written to the service log.
 */
import { env, exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { ADMIN, BASE } from "./helpers";

const PATHS = [
  "/licensing.v1.LicenseServer/ValidateLicense",
  "/licensing.v1.Authentication/Authenticate",
  "/licensing.v1.ReportServer/SendReport",
];

/** A gRPC-Web frame: flags, big-endian length, payload. */
function frame(payload: Uint8Array, flags = 0, length = payload.byteLength): Uint8Array {
  const out = new Uint8Array(5 + payload.byteLength);
  out[0] = flags;
  new DataView(out.buffer).setUint32(1, length);
  out.set(payload, 5);
  return out;
}

const BODIES: [string, string, BodyInit][] = [
  ["binary: truncated frame header", "application/grpc-web+proto", new Uint8Array([0, 0, 0])],
  ["binary: length past the body", "application/grpc-web+proto", frame(new Uint8Array([8, 1]), 0, 1000)],
  [
    "binary: not protobuf",
    "application/grpc-web+proto",
    frame(new Uint8Array([0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff])),
  ],
  ["binary: wrong wire type", "application/grpc-web+proto", frame(new Uint8Array([0x0a, 0x85, 0x01]))],
  [
    "binary: compressed flag without compression",
    "application/grpc-web+proto",
    frame(new Uint8Array([0x0a, 0x01, 0x41]), 1),
  ],
  [
    "binary: two messages",
    "application/grpc-web+proto",
    new Uint8Array([...frame(new Uint8Array([0x0a, 0x01, 0x41])), ...frame(new Uint8Array([0x0a, 0x01, 0x41]))]),
  ],
  ["binary: empty body", "application/grpc-web+proto", new Uint8Array(0)],
  ["text: not base64", "application/grpc-web-text", "%%%not base64!!!"],
  ["text: base64 of garbage", "application/grpc-web-text", btoa("\u00ff\u00ff\u00ff")],
  ["text: bad padding", "application/grpc-web-text", "AAAA=A"],
  ["connect: not JSON", "application/json", "{not json"],
  ["connect: wrong field types", "application/json", JSON.stringify({ userKey: 42, machineId: ["x"] })],
  ["connect: not protobuf", "application/proto", new Uint8Array([0xff, 0xff, 0xff])],
];

async function errorsLogged(): Promise<number> {
  const row = await env.DB.prepare(
    "SELECT count(*) AS n FROM logs WHERE level IN ('Error', 'Fatal', 'Critical')",
  ).first<{ n: number }>();
  return row?.n ?? 0;
}

describe("malformed gRPC bodies", () => {
  for (const [what, type, body] of BODIES) {
    it(`answer a client error: ${what}`, async () => {
      const before = await errorsLogged();
      for (const path of PATHS) {
        const res = await exports.default.fetch(`${BASE}${path}`, {
          method: "POST",
          headers: { "content-type": type, "x-api-key": ADMIN.key },
          body,
        });
        const text = await res.text();
        expect(res.status, `${path}: ${text}`).toBeLessThan(500);
        const status = res.headers.get("grpc-status") ?? /grpc-status:\s*(\d+)/.exec(text)?.[1] ?? null;
        // 13 Internal and 2 Unknown are server-side failures.
        expect(status === "13" || status === "2", `${path}: grpc-status ${status} ${text}`).toBe(false);
        if (type.startsWith("application/json") || type === "application/proto") {
          expect(res.status, `${path}: ${text}`).toBeGreaterThanOrEqual(400);
        }
      }
      expect(await errorsLogged()).toBe(before);
    });
  }
});
