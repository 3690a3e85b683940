/**
 * The real electron-updater (NsisUpdater) in plain Node, without Electron: a Node HttpExecutor (as electron-updater's
 * own ElectronHttpExecutor, with Node's http instead of Electron's net) and an app adapter, on a Windows client
 * whatever machine runs the test. Shared by electron-updater.test.ts and example-electron.test.ts.
 */
import { writeFileSync } from "node:fs";
import http from "node:http";
import https from "node:https";
import { join } from "node:path";
import type { URL as NodeURL } from "node:url";
import { type DownloadOptions, HttpExecutor, configureRequestOptions, configureRequestUrl } from "builder-util-runtime";
import { NsisUpdater } from "electron-updater";
import type { AppAdapter } from "electron-updater/out/AppAdapter";

/** One request electron-updater made, with its Range header. */
export interface SeenRequest {
  path: string;
  range?: string;
}

/** electron-updater's executor, with Node's http; every request is recorded in `requests`. */
export class NodeHttpExecutor extends HttpExecutor<http.ClientRequest> {
  constructor(private readonly requests: SeenRequest[]) {
    super();
  }

  download(url: NodeURL, destination: string, options: DownloadOptions): Promise<string> {
    return new Promise((resolve, reject) => {
      const requestOptions: http.RequestOptions = { headers: options.headers ?? undefined };
      configureRequestUrl(url, requestOptions);
      configureRequestOptions(requestOptions);
      this.doDownload(
        requestOptions,
        {
          destination,
          options,
          onCancel: () => undefined,
          callback: (error: Error | null) => (error ? reject(error) : resolve(destination)),
          responseHandler: null,
        },
        0,
      );
    });
  }

  createRequest(options: http.RequestOptions, callback: (response: http.IncomingMessage) => void): http.ClientRequest {
    const headers = (options.headers ?? {}) as http.OutgoingHttpHeaders;
    const range = headers["Range"] ?? headers["range"];
    this.requests.push({ path: String(options.path), ...(range ? { range: String(range) } : {}) });
    return (options.protocol === "https:" ? https : http).request(options, callback);
  }
}

/**
 * An NsisUpdater of an installed app at `version`, caching in `cache`, on a Windows client, that does not download
 * or install on its own. Point it at a feed with setFeedURL (or the client library's configureAutoUpdater).
 */
export function nodeUpdater(version: string, cache: string, requests: SeenRequest[] = []): NsisUpdater {
  const config = join(cache, "app-update.yml");
  writeFileSync(config, "provider: generic\nurl: http://unused.invalid/\nupdaterCacheDirName: studio-updater\n");
  const app: AppAdapter = {
    version,
    name: "Studio",
    isPackaged: true,
    appUpdateConfigPath: config,
    userDataPath: cache,
    baseCachePath: cache,
    whenReady: () => Promise.resolve(),
    relaunch: () => undefined,
    quit: () => undefined,
    onQuit: () => undefined,
  };
  const u = new NsisUpdater(null, app);
  // A Windows client, on whatever machine runs the test: electron-updater's own tests set the platform this way.
  (u as unknown as { _testOnlyOptions: object })._testOnlyOptions = {
    platform: "win32",
    isUseDifferentialDownload: true,
  };
  (u as unknown as { httpExecutor: HttpExecutor<http.ClientRequest> }).httpExecutor = new NodeHttpExecutor(requests);
  u.autoDownload = false;
  u.autoInstallOnAppQuit = false;
  u.logger = null;
  return u;
}
