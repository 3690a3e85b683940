/**
 * The feeds of the other desktop updaters (CONTRACT section 9): Tauri (dynamic server and static JSON), Electron's
 * built-in autoUpdater on macOS (Squirrel.Mac) and Sparkle's appcast. Each is the same release, gate and release
 * control as the electron-builder feed: the caller comes from the user key (header or `userKey`) or a license's feed
 * token (`?feed=`, credential.ts), the release from feedRelease (delivery/formats/electron-builder.ts, THE selection) over the releases that have an
 * artifact the format installs, download URLs from downloadFor (tokenised for a licensed caller of a gated release),
 * and anonymous answers go through the same edge cache and answer memo (routes/updates/updates.ts throughCache), keyed by
 * everything they depend on (path, channel, platform, running version, release generation and the answer's origin).
 * What each format looks like is in formats/.
 */
import { createRoute, z } from "@hono/zod-openapi";
import type { Context, Handler } from "hono";
import { access } from "../../auth/guard";
import { clock } from "../../kernel/clock";
import type { AppEnv } from "../../http/app-env";
import { serviceContext } from "../../http/context";
import { type Router, documented } from "../../http/router";
import { TraceAction } from "../../records/vocabulary";
import { effectivePercentage } from "../../delivery/admission";
import { CURRENT_VERSION_HEADER, INSTALL_ID_HEADER, USER_KEY_HEADER, licenseOf } from "../../delivery/caller";
import type { Offerable, Platform, ProductRow, ReleaseWithFiles } from "../../delivery/catalog";
import { FEED_TOKEN_QUERY } from "../../delivery/credential";
import { type Asking, type FeedInput, type Selection, feedRelease, newerOffer } from "../../delivery/selection";
import {
  SQUIRREL_MAC_FILES,
  SQUIRREL_MAC_PLATFORMS,
  squirrelMacFile,
  squirrelMacPlatform,
  squirrelMacUpdate,
} from "../../delivery/formats/squirrel-mac";
import {
  SPARKLE_FILES,
  SPARKLE_PLATFORMS,
  appcastXml,
  criticalBelow,
  sparkleFile,
  sparklePlatform,
} from "../../delivery/formats/sparkle";
import {
  TAURI_ARCHES,
  TAURI_FILES,
  TAURI_KEY_OF,
  TAURI_TARGETS,
  tauriFile,
  tauriPlatform,
  tauriStatic,
  tauriUpdate,
} from "../../delivery/formats/tauri";
import { type UpdateReason, withReason } from "../../delivery/reasons";
import { downloadFor } from "../../delivery/update-check";
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
} from "./poll";
import { callerAndReleases, requireChannel, requireProduct, requireVersion } from "../../delivery/poll";
import { notModifiedFor, taggedFeed } from "../../http/conditionals";
import { compareVersions } from "../../records/versions";

/**
 * How a format carries a rollout the server does not decide (an anonymous caller without an install id):
 * `percentage` (electron-builder's stagingPercentage), `phased` (Sparkle phases any share above 0 % in by itself), or
 * `none` (Tauri, Squirrel.Mac: such a caller is offered a release only once it is rolled out to everyone).
 */
export type ClientStaging = "percentage" | "phased" | "none";

export interface FormatRequest {
  product: ProductRow;
  platform: Platform;
  channel: string;
  /** The artifacts the format installs (catalog.ts Offerable). */
  offerable: Offerable;
  staging: ClientStaging;
  /** The version the caller runs, when the format's URL says it. */
  version?: string | undefined;
}

/**
 * The releases a format may offer a caller the server cannot place in a cohort (no license, no install id): those
 * rolled out as far as the format can carry (ClientStaging), and the one the caller runs (its rollback stays known).
 */
function carriedRollouts(
  asking: Asking & { releases: ReleaseWithFiles[] },
  staging: ClientStaging,
): ReleaseWithFiles[] {
  if (staging === "percentage" || asking.installId !== undefined || asking.caller.kind === "licensed")
    return asking.releases;
  const now = clock.now().getTime();
  return asking.releases.filter((r) => {
    if (r.release.version === asking.currentVersion) return true;
    const percentage = effectivePercentage(r.release, now);
    return percentage === undefined || (staging === "none" ? percentage >= 100 : percentage > 0);
  });
}

/**
 * The release a format offers the caller: who asks (askingFor: the credential, install id, running version,
 * audiences), the releases with an artifact the format installs, and feedRelease's selection over them. Traces the
 * poll for a license that traces. Every issue-27 format picks its release here.
 */
