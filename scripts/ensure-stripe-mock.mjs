#!/usr/bin/env node
// Stripe's own mock server (github.com/stripe/stripe-mock), which the Stripe Checkout test reads line items from:
// built once with `go install` at the version pinned here (the Go module proxy checks it against go.sum's public
// checksum database) into node_modules/.cache/stripe-mock, and started on a free port by the test. Needs Go, which
// the project's machines carry; without it, say so plainly (the test fails rather than skips).
import { execFileSync, spawn } from "node:child_process";
import { existsSync, mkdirSync } from "node:fs";
import { createServer } from "node:net";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

export const STRIPE_MOCK_VERSION = "v0.203.0";
const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const bin = join(root, "node_modules/.cache/stripe-mock", STRIPE_MOCK_VERSION);

/** The stripe-mock binary, built when missing; throws with the reason when Go cannot build it. */
export function ensureStripeMock() {
  const file = join(bin, "stripe-mock");
  if (existsSync(file)) return file;
  mkdirSync(bin, { recursive: true });
  try {
    execFileSync("go", ["install", `github.com/stripe/stripe-mock@${STRIPE_MOCK_VERSION}`], {
      env: { ...process.env, GOBIN: bin, GOFLAGS: "-mod=mod" },
      stdio: ["ignore", "ignore", "pipe"],
      timeout: 600_000,
    });
  } catch (error) {
    const said = error instanceof Error && "stderr" in error ? String(error.stderr) : String(error);
    throw new Error(
      `stripe-mock ${STRIPE_MOCK_VERSION} could not be built with \`go install\` (Go is needed): ${said}`,
    );
  }
  return file;
}

function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
    server.on("error", reject);
  });
}

/** Starts stripe-mock on a free port: its origin, and how to stop it. */
export async function startStripeMock() {
  const file = ensureStripeMock();
  const port = await freePort();
  const child = spawn(file, ["-http-port", String(port)], { stdio: "ignore" });
  const origin = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 100; i++) {
    try {
      const res = await fetch(`${origin}/v1/customers`, { headers: { authorization: "Bearer sk_test_mock" } });
      if (res.ok) return { origin, stop: () => child.kill() };
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  child.kill();
  throw new Error(`stripe-mock did not answer on ${origin}`);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) console.log(ensureStripeMock());
