#!/usr/bin/env node
// `npm run bench`: a repeatable load benchmark (DESIGN.md, Performance; docs/performance.md reads its results).
//
// The bundled Worker (`wrangler deploy --dry-run`) runs under workerd through Miniflare with local D1/R2/DO/Queues
// and fresh state (scripts/local-worker.mjs), seeded through its API; a baseline Worker that answers the same bytes
// with no logic runs on the same runtime the same way, so each scenario's throughput is read as a ratio to what the
// runtime can do at all on this machine. wrangler dev's local proxy is never in the path: it alone caps a no-logic
// Worker at ~650 req/s here (TOOLCHAIN.md), which would hide every difference the benchmark exists to show. For the
// artifact download, nginx serving the same file is the static baseline (bench/nginx.mjs). Load comes from wrk
// (bench/wrk.mjs; Debian's package, installed when missing), warm-up then the measured run, service then baseline;
// a check first shows that wrk is not the limit (wrk against nginx's smallest answer, and autocannon, the previous
// generator, against the same baseline). Each row also carries the service workerd's CPU time per request
// (/proc/<pid>/stat before and after the run) and the request's D1 work as the service reports it in Server-Timing
// (Application:ServerTiming is on here), read from a sample request after the run.
// Then the scale runs: the license-bound scenarios again with 10 to 1,000,000 licenses in D1 (filler inserted in
// batches, bench/seed.mjs). workerd's RSS is sampled throughout (bench/memory.mjs).
//
// Quick mode (`npm run bench -- --quick` or BENCH_QUICK=1): 3 s runs after 1 s warm-up, scales 10 and 10,000.
//
// Options (environment):
//   BENCH_CONNECTIONS (50), BENCH_SECONDS (8), BENCH_WARMUP_SECONDS (2): the main table
//   BENCH_LATENCY_SECONDS (3): the hot paths again with one connection, for their latency without queueing
//   BENCH_SCALES ("10,1000,100000,1000000"; empty for none), BENCH_SCALE_SECONDS (3), BENCH_SCALE_WARMUP_SECONDS (1)
//   BENCH_ONLY: comma-separated beginnings of scenario names, e.g. "feed,update check" (main table and scale runs)
//   BENCH_SLICES (4; 3 quick), BENCH_SLICE_SECONDS (2): the licensed hot paths and health in alternating slices, for
//   their ratio to health
//   BENCH_NGINX=0: skip the nginx baseline
//   BENCH_COMMERCE_EVENTS (500; 200 quick; 0 skips), BENCH_COMMERCE_RATE (50 a second): the commerce webhook burst
//   BENCH_IMPORT_ROWS (100000; 10000 quick; 0 skips): the import of a generated CSV through POST /v1/imports and the
//   queue, after the scale runs (bench/import-burst.mjs); BENCH_ONLY selects it as "import", the burst as "commerce"
//   BENCH_PROFILE=1: a CPU profile of each main-table run of the service (bench/profile.mjs), written to
//   bench/profiles/ with a summary printed; profiling slows the service, so a profiled run's numbers are not results
//   BENCH_BUNDLE: a bundle built beforehand (inside the project) instead of bundling the working tree, to compare
//   builds side by side
//   BENCH_AB: the bundle of an older build (inside the project): the A/B comparison instead of all the above, the old
//   build and the new one (BENCH_BUNDLE, else the working tree) in slices taken in turn in one run (bench/ab.mjs;
//   BENCH_AB_LABELS "old,new" names them, e.g. by commit)
// Results: printed, and written to bench/results/<date>.md (BENCH_RESULTS_FILE overrides the path).
import { execFile } from "node:child_process";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { cpus, loadavg, totalmem, release as osRelease } from "node:os";
import { dirname, join } from "node:path";
import { promisify } from "node:util";
import { gzipSync } from "node:zlib";
import { bundleWorker, root, startLocalWorker } from "../scripts/local-worker.mjs";
import { MemorySampler, workerdChildren } from "./memory.mjs";
import { startNginx } from "./nginx.mjs";
import { ensurePackage } from "./apt.mjs";
import { profileWhile, report } from "./profile.mjs";
import { FLOORS, startFloorWorker } from "./floors.mjs";
import { noLogicWorker } from "./no-logic.mjs";
import { fillLicenses } from "./seed.mjs";
import {
  ADMIN_KEY,
  ENCRYPTION_KEY,
  MiB,
  RuntimeLog,
  SERVICE_BINDINGS,
  cpuMsOf,
  requestOf,
  sampleOf,
  seedService,
} from "./service.mjs";
import { wrk } from "./wrk.mjs";
import { commerceBurst, commerceRows } from "./commerce-burst.mjs";
import { importBurst, importRows, importSection } from "./import-burst.mjs";

// A/B mode (BENCH_AB): two builds side by side in one run, bench/ab.mjs; none of the rest.
if (process.env.BENCH_AB) {
  await import("./ab.mjs");
  process.exit(0);
}

const run = promisify(execFile);
const env = process.env;
const quick = process.argv.includes("--quick") || env.BENCH_QUICK === "1";
const connections = Number(env.BENCH_CONNECTIONS ?? 50);
const seconds = Number(env.BENCH_SECONDS ?? (quick ? 3 : 8));
const warmup = Number(env.BENCH_WARMUP_SECONDS ?? (quick ? 1 : 2));
const scales = (env.BENCH_SCALES ?? (quick ? "10,10000" : "10,1000,100000,1000000"))
  .split(",")
  .filter((s) => s.trim() !== "")
  .map(Number);
const latencySeconds = Number(env.BENCH_LATENCY_SECONDS ?? (quick ? 2 : 3));
const scaleSeconds = Number(env.BENCH_SCALE_SECONDS ?? 3);
const scaleWarmup = Number(env.BENCH_SCALE_WARMUP_SECONDS ?? 1);
const profiling = env.BENCH_PROFILE === "1";
const SLICES = Number(env.BENCH_SLICES ?? (quick ? 3 : 4));
const SLICE_SECONDS = Number(env.BENCH_SLICE_SECONDS ?? 2);
const INSPECTOR_PORT = 9229 + 100;
const only = env.BENCH_ONLY?.split(",")
  .map((s) => s.trim().toLowerCase())
  .filter(Boolean);
