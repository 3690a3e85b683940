#!/usr/bin/env node
// `npm run dev`: the whole service locally (local D1, R2, Durable Objects and Queues; state in .wrangler/).
// 1. checks that PORT (default 5000) is free on HOST: when it is taken (another `npm run dev`?) it says so first,
//    names PORT and a free one, and exits 1 without building, migrating or announcing anything;
// 2. builds the admin console (npm run console:build);
// 3. copies .dev.vars.example to .dev.vars when missing (admin account, API key and secrets for local use);
// 4. applies the D1 migrations to the local database;
// 5. over HTTPS (unless LOCAL_PROTOCOL=http; SPEC: port 5000 over HTTPS), makes the local certificate once
//    (.wrangler/dev-cert/cert.pem, self-signed for 127.0.0.1 and localhost: scripts/lib/dev-cert.mjs);
// 6. starts `wrangler dev` on HOST:PORT with that certificate;
// 7. once /health answers through that certificate, prints where it listens, the admin credentials from .dev.vars,
//    how to trust the certificate (curl --cacert, NODE_EXTRA_CA_CERTS, licensing-publish --ca) and where mail goes
//    (the console's Outbox without an EMAIL binding: scripts/lib/dev-mail.mjs).
import { spawn, spawnSync } from "node:child_process";
import { copyFileSync, existsSync, readFileSync } from "node:fs";
import http from "node:http";
import https from "node:https";
import { createServer } from "node:net";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { localCertificate } from "./lib/dev-cert.mjs";
import { mailLine } from "./lib/dev-mail.mjs";
import { ensurePackage } from "../bench/apt.mjs";

const root = fileURLToPath(new URL("..", import.meta.url));
process.chdir(root);
const wrangler = fileURLToPath(new URL("../node_modules/wrangler/bin/wrangler.js", import.meta.url));
const port = process.env.PORT ?? "5000";
const protocol = process.env.LOCAL_PROTOCOL === "http" ? "http" : "https";
const host = process.env.HOST ?? "127.0.0.1";

if (!/^\d+$/.test(port) || Number(port) < 1 || Number(port) > 65535) {
  console.error(`PORT=${port} is not a port number (1-65535). Start with e.g. PORT=5001 npm run dev`);
  process.exit(1);
}

/** Whether HOST:`p` can be listened on now: undefined when it can, else the error code (EADDRINUSE, EACCES …). */
function tryListen(p) {
  return new Promise((resolve) => {
    const probe = createServer();
    probe.once("error", (e) => resolve(e.code ?? String(e)));
    probe.listen({ port: p, host, exclusive: true }, () => probe.close(() => resolve(undefined)));
  });
}

// 1. The port first: a second `npm run dev` must not build, migrate, or announce the first one's service as its own.
const busy = await tryListen(Number(port));
if (busy !== undefined) {
  let suggestion = "";
  for (let p = Number(port) + 1; p <= Math.min(Number(port) + 20, 65535); p++) {
    if ((await tryListen(p)) === undefined) {
      suggestion = `PORT=${p} npm run dev`;
      break;
    }
  }
  const why =
    busy === "EADDRINUSE"
      ? `Port ${port} on ${host} is in use (another \`npm run dev\`?).`
      : `Cannot listen on ${host}:${port} (${busy}).`;
  console.error(`${why} Stop what holds it, or set PORT to another port${suggestion ? `: ${suggestion}` : ""}`);
  process.exit(1);
}

// 2. The console (wrangler.toml's [assets] directory).
const build = spawnSync("npm", ["run", "--silent", "console:build"], { stdio: "inherit" });
if (build.status !== 0) process.exit(build.status ?? 1);

// 3. Local settings.
if (!existsSync(".dev.vars")) {
  copyFileSync(".dev.vars.example", ".dev.vars");
  console.log("Created .dev.vars from .dev.vars.example");
}

// Offline machines: no metrics or update checks from wrangler.
const env = { ...process.env, WRANGLER_SEND_METRICS: "false", CLOUDFLARE_CF_FETCH_ENABLED: "false" };
// Where the local D1, R2, Durable Objects and Queues live: .wrangler/state, or LICENSING_DEV_STATE (a folder of its
// own, as the clients' interop suite in `npm test` uses, so that it never touches the state of your `npm run dev`).
const persist = process.env.LICENSING_DEV_STATE ? ["--persist-to", process.env.LICENSING_DEV_STATE] : [];
// 4. The schema.
const migrate = spawnSync(process.execPath, [wrangler, "d1", "migrations", "apply", "DB", "--local", ...persist], {
  stdio: "inherit",
  env: { ...env, CI: "true" },
});
if (migrate.status !== 0) process.exit(migrate.status ?? 1);

