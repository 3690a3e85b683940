#!/usr/bin/env node
// Upload throughput with the signing check against without it (issue 41, CONTRACT section 15), in one run: the same
// signed installer (rcedit-x64.exe with an overlay, signed by osslsigncode at bench time: test/node/signing-fixtures.ts)
// is uploaded through the same multipart route of the bundled Worker under Miniflare (scripts/local-worker.mjs),
// interleaved round by round:
//   checked    as `Studio Setup.exe` for win-x64 of a product naming its publisher: the Authenticode signer is read,
//              the image digest recomputed over the staged bytes and the signer's signature verified;
//   unchecked  as `Studio.AppImage` for linux-x64: no identity is read, everything else is the same.
// The instrument first: the same client sends the same bytes to a Node HTTP server that only counts them, so the
// client is shown to push faster than the service takes them (a saturated client would flatten the ratio).
//
//   node bench/upload-signing.mjs            (BENCH_SIGNING_MB=64, BENCH_SIGNING_ROUNDS=6,
//                                             BENCH_RESULTS_FILE=bench/results/<date>-upload-signing.md)
import { createServer } from "node:http";
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { ensureSigningTools } from "../scripts/ensure-signing-tools.mjs";
import { root, startLocalWorker } from "../scripts/local-worker.mjs";
import { bigSignedPe, makeCertificate } from "../test/node/signing-fixtures.ts";

const MB = Number(process.env.BENCH_SIGNING_MB ?? 64);
const ROUNDS = Number(process.env.BENCH_SIGNING_ROUNDS ?? 6);
const KEY = "api_BenchSigningKey0000000000000000";
const PUBLISHER = "Bench Software Ltd";
const date = new Date().toISOString().slice(0, 10);
const out = process.env.BENCH_RESULTS_FILE ?? join(root, `bench/results/${date}-upload-signing.md`);

ensureSigningTools();
const dir = mkdtempSync(join(tmpdir(), "bench-signing-"));
const cert = makeCertificate(PUBLISHER, dir);
const file = await bigSignedPe(MB * 1024 * 1024, cert, dir);
const bytes = readFileSync(file);
const size = statSync(file).size;
const worker = await startLocalWorker({
  bindings: {
    Application__JwtSecret: "bench-signing-jwt-secret-0123456789abcdef",
    Application__EncryptionKey: "bench-signing-encryption-key",
    Application__AdminUsername: "admin",
    Application__AdminPassword: "Bench-Signing-12345",
    Application__AdminApiKey: KEY,
  },
});

async function api(method, path, body) {
  const res = await fetch(new URL(path, worker.url), {
    method,
    headers: { "x-api-key": KEY, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${text}`);
  return JSON.parse(text);
}

const product = await api("POST", "/v1/products", {
  product: { code: "bench-signing", name: "Bench signing", isApplication: true, windowsPublisherNames: [PUBLISHER] },
});
let versions = 0;

/** One multipart upload of the file to a new release; seconds from the first byte sent to the answer. */
async function upload(target) {
  const release = await api("POST", `/v1/products/${product.productId}/releases`, {
    productRelease: { version: `1.0.${versions++}` },
  });
  const form = new FormData();
  form.set("platform", target.platform);
  form.set("kind", "installer");
  form.set("fileName", target.fileName);
  form.set("file", new Blob([bytes]), target.fileName);
  const t0 = performance.now();
  const res = await fetch(
    new URL(`/v1/products/${product.productId}/releases/${release.productReleaseId}/downloads`, worker.url),
    { method: "POST", headers: { "x-api-key": KEY }, body: form },
  );
  const text = await res.text();
  const seconds = (performance.now() - t0) / 1000;
  if (res.status !== 201) throw new Error(`upload ${target.fileName}: ${res.status} ${text}`);
  return seconds;
}

/** The instrument: the same client and body to a server that only counts bytes. */
async function sink() {
  const server = createServer((req, res) => {
    let n = 0;
    req.on("data", (c) => (n += c.length));
    req.on("end", () => res.end(String(n)));
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  const form = new FormData();
  form.set("file", new Blob([bytes]), "x.exe");
  const t0 = performance.now();
  const res = await fetch(`http://127.0.0.1:${server.address().port}/`, { method: "POST", body: form });
  await res.text();
  const seconds = (performance.now() - t0) / 1000;
  server.close();
  return seconds;
}

const checked = { platform: "win-x64", fileName: "Studio Setup.exe" };
const unchecked = { platform: "linux-x64", fileName: "Studio.AppImage" };
const rows = [];
const load = [loadavg()[0]];
await upload(unchecked); // warm-up: the first upload compiles the routes' code paths
for (let round = 1; round <= ROUNDS; round++) {
  // Alternate which goes first, so neither always follows the other.
  const order = round % 2 ? [checked, unchecked] : [unchecked, checked];
  const times = {};
  for (const target of order) times[target === checked ? "checked" : "unchecked"] = await upload(target);
  times.sink = await sink();
  rows.push(times);
  console.log(
    `round ${round}: checked ${times.checked.toFixed(2)} s, unchecked ${times.unchecked.toFixed(2)} s, sink ${times.sink.toFixed(2)} s`,
  );
}
load.push(loadavg()[0]);
await worker.dispose();
rmSync(dir, { recursive: true, force: true });

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const mbps = (seconds) => size / 1024 / 1024 / seconds;
const m = {
  checked: median(rows.map((r) => r.checked)),
  unchecked: median(rows.map((r) => r.unchecked)),
  sink: median(rows.map((r) => r.sink)),
};
const ratios = rows.map((r) => r.unchecked / r.checked);
const lines = [
  `# Upload throughput with the signing check against without it (${date})`,
  "",
  `One run of \`node bench/upload-signing.mjs\`: a ${(size / 1024 / 1024).toFixed(1)} MB signed installer (osslsigncode, SHA-256),`,
  `${ROUNDS} interleaved rounds through \`POST /v1/products/{id}/releases/{id}/downloads\` (multipart, local R2) of the`,
  `bundled Worker under Miniflare; ${cpus().length} cores, load ${load.map((l) => l.toFixed(2)).join(" → ")}.`,
  "",
  "| Upload | Median seconds | MB/s |",
  "| --- | ---: | ---: |",
  `| client → counting sink (the instrument) | ${m.sink.toFixed(2)} | ${mbps(m.sink).toFixed(0)} |`,
  `| unchecked (linux-x64 AppImage: no signer read) | ${m.unchecked.toFixed(2)} | ${mbps(m.unchecked).toFixed(0)} |`,
  `| checked (win-x64 .exe: signer, image digest, signature) | ${m.checked.toFixed(2)} | ${mbps(m.checked).toFixed(0)} |`,
  "",
  `Checked throughput is **${(m.unchecked / m.checked).toFixed(2)}×** the unchecked (median of medians); per round: ${ratios.map((r) => r.toFixed(2)).join(", ")}.`,
  "Every upload answered 201. The check rides the upload's own pass: as the bytes stream into R2 (hashed SHA-256,",
  "SHA-512 and SHA-1 for the record), the PE headers are kept, the image digest is hashed (SHA-256 and SHA-1, until",
  "the signature at the end says which counts) and the certificate table captured; then the signer's signature is",
  "verified. No second read of the stored file.",
  "",
];
writeFileSync(out, lines.join("\n"));
console.log(lines.join("\n"));
console.log(`written to ${out}`);
