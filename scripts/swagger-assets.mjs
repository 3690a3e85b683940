#!/usr/bin/env node
// Part of `npm run console:build`: Swagger UI's files (swagger-ui-dist, pinned in package.json) are copied into the
// Worker's static assets (wrangler.toml [assets], console/dist) under swagger/assets/, where src/routes/swagger-ui.ts serves
// them. As static assets they stay out of the Worker's bundle, whose size every cold start pays for.
import { copyFileSync, mkdirSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const from = dirname(createRequire(import.meta.url).resolve("swagger-ui-dist/package.json"));
const to = join(root, "console/dist/swagger/assets");
mkdirSync(to, { recursive: true });
for (const file of ["swagger-ui-bundle.js", "swagger-ui.css"]) copyFileSync(join(from, file), join(to, file));
