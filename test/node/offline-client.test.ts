/**
 * The client package offline (issue 29, CONTRACT section 11), against the bundled Worker over HTTP: license files
 * checked out from the service and verified by `verifyLicenseFile` with no network (valid; another machine's; expired;
 * altered by one byte; signed by a key not in the JWKS; encrypted and opened with the wrong machine id; a clock set
 * back before the file's issue time or the last time seen), and offline grace (`OfflineGrace`): usable for the signed
 * grace days while the service is unreachable (a closed port), then refused; a revoked license's grace ends at the
 * next validation that reaches the service.
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CompactSign, exportJWK, generateKeyPair } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type JwkSet,
  LicensingClient,
  LicensingError,
  OfflineGrace,
  OfflineGraceError,
  VerificationError,
  memoryStore,
  verifyLicenseFile,
} from "../../client/src/index.ts";
import { fileStore } from "../../client/src/node.ts";
// @ts-expect-error: a plain JavaScript module shared with the benchmark
import { startLocalWorker } from "../../scripts/local-worker.mjs";
import type { JsonBody } from "../json-body.ts";

const KEY = "api_OfflineClientAdminKey00000000000";
const DAY = 86_400_000;
const PRODUCT = "offline-studio";
let worker: { url: URL; dispose(): Promise<void> };
let base: string;
let jwks: JwkSet;
/** A base URL where nothing listens: the service unreachable. */
let unreachable: string;
let userData: string;