const wanted = (name) => !only || only.some((prefix) => name.toLowerCase().startsWith(prefix));
const started = Date.now();
const notes = [];

// 0. The load generator.
const wrkFound = ensurePackage("wrk", "wrk", (m) => console.log(m));
if (wrkFound.skipped) {
  notes.push(
    `wrk unavailable (${wrkFound.skipped}): load came from autocannon, which is the bottleneck on small machines; ratios look better than they are.`,
  );
  console.warn(`wrk unavailable: ${wrkFound.skipped}; falling back to autocannon`);
}

// 1. Bundle as for deployment, and measure it.
const script = env.BENCH_BUNDLE ? join(root, env.BENCH_BUNDLE) : bundleWorker();
// The bundle this run made goes with it, also when the run fails.
if (!env.BENCH_BUNDLE) process.on("exit", () => rmSync(dirname(script), { recursive: true, force: true }));
const bundle = readFileSync(script);
const bundleSize = { raw: bundle.length, gzip: gzipSync(bundle, { level: 9 }).length };

const serviceLog = new RuntimeLog("service");
const baselineLog = new RuntimeLog("baseline");

// 2. The service under workerd, configured from wrangler.toml, with fresh local state and migrations applied; its
// workerd process is the one whose memory is reported.
const before = new Set(workerdChildren());
const service = await startLocalWorker({
  script,
  log: serviceLog,
  ...(profiling ? { inspectorPort: INSPECTOR_PORT } : {}),
  bindings: SERVICE_BINDINGS,
});
const serviceUrl = service.url;
const servicePids = workerdChildren().filter((pid) => !before.has(pid));

// 3. The baseline: no logic, the same bytes, deployed the way the service is. The service has static assets (the
// console and Swagger UI's files, wrangler.toml [assets] with run_worker_first), so every request to it first passes
// the platform's static-assets router; the baseline is configured with the same assets, so it pays the same hop and
// the ratios measure the service's own work. The bare no-logic Worker (no assets) is measured too, in the generator
// check: the difference between the two is what the router costs on this machine (docs/performance.md).
// A request with a body (the POST scenarios) has it read before the answer, as the service reads it: a body left
// unread costs the Worker more than one read (a no-logic Worker answered a session ping's POST, its body unread, at
// about three quarters of its rate with the body read), which would flatter every POST scenario's × baseline.
const baselineScript = `function answer(request) {
    const url = new URL(request.url);
    const size = url.searchParams.get("size");
    if (size) return new Response(new Uint8Array(Number(size)), { headers: { "content-type": "application/octet-stream" } });
    const body = url.searchParams.get("body") ?? "Healthy";
    return new Response(body, { headers: { "content-type": url.searchParams.get("type") ?? "text/plain" } });
  }
  export default { fetch(request) {
    return request.body ? request.arrayBuffer().then(() => answer(request)) : answer(request);
  } }`;
const baseline = noLogicWorker({ script: baselineScript, withAssets: true, log: baselineLog });
const baselineUrl = await baseline.ready;
// Found again at every sample: a workerd that Miniflare restarted after a crash has a new pid.
const baselinePids = workerdChildren().filter((pid) => !before.has(pid) && !servicePids.includes(pid));
/** Other workerd processes of the run (the bare no-logic Worker of the generator check), counted nowhere. */
const otherPids = [];
const memory = new MemorySampler(() =>
  workerdChildren().filter((pid) => !before.has(pid) && !baselinePids.includes(pid) && !otherPids.includes(pid)),
);
const baselineMemory = new MemorySampler(() => baselinePids);

// 4. Seed through the API, and the scenarios over that data (bench/service.mjs: what each is sent, which run at
// each scale, which are hot paths measured again with one connection).
// A bundle built beforehand may be an older build, which refuses the seeding of later features (their scenarios are left out).
const seeded = await seedService({
  url: serviceUrl,
  mf: service.mf,
  activations: 1 + scales.length,
  lenient: Boolean(env.BENCH_BUNDLE),
});
const { productId, fileName, fileBytes, d1, api } = seeded;
const scenarios = seeded.scenarios.filter((s) => wanted(s.name));

/** The baseline's path answering the same bytes (and content type) as one answer of the service. */
async function baselinePathFor(request) {
  const sample = sampleOf(request, "sample");
  const res = await fetch(new URL(sample.path, serviceUrl), sample);
  const bytes = new Uint8Array(await res.arrayBuffer());
  if (!res.ok) throw new Error(`sample answer of ${request.path}: ${res.status} ${new TextDecoder().decode(bytes)}`);
  const type = res.headers.get("content-type") ?? "application/octet-stream";
  if (!type.startsWith("text/") && !type.includes("json") && !type.includes("yaml")) return `/?size=${bytes.length}`;
  return `/?type=${encodeURIComponent(type)}&body=${encodeURIComponent(new TextDecoder().decode(bytes))}`;
}

/** One autocannon run from its own process (the previous generator: kept for the generator check). */
async function autocannonLoad(url, request, duration, conns = connections) {
  const spec = {
    url: new URL(request.path, url).toString(),
    method: request.method,
    headers: request.headers,
    body: request.body,
    connections: conns,
    duration,
  };
  const { stdout } = await run(process.execPath, [join(root, "bench/load.mjs"), JSON.stringify(spec)], {
    maxBuffer: 1 << 20,
  });
  return JSON.parse(stdout);
}

