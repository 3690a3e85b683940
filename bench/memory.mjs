// workerd's memory during the benchmark: the resident set size of the workerd processes a Miniflare instance
// started, found by pid (children of this process named workerd) and sampled while the load runs.
import { readFileSync, readdirSync } from "node:fs";

/** Pids of this process's children whose command is workerd (Miniflare spawns workerd directly). */
export function workerdChildren() {
  const pids = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      // comm is in parentheses and may hold spaces: the fields after the last ')' are fixed.
      const comm = stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")"));
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      if (comm === "workerd" && ppid === process.pid) pids.push(Number(entry));
    } catch {
      // The process ended while the table was read.
    }
  }
  return pids;
}

/** A field of /proc/<pid>/status in bytes (VmRSS now, VmHWM the peak so far); 0 when the process is gone. */
function statusBytes(pid, field) {
  try {
    const match = new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(readFileSync(`/proc/${pid}/status`, "utf8"));
    return match ? Number(match[1]) * 1024 : 0;
  } catch {
    return 0;
  }
}

/**
 * Samples the summed RSS of some processes every `intervalMs`, and keeps the peak of each phase the benchmark
 * names with `phase()` (the main table, each scale). `highWater()` is the kernel's own peak (VmHWM), which also
 * covers moments between samples, seeding included. `pids` is a function, asked at every sample, so a process
 * restarted under a new pid is still followed.
 */
export class MemorySampler {
  constructor(pids, intervalMs = 200) {
    this.pidsNow = pids;
    this.peaks = new Map();
    this.current = "startup";
    this.timer = setInterval(() => this.sample(), intervalMs);
    this.timer.unref();
  }

  get pids() {
    return this.pidsNow();
  }

  sample() {
    const rss = this.pids.reduce((sum, pid) => sum + statusBytes(pid, "VmRSS"), 0);
    this.peaks.set(this.current, Math.max(this.peaks.get(this.current) ?? 0, rss));
    return rss;
  }

  /** Starts a named phase; samples from now on count towards its peak. */
  phase(name) {
    this.sample();
    this.current = name;
    this.sample();
  }

  peak(name) {
    return this.peaks.get(name) ?? 0;
  }

  highWater() {
    return this.pids.reduce((sum, pid) => sum + statusBytes(pid, "VmHWM"), 0);
  }

  stop() {
    this.sample();
    clearInterval(this.timer);
  }
}
