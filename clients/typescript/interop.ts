/**
 * The TypeScript interop program of CONTRACT 14: `interop <case> [options]` runs one case with the client package
 * (client/src) and prints one JSON object on stdout; exit 0 when the case succeeded, 1 when it was refused
 * (`{"error":{"code","message"}}`, the refusal codes of CONTRACT 14), 2 on misuse. scripts/interop.mjs runs it (and
 * the other languages' programs, from clients/interop.json) against a local service.
 *
 * Cases: activate, deactivate, validate, seat-request, seat-heartbeat, seat-release, checkout, verify-file,
 * airgap-request, airgap-verify, update-check, session, and bench-validate (bench/clients.mjs: validate with its
 * verification over one kept-alive connection for --seconds, then the verification alone). Options: --url, --product,
 * --user-key, --machine, --client, --version, --platform, --file, --state, --now, --ca, --nonce, --status, --seconds.
 */
import { createHash, randomBytes, randomUUID } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import {
  type FetchFunction,
  type JwkSet,
  LicensingClient,
  OfflineGrace,
  ServiceError,
  VerificationError,
  createActivationRequest,
  verifyLicenseOffline,
} from "../../client/src/index.ts";
import { errorFromRest, networkError } from "../../client/src/errors.ts";
import { fileStore, trustingFetch } from "../../client/src/node.ts";
import { checkAirgapResponse, checkLicenseFile, checkUpdate, refusalOf } from "./lib.ts";

/** Every request gives up after this long: a network failure is `network`, never a hang. */
const TIMEOUT_MS = 15_000;

class Usage extends Error {}

const { values: o, positionals } = (() => {
  try {
    return parseArgs({
      allowPositionals: true,
      options: Object.fromEntries(
        [
          "url",
          "product",
          "user-key",
          "machine",
          "client",
          "version",
          "platform",
          "file",
          "state",
          "now",
          "ca",
          "nonce",
          "status",
          "seconds",
        ].map((name) => [name, { type: "string" as const }]),
      ),
    });
  } catch (error) {
    usage(error instanceof Error ? error.message : String(error));
  }
})();

