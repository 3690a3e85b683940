// `npm run test:clients` (the last step of `npm test`): every client's own tests on the shared vectors (each
// language's `test` command in clients/interop.json: cargo test, pytest, go test, ctest …), then the interop suite
// against `wrangler dev` as `npm run dev` starts it (scripts/interop.mjs --dev: every case in every language, each
// language's example, and the table of license files verified across languages). Stops at the first failure.
//
//   npm run test:clients [-- --only python,go]
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { root } from "./local-worker.mjs";

const { values: args } = parseArgs({ options: { only: { type: "string" } } });
const languages = JSON.parse(readFileSync(join(root, "clients/interop.json"), "utf8"));
const only = args.only?.split(",").map((s) => s.trim());
const names = Object.keys(languages).filter((l) => !only || only.includes(l));

function run(what, command, argv = []) {
  const started = Date.now();
  console.log(`\ntest:clients: ${what}: ${command} ${argv.join(" ")}`);
  const res = spawnSync(command, argv, { cwd: root, stdio: "inherit", shell: argv.length === 0 });
  const seconds = ((Date.now() - started) / 1000).toFixed(1);
  if (res.status !== 0) {
    console.error(`test:clients: ${what} failed (exit ${res.status ?? res.signal}) after ${seconds} s`);
    process.exit(1);
  }
  console.log(`test:clients: ${what} passed in ${seconds} s`);
}

for (const lang of names) if (languages[lang].test) run(`${lang}'s own tests`, languages[lang].test);
run("interop against wrangler dev", process.execPath, [
  join(root, "scripts/interop.mjs"),
  "--dev",
  ...(only ? ["--only", only.join(",")] : []),
]);
