// The service the clients' scripts run against (scripts/interop.mjs, bench/clients.mjs): the bundled Worker under
// Miniflare with throwaway secrets and a known admin API key, the admin API calls that seed it, and the per-address
// and per-license limits raised for a run that signs in and validates many times from one address; and the shell
// commands that build and run each language's program.
import { spawn } from "node:child_process";
import { root, startLocalWorker } from "../local-worker.mjs";

/** The admin API key of the bundled Worker startInteropWorker starts. */
export const LOCAL_ADMIN_KEY = "api_InteropAdminKey00000000000000000";

/** The bundled Worker under Miniflare (scripts/local-worker.mjs), with throwaway secrets and LOCAL_ADMIN_KEY. */
export function startInteropWorker() {
  return startLocalWorker({
    bindings: {
      Application__JwtSecret: "interop-jwt-secret-0123456789abcdef012345",
      Application__EncryptionKey: "interop-encryption-key",
      Application__AdminUsername: "admin",
      Application__AdminPassword: "Interop-12345",
      Application__AdminApiKey: LOCAL_ADMIN_KEY,
    },
  });
}

/**
 * The per-address limits a run would trip from one address (every case signs in; some fail on purpose), and the
 * per-license one a benchmark's thousands of validations would: raised for the run, put back after it (a
 * `wrangler dev` names the caller's address, and five failed logins block it).
 */
export const RAISED_LIMITS = {
  "IpFiltering:AuthenticationProtection:MaxFailedAttempts": "100000",
  "IpFiltering:AuthenticationProtection:MaxLoginRequestsPerTimeFrame": "100000",
  "IpFiltering:BruteForceProtection:MaxRequestsPerTimeFrame": "100000",
  "Licensing:MaxRequestsPerLicense": "100000",
};

/**
 * The admin API of the service at `base` with `adminKey`: `api(method, path, body)` (JSON, or FormData as is; throws
 * on a status of 300 or more), `newLicense(productId, license)` (its `userKey` and `licenseId`), and `raiseLimits()`,
 * which raises RAISED_LIMITS and returns a function that puts back what was there before.
 */
export function adminApi(base, adminKey) {
  async function api(method, path, body) {
    const res = await fetch(`${base}${path}`, {
      method,
      headers: {
        "x-api-key": adminKey,
        ...(body !== undefined && !(body instanceof FormData) ? { "content-type": "application/json" } : {}),
      },
      body: body === undefined ? undefined : body instanceof FormData ? body : JSON.stringify(body),
    });
    const text = await res.text();
    if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${text}`);
    return text ? JSON.parse(text) : {};
  }

  async function newLicense(productId, license) {
    const { id } = await api("POST", "/v1/licenses", { license: { productId, ...license } });
    const listed = await api(
      "GET",
      `/v1/licenses?filter=${encodeURIComponent(`id == ${id}`)}&select=userKey,licenseId`,
    );
    return listed.licenses[0];
  }

  async function raiseLimits() {
    const { settings } = await api("GET", "/v1/settings?take=1000");
    const before = new Map(settings.map((s) => [s.name, s]));
    const restore = Object.keys(RAISED_LIMITS).map((name) => {
      const was = before.get(name);
      return { name, value: was?.source === "database" ? (was.value ?? null) : null };
    });
    await api("PUT", "/v1/settings", {
      settings: Object.entries(RAISED_LIMITS).map(([name, value]) => ({ name, value })),
    });
    return () => api("PUT", "/v1/settings", { settings: restore });
  }

  return { api, newLicense, raiseLimits };
}

/** A word for `sh -c`, quoted when it needs to be. */
export const quote = (s) => (/^[\w@%+=:,./-]+$/.test(s) ? s : `'${String(s).replace(/'/g, "'\\''")}'`);

/** Runs a shell command from the project root: its exit code, stdout and stderr; killed with its group after `timeout`. */
export function sh(command, timeout) {
  return new Promise((resolve) => {
    const child = spawn("sh", ["-c", command], { cwd: root, stdio: ["ignore", "pipe", "pipe"], detached: true });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d) => (stdout += d));
    child.stderr.on("data", (d) => (stderr += d));
    const timer = setTimeout(() => {
      try {
        process.kill(-child.pid, "SIGKILL");
      } catch {}
      stderr += `\n(killed after ${timeout} ms)`;
    }, timeout);
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code: code ?? 1, stdout, stderr });
    });
  });
}