/** One load run with wrk (autocannon when wrk is unavailable). */
async function load(url, request, duration, conns = connections) {
  if (wrkFound.skipped) return autocannonLoad(url, request, duration, conns);
  return wrk(wrkFound.binary, {
    url: new URL(request.path, url).toString(),
    method: request.method,
    headers: request.headers,
    body: request.body,
    connections: conns,
    duration,
  });
}

/** CPU time (user + system, ms) the service's workerd processes have used so far (/proc/<pid>/stat, in clock ticks). */
const serviceCpuMs = () => cpuMsOf(memory.pids);

/**
 * Waits `minMs`, then until the Worker whose CPU `cpuMs` reads (the service's) is idle (at most 20 ms of CPU in half a
 * second: its queues drained), for at most 60 s more; answers when it became idle (`performance.now()`). A queue's
 * batches arrive within its batch timeout (5 s) when they are few; a run that queued a message per request (the
 * session pings) leaves a backlog that takes longer, and its writes would land in the next run's numbers.
 */
async function settled(minMs = 0, cpuMs = serviceCpuMs) {
  const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
  await sleep(minMs);
  const end = Date.now() + 60_000;
  while (Date.now() < end) {
    const at = performance.now();
    const before = cpuMs();
    await sleep(500);
    if (cpuMs() - before <= 20) return at;
  }
  console.warn("  the Worker was still busy 60 s after the run");
  return performance.now();
}

/**
 * Two requests in alternating slices (`SLICES` of `SLICE_SECONDS` each, after a warm-up of both): req/s of each over
 * all its slices, and b's ratio to a. `queued`: b sends a queue message per request (the session pings), whose
 * consumer runs in the same workerd after the answers: every slice starts with the Worker idle, and b's slices are
 * charged the time its queue takes to drain after them, so neither side carries the other's backlog and b pays for
 * its own (`bSlices` and `ratioSlices`: over its slices alone). `cpuMs` reads the CPU time of that Worker (the
 * service's; a floor's).
 */
async function interleaved(a, b, url = serviceUrl, { queued = false, cpuMs = serviceCpuMs } = {}) {
  // A request may name its own Worker (`url`): the cached answers are held against the baseline Worker this way.
  await load(a.url ?? url, a, 1);
  await load(b.url ?? url, b, 1);
  const sum = { a: 0, b: 0 };
  // Each side's seconds: its slices, and for a queued b the drain after each.
  const time = { a: 0, b: 0 };
  // The service's CPU over each side's slices (the service's side only: a baseline's is not the service's work).
  const cpu = { a: 0, b: 0 };
  for (let i = 0; i < SLICES; i++) {
    // Which goes first alternates too, so neither always follows the other's queue.
    const order = i % 2 === 0 ? ["a", "b"] : ["b", "a"];
    for (const key of order) {
      const request = key === "a" ? a : b;
      if (queued) await settled(0, cpuMs);
      const before = serviceCpuMs();
      sum[key] += (await load(request.url ?? url, request, SLICE_SECONDS)).total;
      const loaded = performance.now();
      time[key] += SLICE_SECONDS + (queued && key === "b" ? ((await settled(0, cpuMs)) - loaded) / 1000 : 0);
      cpu[key] += serviceCpuMs() - before;
    }
  }
  const slices = SLICES * SLICE_SECONDS;
  return {
    a: sum.a / time.a,
    b: sum.b / time.b,
    ratio: sum.b / time.b / (sum.a / time.a),
    // For a queued b: its rate over its slices alone (the request path, and what its consumer did meanwhile).
    ...(queued ? { bSlices: sum.b / slices, ratioSlices: sum.b / sum.a } : {}),
    cpuA: cpu.a / sum.a,
    cpuB: cpu.b / sum.b,
  };
}

/** One warm-up and measured run; the CPU per request of `pids` (the service's workerd when none are given). */
async function measure(url, request, duration, warm, conns = connections, pids = url === serviceUrl ? undefined : []) {
  const warmed = warm > 0 ? await load(url, request, warm, conns) : { total: 0 };
  const cpuNow = () => (pids ? cpuMsOf(pids) : serviceCpuMs());
  const cpuBefore = cpuNow();
  const r = await load(url, request, duration, conns);
  if ((pids === undefined || pids.length > 0) && r.total > 0) r.cpuMs = (cpuNow() - cpuBefore) / r.total;
  r.warmTotal = warmed.total;
  if (r.non2xx > 0 || r.errors > 0 || r.timeouts > 0)
    console.warn(`  warning: ${r.non2xx} non-2xx answers, ${r.errors} errors, ${r.timeouts} timeouts`);
  return r;
}

/** The D1 work of one request of a scenario, from the service's Server-Timing header (http/d1-session.ts). */
async function d1WorkOf(request) {
  const sample = sampleOf(request, `sample-${crypto.randomUUID()}`);
  const res = await fetch(new URL(sample.path, serviceUrl), sample);
  await res.arrayBuffer();
  const work = {};
  for (const metric of (res.headers.get("server-timing") ?? "").split(",")) {
    const [name, ...params] = metric.trim().split(";");
    const desc = params.find((p) => p.startsWith("desc="));
    if (name.startsWith("d1-") && desc) work[name.slice(3)] = Number(desc.slice(6, -1));
  }
  return work;
}

/** Whether the service's D1 has this table (a bundle built beforehand may predate it). */
async function hasTable(name) {
  const row = await (await d1())
    .prepare("SELECT count(*) AS n FROM sqlite_master WHERE type = 'table' AND name = ?")
    .bind(name)
    .first();
  return row.n > 0;
}
/** The tables written after a response or by the queue: traces, download tokens, the service log, release sessions. */
const laterTables = ["license_traces", "download_tokens", "logs", "release_sessions"];
const laterFound = [];
for (const table of laterTables) if (await hasTable(table)) laterFound.push(table);

/** Rows of the tables written after a response or by the queue. */
async function laterRows() {
  const row = await (await d1())
    .prepare(`SELECT ${laterFound.map((table) => `(SELECT count(*) FROM ${table})`).join(" + ")} AS n`)
    .first();
  return row.n;
}

