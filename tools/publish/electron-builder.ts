/**
 * An electron-builder custom publisher, so `electron-builder --publish always` uploads to the licensing service.
 * electron-builder loads `electron-publisher-<provider>` from the build resources directory (or node_modules) and
 * calls `new Publisher(context, publishConfig)`, then `upload({ file, arch })` for every artifact and update-info
 * file as it is built. In the app:
 *
 *   // build/electron-publisher-licensing.js
 *   module.exports = require("@licensing/publish/electron-builder");
 *
 *   # electron-builder.yml
 *   publish:
 *     provider: licensing
 *     url: https://licensing.example.com    # or LICENSING_URL
 *     product: studio
 *     channel: insider                      # optional: default from the version (see below)
 *     public: true                          # optional: make the release public after each upload
 *     ca: build/licensing-ca.pem            # optional: also trust this certificate (PEM), e.g. a self-signed one
 *     insecure: false                       # optional: allow http:// to a host other than this machine
 *     windowsPublisherNames:                # optional: the product's signing identities, set on it before the
 *       - Studio Software Ltd               #   first upload when it has others (win.signtoolOptions.publisherName)
 *     macTeamIds: [7Z6EMTD2C6]              # optional: Apple Team IDs (codesign -dv: TeamIdentifier=)
 *     tauriPublicKey: build/updater.key.pub # optional: a Tauri build's pubkey of the same product, or its file
 *
 * with the API key in LICENSING_API_KEY. The signing identities (identities.ts) are checked before anything is
 * built; the service then refuses an upload signed by another (CONTRACT section 15). The channel follows
 * electron-builder's: `checkAndResolveOptions` gives an unset `publish.channel` the version's prerelease identifier
 * (`2.1.0-beta.1` -> beta, as electron-builder's channel detection does for its own providers), so electron-builder
 * writes `beta*.yml`, and the release goes on the service channel it maps to (dist.ts: UPDATE_CHANNELS: latest ->
 * stable, beta and alpha -> insider; an unknown one such as `rc` is refused: set publish.channel to stable or
 * insider). There is no "all uploaded" call, so each upload links the file into a staging folder and publishes that
 * folder with tools/publish (which skips what is already there): the release is created by the first upload, and an
 * artifact is classified like the CLI does, by the update-info file once electron-builder has written it and by its
 * name before that. Uploads of one publisher run one after another.
 */
import { mkdtempSync, readFileSync, symlinkSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join, resolve } from "node:path";
import { serviceUrl } from "./api.ts";
import { type Channel, serviceChannel } from "./dist.ts";
import { type SigningIdentities, checkIdentities, givesIdentities } from "./identities.ts";
import { type PublishResult, publish } from "./publish.ts";

/** The `publish` entry of electron-builder's configuration for this provider. */
export interface LicensingPublishConfig {
  provider: string;
  /** The service's address; default LICENSING_URL. */
  url?: string;
  /** The product's code. */
  product: string;
  /** electron-builder's channel (latest, beta, alpha) or the service's (stable, insider); default latest. */
  channel?: string;
  /** The release's version; default the app's package.json version (what electron-builder builds). */
  version?: string;
  /** Make the release public after each upload. */
  public?: boolean;
  /** A PEM file of certificates to trust besides Node's default authorities (relative to the project). */
  ca?: string;
  /** Allow plain http:// to a host other than this machine: the API key crosses the network unencrypted. */
  insecure?: boolean;
  /** The subject common names of the Authenticode certificates (the product's windowsPublisherNames). */
  windowsPublisherNames?: string[];
  /** The Apple Team IDs macOS builds are signed by (the product's macTeamIds). */
  macTeamIds?: string[];
  /** tauri.conf.json's pubkey, or a file holding it (relative to the project): the product's tauriPublicKey. */
  tauriPublicKey?: string;
}

/** What electron-builder passes to `upload`. */
export interface UploadTask {
  file: string;
  arch?: unknown;
}

/** electron-builder's publish context: its progress bars and cancellation (unused: tools/publish reports itself). */
export interface PublishContext {
  readonly cancellationToken?: unknown;
  readonly progress?: unknown;
}

