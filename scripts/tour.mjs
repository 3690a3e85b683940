#!/usr/bin/env node
// `npm run tour`: runs the documentation's shell examples against a fresh local service, so they cannot drift.
//
// 1. Makes sure `jq` (the examples read ids from earlier answers with it), curl and openssl are there: as root it
//    installs Debian's packages with apt-get when missing; jq otherwise runs as WebAssembly (jq-web,
//    scripts/tour/jq.mjs; TOUR_JQ=node forces it).
// 2. Starts the bundled Worker under workerd (scripts/local-worker.mjs) on a free loopback port, over HTTPS with a
//    certificate made as `npm run dev` makes its own (scripts/lib/dev-cert.mjs), with fresh state and the settings of
//    .dev.vars.example, so `KEY` is the documented administrator key. CA names the certificate's file, as the tour's
//    first block (docs/getting-started.md) sets it for `npm run dev`; no other trust is passed on (no
//    NODE_EXTRA_CA_CERTS, no certificate checks turned off), and a block that turns checks off (`curl -k`,
//    NODE_TLS_REJECT_UNAUTHORIZED=0) fails the tour.
// 3. Takes every ```sh block preceded by `<!-- tour -->` in the pages of TOUR_PAGES, in that order (later blocks use
//    the variables earlier ones set), then in any other page of docs/*.md with such blocks, by name, and runs them as
//    one bash script (`set -euo pipefail`) with BASE set to the service. Each command is one "step".
// 4. Checks every step: a comment right under a command (or after it on the same line) is the answer the docs show,
//    and the output must match it (`…` stands for anything, ids and counts may differ, everything else is exact);
//    a step without a shown answer must get 2xx answers from every curl it makes.
// 5. Runs the whole tour a second time against the same service: the docs must work when run again.
// Exits 1 naming each step that failed, with its command, output and what the docs show.
import { execFileSync, spawn } from "node:child_process";
import {
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  writeFileSync,
  existsSync,
  chmodSync,
  mkdirSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { localCertificate } from "./lib/dev-cert.mjs";
import { root, startLocalWorker } from "./local-worker.mjs";
import { startWebhookReceiver } from "../test/webhook-receiver.ts";

const RUNS = Number(process.env.TOUR_RUNS ?? 2);

/**
 * The tour's pages, in the order a reader follows them (and the shell runs them): each page's blocks use what the
 * pages before it set (`BASE`, `CA`, `KEY`, `RUN`, `PRODUCT_ID`, `DIST`, …). docs/getting-started.md lists the same
 * order for readers.
 */
export const TOUR_PAGES = [
  "README.md",
  "docs/getting-started.md",
  "docs/updates.md",
  "docs/configuration.md",
  "docs/publishing.md",
  "docs/webhooks.md",
  "docs/electron.md",
  "docs/electron-rollout.md",
  "docs/offline.md",
];

/** The pages whose blocks the tour runs: TOUR_PAGES that exist, then the other docs/*.md pages by name. */
export function tourPages() {
  const listed = TOUR_PAGES.map((page) => join(root, page));
  const others = existsSync(join(root, "docs"))
    ? readdirSync(join(root, "docs"))
        .filter((f) => f.endsWith(".md"))
        .sort()
        .map((f) => join(root, "docs", f))
        .filter((file) => !listed.includes(file))
    : [];
  return [...listed.filter((file) => existsSync(file)), ...others];
}
const verbose = process.argv.includes("--verbose") || process.argv.includes("-v");

/** `<!-- tour -->` blocks of a Markdown file: their lines and where they start. */
export function tourBlocks(file) {
  const lines = readFileSync(file, "utf8").split("\n");
  const blocks = [];
  for (let i = 0; i < lines.length; i++) {
    if (lines[i].trim() !== "<!-- tour -->") continue;
    const fence = i + 1;
    if (!/^```(sh|bash)\b/.test(lines[fence] ?? ""))
      throw new Error(`${file}:${i + 1}: <!-- tour --> must precede a \`\`\`sh block`);
    const body = [];
    let j = fence + 1;
    for (; j < lines.length && !lines[j].startsWith("```"); j++) body.push(lines[j]);
    blocks.push({ file, line: fence + 2, lines: body });
    i = j;
  }
  return blocks;
}

/**
 * Steps of a block: a command (with its `\` continuation lines and the lines of an open quote or loop) and the
 * answer shown under it. A comment after a blank line, or before any command, explains; the comment lines right
 * under a command are its answer. Text after three spaces in an answer line is a note, not part of the answer.
 */
export function steps(block) {
  const out = [];
  let current;
  let lastWasCommand = false;
  for (let k = 0; k < block.lines.length; k++) {
    const raw = block.lines[k];
    const line = raw.trimEnd();
    if (line.trim() === "") {
      lastWasCommand = false;
      current = undefined;
      continue;
    }
    if (line.startsWith("#")) {
      const text = line.replace(/^#\s?/, "").replace(/(\S)\s{3,}\S.*$/, "$1");
      if (current && lastWasCommand) {
        // JSON answers wrap over several comment lines; text answers (YAML, tool output) keep their lines.
        if (current.expected === undefined) current.expected = text;
        else current.expected += /^[{[]/.test(current.expected) ? text.trim() : `\n${text}`;
      } else {
        current = undefined;
        lastWasCommand = false;
      }
      continue;
    }
    // A command: join continuation lines and multi-line constructs until bash says it is complete.
    const lines = [line];
    while (!complete(lines.join("\n")) && k + 1 < block.lines.length) lines.push(block.lines[++k].trimEnd());
    let command = lines.join("\n");
    // An answer on the command's own line, after at least two spaces: `curl … /health   # Healthy`.
    let inline;
    const m = /^(.*?\S)\s{2,}#\s(.*)$/s.exec(command);
    if (m && complete(m[1])) {
      command = m[1];
      inline = m[2].replace(/(\S)\s{3,}\S.*$/, "$1");
    }
    current = {
      command,
      line: block.line + k - (lines.length - 1),
      file: block.file,
      ...(inline !== undefined && /^[{[\d"]|^[A-Z][a-z]+$/.test(inline) ? { expected: inline } : {}),
    };
    out.push(current);
    lastWasCommand = true;
  }
  return out;
}

/** Whether bash can parse the text as complete commands (no open quote, continuation or loop). */
function complete(text) {
  if (/\\$/.test(text)) return false;
  try {
    execFileSync("bash", ["-n"], { input: text, stdio: ["pipe", "ignore", "ignore"] });
    return true;
  } catch {
    return false;
  }
}

/**
 * Why a step turns certificate checks off, or undefined: `curl -k`/`--insecure` (alone or among short options, as
 * `-sk`) or NODE_TLS_REJECT_UNAUTHORIZED=0. The docs trust the local certificate instead (`--cacert $CA`).
 */
export function insecure(command) {
  for (const line of command.split("\n")) {
    if (/\bNODE_TLS_REJECT_UNAUTHORIZED\s*=\s*["']?0/.test(line))
      return "NODE_TLS_REJECT_UNAUTHORIZED=0 turns certificate checks off";
    if (!/(^|[\s(|;&`])curl\s/.test(line)) continue;
    if (/\s(-[A-Za-z0-9]*k[A-Za-z0-9]*|--insecure)(?=\s|$)/.test(line.replace(/'[^']*'|"(?:[^"\\]|\\.)*"/g, "''")))
      return "curl -k turns certificate checks off: trust the local certificate with --cacert $CA";
  }
  return undefined;
}

const escapeRegExp = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

/**
 * The regular expression an output must match for a shown answer: `…` is anything; the value of an id or count
 * (`"id":1`, `"resourceId":2`, `"totalLicensesCount":1`) is any number, since a second run creates new records;
 * everything else is literal.
 */
export function answerPattern(expected) {
  let source = "";
  const idValue = /("(?:id|[A-Za-z]*Id|[A-Za-z]*Count|deleted|updated|checked)":)\d+/y;
  for (let i = 0; i < expected.length; ) {
    idValue.lastIndex = i;
    const id = idValue.exec(expected);
    if (id) {
      source += `${escapeRegExp(id[1])}\\d+`;
      i = idValue.lastIndex;
    } else if (expected[i] === "…") {
      source += "[\\s\\S]*?";
      i++;
    } else {
      source += escapeRegExp(expected[i]);
      i++;
    }
  }
  return new RegExp(`^${source}$`);
}

function ensureJq(binDir) {
  const has = (cmd) => {
    try {
      execFileSync("sh", ["-c", `command -v ${cmd}`], { stdio: "ignore" });
      return true;
    } catch {
      return false;
    }
  };
  // The tour's other tools (curl, openssl for a sha512, coreutils) come from Debian too.
  const missing = ["jq", "curl", "openssl"].filter((tool) => !has(tool));
  if (missing.length === 0 && process.env.TOUR_JQ !== "node") return;
  if (missing.length > 0 && process.getuid?.() === 0 && has("apt-get")) {
    console.log(`tour: installing ${missing.join(", ")} (apt-get install -y ${missing.join(" ")})`);
    try {
      execFileSync("apt-get", ["install", "-y", "-q", ...missing], {
        stdio: "inherit",
        env: { ...process.env, DEBIAN_FRONTEND: "noninteractive" },
      });
    } catch {
      // No package lists or no network: jq has the stand-in below; curl and openssl are reported by the tour.
    }
  }
  if (has("jq") && process.env.TOUR_JQ !== "node") return;
  console.log("tour: using jq compiled to WebAssembly (jq-web, scripts/tour/jq.mjs)");
  writeFileSync(
    join(binDir, "jq"),
    `#!/bin/sh\nexec "${process.execPath}" "${join(root, "scripts/tour/jq.mjs")}" "$@"\n`,
  );
  chmodSync(join(binDir, "jq"), 0o755);
}

/** The bash script of all steps: each step's output and the statuses of its curl calls go to files in `dir`. */
function script(all, dir) {
  const parts = [
    "set -euo pipefail",
    // Every curl reports its HTTP status on stderr (a separate file per step), leaving stdout as the docs show it.
    `curl() { command curl -w '%{stderr}%{http_code}\\n' "$@" 2>>"${dir}/status.$__STEP"; }`,
    "__STEP=0",
  ];
  all.forEach((step, n) => {
    parts.push(`__STEP=${n}`, `: > "${dir}/status.${n}"`);
    if (step.expected !== undefined) parts.push(`{\n${step.command}\n} > "${dir}/out.${n}"`, `cat "${dir}/out.${n}"`);
    else parts.push(step.command);
    parts.push(`echo "${n}" >> "${dir}/done"`);
  });
  return `${parts.join("\n")}\n`;
}

function fail(step, why, output) {
  console.error(`\ntour: ${step.file.replace(root, "")}:${step.line}: ${why}\n$ ${step.command}`);
  if (output !== undefined) console.error(`--- output\n${output}`);
  if (step.expected !== undefined) console.error(`--- the docs show\n${step.expected}`);
  process.exitCode = 1;
}

async function runOnce(all, base, env, run) {
  const dir = mkdtempSync(join(tmpdir(), "tour-run-"));
  try {
    writeFileSync(join(dir, "done"), "");
    const child = spawn("bash", ["-c", script(all, dir)], {
      cwd: root,
      env: { ...env, BASE: base },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d) => (stdout += d));
    child.stderr.on("data", (d) => (stderr += d));
    const code = await new Promise((resolve) => child.on("close", resolve));
    if (verbose) process.stdout.write(stdout);
    const done = readFileSync(join(dir, "done"), "utf8").split("\n").filter(Boolean).map(Number);
    if (code !== 0) {
      const n = done.length;
      fail(all[n] ?? all[all.length - 1], `run ${run}: the command failed (exit ${code})`, `${stderr.slice(-2000)}`);
      return false;
    }
    let ok = true;
    for (const [n, step] of all.entries()) {
      const statuses = readFileSync(join(dir, `status.${n}`), "utf8")
        .split("\n")
        .filter(Boolean);
      if (step.expected !== undefined) {
        const output = readFileSync(join(dir, `out.${n}`), "utf8").trim();
        if (!answerPattern(step.expected.trim()).test(output)) {
          fail(step, `run ${run}: the answer differs from the docs`, output);
          ok = false;
        }
      } else {
        const bad = statuses.map((s) => s.trim()).filter((s) => /^\d{3}$/.test(s) && !/^2\d\d$/.test(s));
        if (bad.length > 0) {
          fail(step, `run ${run}: HTTP ${bad.join(", ")} where the docs show no error`);
          ok = false;
        }
      }
    }
    return ok;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Settings of .dev.vars.example: the documented administrator, key and secrets. */
function devVars() {
  return Object.fromEntries(
    readFileSync(join(root, ".dev.vars.example"), "utf8")
      .split("\n")
      .filter((l) => /^\s*\w+\s*=/.test(l))
      .map((l) => [l.slice(0, l.indexOf("=")).trim(), l.slice(l.indexOf("=") + 1).trim()]),
  );
}

async function main() {
  const docs = tourPages();
  const all = docs.flatMap(tourBlocks).flatMap(steps);
  if (all.length === 0) throw new Error("no <!-- tour --> blocks found");
  for (const step of all) {
    const why = insecure(step.command);
    if (why) fail(step, why);
  }
  if (process.exitCode) return;
  const binDir = mkdtempSync(join(tmpdir(), "tour-bin-"));
  const work = mkdtempSync(join(tmpdir(), "tour-work-"));
  ensureJq(binDir);
  // HTTPS with a certificate of the tour's own, made as npm run dev makes .wrangler/dev-cert/cert.pem.
  const certificate = localCertificate(join(work, ".cert"), "127.0.0.1");
  const worker = await startLocalWorker({
    bindings: devVars(),
    https: { key: readFileSync(certificate.keyFile, "utf8"), cert: readFileSync(certificate.certFile, "utf8") },
  });
  // The webhook example (docs/webhooks.md) delivers to $HOOK: here a local receiver that answers 200 (test/webhook-receiver.ts).
  const receiver = await startWebhookReceiver();
  const base = worker.url.toString().replace(/\/$/, "");
  if (!base.startsWith("https://")) throw new Error(`the tour's service is not HTTPS: ${base}`);
  console.log(`tour: ${all.length} steps from ${docs.length} files against ${base}`);
  const env = {
    ...process.env,
    PATH: `${binDir}:${process.env.PATH}`,
    TOUR_WORK: work,
    HOOK: `${receiver.url}/ok/crm`,
    CA: certificate.certFile,
  };
  // Only what the docs say: no trust or settings from the caller's shell.
  for (const name of ["KEY", "NODE_TLS_REJECT_UNAUTHORIZED", "NODE_EXTRA_CA_CERTS", "CURL_CA_BUNDLE", "SSL_CERT_FILE"])
    delete env[name];
  try {
    for (let run = 1; run <= RUNS; run++) {
      const started = Date.now();
      if (!(await runOnce(all, base, env, run))) return;
      console.log(`tour: run ${run} passed (${((Date.now() - started) / 1000).toFixed(1)} s)`);
    }
  } finally {
    await worker.dispose();
    await receiver.close();
    rmSync(binDir, { recursive: true, force: true });
    rmSync(work, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  mkdirSync(tmpdir(), { recursive: true });
  await main();
}