const fmt = (r) => `${r.rps.toFixed(0)} req/s, p50 ${r.p50} ms, p99 ${r.p99} ms`;

async function fillTo(target) {
  const filled = await fillLicenses(await d1(), { secret: ENCRYPTION_KEY, productId, target });
  if (filled.added > 0)
    console.log(`  ${filled.added} filler licenses inserted in ${filled.seconds.toFixed(1)} s (${filled.total} in D1)`);
  return filled.total;
}

// 6. The main table: every scenario against its baseline, with 10 licenses in D1 (or the first scale).
const mainLicenses = await fillTo(scales[0] ?? 10);
let nginx;
// nginx serves the download scenario's file and the load generator check's smallest answer (wrk's own ceiling).
if (env.BENCH_NGINX !== "0" && (scenarios.some((s) => s.nginx) || !wrkFound.skipped)) {
  nginx = await startNginx(fileName, fileBytes, (m) => console.log(m));
  if (nginx.skipped) {
    notes.push(`nginx baseline skipped: ${nginx.skipped}.`);
    console.warn(`nginx baseline skipped: ${nginx.skipped}`);
    nginx = undefined;
  }
} else if (env.BENCH_NGINX === "0") notes.push("nginx baseline skipped: BENCH_NGINX=0.");

// The load generator's own ceiling: wrk against nginx's smallest answer, and against the no-logic Worker; autocannon
// (the previous generator) against the same Worker, for comparison.
const generator = {};
if (!wrkFound.skipped) {
  console.log(`\nLoad generator check: ${connections} connections, ${seconds} s`);
  if (nginx) generator.nginx = await measure(nginx.url, { path: "/tiny.txt" }, seconds, warmup);
  // The same with a fresh id in each request (the Lua request() of the activate and session-ping scenarios, which
  // builds every request anew): what wrk can send when it cannot reuse one request.
  if (nginx)
    generator.nginxFresh = await measure(
      nginx.url,
      { path: "/tiny.txt", headers: { "X-Service-Install-Id": "bench-install-[<id>]" } },
      seconds,
      warmup,
    );
  generator.baseline = await measure(baselineUrl, { path: "/?body=Healthy" }, seconds, warmup);
  const bare = noLogicWorker({ script: baselineScript, withAssets: false, log: new RuntimeLog("bare") });
  const bareUrl = await bare.ready;
  // Its workerd is neither the service's nor counted in the service's memory and CPU.
  for (const pid of workerdChildren())
    if (!before.has(pid) && !servicePids.includes(pid) && !baselinePids.includes(pid)) otherPids.push(pid);
  generator.bare = await measure(bareUrl, { path: "/?body=Healthy" }, seconds, warmup);
  generator.autocannon = await autocannonLoad(bareUrl, { path: "/?body=Healthy" }, seconds);
  await bare.dispose();
  console.log(
    `  wrk -> nginx (7 bytes): ${generator.nginx ? fmt(generator.nginx) : "skipped"} | with a fresh id in each request: ${generator.nginxFresh ? fmt(generator.nginxFresh) : "skipped"} | wrk -> no-logic Worker: ${fmt(generator.bare)} | with the static-assets router: ${fmt(generator.baseline)} | autocannon -> no-logic Worker: ${fmt(generator.autocannon)}`,
  );
}

// The platform's floors (bench/floors.mjs): the work a hot path cannot avoid, in a no-logic Worker deployed alike.
const floors = [];
if (!wrkFound.skipped) {
  const floor = await startFloorWorker(new RuntimeLog("floor"));
  const floorPids = workerdChildren().filter(
    (pid) => !before.has(pid) && !servicePids.includes(pid) && !baselinePids.includes(pid) && !otherPids.includes(pid),
  );
  otherPids.push(...floorPids);
  console.log(`\nPlatform floors: ${connections} connections, ${seconds} s`);
  for (const { path, name, request, hotPath, against, queues } of FLOORS) {
    const r = await measure(floor.url, { path, ...request }, seconds, warmup, connections, floorPids);
    // A hot path's floor: its ratio to the one read (or to `against`, the session ping's to the no-logic POST) from
    // slices taken in turn, as the hot paths' ratios to health are; the parts' ratios are from their runs.
    const reference = against ? { path: against, ...request } : { path: "/read" };
    const slices = hotPath
      ? await interleaved(reference, { path, ...request }, floor.url, {
          queued: Boolean(queues),
          cpuMs: () => cpuMsOf(floorPids),
        })
      : undefined;
    const ofRead = r.rps / (floors[0]?.r.rps ?? r.rps);
    const toRead = against ? ofRead : (slices?.ratio ?? ofRead);
    const toAgainst = against ? (slices?.ratio ?? r.rps / floors.find((f) => f.path === against).r.rps) : undefined;
    floors.push({ path, name, r, toRead, against, toAgainst, toAgainstSlices: slices?.ratioSlices });
    console.log(
      `  ${path}: ${fmt(r)}, CPU ${r.cpuMs?.toFixed(2)} ms/req, ${toRead.toFixed(2)} × /read${against ? `, ${toAgainst.toFixed(2)} × ${against}` : ""}`,
    );
  }
  await floor.dispose();
}

