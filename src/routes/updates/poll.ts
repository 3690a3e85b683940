/**
 * What the update routes share on their HTTP side (the update check and electron-builder feed, the other updaters'
 * feeds, the package folders): the credential and install headers read from the request, the edge cache and the
 * isolate's answer memo, absolute download URLs on the request's public origin, traces with the client's address,
 * and the OpenAPI pieces (parameters, reasons, problems). The HTTP-free pipeline they drive is delivery/poll.ts.
 */
import { z } from "@hono/zod-openapi";
import type { Context } from "hono";
import type { AppEnv } from "../../http/app-env";
import { serviceContext } from "../../http/context";
import { Envelope, tooManyRequests } from "../../http/openapi";
import { clock } from "../../kernel/clock";
import { TraceAction } from "../../records/vocabulary";
import { USER_KEY_HEADER } from "../../delivery/caller";
import { type Credential, credentialOf } from "../../delivery/credential";
import { CURRENT_VERSION_HEADER, INSTALL_ID_HEADER, installIdOf } from "../../delivery/caller";
import {
  CHANNELS,
  type Offerable,
  PLATFORMS,
  type Platform,
  type ProductRow,
  type ReleaseWithFiles,
} from "../../delivery/catalog";
import { clientInfo } from "../../http/context";
import type { LicenseRow } from "../../licensing/license-core";
import { recordTrace } from "../../licensing/traces";
import { nowIso } from "../../kernel/clock";
import type { Asking } from "../../delivery/selection";
import { recallAnswer } from "../../delivery/answer-memo";
import { trustedUntil } from "../../delivery/product-memo";
import { REASON_HEADER, type UpdateReason, reasonsDescription } from "../../delivery/reasons";
import { MAX_VERSION_LENGTH, isReleaseVersion } from "../../records/versions";

import { callerAndReleases } from "../../delivery/poll";
import { downloadUrlFor } from "../../delivery/download-info";
import { publicOrigin } from "../../http/context";
import { crashLoopOf } from "../../updates/crash-loops";

export const TRACE_UPDATE_CHECK = TraceAction.UpdateCheck;
export const TRACE_DOWNLOAD = TraceAction.Download;

export function userKeyOf(c: Context<AppEnv>): string | undefined {
  return c.req.header(USER_KEY_HEADER) ?? c.req.query("userKey") ?? undefined;
}

/** Who an update feed's request names: its user key, else a license's feed token (credential.ts). */
export function credentialFrom(c: Context<AppEnv>): Promise<Credential> {
  return credentialOf(
    (name) => c.req.header(name),
    (name) => c.req.query(name),
  );
}

/**
 * Traces an update check or a download for a license that traces; `version` (the client's current version for a
 * check, the release's for a download) goes into the trace's meta, where the console reads update adoption from.
 */
export function traceFor(
  c: Context<AppEnv>,
  license: Pick<LicenseRow, "id" | "trace"> | undefined,
  action: number,
  version?: string,
): void {
  if (!license?.trace) return;
  const client = clientInfo(c);
  recordTrace(
    serviceContext(c),
    {
      licenseId: license.id,
      action,
      address: client.address,
      geoLocation: client.geoLocation,
      meta: version === undefined ? null : JSON.stringify({ version }),
    },
    nowIso(),
  );
}

/** The `X-Service-Reason` header of an answer that may carry these reasons (reasons.ts). */
export function reasonHeader(reasons: readonly UpdateReason[]) {
  return {
    [REASON_HEADER]: {
      description: reasonsDescription(reasons),
      schema: { type: "string" as const, enum: [...reasons] },
    },
  };
}
const REFUSED: readonly UpdateReason[] = [
  "licenseRevoked",
  "licenseExpired",
  "licenseTampered",
  "platformRequiresLicense",
  "platformRequiresEdition",
  "downloadTokenInvalid",
  "notOffered",
];
export const NOTHING_OFFERED: readonly UpdateReason[] = [
  "licenseNotFound",
  "wrongProduct",
  "platformRequiresLicense",
  "platformRequiresEdition",
  "licenseRequired",
  "maintenanceExpired",
  "noRelease",
  "notOffered",
];

export const problems = {
  400: { description: "Unknown platform, channel or version.", content: { "application/json": { schema: Envelope } } },
  403: {
    description:
      "`License revoked or expired`, a refused platform, or `Download token invalid, expired or already used`. " +
      reasonsDescription(REFUSED),
    headers: reasonHeader(REFUSED),
    content: { "application/json": { schema: Envelope } },
  },
  404: {
    description: "Unknown product, feed file or artifact.",
    content: { "application/json": { schema: Envelope } },
  },
  429: tooManyRequests,
  500: {
    description: "A failure of the service (the database did not answer).",
    content: { "application/json": { schema: Envelope } },
  },
} as const;

// The handlers validate these by hand (400 with the update routes' envelope, SPEC error shape 3); the schemas document
// what they accept.
export const platformParam = z.enum(PLATFORMS);
export const channelParam = z.enum(CHANNELS);
export const versionParam = z.string().max(MAX_VERSION_LENGTH);
// No artifact has a longer name (download-entity.ts), so a longer one is answered 404.
export const fileNameParam = z.string().max(255);

export const productCodeParam = z
  .string()
  .min(1)
  .max(64)
  .openapi({ param: { name: "productCode", in: "path" } });
