/**
 * The signing key store (CONTRACT section 5): `GET /v1/extensions/keys` publishes a JWK Set; the private key is
 * stored encrypted as a SignatureKey resource, created once even when isolates race; signatures verify offline.
 */
import { env } from "cloudflare:workers";
import { compactVerify, createLocalJWKSet, importJWK } from "jose";
import { describe, expect, it } from "vitest";
import { buildConfig } from "../src/kernel/config";
import { getDb } from "../src/db/client";
import { forgetSigningKeys, signBytes, signJws, signingKeys } from "../src/auth/signing-keys";
import { call, setSetting } from "./helpers";

const config = buildConfig({ Application__EncryptionKey: "test-encryption-key" }, []).config;

describe("signing keys", () => {
  it("creates one key even when first uses race, and stores it encrypted", async () => {
    const db = getDb(env.DB);
    const results = await Promise.all(
      Array.from({ length: 6 }, () => {
        forgetSigningKeys();
        return signingKeys(db, config);
      }),
    );
    expect(new Set(results.map((k) => k.kid)).size).toBe(1);
    const rows = await env.DB.prepare("SELECT code, data, data_format FROM resources WHERE type = 'SignatureKey'").all<{
      code: string;
      data: string;
      data_format: string;
    }>();
    expect(rows.results).toHaveLength(1);
    expect(rows.results[0]).toMatchObject({ code: results[0]!.kid, data_format: "jwk+aes-gcm" });
    expect(rows.results[0]!.data).toMatch(/^v1:/);
    expect(rows.results[0]!.data).not.toContain('"d"');
  });

  it("publishes the keys as a cacheable JWK Set", async () => {
    const res = await call("GET", "/v1/extensions/keys");
    expect(res.status).toBe(200);
    expect(res.headers.get("cache-control")).toBe("public, max-age=300");
    const { keys } = res.body as { keys: Record<string, string>[] };
    expect(keys).toHaveLength(1);
    expect(keys[0]).toEqual({
      kty: "EC",
      crv: "P-256",
      x: expect.any(String),
      y: expect.any(String),
      kid: expect.any(String),
      alg: "ES256",
      use: "sig",
    });
    expect(keys[0]).not.toHaveProperty("d");
  });

  it("signs JWS and raw bytes that verify offline with the published keys", async () => {
    const db = getDb(env.DB);
    const { keys } = (await call("GET", "/v1/extensions/keys")).body as {
      keys: (Record<string, string> & { kid: string })[];
    };
    const jws = await signJws(db, config, { licenseId: "licABCDEF01", exp: 2000000000 });
    const verified = await compactVerify(jws, createLocalJWKSet({ keys }));
    expect(verified.protectedHeader).toMatchObject({ alg: "ES256", kid: keys[0]!.kid });
    expect(JSON.parse(new TextDecoder().decode(verified.payload))).toEqual({
      licenseId: "licABCDEF01",
      exp: 2000000000,
    });

    const bytes = new TextEncoder().encode('{"a":1}');
    const { signature, keyId } = await signBytes(db, config, bytes);
    expect(keyId).toBe(keys[0]!.kid);
    const raw = Uint8Array.from(atob(signature), (ch) => ch.charCodeAt(0));
    expect(raw.byteLength).toBe(64);
    const publicKey = (await importJWK(keys[0]!, "ES256")) as CryptoKey;
    expect(await crypto.subtle.verify({ name: "ECDSA", hash: "SHA-256" }, publicKey, raw, bytes)).toBe(true);
    expect(
      await crypto.subtle.verify(
        { name: "ECDSA", hash: "SHA-256" },
        publicKey,
        raw,
        new TextEncoder().encode('{"a":2}'),
      ),
    ).toBe(false);
  });

  it("answers 500 naming Application:EncryptionKey when it is not set", async () => {
    forgetSigningKeys();
    await setSetting("Application:EncryptionKey", "");
    try {
      const res = await call("GET", "/v1/extensions/keys");
      expect(res.status).toBe(500);
      expect(res.body["message"]).toContain("Application:EncryptionKey");
    } finally {
      await setSetting("Application:EncryptionKey", null);
      forgetSigningKeys();
    }
    expect((await call("GET", "/v1/extensions/keys")).status).toBe(200);
  });
});
