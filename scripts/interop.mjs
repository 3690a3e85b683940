// `npm run interop`: the interop suite of CONTRACT 14. Starts the service (the bundled Worker under Miniflare, or the
// one at `--url`, e.g. `wrangler dev`, with `--admin-key`), seeds a product with releases and, for each language,
// licenses (node-locked, floating) plus an expired one, builds every language of clients/interop.json (its `build`),
// then runs every case through each language's `run` and checks its output: activate, validate online and within
// and beyond the offline grace, floating seats, license files, air-gap codes, the signed update check, sessions,
// deactivate, refusals, and bench-validate for a moment (npm run bench:clients times it). Finally a license file
// checked out by each language is verified by every other, printed as a table. Exits 1 on any failure.
//
// `--dev` runs the suite against `wrangler dev` as `npm run dev` starts it (HTTPS with the local certificate, passed to
// every case as `--ca`; the admin key of .dev.vars), on a free port, stopped at the end. A language's optional
// `example` command (clients/interop.json) is run too, against the same service, with LICENSING_URL,
// LICENSING_PRODUCT, LICENSING_USER_KEY, LICENSING_MACHINE, LICENSING_FLOATING_KEY, LICENSING_CA (a PEM path or empty)
// and LICENSING_STATE (an empty directory) in its environment: it must exit 0.
//
//   npm run interop [-- --dev | --url http://127.0.0.1:8787 --admin-key <key>] [--only typescript,go] [--jobs 4]
//                      [--ca <pem>] [--config clients/interop.json] [--verbose]
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { availableParallelism, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { adminApi, LOCAL_ADMIN_KEY, quote, sh as shell, startInteropWorker } from "./lib/interop-service.mjs";
import { root } from "./local-worker.mjs";

const { values: args } = parseArgs({
  options: {
    url: { type: "string" },
    dev: { type: "boolean", default: false },
    "admin-key": { type: "string" },
    only: { type: "string" },
    jobs: { type: "string" },
    ca: { type: "string" },
    config: { type: "string", default: "clients/interop.json" },
    verbose: { type: "boolean", default: false },
  },
});

const DAY = 86_400_000;
const CASE_TIMEOUT_MS = 120_000;
/** A case's command, killed after CASE_TIMEOUT_MS unless told otherwise. */
const sh = (command, timeout = CASE_TIMEOUT_MS) => shell(command, timeout);
const started = Date.now();

const languages = JSON.parse(readFileSync(resolve(root, args.config), "utf8"));
const only = args.only?.split(",").map((s) => s.trim());
const names = Object.keys(languages).filter((l) => !only || only.includes(l));
if (names.length === 0) {
  console.error(`interop: no language to run (${args.config} has ${Object.keys(languages).join(", ")})`);
  process.exit(2);
}

// ---------------------------------------------------------------------------------------------------------------
// Processes: at most `jobs` at a time (the machine may have few cores; the cases mostly wait on the service).

const jobs = Number(args.jobs ?? Math.max(2, Math.min(6, availableParallelism() * 2)));
let running = 0;
const waiting = [];
async function slot(run) {
  if (running >= jobs) await new Promise((resolve) => waiting.push(resolve));
  running++;
  try {
    return await run();
  } finally {
    running--;
    waiting.shift()?.();
  }
}

// ---------------------------------------------------------------------------------------------------------------
// The service.

/** A base URL where nothing listens: the service unreachable. */
async function closedPort() {
  const server = createServer();
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address();
  await new Promise((resolve) => server.close(resolve));
  return `http://127.0.0.1:${port}`;
}

/**
 * `npm run dev` on a free port, as a newcomer starts it: its process group (to stop wrangler and workerd with it), the
 * base URL it announced, and the certificate to trust.
 */
async function startDev() {
  const free = createServer();
  await new Promise((resolve) => free.listen(0, "127.0.0.1", resolve));
  const { port } = free.address();
  await new Promise((resolve) => free.close(resolve));
  console.log(`interop: starting npm run dev on port ${port}…`);
  const state = mkdtempSync(join(tmpdir(), "licensing-interop-dev-"));
  const child = spawn("npm", ["run", "dev"], {
    cwd: root,
    // A state of its own: a developer's `npm run dev` and its data are left alone.
    env: { ...process.env, PORT: String(port), LICENSING_DEV_STATE: state },
    stdio: ["ignore", "pipe", "pipe"],
    detached: true,
  });
  let log = "";
  const ready = new RegExp(`^Licensing service ready at (https?://127\\.0\\.0\\.1:${port})`, "m");
  const url = await new Promise((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`npm run dev did not get ready within 4 minutes:\n${log}`)),
      240_000,
    );
    const seen = (d) => {
      log += d;
      const m = ready.exec(log);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]);
      }
    };
    child.stdout.on("data", seen);
    child.stderr.on("data", seen);
    child.on("exit", (code) => reject(new Error(`npm run dev ended (${code}) before it was ready:\n${log}`)));
  });
  const vars = readFileSync(join(root, ".dev.vars"), "utf8");
  const key = /^Application__AdminApiKey=(.+)$/m.exec(vars)?.[1]?.trim();
  const cert = join(root, ".wrangler/dev-cert/cert.pem");
  return {
    url,
    key,
    ca: url.startsWith("https:") && existsSync(cert) ? cert : undefined,
    stop: async () => {
      try {
        process.kill(-child.pid, "SIGTERM");
      } catch {}
      for (let i = 0; i < 30 && child.exitCode === null; i++) await new Promise((r) => setTimeout(r, 500));
      try {
        process.kill(-child.pid, "SIGKILL");
      } catch {}
      rmSync(state, { recursive: true, force: true });
    },
  };
}

