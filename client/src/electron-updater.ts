/**
 * `@licensing/client/electron-updater`: points electron-updater's `autoUpdater` at the licensing service: the
 * generic provider on the canonical feed directory `/v1/updates/{product}/feed/{channel}/{platform}/`, and the
 * license's user key as the `X-Service-User-Key` request header, so maintenance- and edition-gated releases reach
 * licensed installations and their downloads carry a token; the install's id (`X-Service-Install-Id`) and running
 * version (`X-Service-Current-Version`), so the service decides rollouts, halts and rollbacks per install. The signed
 * update check ({@link signedUpdateCheck}) says whether an update is `required` and whether it is a `rollback`, and
 * only a signed rollback turns on `allowDowngrade`. electron-updater is a peer dependency: this module only
 * configures the instance the application passes in.
 */
import type { RollbackReason, UpdateCheckData, UpdateCheckRequest, VerifiedUpdateCheck } from "./types.js";

/** The part of electron-updater's AppUpdater this helper reads and sets. */
export interface ConfigurableUpdater {
  setFeedURL(options: { provider: "generic"; url: string; channel?: string | null }): void;
  // electron-updater types it as Node's OutgoingHttpHeaders.
  requestHeaders: Record<string, string | number | string[] | undefined> | null;
  /** Whether an older version may be installed: set only for a signed rollback. */
  allowDowngrade: boolean;
  /** The running app's version (electron-updater's SemVer of `app.getVersion()`). */
  readonly currentVersion?: { readonly version: string };
}

/** The request headers this helper owns on the updater (others the application set are kept). */
const HEADERS = ["X-Service-User-Key", "X-Service-Install-Id", "X-Service-Current-Version"] as const;

/** The service's platforms (CONTRACT's `win-x64`, `darwin-arm64`, …). */
export type UpdatePlatform = "win-x64" | "win-arm64" | "darwin-arm64" | "darwin-x64" | "linux-x64" | "linux-arm64";

export interface AutoUpdaterOptions {
  /** The service's address, e.g. `https://licensing.example.com`. */
  baseUrl: string;
  /** The product's code. */
  productCode: string;
  /** The license's user key; without it the feed offers only releases open to everyone. */
  userKey?: string;
  /** `stable` (default) or `insider`. */
  channel?: "stable" | "insider";
  /** The platform whose builds to install; default this process's (see {@link currentPlatform}). */
  platform?: UpdatePlatform;
  /**
   * An Intel build running on Apple Silicon under Rosetta (Electron's `app.runningUnderARM64Translation`): move it
   * to the native darwin-arm64 build. Ignored elsewhere.
   */
  runningUnderARM64Translation?: boolean;
  /**
   * This installation's random id, kept across runs (`installId(app.getPath("userData"))` from
   * `@licensing/client/node`): sent as `X-Service-Install-Id`, it places the install in a release's rollout, the same
   * on every poll. Without it a licensed install is admitted by its license (every install of a license alike) and
   * an anonymous one by electron-updater's own staging id.
   */
  installId?: string;
  /**
   * The running version, sent as `X-Service-Current-Version` (the feed rolls back installs running a halted
   * release by it); default the updater's `currentVersion` (the app's version).
   */
  currentVersion?: string;
}

/** The service's platform for an operating system and CPU (`process.platform`, `process.arch`). */
export function currentPlatform(os?: string, arch?: string, runningUnderARM64Translation = false): UpdatePlatform {
  const proc = (globalThis as { process?: { platform?: string; arch?: string } }).process;
  const platform = os ?? proc?.platform;
  const cpu = arch ?? proc?.arch;
  const family =
    platform === "win32" ? "win" : platform === "darwin" ? "darwin" : platform === "linux" ? "linux" : undefined;
  if (!family)
    throw new TypeError(`No update platform for ${String(platform)}: the service serves win, darwin and linux builds`);
  if (cpu !== "x64" && cpu !== "arm64")
    throw new TypeError(`No update platform for ${String(platform)} ${String(cpu)}: only x64 and arm64 builds`);
  return `${family}-${family === "darwin" && runningUnderARM64Translation ? "arm64" : cpu}` as UpdatePlatform;
}

