// The static baseline of the benchmark: nginx from Debian's packages serving the same file as the artifact download
// (what a vendor would use instead of this service: a static host). Installed with apt-get when missing and the
// benchmark runs as root; otherwise the scenario is skipped and the reason is reported.
import { spawnSync } from "node:child_process";
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort, spawnAndWait } from "../scripts/lib/processes.mjs";
import { ensurePackage } from "./apt.mjs";

/** Debian's unprivileged web user, else nobody. */
function workerUser() {
  return spawnSync("id", ["-u", "www-data"]).status === 0 ? "www-data" : "nobody";
}

/**
 * Starts nginx on a loopback port serving `bytes` at `/<fileName>`, with a generated configuration in a temporary
 * prefix (Debian's own configuration and service are left alone). Returns `{ url, stop }`, or `{ skipped }`.
 */
export async function startNginx(fileName, bytes, log = console.log) {
  const found = ensurePackage("nginx", "nginx", log);
  if (found.skipped) return found;
  const prefix = mkdtempSync(join(tmpdir(), "bench-nginx-"));
  const www = join(prefix, "www");
  mkdirSync(www);
  mkdirSync(join(prefix, "tmp"));
  writeFileSync(join(www, fileName), bytes);
  // The smallest answer, for the load generator's own ceiling.
  writeFileSync(join(www, "tiny.txt"), "Healthy");
  // Worker processes run as an unprivileged user when nginx starts as root: they must be able to read the file.
  for (const path of [prefix, www]) chmodSync(path, 0o755);
  chmodSync(join(www, fileName), 0o644);
  chmodSync(join(www, "tiny.txt"), 0o644);
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
  const url = `http://127.0.0.1:${port}`;
  let child;
  try {
    child = await spawnAndWait(
      found.binary,
      [
        "-p",
        prefix,
        "-c",
        join(prefix, "nginx.conf"),
        ...(process.getuid?.() === 0 ? ["-g", `user ${workerUser()};`] : []),
      ],
      {
        url: `${url}/${encodeURIComponent(fileName)}`,
        timeoutMs: 5000,
        stdio: "ignore",
      },
    );
  } catch (e) {
    rmSync(prefix, { recursive: true, force: true });
    return { skipped: `nginx did not start: ${e instanceof Error ? e.message : e}` };
  }
  // `nginx -v` writes its version to stderr.
  const version =
    spawnSync(found.binary, ["-v"], { encoding: "utf8" })
      .stderr.trim()
      .replace(/^nginx version:\s*/, "") || "nginx";
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