let worker;
let dev;
let base;
let adminKey;
if (args.dev) {
  // The suite itself runs in a second process that trusts the certificate `npm run dev` made (Node reads
  // NODE_EXTRA_CA_CERTS when it starts), against that service.
  dev = await startDev();
  const rest = process.argv.slice(2).filter((a) => a !== "--dev");
  const child = spawn(
    process.execPath,
    [process.argv[1], ...rest, "--url", dev.url, "--admin-key", dev.key, ...(dev.ca ? ["--ca", dev.ca] : [])],
    { cwd: root, stdio: "inherit", env: { ...process.env, ...(dev.ca ? { NODE_EXTRA_CA_CERTS: dev.ca } : {}) } },
  );
  const code = await new Promise((resolve) => child.on("exit", (c) => resolve(c ?? 1)));
  await dev.stop();
  process.exit(code);
} else if (args.url) {
  base = args.url.replace(/\/+$/, "");
  adminKey = args["admin-key"] ?? process.env.LICENSING_ADMIN_KEY;
  if (!adminKey) {
    console.error("interop: --url needs the service's admin API key: --admin-key or LICENSING_ADMIN_KEY");
    process.exit(2);
  }
} else {
  console.log("interop: starting the bundled Worker…");
  adminKey = LOCAL_ADMIN_KEY;
  worker = await startInteropWorker();
  base = worker.url.toString().replace(/\/+$/, "");
}
const unreachable = await closedPort();
const work = mkdtempSync(join(tmpdir(), "licensing-interop-"));

// The admin API; the per-address limits the suite would trip from one address (every case signs in; some fail on
// purpose) are raised for the run and put back after it (scripts/lib/interop-service.mjs).
const admin = adminApi(base, adminKey);
const { api } = admin;
let restore;

