/**
 * Property tests of the byte encoders (src/kernel/crypto.ts), which use the runtime's own Uint8Array.prototype.toHex and
 * toBase64 where it has them (workerd, where these tests run): for any bytes, given as a Uint8Array, a view into a
 * larger buffer or an ArrayBuffer, the answers are those of the definitions (RFC 4648 base64 with padding, base64url
 * without, lowercase hex), written here by hand, and decode back to the same bytes.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { fromBase64, toBase64, toBase64Url, toHex } from "../../src/kernel/crypto";

const ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/** RFC 4648 section 4, by the letter: 24-bit groups, `=` for the missing bytes of the last one. */
function base64(bytes: Uint8Array): string {
  let out = "";
  for (let i = 0; i < bytes.length; i += 3) {
    const n = ((bytes[i] ?? 0) << 16) | ((bytes[i + 1] ?? 0) << 8) | (bytes[i + 2] ?? 0);
    const chars = [18, 12, 6, 0].map((shift) => ALPHABET[(n >> shift) & 63]);
    const missing = Math.max(0, i + 3 - bytes.length);
    out += chars.slice(0, 4 - missing).join("") + "=".repeat(missing);
  }
  return out;
}

const hex = (bytes: Uint8Array) => [...bytes].map((b) => (b < 16 ? "0" : "") + b.toString(16)).join("");

/** The same bytes three ways: their own array, a view in the middle of a larger buffer, and an ArrayBuffer. */
const forms = fc
  .tuple(fc.uint8Array({ maxLength: 200 }), fc.uint8Array({ maxLength: 8 }), fc.uint8Array({ maxLength: 8 }))
  .map(([bytes, before, after]) => {
    const backing = new Uint8Array(before.length + bytes.length + after.length);
    backing.set(before);
    backing.set(bytes, before.length);
    backing.set(after, before.length + bytes.length);
    return {
      bytes,
      forms: [bytes, backing.subarray(before.length, before.length + bytes.length), bytes.slice().buffer] as const,
    };
  });

describe("byte encoders", () => {
  it("encode any bytes as the definitions say, in every form, and decode back", () => {
    fc.assert(
      fc.property(forms, ({ bytes, forms }) => {
        const padded = base64(bytes);
        const url = padded.replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
        for (const form of forms) {
          expect(toBase64(form)).toBe(padded);
          expect(toBase64Url(form)).toBe(url);
          expect(toHex(form)).toBe(hex(bytes));
        }
        expect([...fromBase64(padded)]).toEqual([...bytes]);
      }),
      { numRuns: 500 },
    );
  });
});
