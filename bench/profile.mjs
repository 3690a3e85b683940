// CPU profiles of the service's workerd isolates while a scenario runs (`BENCH_PROFILE=1 npm run bench`): the V8
// inspector that workerd opens for each worker (Miniflare's `inspectorPort`), driven over the DevTools protocol. A
// profile is taken of every isolate a request passes through (Miniflare's entry worker, the static-assets router,
// the service, D1's object) and written as a .cpuprofile that Chrome DevTools opens; the summary printed beside it
// shows where each isolate's time went, by function, self and total.
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";

/** One DevTools-protocol session over the inspector's WebSocket. */
async function connect(url) {
  const socket = new WebSocket(url);
  await new Promise((resolve, reject) => {
    socket.addEventListener("open", resolve, { once: true });
    socket.addEventListener("error", () => reject(new Error(`inspector ${url}: could not connect`)), { once: true });
  });
  let next = 0;
  const pending = new Map();
  socket.addEventListener("message", (event) => {
    const message = JSON.parse(String(event.data));
    const waiting = pending.get(message.id);
    if (!waiting) return;
    pending.delete(message.id);
    if (message.error) waiting.reject(new Error(`${message.error.message} (${url})`));
    else waiting.resolve(message.result);
  });
  return {
    send(method, params = {}) {
      const id = ++next;
      socket.send(JSON.stringify({ id, method, params }));
      return new Promise((resolve, reject) => pending.set(id, { resolve, reject }));
    },
    close: () => socket.close(),
  };
}

/** The isolates worth profiling: the service and the workers Miniflare puts in front of it and behind it. */
const WORTH = /^(core:user:|core:entry|assets:router:|d1:db$)/;

/**
 * Profiles every worth-profiling isolate of the workerd whose inspector listens on `port` while `work()` runs.
 * Answers `{ name -> profile }`.
 */
export async function profileWhile(port, work, intervalMicros = 200) {
  const targets = (await (await fetch(`http://127.0.0.1:${port}/json/list`)).json()).filter((t) => WORTH.test(t.id));
  const sessions = [];
  for (const target of targets) {
    const session = await connect(target.webSocketDebuggerUrl);
    await session.send("Profiler.enable");
    await session.send("Profiler.setSamplingInterval", { interval: intervalMicros });
    sessions.push({ name: target.id, session });
  }
  for (const { session } of sessions) await session.send("Profiler.start");
  let result;
  try {
    result = await work();
  } finally {
    for (const entry of sessions) {
      entry.profile = (await entry.session.send("Profiler.stop")).profile;
      entry.session.close();
    }
  }
  return { result, profiles: Object.fromEntries(sessions.map((s) => [s.name, s.profile])) };
}

/** Self and total sampled time per function of one profile, most expensive first. */
export function summarize(profile, top = 25) {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const samples = new Map();
  for (const id of profile.samples) samples.set(id, (samples.get(id) ?? 0) + 1);
  const total = profile.samples.length;
  const key = (n) => {
    const f = n.callFrame;
    const where = f.url ? `${f.url.split("/").at(-1)}:${f.lineNumber + 1}:${f.columnNumber + 1}` : "";
    return `${f.functionName || "(anonymous)"} ${where}`.trim();
  };
  const self = new Map();
  const inclusive = new Map();
  for (const [id, count] of samples) {
    const node = byId.get(id);
    self.set(key(node), (self.get(key(node)) ?? 0) + count);
    // Each function once per stack, however often it recurs in it.
    const seen = new Set();
    for (let at = id; at !== undefined; at = parent.get(at)) {
      const k = key(byId.get(at));
      if (seen.has(k)) continue;
      seen.add(k);
      inclusive.set(k, (inclusive.get(k) ?? 0) + count);
    }
  }
  const idle = (self.get("(idle)") ?? 0) + (self.get("(program)") ?? 0);
  const rank = (map) =>
    [...map]
      .filter(([k]) => k !== "(idle)" && k !== "(root)")
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([k, v]) => ({ fn: k, pct: (100 * v) / total }));
  return { samples: total, busyPct: (100 * (total - idle)) / total, self: rank(self), total: rank(inclusive) };
}

/** Writes each profile to `dir` and prints its summary. */
export function report(dir, label, profiles, log = console.log) {
  mkdirSync(dir, { recursive: true });
  const slug = label.replace(/[^a-z0-9]+/gi, "-").toLowerCase();
  for (const [name, profile] of Object.entries(profiles)) {
    const file = join(dir, `${slug}.${name.replace(/[^a-z0-9]+/gi, "-")}.cpuprofile`);
    writeFileSync(file, JSON.stringify(profile));
    const s = summarize(profile);
    log(`\n  ${name}: ${s.samples} samples, ${s.busyPct.toFixed(1)} % busy (${file})`);
    log("    self:");
    for (const r of s.self.slice(0, 15)) log(`      ${r.pct.toFixed(1).padStart(5)} %  ${r.fn}`);
    log("    total:");
    for (const r of s.total.slice(0, 25)) log(`      ${r.pct.toFixed(1).padStart(5)} %  ${r.fn}`);
  }
}
