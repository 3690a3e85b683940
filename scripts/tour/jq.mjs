#!/usr/bin/env node
// `jq` for the tour where Debian's package cannot be installed (scripts/tour.mjs puts this on PATH only then): the
// real jq compiled to WebAssembly (jq-web), reading JSON from stdin like `jq [-r] [-c] FILTER`.
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const args = process.argv.slice(2);
const flags = args.filter((a) => /^-[a-zA-Z]+$/.test(a));
const filter = args.find((a) => !/^-[a-zA-Z]+$/.test(a)) ?? ".";
let input = "";
process.stdin.setEncoding("utf8");
for await (const chunk of process.stdin) input += chunk;
const jq = await require("jq-web");
try {
  process.stdout.write(`${jq.raw(input, filter, flags).replace(/\n$/, "")}\n`);
} catch (e) {
  console.error(`jq: ${e instanceof Error ? e.message : String(e)}`);
  process.exit(5);
}
