/**
 * Anonymous update answers (feeds, update checks) held in the isolate's memory in front of the Workers Cache API,
 * under the same normalised key, which carries the product's release generation. A request answered from here costs
 * neither a D1 query nor a cache lookup: what the hottest route, an auto-updater's anonymous feed poll, should cost.
 *
 * An answer is kept at most ANSWER_MEMO_MS and never past its own `max-age` (Updates:FeedCacheSeconds), so it can
 * outlive the Cache API's copy by ANSWER_MEMO_MS at most; a release change needs no expiry at all, because it changes
 * the generation and so the key. Memory is bounded by MAX_BYTES in total (oldest answers leave first), and answers
 * over MAX_ANSWER_BYTES are not kept (feeds and update checks are a few KiB).
 */

import { fresh, memo } from "../kernel/memo";

/** How long an isolate reuses an answer before asking the Cache API again. */
export const ANSWER_MEMO_MS = 5_000;
const MAX_BYTES = 4 * 1024 * 1024;
const MAX_ANSWER_BYTES = 256 * 1024;

interface Kept {
  body: Uint8Array;
  status: number;
  /** Never changed once kept: a Response made from it has its own copy. */
  headers: Headers;
  keptAt: number;
  expiresAt: number;
}

let keptBytes = 0;
const kept = memo<string, Kept>("answers", {
  key: "the route's normalised cache key (product code, release generation, route, query, answer origin)",
  max: Number.POSITIVE_INFINITY,
  bound: `${MAX_BYTES / 1024 / 1024} MiB of bodies, oldest leaves first; answers over ${MAX_ANSWER_BYTES / 1024} KiB not kept`,
  ttlMs: ANSWER_MEMO_MS,
  lifetime: `${ANSWER_MEMO_MS} ms, never past the answer's max-age (Updates:FeedCacheSeconds)`,
  forgetOn: ["settings"],
  cleared: () => {
    keptBytes = 0;
  },
});

function drop(key: string): void {
  const entry = kept.get(key);
  if (!entry) return;
  kept.delete(key);
  keptBytes -= entry.body.byteLength;
}

/** The answer kept under `key` as a new Response, or undefined when there is none or it expired. */
export function recallAnswer(key: string, now: number): Response | undefined {
  const entry = kept.get(key);
  if (!entry) return undefined;
  // A clock that went backwards (tests move it) counts as expired rather than young for longer.
  if (!fresh(entry.keptAt, now, entry.expiresAt - entry.keptAt)) {
    drop(key);
    return undefined;
  }
  return new Response(entry.body, { status: entry.status, headers: entry.headers });
}

/**
 * Keeps a copy of `response` (a clone the caller does not read) under `key` for `maxAgeMs` (its cache lifetime),
 * at most ANSWER_MEMO_MS.
 */
export async function keepAnswer(key: string, response: Response, now: number, maxAgeMs: number): Promise<void> {
  const body = new Uint8Array(await response.arrayBuffer());
  if (body.byteLength > MAX_ANSWER_BYTES || maxAgeMs <= 0) return;
  drop(key);
  while (kept.size > 0 && keptBytes + body.byteLength > MAX_BYTES) drop(kept.oldest() as string);
  kept.set(key, {
    body,
    status: response.status,
    headers: new Headers(response.headers),
    keptAt: now,
    expiresAt: now + Math.min(maxAgeMs, ANSWER_MEMO_MS),
  });
  keptBytes += body.byteLength;
}

/** Forgets every kept answer and where request URLs point (tests that change settings the answers depend on). */
export function forgetAnswers(): void {
  kept.clear();
  fronts.clear();
}

// ---------------------------------------------------------------------------------------------------------------
// The front door (app/app.ts): a request's URL straight to the kept answer, before the app is entered.

/** Request URLs pointing at kept answers (a URL is a few hundred bytes; the bound keeps junk URLs from growing it). */
interface Front {
  key: string;
  /** The product memo's trust in the release generation the key carries ends then (product-memo.ts). */
  until: number;
}
const MAX_FRONTS = 4096;
const fronts = memo<string, Front>("fronts", {
  key: "request URL (origin, path, sorted query without noCache), and the URL as it came when it has no noCache",
  max: MAX_FRONTS,
  lifetime: "until the product memo's trust in the release generation ends (PRODUCT_MEMO_MS after its read)",
  forgetOn: ["releases", "settings"],
});

/**
 * A request's URL as the front door knows it: origin, path and query, but for electron-updater's `noCache` (a new
 * value in every poll), in a fixed order. It names the answer at least as closely as the route's own key does (which
 * is built from the same path and query, the product's release generation and the origin of the answer's URLs:
 * Application:PublicUrl, or in Development without it this same request origin, so one Host's answer is never
 * another's).
 */
function frontKey(url: URL): string {
  if (url.search === "") return `${url.origin}${url.pathname}`;
  const params = [...url.searchParams].filter(([name]) => name !== "noCache").sort(([a], [b]) => (a < b ? -1 : 1));
  return `${url.origin}${url.pathname}?${new URLSearchParams(params).toString()}`;
}

/**
 * Remembers that the anonymous request at `url` was answered with the answer kept under `key`, which is trusted
 * until `until` (when the isolate would ask for the product's release generation again): past it, the request goes
 * through the app, so a release change made elsewhere reaches these answers as soon as it reaches the app's.
 * The URL as it came is remembered too, unless it carries a `noCache` (new in every poll): an updater asks with the
 * same URL every time, and the front door then finds it without putting its query in order. Each entry holds its own
 * key and trust, so one left behind by a later pointing of the same answer is never trusted longer than it was told.
 */
export function pointFront(url: URL, key: string, until: number): void {
  const normal = frontKey(url);
  const names = url.href === normal || url.searchParams.has("noCache") ? [normal] : [normal, url.href];
  for (const name of names) {
    const old = fronts.get(name);
    if (old?.key !== key || old.until !== until) fronts.keep(name, { key, until });
  }
}

/**
 * The answer kept for an anonymous request (one that names no user key) to the update routes at `url`, as a maker of
 * Responses (the caller checks the rest of the request first); undefined when nothing is kept for it.
 */
export function rememberedAnonymousAnswer(url: URL, now: number): (() => Response) | undefined {
  if (!url.pathname.startsWith("/v1/updates/")) return undefined;
  const front = fronts.get(url.href) ?? fronts.get(frontKey(url));
  if (front === undefined || now >= front.until) return undefined;
  const entry = kept.get(front.key);
  if (!entry || !fresh(entry.keptAt, now, entry.expiresAt - entry.keptAt)) return undefined;
  return () => new Response(entry.body, { status: entry.status, headers: entry.headers });
}
