// `npm run bench:clients`: one row per client (issue 39) for validate with verification, so that a slow client shows.
// Starts the bundled Worker under Miniflare as `npm run interop` does (scripts/lib/interop-service.mjs), seeds a
// product and a node-locked license per language, builds every language of clients/interop.json (its `benchBuild`
// when it has one, else `build`: Rust's release build, not the debug build the interop suite uses), then runs each
// language's `bench-validate` case (`benchRun`, else `run`: activate, then validate over one kept-alive connection for
// --seconds, each answer's license key verified against the JWKS, then that verification alone timed on its own), one
// language after another, never two at once. The baseline is the same loop from Node with plain HTTP (node:http with a
// keep-alive agent, one socket: POST /v1/license/validate with the same body, the answer read but neither parsed nor
// verified), run before the first language and after each: a client's ratio to the baselines either side of it is its
// own overhead, and the machine's drift cancels. Prints the table and writes it to bench/results/<YYYY-MM-DD>-clients.md.
//
//   npm run bench:clients [-- --only rust,go] [--seconds 5] [--skip-build] [--out bench/results/x.md]
import { randomBytes } from "node:crypto";
import { Agent, request } from "node:http";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { cpus, loadavg, release as osRelease, totalmem } from "node:os";
import { dirname, relative, resolve } from "node:path";
import { parseArgs } from "node:util";
import { adminApi, LOCAL_ADMIN_KEY, quote, sh, startInteropWorker } from "../scripts/lib/interop-service.mjs";
import { root } from "../scripts/local-worker.mjs";

const { values: args } = parseArgs({
  options: {
    only: { type: "string" },
    seconds: { type: "string", default: "5" },
    config: { type: "string", default: "clients/interop.json" },
    "skip-build": { type: "boolean", default: false },
    out: { type: "string" },
  },
});

const seconds = Number(args.seconds);
if (!(seconds > 0)) {
  console.error(`bench:clients: --seconds is a positive number, not ${args.seconds}`);
  process.exit(2);
}
const languages = JSON.parse(readFileSync(resolve(root, args.config), "utf8"));
const only = args.only?.split(",").map((s) => s.trim());
const names = Object.keys(languages).filter((l) => !only || only.includes(l));
if (names.length === 0) {
  console.error(`bench:clients: no language to run (${args.config} has ${Object.keys(languages).join(", ")})`);
  process.exit(2);
}
const date = new Date().toISOString().slice(0, 10);
const out = resolve(root, args.out ?? `bench/results/${date}-clients.md`);

/**
 * The baseline: validate over one kept-alive connection from Node for `seconds`, with the body the clients send (user
 * key, machine, product, a fresh nonce) and the bearer token of one login; the answer is read, not parsed nor verified.
 * Activates the machine first. node:http, not fetch: Node's fetch (undici's, with web streams) costs this machine about
 * a millisecond a request more, which would make the baseline slower than most clients.
 */
async function plainHttp(base, product, license, machineId) {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  const post = (path, body, token) =>
    new Promise((resolve, reject) => {
      const req = request(
        `${base}${path}`,
        {
          method: "POST",
          agent,
          headers: {
            "content-type": "application/json",
            accept: "application/json",
            ...(token ? { authorization: `Bearer ${token}` } : {}),
          },
        },
        (res) => {
          let text = "";
          res.setEncoding("utf8");
          res.on("data", (d) => (text += d));
          res.on("end", () =>
            res.statusCode === 200 ? resolve(text) : reject(new Error(`${path}: ${res.statusCode} ${text}`)),
          );
          res.on("error", reject);
        },
      );
      req.on("error", reject);
      req.end(JSON.stringify(body));
    });
  const { token } = JSON.parse(await post("/v1/auth/login", { userKey: license.userKey }));
  await post("/v1/license/activate", { userKey: license.userKey, machineId, productCode: product }, token);
  const once = () =>
    post(
      "/v1/license/validate",
      { userKey: license.userKey, machineId, productCode: product, nonce: randomBytes(16).toString("hex") },
      token,
    );
  await once();
  let requests = 0;
  const started = performance.now();
  const until = started + seconds * 1000;
  let now = started;
  while (now < until) {
    await once();
    requests++;
    now = performance.now();
  }
  const elapsed = (now - started) / 1000;
  agent.destroy();
  return { requests, seconds: elapsed, perSecond: requests / elapsed };
}