async function api(method: string, path: string, body?: unknown): Promise<JsonBody> {
  const res = await fetch(new URL(path, worker.url), {
    method,
    headers: { "x-api-key": KEY, "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const json = (await res.json()) as JsonBody;
  if (res.status !== 200) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(json)}`);
  return json;
}

let productId: number;
async function newLicense(mode: "File" | "Activation", maxClients = 2): Promise<{ id: number; userKey: string }> {
  const created = await api("POST", "/v1/licenses", { license: { productId, licensingMode: mode, maxClients } });
  const listed = await api("GET", `/v1/licenses?filter=${encodeURIComponent(`id == ${created["id"]}`)}&select=userKey`);
  return { id: created["id"], userKey: listed["licenses"][0].userKey };
}

/** A port nothing listens on: one the OS handed out and that was closed again. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as { port: number }).port;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

async function refusal(promise: Promise<unknown>): Promise<VerificationError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(VerificationError);
  return error as VerificationError;
}

beforeAll(async () => {
  worker = await startLocalWorker({
    bindings: {
      Application__JwtSecret: "offline-client-test-jwt-secret-0123456789",
      Application__EncryptionKey: "offline-client-test-encryption-key",
      Application__AdminUsername: "admin",
      Application__AdminPassword: "Offline-12345",
      Application__AdminApiKey: KEY,
    },
  });
  base = worker.url.toString().replace(/\/$/, "");
  unreachable = `http://127.0.0.1:${await closedPort()}`;
  productId = (await api("POST", "/v1/products", { product: { code: PRODUCT, name: "Offline Studio" } }))["productId"];
  jwks = await new LicensingClient({ baseUrl: base }).getSigningKeys();
  userData = mkdtempSync(join(tmpdir(), "offline-user-data-"));
}, 240_000);
afterAll(async () => {
  await worker?.dispose();
  if (userData) rmSync(userData, { recursive: true, force: true });
});

describe("verifyLicenseFile, offline", () => {
  it("accepts its own machine's file and refuses another machine's, an expired one, a clock set back, and one byte changed", async () => {
    const lic = await newLicense("Activation");
    const client = new LicensingClient({ baseUrl: base, userKey: lic.userKey });
    await client.activate({ machineId: "PC-A" });
    const answer = await client.checkout({ machineId: "PC-A", productCode: PRODUCT });
    expect(answer.encrypted).toBe(false);

    // Valid: its signature, machine, product and lifetime.
    const file = await verifyLicenseFile(answer.licenseFile, { jwks, machineId: "PC-A", productCode: PRODUCT });
    expect(file.machine).toEqual({ machineId: "PC-A" });
    expect(file.license.licensingMode).toBe("Activation");
    expect(file.entitlements).toMatchObject({ productCode: PRODUCT, maxClients: 2 });
    expect(file.issuedAt).toEqual(answer.issuedAt);
    expect(file.expiresAt).toEqual(answer.expiresAt);
    // The default lifetime, Licensing:LicenseFileLifetime: 30 days.
    expect(file.expiresAt.getTime() - file.issuedAt.getTime()).toBe(30 * DAY);
    // The checkout answer's data is accepted as it is, and the file's text with its line end.
    await verifyLicenseFile({ licenseFile: `${answer.licenseFile}\n` }, { jwks, machineId: "PC-A" });

    // Another machine's.
    expect((await refusal(verifyLicenseFile(answer.licenseFile, { jwks, machineId: "PC-B" }))).reason).toBe("machine");
    // Another product's application.
    expect(
      (await refusal(verifyLicenseFile(answer.licenseFile, { jwks, machineId: "PC-A", productCode: "other" }))).reason,
    ).toBe("product");

    // Expired: past its expiresAt (the application's clock moved on), and a short-lived checkout (ttl).
    const expired = await refusal(
      verifyLicenseFile(answer.licenseFile, { jwks, machineId: "PC-A", now: new Date(file.expiresAt.getTime() + 1) }),
    );
    expect(expired.reason).toBe("expired");
    expect(expired.message).toMatch(/The license file expired at/);
    const short = await client.checkout({ machineId: "PC-A", ttl: 60 });
    expect(short.expiresAt.getTime() - short.issuedAt.getTime()).toBe(60_000);
    expect(
      (
        await refusal(
          verifyLicenseFile(short.licenseFile, {
            jwks,
            machineId: "PC-A",
            now: new Date(short.issuedAt.getTime() + 61_000),
          }),
        )
      ).reason,
    ).toBe("expired");

    // A clock set back before the file's issue time, or before the last time the application saw.
    const setBack = await refusal(
      verifyLicenseFile(answer.licenseFile, { jwks, machineId: "PC-A", now: new Date(file.issuedAt.getTime() - DAY) }),
    );
    expect(setBack.reason).toBe("clock");
    expect(setBack.message).toMatch(/earlier than the license file's issue time/);
    const beforeLastSeen = await refusal(
      verifyLicenseFile(answer.licenseFile, {
        jwks,
        machineId: "PC-A",
        now: new Date(file.issuedAt.getTime() + DAY),
        lastSeen: new Date(file.issuedAt.getTime() + 10 * DAY),
      }),
    );
    expect(beforeLastSeen.reason).toBe("clock");
    // Ahead of the last time seen: fine.
    await verifyLicenseFile(answer.licenseFile, {
      jwks,
      machineId: "PC-A",
      now: new Date(file.issuedAt.getTime() + 2 * DAY),
      lastSeen: new Date(file.issuedAt.getTime() + DAY),
    });

    // Altered by one byte: in the payload (another machine id's letter, say), in the signature, in the header.
    const [header, payload, signature] = answer.licenseFile.split(".") as [string, string, string];
    const flip = (text: string, at: number) =>
      `${text.slice(0, at)}${text[at] === "A" ? "B" : "A"}${text.slice(at + 1)}`;
    for (const altered of [
      `${header}.${flip(payload, Math.floor(payload.length / 2))}.${signature}`,
      `${header}.${payload}.${flip(signature, 10)}`,
    ]) {
      expect((await refusal(verifyLicenseFile(altered, { jwks, machineId: "PC-A" }))).reason).toBe("signature");
    }
    const decoded = JSON.parse(Buffer.from(payload, "base64url").toString("utf8"));
    decoded.machine.machineId = "PC-B";
    const forged = `${header}.${Buffer.from(JSON.stringify(decoded)).toString("base64url")}.${signature}`;
    expect((await refusal(verifyLicenseFile(forged, { jwks, machineId: "PC-B" }))).reason).toBe("signature");

    // A license key (typ JWT) is no license file, though the same keys signed it.
    const activated = await client.activate({ machineId: "PC-A" });
    expect((await refusal(verifyLicenseFile(activated.license.licenseKey!, { jwks, machineId: "PC-A" }))).reason).toBe(
      "malformed",
    );
  });

  it("refuses a file signed by a key that is not in the application's JWKS", async () => {
    const lic = await newLicense("File");
    const client = new LicensingClient({ baseUrl: base, userKey: lic.userKey });
    const answer = await client.checkout({ machineId: "PC-K" });
    const payload = Buffer.from(answer.licenseFile.split(".")[1]!, "base64url");
    const { privateKey, publicKey } = await generateKeyPair("ES256", { extractable: true });
    const sign = (kid: string) =>
      new CompactSign(payload).setProtectedHeader({ alg: "ES256", kid, typ: "license-file+jwt" }).sign(privateKey);

    // Its own key id: not in the JWKS.
    const rogue = await refusal(verifyLicenseFile(await sign("rogue-key"), { jwks, machineId: "PC-K" }));
    expect(rogue.reason).toBe("unknownKey");
    expect(rogue.message).toMatch(/signed by a key this application does not know/);
    // The service's key id, another key: the signature does not verify.
    const kid = jwks.keys[0]!.kid!;
    expect((await refusal(verifyLicenseFile(await sign(kid), { jwks, machineId: "PC-K" }))).reason).toBe("signature");
    // The same file verifies once its key is in the application's JWKS: what the application trusts is its JWKS.
    const trusted = { keys: [...jwks.keys, { ...(await exportJWK(publicKey)), kid: "rogue-key" }] } as JwkSet;
    expect(
      (await verifyLicenseFile(await sign("rogue-key"), { jwks: trusted, machineId: "PC-K" })).machine.machineId,
    ).toBe("PC-K");
  });

  it("opens an encrypted file with the user key and its machine id only", async () => {
    const lic = await newLicense("Activation");
    const client = new LicensingClient({ baseUrl: base, userKey: lic.userKey });
    await client.activate({ machineId: "PC-E" });
    const answer = await client.checkout({ machineId: "PC-E", encrypt: true });
    expect(answer.encrypted).toBe(true);
    // Nothing of the license is readable without the key.
    expect(Buffer.from(answer.licenseFile.split(".")[1]!, "base64url").toString()).not.toContain("PC-E");

    // The user key as a person types it (lower case, no dashes, O for 0) opens it: the service's compact form.
    const typed = lic.userKey.toLowerCase().replace(/-/g, "").replace(/0/g, "o");
    const opened = await verifyLicenseFile(answer.licenseFile, { jwks, machineId: "PC-E", userKey: typed });
    expect(opened.encrypted).toBe(true);
    expect(opened.machine.machineId).toBe("PC-E");

    // The wrong machine id: it does not open.
    const wrong = await refusal(
      verifyLicenseFile(answer.licenseFile, { jwks, machineId: "PC-F", userKey: lic.userKey }),
    );
    expect(wrong.reason).toBe("decrypt");
    expect(wrong.message).toMatch(/does not open with this machine id and user key/);
    // Another license's user key: it does not open either; without one, it says what is missing.
    const other = await newLicense("File");
    expect(
      (await refusal(verifyLicenseFile(answer.licenseFile, { jwks, machineId: "PC-E", userKey: other.userKey })))
        .reason,
    ).toBe("decrypt");
    expect((await refusal(verifyLicenseFile(answer.licenseFile, { jwks, machineId: "PC-E" }))).message).toMatch(
      /pass the license's userKey/,
    );
  });
});

describe("OfflineGrace", () => {
  it("keeps a license usable for the signed grace days while the service is unreachable, then refuses", async () => {
    const lic = await newLicense("Activation");
    let now = Date.now();
    const store = fileStore(userData);
    const online = new OfflineGrace(new LicensingClient({ baseUrl: base, userKey: lic.userKey }), {
      store,
      jwks,
      productCode: PRODUCT,
      now: () => new Date(now),
    });
    await new LicensingClient({ baseUrl: base, userKey: lic.userKey }).activate({ machineId: "PC-G" });
    const first = await online.validate({ machineId: "PC-G" });
    expect(first.online).toBe(true);
    // Licensing:OfflineGraceDays (7), signed in the validation's license key.
    expect(first.graceDays).toBe(7);
    const validatedAt = first.online ? first.validation.serverTime.getTime() : 0;
    expect(first.graceUntil!.getTime()).toBeGreaterThan(validatedAt + 7 * DAY - 2000);
    expect(readFileSync(join(userData, "licensing-validation.json"), "utf8")).toContain('"licenseKey"');

    // The service unreachable (a closed port), and a new process reading the same store.
    const offline = () =>
      new OfflineGrace(new LicensingClient({ baseUrl: unreachable, userKey: lic.userKey }), {
        store: fileStore(userData),
        jwks,
        productCode: PRODUCT,
        now: () => new Date(now),
      });
    now += DAY;
    const day1 = await offline().validate({ machineId: "PC-G" });
    expect(day1).toMatchObject({ online: false, graceDays: 7, license: { machineId: "PC-G", productCode: PRODUCT } });
    expect(day1.online ? undefined : day1.error.name).toBe("NetworkError");
    now += 5 * DAY + 23 * 3_600_000; // six days and 23 hours after the validation
    expect((await offline().validate({ machineId: "PC-G" })).online).toBe(false);

    // Another machine's application finds nothing it may use.
    const elsewhere = await offline()
      .validate({ machineId: "PC-H" })
      .catch((e: unknown) => e);
    expect(elsewhere).toMatchObject({ reason: "noValidation" });

    // Setting the clock back (to a day after the validation) is noticed: the store saw a later time.
    const saved = now;
    now = validatedAt + DAY;
    const setBack = await offline()
      .validate({ machineId: "PC-G" })
      .catch((e: unknown) => e);
    expect(setBack).toBeInstanceOf(OfflineGraceError);
    expect((setBack as OfflineGraceError).reason).toBe("clock");
    now = saved;

    // Past the grace: refused, saying until when it ran.
    now = validatedAt + 7 * DAY + 60_000;
    const ended = await offline()
      .validate({ machineId: "PC-G" })
      .catch((e: unknown) => e);
    expect(ended).toBeInstanceOf(OfflineGraceError);
    expect((ended as OfflineGraceError).reason).toBe("graceEnded");
    expect((ended as OfflineGraceError).message).toMatch(/7 days of offline use after its last validation/);

    // Back online: validated again, and the grace starts over from this validation.
    now = Date.now();
    expect((await online.validate({ machineId: "PC-G" })).online).toBe(true);
  });

  it("ends a revoked license's grace at the next validation that reaches the service", async () => {
    const lic = await newLicense("Activation");
    let now = Date.now();
    const store = memoryStore();
    const grace = (baseUrl: string) =>
      new OfflineGrace(new LicensingClient({ baseUrl, userKey: lic.userKey }), {
        store,
        jwks,
        now: () => new Date(now),
      });
    await new LicensingClient({ baseUrl: base, userKey: lic.userKey }).activate({ machineId: "PC-R" });
    expect((await grace(base).validate({ machineId: "PC-R" })).online).toBe(true);
    now += DAY;
    expect((await grace(unreachable).validate({ machineId: "PC-R" })).online).toBe(false);

    await api("PUT", "/v1/licenses", { license: { id: lic.id, revoked: true } });
    // Still offline: the application cannot know yet (within the grace it keeps working).
    expect((await grace(unreachable).validate({ machineId: "PC-R" })).online).toBe(false);
    // The next validation that reaches the service: refused, and the grace is over.
    const refused = await grace(base)
      .validate({ machineId: "PC-R" })
      .catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(LicensingError);
    // The user key's sign-in is what the service refuses first (401 Invalid user key.), saying why.
    expect((refused as LicensingError).reason).toBe("licenseRevoked");
    const after = await grace(unreachable)
      .validate({ machineId: "PC-R" })
      .catch((e: unknown) => e);
    expect(after).toBeInstanceOf(OfflineGraceError);
    expect((after as OfflineGraceError).reason).toBe("refused");
    expect((after as OfflineGraceError).message).toMatch(/refused the license \(.*licenseRevoked\)/);
  });
});
