/**
 * The streaming multipart/form-data reader (src/http/multipart.ts) on bodies cut into arbitrary network chunks,
 * down to one byte: parts, names, file names, bytes that nearly match the delimiter, and malformed bodies.
 */
import { describe, expect, it } from "vitest";
import { ValidationProblem } from "../src/kernel/errors";
import { MultipartReader, formBoundary } from "../src/http/multipart";
import { bytesOf } from "./artifacts-kit";

const enc = new TextEncoder();

function concat(pieces: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(pieces.reduce((n, p) => n + p.byteLength, 0));
  let at = 0;
  for (const p of pieces) {
    out.set(p, at);
    at += p.byteLength;
  }
  return out;
}

/** A stream of `body` in pieces of `size` bytes. */
function streamOf(body: Uint8Array, size: number): ReadableStream<Uint8Array> {
  let at = 0;
  return new ReadableStream({
    pull(c) {
      if (at >= body.byteLength) return c.close();
      c.enqueue(body.slice(at, at + size));
      at += size;
    },
  });
}

/** Every part: headers and bytes, read through the reader. */
async function readAll(body: Uint8Array, boundary: string, size: number) {
  const reader = new MultipartReader(streamOf(body, size), boundary);
  const parts: { name: string; fileName?: string; contentType?: string; bytes: Uint8Array }[] = [];
  for (let part = await reader.next(); part; part = await reader.next()) {
    const pieces: Uint8Array[] = [];
    for await (const piece of reader.bytes()) pieces.push(piece.slice());
    parts.push({ ...part, bytes: concat(pieces) });
  }
  return parts;
}

const boundary = "----formdata-test-7d1f";
const file = concat([bytesOf(70_000, 3), enc.encode(`\r\n--${boundary.slice(0, -1)}\r\n--\r`)]);
const body = concat([
  enc.encode(`preamble to ignore\r\n--${boundary}\r\n`),
  enc.encode(`Content-Disposition: form-data; name="platform"\r\n\r\nwin-x64\r\n--${boundary}\r\n`),
  enc.encode(
    `Content-Disposition: form-data; name="file"; filename="My \\"Setup\\".exe"\r\nContent-Type: application/octet-stream\r\n\r\n`,
  ),
  file,
  enc.encode(
    `\r\n--${boundary}\r\nContent-Disposition: form-data; name="note"; filename="x"; filename*=UTF-8''%C3%A9t%C3%A9.txt\r\n\r\n\r\n--${boundary}--\r\nepilogue`,
  ),
]);

describe("MultipartReader", () => {
  it.each([1, 2, 7, 64, 4096, 65_536, body.byteLength])(
    "reads every part of a body arriving in pieces of %i bytes",
    async (size) => {
      const parts = await readAll(body, boundary, size);
      expect(parts.map((p) => p.name)).toEqual(["platform", "file", "note"]);
      expect(new TextDecoder().decode(parts[0]!.bytes)).toBe("win-x64");
      expect(parts[1]!.fileName).toBe('My "Setup".exe');
      expect(parts[1]!.contentType).toBe("application/octet-stream");
      expect(parts[1]!.bytes).toEqual(file);
      expect(parts[2]!.fileName).toBe("été.txt");
      expect(parts[2]!.bytes.byteLength).toBe(0);
    },
  );

  it("skips parts that are not read", async () => {
    const reader = new MultipartReader(streamOf(body, 1000), boundary);
    const names: string[] = [];
    for (let part = await reader.next(); part; part = await reader.next()) names.push(part.name);
    expect(names).toEqual(["platform", "file", "note"]);
  });

  it("reads small fields as text, refusing long ones", async () => {
    const reader = new MultipartReader(streamOf(body, 3), boundary);
    await reader.next();
    expect(await reader.text(100, "platform")).toBe("win-x64");
    await reader.next();
    await expect(reader.text(100, "file")).rejects.toBeInstanceOf(ValidationProblem);
  });

  it.each([
    ["a body without the boundary", `no boundary here`],
    ["a body ending inside a part", `--${boundary}\r\nContent-Disposition: form-data; name="a"\r\n\r\nabc`],
    ["a part without Content-Disposition", `--${boundary}\r\nContent-Type: text/plain\r\n\r\nabc\r\n--${boundary}--`],
    [
      "a part without a name",
      `--${boundary}\r\nContent-Disposition: form-data; filename="a"\r\n\r\nabc\r\n--${boundary}--`,
    ],
  ])("refuses %s with problem details", async (_name, text) => {
    await expect(readAll(enc.encode(text), boundary, 5)).rejects.toBeInstanceOf(ValidationProblem);
  });

  it("finds the boundary of a content type, quoted or not", () => {
    expect(formBoundary("multipart/form-data; boundary=abc")).toBe("abc");
    expect(formBoundary('multipart/form-data; charset=utf-8; boundary="a b:c"')).toBe("a b:c");
    expect(formBoundary("Multipart/Form-Data;boundary=x")).toBe("x");
    expect(formBoundary("application/json")).toBeUndefined();
    expect(formBoundary("multipart/mixed; boundary=x")).toBeUndefined();
    expect(formBoundary(undefined)).toBeUndefined();
  });
});