const cpu = cpus();
const machine = `${cpu.length} × ${cpu[0]?.model ?? "cpu"}, ${(totalmem() / 2 ** 20).toFixed(1)} MiB RAM, ${process.platform} ${osRelease()} ${process.arch}; Node ${process.version}`;
console.log(`bench:clients: ${names.join(", ")}, ${seconds} s each; machine: ${machine}`);
const loadBefore = loadavg()[0];
console.log("bench:clients: starting the bundled Worker…");
const worker = await startInteropWorker();
const base = worker.url.toString().replace(/\/+$/, "");
const admin = adminApi(base, LOCAL_ADMIN_KEY);
const rows = [];
const baselines = [];
let exitCode = 0;
try {
  await admin.raiseLimits();
  const run = Date.now().toString(36);
  const product = `bench-clients-${run}`;
  const { productId } = await admin.api("POST", "/v1/products", {
    product: { code: product, name: "Client bench", isApplication: true },
  });
  const license = () =>
    admin.newLicense(productId, { licensingMode: "Activation", maxClients: 10, expireDate: "2099-01-01T00:00:00Z" });
  const licenses = {};
  for (const lang of [...names, "plain-http"]) licenses[lang] = await license();

  const built = new Set();
  for (const lang of names) {
    const build = languages[lang].benchBuild ?? languages[lang].build;
    if (!build || args["skip-build"]) {
      built.add(lang);
      continue;
    }
    const t = Date.now();
    const res = await sh(build, 900_000);
    console.log(
      `bench:clients: ${lang} build ${res.code === 0 ? "done" : "FAILED"} (${((Date.now() - t) / 1000).toFixed(1)} s)`,
    );
    if (res.code === 0) built.add(lang);
    else {
      console.log(`${res.stdout}${res.stderr}`.trim().slice(-2000));
      rows.push({ lang, error: "build failed" });
      exitCode = 1;
    }
  }

  const baseline = async (when) => {
    const result = await plainHttp(base, product, licenses["plain-http"], `plain-http-${run}`);
    baselines.push(result);
    console.log(`bench:clients: plain HTTP (${when}): ${result.perSecond.toFixed(1)} req/s`);
    return result.perSecond;
  };
  let before = await baseline("before the first language");
  for (const lang of names.filter((l) => built.has(l))) {
    const options = {
      url: base,
      product,
      "user-key": licenses[lang].userKey,
      machine: `bench-${lang}-${run}`,
      seconds: String(seconds),
    };
    const argv = ["bench-validate", ...Object.entries(options).flatMap(([k, v]) => [`--${k}`, v])];
    const command = languages[lang].benchRun ?? languages[lang].run;
    const res = await sh(`${command} ${argv.map(quote).join(" ")}`, (seconds + 120) * 1000);
    let json;
    try {
      json = JSON.parse(res.stdout.trim().split("\n").pop() ?? "");
    } catch {
      json = undefined;
    }
    if (res.code !== 0 || typeof json?.perSecond !== "number") {
      console.log(
        `bench:clients: ${lang} FAILED (exit ${res.code}): ${`${res.stdout}${res.stderr}`.trim().slice(-2000)}`,
      );
      rows.push({ lang, error: json?.error?.code ?? `exit ${res.code}` });
      exitCode = 1;
      continue;
    }
    console.log(
      `bench:clients: ${lang}: ${json.perSecond} req/s (${json.requests} in ${json.seconds} s), ${json.verifyMicros} µs per verification`,
    );
    const after = await baseline(`after ${lang}`);
    rows.push({ lang, ...json, plain: (before + after) / 2, bench: Boolean(languages[lang].benchRun) });
    before = after;
  }
} catch (error) {
  console.error(error);
  exitCode = 1;
} finally {
  await worker.dispose();
}

if (baselines.length > 0) {
  const speeds = baselines.map((b) => b.perSecond);
  const plain = speeds.reduce((sum, v) => sum + v, 0) / speeds.length;
  const fmt = (n, digits = 0) =>
    n.toLocaleString("en-US", { maximumFractionDigits: digits, minimumFractionDigits: digits });
  const table = [
    "| language | validate req/s (one connection) | × plain HTTP | verification µs per answer |",
    "|---|---|---|---|",
    `| plain HTTP (Node, node:http keep-alive, answer not verified) | ${fmt(plain)} | 1.00 | — |`,
    ...rows.map((r) =>
      r.error
        ? `| ${r.lang} | ${r.error} | | |`
        : `| ${r.lang}${r.bench ? " (release build)" : ""} | ${fmt(r.perSecond)} | ${(r.perSecond / r.plain).toFixed(2)} | ${fmt(r.verifyMicros, 1)} |`,
    ),
  ].join("\n");
  const report = `# Clients: validate with verification over one connection, ${date}

Machine: ${machine}. Load average (1 min): ${loadBefore.toFixed(2)} at the start, ${loadavg()[0].toFixed(2)} at the end.
Service: the bundled Worker under workerd through Miniflare on the same machine (scripts/lib/interop-service.mjs, as
\`npm run interop\` starts it), one product, a node-locked license per language.

Each client: its interop program's \`bench-validate\` case (clients/interop.json \`benchRun\`, else \`run\`), one
language after another: activate, one validation to sign in and fetch the keys, then validations for ${seconds} s over one
kept-alive connection, each with a fresh nonce and its answer's license key verified against the JWKS (the compact JWS:
ES256 signature, then expiry, product, machine and nonce) as the library's validate does. Verification µs: that
verification alone, with the library's own function and the keys in hand, repeated for 1 s on the last answer.

Plain HTTP: the same request (the same body, the bearer token of one login) from Node's node:http over one kept-alive
socket, the answer read but neither parsed nor verified, for ${seconds} s before the first language and after each one
(${speeds.map((v) => fmt(v)).join(", ")} req/s; the row shows their mean). × plain HTTP: a language's req/s over the mean of
the plain-HTTP runs just before and just after it. Node's own HTTP client costs are in the baseline: a client whose HTTP
stack costs less than node:http's can come near 1.00 with its verification included.

${table}

\`npm run bench:clients\` (bench/clients.mjs) wrote this file.
`;
  mkdirSync(dirname(out), { recursive: true });
  writeFileSync(out, report);
  console.log(`\n${table}\n\nbench:clients: wrote ${relative(root, out)}`);
}
process.exit(exitCode);