export async function formatOffer(
  c: Context<AppEnv>,
  request: FormatRequest,
  asked?: Asking & { releases: ReleaseWithFiles[] },
): Promise<{ input: FeedInput; selection: Selection }> {
  const { product, platform, channel, offerable, version } = request;
  const asking =
    asked ?? (await askingFor(c, product, platform, channel, { offerable, ...(version ? { version } : {}) }));
  const input: FeedInput = {
    ...asking,
    releases: carriedRollouts(asking, request.staging),
    platform,
    downloadUrl: downloadUrlBuilder(c, product, platform),
  };
  const selection = await feedRelease(serviceContext(c), input);
  if (!asked) traceFor(c, licenseOf(asking.caller), TraceAction.UpdateCheck, version);
  return { input, selection };
}

/**
 * A format's answer through the caches: shared (edge cache, answer memo, front door) when the request names no
 * credential, install id or running-version header, `private, no-store` otherwise; 304 for a matching If-None-Match.
 */
export async function formatAnswer(
  c: Context<AppEnv>,
  product: ProductRow,
  key: string[],
  produce: () => Promise<Response>,
): Promise<Response> {
  const res = await throughCache(
    c,
    product,
    [product.code, String(product.releaseGeneration), ...key],
    sharedAnswer(c, await credentialFrom(c)),
    produce,
  );
  return notModifiedFor(c.req.header("if-none-match"), res);
}

/** 204 with why nothing is offered (reasons.ts). */
function noUpdate(reason: UpdateReason | undefined): Response {
  return withReason(new Response(null, { status: 204 }), reason);
}

const json = (body: unknown) => taggedFeed(JSON.stringify(body), "application/json; charset=utf-8");

// ---------------------------------------------------------------------------------------------------------------
// OpenAPI pieces

const feedQuery = z.object({
  channel: channelParam.optional().openapi({ description: "stable (default) or insider" }),
  userKey: userKeyQuery,
  [FEED_TOKEN_QUERY]: z
    .string()
    .max(128)
    .optional()
    .openapi({
      description: `A license's feed token (the license's \`feedToken\`), for updaters that cannot send ${USER_KEY_HEADER}.`,
    }),
});
const askingHeaders = z.object({
  [USER_KEY_HEADER.toLowerCase()]: z.string().max(128).optional().openapi({ description: "The caller's user key." }),
  [INSTALL_ID_HEADER.toLowerCase()]: z
    .string()
    .max(128)
    .optional()
    .openapi({ description: "The install's random id: its rollout cohort (CONTRACT section 8)." }),
});
const versionPath = z
  .string()
  .max(64)
  .openapi({ param: { name: "currentVersion", in: "path" }, description: "The version the app runs (SemVer)." });
const noUpdateResponse = {
  description: "No update for the caller. " + "X-Service-Reason says why.",
  headers: reasonHeader([...NOTHING_OFFERED, "nothingNewer"]),
};
const formatProblems = {
  ...problems,
  400: { ...problems[400], description: "A version that is not SemVer, an unknown channel or platform." },
  404: {
    ...problems[404],
    description: "Unknown product, or a target, arch or platform the format has no updates for.",
  },
};

const TauriUpdate = z
  .object({
    version: z.string(),
    notes: z.string(),
    pub_date: z.string().openapi({ description: "RFC 3339" }),
    url: z.string(),
    signature: z.string().openapi({ description: "The .sig file tauri build wrote (minisign, base64), untouched." }),
  })
  .openapi("TauriUpdate");
const TauriStatic = z
  .object({
    version: z.string(),
    notes: z.string(),
    pub_date: z.string(),
    platforms: z.record(z.string(), z.object({ url: z.string(), signature: z.string() })),
  })
  .openapi("TauriStaticManifest");
const SquirrelMacUpdate = z
  .object({ url: z.string(), name: z.string(), notes: z.string(), pub_date: z.string() })
  .openapi("SquirrelMacUpdate");

// ---------------------------------------------------------------------------------------------------------------
// Routes

const getTauriUpdateRoute = createRoute({
  method: "get",
  path: "/v1/updates/{productCode}/tauri/{target}/{arch}/{currentVersion}",
  tags: ["Updates"],
  operationId: "getTauriUpdate",
  summary: "Tauri updater (dynamic server): the update for a target, arch and running version, or 204",
  ...access.anonymous(),
  request: {
    params: z.object({
      productCode: productCodeParam,
      target: z.enum(TAURI_TARGETS).openapi({ param: { name: "target", in: "path" } }),
      arch: z.enum(TAURI_ARCHES).openapi({ param: { name: "arch", in: "path" } }),
      currentVersion: versionPath,
    }),
    query: feedQuery,
    headers: askingHeaders,
  },
  responses: {
    200: { description: "The update", content: { "application/json": { schema: TauriUpdate } } },
    204: noUpdateResponse,
    ...formatProblems,
  },
});

