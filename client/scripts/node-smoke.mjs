#!/usr/bin/env node
// `npm run smoke` (in client/): the BUILT client (dist/) in plain Node, with Node's own fetch and WebCrypto, against the
// service over real HTTP, on both transports. The workerd suite (test/client.test.ts) covers behaviour; this proves the
// package runs on Node as shipped. It starts the service's bundled Worker under workerd (../scripts/local-worker.mjs,
// which needs Node >= 22 for wrangler); to run the client itself on an older Node, point it at a running service:
//   LICENSING_URL=http://127.0.0.1:8787 LICENSING_ADMIN_KEY=api_… node scripts/node-smoke.mjs
import assert from "node:assert/strict";
import { LicensingClient, LicensingError, verifyLicenseOffline } from "../dist/esm/index.js";
import "../dist/esm/grpc-web.js";

const ADMIN_KEY = process.env.LICENSING_ADMIN_KEY ?? "api_SmokeAdminKey0000000000000000000";
let worker;
if (!process.env.LICENSING_URL) {
  const { startLocalWorker } = await import("../../scripts/local-worker.mjs");
  worker = await startLocalWorker({
    bindings: {
      Application__JwtSecret: "smoke-jwt-secret-at-least-32-bytes-long!",
      Application__EncryptionKey: "smoke-encryption-key",
      Application__AdminUsername: "admin",
      Application__AdminPassword: "Admin-12345678",
      Application__AdminApiKey: ADMIN_KEY,
    },
  });
}
const base = (process.env.LICENSING_URL ?? worker.url.href).replace(/\/$/, "");

async function admin(method, path, body) {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: { "x-api-key": ADMIN_KEY, "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const json = await res.json();
  assert.equal(res.status, 200, `${method} ${path}: ${JSON.stringify(json)}`);
  return json;
}

async function newLicense(mode, maxClients) {
  const { productId } = await admin("POST", "/v1/products", {
    product: { code: `smoke-${mode}-${Date.now()}`, name: "Smoke" },
  });
  const { id } = await admin("POST", "/v1/licenses", { license: { productId, licensingMode: mode, maxClients } });
  const { licenses } = await admin("GET", `/v1/licenses?filter=${encodeURIComponent(`id == ${id}`)}&select=userKey`);
  return licenses[0].userKey;
}

try {
  for (const transport of ["http", "grpc-web"]) {
    const activation = new LicensingClient({ baseUrl: base, transport, userKey: await newLicense("Activation", 1) });
    const activated = await activation.activate({ machineId: "PC-1" });
    const validated = await activation.validate({ machineId: "PC-1" });
    assert.equal(validated.status, "Activated");
    assert.ok(validated.serverTime instanceof Date);
    const payload = await verifyLicenseOffline(activated.license.licenseKey, await activation.getSigningKeys(), {
      machineId: "PC-1",
    });
    assert.equal(payload.licenseId, activated.license.licenseId);
    await assert.rejects(
      activation.activate({ machineId: "PC-2" }),
      (e) => e instanceof LicensingError && e.httpStatus === 526,
    );

    const floating = new LicensingClient({ baseUrl: base, transport, userKey: await newLicense("Floating", 1) });
    let resolveBeat;
    const beat = new Promise((resolve) => (resolveBeat = resolve));
    const seat = await floating.requestFloating(
      { machineId: "m1", clientId: "c1" },
      { heartbeatInterval: 0.2, onHeartbeat: resolveBeat, onError: (e) => console.error(e) },
    );
    await beat;
    assert.equal((await seat.release()).activeClientCount, 0);
    const { reportId } = await floating.sendReport({ name: "LicenseReport", content: "smoke" });
    console.log(
      `node ${process.version} ${transport}: activate, validate, offline key, 526, seat + heartbeat + release, report ${reportId}: ok`,
    );
  }
} finally {
  await worker?.dispose();
}
