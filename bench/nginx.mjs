// The static baseline of the benchmark: nginx from Debian's packages serving the same file as the artifact download
// (what a vendor would use instead of this service: a static host). Installed with apt-get when missing and the
// benchmark runs as root; otherwise the scenario is skipped and the reason is reported.
import { execFileSync, spawn, spawnSync } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

function findNginx() {
  for (const candidate of ["/usr/sbin/nginx", "/usr/local/sbin/nginx", "/usr/bin/nginx"]) if (existsSync(candidate)) return candidate;
  try {
    return execFileSync("sh", ["-c", "command -v nginx"], { encoding: "utf8" }).trim() || undefined;
  } catch {
    return undefined;
  }
}

function hasAptGet() {
  try {
    execFileSync("sh", ["-c", "command -v apt-get"], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}

/** nginx's path, installing Debian's package when possible; `{ skipped }` with the reason otherwise. */
function ensureNginx(log) {
  const found = findNginx();
  if (found) return { binary: found };
  if (!hasAptGet()) return { skipped: "nginx is not installed and apt-get is not available (not a Debian-based system)" };
  if (process.getuid?.() !== 0) return { skipped: "nginx is not installed; install it with `sudo apt-get install -y nginx` (the benchmark is not running as root)" };
  const env = { ...process.env, DEBIAN_FRONTEND: "noninteractive" };
  const install = () => execFileSync("apt-get", ["install", "-y", "--no-install-recommends", "nginx"], { stdio: "ignore", env });
  log("installing nginx with apt-get ...");
  try {
    install();
  } catch {
    try {
      // A fresh image may have no package lists yet.
      execFileSync("apt-get", ["update"], { stdio: "ignore", env });
      install();
    } catch (e) {
      return { skipped: `apt-get install nginx failed (${e instanceof Error ? e.message.split("\n")[0] : e})` };
    }
  }
  const installed = findNginx();
  return installed ? { binary: installed } : { skipped: "apt-get installed nginx but its binary was not found" };
}

/** Debian's unprivileged web user, else nobody. */
function workerUser() {
  return spawnSync("id", ["-u", "www-data"]).status === 0 ? "www-data" : "nobody";
}

function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

async function waitUntilServing(url, child) {
  for (let attempt = 0; attempt < 100; attempt++) {
    if (child.exitCode !== null) throw new Error(`nginx exited with ${child.exitCode}`);
    try {
      const res = await fetch(url, { method: "HEAD" });
      if (res.ok) return;
    } catch {
      // Not listening yet.
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error("nginx did not answer within 5 s");
}

/**
 * Starts nginx on a loopback port serving `bytes` at `/<fileName>`, with a generated configuration in a temporary
 * prefix (Debian's own configuration and service are left alone). Returns `{ url, stop }`, or `{ skipped }`.
 */
export async function startNginx(fileName, bytes, log = console.log) {
  const found = ensureNginx(log);
  if (found.skipped) return found;
  const prefix = mkdtempSync(join(tmpdir(), "bench-nginx-"));
  const www = join(prefix, "www");
  mkdirSync(www);
  mkdirSync(join(prefix, "tmp"));
  writeFileSync(join(www, fileName), bytes);
  // Worker processes run as an unprivileged user when nginx starts as root: they must be able to read the file.
  for (const path of [prefix, www]) chmodSync(path, 0o755);
  chmodSync(join(www, fileName), 0o644);
  const port = await freePort();
  const tmp = join(prefix, "tmp");
  const conf = `
worker_processes auto;
daemon off;
pid ${join(prefix, "nginx.pid")};
error_log ${join(prefix, "error.log")} warn;
events { worker_connections 4096; }
http {
  access_log off;
  sendfile on;
  tcp_nopush on;
  keepalive_requests 1000000;
  default_type application/octet-stream;
  client_body_temp_path ${tmp}/body;
  proxy_temp_path ${tmp}/proxy;
  fastcgi_temp_path ${tmp}/fastcgi;
  uwsgi_temp_path ${tmp}/uwsgi;
  scgi_temp_path ${tmp}/scgi;
  server {
    listen 127.0.0.1:${port};
    root ${www};
  }
}
`;
  writeFileSync(join(prefix, "nginx.conf"), conf);
  const child = spawn(found.binary, ["-p", prefix, "-c", join(prefix, "nginx.conf"), ...(process.getuid?.() === 0 ? ["-g", `user ${workerUser()};`] : [])], { stdio: "ignore" });
  const url = `http://127.0.0.1:${port}`;
  try {
    await waitUntilServing(`${url}/${encodeURIComponent(fileName)}`, child);
  } catch (e) {
    child.kill("SIGTERM");
    rmSync(prefix, { recursive: true, force: true });
    return { skipped: `nginx did not start: ${e instanceof Error ? e.message : e}` };
  }
  // `nginx -v` writes its version to stderr.
  const version = spawnSync(found.binary, ["-v"], { encoding: "utf8" }).stderr.trim().replace(/^nginx version:\s*/, "") || "nginx";
  return {
    url,
    version,
    async stop() {
      const exited = new Promise((resolve) => child.once("exit", resolve));
      // SIGQUIT: graceful stop of the master and its workers.
      child.kill("SIGQUIT");
      await Promise.race([exited, new Promise((r) => setTimeout(r, 3000))]);
      if (child.exitCode === null) child.kill("SIGKILL");
      rmSync(prefix, { recursive: true, force: true });
    },
  };
}
