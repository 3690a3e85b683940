// `BENCH_AB=<old bundle> npm run bench`: two builds side by side in one run (bench/run.mjs hands over to this file).
//
// Two runs of `npm run bench`, one per build, differ by up to ±15 % on this machine whatever the builds, so a ratio
// taken in one run and compared with the other's moves by ±0.06 for the same code. Here both builds run at once as two
// service Workers under workerd through Miniflare, each started as bench/run.mjs starts the service
// (scripts/local-worker.mjs, fresh local state, the same bindings and seeding, bench/service.mjs), and each path is
// loaded in alternating slices, old then new then new then old… (the order flips every slice, so neither build always
// goes first and a steady drift of the machine cancels over each four slices), one Worker under load at a time while
// the other is idle. A path's new/old ratio is the sum of new's requests over the sum of old's across its slices.
// Health is compared the same way: its ratio shows what is left of the machine's drift (near 1.00 for the same code).
//
// Options (environment): BENCH_AB the old bundle (a path inside the project, e.g. bench/.out/old/index.js);
// BENCH_BUNDLE the new bundle (else the working tree, bundled); BENCH_AB_LABELS "old,new" (e.g. their commits);
// BENCH_ONLY beginnings of scenario names (default: health, the hot paths and the 1 MiB download); BENCH_SLICES (8),
// BENCH_SLICE_SECONDS (2); BENCH_CONNECTIONS (50); BENCH_RESULTS_FILE (bench/results/<date>-ab.md).
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { cpus, loadavg, totalmem, release as osRelease } from "node:os";
import { dirname, join, relative, resolve } from "node:path";
import { gzipSync } from "node:zlib";
import { bundleWorker, root, startLocalWorker } from "../scripts/local-worker.mjs";
import { ensurePackage } from "./apt.mjs";
import { workerdChildren } from "./memory.mjs";
import { fillLicenses } from "./seed.mjs";
import {
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

const env = process.env;
const connections = Number(env.BENCH_CONNECTIONS ?? 50);
const SLICES = Number(env.BENCH_SLICES ?? 8);
const SLICE_SECONDS = Number(env.BENCH_SLICE_SECONDS ?? 2);
const only = env.BENCH_ONLY?.split(",")
  .map((s) => s.trim().toLowerCase())
  .filter(Boolean);
// The main table's licenses in D1 (bench/run.mjs: the first scale, else 10).
const licenses = Number((env.BENCH_SCALES ?? "").split(",")[0]) || 10;
const started = Date.now();
const notes = [];

const found = ensurePackage("wrk", "wrk", (m) => console.log(m));
if (found.skipped) throw new Error(`the A/B comparison needs wrk: ${found.skipped}`);

const [oldLabel, newLabel] = (env.BENCH_AB_LABELS ?? "").split(",").map((s) => s.trim());
const oldScript = resolve(root, env.BENCH_AB);
const newScript = env.BENCH_BUNDLE ? resolve(root, env.BENCH_BUNDLE) : bundleWorker();
if (!env.BENCH_BUNDLE) process.on("exit", () => rmSync(dirname(newScript), { recursive: true, force: true }));

/** One build: started and seeded as the benchmark's service, its workerd found by pid for its CPU time. */
async function startSide(key, script, label) {
  const log = new RuntimeLog(key);
  const before = new Set(workerdChildren());
  const service = await startLocalWorker({ script, log, bindings: SERVICE_BINDINGS });
  const pids = workerdChildren().filter((pid) => !before.has(pid));
  console.log(
    `${key} (${label || "no label"}): ${relative(root, script)} at ${service.url}, workerd ${pids.join(", ")}`,
  );
  const seeded = await seedService({ url: service.url, mf: service.mf, activations: 1, lenient: true });
  const filled = await fillLicenses(await seeded.d1(), {
    secret: ENCRYPTION_KEY,
    productId: seeded.productId,
    target: licenses,
  });
  const bytes = readFileSync(script);
  return {
    key,
    label,
    script,
    size: { raw: bytes.length, gzip: gzipSync(bytes, { level: 9 }).length },
    service,
    url: service.url,
    pids,
    log,
    seeded,
    licenses: filled.total,
  };
}
// One after the other: seeding is not measured, and the two never compete for the cores while they start.
const oldSide = await startSide("old", oldScript, oldLabel);
const newSide = await startSide("new", newScript, newLabel);
const sides = [oldSide, newSide];
for (const side of sides) {
  if (side.seeded.missing.size > 0)
    notes.push(
      `${side.key} build refused the seeding of ${[...side.seeded.missing].join(", ")}: the scenarios that need it are left out.`,
    );
}

const byName = (side) => new Map(side.seeded.scenarios.map((s) => [s.name, s]));
const oldScenarios = byName(oldSide);
const newScenarios = byName(newSide);
const wanted = (s) =>
  only
    ? only.some((prefix) => s.name.toLowerCase().startsWith(prefix))
    : s.name === "health" || s.latency || s.name.startsWith("download");
const selected = newSide.seeded.scenarios.filter((s) => wanted(s) && oldScenarios.has(s.name));

/** One wrk run against one side. */
const load = (side, request, duration) =>
  wrk(found.binary, {
    url: new URL(request.path, side.url).toString(),
    method: request.method,
    headers: request.headers,
    body: request.body,
    connections,
    duration,
  });

/** One request's status on each side before the slices: a path that fails on a build is named, not measured. */
async function statusOf(side, request) {
  const sample = sampleOf(request, `sample-${crypto.randomUUID()}`);
  const res = await fetch(new URL(sample.path, side.url), { ...sample, redirect: "manual" });
  await res.arrayBuffer();
  return res.status;
}

console.log(
  `\nA/B: ${selected.length} paths, ${SLICES} × ${SLICE_SECONDS} s slices of each build in turn, ${connections} connections`,
);
const rows = [];
for (const scenario of selected) {
  const request = { old: requestOf(oldScenarios.get(scenario.name)), new: requestOf(newScenarios.get(scenario.name)) };
  const side = { old: oldSide, new: newSide };
  const load1 = loadavg()[0];
  const status = { old: await statusOf(oldSide, request.old), new: await statusOf(newSide, request.new) };
  // Warm-up of both, 1 s each, in the order of the first slice's second and first (so the first slice follows the
  // other build, as every later one does half the time).
  await load(newSide, request.new, 1);
  await load(oldSide, request.old, 1);
  const sum = {
    old: { total: 0, bad: 0, cpuMs: 0, p50: [] },
    new: { total: 0, bad: 0, cpuMs: 0, p50: [] },
  };
  const pairs = [];
  for (let i = 0; i < SLICES; i++) {
    const order = i % 2 === 0 ? ["old", "new"] : ["new", "old"];
    const pair = {};
    for (const key of order) {
      const cpuBefore = cpuMsOf(side[key].pids);
      const r = await load(side[key], request[key], SLICE_SECONDS);
      sum[key].cpuMs += cpuMsOf(side[key].pids) - cpuBefore;
      sum[key].total += r.total;
      sum[key].bad += r.non2xx + r.errors + r.timeouts;
      sum[key].p50.push(r.p50);
      pair[key] = r.total;
    }
    pairs.push(pair.old > 0 ? pair.new / pair.old : Number.NaN);
  }
  const seconds = SLICES * SLICE_SECONDS;
  const median = (list) => [...list].sort((a, b) => a - b)[Math.floor(list.length / 2)];
  const row = {
    scenario: scenario.name,
    status,
    load1,
    old: { ...sum.old, rps: sum.old.total / seconds, p50: median(sum.old.p50) },
    new: { ...sum.new, rps: sum.new.total / seconds, p50: median(sum.new.p50) },
    ratio: sum.old.total > 0 ? sum.new.total / sum.old.total : Number.NaN,
    pairs: pairs.filter((p) => Number.isFinite(p)),
  };
  // Answers that are mostly errors measure the error path, not the route.
  row.invalid = ["old", "new"].filter((k) => row[k].total === 0 || row[k].bad > row[k].total / 2);
  rows.push(row);
  console.log(
    `  ${scenario.name}: old ${row.old.rps.toFixed(0)} req/s, new ${row.new.rps.toFixed(0)} req/s, new/old ${row.ratio.toFixed(3)} (slices ${Math.min(...row.pairs).toFixed(2)}–${Math.max(...row.pairs).toFixed(2)})${row.invalid.length ? ` — NOT A MEASUREMENT (${row.invalid.join(", ")}: mostly not 2xx/3xx)` : ""}`,
  );
  // Traces and logs of the slices arrive through each build's queue within its batch timeout (5 s): let them land
  // before the next path, so the next path's slices do not carry this one's writes.
  await new Promise((r) => setTimeout(r, 5500));
}

for (const s of sides) {
  if (s.log.crashes > 0)
    notes.push(
      `the ${s.key} build's workerd crashed ${s.log.crashes} times and Miniflare restarted it: its rows were measured across a restart (and its CPU time is lost after it).`,
    );
}
for (const s of sides) await s.service.dispose();

const kib = (n) => `${(n / 1024).toFixed(1)} KiB`;
const cpu = cpus();
const cpuPerReq = (x) => (x.total > 0 && x.cpuMs > 0 ? (x.cpuMs / x.total).toFixed(2) : "");
const identity = (s) =>
  `\`${relative(root, s.script)}\`${s.label ? ` (${s.label})` : ""}, ${kib(s.size.raw)} raw, ${kib(s.size.gzip)} gzip`;
const lines = [
  `# A/B benchmark ${new Date().toISOString()}`,
  "",
  `Old: ${identity(oldSide)}.`,
  `New: ${identity(newSide)}.`,
  "",
  `Machine: ${cpu.length} × ${cpu[0]?.model ?? "cpu"}, ${(totalmem() / MiB).toFixed(1)} MiB RAM, ${process.platform} ${osRelease()} ${process.arch}; Node ${process.version}.`,
  `Load: wrk (2 threads), ${connections} connections. Each build is a service Worker under workerd through Miniflare with its own fresh state, seeded alike through its API (bench/service.mjs) with ${oldSide.licenses} and ${newSide.licenses} licenses in D1; both run for the whole comparison, one under load at a time.`,
  `Slices: for each path, 1 s of warm-up on each build, then ${SLICES} slices of ${SLICE_SECONDS} s on each, in turn (old, new, new, old, old, new…). req/s: the build's requests over its ${SLICES * SLICE_SECONDS} s; new/old: new's requests over old's across all slices; the range: the smallest and largest ratio of one slice pair. Health is compared the same way: its ratio is what is left of the machine's drift.`,
  "CPU ms/req: the build's workerd user + system time over its slices per request (10 ms ticks). p50: the median of its slices' p50. Not 2xx/3xx: answers that were not, plus socket errors and timeouts; a row whose answers are mostly that is not a measurement.",
  `Total time: ${((Date.now() - started) / 1000).toFixed(0)} s.`,
  ...notes.map((n) => `Note: ${n}`),
  "",
  "| path | old req/s | new req/s | new/old | slice pairs min–max | old CPU ms/req | new CPU ms/req | old p50 ms | new p50 ms | old not 2xx/3xx | new not 2xx/3xx | status of a sample (old, new) | load avg |",
  "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
  ...rows.map(
    (r) =>
      `| ${r.scenario}${r.invalid.length ? " — **not a measurement**" : ""} | ${r.old.rps.toFixed(0)} | ${r.new.rps.toFixed(0)} | ${r.ratio.toFixed(3)} | ${r.pairs.length ? `${Math.min(...r.pairs).toFixed(2)}–${Math.max(...r.pairs).toFixed(2)}` : ""} | ${cpuPerReq(r.old)} | ${cpuPerReq(r.new)} | ${r.old.p50} | ${r.new.p50} | ${r.old.bad} | ${r.new.bad} | ${r.status.old}, ${r.status.new} | ${r.load1.toFixed(1)} |`,
  ),
  "",
];
console.log(`\n${lines.join("\n")}`);
const file = env.BENCH_RESULTS_FILE ?? join(root, "bench/results", `${new Date().toISOString().slice(0, 10)}-ab.md`);
mkdirSync(dirname(file), { recursive: true });
writeFileSync(file, lines.join("\n"));
console.log(`written to ${file}`);
