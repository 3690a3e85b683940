#!/usr/bin/env node
// `npm run build` (also `prepare`, so a git or directory install builds it): dist/esm (ES modules) and dist/cjs
// (CommonJS, with a package.json saying so), each with its .d.ts, from the same sources. tsc comes from this
// package's devDependencies or, inside the service's repository, from the repository's.
import { execFileSync } from "node:child_process";
import { createRequire } from "node:module";
import { rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = fileURLToPath(new URL("..", import.meta.url));
const require = createRequire(import.meta.url);
let tsc;
try {
  tsc = join(dirname(require.resolve("typescript/package.json")), "bin/tsc");
} catch {
  console.error(
    "@licensing/client: building needs TypeScript (npm install --save-dev typescript), or install the packed tarball, which ships dist/",
  );
  process.exit(1);
}
rmSync(`${here}/dist`, { recursive: true, force: true });
execFileSync(process.execPath, [tsc, "-p", "tsconfig.json", "--outDir", "dist/esm"], { cwd: here, stdio: "inherit" });
execFileSync(process.execPath, [tsc, "-p", "tsconfig.cjs.json"], { cwd: here, stdio: "inherit" });
writeFileSync(`${here}/dist/cjs/package.json`, '{ "type": "commonjs" }\n');
