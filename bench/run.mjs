#!/usr/bin/env node
// `npm run bench`: a repeatable load benchmark (DESIGN.md, Performance).
// The bundled Worker (`wrangler deploy --dry-run`) runs under workerd through Miniflare with local D1/R2/DO/Queues
// and fresh state; a baseline Worker that answers the same bytes with no logic runs the same way, so each
// scenario's throughput is read as a ratio to what the runtime can do at all on this machine. wrangler dev's proxy
// is never in the path. The load comes from autocannon (same process, separate event loop work per connection).
//
// Options (environment): BENCH_CONNECTIONS (50), BENCH_SECONDS (10), BENCH_WARMUP_SECONDS (2), BENCH_ONLY (a
// comma-separated list of scenario names). Results: printed, and written to bench/results/<date>.md.
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { gzipSync } from "node:zlib";
import autocannon from "autocannon";
import { Miniflare, convertV4MiniflareOptions } from "miniflare";
import { bundleWorker, configuredWorkerOptions, root, startLocalWorker } from "../scripts/local-worker.mjs";
const connections = Number(process.env.BENCH_CONNECTIONS ?? 50);
const seconds = Number(process.env.BENCH_SECONDS ?? 10);
const warmup = Number(process.env.BENCH_WARMUP_SECONDS ?? 2);
const only = process.env.BENCH_ONLY?.split(",").map((s) => s.trim());
const ADMIN_KEY = "api_BenchAdminKey0000000000000000000";

// 1. Bundle as for deployment, and measure it.
const script = bundleWorker();
const bundle = readFileSync(script);
const bundleSize = { raw: bundle.length, gzip: gzipSync(bundle).length };

// 2. The service under workerd, configured from wrangler.toml, with fresh local state and migrations applied.
const service = await startLocalWorker({
  script,
  bindings: {
    Application__JwtSecret: "bench-jwt-secret-0123456789abcdef0123456789",
    Application__EncryptionKey: "bench-encryption-key",
    Application__AdminUsername: "admin",
    Application__AdminPassword: "Bench-12345",
    Application__AdminApiKey: ADMIN_KEY,
    // The load comes from one IP: protection stays on with a limit no scenario reaches, so "counted" scenarios
    // (a client IP that is not whitelisted) pay the RateLimiter call and the others (127.0.0.1, whitelisted) do not.
    IpFiltering__BruteForceProtection__MaxRequestsPerTimeFrame: "1000000000",
    // The download scenarios use a release anyone may install (no single-use token per request).
    Updates__AllowPublicApplicationReleases: "true",
  },
});
const serviceUrl = service.url;

// 3. The baseline: no logic, the same bytes.
const baseline = new Miniflare(
  convertV4MiniflareOptions({
    modules: true,
    host: "127.0.0.1",
    port: 0,
    cf: false,
    compatibilityDate: configuredWorkerOptions().compatibilityDate,
    script: `export default { fetch(request) {
    const url = new URL(request.url);
    const size = url.searchParams.get("size");
    if (size) return new Response(new Uint8Array(Number(size)), { headers: { "content-type": "application/octet-stream" } });
    const body = url.searchParams.get("body") ?? "Healthy";
    return new Response(body, { headers: { "content-type": url.searchParams.get("type") ?? "text/plain" } });
  } }`,
  }),
);
const baselineUrl = await baseline.ready;

