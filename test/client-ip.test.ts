/**
 * Issue 14: the client address limits apply to. Outside development a request without `CF-Connecting-IP` is
 * "unknown", its own bucket, never whitelisted; the native gRPC gateway's signed client address
 * (`x-licensing-gateway-client`, IpFiltering:GatewaySecret) is believed only with a valid, fresh signature.
 * test/node/grpc-gateway.test.ts shows the gateway strips the address headers its clients send.
 */
import { describe, expect, it } from "vitest";
import { GATEWAY_CLIENT_HEADER, GATEWAY_SIGNATURE_SECONDS } from "../src/protection/client-ip";
import { development, fetchAs, production } from "./production-kit";

const SECRET = "gateway-secret-for-client-ip-tests-0123456789";

async function sign(secret: string, ip: string, at = Math.floor(Date.now() / 1000)): Promise<string> {
  const key = await crypto.subtle.importKey(
    "raw",
    new TextEncoder().encode(secret),
    { name: "HMAC", hash: "SHA-256" },
    false,
    ["sign"],
  );
  const mac = new Uint8Array(await crypto.subtle.sign("HMAC", key, new TextEncoder().encode(`${ip};${at}`)));
  return `${ip};${at};${[...mac].map((b) => b.toString(16).padStart(2, "0")).join("")}`;
}

describe("a request without CF-Connecting-IP", () => {
  it("is never whitelisted in production: it is counted in its own bucket", async () => {
    const limits = {
      IpFiltering__BruteForceProtection__MaxRequestsPerTimeFrame: "3",
      IpFiltering__Whitelist: "127.0.0.1,::1,unknown",
    };
    const vars = production(limits);
    const statuses: number[] = [];
    for (let i = 0; i < 5; i++) statuses.push((await fetchAs(vars, "/health")).status);
    expect(statuses).toEqual([200, 200, 200, 429, 429]);
    // A client with an address of its own is not in that bucket.
    expect((await fetchAs(vars, "/health", { headers: { "cf-connecting-ip": "198.51.100.20" } })).status).toBe(200);
    // Under Development the same requests are 127.0.0.1, as wrangler dev sets it (whitelisted).
    const dev = development(limits);
    for (let i = 0; i < 5; i++) expect((await fetchAs(dev, "/health")).status).toBe(200);
  });
});

describe("the gateway's signed client address", () => {
  const blocked = "203.0.113.7";
  const vars = (secret?: string) =>
    production({ IpFiltering__Blacklist: blocked, ...(secret ? { IpFiltering__GatewaySecret: secret } : {}) });
  const from = (header: string) => ({
    headers: { "cf-connecting-ip": "198.51.100.30", [GATEWAY_CLIENT_HEADER]: header },
  });

  it("is the client's address when its signature is valid and fresh", async () => {
    expect((await fetchAs(vars(SECRET), "/health", from(await sign(SECRET, blocked)))).status).toBe(403);
    expect((await fetchAs(vars(SECRET), "/health", from(await sign(SECRET, "198.51.100.31")))).status).toBe(200);
  });

  it("is ignored when forged, stale, tampered with, or when no secret is configured", async () => {
    const stale = Math.floor(Date.now() / 1000) - GATEWAY_SIGNATURE_SECONDS - 5;
    const valid = await sign(SECRET, "198.51.100.31");
    for (const header of [
      await sign("another-secret-entirely-0123456789abcdef", blocked),
      await sign(SECRET, blocked, stale),
      `${blocked};${valid.split(";").slice(1).join(";")}`,
      `${blocked};${Math.floor(Date.now() / 1000)}`,
      blocked,
    ]) {
      expect((await fetchAs(vars(SECRET), "/health", from(header))).status, header).toBe(200);
    }
    expect((await fetchAs(vars(), "/health", from(await sign(SECRET, blocked)))).status).toBe(200);
  });
});
