/**
 * The client verifies update checks over its own RFC 8785 implementation (client/src/jcs.ts) while the service signs
 * with the `canonicalize` package: on every JSON value both must write the same bytes, or a genuine signature would
 * not verify. Values are drawn by fast-check with any Unicode text in keys and strings, every kind of double (-0,
 * exponents, subnormals) and deep nesting. A string with a lone surrogate has no UTF-8 form: RFC 8785 says to refuse
 * it, which the client does, so the service's validation refuses such text at the edge (src/http/respond.ts) and
 * signed data never holds one.
 */
import canonicalize from "canonicalize";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { canonicalize as clientCanonicalize } from "../../client/src/jcs";

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** JSON values with any code point (never half of a surrogate pair) in keys and strings. */
const json = fc.oneof(
  fc.jsonValue({ stringUnit: "binary", maxDepth: 6 }),
  fc.jsonValue({ stringUnit: "grapheme", maxDepth: 4 }),
  // Numbers at the edges of the ECMAScript number format RFC 8785 adopts.
  fc.array(
    fc.oneof(
      fc.double({ noNaN: true, noDefaultInfinity: true }),
      fc.constantFrom(-0, 1e21, 1e-7, 5e-324, Number.MAX_SAFE_INTEGER + 2),
    ),
    { maxLength: 8 },
  ),
);

describe("canonical JSON", () => {
  it("is the same text from the client library as from the canonicalize package the service signs with", () => {
    fc.assert(
      fc.property(json, (value) => {
        const expected = canonicalize(value);
        expect(clientCanonicalize(value)).toBe(expected);
        // Canonical text is JSON, and parses back to the value (-0 is written as 0, as ECMAScript does).
        expect(JSON.parse(expected!)).toEqual(JSON.parse(JSON.stringify(value)));
      }),
      { numRuns: 2000 },
    );
  });

  it("orders members by UTF-16 code units, whatever order they were built in", () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(fc.tuple(fc.string({ unit: "binary", maxLength: 4 }), fc.integer()), {
          selector: ([k]) => k,
          maxLength: 12,
        }),
        (entries) => {
          const forward = Object.fromEntries(entries);
          const backward = Object.fromEntries([...entries].reverse());
          expect(clientCanonicalize(backward)).toBe(clientCanonicalize(forward));
          expect(clientCanonicalize(forward)).toBe(canonicalize(forward));
        },
      ),
      { numRuns: 1000 },
    );
  });

  it("refuses a lone surrogate in the client, as RFC 8785 requires", () => {
    const surrogate = fc.integer({ min: 0xd800, max: 0xdfff }).map((c) => String.fromCharCode(c));
    fc.assert(
      fc.property(
        fc.string({ maxLength: 4 }),
        surrogate,
        fc.string({ maxLength: 4 }),
        fc.boolean(),
        (before, lone, after, asKey) => {
          const text = before + lone + after;
          fc.pre(LONE_SURROGATE.test(text));
          const value = asKey ? { [text]: 1 } : { data: [text] };
          expect(() => clientCanonicalize(value)).toThrow(TypeError);
        },
      ),
      { numRuns: 500 },
    );
  });
});
