/**
 * `npm run dev` (scripts/dev.mjs) and the README's two Quick-start commands on one clone:
 * - a second `npm run dev` on a busy port says so first, names PORT, exits 1 and announces nothing;
 * - its local certificate is self-signed for the loopback names only and is no authority, its key private;
 * - the test pool never reads the .dev.vars `npm run dev` writes (scripts/lib/test-wrangler-config.mjs): the
 *   production-mode tests pass in a copy of the project holding one, and the Node-side Worker's variables are
 *   wrangler.toml's alone.
 * (.ci/run runs `npm run dev` until it answers through the certificate it printed, then `npm test` on that clone.)
 */
import { execFile, execFileSync, spawn } from "node:child_process";
import { copyFileSync, cpSync, existsSync, mkdirSync, mkdtempSync, rmSync, statSync, symlinkSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, describe, expect, it } from "vitest";
// @ts-expect-error: a plain JavaScript module
import { localCertificate } from "../../scripts/lib/dev-cert.mjs";
// @ts-expect-error: a plain JavaScript module
import { root, startLocalWorker } from "../../scripts/local-worker.mjs";
// @ts-expect-error: a plain JavaScript module
import { mailLine } from "../../scripts/lib/dev-mail.mjs";

const run = promisify(execFile);
const cleanup: string[] = [];
afterAll(() => {
  for (const dir of cleanup) rmSync(dir, { recursive: true, force: true });
});

/** A server holding a free loopback port, as a first `npm run dev` would. */
function occupy(): Promise<{ server: Server; port: number }> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      if (address === null || typeof address === "string") throw new Error("no port");
      resolve({ server, port: address.port });
    });
  });
}

describe("npm run dev", () => {
  it("on a busy port says so before anything else, names PORT, exits 1 and prints no ready banner", async () => {
    const { server, port } = await occupy();
    try {
      const started = Date.now();
      const child = spawn(process.execPath, ["scripts/dev.mjs"], {
        cwd: root,
        env: { ...process.env, PORT: String(port), HOST: "127.0.0.1" },
        stdio: ["ignore", "pipe", "pipe"],
        detached: true,
      });
      let output = "";
      child.stdout.on("data", (d) => (output += d));
      child.stderr.on("data", (d) => (output += d));
      const code = await new Promise<number | null>((resolve) => {
        // Still running after 15 s: it went on to build and start; stop its whole group and fail.
        const timer = setTimeout(() => {
          if (child.pid !== undefined) process.kill(-child.pid, "SIGKILL");
        }, 15_000);
        child.on("close", (c) => {
          clearTimeout(timer);
          resolve(c);
        });
      });
      expect(output.split("\n")[0]).toMatch(new RegExp(`^Port ${port} on 127\\.0\\.0\\.1 is in use`));
      expect(output).toMatch(/set PORT to another port: PORT=\d+ npm run dev/);
      expect(output).not.toMatch(/ready/i);
      expect(output.trim().split("\n")).toHaveLength(1);
      expect(code).toBe(1);
      expect(Date.now() - started).toBeLessThan(15_000);
    } finally {
      server.close();
    }
  });

  it("refuses a PORT that is not a port number, naming it", async () => {
    const failed = await run(process.execPath, ["scripts/dev.mjs"], {
      cwd: root,
      env: { ...process.env, PORT: "50OO" },
    }).catch((e: { code: number; stderr: string }) => e);
    expect("code" in failed && failed.code).toBe(1);
    expect((failed as { stderr: string }).stderr).toMatch(/^PORT=50OO is not a port number/);
  });

  it("makes a certificate for the loopback names only, not an authority, with a private key, once", () => {
    const dir = mkdtempSync(join(tmpdir(), "dev-cert-"));
    cleanup.push(dir);
    const first = localCertificate(join(dir, "cert"), "127.0.0.1");
    expect(first.created).toBe(true);
    const text = execFileSync("openssl", ["x509", "-in", first.certFile, "-noout", "-text"], { encoding: "utf8" });
    expect(text).toMatch(/Basic Constraints: critical\s+CA:FALSE/);
    expect(text).toMatch(/Subject Alternative Name:\s+IP Address:127\.0\.0\.1, DNS:localhost\n/);
    expect(text).toMatch(/Extended Key Usage:\s+TLS Web Server Authentication\n/);
    expect(statSync(first.keyFile).mode & 0o077).toBe(0);
    // Kept while valid for the same names; made again for another HOST.
    expect(localCertificate(join(dir, "cert"), "127.0.0.1").created).toBe(false);
    const other = localCertificate(join(dir, "cert"), "192.0.2.7");
    expect(other.created).toBe(true);
    expect(
      execFileSync("openssl", ["x509", "-in", other.certFile, "-noout", "-ext", "subjectAltName"], {
        encoding: "utf8",
      }),
    ).toMatch(/IP Address:127\.0\.0\.1, DNS:localhost, IP Address:192\.0\.2\.7/);
  });
});