/** The feed directory electron-updater's generic provider reads (it appends `latest.yml`, `latest-mac.yml`, …). */
export function feedUrl(
  options: Pick<
    AutoUpdaterOptions,
    "baseUrl" | "productCode" | "channel" | "platform" | "runningUnderARM64Translation"
  >,
): string {
  const base = new URL(options.baseUrl).href.replace(/\/+$/, "");
  const platform = options.platform ?? currentPlatform(undefined, undefined, options.runningUnderARM64Translation);
  return `${base}/v1/updates/${encodeURIComponent(options.productCode)}/feed/${options.channel ?? "stable"}/${platform}/`;
}

/** The version the install runs: the option, else the updater's. */
function runningVersion(updater: ConfigurableUpdater, options: AutoUpdaterOptions): string | undefined {
  return options.currentVersion ?? updater.currentVersion?.version;
}

/**
 * Configures an electron-updater `autoUpdater` (or any AppUpdater) for the service: the feed URL and the headers
 * (user key, install id, running version), and `allowDowngrade` off until a signed update check says rollback (set
 * `autoUpdater.channel` before calling it: electron-updater turns `allowDowngrade` on when the channel is set). Call
 * it again after the user enters or changes the license key. Returns the feed URL it set.
 */
export function configureAutoUpdater(updater: ConfigurableUpdater, options: AutoUpdaterOptions): string {
  const url = feedUrl(options);
  updater.setFeedURL({ provider: "generic", url });
  const headers = { ...(updater.requestHeaders ?? {}) };
  for (const name of HEADERS) delete headers[name];
  if (options.userKey) headers["X-Service-User-Key"] = options.userKey;
  if (options.installId) headers["X-Service-Install-Id"] = options.installId;
  const version = runningVersion(updater, options);
  if (version) headers["X-Service-Current-Version"] = version;
  updater.requestHeaders = headers;
  updater.allowDowngrade = false;
  return url;
}

/** What the service decided for this install, from its signed update check. */
export interface UpdateDecision {
  /** The verified update-check data. */
  data: UpdateCheckData;
  /** The install must update (below the product's minimum version, or a newer critical release): force it. */
  required: boolean;
  /**
   * The install is to go back to the previous release (its release is halted and rolled back, or it crashes on start):
   * the feed offers that release and `allowDowngrade` is now on, so electron-updater downloads and installs it.
   */
  rollback: boolean;
  /**
   * Why, with `rollback`: `halted` (the release is halted and rolled back for everyone) or `crashLoop` (this install's
   * last sessions of its version all crashed soon after starting: it alone goes back).
   */
  rollbackReason?: RollbackReason;
}

/** The part of `LicensingClient` {@link signedUpdateCheck} uses. */
export interface UpdateChecker {
  checkForUpdate(request: UpdateCheckRequest): Promise<VerifiedUpdateCheck>;
}

/**
 * Asks the service's signed update check (`client.checkForUpdate`, signature verified) what this install should do,
 * with the same install id, user key, channel and platform as the feed {@link configureAutoUpdater} set, and sets
 * `updater.allowDowngrade` to whether the answer is a rollback with a download: the one case electron-updater may
 * install an older version, and only because the service signed it. Then run `autoUpdater.checkForUpdates()` as
 * usual; when `required`, download and install without asking (`downloadUpdate()`, then `quitAndInstall()`).
 */
export async function signedUpdateCheck(
  updater: ConfigurableUpdater,
  client: UpdateChecker,
  options: AutoUpdaterOptions,
): Promise<UpdateDecision> {
  const version = runningVersion(updater, options);
  if (!version) throw new TypeError("signedUpdateCheck: pass currentVersion (the updater has none)");
  const request: UpdateCheckRequest = {
    productCode: options.productCode,
    platform: options.platform ?? currentPlatform(undefined, undefined, options.runningUnderARM64Translation),
    version,
    channel: options.channel ?? "stable",
  };
  if (options.userKey) request.userKey = options.userKey;
  if (options.installId) request.installId = options.installId;
  const { data } = await client.checkForUpdate(request);
  const rollback = data.rollback && data.download !== undefined;
  updater.allowDowngrade = rollback;
  return {
    data,
    required: data.required,
    rollback,
    ...(rollback && data.rollbackReason ? { rollbackReason: data.rollbackReason } : {}),
  };
}
