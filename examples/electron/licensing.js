// The example's licensing, without Electron: activation, the offline start, the periodic validation and the
// updater's configuration. main.js hands in what Electron knows (the data folder, the app's name and version, its
// autoUpdater); test/node/example-electron.test.ts runs this module as it is against the service.
const { mkdir, readFile, rm, writeFile } = require("node:fs/promises");
const { join } = require("node:path");
const {
  AuthenticationError,
  LicensingClient,
  LicensingError,
  NetworkError,
  verifyLicenseOffline,
} = require("@licensing/client");
const { installId, machineId } = require("@licensing/client/node");
const { configureAutoUpdater, signedUpdateCheck } = require("@licensing/client/electron-updater");

/** Where the service is and which product this app is. LICENSING_URL overrides the address while developing. */
const SERVICE = {
  baseUrl: process.env.LICENSING_URL || "https://licensing.example.com",
  productCode: "studio",
};

/** Answers that end this machine's license: its stored key must not outlive them. */
const FINAL = ["notActivated", "licenseRevoked", "licenseExpired"];

/**
 * The update channel of a build: a prerelease version (`2.1.0-beta.1`) follows `insider`, where the publisher puts
 * builds whose electron-builder channel is beta or alpha; a release version follows `stable`.
 */
function channelOf(version) {
  return /^\d+\.\d+\.\d+-/.test(version) ? "insider" : "stable";
}

/**
 * @param {{ dataDir: string, appName: string, appVersion: string, baseUrl?: string, productCode?: string }} options
 */
function createLicensing(options) {
  const baseUrl = options.baseUrl || SERVICE.baseUrl;
  const productCode = options.productCode || SERVICE.productCode;
  const file = join(options.dataDir, "license.json");
  let id;
  // 64 hex characters, salted per product: the raw OS id never leaves the machine.
  const machine = async () => {
    id ??= await machineId({ salt: productCode });
    return id;
  };

  async function load() {
    try {
      return JSON.parse(await readFile(file, "utf8"));
    } catch (e) {
      if (e.code === "ENOENT") return undefined;
      throw e;
    }
  }
  async function save(saved) {
    await mkdir(options.dataDir, { recursive: true });
    await writeFile(file, JSON.stringify(saved), { mode: 0o600 });
  }

  return {
    /** Activates this machine with the user key the user typed, and keeps the signed license key. */
    async activate(userKey) {
      const client = new LicensingClient({ baseUrl, userKey });
      const { license } = await client.activate({ machineId: await machine(), clientName: options.appName });
      await save({ userKey, licenseKey: license.licenseKey, keys: await client.getSigningKeys() });
      return license;
    },

    /** Whether this machine holds a valid license key: checked offline (signature, expiry, machine, product). */
    async licensed() {
      const saved = await load();
      if (!saved) return false;
      try {
        await verifyLicenseOffline(saved.licenseKey, saved.keys, { machineId: await machine(), productCode });
        return true;
      } catch {
        return false; // VerificationError: reason "expired", "machine", "product", "signature", …
      }
    },

    /**
     * Online now and then (at least once per key lifetime): a fresh key, `offline` when the service is out of
     * reach (the stored key keeps working until it expires), or `dropped` when the service says the license ended.
     */
    async refresh() {
      const saved = await load();
      if (!saved) return "dropped";
      // The install id: the service counts this install as running its version (a release's adoption) by it.
      const client = new LicensingClient({
        baseUrl,
        userKey: saved.userKey,
        installId: await installId(options.dataDir),
      });
      try {
        const nonce = crypto.randomUUID(); // the fresh key must echo it: an old answer replayed does not pass
        const { license } = await client.validate({ machineId: await machine(), nonce });
        const keys = await client.getSigningKeys();
        await verifyLicenseOffline(license.licenseKey, keys, { machineId: await machine(), productCode, nonce });
        await save({ ...saved, licenseKey: license.licenseKey, keys });
        return "valid";
      } catch (e) {
        if (e instanceof NetworkError) return "offline";
        // AuthenticationError: the user key is no longer accepted (the license was deleted).
        if (e instanceof AuthenticationError || (e instanceof LicensingError && FINAL.includes(e.reason))) {
          await rm(file, { force: true });
          return "dropped";
        }
        throw e;
      }
    },

    /**
     * Points electron-updater's autoUpdater at the service: this build's channel and platform, the license's user
     * key (releases under maintenance reach licensed installations only), this install's id (kept in the data
     * folder: the service's rollouts admit by it) and the running version. Call again after activation. Returns the
     * feed directory.
     */
    async configureUpdates(autoUpdater, extra = {}) {
      return configureAutoUpdater(autoUpdater, await updateOptions(extra));
    },

    /**
     * Configures the autoUpdater, then asks the signed update check what this install should do: `required` (below
     * the product's minimum version, or a critical release: install now) and `rollback` (the release it runs was
     * halted and rolled back; allowDowngrade is now on so electron-updater installs the previous one).
     */
    async decideUpdates(autoUpdater, extra = {}) {
      const settings = await updateOptions(extra);
      configureAutoUpdater(autoUpdater, settings);
      const client = new LicensingClient({ baseUrl, ...(settings.userKey ? { userKey: settings.userKey } : {}) });
      const { required, rollback } = await signedUpdateCheck(autoUpdater, client, settings);
      return { required, rollback };
    },
  };

  async function updateOptions(extra) {
    const saved = await load();
    return {
      baseUrl,
      productCode,
      channel: channelOf(options.appVersion),
      installId: await installId(options.dataDir),
      currentVersion: options.appVersion,
      ...(saved ? { userKey: saved.userKey } : {}),
      ...extra,
    };
  }
}

module.exports = { SERVICE, channelOf, createLicensing };
