// The benchmark's load generator: wrk (Debian's package, installed like nginx when missing, bench/apt.mjs), a C
// program with its own threads, so the generator is not what limits the numbers on two cores (autocannon in Node
// capped a no-logic Worker at about 2,600 requests/s here while wrk drives it past 6,000). Method, headers and body
// come from a generated Lua script, which also prints the results as one JSON line when the run is done.
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";

const run = promisify(execFile);

/** A Lua long string: no escaping needed for any text without its closing bracket (nor ending where it begins). */
function luaString(text) {
  let level = "";
  // `${text}]`: a text ending in "]" (an install id "bench-[<id>]") would close `]]` one bracket early.
  while (`${text}]`.includes(`]${level}]`)) level += "=";
  return `[${level}[${text}]${level}]`;
}

/** Whether a request carries the `[<id>]` placeholder (in its body or a header's value): a fresh id in each request. */
export const hasIdPlaceholder = ({ headers = {}, body }) =>
  (typeof body === "string" && body.includes("[<id>]")) ||
  Object.values(headers).some((value) => String(value).includes("[<id>]"));

function script({ method = "GET", headers = {}, body }) {
  const lines = [`wrk.method = ${luaString(method)}`];
  if (hasIdPlaceholder({ headers, body })) {
    // A fresh id in every request, the same one wherever `[<id>]` stands (the activate scenario: a new machine each
    // time; the session pings: a new install and session each time); each thread seeds on its own. The headers
    // without the placeholder are copied as they are; wrk.format adds Host and Content-Length to the fresh table.
    const fixed = Object.entries(headers).filter(([, value]) => !String(value).includes("[<id>]"));
    const templated = Object.entries(headers).filter(([, value]) => String(value).includes("[<id>]"));
    lines.push(
      "local threads = 0",
      "function setup(thread) threads = threads + 1; thread:set('tid', threads) end",
      "function init(args) math.randomseed(os.time() * 1000 + (tid or 0)) end",
      `local template = ${typeof body === "string" ? luaString(body) : "nil"}`,
      `local fixed = { ${fixed.map(([name, value]) => `[ ${luaString(name)} ] = ${luaString(String(value))}`).join(", ")} }`,
      `local templated = { ${templated.map(([name, value]) => `[ ${luaString(name)} ] = ${luaString(String(value))}`).join(", ")} }`,
      "function request()",
      "  local id = string.format('%08x%08x', math.random(0, 2147483646), math.random(0, 2147483646))",
      "  local headers = {}",
      "  for name, value in pairs(fixed) do headers[name] = value end",
      "  for name, value in pairs(templated) do headers[name] = (value:gsub('%[<id>%]', id)) end",
      "  return wrk.format(nil, nil, headers, template and (template:gsub('%[<id>%]', id)))",
      "end",
    );
  } else {
    for (const [name, value] of Object.entries(headers))
      lines.push(`wrk.headers[ ${luaString(name)} ] = ${luaString(String(value))}`);
    if (body !== undefined) lines.push(`wrk.body = ${luaString(body)}`);
  }
  lines.push(
    "function done(summary, latency, requests)",
    "  local e = summary.errors",
    `  io.write(string.format('\\n{"requests":%d,"duration":%d,"bytes":%d,"p50":%d,"p99":%d,"status":%d,"connect":%d,"read":%d,"write":%d,"timeout":%d}\\n', summary.requests, summary.duration, summary.bytes, latency:percentile(50), latency:percentile(99), e.status, e.connect, e.read, e.write, e.timeout))`,
    "end",
  );
  return lines.join("\n");
}

/**
 * One wrk run: `{ url, method?, headers?, body?, connections, duration }` (seconds). Answers req/s, the request count,
 * p50 and p99 in ms (0.1 ms), bytes/s, answers that were not 2xx or 3xx, and socket errors.
 */
export async function wrk(binary, spec, threads = 2) {
  const dir = mkdtempSync(join(tmpdir(), "bench-wrk-"));
  try {
    const file = join(dir, "request.lua");
    writeFileSync(file, script(spec));
    const conns = Math.max(spec.connections, 1);
    const args = [
      "-t",
      String(Math.min(threads, conns)),
      "-c",
      String(conns),
      "-d",
      `${spec.duration}s`,
      "--timeout",
      "10s",
      "-s",
      file,
      spec.url,
    ];
    const { stdout, stderr } = await run(binary, args, { maxBuffer: 1 << 20 });
    const line = stdout
      .split("\n")
      .reverse()
      .find((l) => l.startsWith("{"));
    if (!line) throw new Error(`wrk printed no result: ${stdout}${stderr}`);
    const r = JSON.parse(line);
    const seconds = r.duration / 1e6;
    return {
      rps: r.requests / seconds,
      total: r.requests,
      p50: Math.round(r.p50 / 100) / 10,
      p99: Math.round(r.p99 / 100) / 10,
      bytesPerSecond: r.bytes / seconds,
      non2xx: r.status,
      errors: r.connect + r.read + r.write,
      timeouts: r.timeout,
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