const getTauriUpdateHandler: Handler<AppEnv> = async (c) => {
  const platform = tauriPlatform(c.req.param("target") ?? "", c.req.param("arch") ?? "");
  const version = requireVersion(c.req.param("currentVersion"));
  const channel = requireChannel(c.req.query("channel"));
  const product = await requireProduct(serviceContext(c), c.req.param("productCode") ?? "");
  return formatAnswer(c, product, ["tauri", channel, platform, version], async () => {
    const request = { product, platform, channel, offerable: TAURI_FILES, staging: "none" as const, version };
    const { input, selection } = await formatOffer(c, request);
    const entry = newerOffer(selection, version);
    const file = entry && tauriFile(entry);
    if (!entry || !file) return noUpdate(selection.reason ?? "nothingNewer");
    const { url } = await downloadFor(serviceContext(c), input, entry, file);
    return withReason(await json(tauriUpdate(entry, file, url)), selection.reason);
  });
};

const getTauriStaticManifestRoute = createRoute({
  method: "get",
  path: "/v1/updates/{productCode}/tauri.json",
  tags: ["Updates"],
  operationId: "getTauriStaticManifest",
  summary: "Tauri updater (static JSON): the newest release and the platforms it is offered on",
  description:
    "One version for every platform: the newest release offered on any platform, listed under each platform " +
    "whose offer is that release. Per-platform rollouts and entitlements are the dynamic route's; an install's crash-loop " +
    "rollback (X-Service-Install-Id) is named here too, as the version Tauri installs only when the app allows downgrades.",
  ...access.anonymous(),
  request: { params: z.object({ productCode: productCodeParam }), query: feedQuery, headers: askingHeaders },
  responses: {
    200: { description: "The manifest", content: { "application/json": { schema: TauriStatic } } },
    204: noUpdateResponse,
    ...formatProblems,
  },
});

const getTauriStaticManifestHandler: Handler<AppEnv> = async (c) => {
  const ctx = serviceContext(c);
  const channel = requireChannel(c.req.query("channel"));
  const product = await requireProduct(ctx, c.req.param("productCode") ?? "");
  return formatAnswer(c, product, ["tauri.json", channel], async () => {
    const platforms = Object.keys(TAURI_KEY_OF) as Platform[];
    // The caller once (one statement for a licensed one); the other platforms' releases beside it.
    const first = await askingFor(c, product, platforms[0]!, channel, { offerable: TAURI_FILES });
    const offers = await Promise.all(
      platforms.map(async (platform, i) => {
        const asked =
          i === 0
            ? first
            : {
                ...first,
                releases: (await callerAndReleases(ctx, product, undefined, platform, channel, TAURI_FILES)).releases,
              };
        const request = { product, platform, channel, offerable: TAURI_FILES, staging: "none" as const };
        const { input, selection } = await formatOffer(c, request, asked);
        const file = selection.entry && tauriFile(selection.entry);
        return { platform, input, selection, file };
      }),
    );
    traceFor(c, licenseOf(first.caller), TraceAction.UpdateCheck);
    let newest: ReleaseWithFiles | undefined;
    for (const o of offers)
      if (
        o.selection.entry &&
        o.file &&
        (!newest || compareVersions(o.selection.entry.release.version, newest.release.version) > 0)
      )
        newest = o.selection.entry;
    if (!newest) return noUpdate(offers[0]?.selection.reason ?? "noRelease");
    const listed = await Promise.all(
      offers
        .filter((o) => o.file && o.selection.entry?.release.id === newest.release.id)
        .map(async (o) => ({
          platform: o.platform,
          file: o.file!,
          url: (await downloadFor(ctx, o.input, newest, o.file!)).url,
        })),
    );
    // One reason for the answer: why the first platform left out is (a platform without any release says least).
    const left = offers.filter((o) => !listed.some((l) => l.platform === o.platform) && o.selection.reason);
    const reason = (left.find((o) => o.selection.reason !== "noRelease") ?? left[0])?.selection.reason;
    return withReason(await json(tauriStatic(newest, listed)), reason ?? offers[0]?.selection.reason);
  });
};

