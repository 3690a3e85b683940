/**
 * The anonymous update routes (SPEC "Update routes"): the signed update check, the feed manifests (canonical route
 * and the latest*.yml aliases) and artifact downloads. A caller with a license names it with the
 * `X-Service-User-Key` header (or `userKey`). Errors use the service envelope with ordinary statuses, never 52x.
 * Anonymous answers go through the Workers Cache API under a key normalised to (origin of the answer's URLs, product,
 * release generation, route, channel, platform, file or version): query noise such as electron-updater's `noCache` is dropped, and
 * any change to the product's releases bumps the generation, so a stale answer is never served.
 */
import { createRoute, z } from "@hono/zod-openapi";
import type { Context } from "hono";
import type { AppEnv } from "../http/app-env";
import { sha256Hex } from "../crypto";
import { access } from "../auth/guard";
import { type ServiceContext, serviceContext } from "../http/context";
import { ApiError } from "../errors";
import { Envelope, json, tooManyRequests } from "../http/openapi";
import { send } from "../http/respond";
import { type Router, documented } from "../http/router";
import { clock } from "../clock";
import { TraceAction } from "../licensing/vocabulary";
import { type Caller, USER_KEY_HEADER, type judgeCaller, licenseOf } from "./caller";
import { type Credential, credentialOf, credentialQuery, judgeCredential } from "./credential";
import { CURRENT_VERSION_HEADER, INSTALL_ID_HEADER, installIdOf } from "./caller";
import { type AudienceLicense, audienceReads, matchedAudiences } from "./audience";
import { feedTokenLicenseId } from "../licensing/feed-token";
import {
  CHANNELS,
  type DownloadRow,
  INSTALLER_OR_ZIP,
  type Offerable,
  PLATFORMS,
  type Platform,
  type ProductRow,
  type ReleaseWithFiles,
  feedFiles,
  groupOfferedReleases,
  offeredReleaseReads,
  withCurrentGates,
} from "./catalog";
import { artifactAnswer, artifactEtag, ifRangeHolds, noneMatchHits } from "./artifact-download";
import { planDownload } from "./download-plan";
import { recordTokenUse, tokenUseOf } from "./download-tokens";
import { parseRange } from "./ranges";
import { productByCodeMemo } from "./product-memo";
import { clientInfo } from "../http/context";
import type { LicenseRow } from "../licensing/license-core";
import { recordTrace } from "../licensing/traces";
import { adoptionDownloaded } from "./adoption";
import { nowIso } from "../clock";
import { type Asking, emptyFeedYaml, feedRelease, feedYaml } from "./feed";
import { KINDS } from "./release-download";
import { recallAnswer } from "./answer-memo";
import { trustedUntil } from "./product-memo";
import { keepReleases, recallReleases } from "./release-memo";
import { batchReads } from "../db/compiled";
import { UpdateCheckData, checkForUpdate, signUpdateCheck, updateCheckReason } from "./update-check";
import { REASON_HEADER, type UpdateReason, reasonsDescription, withReason } from "./reasons";
import { MAX_VERSION_LENGTH, isReleaseVersion } from "./versions";

const TRACE_UPDATE_CHECK = TraceAction.UpdateCheck;
const TRACE_DOWNLOAD = TraceAction.Download;

export function requirePlatform(value: string | undefined, fallback?: Platform): Platform {
  const platform = value ?? fallback;
  if (!platform || !(PLATFORMS as readonly string[]).includes(platform))
    throw new ApiError(400, `Unknown platform '${value}': one of ${PLATFORMS.join(", ")}`);
  return platform as Platform;
}

export function requireChannel(value: string | undefined): string {
  const channel = value ?? "stable";
  if (!(CHANNELS as readonly string[]).includes(channel))
    throw new ApiError(400, `Unknown channel '${value}': stable or insider`);
  return channel;
}

export function requireVersion(value: string | undefined): string {
  const version = value ?? "";
  if (!isReleaseVersion(version)) throw new ApiError(400, `Unknown version '${version}': major.minor.patch`);
  return version;
}

export async function requireProduct(ctx: ServiceContext, code: string): Promise<ProductRow> {
  const product = await productByCodeMemo(ctx.db, code);
  if (!product) throw new ApiError(404, `Unknown product '${code}'`);
  return product;
}

function userKeyOf(c: Context<AppEnv>): string | undefined {
  return c.req.header(USER_KEY_HEADER) ?? c.req.query("userKey") ?? undefined;
}

