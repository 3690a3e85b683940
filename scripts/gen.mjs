#!/usr/bin/env node
// `npm run gen`: TypeScript for the gRPC services from proto/ with buf and protoc-gen-es (local plugins only).
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { createRequire } from "node:module";

if (!existsSync("proto")) {
  console.log("gen: no proto/ directory yet; nothing to generate.");
  process.exit(0);
}
const require = createRequire(import.meta.url);
const buf = require.resolve("@bufbuild/buf/bin/buf");
const run = (args) => {
  const r = spawnSync(buf, args, { stdio: "inherit" });
  if (r.status !== 0) process.exit(r.status ?? 1);
};
run(["lint"]);
run(["generate"]);
