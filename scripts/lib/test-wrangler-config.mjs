// The wrangler configuration the tests run with: wrangler.toml, copied as JSON with absolute paths into a directory
// of its own (.wrangler/test-config/wrangler.json).
//
// wrangler adds the variables of a `.dev.vars` (or, without one, of `.env` files) found beside the configuration it
// is given to the Worker's, with no switch to turn that off. `npm run dev` writes .dev.vars next to wrangler.toml,
// and a developer edits theirs: a test pool configured from wrangler.toml would run with those values (its published
// gateway secret alone turns every production-mode test into a 500). The copy's directory holds nothing but the copy,
// so the workerd pool (vitest.config.ts) and the Node-side Worker (scripts/local-worker.mjs) run with wrangler.toml's
// variables and the tests' own, whatever else the clone holds.
import { existsSync, mkdirSync, readFileSync, readdirSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { experimental_readRawConfig } from "wrangler";

const root = fileURLToPath(new URL("../..", import.meta.url));

/** Where the copy lives: a directory wrangler reads no variables from. */
export const testConfigDir = join(root, ".wrangler/test-config");

/**
 * Writes the copy of wrangler.toml (atomically: several test processes may write it at once) and returns its path;
 * `fastQueues` gives the queue consumers a one-second batch timeout, in a copy of its own.
 */
export function testWranglerConfig({ fastQueues = false } = {}) {
  const { rawConfig } = experimental_readRawConfig({ config: join(root, "wrangler.toml") });
  const config = structuredClone(rawConfig);
  // Paths in a configuration are relative to its file: make them absolute, since the copy lives elsewhere.
  if (config.main) config.main = resolve(root, config.main);
  for (const db of config.d1_databases ?? [])
    if (db.migrations_dir) db.migrations_dir = resolve(root, db.migrations_dir);
  if (config.assets?.directory) config.assets.directory = resolve(root, config.assets.directory);
  // For the workerd test pool: queues deliver a batch after at most one second, not five, so tests that wait for
  // what a consumer writes (traces, sessions, download counts, webhooks) wait less; a batch still takes what is
  // there. The benchmark and the Node-side Worker keep wrangler.toml's timeouts.
  if (fastQueues) for (const consumer of config.queues?.consumers ?? []) consumer.max_batch_timeout = 1;
  mkdirSync(testConfigDir, { recursive: true });
  // Nothing but the copy: a .dev.vars or .env put here by hand would be read like the ones beside wrangler.toml.
  for (const name of readdirSync(testConfigDir)) {
    if (!/^wrangler(-fast-queues)?\.json(\.|$)/.test(name))
      rmSync(join(testConfigDir, name), { recursive: true, force: true });
  }
  const file = join(testConfigDir, fastQueues ? "wrangler-fast-queues.json" : "wrangler.json");
  const text = `${JSON.stringify(config, null, 2)}\n`;
  // Unchanged: left alone, so a watching test run sees no change of its configuration.
  if (existsSync(file) && readFileSync(file, "utf8") === text) return file;
  const temporary = `${file}.${process.pid}.${Math.random().toString(36).slice(2)}`;
  writeFileSync(temporary, text);
  renameSync(temporary, file);
  return file;
}