const results = [];
let exitCode = 0;
try {
  restore = await admin.raiseLimits();
  // --- Seeding ----------------------------------------------------------------------------------------------------
  const run = `${Date.now().toString(36)}`;
  const product = `interop-${run}`;
  const productId = (
    await api("POST", "/v1/products", { product: { code: product, name: "Interop", isApplication: true } })
  ).productId;
  for (const [version, date] of [
    ["1.0.0", "2026-01-01T00:00:00Z"],
    ["2.0.0", "2026-02-01T00:00:00Z"],
  ]) {
    const id = (
      await api("POST", `/v1/products/${productId}/releases`, {
        productRelease: { version, public: true, releaseDate: date },
      })
    ).productReleaseId;
    const form = new FormData();
    form.set("platform", "win-x64");
    form.set("kind", "installer");
    form.set("file", new Blob([Buffer.alloc(1024, version.charCodeAt(0))]), `Interop Setup ${version}.exe`);
    await api("POST", `/v1/products/${productId}/releases/${id}/downloads`, form);
  }
  const newLicense = (license) => admin.newLicense(productId, license);
  const expired = await newLicense({ licensingMode: "Activation", maxClients: 5, expireDate: "2020-01-01T00:00:00Z" });
  const licenses = {};
  for (const lang of names) {
    licenses[lang] = {
      locked: await newLicense({ licensingMode: "Activation", maxClients: 10, expireDate: "2099-01-01T00:00:00Z" }),
      floating: await newLicense({ licensingMode: "Floating", maxClients: 1, expireDate: "2099-01-01T00:00:00Z" }),
    };
  }
  // The grace days the service signs into validations (Licensing:OfflineGraceDays), read from one.
  const probe = await newLicense({ licensingMode: "File", maxClients: 1 });
  const login = await (
    await fetch(`${base}/v1/auth/login`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ userKey: probe.userKey }),
    })
  ).json();
  const graceDays = (
    await (
      await fetch(`${base}/v1/license/validate`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${login.token}` },
        body: JSON.stringify({ userKey: probe.userKey }),
      })
    ).json()
  ).offlineGraceDays;
  const jwksText = await (await fetch(`${base}/v1/extensions/keys`)).text();

  // --- Builds -----------------------------------------------------------------------------------------------------
  const built = new Set();
  for (const lang of names) {
    const { build } = languages[lang];
    if (!build) {
      built.add(lang);
      continue;
    }
    const t = Date.now();
    const res = await sh(build, 900_000);
    const ok = res.code === 0;
    results.push({ lang, name: "build", ok, detail: ok ? "" : `${res.stdout}${res.stderr}`.trim().slice(-2000) });
    console.log(`${ok ? "PASS" : "FAIL"} ${lang} build (${((Date.now() - t) / 1000).toFixed(1)} s)`);
    if (ok) built.add(lang);
  }

  // --- Cases ------------------------------------------------------------------------------------------------------

  /** Runs `<run> <case> <options>` of `lang`: exit code and the JSON it printed. */
  async function invoke(lang, name, options) {
    const argv = [name];
    for (const [key, value] of Object.entries(options)) if (value !== undefined) argv.push(`--${key}`, String(value));
    if (args.ca) argv.push("--ca", args.ca);
    const command = `${languages[lang].run} ${argv.map(quote).join(" ")}`;
    const res = await slot(() => sh(command));
    let json;
    try {
      json = JSON.parse(res.stdout.trim().split("\n").pop() ?? "");
    } catch {
      json = undefined;
    }
    return { ...res, json, command };
  }

  /** Whether `actual` has every member of `expected` (instants compared as instants; a function is a predicate). */
  function matches(expected, actual) {
    if (typeof expected === "function") return expected(actual);
    if (expected && typeof expected === "object") {
      if (!actual || typeof actual !== "object") return false;
      return Object.entries(expected).every(([k, v]) => matches(v, actual[k]));
    }
    if (typeof expected === "string" && typeof actual === "string" && /^\d{4}-\d\d-\d\dT/.test(expected))
      return Date.parse(expected) === Date.parse(actual);
    return expected === actual;
  }

  /**
   * One case and its check: `expect` is `{ output }` (exit 0, these members), `{ error: code }` (exit 1 and this
   * refusal code; an array: any of them) or `{ exit: 2 }` (misuse). Returns the printed JSON.
   */
  async function check(lang, label, name, options, expect) {
    const res = await invoke(lang, name, options);
    let problem;
    if (expect.exit === 2) {
      if (res.code !== 2) problem = `exit ${res.code}, expected 2 (misuse)`;
    } else if (expect.error !== undefined) {
      const codes = [expect.error].flat();
      if (res.code !== 1) problem = `exit ${res.code}, expected 1 (refused ${codes.join(" or ")})`;
      else if (!codes.includes(res.json?.error?.code))
        problem = `refused ${JSON.stringify(res.json?.error?.code)}, expected ${codes.join(" or ")}`;
    } else if (res.code !== 0) problem = `exit ${res.code}, expected 0`;
    else if (!matches(expect.output, res.json)) problem = `output does not match ${JSON.stringify(expect.output)}`;
    const ok = problem === undefined;
    const detail = ok
      ? ""
      : `${problem}\n    $ ${res.command}\n    stdout: ${res.stdout.trim().slice(0, 1500)}\n    stderr: ${res.stderr.trim().slice(-1500)}`;
    results.push({ lang, name: label, ok, detail });
    console.log(`${ok ? "PASS" : "FAIL"} ${lang} ${label}${ok ? "" : `: ${detail}`}`);
    if (args.verbose && ok) console.log(`    ${res.stdout.trim()}`);
    return res.json;
  }

  const isString = (v) => typeof v === "string" && v !== "";
  const isInstant = (v) => typeof v === "string" && !Number.isNaN(Date.parse(v));
  /** Files checked out by each language, for the table: path, machine, user key, license id. */
  const files = {};

  async function casesOf(lang) {
    const { locked, floating } = licenses[lang];
    const dir = join(work, lang);
    mkdirSync(dir, { recursive: true });
    const m = (suffix) => `${lang}-${run}-${suffix}`;
    const common = { url: base, product, "user-key": locked.userKey };

    const nodeLocked = async () => {
      const state = join(dir, "state-locked");
      const machine = m("PC1");
      await check(
        lang,
        "activate",
        "activate",
        { ...common, machine },
        {
          output: { licenseId: locked.licenseId, machineId: machine },
        },
      );
      await check(
        lang,
        "validate (online, --state)",
        "validate",
        { ...common, machine, state },
        {
          output: { valid: true, licenseId: locked.licenseId, verified: true, offline: false },
        },
      );
      const validatedAt = Date.now();
      await check(
        lang,
        `validate offline within ${graceDays} grace days`,
        "validate",
        { ...common, url: unreachable, machine, state, now: new Date(validatedAt + DAY).toISOString() },
        { output: { valid: true, licenseId: locked.licenseId, verified: true, offline: true } },
      );
      await check(
        lang,
        "validate offline beyond the grace: grace",
        "validate",
        {
          ...common,
          url: unreachable,
          machine,
          state,
          now: new Date(validatedAt + (graceDays + 1) * DAY).toISOString(),
        },
        { error: "grace" },
      );
      await check(
        lang,
        "validate unreachable without state: network",
        "validate",
        { ...common, url: unreachable, machine },
        {
          error: "network",
        },
      );
      const file = join(dir, "checked-out.lic");
      const out = await check(
        lang,
        "checkout (encrypted)",
        "checkout",
        { ...common, machine, file },
        {
          output: { expiresAt: isInstant },
        },
      );
      files[lang] = { file, machine, userKey: locked.userKey, licenseId: locked.licenseId, expiresAt: out?.expiresAt };
      // Offline: the keys from the state, the service unreachable.
      const offline = { ...common, url: unreachable, machine, file };
      const keyed = join(dir, "state-keys");
      mkdirSync(keyed, { recursive: true });
      writeFileSync(join(keyed, "jwks.json"), jwksText);
      await check(
        lang,
        "verify-file (offline, keys from --state)",
        "verify-file",
        { ...offline, state: keyed },
        {
          output: { licenseId: locked.licenseId, machineId: machine, expiresAt: out?.expiresAt ?? isInstant },
        },
      );
      await check(
        lang,
        "verify-file on another machine: decrypt",
        "verify-file",
        { ...offline, state: keyed, machine: m("OTHER") },
        {
          error: "decrypt",
        },
      );
      await check(
        lang,
        "verify-file for another product: product",
        "verify-file",
        { ...offline, state: keyed, product: "other-product" },
        {
          error: "product",
        },
      );
      if (out?.expiresAt) {
        const after = new Date(Date.parse(out.expiresAt) + DAY).toISOString();
        await check(
          lang,
          "verify-file after its expiry: expired",
          "verify-file",
          { ...offline, state: keyed, now: after },
          {
            error: "expired",
          },
        );
        const before = new Date(Date.now() - 2 * DAY).toISOString();
        await check(
          lang,
          "verify-file with the clock set back: clock",
          "verify-file",
          { ...offline, state: keyed, now: before },
          {
            error: "clock",
          },
        );
      }
      const text = readFileSync(file, "utf8").trim();
      const [h, p, s] = text.split(".");
      const sig = Buffer.from(s ?? "", "base64url");
      if (sig.length > 0) sig[5] ^= 1;
      const tampered = join(dir, "tampered.lic");
      writeFileSync(tampered, `${h}.${p}.${sig.toString("base64url")}`);
      await check(
        lang,
        "verify-file, one signature byte changed: signature",
        "verify-file",
        { ...offline, state: keyed, file: tampered },
        {
          error: "signature",
        },
      );
      const garbage = join(dir, "garbage.lic");
      writeFileSync(garbage, "not a license file");
      await check(
        lang,
        "verify-file of garbage: malformed",
        "verify-file",
        { ...offline, state: keyed, file: garbage },
        {
          error: "malformed",
        },
      );
      await check(
        lang,
        "deactivate while it holds a license file: licenseFileHeld",
        "deactivate",
        { ...common, machine },
        {
          error: "licenseFileHeld",
        },
      );
    };

    const deactivation = async () => {
      const machine = m("PC0");
      await check(
        lang,
        "activate (to deactivate)",
        "activate",
        { ...common, machine },
        {
          output: { licenseId: locked.licenseId, machineId: machine },
        },
      );
      await check(lang, "deactivate", "deactivate", { ...common, machine }, { output: {} });
      await check(
        lang,
        "validate after deactivate: notActivated",
        "validate",
        { ...common, machine },
        {
          error: "notActivated",
        },
      );
    };

    const seats = async () => {
      const f = { url: base, product, "user-key": floating.userKey };
      const machine = m("PC2");
      const state = join(dir, "state-seats");
      const seat = { ...f, machine, client: "c1", state };
      await check(lang, "seat-request", "seat-request", seat, {
        output: { licenseId: floating.licenseId, clientId: "c1" },
      });
      await check(lang, "seat-heartbeat", "seat-heartbeat", seat, {
        output: { licenseId: floating.licenseId, clientId: "c1" },
      });
      await check(
        lang,
        "seat-request beyond the seats: seatsExhausted",
        "seat-request",
        { ...seat, client: "c2" },
        {
          error: "seatsExhausted",
        },
      );
      await check(lang, "seat-release", "seat-release", seat, {
        output: { licenseId: floating.licenseId, clientId: "c1" },
      });
      await check(lang, "seat-heartbeat after release: licenseTokenNotFound", "seat-heartbeat", seat, {
        error: "licenseTokenNotFound",
      });
    };

    const airgap = async () => {
      const machine = m("AIR");
      const request = await check(
        lang,
        "airgap-request",
        "airgap-request",
        { product, "user-key": locked.userKey, machine },
        {
          output: { requestCode: (v) => isString(v) && v.startsWith("LRQ1-"), nonce: isString },
        },
      );
      if (!request?.requestCode) return;
      const res = await fetch(`${base}/v1/license/offline-activation`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ requestCode: request.requestCode }),
      });
      const answer = await res.json();
      const ok = res.status === 200 && typeof answer.responseCode === "string";
      results.push({ lang, name: "the service reads its request code", ok, detail: ok ? "" : JSON.stringify(answer) });
      console.log(
        `${ok ? "PASS" : "FAIL"} ${lang} the service reads its request code${ok ? "" : `: ${res.status} ${JSON.stringify(answer)}`}`,
      );
      if (!ok) return;
      const code = join(dir, "response-code.txt");
      writeFileSync(code, answer.responseCode);
      const keyed = join(dir, "state-air");
      mkdirSync(keyed, { recursive: true });
      writeFileSync(join(keyed, "jwks.json"), jwksText);
      const verify = { url: unreachable, product, machine, file: code, nonce: request.nonce, state: keyed };
      await check(lang, "airgap-verify (LRS2)", "airgap-verify", verify, {
        output: { licenseId: locked.licenseId, machineId: machine },
      });
      const jws = join(dir, "response-file.lic");
      writeFileSync(jws, answer.licenseFile);
      await check(
        lang,
        "airgap-verify of the downloaded license file",
        "airgap-verify",
        { ...verify, file: jws },
        {
          output: { licenseId: locked.licenseId, machineId: machine },
        },
      );
      await check(
        lang,
        "airgap-verify with another nonce: nonce",
        "airgap-verify",
        { ...verify, nonce: "another-nonce" },
        {
          error: "nonce",
        },
      );
      await check(
        lang,
        "airgap-verify on another machine: machine",
        "airgap-verify",
        { ...verify, machine: m("OTHER") },
        {
          error: "machine",
        },
      );
      const typo = join(dir, "response-typo.txt");
      const chars = answer.responseCode.split("");
      const at = chars.length >> 1;
      chars[at] = chars[at] === "7" ? "8" : chars[at] === "-" ? "-" : "7";
      if (chars[at] === "-") chars[at + 1] = chars[at + 1] === "7" ? "8" : "7";
      writeFileSync(typo, chars.join(""));
      await check(
        lang,
        "airgap-verify of a mistyped code: malformed",
        "airgap-verify",
        { ...verify, file: typo },
        {
          error: "malformed",
        },
      );
    };

    const updates = async () => {
      const u = { url: base, product, "user-key": locked.userKey, platform: "win-x64", machine: m("INSTALL") };
      await check(
        lang,
        "update-check from 1.0.0",
        "update-check",
        { ...u, version: "1.0.0" },
        {
          output: { available: true, version: "2.0.0", required: false, rollback: false },
        },
      );
      await check(
        lang,
        "update-check from 2.0.0",
        "update-check",
        { ...u, version: "2.0.0" },
        {
          output: { available: false, required: false, rollback: false },
        },
      );
      await check(
        lang,
        "update-check with an expired license: licenseExpired",
        "update-check",
        { ...u, "user-key": expired.userKey, version: "1.0.0" },
        {
          error: "licenseExpired",
        },
      );
      for (const status of ["started", "exited", "crashed"])
        await check(
          lang,
          `session ${status}`,
          "session",
          { ...u, version: "1.0.0", status },
          { output: { accepted: 1 } },
        );
    };

    const refusals = async () => {
      await check(
        lang,
        "activate an expired license: licenseExpired",
        "activate",
        { ...common, "user-key": expired.userKey, machine: m("PC9") },
        {
          error: "licenseExpired",
        },
      );
      await check(
        lang,
        "activate for another product: wrongProduct",
        "activate",
        { ...common, product: "other-product", machine: m("PC9") },
        {
          error: "wrongProduct",
        },
      );
      await check(
        lang,
        "activate with an unknown user key: invalidUserKey",
        "activate",
        { ...common, "user-key": "ZZZZZ-ZZZZZ-ZZZZZ-ZZZZZ-ZZZZZ", machine: m("PC9") },
        {
          error: "invalidUserKey",
        },
      );
      await check(lang, "an unknown case: misuse", "no-such-case", { ...common }, { exit: 2 });
    };

    // The case bench/clients.mjs times (npm run bench:clients), briefly: it still runs and reports its numbers.
    const bench = async () => {
      const positive = (v) => typeof v === "number" && v > 0;
      await check(
        lang,
        "bench-validate (0.3 s)",
        "bench-validate",
        { ...common, machine: m("BENCH"), seconds: "0.3" },
        { output: { requests: positive, seconds: positive, perSecond: positive, verifyMicros: positive } },
      );
    };

    await Promise.all([nodeLocked(), deactivation(), seats(), airgap(), updates(), refusals(), bench()]);
  }

  await Promise.all([...built].map(casesOf));

  // --- Each language's example, against the same service --------------------------------------------------------
  await Promise.all(
    [...built]
      .filter((lang) => languages[lang].example)
      .map(async (lang) => {
        const locked = await newLicense({
          licensingMode: "Activation",
          maxClients: 10,
          expireDate: "2099-01-01T00:00:00Z",
        });
        const floating = await newLicense({
          licensingMode: "Floating",
          maxClients: 1,
          expireDate: "2099-01-01T00:00:00Z",
        });
        const state = join(work, `example-${lang}`);
        mkdirSync(state, { recursive: true });
        const env = {
          LICENSING_URL: base,
          LICENSING_PRODUCT: product,
          LICENSING_USER_KEY: locked.userKey,
          LICENSING_MACHINE: `example-${lang}-${run}`,
          LICENSING_FLOATING_KEY: floating.userKey,
          LICENSING_CA: args.ca ?? "",
          LICENSING_STATE: state,
        };
        const exports = Object.entries(env)
          .map(([k, v]) => `${k}=${quote(v)}`)
          .join(" ");
        const res = await slot(() => sh(`env ${exports} ${languages[lang].example}`));
        const ok = res.code === 0;
        results.push({
          lang,
          name: "example",
          ok,
          detail: ok ? "" : `${res.stdout}${res.stderr}`.trim().slice(-2000),
        });
        console.log(`${ok ? "PASS" : "FAIL"} ${lang} example`);
        if (!ok || args.verbose) console.log(`${res.stdout}${res.stderr}`.trim().slice(-2000));
      }),
  );

  // --- The table: a license file checked out by X verifies in Y ---------------------------------------------------
  const table = {};
  await Promise.all(
    [...built].flatMap((x) =>
      [...built].map(async (y) => {
        const f = files[x];
        if (!f) return;
        const state = join(work, `matrix-${x}-${y}`);
        const json = await check(
          y,
          `verify-file of ${x}'s license file`,
          "verify-file",
          { url: base, product, "user-key": f.userKey, machine: f.machine, file: f.file, state },
          { output: { licenseId: f.licenseId, machineId: f.machine } },
        );
        (table[x] ??= {})[y] = json?.licenseId === f.licenseId;
      }),
    ),
  );
  const langs = [...built];
  const width = Math.max(12, ...langs.map((l) => l.length + 2));
  console.log("\nlicense file checked out by (row) verifies in (column)");
  console.log(["".padEnd(width), ...langs.map((l) => l.padEnd(width))].join(""));
  for (const x of langs)
    console.log([x.padEnd(width), ...langs.map((y) => (table[x]?.[y] ? "yes" : "NO").padEnd(width))].join(""));
} catch (error) {
  console.error(error);
  exitCode = 1;
} finally {
  if (restore && !worker) await restore().catch((e) => console.error(e));
  await worker?.dispose();
  rmSync(work, { recursive: true, force: true });
}

const failed = results.filter((r) => !r.ok);
console.log(
  `\ninterop: ${results.length - failed.length} of ${results.length} checks passed for ${names.join(", ")} in ${((Date.now() - started) / 1000).toFixed(1)} s`,
);
for (const f of failed) console.log(`  FAIL ${f.lang} ${f.name}`);
process.exit(exitCode || failed.length ? 1 : 0);
