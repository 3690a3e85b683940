#!/usr/bin/env node
// `npm run e2e:webhooks`: webhooks end to end under `wrangler dev`, with the local Queue doing the delivering.
// 1. starts a real HTTP receiver on 127.0.0.1 (test/webhook-receiver.ts) and `wrangler dev` on a free loopback port
//    with fresh state (--persist-to a temporary directory, migrations applied) and Webhooks__AllowInsecureUrls=true,
//    serving the Worker bundled once (so source edits made meanwhile cannot reload it);
// 2. subscribes two endpoints to license.created through the API: one answering 200, one answering 500;
// 3. creates a license through the API and shows the 200 endpoint receiving the signed license.created delivery
//    (checked with the standardwebhooks library and a plain HMAC of X-Service-Signature);
// 4. shows the 500 endpoint's event row scheduling a retry (retryCount, nextRetryAt ~30 s) and the local Queue
//    delivering that retry about 30 s later.
// It stops by itself: everything it started is ended, and the whole run is bounded (DEADLINE_MS).
// Needs Node 22.18 or newer (the receiver is TypeScript run as is); `npm run` uses the project's Node 24.
import { spawn, spawnSync } from "node:child_process";
import { createHmac } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Webhook } from "standardwebhooks";
import { startWebhookReceiver } from "../webhook-receiver.ts";
import { freePort, waitFor } from "../../scripts/lib/processes.mjs";

const DEADLINE_MS = 150_000;
const root = fileURLToPath(new URL("../..", import.meta.url));
const wrangler = join(root, "node_modules/wrangler/bin/wrangler.js");
const KEY = "api_E2eWebhooksKey00000000000000000";
const started = Date.now();
const say = (text) => console.log(`[${((Date.now() - started) / 1000).toFixed(1).padStart(5)} s] ${text}`);

const state = mkdtempSync(join(tmpdir(), "licensing-e2e-webhooks-"));
const env = { ...process.env, WRANGLER_SEND_METRICS: "false", CLOUDFLARE_CF_FETCH_ENABLED: "false", CI: "true" };
const receiver = await startWebhookReceiver();
let dev;
/** Everything wrangler dev printed: written beside the state directory when the check fails. */
let log = "";

async function stop(code) {
  if (dev && dev.exitCode === null) {
    try {
      process.kill(-dev.pid, "SIGTERM"); // wrangler and the workerd it started
    } catch {
      dev.kill("SIGTERM");
    }
    await new Promise((r) => setTimeout(r, 500));
  }
  await receiver.close();
  rmSync(state, { recursive: true, force: true });
  process.exit(code);
}
const deadline = setTimeout(() => {
  console.error(`FAILED: still running after ${DEADLINE_MS / 1000} s`);
  void stop(1);
}, DEADLINE_MS);