console.log(
  `\nMain table: ${connections} connections, ${seconds} s after ${warmup} s warm-up, ${mainLicenses} licenses in D1`,
);
memory.phase("main");
/** Rows held against another row of the table in interleaved slices: what a feature costs its path. */
const PAIRED = {
  "feed (user key, rollout + audience)": "feed (user key)",
  "update check (user key, signed, rollout + audience)": "update check (user key, signed)",
};
const rows = [];
for (const scenario of scenarios) {
  // A row before may have left its queue's work behind (the session pings: a message per request): it is done first.
  await settled();
  process.stdout.write(`${scenario.name} ... `);
  // Other work on the machine moves every number: the load average is kept beside each row to read them by.
  const load1 = loadavg()[0];
  const request = requestOf(scenario);
  const baselinePath = await baselinePathFor(request);
  // A licensed hot path is held against the one-read route in interleaved slices: this machine's speed swings by
  // ±15 % between one 10 s run and the next, which two runs made one after the other do not cancel.
  // A scenario that queues a message per request (`queues`) is charged its queue's drain in the slices (interleaved).
  const queued = Boolean(scenario.queues);
  const health =
    scenario.againstHealth && !profiling
      ? await interleaved({ path: "/health" }, request, serviceUrl, { queued })
      : undefined;
  // The slices' traces arrive through the queue within its batch timeout: let them land before the count starts.
  if (health) await settled(5500);
  const laterBefore = scenario.latency ? await laterRows() : undefined;
  let svc;
  if (profiling) {
    await load(serviceUrl, request, warmup);
    const { result, profiles } = await profileWhile(INSPECTOR_PORT, () => measure(serviceUrl, request, seconds, 0));
    svc = result;
    report(join(root, "bench/profiles"), scenario.name, profiles);
  } else svc = await measure(serviceUrl, request, seconds, warmup);
  const work = await d1WorkOf(requestOf(scenario));
  // The baseline's run does not share the machine with the service's queue backlog.
  if (queued) await settled();
  const base = await measure(baselineUrl, { ...request, path: baselinePath }, seconds, warmup);
  // Counted before the slices below, which send other requests to the service.
  let later;
  if (laterBefore !== undefined) {
    // Traces arrive through the queue within its batch timeout (5 s): rows written after the response or by the
    // queue, per request of the scenario (warm-up, run and the sample; plus the requests each connection still had
    // in flight when wrk stopped, which the service answers but wrk does not count).
    await settled(5500);
    later = ((await laterRows()) - laterBefore) / (svc.total + svc.warmTotal + 1 + (warmup > 0 ? 2 : 1) * connections);
  }
  // An anonymous cached answer (and the anonymous session ping, `againstBaseline`) is held against the no-logic Worker
  // in interleaved slices too: its ratio to the baseline is the measure (issues 25 and 27; the ping's target, 0.9, of
  // issue 38), and two runs one after the other move it by the machine's swing.
  // A path with release control is held against the same path without it in interleaved slices (issue 26: within
  // 10 % of its cost without a rollout and an audience).
  const pairedWith = PAIRED[scenario.name];
  const pairedScenario = pairedWith && !profiling ? scenarios.find((s) => s.name === pairedWith) : undefined;
  const paired = pairedScenario
    ? { with: pairedWith, ...(await interleaved(requestOf(pairedScenario), request)) }
    : undefined;
  const againstBaseline = (scenario.againstBaseline || scenario.name.includes("(anonymous, cached)")) && !profiling;
  const vsBase = againstBaseline
    ? await interleaved(
        { ...request, path: baselinePath, url: baselineUrl },
        { ...request, url: serviceUrl },
        serviceUrl,
        { queued },
      )
    : undefined;
  const row = {
    scenario: scenario.name,
    svc,
    base,
    ratio: vsBase ? vsBase.ratio : svc.rps / base.rps,
    vsBase,
    paired,
    load1,
    work,
    health,
    later,
  };
  if (scenario.nginx && nginx) {
    row.nginx = await measure(nginx.url, { path: `/${encodeURIComponent(fileName)}` }, seconds, warmup);
    row.nginxRatio = svc.rps / row.nginx.rps;
  }
  rows.push(row);
  console.log(
    `${fmt(svc)} | baseline ${fmt(base)} | ratio ${row.ratio.toFixed(2)}${health ? ` | interleaved with health: ${health.b.toFixed(0)} vs ${health.a.toFixed(0)} req/s, × health ${health.ratio.toFixed(2)}` : ""}${row.nginx ? ` | nginx ${fmt(row.nginx)} | ratio ${row.nginxRatio.toFixed(2)}` : ""}`,
  );
}
await nginx?.stop();

// The hot paths with one connection: what one request costs when nothing queues before it.
const latencyRows = [];
if (latencySeconds > 0) {
  console.log(`\nLatency: 1 connection, ${latencySeconds} s after 1 s warm-up`);
  for (const scenario of scenarios.filter((s) => s.latency)) {
    await settled();
    const svc = await measure(serviceUrl, requestOf(scenario), latencySeconds, 1, 1);
    latencyRows.push({ scenario: scenario.name, svc });
    console.log(`  ${scenario.name}: ${fmt(svc)}`);
  }
}

// The commerce webhook under a provider's burst (bench/commerce-burst.mjs): BENCH_COMMERCE_EVENTS distinct signed
// purchases (500; 200 quick; 0 for none) at BENCH_COMMERCE_RATE a second (50), each delivered twice, then D1 counted.
const commerceEvents = Number(env.BENCH_COMMERCE_EVENTS ?? (quick ? 200 : 500));
let commerce;
if (commerceEvents > 0 && wanted("commerce webhook burst")) {
  const rate = Number(env.BENCH_COMMERCE_RATE ?? 50);
  console.log(`\nCommerce webhook burst: ${commerceEvents} events at ${rate}/s, each delivered twice`);
  commerce = await commerceBurst({
    url: serviceUrl,
    api: async (method, path, body) => (await api(method, path, body)).json,
    d1,
    events: commerceEvents,
    rate,
  });
  console.log(commerceRows(commerce).join("\n"));
}

// 7. Scale: the license-bound scenarios with more licenses in D1, service only (the baseline does not change).
const scaleScenarios = scenarios
  .filter((s) => s.scale)
  .sort((a, b) => Number(a.scaleLoaded === false) - Number(b.scaleLoaded === false));
