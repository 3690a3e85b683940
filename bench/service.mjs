// The service the benchmark measures, started and seeded the same way by every mode of bench/run.mjs (the main
// table, the scale runs, and the A/B comparison of two builds, bench/ab.mjs): its bindings, the data seeded through
// its API, and the scenarios (what is sent to it) over that data.
import { readFileSync } from "node:fs";
import { Log, LogLevel } from "miniflare";
import { COMMERCE_SECRET } from "./commerce-burst.mjs";
import { verifyIntegrity } from "./seed.mjs";

export const ADMIN_KEY = "api_BenchAdminKey0000000000000000000";
export const ENCRYPTION_KEY = "bench-encryption-key";
export const MiB = 1024 * 1024;

/**
 * Miniflare's warnings, printed and counted: Miniflare restarts a workerd that crashed, and a run with a restart
 * in it is reported as such rather than read as a slow scenario.
 */
export class RuntimeLog extends Log {
  crashes = 0;

  constructor(name) {
    super(LogLevel.WARN, { prefix: name });
  }

  logWithLevel(level, message) {
    if (level <= LogLevel.WARN && /crashed unexpectedly/.test(message)) this.crashes++;
    super.logWithLevel(level, message);
  }
}

/** The service's bindings beside wrangler.toml's: throwaway secrets, and limits no scenario reaches. */
export const SERVICE_BINDINGS = {
  Application__JwtSecret: "bench-jwt-secret-0123456789abcdef0123456789",
  Application__EncryptionKey: ENCRYPTION_KEY,
  Application__AdminUsername: "admin",
  Application__AdminPassword: "Bench-12345678",
  Application__AdminApiKey: ADMIN_KEY,
  // The load comes from one IP: protection stays on with a limit no scenario reaches, so "counted" scenarios
  // (a client IP that is not whitelisted) pay the RateLimiter call and the others (127.0.0.1, whitelisted) do not.
  IpFiltering__BruteForceProtection__MaxRequestsPerTimeFrame: "1000000000",
  // Likewise the per-license budget (Licensing:MaxRequestsPerLicense): every scenario hammers one license, and
  // its calls must be answered, not refused with 429 (each row's "not 2xx" column shows any that were).
  Licensing__MaxRequestsPerLicense: "1000000000",
  // The heartbeat scenario's seat is taken at seeding and beats only in its own rows, which a full run reaches more
  // than 2 x 5 min + 30 s later (a seat's life at the default interval): a seat that lives the whole run.
  Licensing__HeartbeatInterval: "02:00:00",
  // The download scenarios use a release anyone may install (no single-use token per request).
  Updates__AllowPublicApplicationReleases: "true",
  // Each answer reports its D1 work (Server-Timing), which the report reads from a sample request.
  Application__ServerTiming: "true",
  // The commerce burst's provider (bench/commerce-burst.mjs).
  Commerce__LemonSqueezy__WebhookSecret: COMMERCE_SECRET,
};

/** CPU time (user + system, ms) these processes have used so far (/proc/<pid>/stat, in 10 ms clock ticks). */
export function cpuMsOf(pids) {
  let ticks = 0;
  for (const pid of pids) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      // utime and stime: fields 14 and 15 of the line, 12 and 13 after the command.
      ticks += Number(fields[11]) + Number(fields[12]);
    } catch {
      // The process ended (a restart): its time is not counted.
    }
  }
  return ticks * 10;
}

/**
 * A session ping (release health, CONTRACT section 13) as the client package sends it at an application's next start:
 * one finished session of the seeded release (1.0.0), started an hour before (the route takes a startedAt from 7
 * days ago to 5 minutes ahead). Every request is another install's ping (a fresh install and session id from the load
 * generator, `[<id>]`), as a population of installs sends them: one fixed install would be one session counted once,
 * which no real traffic is. The queue's consumer writes them off the request path.
 */
export const sessionPingBody = () =>
  JSON.stringify({
    version: "1.0.0",
    platform: "win-x64",
    sessions: [
      {
        id: "[<id>]",
        status: "exited",
        startedAt: new Date(Date.now() - 3_600_000).toISOString(),
        durationMs: 3_540_000,
      },
    ],
  });
/** The session ping's headers: a JSON body and a fresh install id in each request. */
export const SESSION_PING_HEADERS = {
  "content-type": "application/json",
  "X-Service-Install-Id": "bench-install-[<id>]",
};

export const requestOf = (scenario) => (typeof scenario.request === "function" ? scenario.request() : scenario.request);

