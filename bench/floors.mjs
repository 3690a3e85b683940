// The platform's floors (`npm run bench`): what the work a hot path cannot avoid costs on this runtime, measured in a
// no-logic Worker deployed the way the service is (the same static assets, so the same router hop; local D1 and a
// SQLite-backed Durable Object in a state directory on disk, as the service's). Each path does one piece of work and
// answers a short text:
//   /read           one D1 read (`SELECT 1`): the floor of the health check, the one-read route
//   /read-do-write  one D1 read, then one Durable Object call that updates one row and counts (a heartbeat's seat)
//   /read-sign      one D1 read, then one ES256 signature of a license key's size (a validation's license key)
// Their ratios to /read bound what the service's paths can reach against its health check: a heartbeat cannot beat
// /read-do-write's ratio, a validation /read-sign's.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { noLogicWorker } from "./no-logic.mjs";

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
export default {
  async fetch(request, env) {
    const path = new URL(request.url).pathname;
    await env.DB.prepare("SELECT 1").first();
    if (path === "/read-do-write") {
      const beat = await env.SEATS.getByName("1").heartbeat("seat", 60000, Date.now());
      return new Response(JSON.stringify(beat), { headers: { "content-type": "application/json" } });
    }
    if (path === "/read-sign") {
      key ??= await crypto.subtle.generateKey({ name: "ECDSA", namedCurve: "P-256" }, false, ["sign"]);
      const signature = await crypto.subtle.sign({ name: "ECDSA", hash: "SHA-256" }, key.privateKey, payload);
      return new Response(String(signature.byteLength));
    }
    return new Response("Healthy");
  },
};
`;

export const FLOORS = [
  { path: "/read", name: "one D1 read (the health check's floor)" },
  { path: "/read-do-write", name: "one D1 read + one Durable Object call that writes (a heartbeat's floor)" },
  { path: "/read-sign", name: "one D1 read + one ES256 signature (a validation's floor)" },
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
    },
  });
  const url = await mf.ready;
  return {
    url,
    async dispose() {
      await mf.dispose();
      rmSync(state, { recursive: true, force: true });
    },
  };
}
