/**
 * The anonymous update routes (SPEC "Update routes"): the signed update check, the feed manifests (canonical route
 * and the latest*.yml aliases) and artifact downloads. A caller with a license names it with the
 * `X-Service-User-Key` header (or `userKey`). Errors use the service envelope with ordinary statuses, never 52x.
 * Anonymous answers go through the Workers Cache API under a key normalised to (origin of the answer's URLs, product,
 * release generation, route, channel, platform, file or version): query noise such as electron-updater's `noCache` is dropped, and
 * any change to the product's releases bumps the generation, so a stale answer is never served.
 */
import { createRoute, z } from "@hono/zod-openapi";
import type { Context, Handler } from "hono";
import type { AppEnv } from "../../http/app-env";
import { access } from "../../auth/guard";
import { serviceContext } from "../../http/context";
import { ApiError } from "../../kernel/errors";
import { json } from "../../http/openapi";
import { send } from "../../http/respond";
import { type Router, documented } from "../../http/router";
import { licenseOf } from "../../delivery/caller";
import { INSTALL_ID_HEADER, installIdOf } from "../../delivery/caller";
import { type Platform, feedFiles } from "../../delivery/catalog";
import { artifactAnswer, artifactEtag } from "../../delivery/artifact-download";
import { ifRangeHolds, noneMatchHits } from "../../http/conditionals";
import { planDownload } from "../../delivery/download-plan";
import { recordTokenUse, tokenUseOf } from "../../delivery/download-tokens";
import { parseRange } from "../../http/ranges";
import { adoptionDownloaded } from "../../updates/adoption";
import { emptyFeedYaml, feedYaml } from "../../delivery/formats/electron-builder";
import { feedRelease } from "../../delivery/selection";
import { KINDS } from "../../updates/release-download";
import { UpdateCheckData, checkForUpdate, signUpdateCheck, updateCheckReason } from "../../delivery/update-check";
import { reasonsDescription, withReason } from "../../delivery/reasons";

import {
  NOTHING_OFFERED,
  askingFor,
  channelParam,
  credentialFrom,
  downloadUrlBuilder,
  problems,
  productCodeParam,
  reasonHeader,
  sharedAnswer,
  throughCache,
  traceFor,
  userKeyQuery,
  userKeyOf,
  platformParam,
  versionParam,
  fileNameParam,
  TRACE_UPDATE_CHECK,
  TRACE_DOWNLOAD,
} from "./poll";
import { notModifiedFor, taggedFeed } from "../../http/conditionals";
import { requireChannel, requirePlatform, requireProduct, requireVersion } from "../../delivery/poll";

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
  const credential = await credentialFrom(c);
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

const checkForUpdateRoute = createRoute({
  method: "get",
  path: "/v1/updates/{productCode}",
  tags: ["Updates"],
  operationId: "checkForUpdate",
  summary: "Signed update check: the newest release, whether the caller may install it, and the caller's maintenance",
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
              description: "Base64 of the 64-byte ES256 (P1363) signature over the RFC 8785 canonical JSON of data.",
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
});

const checkForUpdateHandler: Handler<AppEnv> = async (c) => {
  const ctx = serviceContext(c);
  const platform = requirePlatform(c.req.query("platform"));
  const channel = requireChannel(c.req.query("channel"));
  const version = requireVersion(c.req.query("version"));
  const product = await requireProduct(ctx, c.req.param("productCode") ?? "");
  const credential = await credentialFrom(c);
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
};

const getFeedRoute = createRoute({
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
        description: "latest.yml (Windows), latest-mac.yml (macOS), latest-linux.yml or latest-linux-arm64.yml (Linux)",
      }),
    }),
    query: z.object({ userKey: userKeyQuery }),
  },
  responses: feedResponses,
});

const getFeedHandler: Handler<AppEnv> = (c) =>
  feedResponse(
    c,
    c.req.param("productCode") ?? "",
    c.req.param("channel"),
    c.req.param("platform"),
    c.req.param("file") ?? "",
  );

/** A latest*.yml alias of the feed: its file, with the platform it defaults to. */
function feedAlias(file: string, fallback: Platform, operationId: string) {
  const route = createRoute({
    method: "get",
    path: `/v1/updates/{productCode}/${file}`,
    tags: ["Updates"],
    operationId,
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
  });
  const handler: Handler<AppEnv> = (c) =>
    feedResponse(c, c.req.param("productCode") ?? "", c.req.query("channel"), c.req.query("platform"), file, fallback);
  return { route, handler };
}

/** The feed's latest*.yml aliases, in the document's order. */
const feedAliases = [
  feedAlias("latest.yml", "win-x64", "getFeedAliaslatestYml"),
  feedAlias("latest-mac.yml", "darwin-arm64", "getFeedAliaslatestMacYml"),
  feedAlias("latest-linux.yml", "linux-x64", "getFeedAliaslatestLinuxYml"),
  feedAlias("latest-linux-arm64.yml", "linux-arm64", "getFeedAliaslatestLinuxArm64Yml"),
];

const downloadArtifactRoute = createRoute({
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
});

export function registerUpdateRoutes(app: Router): void {
  documented(app, checkForUpdateRoute, checkForUpdateHandler);
  documented(app, getFeedRoute, getFeedHandler);
  for (const alias of feedAliases) documented(app, alias.route, alias.handler);
  documented(app, downloadArtifactRoute, downloadResponse);
}