/** Who an update feed's request names: its user key, else a license's feed token (credential.ts). */
export function credentialFrom(c: Context<AppEnv>): Credential {
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
const platformParam = z.enum(PLATFORMS);
export const channelParam = z.enum(CHANNELS);
const versionParam = z.string().max(MAX_VERSION_LENGTH);
// No artifact has a longer name (download-entity.ts), so a longer one is answered 404.
const fileNameParam = z.string().max(255);

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
  return c.get("config")["Application:PublicUrl"] ?? new URL(c.req.url).origin;
}

/**
 * Absolute download URLs on this service (CONTRACT section 5): tokenised when a token is given, otherwise pinned to
 * the artifact's id (`artifact`), so an artifact deleted and added again (new bytes, new id) has a new URL. When
 * another artifact of the release and platform has the same file name (an installer and a zip), the URL says which
 * with `kind`, as the download route asks (SPEC "Download": `kind` when one file name is ambiguous).
 */
export function downloadUrlBuilder(c: Context<AppEnv>, product: ProductRow, platform: Platform) {
  const origin = urlOrigin(c);
  return (entry: ReleaseWithFiles, file: DownloadRow, token?: string) => {
    const shared = entry.files.some((other) => other.id !== file.id && other.fileName === file.fileName);
    return `${origin}/v1/updates/${encodeURIComponent(product.code)}/download/${platform}/${encodeURIComponent(entry.release.version)}/${encodeURIComponent(file.fileName)}${token ? `?token=${token}` : `?artifact=${file.id}`}${shared ? `&kind=${file.kind}` : ""}`;
  };
}

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
 * unless told (the other feed formats: format-routes.ts).
 */