// 5. The certificate.
let certificate;
if (protocol === "https") {
  // A fresh Debian machine may lack the openssl command: as root it is installed with apt-get, as CI needs.
  const openssl = ensurePackage("openssl");
  if (openssl.skipped) console.error(openssl.skipped);
  try {
    certificate = localCertificate(join(root, ".wrangler/dev-cert"), host);
  } catch (e) {
    const missing = e.code === "ENOENT";
    console.error(
      missing
        ? "The local HTTPS certificate is made with the openssl command, which is missing: install it (apt-get install openssl), or serve plain HTTP with LOCAL_PROTOCOL=http npm run dev"
        : `Could not make the local HTTPS certificate with openssl: ${e.stderr?.toString().trim() || e.message}`,
    );
    process.exit(1);
  }
  if (certificate.created) console.log(`Made the local HTTPS certificate ${relative(root, certificate.certFile)}`);
}

// A .dev.vars written before Application:Environment existed still runs as Development (the default is Production).
const environment = /^\s*Application__Environment\s*=/m.test(readFileSync(".dev.vars", "utf8"))
  ? []
  : ["--var", "Application__Environment:Development"];
// 6. The service.
const dev = spawn(
  process.execPath,
  [
    wrangler,
    "dev",
    "--port",
    port,
    "--ip",
    host,
    "--local-protocol",
    protocol,
    ...(certificate ? ["--https-key-path", certificate.keyFile, "--https-cert-path", certificate.certFile] : []),
    ...environment,
    ...persist,
    ...process.argv.slice(2),
  ],
  {
    stdio: "inherit",
    env,
  },
);
for (const signal of ["SIGINT", "SIGTERM"]) process.on(signal, () => dev.kill(signal));
dev.on("exit", (code) => process.exit(code ?? 0));

// 7. Announce readiness: the first request also creates the administrator account and key.
const vars = Object.fromEntries(
  readFileSync(".dev.vars", "utf8")
    .split("\n")
    .filter((l) => /^\s*[\w]+\s*=/.test(l))
    .map((l) => [l.slice(0, l.indexOf("=")).trim(), l.slice(l.indexOf("=") + 1).trim()]),
);
const base = `${protocol}://${host === "0.0.0.0" ? "127.0.0.1" : host}:${port}`;
const ca = certificate ? readFileSync(certificate.certFile) : undefined;

/**
 * A GET of the service: its status and body (status 0 when it did not answer), over HTTPS only through the local
 * certificate (never with checks turned off).
 */
function get(path, headers = {}) {
  return new Promise((resolve) => {
    const request = (protocol === "https" ? https : http).get(
      `${base}${path}`,
      { ...(ca ? { ca } : {}), headers, timeout: 5000 },
      (res) => {
        let body = "";
        res.on("data", (chunk) => (body += chunk));
        res.on("end", () => resolve({ status: res.statusCode, body }));
      },
    );
    request.on("error", () => resolve({ status: 0, body: "" }));
    request.on("timeout", () => request.destroy());
  });
}

/** Whether /health answers 200. */
const healthy = async () => (await get("/health")).status === 200;

/** The service's feature switches (GET /v1/info with the admin key), or undefined. */
async function features() {
  const info = await get("/v1/info", { "x-api-key": vars.Application__AdminApiKey ?? "" });
  try {
    return info.status === 200 ? JSON.parse(info.body).features : undefined;
  } catch {
    return undefined;
  }
}

for (let i = 0; i < 180; i++) {
  await new Promise((r) => setTimeout(r, 1000));
  if (dev.exitCode !== null) break;
  if (await healthy()) {
    console.log(`\nLicensing service ready at ${base}  (Swagger UI: ${base}/swagger)`);
    console.log(
      `Admin: ${vars.Application__AdminUsername} / ${vars.Application__AdminPassword}   API key: ${vars.Application__AdminApiKey}`,
    );
    if (certificate) {
      const file = relative(root, certificate.certFile);
      console.log(
        `Certificate (self-signed): ${file}   trust it with curl --cacert ${file}, licensing-publish --ca ${file}, or NODE_EXTRA_CA_CERTS=${certificate.certFile}`,
      );
    }
    console.log(mailLine(await features(), base));
    console.log("");
    break;
  }
}
