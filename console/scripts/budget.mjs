#!/usr/bin/env node
// The console's bundle budget: what the first load fetches (index.html and every script and stylesheet it names),
// gzip-compressed, must stay under BUDGET_BYTES. Run by `npm run console:build`, so a build over budget fails.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { gzipSync } from "node:zlib";

export const BUDGET_BYTES = 200 * 1024;
const dist = fileURLToPath(new URL("../dist", import.meta.url));
const html = readFileSync(join(dist, "console/index.html"), "utf8");
const files = [
  "/console/index.html",
  ...[...html.matchAll(/(?:src|href)="(\/console\/assets\/[^"]+)"/g)].map((m) => m[1]),
];
let total = 0;
for (const file of files) {
  const size = gzipSync(readFileSync(join(dist, file))).length;
  total += size;
  console.log(`  ${file}  ${(size / 1024).toFixed(1)} KiB gzip`);
}
console.log(`console first load: ${(total / 1024).toFixed(1)} KiB gzip (budget ${BUDGET_BYTES / 1024} KiB)`);
if (total > BUDGET_BYTES) {
  console.error("console: over the bundle budget");
  process.exit(1);
}
