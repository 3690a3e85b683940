/**
 * The package feeds' routes (CONTRACT section 9): Squirrel.Windows' folder `/v1/updates/{productCode}/squirrel-win/
 * {platform}/` (its `RELEASES` and the packages it names) and Velopack's folder `/v1/updates/{productCode}/velopack/
 * {platform}/` (`releases.{channel}.json` and the packages it names). The caller, the releases and THE selection are
 * the update routes' own (delivery/poll.ts callerAndReleases, delivery/selection.ts feedRelease): rollouts, halts, audiences,
 * maintenance and the platform rule apply as on every feed; delivery/formats/ (nupkg.ts, squirrel-windows.ts,
 * velopack.ts) writes the answers.
 *
 * A package requested by name from the folder (Velopack always does; Squirrel when RELEASES names it bare) is
 * answered with a redirect to the download route, with a download token exactly as the feeds make them when the
 * caller (user key or feed token) may install that release; the download route then applies its own rules.
 */
import { createRoute, z } from "@hono/zod-openapi";
import type { Context } from "hono";
import { sha256Hex } from "../../kernel/crypto";
import { ApiError } from "../../kernel/errors";
import { access } from "../../auth/guard";
import type { AppEnv } from "../../http/app-env";
import { type ServiceContext, serviceContext } from "../../http/context";
import { type Router, documented } from "../../http/router";
import { TraceAction } from "../../records/vocabulary";
import { INSTALL_ID_HEADER, installIdOf, licenseOf } from "../../delivery/caller";
import type { Credential } from "../../delivery/credential";
import {
  CHANNELS,
  type Platform,
  type ProductRow,
  type ReleaseWithFiles,
  coveredByMaintenance,
} from "../../delivery/catalog";
import { feedRelease } from "../../delivery/selection";
import { PACKAGE, packagePlan, planReason } from "../../delivery/formats/nupkg";
import { squirrelReleases } from "../../delivery/formats/squirrel-windows";
import { velopackChannel, velopackFeed } from "../../delivery/formats/velopack";
import { type UpdateReason, withReason } from "../../delivery/reasons";
import { downloadFor } from "../../delivery/update-check";
import {
  NOTHING_OFFERED,
  askingFor,
  credentialFrom,
  downloadUrlBuilder,
  problems,
  productCodeParam,
  reasonHeader,
  throughCache,
  traceFor,
  userKeyQuery,
} from "./poll";
import { notModifiedFor } from "../../http/conditionals";
import { requireChannel, requirePlatform, requireProduct, requireVersion } from "../../delivery/poll";

/**
 * Who asks and what it runs, as every update answer reads it (routes/updates/poll.ts askingFor), and THE selection; the
 * updater's `localVersion` is the version it runs, and Velopack's `stagingId` (its per-install staging id) is the
 * cohort id when no X-Service-Install-Id header names one.
 */
async function selectFor(
  c: Context<AppEnv>,
  ctx: ServiceContext,
  product: ProductRow,
  platform: Platform,
  channel: string,
  current: string | undefined,
  credential: Credential,
) {
  // Velopack's stagingId names the install when no header does: its rollout cohort and its crash loop (Velopack's
  // own clients send no headers).
  const asking = await askingFor(c, product, platform, channel, {
    offerable: PACKAGE,
    credential,
    installId: installIdOf(c.req.query("stagingId")),
    ...(current ? { version: current } : {}),
  });
  const selection = await feedRelease(ctx, { ...asking, platform });
  return { ...asking, selection };
}

/** The version an updater says it runs (`localVersion`), checked; undefined when it sends none (a fresh install). */
function localVersionOf(c: Context<AppEnv>): string | undefined {
  const value = c.req.query("localVersion");
  return value === undefined || value === "" ? undefined : requireVersion(value);
}

/** Whether an answer is the same for every caller asking this URL: no credential, no install id. */
function anonymousRequest(c: Context<AppEnv>, credential: Credential): boolean {
  return !credential && c.req.header(INSTALL_ID_HEADER) === undefined && c.req.query("stagingId") === undefined;
}

