// The example's Electron main process: activation on first start, offline starts after it, a validation now and
// then, and updates from the licensing service. The licensing itself is in licensing.js (no Electron there).
const { join } = require("node:path");
const { BrowserWindow, app, dialog, ipcMain } = require("electron");
const { autoUpdater } = require("electron-updater");
const { createLicensing } = require("./licensing");

const DAY = 24 * 60 * 60 * 1000;
let licensing;
let window;

async function checkForUpdates() {
  // The feed directory of this build's channel and platform, with the user key, this install's id and version as
  // headers; then the signed update check: a rollback allows the downgrade, a required update installs at once.
  const { required, rollback } = await licensing
    .decideUpdates(autoUpdater, { runningUnderARM64Translation: app.runningUnderARM64Translation })
    .catch((e) => {
      console.warn("signed update check failed:", e.message); // downgrades stay off; the feed still updates forward
      return { required: false, rollback: false };
    });
  if (!required && !rollback) return autoUpdater.checkForUpdatesAndNotify();
  const check = await autoUpdater.checkForUpdates(); // autoDownload: it downloads at once
  if (check?.isUpdateAvailable) {
    await check.downloadPromise;
    autoUpdater.quitAndInstall();
  }
}

function open(page) {
  window ??= new BrowserWindow({
    width: 520,
    height: 360,
    webPreferences: { preload: join(__dirname, "preload.js"), contextIsolation: true, sandbox: true },
  });
  window.on("closed", () => {
    window = undefined;
  });
  window.loadFile(join(__dirname, page));
}

ipcMain.handle("activate", async (_event, userKey) => {
  try {
    await licensing.activate(String(userKey).trim());
  } catch (e) {
    return { ok: false, reason: e.reason ?? "network", message: e.message };
  }
  open("app.html");
  checkForUpdates();
  return { ok: true };
});

autoUpdater.on("error", (error) => console.warn("update check failed:", error.message));

app.whenReady().then(async () => {
  licensing = createLicensing({
    dataDir: app.getPath("userData"),
    appName: app.getName(),
    appVersion: app.getVersion(),
  });
  if (!(await licensing.licensed())) {
    open("activate.html");
    return;
  }
  open("app.html");
  checkForUpdates();
  const refresh = async () => {
    const state = await licensing.refresh().catch((e) => {
      console.warn("validation failed:", e.message);
      return "offline";
    });
    if (state === "dropped") {
      await dialog.showMessageBox({ message: "This machine's license has ended. Enter a license key to continue." });
      open("activate.html");
    }
  };
  refresh();
  setInterval(refresh, DAY);
});

app.on("window-all-closed", () => app.quit());
