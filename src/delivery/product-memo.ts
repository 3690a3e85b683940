/**
 * Products of the update routes by code, remembered per isolate (DESIGN, Performance: a cache hit costs no D1 query).
 * Every feed, update check and download starts from the product: its id scopes the queries, and its release
 * generation keys the cached anonymous answers, so without this memo every cached answer would still cost a D1 read.
 *
 * Freshness: the isolate that changes a product or its releases forgets what it remembered at once (the repository
 * bumps the release generation and forgets the "releases" memos: http/repository.ts), so its next answer uses the
 * new generation. Other
 * isolates cannot be told; they keep the previous generation (and product fields) for at most PRODUCT_MEMO_MS, and so
 * may answer from the previous generation's cached answer for that long (docs/decisions.md).
 */
import { clock } from "../kernel/clock";
import type { Db } from "../db/client";
import { type ProductRow, productByCode } from "./catalog";
import { fresh, memo } from "../kernel/memo";

/** How long an isolate trusts a remembered product: the most another isolate may lag behind a release change. */
export const PRODUCT_MEMO_MS = 5_000;
/** Products are few; the bound only keeps a flood of distinct codes from growing the isolate's memory. */
const MAX_PRODUCTS = 512;

interface Remembered {
  product: Promise<ProductRow | undefined>;
  loadedAt: number;
}

const remembered = memo<string, Remembered>("products", {
  key: "product code",
  max: MAX_PRODUCTS,
  ttlMs: PRODUCT_MEMO_MS,
  forgetOn: ["releases"],
});

/**
 * The product with this code, from the memo when it is younger than PRODUCT_MEMO_MS, else from D1. Concurrent
 * requests share one read; an unknown code is not remembered (a product created meanwhile is found at once).
 */
export function productByCodeMemo(db: Db, code: string): Promise<ProductRow | undefined> {
  const now = clock.now().getTime();
  const hit = remembered.get(code);
  if (hit && fresh(hit.loadedAt, now, PRODUCT_MEMO_MS)) return hit.product;
  const entry = remembered.keep(code, { product: productByCode(db, code), loadedAt: now });
  const drop = () => {
    if (remembered.get(code) === entry) remembered.delete(code);
  };
  entry.product.then((product) => {
    if (!product) drop();
  }, drop);
  return entry.product;
}

/**
 * Until when the isolate trusts what it remembers of the product with this code (0 when it remembers nothing):
 * answers kept for its current release generation may be served without asking for the product until then.
 */
export function trustedUntil(code: string): number {
  const hit = remembered.get(code);
  return hit ? hit.loadedAt + PRODUCT_MEMO_MS : 0;
}

/**
 * The product with this code as the isolate remembers it, when it trusts it (younger than PRODUCT_MEMO_MS); undefined
 * otherwise, without reading D1 (the front door's anonymous session pings: app/ping-door.ts).
 */
export function rememberedProduct(code: string, now: number): Promise<ProductRow | undefined> | undefined {
  const hit = remembered.get(code);
  return hit && fresh(hit.loadedAt, now, PRODUCT_MEMO_MS) ? hit.product : undefined;
}