async function tagged(body: string, contentType: string): Promise<Response> {
  const etag = `"${(await sha256Hex(body)).slice(0, 32)}"`;
  return new Response(body, { status: 200, headers: { "Content-Type": contentType, ETag: etag } });
}

/**
 * A package of the folder, by file name: a redirect to the download route, tokenised when the caller may install its
 * release (its license is covered by maintenance, the selection admits the release: rollout, halt, audience and
 * platform as on every feed); bare otherwise (an ungated package downloads as it is; a gated one is refused there).
 */
async function packageRedirect(
  c: Context<AppEnv>,
  platform: Platform,
  fileName: string,
  credential: Credential,
): Promise<Response> {
  const ctx = serviceContext(c);
  if (!fileName.toLowerCase().endsWith(".nupkg")) throw new ApiError(404, `No file '${fileName}' in this folder`);
  const product = await requireProduct(ctx, c.req.param("productCode") ?? "");
  // The channel the URL names, else each: Velopack asks for a package by bare name, whichever feed named it.
  const asked = c.req.query("channel");
  const channels = asked !== undefined ? [requireChannel(asked)] : CHANNELS;
  let found: { entry: ReleaseWithFiles; file: ReleaseWithFiles["files"][number] } | undefined;
  let chosen: Awaited<ReturnType<typeof selectFor>> | undefined;
  for (const channel of channels) {
    chosen = await selectFor(c, ctx, product, platform, channel, undefined, credential);
    for (const entry of chosen.releases) {
      const file = entry.files.find((f) => (f.kind === "package" || f.kind === "delta") && f.fileName === fileName);
      if (file) found = { entry, file };
    }
    if (found) break;
  }
  if (!found || !chosen) throw new ApiError(404, `No package '${fileName}' for ${platform}`);
  const { caller, selection } = chosen;
  const license = licenseOf(caller);
  const mayInstall =
    license !== undefined &&
    selection.reason === undefined &&
    selection.admitted.includes(found.entry) &&
    coveredByMaintenance(license, found.entry.release);
  const url = downloadUrlBuilder(c, product, platform);
  const target = mayInstall
    ? (await downloadFor(ctx, { caller, downloadUrl: url }, found.entry, found.file)).url
    : url(found.entry, found.file);
  return new Response(null, {
    status: 302,
    headers: { Location: target, "Cache-Control": mayInstall ? "private, no-store" : "no-cache" },
  });
}

async function squirrelResponse(c: Context<AppEnv>): Promise<Response> {
  const ctx = serviceContext(c);
  const platform = requirePlatform(c.req.param("platform"));
  if (!platform.startsWith("win-"))
    throw new ApiError(404, `Squirrel.Windows serves Windows platforms (win-x64, win-arm64), not ${platform}`);
  const file = c.req.param("file") ?? "";
  const credential = await credentialFrom(c);
  if (file !== "RELEASES") return packageRedirect(c, platform, file, credential);
  const channel = requireChannel(c.req.query("channel"));
  const current = localVersionOf(c);
  const product = await requireProduct(ctx, c.req.param("productCode") ?? "");
  const res = await throughCache(
    c,
    product,
    [product.code, String(product.releaseGeneration), "squirrel-win", channel, platform, current ?? ""],
    anonymousRequest(c, credential),
    async () => {
      const { caller, releases, selection } = await selectFor(c, ctx, product, platform, channel, current, credential);
      const plan = packagePlan(releases, selection, current);
      traceFor(c, licenseOf(caller), TraceAction.UpdateCheck, current);
      const body = await squirrelReleases(ctx, { caller, downloadUrl: downloadUrlBuilder(c, product, platform) }, plan);
      return withReason(await tagged(body, "text/plain; charset=utf-8"), planReason(selection, plan, true));
    },
  );
  return notModifiedFor(c.req.header("if-none-match"), res);
}