// 4. Seed through the API.
async function api(method, path, body) {
  const res = await fetch(new URL(path, serviceUrl), {
    method,
    headers: { "x-api-key": ADMIN_KEY, "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${text}`);
  return { text, json: text ? JSON.parse(text) : undefined };
}
for (let i = 0; i < 200; i++) {
  await api("POST", "/v1/resources", { resource: { name: `Template ${i}`, type: i % 4 === 0 ? "EmailTemplate" : "File", code: `T-${i}` } });
}
// An application with a free release holding a 1 MiB installer, and a license for the update check.
const MiB = 1024 * 1024;
const productId = (await api("POST", "/v1/products", { product: { code: "bench", name: "Bench", isApplication: true } })).json.productId;
const releaseId = (await api("POST", `/v1/products/${productId}/releases`, { productRelease: { version: "1.0.0", public: true, requiresMaintenance: false } })).json.productReleaseId;
const form = new FormData();
form.set("platform", "win-x64");
form.set("kind", "installer");
form.set("file", new Blob([Uint8Array.from({ length: MiB }, (_, i) => i % 251)]), "Bench Setup 1.0.0.exe");
const uploaded = await fetch(new URL(`/v1/products/${productId}/releases/${releaseId}/downloads`, serviceUrl), { method: "POST", headers: { "x-api-key": ADMIN_KEY }, body: form });
if (uploaded.status !== 201) throw new Error(`seeding the artifact: ${uploaded.status} ${await uploaded.text()}`);
const licenseId = (await api("POST", "/v1/licenses", { license: { productId } })).json.id;
const userKey = (await api("GET", `/v1/licenses?filter=${encodeURIComponent(`id == ${licenseId}`)}&select=userKey`)).json.licenses[0].userKey;
const feedPath = "/v1/updates/bench/latest.yml";
const feedBody = await (await fetch(new URL(feedPath, serviceUrl))).text();
const checkPath = "/v1/updates/bench?platform=win-x64&version=0.9.0";
const checkBody = await (await fetch(new URL(checkPath, serviceUrl), { headers: { "X-Service-User-Key": userKey } })).text();
const downloadPath = "/v1/updates/bench/download/win-x64/1.0.0/Bench%20Setup%201.0.0.exe";
// A differential update's request: 200 ranges of 2 KiB spread over the file, as electron-updater sends them.
const differentialRange = `bytes=${Array.from({ length: 200 }, (_, i) => `${i * 5000}-${i * 5000 + 2047}`).join(", ")}`;
const differentialBytes = (await (await fetch(new URL(downloadPath, serviceUrl), { headers: { range: differentialRange } })).arrayBuffer()).byteLength;

const listPath = `/v1/resources?filter=${encodeURIComponent('type == "EmailTemplate" && name.StartsWith("Template 1")')}&sort=-id&take=20`;
const listBody = (await api("GET", listPath)).text;
const sessionBody = (await api("GET", "/v1/auth/session")).text;
const loginBody = JSON.stringify({ username: "admin", password: "Bench-12345" });

// 5. Scenarios: each against the baseline answering the same bytes.
const sameBytes = (body, type) => `/?type=${encodeURIComponent(type)}&body=${encodeURIComponent(body)}`;
const scenarios = [
  { name: "health", request: { path: "/health" }, baseline: sameBytes("Healthy", "text/plain") },
  { name: "session (API key)", request: { path: "/v1/auth/session", headers: { "x-api-key": ADMIN_KEY } }, baseline: sameBytes(sessionBody, "application/json") },
  {
    name: "session (API key) from a counted IP",
    request: { path: "/v1/auth/session", headers: { "x-api-key": ADMIN_KEY, "cf-connecting-ip": "198.51.100.7" } },
    baseline: sameBytes(sessionBody, "application/json"),
  },
  { name: "list with filter (API key)", request: { path: listPath, headers: { "x-api-key": ADMIN_KEY } }, baseline: sameBytes(listBody, "application/json") },
  { name: "feed (anonymous, cached)", request: { path: feedPath }, baseline: sameBytes(feedBody, "text/yaml") },
  { name: "update check (user key, signed)", request: { path: checkPath, headers: { "X-Service-User-Key": userKey } }, baseline: sameBytes(checkBody, "application/json") },
  { name: "download 1 MiB", request: { path: downloadPath }, baseline: `/?size=${MiB}` },
  { name: "differential: 200 ranges", request: { path: downloadPath, headers: { range: differentialRange } }, baseline: `/?size=${differentialBytes}` },
  {
    name: "login (PBKDF2, 100k iterations)",
    request: { path: "/v1/auth/login", method: "POST", body: loginBody, headers: { "content-type": "application/json" } },
    baseline: sameBytes("{}", "application/json"),
  },
].filter((s) => !only || only.includes(s.name));

function load(url, request, duration) {
  return new Promise((resolve, reject) => {
    autocannon(
      { url: new URL(request.path, url).toString(), method: request.method ?? "GET", headers: request.headers, body: request.body, connections, duration },
      (err, result) => (err ? reject(err) : resolve(result)),
    );
  });
}

async function measure(url, request) {
  if (warmup > 0) await load(url, request, warmup);
  const r = await load(url, request, seconds);
  if (r.non2xx > 0 || r.errors > 0) console.warn(`  warning: ${r.non2xx} non-2xx answers, ${r.errors} errors`);
  return { rps: r.requests.average, p50: r.latency.p50, p99: r.latency.p99 };
}

const rows = [];
for (const scenario of scenarios) {
  process.stdout.write(`${scenario.name} ... `);
  const svc = await measure(serviceUrl, scenario.request);
  const base = await measure(baselineUrl, { path: scenario.baseline });
  rows.push({ scenario: scenario.name, svc, base, ratio: svc.rps / base.rps });
  console.log(`${svc.rps.toFixed(0)} req/s (baseline ${base.rps.toFixed(0)})`);
}

await service.dispose();
await baseline.dispose();
rmSync(dirname(script), { recursive: true, force: true });

// 6. Report.
const kib = (n) => `${(n / 1024).toFixed(1)} KiB`;
const lines = [
  `# Benchmark ${new Date().toISOString()}`,
  "",
  `Machine: ${process.platform} ${process.arch}, Node ${process.version}; ${connections} connections, ${seconds} s per run after ${warmup} s warm-up.`,
  `Bundle: ${kib(bundleSize.raw)} raw, ${kib(bundleSize.gzip)} gzip.`,
  "",
  "| scenario | req/s | p50 ms | p99 ms | baseline req/s | baseline p50 | baseline p99 | ratio |",
  "|---|---|---|---|---|---|---|---|",
  ...rows.map(
    (r) =>
      `| ${r.scenario} | ${r.svc.rps.toFixed(0)} | ${r.svc.p50} | ${r.svc.p99} | ${r.base.rps.toFixed(0)} | ${r.base.p50} | ${r.base.p99} | ${r.ratio.toFixed(2)} |`,
  ),
  "",
];
console.log(`\n${lines.join("\n")}`);
mkdirSync(join(root, "bench/results"), { recursive: true });
const file = join(root, "bench/results", `${new Date().toISOString().slice(0, 10)}.md`);
writeFileSync(file, lines.join("\n"));
console.log(`written to ${file}`);
