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

/** How long an isolate reuses an answer before asking the Cache API again. */
export const ANSWER_MEMO_MS = 5_000;
const MAX_BYTES = 4 * 1024 * 1024;
const MAX_ANSWER_BYTES = 256 * 1024;

interface Kept {
  body: Uint8Array;
  status: number;
  headers: [string, string][];
  keptAt: number;
  expiresAt: number;
}

const kept = new Map<string, Kept>();
let keptBytes = 0;

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
  if (now >= entry.expiresAt || now < entry.keptAt) {
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
  while (kept.size > 0 && keptBytes + body.byteLength > MAX_BYTES) drop(kept.keys().next().value as string);
  kept.set(key, {
    body,
    status: response.status,
    headers: [...response.headers],
    keptAt: now,
    expiresAt: now + Math.min(maxAgeMs, ANSWER_MEMO_MS),
  });
  keptBytes += body.byteLength;
}

/** Forgets every kept answer (tests that change settings the answers depend on). */
export function forgetAnswers(): void {
  kept.clear();
  keptBytes = 0;
}