/**
 * One request of a scenario as a single sample is sent (the baseline's bytes, the D1 work, a build's status): `id`
 * where the load generator puts a fresh id in each request (`[<id>]` in the path, the body or a header's value).
 */
export function sampleOf(request, id) {
  const fill = (text) => text.replaceAll("[<id>]", id);
  return {
    method: request.method ?? "GET",
    path: fill(request.path),
    headers: Object.fromEntries(Object.entries(request.headers ?? {}).map(([name, value]) => [name, fill(value)])),
    body: request.body === undefined ? undefined : fill(request.body),
  };
}

/**
 * Seeds a freshly started service (`url`, its Miniflare `mf`) through its API and answers the scenarios over that data
 * (every one; the caller selects), the seeded product, artifact and helpers. `activations`: how many fresh Activation
 * licenses the activate scenario takes in turn (one per run). `lenient` (the A/B comparison, whose builds may predate
 * a feature): a later feature's seeding that the build refuses (4xx) drops that feature's scenarios, named in
 * `missing`, instead of failing the run.
 */
export async function seedService({ url, mf, activations = 1, lenient = false }) {
  const serviceUrl = url;
  const missing = new Set();
  /** One later feature's seeding (`needs` of its scenarios). */
  const feature = async (name, step) => {
    if (!lenient) return step();
    try {
      await step();
    } catch (error) {
      if (!/: 4\d\d /.test(String(error?.message))) throw error;
      missing.add(name);
      console.warn(`  this build refuses the seeding of ${name}: ${String(error.message).slice(0, 200)}`);
    }
  };

  async function call(method, path, { body, headers = { "x-api-key": ADMIN_KEY } } = {}) {
    const res = await fetch(new URL(path, serviceUrl), {
      method,
      headers: { ...headers, ...(body === undefined ? {} : { "content-type": "application/json" }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${text}`);
    return {
      text,
      json: text && (res.headers.get("content-type") ?? "").includes("json") ? JSON.parse(text) : undefined,
    };
  }
  const api = (method, path, body) => call(method, path, { body });

  for (let i = 0; i < 200; i++) {
    await api("POST", "/v1/resources", {
      resource: { name: `Template ${i}`, type: i % 4 === 0 ? "EmailTemplate" : "File", code: `T-${i}` },
    });
  }
  // An application with a free release holding a 1 MiB installer.
  const fileName = "Bench Setup 1.0.0.exe";
  const fileBytes = Uint8Array.from({ length: MiB }, (_, i) => i % 251);
  const productId = (
    await api("POST", "/v1/products", { product: { code: "bench", name: "Bench", isApplication: true } })
  ).json.productId;
  const releaseId = (
    await api("POST", `/v1/products/${productId}/releases`, {
      productRelease: { version: "1.0.0", public: true, requiresMaintenance: false },
    })
  ).json.productReleaseId;
  const form = new FormData();
  form.set("platform", "win-x64");
  form.set("kind", "installer");
  form.set("file", new Blob([fileBytes]), fileName);
  const uploaded = await fetch(new URL(`/v1/products/${productId}/releases/${releaseId}/downloads`, serviceUrl), {
    method: "POST",
    headers: { "x-api-key": ADMIN_KEY },
    body: form,
  });
  if (uploaded.status !== 201) throw new Error(`seeding the artifact: ${uploaded.status} ${await uploaded.text()}`);
  // The same release as a Squirrel.Windows / Velopack full package (issue 27's package feeds).
  await feature("package feeds", async () => {
    const nupkg = new FormData();
    nupkg.set("platform", "win-x64");
    nupkg.set("kind", "package");
    nupkg.set("file", new Blob([fileBytes.subarray(0, 64 * 1024)]), "Bench-1.0.0-full.nupkg");
    const nupkgUploaded = await fetch(
      new URL(`/v1/products/${productId}/releases/${releaseId}/downloads`, serviceUrl),
      {
        method: "POST",
        headers: { "x-api-key": ADMIN_KEY },
        body: nupkg,
      },
    );
    if (nupkgUploaded.status !== 201)
      throw new Error(`seeding the package: ${nupkgUploaded.status} ${await nupkgUploaded.text()}`);
  });
  // The same release for Tauri (a signed updater archive) and for Sparkle and Squirrel.Mac (a zip with an EdDSA-form
  // signature), on macOS, which the bench opens to every edition so that the anonymous answers are the real ones.
  await feature("macOS updaters", async () => {
    for (const [kind, name, signature] of [
      ["archive", "Bench.app.tar.gz", "dW50cnVzdGVkIGNvbW1lbnQ6IGJlbmNoIHRhdXJpIHNpZ25hdHVyZQ=="],
      ["zip", "Bench-1.0.0-mac.zip", btoa(String.fromCharCode(...fileBytes.subarray(0, 64)))],
    ]) {
      const macForm = new FormData();
      macForm.set("platform", "darwin-arm64");
      macForm.set("kind", kind);
      macForm.set("signature", signature);
      macForm.set("file", new Blob([fileBytes.subarray(0, 64 * 1024)]), name);
      const macUploaded = await fetch(
        new URL(`/v1/products/${productId}/releases/${releaseId}/downloads`, serviceUrl),
        {
          method: "POST",
          headers: { "x-api-key": ADMIN_KEY },
          body: macForm,
        },
      );
      if (macUploaded.status !== 201)
        throw new Error(`seeding ${name}: ${macUploaded.status} ${await macUploaded.text()}`);
    }
    await api("PUT", "/v1/settings", {
      settings: [
        { name: "Updates:PlatformEditions", value: JSON.stringify({ windows: [], mac: [], linux: ["Ultimate"] }) },
      ],
    });
  });
  // Release control (issue 26): a second application whose newest release has a rollout (50 %) and an audience, beside
  // an older release without either; its licensed feed and update check are held against the plain ones above.
  let rcProductId;
  await feature("release control", async () => {
    rcProductId = (
      await api("POST", "/v1/products", { product: { code: "bench-rc", name: "Bench RC", isApplication: true } })
    ).json.productId;
    for (const [version, control] of [
      ["1.0.0", {}],
      ["1.1.0", { stagingPercentage: 50, audience: 'edition == "Ultimate" || customerId == 12' }],
    ]) {
      const rcRelease = await api("POST", `/v1/products/${rcProductId}/releases`, {
        productRelease: { version, public: true, requiresMaintenance: false, ...control },
      });
      // A build from before release control would store the release without them (unknown fields are dropped).
      if (lenient && control.stagingPercentage !== undefined) {
        const stored = await (await mf.getD1Database("DB"))
          .prepare("SELECT staging_percentage AS p FROM product_releases WHERE id = ?")
          .bind(rcRelease.json.productReleaseId)
          .first()
          .catch(() => undefined);
        if (stored?.p !== control.stagingPercentage)
          throw new Error("seeding bench-rc: 400 the release was stored without its rollout");
      }
      const rcForm = new FormData();
      rcForm.set("platform", "win-x64");
      rcForm.set("kind", "installer");
      rcForm.set("file", new Blob([fileBytes.subarray(0, 64 * 1024)]), `Bench RC Setup ${version}.exe`);
      const rcUploaded = await fetch(
        new URL(`/v1/products/${rcProductId}/releases/${rcRelease.json.productReleaseId}/downloads`, serviceUrl),
        {
          method: "POST",
          headers: { "x-api-key": ADMIN_KEY },
          body: rcForm,
        },
      );
      if (rcUploaded.status !== 201)
        throw new Error(`seeding bench-rc: ${rcUploaded.status} ${await rcUploaded.text()}`);
    }
  });
  /** A license through the API, with its user key and its own bearer token (user-key sign-in, as applications do). */
  async function newLicense(fields = {}, forProduct = productId) {
    const id = (await api("POST", "/v1/licenses", { license: { productId: forProduct, ...fields } })).json.id;
    const userKey = (await api("GET", `/v1/licenses?filter=${encodeURIComponent(`id == ${id}`)}&select=userKey`)).json
      .licenses[0].userKey;
    const token = (await call("POST", "/v1/auth/login", { body: { userKey }, headers: {} })).json.token;
    return { id, userKey, bearer: { authorization: `Bearer ${token}` } };
  }
  // The update routes' caller (File mode); a machine activated for validate; a floating seat for heartbeats; and one
  // fresh Activation license per activate run, so earlier runs' activations do not weigh on later ones.
  const updater = await newLicense();
  const rcUpdater = missing.has("release control") ? undefined : await newLicense({ edition: "Ultimate" }, rcProductId);
  const validating = await newLicense({ licensingMode: 1, maxClients: 0 });
  await call("POST", "/v1/license/activate", {
    body: { userKey: validating.userKey, machineId: "bench-validate" },
    headers: validating.bearer,
  });
  const floating = await newLicense({ licensingMode: 2, maxClients: 0 });
  const seat = (
    await call("POST", "/v1/license/request", {
      body: { userKey: floating.userKey, machineId: "bench-floating", clientId: "bench" },
      headers: floating.bearer,
    })
  ).json;
  const activating = [];
  for (let i = 0; i < activations; i++) activating.push(await newLicense({ licensingMode: 1, maxClients: 0 }));
  // A fresh stub at each use: stubs die with a workerd that Miniflare restarts.
  const d1 = () => mf.getD1Database("DB");
  await verifyIntegrity(await d1(), ENCRYPTION_KEY, updater.id);

  // electron-updater asks with a random noCache parameter (its generic provider); the service ignores it.
  const feedPath = "/v1/updates/bench/latest.yml?noCache=k3n9x2";
  const checkPath = "/v1/updates/bench?platform=win-x64&version=0.9.0";
  const rcFeedPath = "/v1/updates/bench-rc/latest.yml?noCache=k3n9x2";
  const rcCheckPath = "/v1/updates/bench-rc?platform=win-x64&version=0.9.0";
  // An install of the release-control product, as the client package's updater helper asks.
  const rcHeaders = {
    "X-Service-User-Key": rcUpdater?.userKey ?? "",
    "X-Service-Install-Id": "5f0c9a8e-7d1b-4c55-9a43-0d2e8f6b1c77",
    "X-Service-Current-Version": "0.9.0",
  };
  // The package feeds as Squirrel.Windows and Velopack ask for them (their own query: id, localVersion, arch).
  const squirrelPath = "/v1/updates/bench/squirrel-win/win-x64/RELEASES?id=Bench&localVersion=0.9.0&arch=amd64";
  const velopackPath = "/v1/updates/bench/velopack/win-x64/releases.stable.json?localVersion=0.9.0&id=Bench";
  // Tauri (dynamic, static), Squirrel.Mac and Sparkle as their updaters ask (issue 27).
  const tauriPath = "/v1/updates/bench/tauri/darwin/aarch64/0.9.0";
  const tauriStaticPath = "/v1/updates/bench/tauri.json";
  const squirrelMacPath = "/v1/updates/bench/squirrel-mac/darwin-arm64/0.9.0";
  const appcastPath = "/v1/updates/bench/appcast.xml?platform=darwin-arm64";
  const downloadPath = `/v1/updates/bench/download/win-x64/1.0.0/${encodeURIComponent(fileName)}`;
  // A differential update's request: 200 ranges of 2 KiB spread over the file, as electron-updater sends them.
  const differentialRange = `bytes=${Array.from({ length: 200 }, (_, i) => `${i * 5000}-${i * 5000 + 2047}`).join(", ")}`;
  const resourceListPath = `/v1/resources?filter=${encodeURIComponent('type == "EmailTemplate" && name.StartsWith("Template 1")')}&sort=-id&take=20`;
  const licenseListPath = `/v1/licenses?filter=${encodeURIComponent(`productId == ${productId} && licensingMode == 1 && revoked == false`)}&sort=-id&take=20`;
  const json = { "content-type": "application/json" };
  const validateBody = JSON.stringify({ userKey: validating.userKey, machineId: "bench-validate" });
  const heartbeatBody = JSON.stringify({ licenseToken: seat.licenseToken });
  const loginBody = JSON.stringify({ username: "admin", password: "Bench-12345678" });
  // Session pings (sessionPingBody above): one request, one install's ping.
  const sessionsPath = "/v1/updates/bench/sessions";
  const sessionsBody = sessionPingBody();
  const ping = (headers = {}) => ({
    path: sessionsPath,
    method: "POST",
    body: sessionsBody,
    headers: { ...SESSION_PING_HEADERS, ...headers },
  });
  // One ping before any number is taken: the route answers 202 (a build from before release health refuses it, and
  // its session scenarios are left out, `lenient`).
  await feature("release health", async () => {
    const probe = sampleOf(ping(), "probe");
    const res = await fetch(new URL(probe.path, serviceUrl), probe);
    const text = await res.text();
    if (res.status !== 202) throw new Error(`POST ${probe.path}: ${res.status} ${text}`);
  });
  let activateRuns = 0;
  // The scenarios. `request` is what the service is sent; the baseline answers a sample of the same answer's bytes.
  // `scale` marks the scenarios whose work depends on the licenses in D1: they run again at each scale. `latency`
  // marks the hot paths, measured again with one connection: at 50 connections every answer waits for the 49 others
  // (latency = connections / throughput), so a per-request latency target is read from the one-connection run.
  // `needs`: the later feature whose seeding the scenario takes (left out where a build refused it, `lenient`).
  const scenarios = [
    { name: "health", request: { path: "/health" } },
    { name: "session (API key)", request: { path: "/v1/auth/session", headers: { "x-api-key": ADMIN_KEY } } },
    {
      name: "session (API key) from a counted IP",
      request: { path: "/v1/auth/session", headers: { "x-api-key": ADMIN_KEY, "cf-connecting-ip": "198.51.100.7" } },
    },
    { name: "list with filter (API key)", request: { path: resourceListPath, headers: { "x-api-key": ADMIN_KEY } } },
    // Its scale runs use one connection only, after the hot paths: at 50 connections its count of every matching row
    // (a million at the last scale) keeps the local D1, which answers one query at a time, busy for minutes, and every
    // other request (the settings reload included) would wait behind it.
    {
      name: "license list with filter (API key)",
      scale: true,
      scaleLoaded: false,
      request: { path: licenseListPath, headers: { "x-api-key": ADMIN_KEY } },
    },
    { name: "feed (anonymous, cached)", scale: true, latency: true, request: { path: feedPath } },
    {
      name: "feed (user key)",
      scale: true,
      latency: true,
      againstHealth: true,
      request: { path: feedPath, headers: { "X-Service-User-Key": updater.userKey } },
    },
    // The other updaters' feeds (issue 27), each anonymous (answered from the isolate's memo) and with a user key.
    ...[
      ["Squirrel.Windows RELEASES", "package feeds", squirrelPath],
      ["Velopack feed", "package feeds", velopackPath],
      ["Tauri", "macOS updaters", tauriPath],
      ["Tauri static JSON", "macOS updaters", tauriStaticPath],
      ["Squirrel.Mac", "macOS updaters", squirrelMacPath],
      ["Sparkle appcast", "macOS updaters", appcastPath],
    ].flatMap(([format, needs, path]) => [
      { name: `${format} (anonymous, cached)`, needs, latency: true, request: { path } },
      {
        name: `${format} (user key)`,
        needs,
        latency: true,
        request: { path, headers: { "X-Service-User-Key": updater.userKey } },
      },
    ]),
    {
      name: "update check (user key, signed)",
      scale: true,
      latency: true,
      againstHealth: true,
      request: { path: checkPath, headers: { "X-Service-User-Key": updater.userKey } },
    },
    {
      name: "feed (user key, rollout + audience)",
      needs: "release control",
      latency: true,
      againstHealth: true,
      request: { path: rcFeedPath, headers: rcHeaders },
    },
    {
      name: "update check (user key, signed, rollout + audience)",
      needs: "release control",
      latency: true,
      againstHealth: true,
      request: { path: rcCheckPath, headers: rcHeaders },
    },
    // The anonymous ping is held against the no-logic Worker in slices taken in turn, as the cached answers are
    // (its target: 0.9 of it); the licensed one against health, as the other licensed hot paths. `queues`: each
    // request sends a queue message, whose consumer's work (in the same workerd here) is charged to the row.
    {
      name: "session ping (anonymous, an install each)",
      needs: "release health",
      latency: true,
      queues: true,
      againstBaseline: true,
      request: ping(),
    },
    {
      name: "session ping (user key, an install each)",
      needs: "release health",
      latency: true,
      queues: true,
      againstHealth: true,
      request: ping({ "X-Service-User-Key": updater.userKey }),
    },
    {
      name: "license validate (bearer)",
      scale: true,
      latency: true,
      againstHealth: true,
      request: {
        path: "/v1/license/validate",
        method: "POST",
        body: validateBody,
        headers: { ...json, ...validating.bearer },
      },
    },
    {
      name: "floating heartbeat (bearer)",
      scale: true,
      latency: true,
      againstHealth: true,
      request: {
        path: "/v1/license/heartbeat",
        method: "POST",
        body: heartbeatBody,
        headers: { ...json, ...floating.bearer },
      },
    },
    {
      name: "activate, a new machine each (bearer)",
      scale: true,
      request: () => {
        const license = activating[activateRuns++ % activating.length];
        return {
          path: "/v1/license/activate",
          method: "POST",
          body: JSON.stringify({ userKey: license.userKey, machineId: "bench-[<id>]" }),
          headers: { ...json, ...license.bearer },
        };
      },
    },
    { name: "download 1 MiB", request: { path: downloadPath }, nginx: true },
    { name: "differential: 200 ranges", request: { path: downloadPath, headers: { range: differentialRange } } },
    {
      name: "login (PBKDF2, 100k iterations)",
      request: { path: "/v1/auth/login", method: "POST", body: loginBody, headers: json },
    },
  ].filter((s) => !s.needs || !missing.has(s.needs));

  return { scenarios, missing, productId, fileName, fileBytes, d1, api, call };
}
