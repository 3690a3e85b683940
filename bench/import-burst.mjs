// A large CSV import (CONTRACT section 16, issue "A 100,000-row import in the bench"): a CSV of `rows` licenses is
// generated at bench time, posted to `POST /v1/imports` with the Administrator key, and `GET /v1/imports/{id}` is
// polled until the import is done. More than 1,000 rows run off the request path: the request reads and checks every
// row, stores the rows in R2 as chunks of 500 and queues a message a chunk (202, status running); the queue's
// consumer, in the service's own workerd here, writes a chunk per message (src/imports/import-service.ts,
// import-writes.ts). Measured: the time to the 202 answer, the time until the poll reads `done`, licenses per second,
// D1 rows written per second (every table's row count before and after, so whatever the import writes is counted),
// the service workerd's CPU time over the import and its peak RSS. The import's report must say every row was created
// and none refused, and D1 is counted against what the CSV holds: a run of refusals is not a measurement.
//
// The CSV is a vendor's table as another licensing server exports it: a legacy key each; a customer's email on 9 rows
// in 10, a customer holding about four licenses (a name with each email); editions, expiry dates (3 in 10
// perpetual), activation limits; one machine on 3 rows in 10. It is drawn from a seeded generator, so every run
// imports the same shape; a run tag in keys and emails keeps it apart from any data already there.
import { createHash, randomBytes } from "node:crypto";
import { loadavg } from "node:os";
import { verifyIntegrity } from "./seed.mjs";

/** The route's body limit (src/http/body-limit.ts, IMPORT_BODY_BYTES). */
export const IMPORT_BODY_LIMIT = 16 * 1024 * 1024;
/** Rows a queued chunk holds (src/imports/import-service.ts, IMPORT_CHUNK_ROWS): one record update each. */
const CHUNK_ROWS = 500;
const FIRST = ["Ada", "Bruno", "Chloé", "Dmitri", "Elena", "Farid", "Grace", "Hiro", "Ines", "Jonas", "Kemal", "Lena"];
const LAST = ["Andersen", "Becker", "Costa", "Dubois", "Eriksen", "Fischer", "García", "Huber", "Ito", "Jansen"];
const EDITIONS = ["Standard", "Standard", "Professional", "Professional", "Enterprise", ""];
const ACTIVATIONS = ["1", "1", "2", "3", "5", "0"];

