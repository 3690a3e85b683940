/**
 * Range abuse through the download route (issue 9, adversarial catalogue): overlapping and reversed ranges, 1,000
 * and more ranges, suffixes, ranges out of bounds and malformed headers. The answer is never larger than the file
 * (RFC 9110 section 14.2 lets a server ignore ranges that overlap or go backwards many times, signs of a broken
 * client or an attack), 416 only when nothing is satisfiable, and every multipart answer holds exactly the bytes
 * asked for, in request order (a fast-check property over random proportionate requests).
 */
import { exports } from "cloudflare:workers";
import fc from "fast-check";
import { beforeAll, describe, expect, it } from "vitest";
import { BASE, admin, setSetting } from "../helpers";
import { bytesOf, newRelease, upload } from "../artifacts-kit";

const SIZE = 10_000;
const bytes = bytesOf(SIZE, 3);
const paths: Record<string, string> = {};

beforeAll(async () => {
  await setSetting("Updates:AllowPublicApplicationReleases", "true");
  for (const sourceKind of ["local", "resource"]) {
    const r = await newRelease("1.0.0");
    await admin("PUT", `/v1/products/${r.productId}/releases`, {
      productRelease: { id: r.releaseId, public: true, requiresMaintenance: false },
    });
    expect((await upload(r.path, bytes, { sourceKind, fileName: "App.exe" })).status).toBe(201);
    paths[sourceKind] = `/v1/updates/${r.code}/download/win-x64/1.0.0/App.exe`;
  }
});

async function get(path: string, range: string) {
  const res = await exports.default.fetch(`${BASE}${path}`, { headers: { range } });
  return { status: res.status, headers: res.headers, body: new Uint8Array(await res.arrayBuffer()) };
}

/** The parts of a multipart/byteranges body: their Content-Range and bytes. */
function parts(body: Uint8Array, contentType: string): { range: string; bytes: Uint8Array }[] {
  const boundary = /boundary=(\S+)/.exec(contentType)![1]!;
  let text = "";
  for (let i = 0; i < body.byteLength; i += 8192) text += String.fromCharCode(...body.subarray(i, i + 8192));
  return text
    .split(`--${boundary}`)
    .slice(1, -1)
    .map((part) => {
      const [head, ...rest] = part.replace(/^\r\n/, "").split("\r\n\r\n");
      const data = rest.join("\r\n\r\n").replace(/\r\n$/, "");
      return {
        range: /Content-Range: bytes (\S+)/.exec(head!)![1]!,
        bytes: Uint8Array.from(data, (ch) => ch.charCodeAt(0)),
      };
    });
}

describe.each(["local", "resource"])("%s artifacts", (sourceKind) => {
  const path = () => paths[sourceKind]!;

  it("ignore a thousand overlapping ranges instead of sending the file a thousand times", async () => {
    for (const header of [
      `bytes=${Array(1000).fill("0-").join(",")}`,
      `bytes=${Array(1000).fill("0-0").join(",")}`,
      `bytes=0-${SIZE - 1},0-${SIZE - 1}`,
    ]) {
      const res = await get(path(), header);
      expect(res.status, header.slice(0, 40)).toBe(200);
      expect(res.body.byteLength).toBe(SIZE);
    }
  });

  it("ignore ranges that go backwards more than 20 times, and serve those that go back a few", async () => {
    const reversed = Array.from({ length: 500 }, (_, i) => `${(499 - i) * 10}-${(499 - i) * 10 + 1}`).join(",");
    expect((await get(path(), `bytes=${reversed}`)).status).toBe(200);
    const few = await get(path(), "bytes=900-909, 0-9, 500-509");
    expect(few.status).toBe(206);
    expect(parts(few.body, few.headers.get("content-type")!)).toEqual([
      { range: `900-909/${SIZE}`, bytes: bytes.slice(900, 910) },
      { range: `0-9/${SIZE}`, bytes: bytes.slice(0, 10) },
      { range: `500-509/${SIZE}`, bytes: bytes.slice(500, 510) },
    ]);
  });

  it("ignore more than 1,000 ranges, and serve 1,000 ascending ones", async () => {
    const many = (n: number) => `bytes=${Array.from({ length: n }, (_, i) => `${i * 9}-${i * 9 + 1}`).join(",")}`;
    expect((await get(path(), many(1001))).status).toBe(200);
    const thousand = await get(path(), many(1000));
    expect(thousand.status).toBe(206);
    const got = parts(thousand.body, thousand.headers.get("content-type")!);
    expect(got).toHaveLength(1000);
    expect(got[999]).toEqual({ range: `8991-8992/${SIZE}`, bytes: bytes.slice(8991, 8993) });
  });

  it("answer suffixes, open ends and ends past the file clamped, and 416 only when nothing is satisfiable", async () => {
    const suffix = await get(path(), "bytes=-100");
    expect([suffix.status, suffix.headers.get("content-range")]).toEqual([
      206,
      `bytes ${SIZE - 100}-${SIZE - 1}/${SIZE}`,
    ]);
    expect(suffix.body).toEqual(bytes.slice(SIZE - 100));
    expect((await get(path(), "bytes=-999999")).body).toEqual(bytes);
    expect((await get(path(), `bytes=${SIZE - 5}-${SIZE * 10}`)).body).toEqual(bytes.slice(SIZE - 5));
    for (const header of [`bytes=${SIZE}-`, `bytes=${SIZE}-${SIZE + 10}`, "bytes=-0", `bytes=${SIZE * 2}-, -0`]) {
      const res = await get(path(), header);
      expect([res.status, res.headers.get("content-range")], header).toEqual([416, `bytes */${SIZE}`]);
    }
  });

  it("treat reversed, malformed and other-unit headers as no Range at all", async () => {
    for (const header of [
      "bytes=50-10",
      "bytes=abc",
      "bytes=--1",
      "bytes=1-2-3",
      "bytes=0-1;2-3",
      "items=0-1",
      "bytes 0-1",
      `bytes=0-1,${"x".repeat(5000)}`,
    ]) {
      const res = await get(path(), header);
      expect(res.status, header.slice(0, 40)).toBe(200);
      expect(res.body.byteLength).toBe(SIZE);
    }
  });

  it("serve exactly the requested bytes in request order for any proportionate set of ranges", async () => {
    const range = fc
      .tuple(fc.nat(SIZE - 1), fc.nat(400))
      .map(([start, length]) => ({ start, end: Math.min(SIZE - 1, start + length) }));
    await fc.assert(
      fc.asyncProperty(fc.array(range, { minLength: 2, maxLength: 12 }), async (ranges) => {
        const total = ranges.reduce((n, r) => n + r.end - r.start + 1, 0);
        const backtracks = ranges.filter((r, i) => i > 0 && r.start <= ranges[i - 1]!.end).length;
        fc.pre(total <= SIZE && backtracks <= 20);
        const res = await get(path(), `bytes=${ranges.map((r) => `${r.start}-${r.end}`).join(", ")}`);
        expect(res.status).toBe(206);
        expect(Number(res.headers.get("content-length"))).toBe(res.body.byteLength);
        expect(parts(res.body, res.headers.get("content-type")!)).toEqual(
          ranges.map((r) => ({ range: `${r.start}-${r.end}/${SIZE}`, bytes: bytes.slice(r.start, r.end + 1) })),
        );
      }),
      { numRuns: 25 },
    );
  }, 60_000);
});