const getSquirrelMacUpdateRoute = createRoute({
  method: "get",
  path: "/v1/updates/{productCode}/squirrel-mac/{platform}/{currentVersion}",
  tags: ["Updates"],
  operationId: "getSquirrelMacUpdate",
  summary: "Electron's autoUpdater on macOS (Squirrel.Mac): the update's zip for a running version, or 204",
  ...access.anonymous(),
  request: {
    params: z.object({
      productCode: productCodeParam,
      platform: z.enum(SQUIRREL_MAC_PLATFORMS as [string, ...string[]]).openapi({
        param: { name: "platform", in: "path" },
        description: "darwin-arm64 or darwin-x64 (and aliases)",
      }),
      currentVersion: versionPath,
    }),
    query: feedQuery,
    headers: askingHeaders,
  },
  responses: {
    200: { description: "The update", content: { "application/json": { schema: SquirrelMacUpdate } } },
    204: noUpdateResponse,
    ...formatProblems,
  },
});

const getSquirrelMacUpdateHandler: Handler<AppEnv> = async (c) => {
  const platform = squirrelMacPlatform(c.req.param("platform") ?? "");
  const version = requireVersion(c.req.param("currentVersion"));
  const channel = requireChannel(c.req.query("channel"));
  const product = await requireProduct(serviceContext(c), c.req.param("productCode") ?? "");
  return formatAnswer(c, product, ["squirrel-mac", channel, platform, version], async () => {
    const request = {
      product,
      platform,
      channel,
      offerable: SQUIRREL_MAC_FILES,
      staging: "none" as const,
      version,
    };
    const { input, selection } = await formatOffer(c, request);
    const entry = newerOffer(selection, version);
    const file = entry && squirrelMacFile(entry);
    if (!entry || !file) return noUpdate(selection.reason ?? "nothingNewer");
    const { url } = await downloadFor(serviceContext(c), input, entry, file);
    return withReason(await json(squirrelMacUpdate(entry, url)), selection.reason);
  });
};

const getSparkleAppcastRoute = createRoute({
  method: "get",
  path: "/v1/updates/{productCode}/appcast.xml",
  tags: ["Updates"],
  operationId: "getSparkleAppcast",
  summary: "Sparkle appcast: RSS 2.0 with the release the caller is offered (an empty channel: no update)",
  ...access.anonymous(),
  request: {
    params: z.object({ productCode: productCodeParam }),
    query: feedQuery.extend({
      platform: z.enum(SPARKLE_PLATFORMS).optional().openapi({ description: "darwin-arm64 (default) or darwin-x64" }),
    }),
    headers: askingHeaders.extend({
      [CURRENT_VERSION_HEADER.toLowerCase()]: z
        .string()
        .max(64)
        .optional()
        .openapi({ description: "The version the app runs (rollback, required versions)." }),
    }),
  },
  responses: {
    200: { description: "The appcast", content: { "application/xml": { schema: z.string() } } },
    ...formatProblems,
  },
});

const getSparkleAppcastHandler: Handler<AppEnv> = async (c) => {
  const platform = sparklePlatform(c.req.query("platform"));
  const channel = requireChannel(c.req.query("channel"));
  const product = await requireProduct(serviceContext(c), c.req.param("productCode") ?? "");
  return formatAnswer(c, product, ["appcast", channel, platform], async () => {
    const request = { product, platform, channel, offerable: SPARKLE_FILES, staging: "phased" as const };
    const { input, selection } = await formatOffer(c, request);
    const entry = selection.entry;
    const file = entry && sparkleFile(entry);
    let item;
    if (entry && file) {
      const { url } = await downloadFor(serviceContext(c), input, entry, file);
      item = {
        entry,
        file,
        url,
        channel,
        staged: selection.staged,
        criticalBelow: criticalBelow(entry, selection.admitted, product.minimumVersion),
        minimumVersion: product.minimumVersion,
        admitted: selection.admitted,
      };
    }
    const xml = appcastXml(product, channel, item);
    return withReason(await taggedFeed(xml, "application/xml; charset=utf-8"), selection.reason);
  });
};

export function registerFormatRoutes(app: Router): void {
  documented(app, getTauriUpdateRoute, getTauriUpdateHandler);
  documented(app, getTauriStaticManifestRoute, getTauriStaticManifestHandler);
  documented(app, getSquirrelMacUpdateRoute, getSquirrelMacUpdateHandler);
  documented(app, getSparkleAppcastRoute, getSparkleAppcastHandler);
}