/** mulberry32: a small seeded generator, so every run draws the same rows. */
function seeded(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * The CSV text of `rows` licenses of `product`, and what importing it must create: its licenses, its distinct
 * customers (emails), its machines.
 */
export function importCsv(rows, product, tag) {
  const random = seeded(20261129);
  const hex = (digits) =>
    Math.floor(random() * 16 ** digits)
      .toString(16)
      .toUpperCase()
      .padStart(digits, "0");
  const customers = Math.max(1, Math.round(rows / 4));
  const emails = new Set();
  let machines = 0;
  const lines = ["legacyKey,product,customerEmail,customerName,edition,expireDate,maxActivations,machines"];
  const keys = [];
  for (let i = 0; i < rows; i++) {
    const key = `LGC-${tag}-${i.toString(36).toUpperCase().padStart(4, "0")}-${hex(8)}`;
    let email = "";
    let name = "";
    if (random() < 0.9) {
      const c = Math.floor(random() * customers);
      email = `customer${c}.${tag}@import.example`;
      name = `${FIRST[c % FIRST.length]} ${LAST[Math.floor(c / FIRST.length) % LAST.length]}`;
      emails.add(email);
    }
    const edition = EDITIONS[Math.floor(random() * EDITIONS.length)];
    const expire =
      random() < 0.3
        ? ""
        : `${2026 + Math.floor(random() * 4)}-${String(1 + Math.floor(random() * 12)).padStart(2, "0")}-${String(1 + Math.floor(random() * 28)).padStart(2, "0")}`;
    const limit = ACTIVATIONS[Math.floor(random() * ACTIVATIONS.length)];
    const machine = random() < 0.3 ? `machine-${hex(8)}${hex(8)}` : "";
    if (machine) machines++;
    keys.push(key);
    // A name with a space and an accent is written as it is: no cell here holds a comma, a quote or a line break.
    lines.push(`${key},${product},${email},${name},${edition},${expire},${limit},${machine}`);
  }
  return {
    csv: lines.join("\n"),
    keys,
    expected: { licenses: rows, customers: emails.size, activations: machines },
  };
}

/** Every table's row count in D1 (the platform's and SQLite's own tables aside). */
async function tableCounts(db) {
  const { results } = await db
    .prepare(
      `SELECT name FROM sqlite_master WHERE type = 'table'
         AND substr(name, 1, 7) <> 'sqlite_' AND substr(name, 1, 4) <> '_cf_' AND substr(name, 1, 3) <> 'd1_' ORDER BY name`,
    )
    .all();
  const names = results.map((r) => r.name);
  const row = await db
    .prepare(`SELECT ${names.map((n, i) => `(SELECT count(*) FROM "${n}") AS t${i}`).join(", ")}`)
    .first();
  return new Map(names.map((n, i) => [n, row[`t${i}`]]));
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/**
 * Creates a product, imports `rows` generated licenses of it through the API and counts what D1 holds afterwards.
 * `api(method, path, body)` calls the Management API with the admin key and answers the JSON body; `d1()` answers
 * the service's D1; `cpuMs()` the service workerd's CPU time so far; `memory` the service's MemorySampler (its
 * phase "import" gives the peak RSS). The poll gives up after `timeoutSeconds`, or when `processed` has not moved
 * for `stallSeconds`, and the result says so.
 */
export async function importBurst({
  url,
  adminKey,
  api,
  d1,
  cpuMs,
  memory,
  secret,
  rows,
  pollMs = 250,
  timeoutSeconds = 1800,
  stallSeconds = 180,
}) {
  const tag = randomBytes(3).toString("hex").toUpperCase();
  const code = `bench-import-${tag}`;
  const product = await api("POST", "/v1/products", { product: { name: "Bench import", code } });
  const { csv, keys, expected } = importCsv(rows, code, tag);
  const body = JSON.stringify({ source: "csv", data: csv });
  const bodyBytes = Buffer.byteLength(body);
  const result = { rows, bodyBytes, csvBytes: Buffer.byteLength(csv), expected, problems: [] };
  if (bodyBytes > IMPORT_BODY_LIMIT)
    result.problems.push(
      `the body (${bodyBytes} bytes) is over the route's ${IMPORT_BODY_LIMIT} bytes: the service answers 413`,
    );
  const before = await tableCounts(await d1());
  const rssBefore = memory?.sample() ?? 0;
  memory?.phase("import");
  const headers = { "x-api-key": adminKey };
  result.load = [loadavg()[0]];
  const cpuBefore = cpuMs();
  const t0 = performance.now();
  const res = await fetch(new URL("/v1/imports", url), {
    method: "POST",
    headers: { ...headers, "content-type": "application/json" },
    body,
  });
  const text = await res.text();
  result.toAnswer = (performance.now() - t0) / 1000;
  result.status = res.status;
  let report = res.headers.get("content-type")?.includes("json") ? JSON.parse(text).data : undefined;
  if (res.status !== 202 || !report?.id) {
    result.problems.push(`POST /v1/imports answered ${res.status}: ${text.slice(0, 300)}`);
  } else {
    result.answered = { status: report.status, total: report.total, processed: report.processed };
    // The poll: until the import is no longer running, it times out, or its progress stops.
    let moved = performance.now();
    let lastProcessed = report.processed;
    let printed = performance.now();
    while (report.status === "running") {
      await sleep(pollMs);
      const now = performance.now();
      if (now - t0 > timeoutSeconds * 1000) {
        result.problems.push(`still running after ${timeoutSeconds} s (${report.processed} of ${report.total} rows)`);
        break;
      }
      if (now - moved > stallSeconds * 1000) {
        result.problems.push(
          `no progress for ${stallSeconds} s at ${report.processed} of ${report.total} rows: given up`,
        );
        break;
      }
      const read = await fetch(new URL(`/v1/imports/${report.id}`, url), { headers });
      const readText = await read.text();
      if (!read.ok) {
        result.problems.push(`GET /v1/imports/${report.id} answered ${read.status}: ${readText.slice(0, 300)}`);
        break;
      }
      report = JSON.parse(readText).data;
      if (report.processed !== lastProcessed) {
        lastProcessed = report.processed;
        moved = performance.now();
      }
      if (performance.now() - printed > 10_000) {
        printed = performance.now();
        console.log(`  ${((printed - t0) / 1000).toFixed(0)} s: ${report.processed} of ${report.total} rows`);
      }
    }
    result.untilDone = (performance.now() - t0) / 1000;
    result.cpuMs = cpuMs() - cpuBefore;
    result.load.push(loadavg()[0]);
    result.report = report;
    if (report.status !== "done") result.problems.push(`the import ended ${report.status}`);
  }
  result.rssBefore = rssBefore;
  result.peakRss = memory?.peak("import") ?? 0;
  memory?.phase("after import");

  // What D1 holds now: every table's new rows, and the import's own rows counted against the CSV.
  const db = await d1();
  const after = await tableCounts(db);
  result.written = [...after]
    .filter(([n, c]) => c !== (before.get(n) ?? 0))
    .map(([n, c]) => [n, c - (before.get(n) ?? 0)]);
  result.rowsWritten = result.written.reduce((sum, [, n]) => sum + n, 0);
  result.chunks = Math.ceil(rows / CHUNK_ROWS);
  const counted = await db
    .prepare(
      `SELECT (SELECT count(*) FROM licenses WHERE product_id = ?1) AS licenses,
              (SELECT count(DISTINCT customer_id) FROM licenses WHERE product_id = ?1) AS customers,
              (SELECT count(*) FROM license_tokens WHERE license_id IN (SELECT id FROM licenses WHERE product_id = ?1)) AS activations,
              (SELECT min(id) FROM licenses WHERE product_id = ?1) AS first`,
    )
    .bind(product.productId)
    .first();
  result.counted = counted;
  // The checks: an import that did not finish, or whose rows were mostly refused, is not a measurement (`problems`);
  // a few rows missing from what the CSV holds are reported beside the figures (`mismatches`).
  const r = result.report;
  result.mismatches = [];
  if (r) {
    const created = r.created;
    if (r.errorCount > rows / 100)
      result.problems.push(`${r.errorCount} of ${rows} rows refused (first: ${describe(r.errors?.[0])})`);
    if (created.licenses !== expected.licenses || r.errorCount !== 0)
      result.mismatches.push(
        `the report says ${created.licenses} licenses created of ${expected.licenses}, errorCount ${r.errorCount}: ${(r.errors ?? []).slice(0, 5).map(describe).join("; ")}`,
      );
    if (created.customers !== expected.customers || created.activations !== expected.activations)
      result.mismatches.push(
        `the report says ${created.customers} customers and ${created.activations} activations created, the CSV holds ${expected.customers} and ${expected.activations}`,
      );
    // A row "not written, stored meanwhile by another import" when no other import ran: does D1 hold its legacy key?
    for (const e of (r.errors ?? []).filter((e) => e.message.startsWith("Not written")).slice(0, 10)) {
      const key = keys[e.row - 2];
      const digest = createHash("sha256").update(key).digest("hex");
      const held = await db
        .prepare("SELECT count(*) AS n FROM licenses WHERE legacy_key_digest = ?")
        .bind(digest)
        .first();
      result.mismatches.push(
        `row ${e.row} (${key}) ${held.n === 0 ? "is held by no license: no other import stored it; its INSERT … ON CONFLICT DO NOTHING met another unique column, the generated license id (lic + 8 hex characters, 32 bits) the likeliest" : "is held by a license"}`,
      );
    }
  }
  if (
    counted.licenses !== expected.licenses ||
    counted.customers !== expected.customers ||
    counted.activations !== expected.activations
  )
    result.mismatches.push(
      `D1 holds ${counted.licenses} licenses, ${counted.customers} customers, ${counted.activations} activations of the import; the CSV ${expected.licenses}, ${expected.customers}, ${expected.activations}`,
    );
  // An imported license reads as one the API created: its integrity HMAC is the service's (bench/seed.mjs).
  if (counted.first !== null)
    await verifyIntegrity(db, secret, counted.first).catch((e) =>
      result.mismatches.push(`an imported license's integrity: ${e.message}`),
    );
  // How many license ids drawn twice a run of this size expects: pairs among every license in D1 over 2^32 ids.
  result.licensesInD1 = after.get("licenses");
  result.expectedIdCollisions = (result.licensesInD1 * (result.licensesInD1 - 1)) / 2 / 2 ** 32;
  return result;
}

const describe = (e) => (e ? `row ${e.row} ${e.field}: ${e.message}` : "none listed");

/** The result as Markdown (a table row with its header, then the checks), for the bench report. */
export function importRows(r) {
  const mib = (n) => (n / 1024 / 1024).toFixed(1);
  const done = r.untilDone !== undefined && r.report?.status === "done";
  const byTable = r.written.map(([n, c]) => `${n} ${c.toLocaleString("en-US")}`).join(", ");
  const created = r.report?.created;
  const n = (x) => x.toLocaleString("en-US");
  const lines = [
    "| licenses in the CSV | body MiB | answer | to the answer s | until done s | licenses/s | D1 rows written (new rows by table) | D1 rows/s | service CPU s (ms per license) | peak RSS MiB (before) | report: created customers / licenses / activations, skipped, errors | load avg |",
    "|---|---|---|---|---|---|---|---|---|---|---|---|",
    `| ${n(r.rows)} | ${mib(r.bodyBytes)} | ${r.status ?? "—"}${r.answered ? ` ${r.answered.status}` : ""} | ${r.toAnswer?.toFixed(2) ?? "—"} | ${r.untilDone?.toFixed(1) ?? "—"}${done ? "" : " (not done)"} | ${done ? (created.licenses / r.untilDone).toFixed(0) : "—"} | ${n(r.rowsWritten)} (${byTable}; and ${r.chunks} updates of the import's record) | ${done ? (r.rowsWritten / r.untilDone).toFixed(0) : "—"} | ${r.cpuMs === undefined ? "—" : `${(r.cpuMs / 1000).toFixed(1)} (${(r.cpuMs / r.rows).toFixed(2)})`} | ${r.peakRss ? `${mib(r.peakRss)} (${mib(r.rssBefore)})` : "—"} | ${created ? `${n(created.customers)} / ${n(created.licenses)} / ${n(created.activations)}, ${r.report.skipped}, ${r.report.errorCount}` : "—"} | ${r.load.map((l) => l.toFixed(1)).join(" → ")} |`,
    "",
  ];
  if (r.problems.length > 0) lines.push(`**Not a measurement**: ${r.problems.join("; ")}.`, "");
  if (r.mismatches.length > 0)
    lines.push(
      `**Checks failed**: ${r.mismatches.join("; ")}. With ${n(r.licensesInD1)} licenses in D1, a license id drawn twice is expected about ${r.expectedIdCollisions.toFixed(2)} times (pairs over 2^32 ids).`,
    );
  if (r.problems.length + r.mismatches.length === 0)
    lines.push(
      `Checked: the report and D1 agree with the CSV (${n(r.expected.licenses)} licenses, ${n(r.expected.customers)} customers, ${n(r.expected.activations)} activations; none refused), and an imported license's integrity HMAC is the service's.`,
    );
  return lines;
}

/** The bench report's section: its heading, how it measures, the table and the checks. */
export function importSection(r) {
  return [
    `## Import of ${r.rows.toLocaleString("en-US")} licenses (a CSV through POST /v1/imports, bench/import-burst.mjs)`,
    "",
    "A generated CSV (a customer email on 9 rows in 10, about four licenses a customer, one machine on 3 rows in 10) posted with the admin key; the request checks every row and queues chunks of 500, which the queue's consumer (in the service's workerd here) writes; the import's record polled every 250 ms. Times from the POST; rates over the time until done; D1 rows written: every table's new rows counted before and after (not D1's billed rows written, which count index entries too); CPU: the service workerd's over the import, SQLite's work in it.",
    "",
    ...importRows(r),
  ];
}
