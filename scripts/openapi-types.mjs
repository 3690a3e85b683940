#!/usr/bin/env node
// `npm run console:schema` / `npm run client:schema` (`node scripts/openapi-types.mjs <target>...`): regenerates the
// TypeScript types of the OpenAPI document the Worker serves (bundled and run under Miniflare, as the Node-side tests
// do) with openapi-typescript, for each target of TARGETS: the console's typed client and the wire types of
// @licensing/client. openapi-typescript needs TypeScript 5's compiler API (the project builds with TypeScript 7), so
// it runs through npx with both pinned instead of being a project dependency. Commit the results.
//
// Each output starts with the SHA-256 of the part of the document it was generated from (see documentHash), so a test
// can tell an out-of-date file from the served document alone, without running openapi-typescript (checkGenerated).
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { root, startLocalWorker } from "./local-worker.mjs";

/**
 * What each target types: its output file (relative to the repository) and the operations it keeps (all when
 * `paths` is absent). The client keeps only the operations it calls, so the package ships no management API.
 */
export const TARGETS = {
  // A .ts module, not a .d.ts: the enumerations' value arrays (`--enum-values`) are code the console imports.
  console: { out: "console/src/api/schema.ts" },
  client: {
    // A .ts module, not a .d.ts: tsc copies no .d.ts into dist/, and the client's emitted types import this one.
    out: "client/src/gen/openapi.ts",
    paths: [
      "/v1/auth/login",
      "/v1/license/activate",
      "/v1/license/deactivate",
      "/v1/license/validate",
      "/v1/license/request",
      "/v1/license/heartbeat",
      "/v1/license/release",
      "/v1/license/checkout",
      "/v1/license/borrow",
      "/v1/license/return",
      "/v1/report",
      "/v1/updates/{productCode}",
      "/v1/extensions/keys",
    ],
  },
};

const HASH_LINE = /^\/\/ openapi-sha256: ([0-9a-f]{64})\n/;

/**
 * The part of `document` a target is generated from: its paths, and the components they reach through `$ref`s
 * (transitively). The whole document for a target without a path list.
 */
export function selectDocument(target, document) {
  const { paths } = TARGETS[target];
  if (!paths) return document;
  const missing = paths.filter((p) => !document.paths[p]);
  if (missing.length) throw new Error(`${target}: the document has no path ${missing.join(", ")}`);
  const components = {};
  const visit = (value) => {
    if (Array.isArray(value)) return value.forEach(visit);
    if (typeof value !== "object" || value === null) return;
    const ref = typeof value.$ref === "string" ? /^#\/components\/([^/]+)\/([^/]+)$/.exec(value.$ref) : null;
    if (ref) {
      const [, kind, name] = ref;
      components[kind] ??= {};
      if (!(name in components[kind])) {
        components[kind][name] = document.components[kind][name];
        visit(components[kind][name]);
      }
    }
    for (const child of Object.values(value)) visit(child);
  };
  const selected = Object.fromEntries(paths.map((p) => [p, document.paths[p]]));
  visit(selected);
  // Components in the document's order, so the output does not depend on the order of discovery.
  const ordered = Object.fromEntries(
    Object.entries(components).map(([kind, entries]) => [
      kind,
      Object.fromEntries(
        Object.keys(document.components[kind]).flatMap((n) => (n in entries ? [[n, entries[n]]] : [])),
      ),
    ]),
  );
  return { ...document, paths: selected, components: ordered };
}

/**
 * SHA-256 of what openapi-typescript turns into types (paths and components): `info` (the service's version) is left
 * out, since it changes no type.
 */
export function documentHash(document) {
  return createHash("sha256")
    .update(JSON.stringify({ paths: document.paths, components: document.components }))
    .digest("hex");
}

/**
 * Whether a target's committed file was generated from the served `document`: `{ file, committed, served }`, the
 * two hashes (committed `undefined` when the file has no hash line).
 */
export function checkGenerated(target, document) {
  const file = join(root, TARGETS[target].out);
  const committed = HASH_LINE.exec(readFileSync(file, "utf8"))?.[1];
  return { file, committed, served: documentHash(selectDocument(target, document)) };
}

/** Writes each target's types from the served document. */
async function generate(targets) {
  const worker = await startLocalWorker();
  let document;
  try {
    document = await (await fetch(new URL("/swagger/v1/swagger.json", worker.url))).json();
  } finally {
    await worker.dispose();
  }
  const dir = mkdtempSync(join(tmpdir(), "openapi-types-"));
  for (const target of targets) {
    const selected = selectDocument(target, document);
    const input = join(dir, `${target}.json`);
    writeFileSync(input, JSON.stringify(selected));
    const out = join(root, TARGETS[target].out);
    const run = spawnSync(
      "npx",
      // --enum-values: every enumeration's values as an exported array in the document's order, so the named
      // enumerations (`LicenseType` numbers, `LicenseTypeName` names, index order; src/http/entity.ts namedEnum) and
      // the roles (`RoleName`) are taken from the generated module, never copied.
      [
        "-y",
        "-p",
        "openapi-typescript@7.13.0",
        "-p",
        "typescript@5.9.3",
        "openapi-typescript",
        input,
        "--enum-values",
        "-o",
        out,
      ],
      { stdio: "inherit", cwd: tmpdir() },
    );
    if (run.status !== 0) process.exit(run.status ?? 1);
    writeFileSync(out, `// openapi-sha256: ${documentHash(selected)}\n${readFileSync(out, "utf8")}`);
    // In the tree's format where Biome formats (biome.json leaves gen/ folders as their tools write them).
    const format = spawnSync(
      join(root, "node_modules/.bin/biome"),
      ["format", "--write", "--no-errors-on-unmatched", out],
      { stdio: ["ignore", "ignore", "inherit"], cwd: root },
    );
    if (format.status !== 0) process.exit(format.status ?? 1);
    console.log(`${target}: wrote ${out}`);
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  const targets = process.argv.slice(2);
  const unknown = targets.filter((t) => !(t in TARGETS));
  if (!targets.length || unknown.length) {
    console.error(`usage: node scripts/openapi-types.mjs <${Object.keys(TARGETS).join("|")}>...`);
    process.exit(2);
  }
  await generate(targets);
}