/**
 * Velopack's folder. `pathToken` is a feed token given as a folder of the URL (`…/velopack/<platform>/feed/<token>/`):
 * Velopack's Rust core (its Node, Rust and C/C++ libraries) replaces the feed URL's query with its own and sends no
 * header, so a path segment is the one place a license can travel with every request it makes, the packages too.
 */
async function velopackResponse(c: Context<AppEnv>, pathToken?: string): Promise<Response> {
  const ctx = serviceContext(c);
  const platform = requirePlatform(c.req.param("platform"));
  const file = c.req.param("file") ?? "";
  const channel = velopackChannel(file, platform);
  const credential: Credential = pathToken !== undefined ? { feedToken: pathToken } : await credentialFrom(c);
  if (channel === undefined) return packageRedirect(c, platform, file, credential);
  const current = localVersionOf(c);
  const product = await requireProduct(ctx, c.req.param("productCode") ?? "");
  const res = await throughCache(
    c,
    product,
    [product.code, String(product.releaseGeneration), "velopack", channel, platform, current ?? ""],
    anonymousRequest(c, credential),
    async () => {
      const { caller, releases, selection } = await selectFor(c, ctx, product, platform, channel, current, credential);
      const plan = packagePlan(releases, selection, current);
      traceFor(c, licenseOf(caller), TraceAction.UpdateCheck, current);
      const body = JSON.stringify(velopackFeed(plan, product.code));
      return withReason(await tagged(body, "application/json; charset=utf-8"), planReason(selection, plan, false));
    },
  );
  return notModifiedFor(c.req.header("if-none-match"), res);
}

const OFFERED_OR_NOT: readonly UpdateReason[] = [...NOTHING_OFFERED, "nothingNewer"];

const localVersion = z
  .string()
  .max(64)
  .optional()
  .openapi({ description: "The version the updater runs (both updaters send it); it picks the delta chain." });
// Velopack's two folders (with and without the feed token in the path) answer alike: one declaration of each part.
const velopackDescription =
  "The feed folder of Velopack's HttpSource/SimpleWebSource. `releases.stable.json` or `releases.insider.json` (Velopack's default channel names of the platform's OS, `releases.win.json`, `releases.osx.json`, `releases.linux.json`, also with the architecture as in `releases.osx-arm64.json`, are stable) lists the full package of the release the caller is offered and, for a caller on an older release, the deltas from its version (when the chain is whole); `Assets` is empty when there is no update. A `.nupkg` name redirects to the download route, tokenised when the caller (user key header or feed token) may install it.";
const velopackPlatform = z
  .enum(["win-x64", "win-arm64", "darwin-arm64", "darwin-x64", "linux-x64", "linux-arm64"])
  .openapi({ param: { name: "platform", in: "path" } });
const velopackFile = z
  .string()
  .max(255)
  .openapi({
    param: { name: "file", in: "path" },
    description: "releases.{channel}.json, or the file name of a package it lists",
  });
const velopackQuery = z.object({
  localVersion,
  id: z.string().max(255).optional().openapi({ description: "Velopack's package id (sent, not needed)." }),
  stagingId: z
    .string()
    .max(128)
    .optional()
    .openapi({
      description: `Velopack's per-install staging id: the rollout cohort id when no ${INSTALL_ID_HEADER} header is sent.`,
    }),
  userKey: userKeyQuery,
  feed: z.string().max(256).optional().openapi({ description: "The license's feed token." }),
});
const velopackResponses = {
  200: {
    description:
      'Velopack\'s feed: `{"Assets":[{PackageId, Version, Type: "Full"|"Delta", FileName, SHA1, SHA256, Size, NotesMarkdown, NotesHtml}]}`. ' +
      "X-Service-Reason says why nothing newer is offered.",
    headers: reasonHeader(OFFERED_OR_NOT),
    content: { "application/json": { schema: z.object({ Assets: z.array(z.record(z.string(), z.unknown())) }) } },
  },
  302: { description: "A package: its download URL (tokenised when the caller may install it)" },
  ...problems,
};