export default class LicensingPublisher {
  readonly providerName = "licensing";
  readonly #config: LicensingPublishConfig & { url: string; version: string; serviceChannel: Channel };
  readonly #apiKey: string;
  readonly #ca: string | undefined;
  readonly #identities: SigningIdentities | undefined;
  readonly #staging = mkdtempSync(join(tmpdir(), "licensing-publish-"));
  #queue: Promise<unknown> = Promise.resolve();

  /**
   * Called by electron-builder on the resolved `publish` entry before anything is built, with the version's
   * prerelease identifier when channel detection is on (`detectUpdateChannel`, the default): an unset channel
   * becomes it, as electron-builder's S3 and generic providers do, so update-info files are named after it.
   */
  static checkAndResolveOptions(options: LicensingPublishConfig, channelFromAppVersion: string | null): Promise<void> {
    if (options.channel == null && channelFromAppVersion != null) options.channel = channelFromAppVersion;
    return Promise.resolve();
  }

  constructor(_context: PublishContext, config: LicensingPublishConfig) {
    const url = config.url ?? process.env["LICENSING_URL"];
    if (!url)
      throw new Error("licensing publisher: set publish.url or LICENSING_URL to the licensing service's address");
    if (!config.product) throw new Error("licensing publisher: set publish.product to the product's code");
    const apiKey = process.env["LICENSING_API_KEY"];
    if (!apiKey)
      throw new Error("licensing publisher: set LICENSING_API_KEY to an API key of an Administrator or LicenseManager");
    const version =
      config.version ?? (JSON.parse(readFileSync(resolve("package.json"), "utf8")) as { version?: string }).version;
    if (!version) throw new Error("licensing publisher: no version (set publish.version, or version in package.json)");
    const channel = serviceChannel(config.channel ?? "latest");
    if (!channel)
      throw new Error(
        `licensing publisher: channel '${config.channel}' (of version ${version}) has no channel on the service (latest -> stable, beta and alpha -> insider); set publish.channel to stable or insider`,
      );
    // Checked here, before electron-builder builds anything: an address the key must not be sent to.
    serviceUrl(url, config.insecure === true, { url: "publish.url", insecure: "set publish.insecure: true" });
    this.#ca = config.ca === undefined ? undefined : readFileSync(resolve(config.ca), "utf8");
    try {
      const { windowsPublisherNames, macTeamIds, tauriPublicKey } = config;
      this.#identities = checkIdentities({ windowsPublisherNames, macTeamIds, tauriPublicKey });
    } catch (e) {
      throw new Error(`licensing publisher: publish.${e instanceof Error ? e.message : String(e)}`);
    }
    this.#config = { ...config, url, version, serviceChannel: channel };
    this.#apiKey = apiKey;
  }

  /** Publishes the staging folder with this file added; resolves when the service holds it. */
  upload(task: UploadTask): Promise<PublishResult> {
    const run = async () => {
      const target = join(this.#staging, basename(task.file));
      if (!existsSync(target)) symlinkSync(resolve(task.file), target);
      // Update-info files alone are not artifacts: nothing to send until an installer, zip or blockmap is there.
      return publish({
        product: this.#config.product,
        version: this.#config.version,
        channel: this.#config.serviceChannel,
        dir: this.#staging,
        // The staging folder holds whatever electron-builder uploads, read as its own output (update-info files).
        format: "electron-builder",
        url: this.#config.url,
        apiKey: this.#apiKey,
        makePublic: this.#config.public === true,
        ...(givesIdentities(this.#identities) ? { identities: this.#identities } : {}),
        insecure: this.#config.insecure === true,
        ca: this.#ca,
        trustHint: "set publish.ca to the certificate file (PEM) or set NODE_EXTRA_CA_CERTS",
        log: (line) => console.log(`  • licensing: ${line.trim()}`),
      }).catch((e: unknown) => {
        if (e instanceof Error && /holds no installer, zip or blockmap/.test(e.message))
          return { releaseId: 0, created: false, uploaded: [], replaced: [], unchanged: [], resigned: [] };
        throw e;
      });
    };
    const next = this.#queue.then(run, run);
    this.#queue = next.catch(() => undefined);
    return next;
  }

  toString(): string {
    return `Licensing service (product: ${this.#config.product}, url: ${this.#config.url})`;
  }
}
