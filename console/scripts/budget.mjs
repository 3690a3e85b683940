#!/usr/bin/env node
// The bundle budgets of the pages built into console/dist: what a page's first load fetches (its index.html and every
// script and stylesheet it names), gzip-compressed, must stay under its budget. Run by `npm run console:build`, so a
// build over budget fails. The admin console, and the customer portal (issue 30: a customer's first visit stays small).
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { gzipSync } from "node:zlib";

export const BUDGETS = { console: 200 * 1024, portal: 60 * 1024 };
/** The console's budget (kept under its first name for the scripts and tests that read it). */
export const BUDGET_BYTES = BUDGETS.console;
const dist = fileURLToPath(new URL("../dist", import.meta.url));

/** The first load of the page built to dist/<page>/: each file's gzip size, and the total. */
export function firstLoad(page) {
  const html = readFileSync(join(dist, page, "index.html"), "utf8");
  const pattern = new RegExp(`(?:src|href)="(/${page}/assets/[^"]+)"`, "g");
  const files = [`/${page}/index.html`, ...[...html.matchAll(pattern)].map((m) => m[1])];
  const sizes = files.map((file) => ({ file, size: gzipSync(readFileSync(join(dist, file))).length }));
  return { sizes, total: sizes.reduce((sum, s) => sum + s.size, 0) };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  let over = false;
  for (const [page, budget] of Object.entries(BUDGETS)) {
    const { sizes, total } = firstLoad(page);
    for (const { file, size } of sizes) console.log(`  ${file}  ${(size / 1024).toFixed(1)} KiB gzip`);
    console.log(`${page} first load: ${(total / 1024).toFixed(1)} KiB gzip (budget ${budget / 1024} KiB)`);
    if (total > budget) {
      console.error(`${page}: over the bundle budget`);
      over = true;
    }
  }
  if (over) process.exit(1);
}
