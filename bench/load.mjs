#!/usr/bin/env node
// One load run of the benchmark (bench/run.mjs), in a process of its own: the load generator must not share an
// event loop with the process that started workerd and nginx, or its own work would be counted against them.
//
// Usage: node bench/load.mjs '<json>' where the JSON is { url, method?, headers?, body?, connections, duration }.
// A body or header containing `[<id>]` gets a fresh unique id in each request (autocannon's idReplacement, over the
// whole request): the activate scenario uses it for a new machine per request, the session pings for a new install.
// Prints one JSON line: req/s, latency percentiles (ms), bytes/s, and how many answers were not 2xx. The percentiles
// come from every answer's own time, to 0.1 ms (autocannon's histogram keeps whole milliseconds, too coarse for the
// one-connection runs).
import autocannon from "autocannon";
import { hasIdPlaceholder } from "./wrk.mjs";

const spec = JSON.parse(process.argv[2] ?? "{}");
const times = [];
const run = autocannon({
  url: spec.url,
  method: spec.method ?? "GET",
  headers: spec.headers ?? {},
  body: spec.body,
  connections: spec.connections,
  duration: spec.duration,
  idReplacement: hasIdPlaceholder(spec),
});
run.on("response", (_client, status, _bytes, ms) => {
  if (status >= 200 && status < 300) times.push(ms);
});
const result = await run;
times.sort((a, b) => a - b);
const percentile = (p) =>
  times.length === 0
    ? 0
    : Math.round(times[Math.min(times.length - 1, Math.floor((p / 100) * times.length))] * 10) / 10;
process.stdout.write(
  `${JSON.stringify({
    rps: result.requests.average,
    total: result.requests.total,
    p50: percentile(50),
    p99: percentile(99),
    bytesPerSecond: result.throughput.average,
    non2xx: result.non2xx,
    errors: result.errors,
    timeouts: result.timeouts,
  })}\n`,
);
