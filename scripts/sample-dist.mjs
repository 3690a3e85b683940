#!/usr/bin/env node
// `node scripts/sample-dist.mjs --out DIR [--version 1.1.0] [--name Studio] [--size BYTES]`: writes a small folder
// shaped like electron-builder's output (`electron-builder --publish never`), to try publishing without building an
// app: a Windows NSIS installer and its blockmap, macOS zips for Apple Silicon and Intel with blockmaps, a Linux
// AppImage, and latest.yml, latest-mac.yml and latest-linux.yml listing them with their sha512 and size.
import { createHash, randomBytes } from "node:crypto";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { gzipSync } from "node:zlib";

const USAGE = `usage: node scripts/sample-dist.mjs --out DIR [--version 1.1.0] [--name Studio] [--size BYTES]

Writes a small folder shaped like electron-builder's output (a Windows NSIS installer and its blockmap, macOS zips
with blockmaps, a Linux AppImage, and latest.yml, latest-mac.yml, latest-linux.yml), to try publishing without
building an app:

  --out DIR        the folder to write (made if missing)
  --version V      the version the files and feeds name (default 1.1.0)
  --name NAME      the product name in file names (default Studio)
  --size BYTES     the size of each installer (default 65536)
  -h, --help       this text`;

let values;
try {
  ({ values } = parseArgs({
    options: {
      out: { type: "string" },
      version: { type: "string", default: "1.1.0" },
      name: { type: "string", default: "Studio" },
      size: { type: "string", default: "65536" },
      help: { type: "boolean", short: "h" },
    },
  }));
} catch (error) {
  console.error(`${error instanceof Error ? error.message : error}\n\n${USAGE}`);
  process.exit(2);
}
if (values.help) {
  console.log(USAGE);
  process.exit(0);
}
if (!values.out) {
  console.error(USAGE);
  process.exit(2);
}
if (!/^[1-9]\d*$/.test(values.size)) {
  console.error(`--size must be a whole number of bytes, not '${values.size}'\n\n${USAGE}`);
  process.exit(2);
}
const { out, version, name } = values;
const size = Number(values.size);
mkdirSync(out, { recursive: true });
const sha512 = (bytes) => createHash("sha512").update(bytes).digest("base64");

/** A blockmap as electron-builder writes one: gzipped JSON, 64 KiB blocks with their SHA-256. */
function blockmap(bytes) {
  const sizes = [];
  const checksums = [];
  for (let at = 0; at < bytes.length; at += 65536) {
    const block = bytes.subarray(at, at + 65536);
    sizes.push(block.length);
    checksums.push(createHash("sha256").update(block).digest("base64"));
  }
  return gzipSync(JSON.stringify({ version: "2", files: [{ name: "file", offset: 0, checksums, sizes }] }));
}

function file(fileName, withBlockmap) {
  const bytes = randomBytes(size);
  writeFileSync(join(out, fileName), bytes);
  if (withBlockmap) writeFileSync(join(out, `${fileName}.blockmap`), blockmap(bytes));
  return { url: fileName, sha512: sha512(bytes), size: bytes.length };
}

const releaseDate = new Date().toISOString();
function updateInfo(yml, files) {
  const lines = [`version: ${version}`, "files:"];
  for (const f of files) lines.push(`  - url: ${f.url}`, `    sha512: ${f.sha512}`, `    size: ${f.size}`);
  lines.push(
    `path: ${files[0].url}`,
    `sha512: ${files[0].sha512}`,
    `releaseName: ${name} ${version}`,
    "releaseNotes: |-",
    "  Faster start-up.",
    `releaseDate: '${releaseDate}'`,
  );
  writeFileSync(join(out, yml), `${lines.join("\n")}\n`);
}

updateInfo("latest.yml", [file(`${name} Setup ${version}.exe`, true)]);
updateInfo("latest-mac.yml", [
  file(`${name}-${version}-arm64-mac.zip`, true),
  file(`${name}-${version}-mac.zip`, true),
]);
updateInfo("latest-linux.yml", [file(`${name}-${version}.AppImage`, false)]);
console.log(`${out}: ${name} ${version} for Windows, macOS (arm64, x64) and Linux`);