describe("where npm run dev says mail goes (issue 37)", () => {
  it("names the console's Outbox when the Worker has no EMAIL binding, as the running service says", async () => {
    const key = "api_DevMailKey000000000000000000000";
    const worker = await startLocalWorker({
      bindings: {
        Application__JwtSecret: "dev-mail-jwt-secret-0123456789abcdef",
        Application__EncryptionKey: "dev-mail",
        Application__AdminUsername: "admin",
        Application__AdminPassword: "Dev-Mail-12345",
        Application__AdminApiKey: key,
      },
    });
    try {
      const base = worker.url.origin;
      const info = (await (await fetch(new URL("/v1/info", base), { headers: { "x-api-key": key } })).json()) as {
        features: { email: string };
      };
      const line = mailLine(info.features, base);
      expect(line).toBe(
        `Mail: no EMAIL binding, nothing is sent: every email (license keys, portal sign-in links) waits in the Outbox: ${base}/console/#/outbox  (docs/email.md)`,
      );
      // The address is the console's (its page is served there).
      expect((await fetch(`${base}/console/`)).status).toBe(200);
    } finally {
      await worker.dispose();
    }
    expect(mailLine({ email: "binding" }, "https://127.0.0.1:5000")).toMatch(/^Mail: sent through the EMAIL binding/);
    expect(mailLine(undefined, "https://127.0.0.1:5000")).toContain("https://127.0.0.1:5000/console/#/outbox");
  }, 60_000);
});

describe("the tests and a developer's .dev.vars", () => {
  /** A copy of the project (sources, tests, configuration; node_modules linked) holding the .dev.vars npm run dev writes. */
  function projectWithDevVars(): string {
    const dir = mkdtempSync(join(tmpdir(), "dev-vars-"));
    cleanup.push(dir);
    // client/src: the service shares the air-gapped codes' one definition with the client package (offline-codes.ts).
    for (const path of ["src", "test", "migrations", "scripts", "proto", "client/src"]) {
      if (!existsSync(join(root, path))) continue;
      mkdirSync(join(dir, path, ".."), { recursive: true });
      cpSync(join(root, path), join(dir, path), { recursive: true });
    }
    for (const file of ["wrangler.toml", "vitest.config.ts", "package.json", "tsconfig.json", ".dev.vars.example"])
      copyFileSync(join(root, file), join(dir, file));
    mkdirSync(join(dir, "console"), { recursive: true });
    if (existsSync(join(root, "console/dist")))
      cpSync(join(root, "console/dist"), join(dir, "console/dist"), { recursive: true });
    else mkdirSync(join(dir, "console/dist"));
    symlinkSync(join(root, "node_modules"), join(dir, "node_modules"));
    // Exactly what `npm run dev` does first on a fresh clone, and a .env beside it (wrangler reads one without .dev.vars).
    copyFileSync(join(dir, ".dev.vars.example"), join(dir, ".dev.vars"));
    copyFileSync(join(dir, ".dev.vars.example"), join(dir, ".env"));
    return dir;
  }

  /** The environment of a child vitest: this run's own markers removed. */
  function childEnv(): NodeJS.ProcessEnv {
    const env = { ...process.env };
    for (const name of Object.keys(env))
      if (name.startsWith("VITEST") || name === "TEST" || name === "NODE_ENV") delete env[name];
    return env;
  }

  it("the production-mode tests pass beside .dev.vars, and the Node-side Worker gets wrangler.toml's variables only", async () => {
    const dir = projectWithDevVars();
    // The Node-side Worker's options (scripts/local-worker.mjs): none of .dev.vars' secrets.
    const { stdout } = await run(
      process.execPath,
      [
        "--input-type=module",
        "-e",
        'import { configuredWorkerOptions } from "./scripts/local-worker.mjs"; console.log(JSON.stringify(Object.keys(configuredWorkerOptions().bindings ?? {})));',
      ],
      { cwd: dir, env: childEnv() },
    );
    const names: string[] = JSON.parse(stdout.trim().split("\n").pop() ?? "[]");
    expect(names).toContain("Application__EnableWebApi");
    for (const secret of ["Application__JwtSecret", "Application__AdminApiKey", "IpFiltering__GatewaySecret"])
      expect(names).not.toContain(secret);
    // The workerd pool: the production checks run with the .dev.vars beside wrangler.toml.
    const result = await run(
      process.execPath,
      [join(root, "node_modules/vitest/vitest.mjs"), "run", "test/production-checks.test.ts"],
      { cwd: dir, env: childEnv(), maxBuffer: 16 * 1024 * 1024 },
    ).catch((e: { stdout: string; stderr: string }) => ({ ...e, failed: true }));
    expect("failed" in result ? `${result.stdout}\n${result.stderr}`.slice(-4000) : "passed").toBe("passed");
    expect(result.stdout).toMatch(/Tests\s+.*\d+ passed/);
  }, 180_000);
});
