#!/usr/bin/env node
// The browser tests' Chromium: Debian's `chromium` package at /usr/bin/chromium, driven by playwright-core
// (Playwright's own browser download is never used). When it is missing and we are root, install it with apt-get;
// otherwise, or when the install fails, say so plainly and exit non-zero, so the test run fails rather than skips.
// `npm test` runs it once before the Node-side tests, so the browser test files (which run in parallel) never race
// each other for apt-get's lock; each file still checks on its own when run alone.
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync } from "node:fs";

export const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";

/**
 * Launch flags of the browser tests: root needs --no-sandbox; the rest keep Chromium from reaching for Google's
 * services, which this machine's closed network refuses.
 */
export const CHROMIUM_ARGS = [
  "--no-sandbox",
  "--headless",
  "--disable-gpu",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--no-first-run",
];

/** Returns the browser's path, installing the Debian package first when needed; throws with the reason otherwise. */
export function ensureChromium() {
  if (existsSync(CHROMIUM)) return CHROMIUM;
  const root = typeof process.getuid === "function" && process.getuid() === 0;
  if (!root)
    throw new Error(
      `Chromium is not installed at ${CHROMIUM}, and installing it needs root: run \`apt-get update && apt-get install -y chromium\` as root.`,
    );
  console.log("Chromium missing: apt-get install -y chromium (Debian package) ...");
  const env = { ...process.env, DEBIAN_FRONTEND: "noninteractive" };
  const update = spawnSync("apt-get", ["update"], { stdio: "inherit", env });
  const install =
    update.status === 0
      ? spawnSync("apt-get", ["install", "-y", "--no-install-recommends", "chromium"], { stdio: "inherit", env })
      : update;
  if (install.status !== 0 || !existsSync(CHROMIUM)) {
    throw new Error(
      `Chromium could not be installed (apt-get exited ${install.status ?? install.error?.message}); the browser tests cannot run without it.`,
    );
  }
  console.log(execFileSync(CHROMIUM, ["--version"], { encoding: "utf8" }).trim());
  return CHROMIUM;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  try {
    console.log(`Chromium: ${ensureChromium()}`);
  } catch (e) {
    console.error(`FAILED: ${e.message}`);
    process.exit(1);
  }
}
