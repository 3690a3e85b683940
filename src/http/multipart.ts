/**
 * A streaming `multipart/form-data` reader (RFC 7578) over a request body. `Request.formData()` holds the whole body
 * in memory, which a Worker (128 MB) cannot do for installers of hundreds of megabytes; this reader walks the parts
 * in order and hands out a part's bytes as they arrive, so a file part can be hashed and stored while it streams.
 * Memory stays at one network chunk plus the length of the boundary.
 */
import { ValidationProblem } from "../kernel/errors";

/** A part's headers: its form field name and, for files, the file name the client sent. */
export interface FormPart {
  name: string;
  fileName?: string;
  contentType?: string;
}

const MAX_HEADER_BYTES = 16 * 1024;
const MAX_PREAMBLE_BYTES = 64 * 1024;
const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** Malformed bodies are unreadable requests: problem details (SPEC "Errors", shape 2). */
function malformed(reason: string): ValidationProblem {
  return new ValidationProblem({ "": [`Malformed multipart/form-data body: ${reason}`] });
}

// The boundary of a form's content type: read where every layer may (http/media-type.ts, Idempotency-Key too).
export { formBoundary } from "./media-type";

/** Index of `needle` in `haystack` from `from`, or -1 (first byte found natively, the rest compared). */
function indexOf(haystack: Uint8Array, needle: Uint8Array, from = 0): number {
  const first = needle[0]!;
  for (
    let i = haystack.indexOf(first, from);
    i !== -1 && i <= haystack.length - needle.length;
    i = haystack.indexOf(first, i + 1)
  ) {
    let j = 1;
    while (j < needle.length && haystack[i + j] === needle[j]) j++;
    if (j === needle.length) return i;
  }
  return -1;
}

function concat(a: Uint8Array, b: Uint8Array): Uint8Array {
  if (a.length === 0) return b;
  const out = new Uint8Array(a.length + b.length);
  out.set(a);
  out.set(b, a.length);
  return out;
}

/** Reads a `quoted-string` or token parameter value of Content-Disposition. */
function dispositionParams(value: string): Record<string, string> {
  const params: Record<string, string> = {};
  const re = /;\s*([\w*-]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^;]*))/g;
  for (let m = re.exec(value); m; m = re.exec(value)) {
    const raw = m[2] !== undefined ? m[2].replace(/\\(.)/g, "$1") : (m[3] ?? "").trim();
    params[m[1]!.toLowerCase()] = raw;
  }
  return params;
}

/** `filename*=UTF-8''…` (RFC 5987) wins over `filename` when a client sends both. */
function extendedFileName(value: string | undefined): string | undefined {
  const m = /^utf-8''(.*)$/i.exec(value ?? "");
  if (!m) return undefined;
  try {
    return decodeURIComponent(m[1]!);
  } catch {
    return undefined;
  }
}

function parseHeaders(block: string): FormPart {
  let disposition: string | undefined;
  let contentType: string | undefined;
  for (const line of block.split("\r\n")) {
    const colon = line.indexOf(":");
    if (colon <= 0) continue;
    const name = line.slice(0, colon).trim().toLowerCase();
    const value = line.slice(colon + 1).trim();
    if (name === "content-disposition") disposition = value;
    else if (name === "content-type") contentType = value;
  }
  if (!disposition || !/^form-data\s*(;|$)/i.test(disposition))
    throw malformed("a part has no Content-Disposition: form-data header");
  const params = dispositionParams(disposition);
  if (params["name"] === undefined) throw malformed("a part has no field name");
  const fileName = extendedFileName(params["filename*"]) ?? params["filename"];
  return {
    name: params["name"],
    ...(fileName !== undefined ? { fileName } : {}),
    ...(contentType ? { contentType } : {}),
  };
}

/**
 * Walks the parts of one body in order: `next()` moves to the following part (skipping what was not read of the
 * current one), `bytes()` streams the current part, `text()` reads a small one whole.
 */
export class MultipartReader {
  private readonly reader: ReadableStreamDefaultReader<Uint8Array>;
  /** CRLF + "--" + boundary: what ends every part. */
  private readonly delimiter: Uint8Array;
  /** Bytes read from the body and not yet handed out. */
  private buffer: Uint8Array;
  private ended = false;
  private state: "start" | "part" | "between" | "end" = "start";

