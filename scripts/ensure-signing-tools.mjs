#!/usr/bin/env node
// The tools the signing tests make their fixtures with (test/node/signing-fixtures.ts): openssl for certificates,
// osslsigncode for Authenticode signatures, wixl for a real MSI, msiinfo (msitools) to read one back
// and Info-ZIP's zip for a Zip64 archive. All are
// Debian packages; when one is missing and we are root, install it with apt-get; otherwise, or when the install
// fails, say so plainly and exit non-zero, so the test run fails rather than skips.
import { spawnSync } from "node:child_process";

/** Each tool the fixtures run, and the Debian package that ships it. */
export const SIGNING_TOOLS = [
  { command: "openssl", pkg: "openssl" },
  { command: "osslsigncode", pkg: "osslsigncode" },
  { command: "wixl", pkg: "wixl" },
  { command: "msiinfo", pkg: "msitools" },
  { command: "zip", pkg: "zip" },
];

function missingTools() {
  return SIGNING_TOOLS.filter(({ command }) => spawnSync("sh", ["-c", `command -v ${command}`]).status !== 0);
}

/** Makes sure every signing tool is on PATH, installing the missing Debian packages when root; throws otherwise. */
export function ensureSigningTools() {
  const missing = missingTools();
  if (missing.length === 0) return;
  const packages = [...new Set(missing.map((tool) => tool.pkg))];
  const root = typeof process.getuid === "function" && process.getuid() === 0;
  if (!root)
    throw new Error(
      `The signing tests need ${missing.map((t) => t.command).join(", ")}, and installing them needs root: run \`apt-get update && apt-get install -y ${packages.join(" ")}\` as root.`,
    );
  console.log(`Signing tools missing: apt-get install -y ${packages.join(" ")} (Debian packages) ...`);
  const env = { ...process.env, DEBIAN_FRONTEND: "noninteractive" };
  const update = spawnSync("apt-get", ["update"], { stdio: "inherit", env });
  const install =
    update.status === 0
      ? spawnSync("apt-get", ["install", "-y", "--no-install-recommends", ...packages], { stdio: "inherit", env })
      : update;
  const still = missingTools();
  if (install.status !== 0 || still.length > 0)
    throw new Error(
      `The signing tools could not be installed (apt-get exited ${install.status ?? install.error?.message}; still missing: ${still.map((t) => t.command).join(", ")}); the signing tests cannot run without them.`,
    );
}

if (import.meta.url === `file://${process.argv[1]}`) {
  try {
    ensureSigningTools();
    console.log(`Signing tools: ${SIGNING_TOOLS.map((t) => t.command).join(", ")}`);
  } catch (e) {
    console.error(`FAILED: ${e.message}`);
    process.exit(1);
  }
}
