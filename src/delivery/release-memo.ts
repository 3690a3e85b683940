/**
 * The releases a product offers to a platform and channel (catalog.ts: offeredReleaseReads), remembered per isolate
 * under the product's release generation. Every change to a product's releases or their artifacts bumps the
 * generation (http/repository.ts, with every write of those rows), so a remembered list is never served for a generation it
 * does not belong to: a licensed feed poll or update check then costs one D1 statement, the caller's license, and
 * an anonymous one none. The generation itself comes from the product memo, so another isolate's release change
 * reaches these answers within PRODUCT_MEMO_MS, as it reaches the cached anonymous answers (docs/decisions.md).
 */
import { clock } from "../kernel/clock";
import { fresh, memo } from "../kernel/memo";
import { INSTALLER_OR_ZIP, type Platform, type ProductRow, type ReleaseWithFiles } from "./catalog";

/** Lists are kept no longer than this even within one generation: a bound, not a freshness rule. */
const RELEASE_MEMO_MS = 60_000;
/** (product, platform, channel) combinations are few; the bound keeps a flood of them from growing memory. */
const MAX_LISTS = 256;

interface Remembered {
  releases: readonly ReleaseWithFiles[];
  keptAt: number;
}

const remembered = memo<string, Remembered>("release-lists", {
  key: "product id / release generation / platform / channel / feed format",
  max: MAX_LISTS,
  ttlMs: RELEASE_MEMO_MS,
  forgetOn: ["releases"],
});

function keyOf(
  product: Pick<ProductRow, "id" | "releaseGeneration">,
  platform: Platform,
  channel: string,
  format: string,
): string {
  return `${product.id}/${product.releaseGeneration}/${platform}/${channel}/${format}`;
}

/** The remembered releases, or undefined when they must be read. */
export function recallReleases(
  product: Pick<ProductRow, "id" | "releaseGeneration">,
  platform: Platform,
  channel: string,
  format = INSTALLER_OR_ZIP.name,
): readonly ReleaseWithFiles[] | undefined {
  const key = keyOf(product, platform, channel, format);
  const hit = remembered.get(key);
  if (!hit) return undefined;
  const now = clock.now().getTime();
  if (!fresh(hit.keptAt, now, RELEASE_MEMO_MS)) {
    remembered.delete(key);
    return undefined;
  }
  return hit.releases;
}

/** Remembers releases read for this generation of the product. */
export function keepReleases(
  product: Pick<ProductRow, "id" | "releaseGeneration">,
  platform: Platform,
  channel: string,
  releases: readonly ReleaseWithFiles[],
  format = INSTALLER_OR_ZIP.name,
): void {
  const key = keyOf(product, platform, channel, format);
  remembered.keep(key, { releases, keptAt: clock.now().getTime() });
}