const scaleRows = new Map(scaleScenarios.map((s) => [s.name, []]));
const scaleMemory = [];
for (const target of scaleScenarios.length > 0 ? scales : []) {
  const total = await fillTo(target);
  console.log(`\nScale: ${total} licenses, ${scaleSeconds} s after ${scaleWarmup} s warm-up`);
  memory.phase(`scale ${target}`);
  const load1 = loadavg()[0];
  for (const scenario of scaleScenarios) {
    const request = requestOf(scenario);
    const r =
      scenario.scaleLoaded === false
        ? { rps: NaN, p50: NaN, p99: NaN }
        : await measure(serviceUrl, request, scaleSeconds, scaleWarmup);
    // The one-connection run shows what data does to a request's own cost, without the queueing of the loaded run.
    const one = latencySeconds > 0 ? await measure(serviceUrl, request, latencySeconds, 1, 1) : undefined;
    scaleRows.get(scenario.name).push({ ...r, one });
    console.log(`  ${scenario.name}: ${fmt(r)}${one ? ` | 1 connection: p50 ${one.p50} ms, p99 ${one.p99} ms` : ""}`);
  }
  scaleMemory.push({ licenses: total, peak: memory.peak(`scale ${target}`), load1 });
}

// The import of a generated CSV (bench/import-burst.mjs): BENCH_IMPORT_ROWS licenses (100,000; 10,000 quick; 0 for
// none) posted with the admin key, polled until done, then D1 counted. After the scale runs: its licenses would count
// towards their fill.
const importTarget = Number(env.BENCH_IMPORT_ROWS ?? (quick ? 10_000 : 100_000));
let imported;
if (importTarget > 0 && wanted(`import of ${importTarget} licenses`)) {
  await settled();
  console.log(`\nImport of ${importTarget} licenses: a CSV through POST /v1/imports, written by the queue`);
  const adminApi = async (method, path, body) => (await api(method, path, body)).json;
  const common = { url: serviceUrl, adminKey: ADMIN_KEY, api: adminApi, d1, cpuMs: serviceCpuMs, memory };
  imported = await importBurst({ ...common, secret: ENCRYPTION_KEY, rows: importTarget });
  console.log(importRows(imported).join("\n"));
}

memory.stop();
baselineMemory.stop();
const highWater = memory.highWater();
const counts = await (await d1())
  .prepare(
    "SELECT (SELECT count(*) FROM licenses) AS licenses, (SELECT count(*) FROM license_tokens) AS tokens, (SELECT count(*) FROM license_traces) AS traces",
  )
  .first();
await service.dispose();
await baseline.dispose();

if (serviceLog.crashes + baselineLog.crashes > 0) {
  notes.push(
    `workerd crashed during the run and Miniflare restarted it (service ${serviceLog.crashes}, baseline ${baselineLog.crashes} times; its messages are above in the output): rows with errors were measured across a restart.`,
  );
}

// 8. Report.
const kib = (n) => `${(n / 1024).toFixed(1)} KiB`;
const mib = (n) => `${(n / MiB).toFixed(1)} MiB`;
const cpu = cpus();
const healthRps = rows.find((r) => r.scenario === "health")?.svc.rps;
/** A row's ratio to the one-read route: to the health run just before it where there is one, else the health row. */
const toHealth = (r) => (r.health ? r.health.ratio : healthRps ? r.svc.rps / healthRps : undefined);
// No growth is computed when a run completed no request (p50 0): that is a failure, not a speed-up.
const growth = (list) =>
  list.length > 1 && list[0]?.p50 > 0 && list.at(-1)?.p50 > 0
    ? `${(((list.at(-1).p50 - list[0].p50) / list[0].p50) * 100).toFixed(0)} %`
    : "";
/** A queued row's ratio over its slices alone, beside the one charged its drain. */
const slicesAlone = (slices) =>
  slices.ratioSlices === undefined
    ? ""
    : `; ${slices.ratioSlices.toFixed(2)} over its slices alone (${slices.bSlices.toFixed(0)} req/s)`;
