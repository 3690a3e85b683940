/** Pure logic of the update routes: Range header parsing, span coalescing, version precedence. */
import { describe, expect, it } from "vitest";
import { MAX_RANGE_BACKTRACKS, MAX_SPANS, coalesce, parseRange } from "../src/http/ranges";
import { compareVersions, isReleaseVersion } from "../src/records/versions";

describe("parseRange", () => {
  const size = 1000;
  it("reads single, open-ended, suffix and several ranges, clamped to the size", () => {
    expect(parseRange("bytes=0-99", size)).toEqual({ kind: "ranges", ranges: [{ start: 0, end: 99 }] });
    expect(parseRange("bytes=900-", size)).toEqual({ kind: "ranges", ranges: [{ start: 900, end: 999 }] });
    expect(parseRange("bytes=-100", size)).toEqual({ kind: "ranges", ranges: [{ start: 900, end: 999 }] });
    expect(parseRange("bytes=-5000", size)).toEqual({ kind: "ranges", ranges: [{ start: 0, end: 999 }] });
    expect(parseRange("bytes=990-2000", size)).toEqual({ kind: "ranges", ranges: [{ start: 990, end: 999 }] });
    expect(parseRange("bytes=0-0, 10-19,500-", size)).toEqual({
      kind: "ranges",
      ranges: [
        { start: 0, end: 0 },
        { start: 10, end: 19 },
        { start: 500, end: 999 },
      ],
    });
  });

  it("answers the whole file to a missing, malformed, reversed or other-unit header", () => {
    for (const header of [undefined, "", "items=0-1", "bytes=abc", "bytes=5-1", "bytes=-", "bytes=1-2-3"])
      expect(parseRange(header, size), header).toEqual({ kind: "all" });
  });

  it("is unsatisfiable when every range lies past the end, or the file is empty", () => {
    expect(parseRange("bytes=1000-1001", size)).toEqual({ kind: "unsatisfiable" });
    expect(parseRange("bytes=5000-", size)).toEqual({ kind: "unsatisfiable" });
    expect(parseRange("bytes=-0", size)).toEqual({ kind: "unsatisfiable" });
    expect(parseRange("bytes=0-10", 0)).toEqual({ kind: "unsatisfiable" });
    // One satisfiable range is enough; the others are dropped.
    expect(parseRange("bytes=5000-6000, 0-1", size)).toEqual({ kind: "ranges", ranges: [{ start: 0, end: 1 }] });
  });

  it("ignores a header with more than 1,000 ranges", () => {
    const many = Array.from({ length: 1001 }, (_, i) => `${i}-${i}`).join(",");
    expect(parseRange(`bytes=${many}`, 5000)).toEqual({ kind: "all" });
  });
});

describe("coalesce", () => {
  it("joins ascending ranges with small gaps into one span, keeping request order", () => {
    const ranges = [
      { start: 0, end: 9 },
      { start: 20, end: 29 },
      { start: 1_000_000, end: 1_000_009 },
    ];
    expect(coalesce(ranges, 64)).toEqual([
      { span: { start: 0, end: 29 }, members: [0, 1] },
      { span: { start: 1_000_000, end: 1_000_009 }, members: [2] },
    ]);
  });

  it("starts a new span for a range that goes backwards or overlaps the one before", () => {
    expect(
      coalesce(
        [
          { start: 100, end: 199 },
          { start: 0, end: 9 },
          { start: 150, end: 160 },
        ],
        1000,
      ).map((g) => g.members),
    ).toEqual([[0], [1, 2]]);
    expect(
      coalesce(
        [
          { start: 0, end: 99 },
          { start: 50, end: 60 },
        ],
        1000,
      ).map((g) => g.members),
    ).toEqual([[0], [1]]);
  });

  it("caps the spans (storage reads) of far-apart ranges, bridging the smallest gaps", () => {
    // 1,000 ascending ranges a megabyte apart: one read each without the cap.
    const far = Array.from({ length: 1000 }, (_, i) => ({
      start: i * 1_048_576 + (i % 7) * 4096,
      end: i * 1_048_576 + (i % 7) * 4096 + 99,
    }));
    const groups = coalesce(far);
    expect(groups.length).toBeLessThanOrEqual(MAX_SPANS);
    expect(groups.flatMap((g) => g.members)).toEqual(far.map((_, i) => i));
    for (const g of groups)
      for (const m of g.members) expect(g.span.start <= far[m]!.start && far[m]!.end <= g.span.end).toBe(true);
    // Backward steps still start their own span: at most MAX_SPANS plus one per step.
    const stepping = Array.from({ length: 21 }, (_, k) =>
      Array.from({ length: 40 }, (_, i) => ({ start: i * 1_048_576 + k, end: i * 1_048_576 + k })),
    ).flat();
    expect(coalesce(stepping).length).toBeLessThanOrEqual(MAX_SPANS + MAX_RANGE_BACKTRACKS + 1);
  });

  it("turns 500 neighbouring ranges into a handful of spans", () => {
    const ranges = Array.from({ length: 500 }, (_, i) => ({ start: i * 10_000, end: i * 10_000 + 4_999 }));
    const groups = coalesce(ranges);
    expect(groups).toHaveLength(1);
    expect(groups[0]!.members).toHaveLength(500);
  });
});

describe("versions", () => {
  it("accepts major.minor.patch with an optional prerelease", () => {
    for (const v of ["1.0.0", "0.9.12", "2.0.0-beta.1", "10.20.30-rc-1"]) expect(isReleaseVersion(v), v).toBe(true);
    for (const v of ["1.0", "v1.0.0", "01.0.0", "1.0.0.0", "", "1.0.0-"]) expect(isReleaseVersion(v), v).toBe(false);
  });

  it("orders by SemVer precedence", () => {
    const sorted = [
      "1.0.0",
      "2.0.0-alpha",
      "1.10.0",
      "2.0.0",
      "2.0.0-alpha.1",
      "1.2.0",
      "2.0.0-beta",
      "2.0.0-alpha.beta",
    ].sort(compareVersions);
    expect(sorted).toEqual([
      "1.0.0",
      "1.2.0",
      "1.10.0",
      "2.0.0-alpha",
      "2.0.0-alpha.1",
      "2.0.0-alpha.beta",
      "2.0.0-beta",
      "2.0.0",
    ]);
    expect(compareVersions("1.0.0", "1.0.0")).toBe(0);
  });
});
