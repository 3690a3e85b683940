#!/usr/bin/env node
// `npm run build` (also `prepare`, so packing or a directory install builds it): dist/ from the TypeScript sources,
// with tsc from this package's or the service repository's node_modules.
import { execFileSync } from "node:child_process";
import { chmodSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = fileURLToPath(new URL(".", import.meta.url));
const require = createRequire(import.meta.url);
let tsc;
try {
  tsc = join(dirname(require.resolve("typescript/package.json")), "bin/tsc");
} catch {
  console.error("@licensing/publish: building needs TypeScript; install the packed tarball instead, which ships dist/");
  process.exit(1);
}
rmSync(join(here, "dist"), { recursive: true, force: true });
execFileSync(process.execPath, [tsc, "-p", "tsconfig.json"], { cwd: here, stdio: "inherit" });
chmodSync(join(here, "dist/main.js"), 0o755);
