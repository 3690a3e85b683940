// The platform's floors (`npm run bench`): what the work a hot path cannot avoid costs on this runtime, measured in a
// no-logic Worker deployed the way the service is (the same static assets, so the same router hop; local D1 and a
// SQLite-backed Durable Object in a state directory on disk, as the service's). Each path does one piece of work and
// answers a short text:
//   /read           one D1 read (`SELECT 1`): the floor of the health check, the one-read route
//   /read-do-write  one D1 read, then one Durable Object call that updates one row and counts (a heartbeat's seat)
//   /read-sign      one D1 read, then one ES256 signature of a license key's size (a validation's license key)
//   /heartbeat      a POST whose JSON body is read, the heartbeat's own D1 statement (bench/floor-statements.mjs:
//                   the same SQL text, bound alike, over the service's schema), then the Durable Object call
//   /validate       a POST whose JSON body is read, the validation's own D1 statement, then the ES256 signature
//   /post           a session ping's POST whose JSON body is read, answered 202 with no work: the no-logic Worker
//   /ping           the same, then one queue message sent after the answer, whose consumer writes the message's session
//                   as one row (a table of its own; a queue batch's rows in one multi-row INSERT)
//   /ping-gathered  the same, the pings gathered per isolate for 200 ms into one message (as the service's license
//                   traces are, src/licensing/traces.ts): what a ping could cost without a message of its own
// Their ratios to /read bound what the service's paths can reach against its health check: a heartbeat cannot beat
// /heartbeat's ratio, a validation /validate's. The first three split the work into its parts; /heartbeat and
// /validate are a hot path's whole platform work, request shape and statement included. /ping's ratio to /post
// (slices taken in turn) bounds what the anonymous session ping, which queues one message per request and reads no D1,
// can reach against the no-logic Worker: the queue's hop and its consumer's write, which every isolate of this
// machine's one workerd shares; /ping-gathered's, what it could reach with its pings gathered.
import { mkdtempSync, readFileSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { root } from "../scripts/local-worker.mjs";
import { FLOOR_ROWS, HEARTBEAT_READ, VALIDATE_READ } from "./floor-statements.mjs";
import { noLogicWorker } from "./no-logic.mjs";
import { SESSION_PING_HEADERS, sessionPingBody } from "./service.mjs";

const script = `import { DurableObject } from "cloudflare:workers";
export class Seats extends DurableObject {
  constructor(ctx, env) {
    super(ctx, env);
    this.sql = ctx.storage.sql;
    this.sql.exec("CREATE TABLE IF NOT EXISTS seats (token_digest TEXT PRIMARY KEY, expires_at INTEGER NOT NULL)");
    this.sql.exec("INSERT OR IGNORE INTO seats VALUES ('seat', 0)");
  }
  async heartbeat(digest, leaseMs, now) {
    const row = this.sql
      .exec("UPDATE seats SET expires_at = ? WHERE token_digest = ? RETURNING (SELECT count(*) FROM seats WHERE expires_at > ?) AS active", now + leaseMs, digest, now)
      .toArray()[0];
    return { expiresAt: now + leaseMs, active: row.active };
  }
}
let key;
const payload = new TextEncoder().encode(JSON.stringify({ licenseId: "lic0123ABCD", productCode: "bench", licensingMode: "Floating",
  licenseType: "Standard", edition: null, features: [], status: "Activated", expireAt: null, supportExpireAt: null,
  machineId: "bench-machine", clientId: "bench-client", iat: 1800000000, exp: 1800003600 }));
const HEARTBEAT_READ = ${JSON.stringify(HEARTBEAT_READ)};
const VALIDATE_READ = ${JSON.stringify(VALIDATE_READ)};
/** A hot path's read: its statement, its rows as arrays (as the service's single statements are read). */
const read = (env, { sql, params }) => env.DB.prepare(sql).bind(...params).raw();
async function sign(bytes) {
  key ??= await crypto.subtle.generateKey({ name: "ECDSA", namedCurve: "P-256" }, false, ["sign"]);
  return crypto.subtle.sign({ name: "ECDSA", hash: "SHA-256" }, key.privateKey, bytes);
}
let gathered = [];
let flush;
const accepted = () =>
  new Response('{"data":{"accepted":1}}', { status: 202, headers: { "content-type": "application/json" } });
export default {
  async fetch(request, env, ctx) {
    const path = new URL(request.url).pathname;
    if (path === "/post") {
      await request.json();
      return accepted();
    }
    if (path === "/ping" || path === "/ping-gathered") {
      const { version, sessions } = await request.json();
      const ping = { version, install: request.headers.get("x-service-install-id"), sessions };
      if (path === "/ping") ctx.waitUntil(env.PINGS.send({ pings: [ping] }));
      else {
        // Gathered per isolate for 200 ms into one message, as the service gathers license traces.
        gathered.push(ping);
        if (!flush) {
          flush = new Promise((resolve) => setTimeout(resolve, 200)).then(() => {
            const pings = gathered;
            gathered = [];
            flush = undefined;
            return env.PINGS.send({ pings });
          });
          ctx.waitUntil(flush);
        }
      }
      return accepted();
    }
    if (path === "/heartbeat" || path === "/validate") {
      await request.json();
      const rows = await read(env, path === "/heartbeat" ? HEARTBEAT_READ : VALIDATE_READ);
      if (rows.length !== 1) return new Response("the floor's row is missing", { status: 500 });
      if (path === "/heartbeat") {
        const beat = await env.SEATS.getByName("1").heartbeat("seat", 60000, Date.now());
        return new Response(JSON.stringify(beat), { headers: { "content-type": "application/json" } });
      }
      return new Response(String((await sign(payload)).byteLength));
    }
    await env.DB.prepare("SELECT 1").first();
    if (path === "/read-do-write") {
      const beat = await env.SEATS.getByName("1").heartbeat("seat", 60000, Date.now());
      return new Response(JSON.stringify(beat), { headers: { "content-type": "application/json" } });
    }
    if (path === "/read-sign") return new Response(String((await sign(payload)).byteLength));
    return new Response("Healthy");
  },
  // A queue batch's sessions in one multi-row statement, whichever floor sent them.
  async queue(batch, env) {
    const rows = batch.messages.flatMap(({ body }) =>
      body.pings.flatMap(({ version, install, sessions }) =>
        sessions.map((s) => [install, s.id, version, s.status, s.startedAt])));
    await env.DB.prepare(
      "INSERT OR REPLACE INTO floor_pings SELECT value ->> 0, value ->> 1, value ->> 2, value ->> 3, value ->> 4 FROM json_each(?)",
    ).bind(JSON.stringify(rows)).run();
    batch.ackAll();
  },
};
`;

// The licensing calls' request: a POST with a JSON body of their size, and a bearer token's header.
const licensingCall = {
  method: "POST",
  headers: { "content-type": "application/json", authorization: `Bearer ${"x".repeat(280)}` },
  body: JSON.stringify({ userKey: "FLOOR-USER-KEY-0123456789", machineId: "floor-machine" }),
};

// The anonymous session ping's request (bench/service.mjs): a fresh install and session in each (`[<id>]`).
const pingCall = { method: "POST", headers: SESSION_PING_HEADERS, body: sessionPingBody() };

/**
 * The floors; `hotPath`: its ratio comes from slices taken in turn with `against` (else /read), the others' from
 * their runs; `queues`: it sends queue messages, whose drain after each of its slices is charged to it (bench/run.mjs
 * interleaved).
 */
export const FLOORS = [
  { path: "/read", name: "one D1 read (`SELECT 1`, the health check's floor)" },
  { path: "/read-do-write", name: "one D1 read + one Durable Object call that writes" },
  { path: "/read-sign", name: "one D1 read + one ES256 signature" },
  {
    path: "/heartbeat",
    name: "a heartbeat's floor: its POST, its own D1 statement, the Durable Object call that writes",
    request: licensingCall,
    hotPath: true,
  },
  {
    path: "/validate",
    name: "a validation's floor: its POST, its own D1 statement, one ES256 signature",
    request: licensingCall,
    hotPath: true,
  },
  {
    path: "/post",
    name: "a session ping's POST, its JSON body read, answered: the no-logic Worker",
    request: pingCall,
  },
  {
    path: "/ping",
    name: "a session ping's floor: its POST, one queue message after the answer, its consumer's one row",
    request: pingCall,
    hotPath: true,
    against: "/post",
    queues: true,
  },
  {
    path: "/ping-gathered",
    name: "the same with the pings gathered per isolate for 200 ms into one message (as license traces are)",
    request: pingCall,
    hotPath: true,
    against: "/post",
    queues: true,
  },
];

/** Starts the floor Worker (with the service's static assets, D1 and the Durable Object in a state directory of its own). */
export async function startFloorWorker(log) {
  const state = mkdtempSync(join(tmpdir(), "bench-floor-"));
  const mf = noLogicWorker({
    script,
    withAssets: true,
    log,
    options: {
      defaultPersistRoot: state,
      d1Databases: ["DB"],
      durableObjects: { SEATS: { className: "Seats", useSQLite: true } },
      // As wrangler.toml's TRACES queue: batches of 10, 5 s at most.
      queueProducers: { PINGS: "bench-floor-pings" },
      queueConsumers: { "bench-floor-pings": { maxBatchSize: 10, maxBatchTimeout: 5 } },
    },
  });
  const url = await mf.ready;
  // The service's schema and the rows the hot paths' statements find.
  const db = await mf.getD1Database("DB");
  for (const file of readdirSync(join(root, "migrations"))
    .filter((f) => f.endsWith(".sql"))
    .sort())
    for (const statement of readFileSync(join(root, "migrations", file), "utf8").split("--> statement-breakpoint"))
      if (statement.trim()) await db.prepare(statement).run();
  for (const row of FLOOR_ROWS) await db.prepare(row).run();
  await db
    .prepare(
      "CREATE TABLE floor_pings (install TEXT NOT NULL, session_id TEXT NOT NULL, version TEXT NOT NULL, status TEXT NOT NULL, started_at TEXT NOT NULL, PRIMARY KEY (install, session_id))",
    )
    .run();
  for (const { path, request } of FLOORS) {
    const res = await fetch(new URL(path, url), request);
    if (!res.ok) throw new Error(`floor ${path}: ${res.status} ${await res.text()}`);
  }
  return {
    url,
    async dispose() {
      await mf.dispose();
      rmSync(state, { recursive: true, force: true });
    },
  };
}