function print(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value)}\n`);
}

function usage(message: string): never {
  print({ error: { code: "usage", message } });
  process.exit(2);
}

function need(name: keyof typeof o): string {
  const value = o[name];
  if (typeof value !== "string" || value === "") throw new Usage(`--${name} is required for this case`);
  return value;
}

/** --now as a Date (the clock the client believes), or undefined for the computer's. */
function now(): Date | undefined {
  if (o.now === undefined) return undefined;
  const at = new Date(o.now);
  if (Number.isNaN(at.getTime())) throw new Usage(`--now is not an ISO instant: ${o.now}`);
  return at;
}

/** The reason header (`X-Service-Reason`) of the last refused answer: the update routes' reason for a 403. */
let lastReason: string | undefined;

/** fetch with a timeout on every request, trusting --ca when given, remembering the update routes' reason header. */
function makeFetch(): FetchFunction {
  const base: FetchFunction = o.ca ? trustingFetch({ ca: readFileSync(o.ca, "utf8") }) : (i, init) => fetch(i, init);
  return async (input, init) => {
    const response = await base(input, { ...init, signal: init?.signal ?? AbortSignal.timeout(TIMEOUT_MS) });
    if (!response.ok) lastReason = response.headers.get("x-service-reason") ?? undefined;
    return response;
  };
}

const fetchFn = makeFetch();
/** The client of --url; with the license's --user-key (required) unless `anonymous`. */
const client = (anonymous = false): LicensingClient =>
  new LicensingClient({
    baseUrl: need("url"),
    ...(anonymous ? {} : { userKey: need("user-key") }),
    fetch: fetchFn,
  });

const stateDir = (): string | undefined => {
  if (!o.state) return undefined;
  mkdirSync(o.state, { recursive: true });
  return o.state;
};

/** The JWKS kept in --state/jwks.json, if any. */
function keptKeys(): JwkSet | undefined {
  const dir = o.state;
  if (!dir || !existsSync(join(dir, "jwks.json"))) return undefined;
  return JSON.parse(readFileSync(join(dir, "jwks.json"), "utf8")) as JwkSet;
}

/** The keys: --state/jwks.json when present, else fetched once (and kept there when --state is given). */
async function keys(): Promise<JwkSet> {
  const kept = keptKeys();
  if (kept) return kept;
  const fetched = await client(true).getSigningKeys();
  const dir = stateDir();
  if (dir) writeFileSync(join(dir, "jwks.json"), JSON.stringify(fetched));
  return fetched;
}

/** Where a seat's token waits between the seat cases (--state, else a folder of the temporary directory). */
function seatFile(): string {
  const dir = stateDir() ?? join(tmpdir(), "licensing-interop-typescript");
  mkdirSync(dir, { recursive: true });
  const id = createHash("sha256")
    .update(`${o.url}\n${o["user-key"]}\n${need("machine")}\n${need("client")}`)
    .digest("hex")
    .slice(0, 16);
  return join(dir, `seat-${id}.json`);
}

async function validate(): Promise<unknown> {
  const machineId = need("machine");
  const productCode = o.product;
  const request = {
    machineId,
    ...(o.client ? { clientId: o.client } : {}),
    ...(productCode ? { productCode } : {}),
    ...(o.version ? { version: o.version } : {}),
  };
  const dir = stateDir();
  if (!dir) {
    const answer = await client().validate(request);
    const key = answer.license.licenseKey;
    if (key) await verifyLicenseOffline(key, await keys(), { machineId, ...(productCode ? { productCode } : {}) });
    return { valid: true, licenseId: answer.licenseId, verified: key !== undefined, offline: false };
  }
  // The keys kept in the state, else fetched (and kept): offline with none kept, nothing can be verified.
  let jwks = keptKeys();
  if (!jwks) {
    try {
      jwks = await keys();
    } catch {
      jwks = { keys: [] };
    }
  }
  const clock = now();
  const grace = new OfflineGrace(client(), {
    store: fileStore(dir),
    jwks,
    ...(productCode ? { productCode } : {}),
    ...(clock ? { now: () => clock } : {}),
  });
  const result = await grace.validate(request);
  if (!result.online) return { valid: true, licenseId: result.license.licenseId, verified: true, offline: true };
  const key = result.validation.license.licenseKey;
  if (key) await verifyLicenseOffline(key, jwks, { machineId, ...(productCode ? { productCode } : {}) });
  return { valid: true, licenseId: result.validation.licenseId, verified: key !== undefined, offline: false };
}

/** How long the verification alone is repeated for, in bench-validate. */
const VERIFY_MS = 1000;

const round = (value: number, digits: number): number => Number(value.toFixed(digits));

/**
 * bench-validate: activates --machine (idempotent), then validates over and over for --seconds (default 5) with one
 * client, whose fetch keeps its connection alive, each answer's license key verified against the JWKS for this
 * machine, product and a fresh nonce, as the validate case does; then times that verification alone, on the last
 * answer, for a second. Prints `{ requests, seconds, perSecond, verifyMicros }`.
 */
async function benchValidate(): Promise<unknown> {
  const seconds = o.seconds === undefined ? 5 : Number(o.seconds);
  if (!Number.isFinite(seconds) || seconds <= 0) throw new Usage("--seconds is a positive number of seconds");
  const machineId = need("machine");
  const productCode = o.product;
  const service = client();
  await service.activate({ machineId, ...(productCode ? { productCode } : {}) });
  const jwks = await service.getSigningKeys();
  const once = async () => {
    const nonce = randomBytes(16).toString("hex");
    const answer = await service.validate({ machineId, ...(productCode ? { productCode } : {}), nonce });
    const key = answer.license.licenseKey;
    if (!key) throw new VerificationError("malformed", "The validation answer carries no license key");
    const check = { machineId, nonce, ...(productCode ? { productCode } : {}) };
    await verifyLicenseOffline(key, jwks, check);
    return { key, check };
  };
  let last = await once(); // signs in: not timed
  let requests = 0;
  const started = performance.now();
  const until = started + seconds * 1000;
  let now = started;
  while (now < until) {
    last = await once();
    requests++;
    now = performance.now();
  }
  const elapsed = (now - started) / 1000;
  let verifications = 0;
  const verifyStarted = performance.now();
  let verifyNow = verifyStarted;
  while (verifyNow - verifyStarted < VERIFY_MS) {
    await verifyLicenseOffline(last.key, jwks, last.check);
    verifications++;
    verifyNow = performance.now();
  }
  return {
    requests,
    seconds: round(elapsed, 3),
    perSecond: round(requests / elapsed, 1),
    verifyMicros: round(((verifyNow - verifyStarted) * 1000) / verifications, 1),
  };
}

async function run(name: string): Promise<unknown> {
  switch (name) {
    case "activate": {
      const machineId = need("machine");
      const answer = await client().activate({
        machineId,
        ...(o.client ? { clientId: o.client } : {}),
        ...(o.product ? { productCode: o.product } : {}),
        ...(o.version ? { version: o.version } : {}),
      });
      return { licenseId: answer.license.licenseId, machineId };
    }
    case "deactivate":
      await client().deactivate({ machineId: need("machine"), ...(o.client ? { clientId: o.client } : {}) });
      return {};
    case "validate":
      return validate();
    case "bench-validate":
      return benchValidate();
    case "seat-request": {
      const clientId = need("client");
      const seat = await client().requestFloating({ machineId: need("machine"), clientId });
      writeFileSync(seatFile(), JSON.stringify({ licenseToken: seat.licenseToken, licenseId: seat.license.licenseId }));
      return { licenseId: seat.license.licenseId, clientId };
    }
    case "seat-heartbeat":
    case "seat-release": {
      const clientId = need("client");
      const file = seatFile();
      if (!existsSync(file)) throw new Usage("No seat was requested for this machine and client (seat-request first)");
      const seat = JSON.parse(readFileSync(file, "utf8")) as { licenseToken: string; licenseId: string };
      if (name === "seat-heartbeat") {
        await client().heartbeat(seat.licenseToken);
        return { licenseId: seat.licenseId, clientId };
      }
      const released = await client().release(seat.licenseToken);
      return { licenseId: released.licenseId, clientId };
    }
    case "checkout": {
      const path = need("file");
      const answer = await client().checkout({
        machineId: need("machine"),
        ...(o.client ? { clientId: o.client } : {}),
        encrypt: true,
      });
      writeFileSync(path, answer.licenseFile);
      return { expiresAt: answer.expiresAt.toISOString() };
    }
    case "verify-file": {
      const text = readFileSync(need("file"), "utf8");
      const clock = now();
      const verified = await checkLicenseFile(text, await keys(), {
        machineId: need("machine"),
        ...(o.product ? { productCode: o.product } : {}),
        ...(o["user-key"] ? { userKey: o["user-key"] } : {}),
        ...(o.client ? { clientId: o.client } : {}),
        ...(clock ? { now: clock } : {}),
      });
      return { licenseId: verified.licenseId, machineId: verified.machineId, expiresAt: verified.expiresAt };
    }
    case "airgap-request": {
      const request = createActivationRequest({
        userKey: need("user-key"),
        machineId: need("machine"),
        ...(o.client ? { clientId: o.client } : {}),
        ...(o.product ? { productCode: o.product } : {}),
        ...(o.nonce ? { nonce: o.nonce } : {}),
      });
      return { requestCode: request.requestCode, nonce: request.nonce };
    }
    case "airgap-verify": {
      const code = readFileSync(need("file"), "utf8");
      const clock = now();
      const verified = await checkAirgapResponse(code, await keys(), {
        machineId: need("machine"),
        nonce: need("nonce"),
        ...(o.product ? { productCode: o.product } : {}),
        ...(o.client ? { clientId: o.client } : {}),
        ...(o["user-key"] ? { userKey: o["user-key"] } : {}),
        ...(clock ? { now: clock } : {}),
      });
      return { licenseId: verified.licenseId, machineId: verified.machineId };
    }
    case "update-check": {
      const url = new URL(`/v1/updates/${encodeURIComponent(need("product"))}`, `${need("url").replace(/\/+$/, "")}/`);
      url.searchParams.set("platform", need("platform"));
      url.searchParams.set("version", need("version"));
      // The signed answer read and verified here (the client's checkForUpdate reads a 204 "nothing" as no answer).
      const response = await fetchOrNetwork(url.href, {
        headers: {
          accept: "application/json",
          ...(o["user-key"] ? { "x-service-user-key": o["user-key"] } : {}),
          ...(o.machine ? { "x-service-install-id": o.machine } : {}),
        },
      });
      if (response.status === 204) return { available: false, version: null, required: false, rollback: false };
      const body = await responseJson(response);
      return checkUpdate(body, await keys());
    }
    case "session": {
      const status = need("status");
      if (!["started", "exited", "crashed", "abnormal"].includes(status))
        throw new Usage("--status is one of started, exited, crashed, abnormal");
      const url = new URL(
        `/v1/updates/${encodeURIComponent(need("product"))}/sessions`,
        `${need("url").replace(/\/+$/, "")}/`,
      );
      const response = await fetchOrNetwork(url.href, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          accept: "application/json",
          "x-service-install-id": need("machine"),
          ...(o["user-key"] ? { "x-service-user-key": o["user-key"] } : {}),
        },
        body: JSON.stringify({
          version: need("version"),
          ...(o.platform ? { platform: o.platform } : {}),
          sessions: [
            {
              id: randomUUID(),
              status,
              startedAt: new Date().toISOString(),
              ...(status === "started" ? {} : { durationMs: 1000 }),
            },
          ],
        }),
      });
      const body = (await responseJson(response)) as { accepted?: unknown };
      return { accepted: body.accepted };
    }
    default:
      throw new Usage(`Unknown case ${JSON.stringify(name)}`);
  }
}

/** A fetch whose failure to reach the service is the client's NetworkError. */
async function fetchOrNetwork(url: string, init: RequestInit): Promise<Response> {
  try {
    return await fetchFn(url, init);
  } catch (error) {
    throw networkError(url, error);
  }
}

/** The JSON body of a 2xx answer; any other answer throws the client's error for it. */
async function responseJson(response: Response): Promise<unknown> {
  const text = await response.text();
  let body: unknown;
  try {
    body = text ? JSON.parse(text) : undefined;
  } catch {
    body = undefined;
  }
  if (!response.ok) throw errorFromRest(response.status, body, response.statusText);
  return body;
}

const name = positionals[0];
if (!name) usage("interop <case> [options]: a case is required");
try {
  print(await run(name));
  process.exit(0);
} catch (error) {
  if (error instanceof Usage) usage(error.message);
  const refusal = refusalOf(error);
  // The update routes name their reason in a header, not in the body.
  const code = error instanceof ServiceError && lastReason ? lastReason : refusal.code;
  print({ error: { code, message: refusal.message } });
  process.exit(1);
}