export async function taggedFeed(yaml: string, contentType = "text/yaml; charset=utf-8"): Promise<Response> {
  const etag = `"${(await sha256Hex(yaml)).slice(0, 32)}"`;
  return new Response(yaml, { status: 200, headers: { "Content-Type": contentType, ETag: etag } });
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
  // The answer-memo layer (app.ts) keeps the answer, and points the front door from this URL to it, after this
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
 * The caller behind a user key and the releases offered to the platform. The releases of the product's current
 * release generation are remembered by the isolate (release-memo.ts), so a licensed caller usually costs one
 * statement, its license, and an anonymous one none; when they must be read, they come in the same D1 round trip
 * as the license (DESIGN: at most one round trip on a cache miss).
 */
export async function callerAndReleases(
  ctx: ServiceContext,
  product: ProductRow,
  credential: Credential,
  platform: Platform,
  channel: string,
  offerable: Offerable = INSTALLER_OR_ZIP,
): Promise<{ caller: Caller; releases: ReleaseWithFiles[]; audienceMatched?: ReadonlySet<number> }> {
  const licenseQuery = credentialQuery(product.id, credential);
  const offered = (releases: readonly ReleaseWithFiles[]) => withCurrentGates(ctx.config, product, releases);
  let releases = recallReleases(product, platform, channel, offerable.name);
  let licenseRows: Parameters<typeof judgeCaller>[1][] = [];
  let audienceMatched: ReadonlySet<number> | undefined;
  if (releases) {
    if (licenseQuery) {
      // The audiences of the releases (release control, audience.ts) are matched in the license's own statement:
      // their first read is the license read with one more column.
      const audiences = audienceReads(
        credentialLicense(credential!),
        releases.map((r) => r.release),
        product.id,
      );
      const [first, ...rest] = audiences.queries;
      if (first) {
        const rows = await batchReads(ctx.db, [first, ...rest]);
        licenseRows = rows[0];
        audienceMatched = audiences.matched(rows);
      } else {
        [licenseRows] = await batchReads(ctx.db, [licenseQuery]);
        audienceMatched = new Set();
      }
    }
  } else {
    const [releasesQuery, filesQuery] = offeredReleaseReads(ctx.db, product.id, platform, channel);
    let releaseRows, fileRows;
    if (licenseQuery)
      [licenseRows, releaseRows, fileRows] = await batchReads(ctx.db, [licenseQuery, releasesQuery, filesQuery]);
    else [releaseRows, fileRows] = await batchReads(ctx.db, [releasesQuery, filesQuery]);
    releases = groupOfferedReleases(releaseRows, fileRows, offerable);
    keepReleases(product, platform, channel, releases, offerable.name);
  }
  if (!credential) return { caller: { kind: "anonymous" }, releases: offered(releases) };
  // The caller is judged first, as when the reads were sequential: a refused key answers 403 whatever the releases.
  const caller = await judgeCredential(ctx, credential, licenseRows[0]);
  // Releases read just now (a cold isolate, a new release generation): their audiences cost a second round trip.
  if (caller.kind === "licensed" && audienceMatched === undefined)
    audienceMatched = await matchedAudiences(
      ctx.db,
      caller.license.id,
      releases.map((r) => r.release),
    );
  return { caller, releases: offered(releases), ...(audienceMatched ? { audienceMatched } : {}) };
}

/** The license a credential names, for its audiences to be matched beside it (audience.ts). */
function credentialLicense(credential: NonNullable<Credential>): AudienceLicense {
  return "key" in credential ? { key: credential.key } : { id: feedTokenLicenseId(credential.feedToken) ?? 0 };
}

/**
 * Who asks an update route, as release control reads it (feed.ts Asking), and the releases offered to the platform:
 * the caller behind the credential, the install id (X-Service-Install-Id), the running version (the update check's
 * `version`, else X-Service-Current-Version), the audiences the license matches and the product's minimum version.
 * Every update answer (each feed format, the update check) hands this to feedRelease.
 */
export async function askingFor(
  c: Context<AppEnv>,
  product: ProductRow,
  platform: Platform,
  channel: string,
  options: { version?: string; offerable?: Offerable; credential?: Credential } = {},
): Promise<Asking & { releases: ReleaseWithFiles[] }> {
  const ctx = serviceContext(c);
  const installId = installIdOf(c.req.header(INSTALL_ID_HEADER));
  const running = options.version ?? c.req.header(CURRENT_VERSION_HEADER);
  const { caller, releases, audienceMatched } = await callerAndReleases(
    ctx,
    product,
    options.credential ?? credentialFrom(c),
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

async function feedResponse(
  c: Context<AppEnv>,
  codeParam: string,
  channelParam: string | undefined,
  platformParam: string | undefined,
  file: string,
  fallback?: Platform,
): Promise<Response> {
  const ctx = serviceContext(c);
  const channel = requireChannel(channelParam);
  const platform = requirePlatform(platformParam, fallback);
  // electron-updater with `autoUpdater.channel = "<channel>"` asks for `<channel>.yml` (`-mac`, `-linux`…) instead
  // of `latest…yml`: in a feed directory, which already is one channel, that is the same file.
  if (file.startsWith(`${channel}.`) || file.startsWith(`${channel}-`)) file = `latest${file.slice(channel.length)}`;
  if (!feedFiles(platform).includes(file))
    throw new ApiError(404, `No feed file '${file}' for ${platform}: ${feedFiles(platform).join(" or ")}`);
  const product = await requireProduct(ctx, codeParam);
  const credential = credentialFrom(c);
  const res = await throughCache(
    c,
    product,
    [product.code, String(product.releaseGeneration), "feed", channel, platform, file],
    sharedAnswer(c, credential),
    async () => {
      const asking = await askingFor(c, product, platform, channel);
      const input = { ...asking, platform, downloadUrl: downloadUrlBuilder(c, product, platform) };
      const selection = await feedRelease(ctx, input);
      const { entry, reason, staged } = selection;
      traceFor(c, licenseOf(asking.caller), TRACE_UPDATE_CHECK);
      const yaml = entry
        ? await feedYaml(ctx, input, entry, { staged })
        : ctx.config["Updates:EmptyFeedAsYaml"]
          ? await emptyFeedYaml(ctx, input, selection)
          : undefined;
      // The reason travels with the answer into the caches: an anonymous one depends on nothing the key lacks.
      if (yaml === undefined) return withReason(new Response(null, { status: 204 }), reason);
      return withReason(await taggedFeed(yaml), reason);
    },
  );
  return notModifiedFor(c.req.header("if-none-match"), res);
}

/**
 * An artifact download (GET or HEAD). What it serves, and to whom, is download-plan.ts's decision (one D1 round
 * trip); the answer is rendered here: 304 on a matching If-None-Match, the token's use recorded before any byte is
 * sent (one conditional statement), the download's trace, and the bytes (artifact-download.ts).
 */
async function downloadResponse(c: Context<AppEnv>): Promise<Response> {
  const ctx = serviceContext(c);
  const platform = requirePlatform(c.req.param("platform"));
  const version = requireVersion(c.req.param("version"));
  const channelQuery = c.req.query("channel");
  const channel = channelQuery !== undefined ? requireChannel(channelQuery) : undefined;
  const product = await requireProduct(ctx, c.req.param("productCode") ?? "");
  const installId = installIdOf(c.req.header(INSTALL_ID_HEADER));
  const plan = await planDownload(ctx, {
    product,
    platform,
    version,
    fileName: c.req.param("fileName") ?? "",
    kind: c.req.query("kind"),
    channel,
    token: c.req.query("token"),
    userKey: userKeyOf(c),
    installId,
  });
  const { file } = plan;
  const head = c.req.method === "HEAD";
  const etag = artifactEtag(file);
  // A Range whose If-Range names other bytes is answered with the whole file (RFC 9110 section 13.1.5).
  const range = ifRangeHolds(c.req.header("if-range"), etag)
    ? parseRange(c.req.header("range"), file.size)
    : parseRange(undefined, file.size);
  // Public and the same for everyone: ungated, and the platform open without a license. Never `immutable`, even
  // under the artifact's id: any release can be gated later (requiresMaintenance, isApplication, a setting), so a
  // shared cache keeps an ungated answer no longer than a feed's (Updates:FeedCacheSeconds), then revalidates it
  // with its ETag.
  const cacheControl = plan.shared ? `public, max-age=${ctx.config["Updates:FeedCacheSeconds"]}` : "private, no-store";
  const hosted = Boolean(file.sourceKind === "url" && file.url);
  if (!hosted && noneMatchHits(c.req.header("if-none-match"), etag))
    return new Response(null, { status: 304, headers: { ETag: etag, "Cache-Control": cacheControl } });

  // What this answer serves; a token records it in one statement (download-tokens.ts) before any byte is sent.
  const use = tokenUseOf(range, file.size, hosted);
  if (plan.claim && !head && range.kind !== "unsatisfiable") await recordTokenUse(ctx, plan.claim, use);
  if (use.complete && !head) traceFor(c, plan.license, TRACE_DOWNLOAD, plan.version);
  // Release adoption: bytes of the release went out (a whole file, or ranges of a differential download); a blockmap
  // only describes them.
  if (!head && range.kind !== "unsatisfiable" && file.kind !== "blockmap")
    adoptionDownloaded(ctx, {
      productId: product.id,
      version: plan.version,
      platform,
      installId,
      licenseId: plan.license?.id,
    });
  return artifactAnswer(ctx, file, { head, range, cacheControl });
}

const feedResponses = {
  200: {
    description: "electron-builder UpdateInfo: the highest release the caller may install",
    content: { "text/yaml": { schema: z.string() } },
  },
  204: {
    description:
      "Nothing installable for the caller (or the platform is not open to the caller's edition). " +
      reasonsDescription(NOTHING_OFFERED),
    headers: reasonHeader(NOTHING_OFFERED),
  },
  ...problems,
} as const;

export function registerUpdateRoutes(app: Router): void {
  documented(
    app,
    createRoute({
      method: "get",
      path: "/v1/updates/{productCode}",
      tags: ["Updates"],
      operationId: "checkForUpdate",
      summary:
        "Signed update check: the newest release, whether the caller may install it, and the caller's maintenance",
      ...access.anonymous(),
      request: {
        params: z.object({ productCode: productCodeParam }),
        query: z.object({
          platform: platformParam,
          version: versionParam.openapi({ description: "The caller's current major.minor.patch." }),
          channel: channelParam.optional().openapi({ description: "stable (default) or insider" }),
          userKey: userKeyQuery,
        }),
      },
      responses: {
        200: {
          ...json(
            z
              .object({
                success: z.boolean(),
                data: UpdateCheckData,
                signature: z.string().openapi({
                  description:
                    "Base64 of the 64-byte ES256 (P1363) signature over the RFC 8785 canonical JSON of data.",
                }),
                keyId: z.string().openapi({ description: "The key's kid in GET /v1/extensions/keys." }),
              })
              .openapi("SignedUpdateCheck"),
            "The signed update check. When it offers no download, or the user key names no license, " +
              reasonsDescription([...NOTHING_OFFERED, "nothingNewer"]),
          ),
          headers: reasonHeader([...NOTHING_OFFERED, "nothingNewer"]),
        },
        ...problems,
      },
    }),
    async (c) => {
      const ctx = serviceContext(c);
      const platform = requirePlatform(c.req.query("platform"));
      const channel = requireChannel(c.req.query("channel"));
      const version = requireVersion(c.req.query("version"));
      const product = await requireProduct(ctx, c.req.param("productCode") ?? "");
      const credential = credentialFrom(c);
      return throughCache(
        c,
        product,
        [product.code, String(product.releaseGeneration), "check", channel, platform, version],
        sharedAnswer(c, credential),
        async () => {
          const asking = await askingFor(c, product, platform, channel, { version });
          const data = await checkForUpdate(ctx, {
            ...asking,
            product,
            platform,
            version,
            channel,
            downloadUrl: downloadUrlBuilder(c, product, platform),
          });
          traceFor(c, licenseOf(asking.caller), TRACE_UPDATE_CHECK, version);
          return withReason(send(c, await signUpdateCheck(ctx, data)), updateCheckReason(asking.caller, data));
        },
      );
    },
  );

  documented(
    app,
    createRoute({
      method: "get",
      path: "/v1/updates/{productCode}/feed/{channel}/{platform}/{file}",
      tags: ["Updates"],
      operationId: "getFeed",
      summary: "Feed manifest (the feed directory of an electron-updater generic provider)",
      ...access.anonymous(),
      request: {
        params: z.object({
          productCode: productCodeParam,
          channel: channelParam.openapi({ param: { name: "channel", in: "path" } }),
          platform: platformParam.openapi({ param: { name: "platform", in: "path" } }),
          file: z.enum(["latest.yml", "latest-mac.yml", "latest-linux.yml", "latest-linux-arm64.yml"]).openapi({
            param: { name: "file", in: "path" },
            description:
              "latest.yml (Windows), latest-mac.yml (macOS), latest-linux.yml or latest-linux-arm64.yml (Linux)",
          }),
        }),
        query: z.object({ userKey: userKeyQuery }),
      },
      responses: feedResponses,
    }),
    (c) =>
      feedResponse(
        c,
        c.req.param("productCode") ?? "",
        c.req.param("channel"),
        c.req.param("platform"),
        c.req.param("file") ?? "",
      ),
  );

  const aliases: [string, Platform][] = [
    ["latest.yml", "win-x64"],
    ["latest-mac.yml", "darwin-arm64"],
    ["latest-linux.yml", "linux-x64"],
    ["latest-linux-arm64.yml", "linux-arm64"],
  ];
  for (const [file, fallback] of aliases) {
    documented(
      app,
      createRoute({
        method: "get",
        path: `/v1/updates/{productCode}/${file}`,
        tags: ["Updates"],
        operationId: `getFeedAlias${file.replace(/[^A-Za-z0-9]+(.)?/g, (_, ch: string | undefined) => (ch ?? "").toUpperCase())}`,
        summary: `Feed manifest ${file} (platform defaults to ${fallback})`,
        ...access.anonymous(),
        request: {
          params: z.object({ productCode: productCodeParam }),
          query: z.object({
            channel: channelParam.optional(),
            platform: platformParam.optional(),
            userKey: userKeyQuery,
          }),
        },
        responses: feedResponses,
      }),
      (c) =>
        feedResponse(
          c,
          c.req.param("productCode") ?? "",
          c.req.query("channel"),
          c.req.query("platform"),
          file,
          fallback,
        ),
    );
  }

  documented(
    app,
    createRoute({
      method: "get",
      path: "/v1/updates/{productCode}/download/{platform}/{version}/{fileName}",
      tags: ["Updates"],
      operationId: "downloadArtifact",
      summary: "One artifact (GET or HEAD): whole, one byte range, or several as multipart/byteranges",
      ...access.anonymous(),
      request: {
        params: z.object({
          productCode: productCodeParam,
          platform: platformParam.openapi({ param: { name: "platform", in: "path" } }),
          version: versionParam.openapi({ param: { name: "version", in: "path" } }),
          fileName: fileNameParam.openapi({ param: { name: "fileName", in: "path" } }),
        }),
        query: z.object({
          token: z.string().max(128).optional().openapi({
            description:
              "Download token (gated releases): used up by the first complete download; ranges resume until it expires.",
          }),
          artifact: z.string().max(20).optional().openapi({
            description:
              "The artifact's id, as the URLs of feeds and update checks carry it (a replaced artifact gets a new URL).",
          }),
          kind: z.enum(KINDS).optional(),
          userKey: userKeyQuery,
          channel: channelParam.optional(),
        }),
      },
      responses: {
        200: {
          description: "The artifact",
          content: { "application/octet-stream": { schema: z.string().openapi({ format: "binary" }) } },
        },
        206: {
          description: "Byte range(s)",
          content: { "multipart/byteranges": { schema: z.string().openapi({ format: "binary" }) } },
        },
        302: { description: "A hosted artifact: its URL" },
        416: { description: "Range not satisfiable" },
        ...problems,
      },
    }),
    downloadResponse,
  );
}
