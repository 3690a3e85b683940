// Helpers every script and Node-side test that starts servers shares (issue 13: one of each): a free loopback port,
// polling until something is ready, and spawning a server and waiting until it answers.
import { spawn } from "node:child_process";
import { createServer } from "node:net";

/** A TCP port the OS considers free on 127.0.0.1 right now (never a fixed port: others run servers too). */
export function freePort() {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once("error", reject);
    probe.listen(0, "127.0.0.1", () => {
      const { port } = probe.address();
      probe.close(() => resolve(port));
    });
  });
}

/**
 * Polls `check` every `intervalMs` until it returns a value other than undefined (a throw counts as not yet), and
 * returns it; throws after `ms` naming `what`. `alive`, when given, is asked before each attempt and stops the wait
 * early with its message (a server process that exited).
 */
export async function waitFor(what, ms, check, { intervalMs = 100, alive } = {}) {
  const until = Date.now() + ms;
  for (;;) {
    const dead = alive?.();
    if (dead) throw new Error(`${what}: ${dead}`);
    const value = await Promise.resolve()
      .then(check)
      .catch(() => undefined);
    if (value !== undefined) return value;
    if (Date.now() > until) throw new Error(`timed out after ${ms / 1000} s waiting for ${what}`);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

/**
 * Spawns `command` and waits until `url` answers with a status below 500 (HEAD unless `method` says otherwise), or
 * the process exits, or `timeoutMs` pass (then the process is killed). Returns the child process.
 */
export async function spawnAndWait(command, args, { url, method = "HEAD", timeoutMs = 30_000, ...options } = {}) {
  const child = spawn(command, args, options);
  try {
    await waitFor(
      `${command} at ${url}`,
      timeoutMs,
      async () => ((await fetch(url, { method })).status < 500 ? true : undefined),
      {
        intervalMs: 50,
        alive: () =>
          child.exitCode !== null
            ? `exited with ${child.exitCode}`
            : child.signalCode
              ? `killed by ${child.signalCode}`
              : undefined,
      },
    );
  } catch (e) {
    if (child.exitCode === null) child.kill("SIGTERM");
    throw e;
  }
  return child;
}
