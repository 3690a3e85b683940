/**
 * `@licensing/client/electron-updater`: points electron-updater's `autoUpdater` at the licensing service: the
 * generic provider on the canonical feed directory `/v1/updates/{product}/feed/{channel}/{platform}/`, and the
 * license's user key as the `X-Service-User-Key` request header, so maintenance- and edition-gated releases reach
 * licensed installations and their downloads carry a token. electron-updater is a peer dependency: this module
 * only configures the instance the application passes in.
 */

/** The part of electron-updater's AppUpdater this helper sets. */
export interface ConfigurableUpdater {
  setFeedURL(options: { provider: "generic"; url: string; channel?: string | null }): void;
  // electron-updater types it as Node's OutgoingHttpHeaders.
  requestHeaders: Record<string, string | number | string[] | undefined> | null;
}

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

/**
 * Configures an electron-updater `autoUpdater` (or any AppUpdater) for the service: the feed URL and the user-key
 * header. Call it again after the user enters or changes the license key. Returns the feed URL it set.
 */
export function configureAutoUpdater(updater: ConfigurableUpdater, options: AutoUpdaterOptions): string {
  const url = feedUrl(options);
  updater.setFeedURL({ provider: "generic", url });
  const headers = { ...(updater.requestHeaders ?? {}) };
  delete headers["X-Service-User-Key"];
  if (options.userKey) headers["X-Service-User-Key"] = options.userKey;
  updater.requestHeaders = headers;
  return url;
}