  constructor(body: ReadableStream<Uint8Array>, boundary: string) {
    this.reader = body.getReader();
    this.delimiter = encoder.encode(`\r\n--${boundary}`);
    // The first boundary has no CRLF before it: pretend one was read, so one delimiter matches them all.
    this.buffer = encoder.encode("\r\n");
  }

  /** Reads one more network chunk into the buffer; false at the end of the body. */
  private async fill(): Promise<boolean> {
    if (this.ended) return false;
    const { done, value } = await this.reader.read();
    if (done) {
      this.ended = true;
      return false;
    }
    this.buffer = concat(this.buffer, value);
    return true;
  }

  /** Makes at least `n` bytes available, or fails with `reason`. */
  private async need(n: number, reason: string): Promise<void> {
    while (this.buffer.length < n) if (!(await this.fill())) throw malformed(reason);
  }

  /** Skips the preamble up to and past the first delimiter. */
  private async skipPreamble(): Promise<void> {
    for (;;) {
      const at = indexOf(this.buffer, this.delimiter);
      if (at !== -1) {
        this.buffer = this.buffer.subarray(at + this.delimiter.length);
        return;
      }
      if (this.buffer.length > MAX_PREAMBLE_BYTES || !(await this.fill()))
        throw malformed("the boundary of the Content-Type header never appears");
    }
  }

  /** The next part's headers, or undefined after the closing delimiter. */
  async next(): Promise<FormPart | undefined> {
    if (this.state === "end") return undefined;
    if (this.state === "start") {
      await this.skipPreamble();
      this.state = "between";
    }
    if (this.state === "part") for await (const _ of this.bytes());
    // After a delimiter: "--" closes the body; otherwise optional whitespace, CRLF and the part's headers.
    await this.need(2, "the body ends after a boundary");
    if (this.buffer[0] === 0x2d && this.buffer[1] === 0x2d) {
      this.state = "end";
      await this.reader.cancel().catch(() => undefined);
      return undefined;
    }
    const headerEnd = await this.find(
      encoder.encode("\r\n\r\n"),
      MAX_HEADER_BYTES,
      "a part's headers are too long or never end",
    );
    const block = decoder.decode(this.buffer.subarray(0, headerEnd)).replace(/^[ \t]*\r\n/, "");
    this.buffer = this.buffer.subarray(headerEnd + 4);
    this.state = "part";
    return parseHeaders(block);
  }

  /** Index of `needle` in the buffer, reading more as needed, up to `limit` bytes. */
  private async find(needle: Uint8Array, limit: number, reason: string): Promise<number> {
    for (;;) {
      const at = indexOf(this.buffer, needle);
      if (at !== -1) return at;
      if (this.buffer.length > limit || !(await this.fill())) throw malformed(reason);
    }
  }

  /** The current part's bytes as they arrive; ends at the part's delimiter. */
  async *bytes(): AsyncGenerator<Uint8Array> {
    if (this.state !== "part") return;
    const keep = this.delimiter.length - 1;
    for (;;) {
      const at = indexOf(this.buffer, this.delimiter);
      if (at !== -1) {
        const last = this.buffer.subarray(0, at);
        this.buffer = this.buffer.subarray(at + this.delimiter.length);
        this.state = "between";
        if (last.length > 0) yield last;
        return;
      }
      // Everything but a possible start of the delimiter can go out now.
      if (this.buffer.length > keep) {
        const out = this.buffer.subarray(0, this.buffer.length - keep);
        this.buffer = this.buffer.subarray(this.buffer.length - keep);
        yield out;
      }
      if (!(await this.fill())) throw malformed("the body ends inside a part");
    }
  }

  /** The current part as text; 400 when it is longer than `max` bytes. */
  async text(max: number, field: string): Promise<string> {
    const pieces: Uint8Array[] = [];
    let size = 0;
    for await (const piece of this.bytes()) {
      size += piece.length;
      if (size > max) throw new ValidationProblem({ [field]: [`The field is longer than ${max} bytes`] });
      pieces.push(piece);
    }
    const whole = new Uint8Array(size);
    let at = 0;
    for (const piece of pieces) {
      whole.set(piece, at);
      at += piece.length;
    }
    return decoder.decode(whole);
  }

  /** Stops reading the body (after a refusal, so the rest is not read for nothing). */
  async cancel(): Promise<void> {
    this.state = "end";
    await this.reader.cancel().catch(() => undefined);
  }
}