const lines = [
  `# Benchmark ${new Date().toISOString()}`,
  "",
  `Machine: ${cpu.length} × ${cpu[0]?.model ?? "cpu"}, ${mib(totalmem())} RAM, ${process.platform} ${osRelease()} ${process.arch}; Node ${process.version}.`,
  `Load: ${wrkFound.skipped ? "autocannon in its own process" : "wrk (2 threads)"}, ${connections} connections; main table ${seconds} s per run after ${warmup} s warm-up, scale runs ${scaleSeconds} s after ${scaleWarmup} s; one-connection runs ${latencySeconds} s after 1 s.`,
  `Service and baseline: the bundled Worker and a no-logic Worker with the same static assets (run_worker_first), each under workerd through Miniflare (no wrangler dev proxy).`,
  `Bundle (wrangler deploy --dry-run): ${kib(bundleSize.raw)} raw, ${kib(bundleSize.gzip)} gzip (limit 1 MiB).`,
  `workerd peak RSS (service): ${mib(memory.peak("main"))} during the main table; ${mib(highWater)} high-water mark (VmHWM) over the whole run, seeding included. The baseline Worker's workerd, for comparison: ${mib(baselineMemory.peak("startup"))} peak.`,
  `Total time: ${((Date.now() - started) / 1000).toFixed(0)} s. Rows at the end: ${counts.licenses} licenses, ${counts.tokens} tokens, ${counts.traces} traces.`,
  ...notes.map((n) => `Note: ${n}`),
  "",
  `## Main table (${mainLicenses} licenses in D1)`,
  "",
  `Ratios: to the no-logic Worker answering the same bytes behind the same static-assets router (× baseline) and to the one-read route, the health check (× health). The licensed hot paths are held against health in interleaved slices (${SLICES} × ${SLICE_SECONDS} s of each, taken in turn; in brackets the path's req/s, then health's, over those slices): this machine's speed swings by up to ±15 % from one run to the next, which slices taken in turn cancel. The anonymous cached answers and the anonymous session ping are held against the no-logic Worker the same way: their × baseline comes from slices taken in turn with it (in brackets the service's req/s, then the baseline's). The no-logic Worker reads a POST's body before it answers, as the service does. The session pings send a queue message per request, whose consumer runs in the service's workerd: their slices start with the service idle and are charged the time its queue takes to drain after them (req/s over the slices and the drains; after it, the ratio over the slices alone: the request path and what the consumer did meanwhile), and their req/s column is the run's alone.`,
  "CPU ms: the service workerd's user + system time per request (10 ms ticks over the run). D1: statements, round trips and rows",
  "written on the request path, from the service's Server-Timing; later rows: rows added per request after the response or by a",
  "queue (traces, download tokens, service log, release sessions), counted in D1 for the hot paths.",
  "",
  "| scenario | req/s | p50 ms | p99 ms | baseline req/s | × baseline | × health | CPU ms/req | D1 statements | D1 round trips | D1 rows written | later rows/req | not 2xx/3xx | load avg |",
  "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
  ...rows.map(
    (r) =>
      `| ${r.scenario} | ${r.svc.rps.toFixed(0)} | ${r.svc.p50} | ${r.svc.p99} | ${r.base.rps.toFixed(0)} | ${r.ratio.toFixed(2)}${r.vsBase ? ` (${r.vsBase.b.toFixed(0)} : ${r.vsBase.a.toFixed(0)})${slicesAlone(r.vsBase)}` : ""} | ${toHealth(r)?.toFixed(2) ?? ""}${r.health ? ` (${r.health.b.toFixed(0)} : ${r.health.a.toFixed(0)})${slicesAlone(r.health)}` : ""} | ${r.svc.cpuMs?.toFixed(2) ?? ""} | ${r.work.statements ?? ""} | ${r.work["round-trips"] ?? ""} | ${r.work["rows-written"] ?? ""} | ${r.later?.toFixed(2) ?? ""} | ${r.svc.non2xx + r.svc.errors + r.svc.timeouts} | ${r.load1.toFixed(1)} |`,
  ),
  "",
];
const pairedRows = rows.filter((r) => r.paired);
if (pairedRows.length > 0) {
  lines.push(
    "## Paired rows (a path with a feature against the same path without it)",
    "",
    `Interleaved slices (${SLICES} × ${SLICE_SECONDS} s of each, taken in turn) of the two paths on the same service; CPU ms/req: the service workerd's over each path's slices.`,
    "",
    "| scenario | against | req/s | against req/s | ratio | CPU ms/req | against CPU ms/req |",
    "|---|---|---|---|---|---|---|",
    ...pairedRows.map(
      (r) =>
        `| ${r.scenario} | ${r.paired.with} | ${r.paired.b.toFixed(0)} | ${r.paired.a.toFixed(0)} | ${r.paired.ratio.toFixed(2)} | ${r.paired.cpuB.toFixed(2)} | ${r.paired.cpuA.toFixed(2)} |`,
    ),
    "",
  );
}
if (commerce) {
  lines.push(
    "## Commerce webhook burst (Lemon Squeezy order_created, bench/commerce-burst.mjs)",
    "",
    "Distinct signed purchases sent open loop at the target rate, each delivered twice (every tenth twice at once); then D1 counted: one order per event (lost: events without an order; duplicate orders: more than one), its licenses, one event row per event, one customer per buyer email.",
    "",
    ...commerceRows(commerce),
    "",
  );
}
if (imported) lines.push(...importSection(imported), "");
if (generator.baseline) {
  lines.push(
    "## Load generator check",
    "",
    "| generator -> target | req/s | p50 ms | p99 ms |",
    "|---|---|---|---|",
    ...(generator.nginx
      ? [
          `| wrk -> nginx, a 7-byte file | ${generator.nginx.rps.toFixed(0)} | ${generator.nginx.p50} | ${generator.nginx.p99} |`,
          `| wrk with a fresh id in each request (Lua request(), as the activate and session-ping scenarios) -> nginx, a 7-byte file | ${generator.nginxFresh.rps.toFixed(0)} | ${generator.nginxFresh.p50} | ${generator.nginxFresh.p99} |`,
        ]
      : []),
    `| wrk -> no-logic Worker | ${generator.bare.rps.toFixed(0)} | ${generator.bare.p50} | ${generator.bare.p99} |`,
    `| wrk -> no-logic Worker with the service's static assets (the baseline of the tables) | ${generator.baseline.rps.toFixed(0)} | ${generator.baseline.p50} | ${generator.baseline.p99} |`,
    `| autocannon (previous generator) -> no-logic Worker | ${generator.autocannon.rps.toFixed(0)} | ${generator.autocannon.p50} | ${generator.autocannon.p99} |`,
    "",
    "wrk reaches more against nginx than the no-logic Worker answers: the Worker, not the generator, sets the baseline.",
    `The platform's static-assets router, which every request to a Worker with [assets] passes first, takes the no-logic Worker from ${generator.bare.rps.toFixed(0)} to ${generator.baseline.rps.toFixed(0)} req/s here: the tables' baseline has it, as the service does.`,
    "",
  );
}
if (floors.length > 0) {
  lines.push(
    "## Platform floors (what a hot path cannot avoid, in a no-logic Worker deployed alike)",
    "",
    `The same static assets, local D1 with the service's schema and a SQLite-backed Durable Object on disk (bench/floors.mjs). A path's ratio to the first row bounds what the service's path doing that work can reach against its health check; the heartbeat's and the validation's floors are a hot path's whole platform work: its POST with a JSON body, its own D1 statement (the service's SQL text, bench/floor-statements.mjs) and its Durable Object call or signature, and their ratios come from slices taken in turn with the first row (${SLICES} × ${SLICE_SECONDS} s of each). The session ping's floor (a queue message per request, and its consumer's write, in the same workerd) is held against the same POST answered with no work, in slices taken in turn and charged its queue's drain as the service's ping is: it bounds what the anonymous ping can reach against the no-logic Worker.`,
    "",
    "| work | req/s | p50 ms | p99 ms | CPU ms/req | × one D1 read | × its reference |",
    "|---|---|---|---|---|---|---|",
    ...floors.map(
      ({ name, r, toRead, against, toAgainst, toAgainstSlices }) =>
        `| ${name} | ${r.rps.toFixed(0)} | ${r.p50} | ${r.p99} | ${r.cpuMs?.toFixed(2) ?? ""} | ${toRead.toFixed(2)} | ${against ? `${toAgainst.toFixed(2)} × \`${against}\`${toAgainstSlices === undefined ? "" : ` (${toAgainstSlices.toFixed(2)} over its slices alone)`}` : ""} |`,
    ),
    "",
  );
  // Each hot path beside its floor: how much of what the platform leaves it the service reaches.
  const bounded = [
    ["floating heartbeat (bearer)", "/heartbeat"],
    ["license validate (bearer)", "/validate"],
  ];
  for (const [scenario, path] of bounded) {
    const row = rows.find((r) => r.scenario === scenario);
    const floor = floors.find((f) => f.path === path);
    const ratio = row && toHealth(row);
    if (!ratio || !floor) continue;
    const bound = floor.toRead;
    lines.push(
      `- ${scenario}: ${ratio.toFixed(2)} × health; its floor ${bound.toFixed(2)} × one read, so ${(ratio / bound).toFixed(2)} of what the platform leaves it.`,
    );
  }
  // The anonymous session ping against the no-logic Worker, beside its floor against the floor's no-logic POST.
  const pingRow = rows.find((r) => r.scenario === "session ping (anonymous, an install each)");
  const pingFloor = floors.find((f) => f.path === "/ping");
  const gatheredFloor = floors.find((f) => f.path === "/ping-gathered");
  if (pingRow && pingFloor)
    lines.push(
      `- ${pingRow.scenario}: ${pingRow.ratio.toFixed(2)} × baseline with its queue's drain charged (${pingRow.vsBase?.ratioSlices?.toFixed(2)} over its slices alone); its floor (a queue message per request) ${pingFloor.toAgainst.toFixed(2)} (${pingFloor.toAgainstSlices?.toFixed(2)}) × the no-logic POST, so ${(pingRow.ratio / pingFloor.toAgainst).toFixed(2)} of what the platform leaves it${gatheredFloor ? `; with the pings gathered per isolate, the floor is ${gatheredFloor.toAgainst.toFixed(2)} (${gatheredFloor.toAgainstSlices?.toFixed(2)})` : ""}.`,
    );
  lines.push("");
}
if (latencyRows.length > 0) {
  lines.push(
    "## Latency with one connection (the hot paths, nothing queued)",
    "",
    "| scenario | req/s | p50 ms | p99 ms |",
    "|---|---|---|---|",
    ...latencyRows.map((r) => `| ${r.scenario} | ${r.svc.rps.toFixed(0)} | ${r.svc.p50} | ${r.svc.p99} |`),
    "",
  );
}
const withNginx = rows.filter((r) => r.nginx);
if (withNginx.length > 0) {
  lines.push(
    `## Static baseline (${nginx?.version ?? "nginx"}, same file, same connections)`,
    "",
    "| scenario | service req/s | service MiB/s | nginx req/s | nginx MiB/s | nginx p50 | nginx p99 | ratio to nginx |",
    "|---|---|---|---|---|---|---|---|",
    ...withNginx.map(
      (r) =>
        `| ${r.scenario} | ${r.svc.rps.toFixed(0)} | ${(r.svc.bytesPerSecond / MiB).toFixed(0)} | ${r.nginx.rps.toFixed(0)} | ${(r.nginx.bytesPerSecond / MiB).toFixed(0)} | ${r.nginx.p50} | ${r.nginx.p99} | ${r.nginxRatio.toFixed(2)} |`,
    ),
    "",
  );
}
if (scaleMemory.length > 0) {
  const heads = scaleMemory.map((s) => s.licenses.toLocaleString("en-US"));
  lines.push(
    `## Scale, ${connections} connections (licenses in D1; req/s, p50 and p99 ms)`,
    "",
    `| scenario | ${heads.map((h) => `${h}: req/s | p50 | p99`).join(" | ")} | p50 growth |`,
    `|---|${heads.map(() => "---|---|---|").join("")}---|`,
    ...[...scaleRows].map(
      ([name, list]) =>
        `| ${name} | ${list.map((r) => (Number.isNaN(r.rps) ? "— | — | —" : `${r.rps.toFixed(0)} | ${r.p50} | ${r.p99}`)).join(" | ")} | ${Number.isNaN(list[0]?.rps) ? "" : growth(list)} |`,
    ),
    "",
  );
  if (latencySeconds > 0) {
    lines.push(
      "## Scale, one connection (p50 and p99 ms)",
      "",
      `| scenario | ${heads.map((h) => `${h}: p50 | p99`).join(" | ")} | p50 growth |`,
      `|---|${heads.map(() => "---|---|").join("")}---|`,
      ...[...scaleRows].map(
        ([name, list]) =>
          `| ${name} | ${list.map((r) => `${r.one.p50} | ${r.one.p99}`).join(" | ")} | ${growth(list.map((r) => r.one))} |`,
      ),
      "",
    );
  }
  lines.push(
    "| licenses in D1 | workerd peak RSS during the scale runs | load average at the start |",
    "|---|---|---|",
    ...scaleMemory.map((s) => `| ${s.licenses.toLocaleString("en-US")} | ${mib(s.peak)} | ${s.load1.toFixed(1)} |`),
    "",
  );
}
console.log(`\n${lines.join("\n")}`);
const file = env.BENCH_RESULTS_FILE ?? join(root, "bench/results", `${new Date().toISOString().slice(0, 10)}.md`);
mkdirSync(dirname(file), { recursive: true });
writeFileSync(file, lines.join("\n"));
console.log(`written to ${file}`);
