// Runs the bundled Worker under workerd through Miniflare, configured from wrangler.toml, with fresh local state
// and the migrations applied: what the benchmark and the Node-side tests start (no wrangler dev proxy in the path).
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { randomUUID } from "node:crypto";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { Miniflare, convertV4MiniflareOptions } from "miniflare";
import { unstable_getMiniflareWorkerOptions } from "wrangler";
import { testWranglerConfig } from "./lib/test-wrangler-config.mjs";

export const root = fileURLToPath(new URL("..", import.meta.url));

/**
 * wrangler.toml's Worker options (bindings, compatibility date) in Miniflare's shape, read from its copy in a
 * directory of its own, so that a developer's .dev.vars never adds to them (scripts/lib/test-wrangler-config.mjs).
 */
export function configuredWorkerOptions() {
  const { workerOptions } = unstable_getMiniflareWorkerOptions(testWranglerConfig());
  // The script is the bundle: its modules are listed by bundleModules, not found by rules.
  const { modulesRules: _rules, ...options } = workerOptions;
  return options;
}

/** The bundle's modules: the script alone (wrangler bundles everything the Worker imports into it). */
export function bundleModules(scriptPath) {
  return { modulesRoot: dirname(scriptPath), modules: [{ type: "ESModule", path: scriptPath }] };
}

/**
 * Bundles the Worker as `wrangler deploy` would, into `outdir` (inside the project: workerd refuses paths outside
 * it); a directory of its own by default, so parallel runs do not overwrite each other's bundle. `entry` bundles
 * another entry module instead of wrangler.toml's `main` (a test's wrapper around it, e.g. test/node/clock-worker.ts).
 */
export function bundleWorker(outdir = join(root, "bench/.out", randomUUID()), entry) {
  // wrangler.toml's [assets] directory (the admin console) must exist for wrangler to bundle: build it once.
  if (!existsSync(join(root, "console/dist/console/index.html"))) {
    execFileSync("npm", ["run", "console:build"], { cwd: root, stdio: ["ignore", "ignore", "inherit"] });
  }
  rmSync(outdir, { recursive: true, force: true });
  execFileSync(
    process.execPath,
    [
      join(root, "node_modules/wrangler/bin/wrangler.js"),
      "deploy",
      ...(entry ? [entry] : []),
      "--dry-run",
      "--outdir",
      outdir,
    ],
    {
      cwd: root,
      stdio: ["ignore", "ignore", "inherit"],
      env: { ...process.env, WRANGLER_SEND_METRICS: "false" },
    },
  );
  const file = readdirSync(outdir).find((f) => f.endsWith(".js"));
  return join(outdir, file);
}

/**
 * Starts the bundled Worker with local D1/R2/Durable Objects/Queues in a fresh state directory (`entry`: bundle that
 * module instead of wrangler.toml's `main`, as bundleWorker).
 * `bindings` add to (and override) wrangler.toml's vars; `log` is a Miniflare Log for the runtime's own messages
 * (none by default); `inspectorPort` opens workerd's V8 inspector there; `https` ({ key, cert }, PEM) serves HTTPS with
 * that certificate instead of plain HTTP; `outbound` (a function of a Request to a Response) answers the Worker's own
 * fetches to other origins (Miniflare's outboundService), for a test that stands in for a vendor's server. Returns its
 * URL, the Miniflare instance and `dispose`.
 */
export async function startLocalWorker({ script, entry, bindings = {}, log, inspectorPort, https, outbound } = {}) {
  const scriptPath = script ?? bundleWorker(undefined, entry);
  const ownBundle = script === undefined ? dirname(scriptPath) : undefined;
  const state = mkdtempSync(join(tmpdir(), "licensing-state-"));
  const workerOptions = configuredWorkerOptions();
  const mf = new Miniflare(
    convertV4MiniflareOptions({
      host: "127.0.0.1",
      port: 0,
      defaultPersistRoot: state,
      cf: false,
      ...(log ? { log } : {}),
      // The V8 inspector (CPU profiles: bench/profile.mjs), when asked for.
      ...(inspectorPort !== undefined ? { inspectorPort } : {}),
      ...(https ? { https: true, httpsKey: https.key, httpsCert: https.cert } : {}),
      // Development unless the caller says otherwise: the callers (benchmark, Node-side tests) use throwaway secrets.
      workers: [
        {
          ...workerOptions,
          name: "licensing-service",
          ...bundleModules(scriptPath),
          bindings: { ...workerOptions.bindings, Application__Environment: "Development", ...bindings },
          ...(outbound ? { outboundService: outbound } : {}),
        },
      ],
    }),
  );
  const url = await mf.ready;
  const db = await mf.getD1Database("DB");
  for (const file of readdirSync(join(root, "migrations"))
    .filter((f) => f.endsWith(".sql"))
    .sort()) {
    for (const statement of readFileSync(join(root, "migrations", file), "utf8").split("--> statement-breakpoint")) {
      if (statement.trim()) await db.prepare(statement).run();
    }
  }
  return {
    url,
    mf,
    async dispose() {
      await mf.dispose();
      rmSync(state, { recursive: true, force: true });
      if (ownBundle) rmSync(ownBundle, { recursive: true, force: true });
    },
  };
}
