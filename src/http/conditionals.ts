/**
 * HTTP conditional requests (RFC 9110 section 13) as the update routes answer them: entity tags of feed answers,
 * `If-None-Match` (weak comparison, a 304) and `If-Range` (strong comparison: a Range over other bytes gets the whole
 * representation).
 */
import { sha256Hex } from "../kernel/crypto";

/** A 304 for a request whose If-None-Match names the answer's entity tag; the answer itself otherwise. */
export function notModifiedFor(ifNoneMatch: string | undefined, res: Response): Response {
  const etag = res.headers.get("ETag");
  if (res.status !== 200 || !etag || !noneMatchHits(ifNoneMatch, etag)) return res;
  return new Response(null, {
    status: 304,
    headers: { ETag: etag, "Cache-Control": res.headers.get("Cache-Control") ?? "private, no-store" },
  });
}

/**
 * A feed answer with its entity tag: a digest of its text (a licensed caller's tokens make each one differ). YAML
 * unless told (the other feed formats: routes/updates/formats.ts).
 */
export async function taggedFeed(yaml: string, contentType = "text/yaml; charset=utf-8"): Promise<Response> {
  const etag = `"${(await sha256Hex(yaml)).slice(0, 32)}"`;
  return new Response(yaml, { status: 200, headers: { "Content-Type": contentType, ETag: etag } });
}

/** Whether an `If-None-Match` header matches an entity tag (weak comparison, RFC 9110 section 13.1.2; `*` matches). */
export function noneMatchHits(header: string | null | undefined, etag: string): boolean {
  if (!header) return false;
  const opaque = (tag: string) => tag.trim().replace(/^W\//, "");
  return header.split(",").some((tag) => tag.trim() === "*" || opaque(tag) === opaque(etag));
}

/**
 * Whether a Range request may be served as ranges under its `If-Range` (RFC 9110 section 13.1.5): no If-Range, or
 * one naming the current entity tag exactly (strong comparison). A date or another tag means the client's partial
 * copy is of other bytes, so it gets the whole representation.
 */
export function ifRangeHolds(header: string | null | undefined, etag: string): boolean {
  if (header === null || header === undefined) return true;
  return header.trim() === etag;
}