export const userKeyQuery = z
  .string()
  .max(128)
  .optional()
  .openapi({ description: `The caller's user key; prefer the ${USER_KEY_HEADER} header.` });

/**
 * The origin of every absolute URL the update routes hand out: Application:PublicUrl, which the production checks
 * require outside Development; in Development without it, the request's own (its URL's scheme and host;
 * X-Forwarded-Host and the like are never read). throughCache's key carries it, so an answer made for one origin is
 * never served to a request that would have been given another.
 */
function urlOrigin(c: Context<AppEnv>): string {
  return publicOrigin(c);
}

/**
 * Absolute download URLs on this service (CONTRACT section 5): tokenised when a token is given, otherwise pinned to
 * the artifact's id (`artifact`), so an artifact deleted and added again (new bytes, new id) has a new URL. When
 * another artifact of the release and platform has the same file name (an installer and a zip), the URL says which
 * with `kind`, as the download route asks (SPEC "Download": `kind` when one file name is ambiguous).
 */
export function downloadUrlBuilder(c: Context<AppEnv>, product: ProductRow, platform: Platform) {
  return downloadUrlFor(urlOrigin(c), product, platform);
}

/**
 * Answers through the edge cache when anonymous; private and uncached when the answer depends on a user key. The
 * isolate's own copy (answer-memo.ts) comes first, so a repeated anonymous poll costs no lookup at all.
 */
export async function throughCache(
  c: Context<AppEnv>,
  product: ProductRow,
  key: string[],
  anonymous: boolean,
  produce: () => Promise<Response>,
): Promise<Response> {
  const seconds = c.get("config")["Updates:FeedCacheSeconds"];
  if (!anonymous || seconds === 0) {
    const res = await produce();
    res.headers.set("Cache-Control", "private, no-store");
    return res;
  }
  // The answer's URLs start with urlOrigin, so the key does too (a Host of the caller's choosing in Development).
  const url = `https://update-cache.invalid/${[urlOrigin(c), ...key].map(encodeURIComponent).join("/")}`;
  // The answer-memo layer (app/app.ts) keeps the answer, and points the front door from this URL to it, after this
  // route answered: the route only says how it may be kept.
  const keeping = { key: url, until: trustedUntil(product.code), maxAgeMs: seconds * 1000 };
  const recalled = recallAnswer(url, clock.now().getTime());
  if (recalled) {
    c.set("keep", keeping);
    return recalled;
  }
  const ctx = serviceContext(c);
  const cache = (caches as unknown as { default: Cache }).default;
  const request = new Request(url);
  const hit = await cache.match(request);
  if (hit) {
    c.set("keep", { ...keeping, answer: hit });
    return hit;
  }
  const res = await produce();
  res.headers.set("Cache-Control", `public, max-age=${seconds}`);
  // The same URL with a user key is another answer (and another reason): an HTTP cache (a browser's) must not hand
  // this one to a request that names a key.
  res.headers.set("Vary", `${USER_KEY_HEADER}, ${INSTALL_ID_HEADER}, ${CURRENT_VERSION_HEADER}`);
  // A 204 is not stored: the Cache API cannot hand back a null-body status it stored with headers.
  if (res.status === 200) {
    ctx.waitUntil(cache.put(request, res.clone()));
    c.set("keep", { ...keeping, answer: res });
  } else c.set("keep", keeping);
  return res;
}

/**
 * Who asks an update route, as release control reads it (delivery/selection.ts Asking), and the releases offered to the platform:
 * the caller behind the credential, the install id (X-Service-Install-Id), the running version (the update check's
 * `version`, else X-Service-Current-Version), the audiences the license matches, the product's minimum version and the install's crash loop.
 * Every update answer (each feed format, the update check) hands this to feedRelease.
 */
export async function askingFor(
  c: Context<AppEnv>,
  product: ProductRow,
  platform: Platform,
  channel: string,
  options: { version?: string; offerable?: Offerable; credential?: Credential; installId?: string | undefined } = {},
): Promise<Asking & { releases: ReleaseWithFiles[] }> {
  const ctx = serviceContext(c);
  // The header, else an install id the format carries in its URL (Velopack's stagingId): cohort and crash loop alike.
  const installId = installIdOf(c.req.header(INSTALL_ID_HEADER)) ?? options.installId;
  const running = options.version ?? c.req.header(CURRENT_VERSION_HEADER);
  const { caller, releases, audienceMatched } = await callerAndReleases(
    ctx,
    product,
    options.credential ?? (await credentialFrom(c)),
    platform,
    channel,
    options.offerable,
  );
  return {
    caller,
    releases,
    installId,
    currentVersion: running !== undefined && isReleaseVersion(running) ? running : undefined,
    audienceMatched,
    minimumVersion: product.minimumVersion,
    crashLoop: await crashLoopOf(ctx.db, product.id, product.crashLoops, installId),
  };
}

/**
 * Whether an update request's answer may be shared through the caches (the front door's memo, the edge cache): it
 * names no credential, install id or running version. An install id or a running version makes the answer the
 * caller's own (its rollout cohort, a rollback), so it is answered `private, no-store` from the isolate's release
 * memo (no D1 statement while the memo holds).
 */
export function sharedAnswer(c: Context<AppEnv>, credential: Credential): boolean {
  return !credential && !c.req.header(INSTALL_ID_HEADER) && !c.req.header(CURRENT_VERSION_HEADER);
}