const getSquirrelWindowsFileRoute = createRoute({
  method: "get",
  path: "/v1/updates/{productCode}/squirrel-win/{platform}/{file}",
  tags: ["Updates"],
  operationId: "getSquirrelWindowsFile",
  summary: "Squirrel.Windows: RELEASES (SHA1 URL size per package) or a package it names (redirect)",
  description:
    "The feed folder of Electron's built-in autoUpdater on Windows (Squirrel.Windows). `RELEASES` lists the full package of the release the caller is offered and, for a caller on an older release, the delta packages from its version (when the chain is whole); each URL is absolute, on the download route, with a download token for a licensed caller of a gated release. A `.nupkg` name redirects to the download route.",
  ...access.anonymous(),
  request: {
    params: z.object({
      productCode: productCodeParam,
      platform: z.enum(["win-x64", "win-arm64"]).openapi({ param: { name: "platform", in: "path" } }),
      file: z
        .string()
        .max(255)
        .openapi({
          param: { name: "file", in: "path" },
          description: "RELEASES, or the file name of a package it lists",
        }),
    }),
    query: z.object({
      localVersion,
      id: z.string().max(255).optional().openapi({ description: "Squirrel's package id (sent, not needed)." }),
      arch: z.string().max(16).optional().openapi({ description: "Squirrel's architecture (sent, not needed)." }),
      channel: z
        .enum(CHANNELS)
        .optional()
        .openapi({ description: "stable (default) or insider: part of the feed URL." }),
      userKey: userKeyQuery,
      feed: z.string().max(256).optional().openapi({ description: "The license's feed token." }),
    }),
  },
  responses: {
    200: {
      description:
        "RELEASES: one `SHA1 URL size` line per package. When nothing is offered, the caller's own full package (Squirrel then finds no update), or an empty body. " +
        "X-Service-Reason says why nothing newer is offered.",
      headers: reasonHeader(OFFERED_OR_NOT),
      content: { "text/plain": { schema: z.string() } },
    },
    302: { description: "A package: its download URL (tokenised when the caller may install it)" },
    ...problems,
  },
});

const getVelopackFileRoute = createRoute({
  method: "get",
  path: "/v1/updates/{productCode}/velopack/{platform}/{file}",
  tags: ["Updates"],
  operationId: "getVelopackFile",
  summary: "Velopack: releases.{channel}.json (full and delta assets) or a package it names (redirect)",
  description: velopackDescription,
  ...access.anonymous(),
  request: {
    params: z.object({
      productCode: productCodeParam,
      platform: velopackPlatform,
      file: velopackFile,
    }),
    query: velopackQuery,
  },
  responses: velopackResponses,
});

const getVelopackFileWithFeedTokenRoute = createRoute({
  method: "get",
  path: "/v1/updates/{productCode}/velopack/{platform}/feed/{feed}/{file}",
  tags: ["Updates"],
  operationId: "getVelopackFileWithFeedToken",
  summary:
    "Velopack, with the license's feed token as a folder of the URL (for Velopack's Rust core, which keeps no query)",
  description: velopackDescription,
  ...access.anonymous(),
  request: {
    params: z.object({
      productCode: productCodeParam,
      feed: z
        .string()
        .max(256)
        .openapi({
          param: { name: "feed", in: "path" },
          description: "The license's feed token (the same value as the `feed` query parameter of the other feeds).",
        }),
      platform: velopackPlatform,
      file: velopackFile,
    }),
    query: velopackQuery,
  },
  responses: velopackResponses,
});

export function registerPackageRoutes(app: Router): void {
  documented(app, getSquirrelWindowsFileRoute, squirrelResponse);
  documented(app, getVelopackFileRoute, (c) => velopackResponse(c));
  documented(app, getVelopackFileWithFeedTokenRoute, (c) => velopackResponse(c, c.req.param("feed") ?? ""));
}
