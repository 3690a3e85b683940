// Debian packages the benchmark needs (nginx, wrk): found on the PATH, else installed with apt-get when the benchmark
// runs as root on a Debian-based system; otherwise the reason it cannot, for the report.
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";

function find(binary) {
  for (const dir of ["/usr/sbin", "/usr/local/sbin", "/usr/bin", "/usr/local/bin"])
    if (existsSync(`${dir}/${binary}`)) return `${dir}/${binary}`;
  try {
    return execFileSync("sh", ["-c", `command -v ${binary}`], { encoding: "utf8" }).trim() || undefined;
  } catch {
    return undefined;
  }
}

/** `{ binary }` of a Debian package's program, installing the package when possible; `{ skipped }` with the reason. */
export function ensurePackage(pkg, binary = pkg, log = console.log) {
  const found = find(binary);
  if (found) return { binary: found };
  if (!find("apt-get"))
    return { skipped: `${binary} is not installed and apt-get is not available (not a Debian-based system)` };
  if (process.getuid?.() !== 0)
    return {
      skipped: `${binary} is not installed; install it with \`sudo apt-get install -y ${pkg}\` (the benchmark is not running as root)`,
    };
  const env = { ...process.env, DEBIAN_FRONTEND: "noninteractive" };
  const install = () =>
    execFileSync("apt-get", ["install", "-y", "--no-install-recommends", pkg], { stdio: "ignore", env });
  log(`installing ${pkg} with apt-get ...`);
  try {
    install();
  } catch {
    try {
      // A fresh image may have no package lists yet.
      execFileSync("apt-get", ["update"], { stdio: "ignore", env });
      install();
    } catch (e) {
      return { skipped: `apt-get install ${pkg} failed (${e instanceof Error ? e.message.split("\n")[0] : e})` };
    }
  }
  const installed = find(binary);
  return installed ? { binary: installed } : { skipped: `apt-get installed ${pkg} but ${binary} was not found` };
}
