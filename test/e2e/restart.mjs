#!/usr/bin/env node
// `npm run e2e:restart`: `wrangler dev` stopped and started again on the same state loses no record (issue 9, faults).
//
// 1. applies the migrations to a fresh state directory and starts `wrangler dev --persist-to <dir>` on a free
//    loopback port (plain HTTP), with the local secrets of .dev.vars (or .dev.vars.example when it is missing);
// 2. writes through the API: a setting, a product, a resource, an Activation license with an activated machine, and a
//    Floating license with its one seat taken;
// 3. stops wrangler (its whole process group), starts it again on the same directory, and checks every record: the
//    setting still applies, the product and resource are listed, the machine validates with the same token, the
//    seat answers heartbeats and still fills the license (a second client gets 528);
// 4. stops wrangler, removes the directory, and exits 0, or 1 at the first missing record. The whole run is bounded
//    (RESTART_TIMEOUT_SECONDS, default 240) and stops wrangler whatever happens.
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { freePort } from "../../scripts/lib/processes.mjs";

const root = fileURLToPath(new URL("../..", import.meta.url));
const wrangler = join(root, "node_modules/wrangler/bin/wrangler.js");
const deadline = Date.now() + Number(process.env.RESTART_TIMEOUT_SECONDS ?? 240) * 1000;
const env = { ...process.env, WRANGLER_SEND_METRICS: "false", CLOUDFLARE_CF_FETCH_ENABLED: "false", CI: "true" };

// wrangler dev reads .dev.vars itself; without one, the example's values are passed as an env file.
const varsFile = existsSync(join(root, ".dev.vars")) ? join(root, ".dev.vars") : join(root, ".dev.vars.example");
const vars = Object.fromEntries(
  readFileSync(varsFile, "utf8")
    .split("\n")
    .filter((l) => /^\s*\w+\s*=/.test(l))
    .map((l) => [l.slice(0, l.indexOf("=")).trim(), l.slice(l.indexOf("=") + 1).trim()]),
);
const KEY = vars.Application__AdminApiKey;

const state = mkdtempSync(join(tmpdir(), "licensing-restart-"));
let dev;
let failures = 0;

function log(message) {
  console.log(`[restart] ${message}`);
}

function check(ok, what) {
  log(`${ok ? "ok  " : "FAIL"} ${what}`);
  if (!ok) failures++;
}

async function start() {
  const [port, inspector] = [await freePort(), await freePort()];
  const args = [
    wrangler,
    "dev",
    "--persist-to",
    state,
    "--ip",
    "127.0.0.1",
    "--port",
    String(port),
    "--inspector-port",
    String(inspector),
    "--local-protocol",
    "http",
    "--show-interactive-dev-session=false",
    "--log-level",
    "warn",
  ];
  if (!varsFile.endsWith(".dev.vars")) args.push("--env-file", varsFile);
  else if (!vars.Application__Environment) args.push("--var", "Application__Environment:Development");
  // Its own process group, so stopping it stops workerd too.
  dev = spawn(process.execPath, args, { cwd: root, env, detached: true, stdio: ["ignore", "inherit", "inherit"] });
  const base = `http://127.0.0.1:${port}`;
  while (Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 500));
    if (dev.exitCode !== null) throw new Error(`wrangler dev exited with ${dev.exitCode}`);
    try {
      if ((await fetch(`${base}/health`)).ok) return base;
    } catch {
      // not listening yet
    }
  }
  throw new Error("wrangler dev did not answer in time");
}

async function stop() {
  if (!dev || dev.exitCode !== null) return;
  const exited = new Promise((resolve) => dev.once("exit", resolve));
  process.kill(-dev.pid, "SIGINT");
  const forced = setTimeout(() => dev.exitCode === null && process.kill(-dev.pid, "SIGKILL"), 15_000);
  await exited;
  clearTimeout(forced);
}

async function api(base, method, path, body) {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: { "x-api-key": KEY, ...(body ? { "content-type": "application/json" } : {}) },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });
  const text = await res.text();
  return {
    status: res.status,
    body: text && (res.headers.get("content-type") ?? "").includes("json") ? JSON.parse(text) : text,
  };
}

async function userKeyOf(base, id) {
  const res = await api(base, "GET", `/v1/licenses?filter=${encodeURIComponent(`id == ${id}`)}&select=userKey`);
  return res.body.licenses[0].userKey;
}

