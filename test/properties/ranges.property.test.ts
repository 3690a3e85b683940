/**
 * Property tests of Range handling (src/http/ranges.ts), with fast-check. `parseRange` is compared with a model
 * of RFC 9110 section 14 as the service applies it: each satisfiable range becomes one span holding exactly the
 * bytes it asks for, in request order; a malformed or reversed header, more than 1,000 ranges, or ranges out of
 * proportion (more bytes than the file, more than 20 backtracks) mean the whole file; nothing satisfiable means 416.
 * `coalesce` must group every range exactly once, in request order, into spans read front to back.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  MAX_RANGE_BACKTRACKS,
  MAX_RANGES,
  type RangeRequest,
  type Span,
  coalesce,
  parseRange,
} from "../../src/http/ranges";

type Spec =
  | { kind: "range"; start: number; end: number }
  | { kind: "open"; start: number }
  | { kind: "suffix"; length: number };

const specArb = (size: number): fc.Arbitrary<Spec> =>
  fc.oneof(
    fc.record({ kind: fc.constant("range" as const), start: fc.nat(size + 20), end: fc.nat(size + 20) }),
    fc.record({ kind: fc.constant("open" as const), start: fc.nat(size + 20) }),
    fc.record({ kind: fc.constant("suffix" as const), length: fc.nat(size + 20) }),
  );

/** A header as clients write it, with the spacing RFC 9110 allows. */
const headerArb = (specs: readonly Spec[]) =>
  fc
    .record({
      unit: fc.constantFrom("bytes", "Bytes", "BYTES"),
      sep: fc.constantFrom(",", ", ", " , "),
      pad: fc.constantFrom("", " "),
    })
    .map(
      ({ unit, sep, pad }) =>
        `${unit}${pad}=${pad}${specs.map((s) => (s.kind === "range" ? `${s.start}-${s.end}` : s.kind === "open" ? `${s.start}-` : `-${s.length}`)).join(sep)}`,
    );

/** The bytes a spec asks for, clipped to the file, as an inclusive span (undefined when none). */
function requested(spec: Spec, size: number): Span | undefined {
  if (spec.kind === "suffix")
    return spec.length === 0 || size === 0 ? undefined : { start: Math.max(0, size - spec.length), end: size - 1 };
  if (spec.start >= size) return undefined;
  return { start: spec.start, end: spec.kind === "open" ? size - 1 : Math.min(spec.end, size - 1) };
}

/** What the service must answer to these specs (see the file comment). */
function model(specs: readonly Spec[], size: number): RangeRequest {
  if (specs.length > MAX_RANGES || specs.some((s) => s.kind === "range" && s.end < s.start)) return { kind: "all" };
  const spans = specs.map((s) => requested(s, size)).filter((s): s is Span => s !== undefined);
  if (spans.length === 0 || size === 0) return { kind: "unsatisfiable" };
  const total = spans.reduce((n, s) => n + s.end - s.start + 1, 0);
  const backtracks = spans.filter((s, i) => i > 0 && s.start <= spans[i - 1]!.end).length;
  if (total > size || backtracks > MAX_RANGE_BACKTRACKS) return { kind: "all" };
  return { kind: "ranges", ranges: spans };
}

describe("parseRange", () => {
  it("answers spans holding exactly the requested bytes, in request order, or the whole file or 416 as RFC 9110 allows", () => {
    const input = fc
      .nat(5000)
      .chain((size) =>
        fc
          .array(specArb(size), { minLength: 1, maxLength: 40 })
          .chain((specs) => headerArb(specs).map((header) => ({ size, specs, header }))),
      );
    fc.assert(
      fc.property(input, ({ size, specs, header }) => {
        const answer = parseRange(header, size);
        expect(answer, header).toEqual(model(specs, size));
        if (answer.kind === "ranges") {
          for (const span of answer.ranges) {
            expect(span.start).toBeGreaterThanOrEqual(0);
            expect(span.end).toBeLessThan(size);
            expect(span.start).toBeLessThanOrEqual(span.end);
          }
          // Never more bytes than the file: a Range header cannot amplify the answer.
          expect(answer.ranges.reduce((n, s) => n + s.end - s.start + 1, 0)).toBeLessThanOrEqual(size);
        }
      }),
      { numRuns: 2000 },
    );
  });

  it("ignores anything that is not a byte-range header", () => {
    fc.assert(
      fc.property(fc.string({ unit: "binary", maxLength: 60 }), fc.nat(10_000), (header, size) => {
        const answer = parseRange(header, size);
        if (!/^\s*bytes\s*=/i.test(header)) expect(answer).toEqual({ kind: "all" });
        if (answer.kind === "ranges") for (const s of answer.ranges) expect(s.end).toBeLessThan(size);
      }),
      { numRuns: 1000 },
    );
  });
});

describe("coalesce", () => {
  const rangesArb = fc.array(
    fc.tuple(fc.nat(200_000), fc.nat(5000)).map(([start, length]): Span => ({ start, end: start + length })),
    { minLength: 1, maxLength: 60 },
  );

  it("serves every range once, in request order, from spans read front to back", () => {
    fc.assert(
      fc.property(rangesArb, fc.constantFrom(0, 64, 64 * 1024), (ranges, maxGap) => {
        const groups = coalesce(ranges, maxGap);
        expect(groups.flatMap((g) => g.members)).toEqual(ranges.map((_, i) => i));
        groups.forEach((group, g) => {
          const members = group.members.map((i) => ranges[i]!);
          expect(group.span.start).toBe(members[0]!.start);
          expect(group.span.end).toBe(Math.max(...members.map((r) => r.end)));
          members.forEach((range, i) => {
            if (i === 0) return;
            const before = members[i - 1]!;
            // Within a span the ranges go forward without overlapping, so one forward read serves them all.
            expect(range.start).toBeGreaterThan(before.end);
            expect(range.start - before.end - 1).toBeLessThanOrEqual(maxGap);
          });
          // A new span starts only when the next range goes back, overlaps, or lies past the gap.
          const next = groups[g + 1];
          if (next) {
            const first = ranges[next.members[0]!]!;
            const last = members[members.length - 1]!;
            expect(first.start <= last.end || first.start > group.span.end + maxGap + 1).toBe(true);
          }
        });
      }),
      { numRuns: 1000 },
    );
  });
});
