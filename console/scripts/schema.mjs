#!/usr/bin/env node
// `npm run console:schema`: regenerates console/src/api/schema.d.ts, the console's typed client, from the OpenAPI
// document the Worker serves (bundled and run under Miniflare, as the Node-side tests do), with openapi-typescript.
// openapi-typescript needs TypeScript 5's compiler API (the project builds with TypeScript 7), so it runs through
// npx with both pinned instead of being a project dependency. Commit the result.
import { spawnSync } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { root, startLocalWorker } from "../../scripts/local-worker.mjs";

const worker = await startLocalWorker();
let document;
try {
  document = await (await fetch(new URL("/swagger/v1/swagger.json", worker.url))).json();
} finally {
  await worker.dispose();
}
const file = join(mkdtempSync(join(tmpdir(), "console-schema-")), "swagger.json");
writeFileSync(file, JSON.stringify(document));
const out = join(root, "console/src/api/schema.d.ts");
const run = spawnSync(
  "npx",
  ["-y", "-p", "openapi-typescript@7.13.0", "-p", "typescript@5.9.3", "openapi-typescript", file, "-o", out],
  {
    stdio: "inherit",
    cwd: tmpdir(),
  },
);
if (run.status !== 0) process.exit(run.status ?? 1);
console.log(`console: wrote ${out}`);
