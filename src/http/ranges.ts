/**
 * HTTP Range requests on artifacts (RFC 9110 section 14, CONTRACT section 5): parsing `Range: bytes=…` against the
 * artifact's size, and coalescing neighbouring ranges into spans so a differential update's hundreds of ranges
 * become a few storage reads (DESIGN: a subrequest cap per invocation).
 */

/** An inclusive byte span. */
export interface Span {
  start: number;
  end: number;
}

export type RangeRequest = { kind: "all" } | { kind: "unsatisfiable" } | { kind: "ranges"; ranges: Span[] };

/** The most ranges one request may ask for; electron-updater sends up to 500. */
export const MAX_RANGES = 1000;

/**
 * The most ranges that may start at or before the end of the range before them (overlapping or going backwards).
 * Each one is a storage read of its own (see coalesce), and clients that resume or patch send ascending, disjoint
 * ranges; Apache's MaxRangeOverlaps and MaxRangeReversals default to 20 for the same reason.
 */
export const MAX_RANGE_BACKTRACKS = 20;

/**
 * Parses a Range header for a representation of `size` bytes. No header, another unit or a malformed header means
 * the whole representation (RFC 9110: a server may ignore an invalid Range). Ranges that lie wholly past the end
 * are dropped; when none is left, the request is unsatisfiable (416). Ranges that together ask for more bytes than
 * the representation has, or go back more than MAX_RANGE_BACKTRACKS times, are ignored too (RFC 9110 section 14.2
 * names both as signs of a broken client or a denial-of-service attack): otherwise a few hundred bytes of header
 * could make the answer a thousand times the file.
 */
export function parseRange(header: string | null | undefined, size: number): RangeRequest {
  if (!header) return { kind: "all" };
  const m = /^\s*bytes\s*=\s*(.+)$/i.exec(header);
  if (!m?.[1]) return { kind: "all" };
  const parts = m[1].split(",");
  if (parts.length > MAX_RANGES) return { kind: "all" };
  const ranges: Span[] = [];
  for (const part of parts) {
    const r = /^\s*(\d*)\s*-\s*(\d*)\s*$/.exec(part);
    if (!r || (r[1] === "" && r[2] === "")) return { kind: "all" };
    if (r[1] === "") {
      // Suffix: the last N bytes.
      const length = Number(r[2]);
      if (length === 0) continue;
      ranges.push({ start: Math.max(0, size - length), end: size - 1 });
      continue;
    }
    const start = Number(r[1]);
    const end = r[2] === "" ? size - 1 : Math.min(Number(r[2]), size - 1);
    if (r[2] !== "" && Number(r[2]) < start) return { kind: "all" };
    if (start >= size) continue;
    ranges.push({ start, end });
  }
  if (ranges.length === 0 || size === 0) return { kind: "unsatisfiable" };
  if (!proportionate(ranges, size)) return { kind: "all" };
  return { kind: "ranges", ranges };
}

/** Whether ranges ask for at most the whole representation and backtrack at most MAX_RANGE_BACKTRACKS times. */
function proportionate(ranges: readonly Span[], size: number): boolean {
  let total = 0;
  let backtracks = 0;
  ranges.forEach((range, i) => {
    total += range.end - range.start + 1;
    const previous = ranges[i - 1];
    if (previous && range.start <= previous.end) backtracks++;
  });
  return total <= size && backtracks <= MAX_RANGE_BACKTRACKS;
}

/**
 * The most spans (storage reads) one request costs, on top of the at most MAX_RANGE_BACKTRACKS spans that ranges going
 * backwards start. Ascending ranges far apart would otherwise be one read each, up to MAX_RANGES.
 */
export const MAX_SPANS = 32;

/**
 * Groups ranges into spans to read: consecutive ranges in ascending order, not overlapping, with gaps of at most
 * `maxGap` bytes share a span. Returns the spans with, for each, the indexes of the ranges it serves (in request
 * order). A range that goes backwards or overlaps the one before starts a new span, so each span is read once,
 * front to back, and its parts are cut from the stream without holding bytes back. When that leaves more than
 * `maxSpans` spans, the smallest gaps are bridged too (their bytes are read and skipped), so a request costs at most
 * `maxSpans` reads plus one per backward step: never more bytes read than the file holds per span, and a bounded
 * number of reads.
 */
export function coalesce(
  ranges: readonly Span[],
  maxGap = 64 * 1024,
  maxSpans = MAX_SPANS,
): { span: Span; members: number[] }[] {
  const groups = group(ranges, maxGap);
  if (groups.length <= maxSpans) return groups;
  // The gaps between groups that could be joined (the next one starts after the last range before it ends).
  const gaps: number[] = [];
  for (let i = 1; i < groups.length; i++) {
    const previous = groups[i - 1]!;
    const lastRange = ranges[previous.members[previous.members.length - 1]!]!;
    const first = groups[i]!.span;
    if (first.start > lastRange.end) gaps.push(first.start - previous.span.end - 1);
  }
  const excess = groups.length - maxSpans;
  if (gaps.length === 0) return groups;
  gaps.sort((a, b) => a - b);
  return group(ranges, Math.max(maxGap, gaps[Math.min(excess, gaps.length) - 1]!));
}

function group(ranges: readonly Span[], maxGap: number): { span: Span; members: number[] }[] {
  const groups: { span: Span; members: number[] }[] = [];
  ranges.forEach((range, index) => {
    const last = groups[groups.length - 1];
    const lastRange = last ? ranges[last.members[last.members.length - 1]!]! : undefined;
    if (last && lastRange && range.start > lastRange.end && range.start <= last.span.end + maxGap + 1) {
      last.span.end = Math.max(last.span.end, range.end);
      last.members.push(index);
    } else {
      groups.push({ span: { ...range }, members: [index] });
    }
  });
  return groups;
}
