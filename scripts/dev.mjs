#!/usr/bin/env node
// `npm run dev`: the whole service locally (local D1, R2, Durable Objects and Queues; state in .wrangler/).
// 1. copies .dev.vars.example to .dev.vars when missing (admin account, API key and secrets for local use);
// 2. applies the D1 migrations to the local database;
// 3. starts `wrangler dev` on PORT (default 5000), HTTPS unless LOCAL_PROTOCOL=http (SPEC: port 5000 over HTTPS);
// 4. once it answers, prints where it listens and the admin credentials from .dev.vars.
import { spawn, spawnSync } from "node:child_process";
import { copyFileSync, existsSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

const wrangler = fileURLToPath(new URL("../node_modules/wrangler/bin/wrangler.js", import.meta.url));
const port = process.env.PORT ?? "5000";
const protocol = process.env.LOCAL_PROTOCOL === "http" ? "http" : "https";
const host = process.env.HOST ?? "127.0.0.1";

if (!existsSync(".dev.vars")) {
  copyFileSync(".dev.vars.example", ".dev.vars");
  console.log("Created .dev.vars from .dev.vars.example");
}

// Offline machines: no metrics or update checks from wrangler.
const env = { ...process.env, WRANGLER_SEND_METRICS: "false", CLOUDFLARE_CF_FETCH_ENABLED: "false" };
const migrate = spawnSync(process.execPath, [wrangler, "d1", "migrations", "apply", "DB", "--local"], {
  stdio: "inherit",
  env: { ...env, CI: "true" },
});
if (migrate.status !== 0) process.exit(migrate.status ?? 1);

// A .dev.vars written before Application:Environment existed still runs as Development (the default is Production).
const environment = /^\s*Application__Environment\s*=/m.test(readFileSync(".dev.vars", "utf8"))
  ? []
  : ["--var", "Application__Environment:Development"];
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
    ...environment,
    ...process.argv.slice(2),
  ],
  {
    stdio: "inherit",
    env,
  },
);
for (const signal of ["SIGINT", "SIGTERM"]) process.on(signal, () => dev.kill(signal));
dev.on("exit", (code) => process.exit(code ?? 0));

// Announce readiness: the first request also creates the administrator account and key.
const vars = Object.fromEntries(
  readFileSync(".dev.vars", "utf8")
    .split("\n")
    .filter((l) => /^\s*[\w]+\s*=/.test(l))
    .map((l) => [l.slice(0, l.indexOf("=")).trim(), l.slice(l.indexOf("=") + 1).trim()]),
);
process.env.NODE_TLS_REJECT_UNAUTHORIZED = "0"; // wrangler's local certificate is self-signed
const base = `${protocol}://${host === "0.0.0.0" ? "127.0.0.1" : host}:${port}`;
for (let i = 0; i < 120; i++) {
  await new Promise((r) => setTimeout(r, 1000));
  try {
    const res = await fetch(`${base}/health`);
    if (res.ok) {
      console.log(`\nLicensing service ready at ${base}  (Swagger UI: ${base}/swagger)`);
      console.log(
        `Admin: ${vars.Application__AdminUsername} / ${vars.Application__AdminPassword}   API key: ${vars.Application__AdminApiKey}\n`,
      );
      break;
    }
  } catch {
    // not listening yet
  }
}
