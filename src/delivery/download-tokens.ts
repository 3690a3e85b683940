/**
 * Download tokens (SPEC "States", CONTRACT section 5): what a licensed caller's URL of a gated artifact carries.
 *
 * A token is stateless: `<license>.<artifact>.<expiry>.<nonce>.<mac>` (the first three in base 36, the expiry in Unix
 * seconds, the nonce 8 random base62 characters, the mac 16 bytes of an HMAC-SHA256 in base64url) with a key derived
 * from Application:EncryptionKey for this one purpose. Issuing one (every feed poll and update check of a licensed
 * caller) writes nothing; the token proves by itself which license may fetch which artifact until when.
 *
 * Its single use is recorded when a download happens, in one conditional statement (D1 has no interactive
 * transactions): the first request that serves bytes inserts a row keyed by the token's digest; later requests add
 * to it only while the rules hold:
 *   - a complete download (no Range, an ignored Range, or ranges that together cover the file) uses the token up,
 *     and is refused once it is used;
 *   - ranges resume until the token expires;
 *   - the bytes a token serves never pass twice its artifact's size.
 * The row lives until the token's expiry, after which the signature check refuses the token anyway; housekeeping
 * deletes it then.
 */
import { sql } from "drizzle-orm";
import { BASE62, randomString, sha256Hex, timingSafeEqualText, toBase64Url } from "../kernel/crypto";
import { deriveKey, requireEncryptionKey } from "../kernel/secrets";
import { clock } from "../kernel/clock";
import { downloadTokens } from "../db/schema";
import type { ServiceContext } from "../http/context";
import { badDownloadToken } from "./caller";
import type { RangeRequest, Span } from "../http/ranges";

/** What a valid token says: which license may download which artifact, until when (ms), and its digest. */
export interface DownloadClaim {
  licenseId: number;
  downloadId: number;
  expiresAt: number;
  digest: string;
}

const TOKEN = /^([0-9a-z]{1,11})\.([0-9a-z]{1,11})\.([0-9a-z]{1,11})\.([0-9A-Za-z]{8})\.([0-9A-Za-z_-]{22})$/;

function tokenKey(ctx: ServiceContext): Promise<CryptoKey> {
  return deriveKey(
    requireEncryptionKey(ctx.config["Application:EncryptionKey"], "download tokens"),
    "updates/download-token/v1",
    { name: "HMAC", hash: "SHA-256", length: 256 },
    ["sign"],
  );
}

async function macOf(ctx: ServiceContext, payload: string): Promise<string> {
  const mac = new Uint8Array(
    await crypto.subtle.sign("HMAC", await tokenKey(ctx), new TextEncoder().encode(payload)),
  ).slice(0, 16);
  return toBase64Url(mac);
}

/** A token for one artifact and one license, valid Extensions:TokenLifetimeMinutes. Writes nothing. */
export async function issueDownloadToken(ctx: ServiceContext, downloadId: number, licenseId: number): Promise<string> {
  const expires = Math.floor(clock.now().getTime() / 1000) + ctx.config["Extensions:TokenLifetimeMinutes"] * 60;
  const payload = `${licenseId.toString(36)}.${downloadId.toString(36)}.${expires.toString(36)}.${randomString(8, BASE62)}`;
  return `${payload}.${await macOf(ctx, payload)}`;
}

/**
 * What a presented token says, read without touching D1 (before the download's reads, so they can fetch the license
 * it names): its shape, signature and expiry. Undefined when it is missing, altered or expired; the download route
 * refuses it with SPEC's message when the artifact is gated, and also when the token names another artifact
 * (download-plan.ts).
 */
export async function readDownloadToken(
  ctx: ServiceContext,
  token: string | undefined,
): Promise<DownloadClaim | undefined> {
  const m = token ? TOKEN.exec(token) : null;
  if (!token || !m) return undefined;
  const payload = token.slice(0, token.lastIndexOf("."));
  if (!timingSafeEqualText(await macOf(ctx, payload), m[5]!)) return undefined;
  const claim = {
    licenseId: parseInt(m[1]!, 36),
    downloadId: parseInt(m[2]!, 36),
    expiresAt: parseInt(m[3]!, 36) * 1000,
  };
  if (claim.expiresAt <= clock.now().getTime()) return undefined;
  return { ...claim, digest: await sha256Hex(token) };
}

/** Whether ranges together cover every byte of a file of `size` bytes (then they are a complete download). */
export function coversWholeFile(ranges: readonly Span[], size: number): boolean {
  const sorted = [...ranges].sort((a, b) => a.start - b.start);
  let next = 0;
  for (const r of sorted) {
    if (r.start > next) return false;
    next = Math.max(next, r.end + 1);
  }
  return next >= size;
}

/** What serving `range` of an artifact of `size` bytes records on its token; a hosted artifact's redirect is all of it. */
export function tokenUseOf(range: RangeRequest, size: number, hosted: boolean): TokenUse {
  if (hosted || range.kind !== "ranges") return { bytes: size, complete: hosted || range.kind === "all", size };
  return {
    bytes: range.ranges.reduce((n, r) => n + r.end - r.start + 1, 0),
    complete: coversWholeFile(range.ranges, size),
    size,
  };
}

/** What one answer serves of a token's artifact. */
export interface TokenUse {
  bytes: number;
  /** A complete download: it uses the token up. */
  complete: boolean;
  /** The artifact's size. */
  size: number;
}

/**
 * Records that a token serves `bytes` of its artifact (of `size` bytes), `complete` when this is a complete download.
 * One statement: the first use inserts the row; a later one updates it only when it is not a second complete download
 * and stays within twice the size. No row back means refused (403 with SPEC's message).
 */
export async function recordTokenUse(ctx: ServiceContext, claim: DownloadClaim, use: TokenUse): Promise<void> {
  const now = clock.now().toISOString();
  const budget = 2 * use.size;
  if (use.bytes > budget) throw badDownloadToken();
  const row = await ctx.db
    .insert(downloadTokens)
    .values({
      tokenDigest: claim.digest,
      downloadId: claim.downloadId,
      licenseId: claim.licenseId,
      expiresAt: new Date(claim.expiresAt).toISOString(),
      usedAt: use.complete ? now : null,
      bytesServed: use.bytes,
      createdAt: now,
    })
    .onConflictDoUpdate({
      target: downloadTokens.tokenDigest,
      set: {
        bytesServed: sql`${downloadTokens.bytesServed} + excluded.bytes_served`,
        usedAt: sql`coalesce(${downloadTokens.usedAt}, excluded.used_at)`,
      },
      setWhere: sql`(excluded.used_at IS NULL OR ${downloadTokens.usedAt} IS NULL) AND ${downloadTokens.bytesServed} + excluded.bytes_served <= ${budget}`,
    })
    .returning({ bytesServed: downloadTokens.bytesServed })
    .get();
  if (!row) throw badDownloadToken();
}
