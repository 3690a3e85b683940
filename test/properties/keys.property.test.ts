/**
 * Key formats over many draws (fast-check): user keys in any Licensing:UserKeyFormat, license ids, license tokens,
 * API keys and client secrets, generated codes; the CSPRNG's alphabet use (every character drawn, none favoured);
 * and the derived client tokens (licensing/client-tokens.ts `clientToken`), which must be a function of exactly their
 * inputs: the same (kind, license, machine, client) always gives the same token, different ones never the same.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { generateApiKey, generateClientSecret } from "../../src/auth/api-key-service";
import { BASE62, CROCKFORD32, randomString } from "../../src/kernel/crypto";
import { buildConfig } from "../../src/kernel/config";
import { generateCode } from "../../src/http/repository";
import { generateLicenseId, generateUserKey } from "../../src/licensing/license-core";
import { TokenKind, generateToken } from "../../src/licensing/tokens";
import { clientToken } from "../../src/licensing/client-tokens";

const CROCKFORD = "[0-9A-HJKMNP-TV-Z]";

describe("generated identifiers", () => {
  it("user keys follow any Licensing:UserKeyFormat: each X a Crockford base32 character, everything else kept", () => {
    const format = fc
      .array(fc.constantFrom("X", "X", "X", "-"), { minLength: 1, maxLength: 40 })
      .filter((f) => f.includes("X"))
      .map((f) => f.join(""));
    fc.assert(
      fc.property(format, (f) => {
        const key = generateUserKey(f);
        expect(key).toHaveLength(f.length);
        [...f].forEach((ch, i) => expect(key[i]).toMatch(ch === "X" ? new RegExp(`^${CROCKFORD}$`) : /^-$/));
      }),
      { numRuns: 1000 },
    );
    for (let i = 0; i < 500; i++)
      expect(generateUserKey("XXXXX-XXXXX-XXXXX-XXXXX-XXXXX")).toMatch(
        new RegExp(`^${CROCKFORD}{5}(-${CROCKFORD}{5}){4}$`),
      );
  });

  it("license ids, tokens, API keys, client secrets and codes have their documented shapes", () => {
    const seen = new Set<string>();
    for (let i = 0; i < 2000; i++) {
      const ids = [
        generateLicenseId(),
        generateToken(TokenKind.Activation),
        generateToken(TokenKind.Floating),
        generateApiKey(),
        generateClientSecret(),
        generateCode("C"),
        generateCode("O"),
      ];
      expect(ids[0]).toMatch(/^lic[0-9A-F]{8}$/);
      expect(ids[1]).toMatch(/^actk_[0-9A-Za-z]{24}$/);
      expect(ids[2]).toMatch(/^fltk_[0-9A-Za-z]{24}$/);
      expect(ids[3]).toMatch(/^api_[0-9A-Za-z]{32}$/);
      expect(ids[4]).toMatch(/^[0-9A-Za-z]{40}$/);
      expect(ids[5]).toMatch(new RegExp(`^C-${CROCKFORD}{8}$`));
      expect(ids[6]).toMatch(new RegExp(`^O-${CROCKFORD}{8}$`));
      // Secrets never repeat (license ids have 32 bits and may, which their unique index and retries handle).
      for (const secret of ids.slice(1, 5)) {
        expect(seen.has(secret)).toBe(false);
        seen.add(secret);
      }
    }
  });

  it("draws every character of an alphabet, none more often than chance allows", () => {
    for (const alphabet of [BASE62, CROCKFORD32, "0123456789abcdefghijklmnopqrstuvwxyz", "0123456789ABCDEF"]) {
      const counts = new Map<string, number>();
      const draws = 200 * alphabet.length;
      for (const ch of randomString(draws, alphabet)) counts.set(ch, (counts.get(ch) ?? 0) + 1);
      expect([...counts.keys()].sort()).toEqual([...alphabet].sort());
      // 200 expected per character; a modulo bias of 8/256 would show as about 6 % more for some characters.
      const chi = [...counts.values()].reduce((sum, n) => sum + (n - 200) ** 2 / 200, 0);
      expect(chi, alphabet).toBeLessThan(alphabet.length * 2.5);
    }
  });
});

describe("derived client tokens", () => {
  const { config } = buildConfig({ Application__EncryptionKey: "property-test-key" }, []);
  // Machine and client ids as clients send them, with the separators an encoding could confuse.
  const id = fc
    .array(fc.constantFrom("a", "b", "\n", ":", "|", "\u0000", "é", ""), { maxLength: 4 })
    .map((p) => p.join(""));
  const client = fc.record({
    kind: fc.constantFrom(TokenKind.Activation, TokenKind.Floating),
    license: fc.integer({ min: 1, max: 3 }),
    machine: id,
    clientId: id,
  });

  it("are stable for the same client and shaped like issued tokens", async () => {
    await fc.assert(
      fc.asyncProperty(client, async (c) => {
        const token = await clientToken(config, c.kind, c.license, c.machine, c.clientId);
        expect(token).toMatch(c.kind === TokenKind.Floating ? /^fltk_[0-9A-Za-z]{24}$/ : /^actk_[0-9A-Za-z]{24}$/);
        expect(await clientToken(config, c.kind, c.license, c.machine, c.clientId)).toBe(token);
      }),
      { numRuns: 300 },
    );
  });

  it("never give two different clients the same token", async () => {
    await fc.assert(
      fc.asyncProperty(client, client, async (a, b) => {
        fc.pre(JSON.stringify(a) !== JSON.stringify(b));
        const [ta, tb] = await Promise.all([
          clientToken(config, a.kind, a.license, a.machine, a.clientId),
          clientToken(config, b.kind, b.license, b.machine, b.clientId),
        ]);
        expect(ta, `${JSON.stringify(a)} ${JSON.stringify(b)}`).not.toBe(tb);
      }),
      { numRuns: 2000 },
    );
    // The spelling that once collided: a separator moved from the machine id into the client id.
    expect(await clientToken(config, TokenKind.Activation, 1, "a\nb", "c")).not.toBe(
      await clientToken(config, TokenKind.Activation, 1, "a", "b\nc"),
    );
  }, 60_000);
});