async function main() {
  const migrate = spawnSync(
    process.execPath,
    [wrangler, "d1", "migrations", "apply", "DB", "--local", "--persist-to", state],
    { cwd: root, env, encoding: "utf8" },
  );
  if (migrate.status !== 0) throw new Error(`migrations failed:\n${migrate.stderr}`);
  log(`state in ${state}`);

  let base = await start();
  log(`first run at ${base}`);
  const code = `restart-${Date.now().toString(36)}`;
  const written = {};
  written.setting = await api(base, "PUT", "/v1/settings", {
    settings: [{ name: "Application:DefaultPageSize", value: "42" }],
  });
  written.product = await api(base, "POST", "/v1/products", {
    product: { code, name: "Restart", isApplication: true },
  });
  const productId = written.product.body.productId;
  written.resource = await api(base, "POST", "/v1/resources", { resource: { name: `${code}-resource`, data: "kept" } });
  written.activationLicense = await api(base, "POST", "/v1/licenses", {
    license: { productId, licensingMode: "Activation", maxClients: 2 },
  });
  written.floatingLicense = await api(base, "POST", "/v1/licenses", {
    license: { productId, licensingMode: "Floating", maxClients: 1 },
  });
  const activationKey = await userKeyOf(base, written.activationLicense.body.id);
  const floatingKey = await userKeyOf(base, written.floatingLicense.body.id);
  written.activation = await api(base, "POST", "/v1/license/activate", {
    userKey: activationKey,
    machineId: "PC-RESTART",
  });
  written.seat = await api(base, "POST", "/v1/license/request", {
    userKey: floatingKey,
    machineId: "m1",
    clientId: "c1",
  });
  for (const [what, res] of Object.entries(written)) check(res.status === 200, `wrote ${what} (${res.status})`);

  await stop();
  log("stopped");
  base = await start();
  log(`second run at ${base}, same state`);

  const setting = (await api(base, "GET", "/v1/settings")).body.settings.find(
    (s) => s.name === "Application:DefaultPageSize",
  );
  check(
    setting?.value === "42" && setting.source === "database",
    `setting Application:DefaultPageSize = ${setting?.value} (${setting?.source})`,
  );
  const products = await api(base, "GET", `/v1/products?filter=${encodeURIComponent(`code == "${code}"`)}`);
  check(products.body.totalProductsCount === 1, `product ${code} listed`);
  const resources = await api(base, "GET", `/v1/resources?filter=${encodeURIComponent(`name == "${code}-resource"`)}`);
  check(resources.body.resources?.[0]?.data === "kept", "resource listed with its data");
  const licenses = await api(
    base,
    "GET",
    `/v1/licenses?filter=${encodeURIComponent(`productId == ${productId}`)}&select=licenseId,status,activeClientCount`,
  );
  check(licenses.body.totalLicensesCount === 2, `both licenses listed (${JSON.stringify(licenses.body.licenses)})`);
  const validated = await api(base, "POST", "/v1/license/validate", {
    userKey: activationKey,
    machineId: "PC-RESTART",
  });
  check(
    validated.body.status === "Activated" && validated.body.licenseToken === written.activation.body.licenseToken,
    "activated machine validates with the same token",
  );
  const beat = await api(base, "POST", "/v1/license/heartbeat", { licenseToken: written.seat.body.licenseToken });
  check(
    beat.status === 200 && beat.body.activeClientCount === 1,
    `floating seat answers its heartbeat (${beat.status})`,
  );
  const second = await api(base, "POST", "/v1/license/request", {
    userKey: floatingKey,
    machineId: "m2",
    clientId: "c2",
  });
  check(second.status === 528, `the seat still fills the license: a second client gets ${second.status}`);
}

const timer = setTimeout(() => {
  log("timed out");
  failures++;
  stop().finally(() => process.exit(1));
}, deadline - Date.now());

try {
  await main();
} catch (e) {
  log(`error: ${e instanceof Error ? e.message : String(e)}`);
  failures++;
} finally {
  await stop();
  clearTimeout(timer);
  rmSync(state, { recursive: true, force: true });
}
log(failures === 0 ? "no record lost across the restart" : `${failures} check(s) failed`);
process.exit(failures === 0 ? 0 : 1);