async function main() {
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  say(`receiver on ${receiver.url}; state in ${state}`);
  const migrate = spawnSync(
    process.execPath,
    [wrangler, "d1", "migrations", "apply", "DB", "--local", "--persist-to", state],
    { cwd: root, env, encoding: "utf8" },
  );
  if (migrate.status !== 0) throw new Error(`migrations failed:\n${migrate.stdout}\n${migrate.stderr}`);
  say("D1 migrations applied");

  const vars = {
    Application__Environment: "Development",
    Webhooks__AllowInsecureUrls: "true",
    Application__JwtSecret: "e2e-webhooks-jwt-secret-0123456789abcdef",
    Application__EncryptionKey: "e2e-webhooks-encryption-key",
    Application__AdminUsername: "admin",
    Application__AdminPassword: "Admin-12345678",
    Application__AdminApiKey: KEY,
  };
  // wrangler dev reloads when a watched file changes, and a reload drops the local Queue's pending retries: it runs
  // the Worker bundled once, outside the source tree, so edits made meanwhile cannot cut the check short.
  const outdir = join(state, "bundle");
  const bundle = spawnSync(process.execPath, [wrangler, "deploy", "--dry-run", "--outdir", outdir], {
    cwd: root,
    env,
    encoding: "utf8",
  });
  if (bundle.status !== 0) throw new Error(`bundling failed:\n${bundle.stdout}\n${bundle.stderr}`);
  say("Worker bundled");
  const args = [
    wrangler,
    "dev",
    join(outdir, "index.js"),
    "--no-bundle",
    "--config",
    join(root, "wrangler.toml"),
    "--port",
    String(port),
    "--ip",
    "127.0.0.1",
    "--local-protocol",
    "http",
    "--persist-to",
    state,
    "--show-interactive-dev-session=false",
  ];
  for (const [name, value] of Object.entries(vars)) args.push("--var", `${name}:${value}`);
  dev = spawn(process.execPath, args, { cwd: root, env, detached: true, stdio: ["ignore", "pipe", "pipe"] });
  dev.stdout.on("data", (d) => (log += d));
  dev.stderr.on("data", (d) => (log += d));
  await waitFor("wrangler dev to answer /health", 60_000, async () =>
    (await fetch(`${base}/health`)).ok ? true : undefined,
  );
  say(`wrangler dev ready at ${base}`);

  const api = async (method, path, body) => {
    const res = await fetch(`${base}${path}`, {
      method,
      headers: { "x-api-key": KEY, "content-type": "application/json" },
      body: body && JSON.stringify(body),
    });
    const json = await res.json();
    if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(json)}`);
    return json;
  };
  const subscribeTo = async (behaviour) =>
    (
      await api("POST", "/v1/webhooks/subscriptions", {
        subscription: {
          name: `e2e ${behaviour}`,
          url: `${receiver.url}/${behaviour}/e2e`,
          eventTypes: ["license.created"],
        },
      })
    ).subscription;
  const good = await subscribeTo("ok");
  const failing = await subscribeTo("fail500");
  say(
    `subscribed ${good.url} (id ${good.id}) and ${failing.url} (id ${failing.id}) to license.created; secret ${good.secret.slice(0, 12)}…`,
  );

  const product = await api("POST", "/v1/products", { product: { code: "e2e", name: "E2E" } });
  const license = await api("POST", "/v1/licenses", {
    license: { productId: product.productId, licenseeName: "Initech" },
  });
  say(`created license ${license.licenseId} through the API`);

  const delivery = await waitFor("the license.created delivery", 30_000, async () =>
    receiver.deliveries.find((d) => d.path === "/ok/e2e"),
  );
  const payload = new Webhook(good.secret).verify(delivery.body, delivery.headers);
  const [, t, v1] = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(delivery.headers["x-service-signature"]) ?? [];
  const expected = createHmac("sha256", Buffer.from(good.secret, "utf8")).update(`${t}.${delivery.body}`).digest("hex");
  if (v1 !== expected) throw new Error("X-Service-Signature does not verify");
  if (payload.type !== "license.created" || payload.data.licenseId !== license.licenseId)
    throw new Error(`unexpected payload ${delivery.body}`);
  say(
    `receiver got ${delivery.headers["x-service-event"]} ${delivery.headers["x-service-delivery"]} for ${payload.data.licenseId}`,
  );
  say(`  webhook-signature verified with standardwebhooks; X-Service-Signature t=${t} verified with HMAC-SHA256`);
  say(`  body: ${delivery.body.slice(0, 160)}…`);
  const [goodEvent] = (await api("GET", `/v1/webhooks/subscriptions/${good.id}/events`)).events;
  say(
    `  event row: isSuccess=${goodEvent.isSuccess} statusCode=${goodEvent.statusCode} retryCount=${goodEvent.retryCount}`,
  );

  const first = await waitFor("the failing endpoint's first attempt", 30_000, async () => {
    const [event] = (await api("GET", `/v1/webhooks/subscriptions/${failing.id}/events`)).events;
    return event?.sentAt && event.nextRetryAt ? event : undefined;
  });
  const delay = (Date.parse(first.nextRetryAt) - Date.parse(first.sentAt)) / 1000;
  say(
    `500 endpoint: attempt 1 answered ${first.statusCode}; retryCount=${first.retryCount}, nextRetryAt=${first.nextRetryAt} (in ${delay.toFixed(1)} s)`,
  );
  const second = await waitFor("the queued retry", 60_000, async () => {
    const [event] = (await api("GET", `/v1/webhooks/subscriptions/${failing.id}/events`)).events;
    return event?.retryCount >= 1 ? event : undefined;
  });
  const attempts = receiver.deliveries.filter((d) => d.path === "/fail500/e2e");
  const gap = (attempts[1].receivedAt - attempts[0].receivedAt) / 1000;
  say(
    `500 endpoint: the local Queue delivered the retry ${gap.toFixed(1)} s later (same webhook-id: ${attempts[0].headers["webhook-id"] === attempts[1].headers["webhook-id"]})`,
  );
  say(
    `  event row: retryCount=${second.retryCount} statusCode=${second.statusCode} nextRetryAt=${second.nextRetryAt} (next step 2 m ±10 %)`,
  );
  if (attempts.length < 2 || gap < 25)
    throw new Error(
      `expected a retry about 30 s after the first attempt, got ${attempts.length} attempts ${gap} s apart`,
    );
  console.log("PASSED: signed delivery received; failing endpoint retried by the local Queue");
}

main().then(
  () => {
    clearTimeout(deadline);
    return stop(0);
  },
  (e) => {
    clearTimeout(deadline);
    const logFile = `${state}-wrangler.log`;
    writeFileSync(logFile, log);
    console.error(`FAILED: ${e instanceof Error ? e.message : e}\n(wrangler dev's output: ${logFile})`);
    return stop(1);
  },
);
