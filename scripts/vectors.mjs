// `npm run vectors`: writes clients/vectors/ (manifest.json and the files it names) with the service's own code. It
// starts the bundled Worker under Miniflare (scripts/local-worker.mjs), seeds a product, a release and a license
// through the admin API, calls the real routes (validate, update check, checkout, air-gapped activation, JWKS), saves
// their answers, derives the altered variants, then checks every vector with the TypeScript client
// (clients/typescript/vectors.ts). clients/vectors/README.md says what each kind means and how to verify it.
// `--check` only runs the check on the folder as it is.
import { execFileSync } from "node:child_process";
import { mkdirSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { canonicalize } from "../client/src/jcs.ts";
import { base32Decode, crc32, encodeRequestCode, encodeResponseCode } from "../client/src/offline-codes.ts";
import { root, startLocalWorker } from "./local-worker.mjs";

const OUT = join(root, "clients/vectors");
const ADMIN_KEY = "api_VectorsAdminKey0000000000000000";
const PRODUCT = "vector-studio";
const MACHINE = "PC-VECTOR-1";
const AIR_MACHINE = "PC-VECTOR-AIR";
const AIR_CLIENT_MACHINE = "PC-VECTOR-AIR-2";
const AIR_CLIENT = "alice";
const VALIDATION_NONCE = "vector-validation-nonce-0001";
const AIR_NONCE = "00112233445566778899aabbccddeeff";
const AIR_CLIENT_NONCE = "ffeeddccbbaa99887766554433221100";
const HOUR = 3_600_000;
const DAY = 24 * HOUR;

/** Runs the TypeScript client over every vector (exits non-zero when one disagrees). */
function check() {
  execFileSync(
    process.execPath,
    [
      "--experimental-transform-types",
      "--disable-warning=ExperimentalWarning",
      "--import",
      "./clients/typescript/hooks.mjs",
      "clients/typescript/vectors.ts",
    ],
    { cwd: root, stdio: "inherit" },
  );
}

if (process.argv.includes("--check")) {
  check();
  process.exit(0);
}

// ---------------------------------------------------------------------------------------------------------------
// Bytes and text helpers.

const utf8 = new TextEncoder();
const b64url = (bytes) => Buffer.from(bytes).toString("base64url");
const fromB64url = (text) => new Uint8Array(Buffer.from(text, "base64url"));
const iso = (ms) => new Date(ms).toISOString();

/** The JWS with one byte of its signature changed. */
function jwsSignatureByte(jws) {
  const [h, p, s] = jws.split(".");
  const sig = fromB64url(s);
  sig[10] ^= 0x01;
  return `${h}.${p}.${b64url(sig)}`;
}

/** The JWS with its payload replaced by `change(payload object)` (the signature left as it was). */
function jwsPayload(jws, change) {
  const [h, p, s] = jws.split(".");
  const payload = JSON.parse(Buffer.from(p, "base64url").toString("utf8"));
  change(payload);
  return `${h}.${b64url(utf8.encode(JSON.stringify(payload)))}.${s}`;
}

const ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";

/** Crockford base32, as client/src/offline-codes.ts writes it. */
function base32(bytes) {
  let out = "";
  let buffer = 0;
  let bits = 0;
  for (const byte of bytes) {
    buffer = ((buffer << 8) | byte) & 0xffff;
    bits += 8;
    while (bits >= 5) {
      out += ALPHABET[(buffer >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  if (bits > 0) out += ALPHABET[(buffer << (5 - bits)) & 31];
  return out;
}

/** A code's prefix and payload (its CRC32 dropped). */
function readCode(code) {
  const compact = code.replace(/[\s-]+/g, "").toUpperCase();
  const bytes = base32Decode(compact.slice(4));
  return { prefix: compact.slice(0, 4), payload: bytes.slice(0, bytes.length - 4) };
}

/** A code of this prefix and payload, with the payload's CRC32, in groups of five. */
function writeCode(prefix, payload) {
  const bytes = new Uint8Array(payload.length + 4);
  bytes.set(payload);
  new DataView(bytes.buffer).setUint32(payload.length, crc32(payload));
  return [prefix, ...base32(bytes).match(/.{1,5}/g)].join("-");
}

/** The DER form of a P1363 (r||s) ECDSA signature. */
function derSignature(p1363) {
  const integer = (bytes) => {
    let i = 0;
    while (i < bytes.length - 1 && bytes[i] === 0) i++;
    let v = bytes.slice(i);
    if (v[0] & 0x80) v = Uint8Array.of(0, ...v);
    return [0x02, v.length, ...v];
  };
  const body = [...integer(p1363.slice(0, 32)), ...integer(p1363.slice(32))];
  return Uint8Array.from([0x30, body.length, ...body]);
}

/** A JWK Set of one fresh P-256 key under `kid`. */
async function freshJwks(kid) {
  const pair = await crypto.subtle.generateKey({ name: "ECDSA", namedCurve: "P-256" }, true, ["sign", "verify"]);
  const jwk = await crypto.subtle.exportKey("jwk", pair.publicKey);
  return { keys: [{ kty: "EC", crv: "P-256", x: jwk.x, y: jwk.y, kid, alg: "ES256", use: "sig" }] };
}

// ---------------------------------------------------------------------------------------------------------------
// The vectors, collected here and written at the end.

/** path -> content (string or object, written as JSON). */
const files = new Map();
const manifest = [];

function file(path, content) {
  files.set(path, content);
  return path;
}

function vector(name, kind, description, filesOf, params, expect) {
  manifest.push({ name, kind, description, files: filesOf, params, expect });
}

const ok = (output) => ({ ok: true, output });
const refused = (code) => ({ error: code });

// ---------------------------------------------------------------------------------------------------------------
// jcs: deterministic inputs; the expected text is the client's canonicalize, cross-checked with the service's
// (the `canonicalize` npm package).

const { default: serviceCanonicalize } = await import("canonicalize");

const JCS_INPUTS = {
  "jcs-key-order": ["Members sorted by name, whitespace dropped", '{ "b": 2, "a": 1, "c": { "z": true, "y": null } }'],
  "jcs-numbers": [
    "RFC 8785 number serialization (ECMAScript Number.prototype.toString)",
    '{"numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001, 1e21, 1e20, 0.000001, 1e-7, -0, 0, -1.5, 100, 1.0, 9007199254740991, 5e-324, 1.7976931348623157e308, 123456789012345680000, 0.1, 0.30000000000000004]}',
  ],
  "jcs-strings": [
    'String escapes: only \\" \\\\ \\b \\f \\n \\r \\t and \\u00XX below U+0020; / DEL U+2028 and non-ASCII raw',
    '{"s": "\\u20ac$\\u000F\\u000aA\'\\u0042\\u0022\\u005c\\\\\\"\\/", "t": "\\b\\f\\n\\r\\t\\u001f\\u007f\\u2028\\u2029", "u": "caf\\u00e9 \\ud83d\\ude00 日本"}',
  ],
  "jcs-unicode-keys": [
    "Member names sorted by UTF-16 code units (RFC 8785 3.2.3)",
    '{"\\u20ac": "Euro Sign", "\\r": "Carriage Return", "\\ufb33": "Hebrew Letter Dalet With Dagesh", "1": "One", "\\ud83d\\ude00": "Emoji: Grinning Face", "\\u0080": "Control", "\\u00f6": "Latin Small Letter O With Diaeresis", "a": "A", "A": "a", "": "empty"}',
  ],
  "jcs-nested": [
    "Arrays keep their order; objects inside them are sorted",
    '[56, {"d": true, "10": null, "1": []}, [{"b": 1, "a": [{"y": 0, "x": -0.0}]}], "x", false, null, {}]',
  ],
  "jcs-big-integer": [
    "Numbers are doubles: 9007199254740993 reads as 9007199254740992",
    '{"big": 9007199254740993, "neg": -9007199254740993, "exp": 12e2}',
  ],
};

for (const [name, [description, text]] of Object.entries(JCS_INPUTS)) {
  const parsed = JSON.parse(text);
  const canonical = canonicalize(parsed);
  if (serviceCanonicalize(parsed) !== canonical) throw new Error(`${name}: the client and the service disagree`);
  vector(name, "jcs", description, { input: file(`jcs/${name.slice(4)}.txt`, text) }, {}, ok({ canonical }));
}
vector(
  "jcs-lone-surrogate",
  "jcs",
  "A lone surrogate cannot be UTF-8: refused (RFC 8785 3.2.2.2)",
  { input: file("jcs/lone-surrogate.txt", '{"s": "a\\ud800b"}') },
  {},
  refused("malformed"),
);

// ---------------------------------------------------------------------------------------------------------------
// airgap-request: deterministic.

const REQUESTS = {
  "airgap-request-basic": [
    "User key, machine and nonce",
    { userKey: "ABCDE-FGH1J-KMNPQ-RSTVW-XYZ01", machineId: "LAB-PC-7", nonce: AIR_NONCE },
  ],
  "airgap-request-client-product": [
    "With a client and a product code",
    {
      userKey: "ABCDE-FGH1J-KMNPQ-RSTVW-XYZ01",
      machineId: "LAB-PC-7",
      clientId: "alice",
      nonce: "0123456789abcdef0123456789abcdef",
      productCode: "studio",
    },
  ],
  "airgap-request-unicode": [
    "Non-ASCII text is written as raw UTF-8 in the JSON (not \\u escapes); a quote is escaped",
    { userKey: "ABCDE-FGH1J-KMNPQ-RSTVW-XYZ01", machineId: 'Poste de Hélène "Ø" 🖥', nonce: "n-1" },
  ],
};
for (const [name, [description, params]] of Object.entries(REQUESTS)) {
  const json = JSON.stringify({
    v: 1,
    k: params.userKey,
    m: params.machineId,
    ...(params.clientId !== undefined ? { c: params.clientId } : {}),
    n: params.nonce,
    ...(params.productCode !== undefined ? { p: params.productCode } : {}),
  });
  vector(name, "airgap-request", description, {}, params, ok({ requestCode: encodeRequestCode(params), json }));
}

// ---------------------------------------------------------------------------------------------------------------
// The service.

console.log("vectors: starting the bundled Worker…");
const worker = await startLocalWorker({
  bindings: {
    Application__JwtSecret: "vectors-jwt-secret-0123456789abcdef0123",
    Application__EncryptionKey: "vectors-encryption-key",
    Application__AdminUsername: "admin",
    Application__AdminPassword: "Vectors-12345",
    Application__AdminApiKey: ADMIN_KEY,
  },
});
const base = worker.url.toString().replace(/\/$/, "");

/** A call that must succeed: its answer's raw text and parsed body. */
async function call(method, path, { body, headers = {}, admin = false } = {}) {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: {
      ...(admin ? { "x-api-key": ADMIN_KEY } : {}),
      ...(body !== undefined && !(body instanceof FormData) ? { "content-type": "application/json" } : {}),
      ...headers,
    },
    body: body === undefined ? undefined : body instanceof FormData ? body : JSON.stringify(body),
  });
  const text = await res.text();
  if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${text}`);
  return { text, json: text ? JSON.parse(text) : undefined };
}

try {
  const productId = (
    await call("POST", "/v1/products", {
      admin: true,
      body: { product: { code: PRODUCT, name: "Vector Studio", isApplication: true } },
    })
  ).json.productId;
  for (const [version, date] of [
    ["1.0.0", "2026-01-01T00:00:00Z"],
    ["2.0.0", "2026-03-01T00:00:00Z"],
  ]) {
    const id = (
      await call("POST", `/v1/products/${productId}/releases`, {
        admin: true,
        body: { productRelease: { version, public: true, releaseDate: date } },
      })
    ).json.productReleaseId;
    const form = new FormData();
    form.set("platform", "win-x64");
    form.set("kind", "installer");
    form.set("file", new Blob([Buffer.alloc(2048, version.charCodeAt(0))]), `Vector Studio Setup ${version}.exe`);
    await call("POST", `/v1/products/${productId}/releases/${id}/downloads`, { admin: true, body: form });
  }
  const created = await call("POST", "/v1/licenses", {
    admin: true,
    body: {
      license: {
        productId,
        licensingMode: "Activation",
        maxClients: 5,
        edition: "Pro",
        features: ["export", "sync"],
        licenseeName: "Vector Tester",
        expireDate: "2099-01-01T00:00:00Z",
        supportExpireDate: "2098-01-01T00:00:00Z",
      },
    },
  });
  const licenseRow = created.json.id;
  const listed = await call(
    "GET",
    `/v1/licenses?filter=${encodeURIComponent(`id == ${licenseRow}`)}&select=userKey,licenseId`,
    { admin: true },
  );
  const { userKey, licenseId } = listed.json.licenses[0];
  const token = (await call("POST", "/v1/auth/login", { body: { userKey } })).json.token;
  const bearer = { authorization: `Bearer ${token}` };
  const licensing = (path, body) => call("POST", path, { body: { userKey, ...body }, headers: bearer });

  const jwksText = (await call("GET", "/v1/extensions/keys")).text;
  const jwks = JSON.parse(jwksText);
  const serviceKid = jwks.keys[0].kid;
  file("jwks.json", jwks);
  file("jwks-unknown.json", await freshJwks("vector-unknown-key"));
  file("jwks-wrong-key.json", await freshJwks(serviceKid));
  const J = { jwks: "jwks.json" };
  const UNKNOWN = { jwks: "jwks-unknown.json" };
  const WRONG = { jwks: "jwks-wrong-key.json" };

  await licensing("/v1/license/activate", { machineId: MACHINE, productCode: PRODUCT });

  // --- validation -----------------------------------------------------------------------------------------------
  const validation = await licensing("/v1/license/validate", {
    machineId: MACHINE,
    productCode: PRODUCT,
    nonce: VALIDATION_NONCE,
  });
  const answer = validation.json;
  const licenseKey = answer.license.licenseKey;
  const claims = JSON.parse(Buffer.from(licenseKey.split(".")[1], "base64url").toString("utf8"));
  const vNow = iso(claims.iat * 1000 + HOUR);
  const vParams = { machineId: MACHINE, productCode: PRODUCT, nonce: VALIDATION_NONCE, now: vNow };
  const vOut = {
    valid: true,
    licenseId,
    productCode: PRODUCT,
    machineId: MACHINE,
    licensingMode: "Activation",
    status: "Activated",
    offlineGraceDays: claims.offlineGraceDays,
    issuedAt: iso(claims.iat * 1000),
    expiresAt: iso(claims.exp * 1000),
  };
  const withKey = (key) => {
    const copy = structuredClone(answer);
    if (key === undefined) delete copy.license.licenseKey;
    else copy.license.licenseKey = key;
    return copy;
  };
  const V = (name) => `validation/${name}.json`;
  const activatedPath = file(V("activated"), validation.text);
  vector(
    "validation-activated",
    "validation",
    "POST /v1/license/validate for an activated machine, with a nonce, as the service answered it",
    { answer: activatedPath, ...J },
    vParams,
    ok(vOut),
  );
  const vAltered = [
    [
      "validation-signature-byte",
      "One byte of the license key's signature changed",
      withKey(jwsSignatureByte(licenseKey)),
      vParams,
      J,
      "signature",
    ],
    [
      "validation-payload-byte",
      "One byte of the signed payload changed (machineId PC-VECTOR-1 -> PC-VECTOR-2); checked for PC-VECTOR-2",
      withKey(
        jwsPayload(licenseKey, (p) => {
          p.machineId = "PC-VECTOR-2";
        }),
      ),
      { ...vParams, machineId: "PC-VECTOR-2" },
      J,
      "signature",
    ],
    ["validation-wrong-key", "Another key under the service's kid", answer, vParams, WRONG, "signature"],
    ["validation-unknown-key", "A JWKS without the signing key's kid", answer, vParams, UNKNOWN, "unknownKey"],
    [
      "validation-wrong-machine",
      "Checked on another machine",
      answer,
      { ...vParams, machineId: "PC-OTHER" },
      J,
      "machine",
    ],
    [
      "validation-wrong-product",
      "Checked by another product's application",
      answer,
      { ...vParams, productCode: "other-product" },
      J,
      "product",
    ],
    [
      "validation-wrong-nonce",
      "Checked against another request's nonce",
      answer,
      { ...vParams, nonce: "another-nonce" },
      J,
      "nonce",
    ],
    [
      "validation-expired",
      "Checked one minute after the license key's exp",
      answer,
      { ...vParams, now: iso(claims.exp * 1000 + 60_000) },
      J,
      "expired",
    ],
    [
      "validation-malformed",
      "license.licenseKey is not a compact JWS",
      withKey("not-a-license-key"),
      vParams,
      J,
      "malformed",
    ],
    [
      "validation-no-license-key",
      "The answer carries no license key: nothing signed",
      withKey(undefined),
      vParams,
      J,
      "malformed",
    ],
  ];
  for (const [name, description, body, params, keys, code] of vAltered) {
    const path = body === answer ? activatedPath : file(V(name.slice("validation-".length)), body);
    vector(name, "validation", description, { answer: path, ...keys }, params, refused(code));
  }

  // --- update-check ---------------------------------------------------------------------------------------------
  const check = async (version) =>
    call("GET", `/v1/updates/${PRODUCT}?platform=win-x64&version=${version}`, {
      headers: { "x-service-user-key": userKey },
    });
  const available = await check("1.0.0");
  const current = await check("2.0.0");
  const out = (data) => ({
    available: data.updateAvailable,
    version: data.release?.version ?? null,
    required: data.required ?? false,
    rollback: data.rollback ?? false,
  });
  const U = (name) => `update-check/${name}.json`;
  const availablePath = file(U("available"), available.text);
  vector(
    "update-check-available",
    "update-check",
    "GET /v1/updates/vector-studio?platform=win-x64&version=1.0.0: 2.0.0 is available",
    { answer: availablePath, ...J },
    {},
    ok(out(available.json.data)),
  );
  vector(
    "update-check-current",
    "update-check",
    "The same at version 2.0.0: nothing newer",
    { answer: file(U("current"), current.text), ...J },
    {},
    ok(out(current.json.data)),
  );
  const signed = available.json;
  const reorder = (value) =>
    Array.isArray(value)
      ? value.map(reorder)
      : value && typeof value === "object"
        ? Object.fromEntries(
            Object.keys(value)
              .reverse()
              .map((k) => [k, reorder(value[k])]),
          )
        : value;
  vector(
    "update-check-reformatted",
    "update-check",
    "data re-indented with its members in reverse order: the signature covers its canonical JSON, so it verifies",
    { answer: file(U("reformatted"), JSON.stringify({ ...signed, data: reorder(signed.data) }, null, 4)), ...J },
    {},
    ok(out(signed.data)),
  );
  const sig = new Uint8Array(Buffer.from(signed.signature, "base64"));
  const flipped = sig.slice();
  flipped[20] ^= 0x01;
  const changedData = structuredClone(signed.data);
  changedData.release.version = "2.0.1";
  const uAltered = [
    [
      "update-check-signature-byte",
      "One byte of the signature changed",
      { ...signed, signature: Buffer.from(flipped).toString("base64") },
      J,
      "signature",
    ],
    [
      "update-check-data-changed",
      "data.release.version changed from 2.0.0 to 2.0.1",
      { ...signed, data: changedData },
      J,
      "signature",
    ],
    [
      "update-check-der-signature",
      "The same signature in DER form: only the 64-byte P1363 form is taken",
      { ...signed, signature: Buffer.from(derSignature(sig)).toString("base64") },
      J,
      "signature",
    ],
    [
      "update-check-unknown-key",
      "keyId names no key of the JWKS",
      { ...signed, keyId: "no-such-key" },
      J,
      "unknownKey",
    ],
    ["update-check-wrong-key", "Another key under the service's kid", signed, WRONG, "signature"],
    ["update-check-malformed", "No signature member", { data: signed.data, keyId: signed.keyId }, J, "malformed"],
  ];
  for (const [name, description, body, keys, code] of uAltered) {
    const path = body === signed ? availablePath : file(U(name.slice("update-check-".length)), body);
    vector(name, "update-check", description, { answer: path, ...keys }, {}, refused(code));
  }
  vector(
    "jcs-service-data",
    "jcs",
    "The data of an update check the service signed",
    { input: file("jcs/service-data.txt", JSON.stringify(signed.data)) },
    {},
    ok({ canonical: canonicalize(signed.data) }),
  );

  // --- license-file ---------------------------------------------------------------------------------------------
  const plain = (await licensing("/v1/license/checkout", { machineId: MACHINE })).json;
  const sealed = (await licensing("/v1/license/checkout", { machineId: MACHINE, encrypt: true })).json;
  const issued = Date.parse(plain.issuedAt);
  const expires = Date.parse(plain.expiresAt);
  const fNow = iso(issued + HOUR);
  const fParams = { machineId: MACHINE, productCode: PRODUCT, now: fNow };
  const fOut = (answerOf, encrypted) => ({
    licenseId,
    machineId: MACHINE,
    productCode: PRODUCT,
    expiresAt: iso(Date.parse(answerOf.expiresAt)),
    encrypted,
  });
  const F = (name) => `license-file/${name}.lic`;
  const plainPath = file(F("plain"), plain.licenseFile);
  const sealedPath = file(F("encrypted"), sealed.licenseFile);
  const sealedParams = { ...fParams, now: iso(Date.parse(sealed.issuedAt) + HOUR), userKey };
  vector(
    "license-file-plain",
    "license-file",
    `POST /v1/license/checkout for ${MACHINE}`,
    { file: plainPath, ...J },
    fParams,
    ok(fOut(plain, false)),
  );
  vector(
    "license-file-encrypted",
    "license-file",
    `POST /v1/license/checkout {encrypt: true} for ${MACHINE}: opened with the user key`,
    { file: sealedPath, ...J },
    sealedParams,
    ok(fOut(sealed, true)),
  );
  const typedKey = userKey.toLowerCase().replace(/-/g, " ").replace(/0/g, "o");
  vector(
    "license-file-encrypted-typed-user-key",
    "license-file",
    "The same, with the user key as a person may type it (lower case, spaces, O for 0): its compact form derives the key",
    { file: sealedPath, ...J },
    { ...sealedParams, userKey: typedKey },
    ok(fOut(sealed, true)),
  );
  const fAltered = [
    [
      "license-file-signature-byte",
      "One byte of the signature changed",
      jwsSignatureByte(plain.licenseFile),
      fParams,
      J,
      "signature",
    ],
    [
      "license-file-payload-byte",
      "One byte of the payload changed (machine PC-VECTOR-1 -> PC-VECTOR-2); checked for PC-VECTOR-2",
      jwsPayload(plain.licenseFile, (p) => {
        p.machine.machineId = "PC-VECTOR-2";
      }),
      { ...fParams, machineId: "PC-VECTOR-2" },
      J,
      "signature",
    ],
    ["license-file-wrong-key", "Another key under the service's kid", plainPath, fParams, WRONG, "signature"],
    ["license-file-unknown-key", "A JWKS without the signing key's kid", plainPath, fParams, UNKNOWN, "unknownKey"],
    [
      "license-file-wrong-machine",
      "Checked on another machine",
      plainPath,
      { ...fParams, machineId: "PC-OTHER" },
      J,
      "machine",
    ],
    [
      "license-file-wrong-product",
      "Checked by another product's application",
      plainPath,
      { ...fParams, productCode: "other-product" },
      J,
      "product",
    ],
    [
      "license-file-expired",
      "Checked one minute after its expiresAt",
      plainPath,
      { ...fParams, now: iso(expires + 60_000) },
      J,
      "expired",
    ],
    [
      "license-file-clock-rolled-back",
      "The clock one day before the file's issuedAt (beyond the 300 s skew)",
      plainPath,
      { ...fParams, now: iso(issued - DAY) },
      J,
      "clock",
    ],
    [
      "license-file-before-last-seen",
      "The clock ten days before the last time the application saw (lastSeen)",
      plainPath,
      { ...fParams, now: iso(issued + HOUR), lastSeen: iso(issued + 10 * DAY) },
      J,
      "clock",
    ],
    ["license-file-malformed", "Not a compact JWS", "this is not a license file", fParams, J, "malformed"],
    [
      "license-file-license-key",
      "A license key (typ JWT), signed by the same key, is not a license file",
      licenseKey,
      fParams,
      J,
      "malformed",
    ],
    [
      "license-file-encrypted-wrong-machine",
      "The encrypted file opened with another machine id",
      sealedPath,
      { ...sealedParams, machineId: "PC-OTHER" },
      J,
      "decrypt",
    ],
    [
      "license-file-encrypted-wrong-user-key",
      "The encrypted file opened with another user key",
      sealedPath,
      { ...sealedParams, userKey: "ZZZZZ-ZZZZZ-ZZZZZ-ZZZZZ-ZZZZZ" },
      J,
      "decrypt",
    ],
    [
      "license-file-encrypted-no-user-key",
      "The encrypted file without a user key",
      sealedPath,
      { machineId: MACHINE, productCode: PRODUCT, now: sealedParams.now },
      J,
      "decrypt",
    ],
  ];
  for (const [name, description, content, params, keys, code] of fAltered) {
    const path = content.endsWith(".lic") ? content : file(F(name.slice("license-file-".length)), content);
    vector(name, "license-file", description, { file: path, ...keys }, params, refused(code));
  }

  // --- airgap-response ------------------------------------------------------------------------------------------
  const offline = async (machineId, nonce, clientId) =>
    (
      await call("POST", "/v1/license/offline-activation", {
        body: {
          requestCode: encodeRequestCode({
            userKey,
            machineId,
            ...(clientId ? { clientId } : {}),
            nonce,
            productCode: PRODUCT,
          }),
        },
      })
    ).json;
  const air = await offline(AIR_MACHINE, AIR_NONCE);
  const airClient = await offline(AIR_CLIENT_MACHINE, AIR_CLIENT_NONCE, AIR_CLIENT);
  if (!air.responseCode.startsWith("LRS2-")) throw new Error(`expected an LRS2 code, got ${air.responseCode}`);
  const aIssued = Date.parse(air.issuedAt);
  const aExpires = Date.parse(air.expiresAt);
  const aParams = { machineId: AIR_MACHINE, productCode: PRODUCT, nonce: AIR_NONCE, now: iso(aIssued + HOUR) };
  // An LRS2 code states its times in whole seconds.
  const aOut = (machineId, expiresAt) => ({
    licenseId,
    machineId,
    productCode: PRODUCT,
    expiresAt: iso(Math.floor(expiresAt / 1000) * 1000),
  });
  const A = (name) => `airgap/${name}.txt`;
  const lrs2Path = file(A("lrs2"), air.responseCode);
  const lrs1 = encodeResponseCode(air.licenseFile);
  const lrs1Path = file(A("lrs1"), lrs1);
  vector(
    "airgap-response-lrs2",
    "airgap-response",
    "POST /v1/license/offline-activation's responseCode (LRS2) for PC-VECTOR-AIR",
    { code: lrs2Path, ...J },
    aParams,
    ok(aOut(AIR_MACHINE, aExpires)),
  );
  const cParams = {
    machineId: AIR_CLIENT_MACHINE,
    clientId: AIR_CLIENT,
    productCode: PRODUCT,
    nonce: AIR_CLIENT_NONCE,
    now: iso(Date.parse(airClient.issuedAt) + HOUR),
  };
  const lrs2ClientPath = file(A("lrs2-client"), airClient.responseCode);
  vector(
    "airgap-response-lrs2-client",
    "airgap-response",
    "An LRS2 code for a request that named a client (flags bit 0, a client hash)",
    { code: lrs2ClientPath, ...J },
    cParams,
    ok(aOut(AIR_CLIENT_MACHINE, Date.parse(airClient.expiresAt))),
  );
  const typed = air.responseCode.replace(/-/g, "").toLowerCase().replace(/0/g, "o").replace(/1/g, "l");
  vector(
    "airgap-response-lrs2-typed",
    "airgap-response",
    "The LRS2 code as a person may type it: lower case, no dashes, o for 0 and l for 1",
    { code: file(A("lrs2-typed"), typed), ...J },
    aParams,
    ok(aOut(AIR_MACHINE, aExpires)),
  );
  vector(
    "airgap-response-lrs1",
    "airgap-response",
    "The same answer's licenseFile as an LRS1 code (first version, still read)",
    { code: lrs1Path, ...J },
    aParams,
    ok({ ...aOut(AIR_MACHINE, aExpires), expiresAt: iso(aExpires) }),
  );

  const { payload: lrs2Payload } = readCode(air.responseCode);
  const sigByte = lrs2Payload.slice();
  sigByte[sigByte.length - 20] ^= 0x01;
  const bodyByte = lrs2Payload.slice();
  bodyByte[42] ^= 0x01; // maxClients' low byte (offset 39 + 3)
  // One character of the middle changed to another of the alphabet: the checksum no longer matches.
  const chars = air.responseCode.split("");
  const at = Math.floor(chars.length / 2) + (chars[Math.floor(chars.length / 2)] === "-" ? 1 : 0);
  chars[at] = chars[at] === "7" ? "8" : "7";
  const typo = chars.join("");
  const lrs1Jws = air.licenseFile;
  const aAltered = [
    ["airgap-response-lrs2-typo", "One character changed: the CRC32 does not match", typo, aParams, J, "malformed"],
    [
      "airgap-response-lrs2-signature-byte",
      "One byte of the signature changed, the CRC32 recomputed",
      writeCode("LRS2", sigByte),
      aParams,
      J,
      "signature",
    ],
    [
      "airgap-response-lrs2-body-byte",
      "One byte of the body changed (maxClients 5 -> 4), the CRC32 recomputed",
      writeCode("LRS2", bodyByte),
      aParams,
      J,
      "signature",
    ],
    ["airgap-response-lrs2-unknown-key", "A JWKS without the signing key", lrs2Path, aParams, UNKNOWN, "unknownKey"],
    ["airgap-response-lrs2-wrong-key", "Another key under the service's kid", lrs2Path, aParams, WRONG, "signature"],
    [
      "airgap-response-lrs2-wrong-machine",
      "Checked on another machine",
      lrs2Path,
      { ...aParams, machineId: "PC-OTHER" },
      J,
      "machine",
    ],
    [
      "airgap-response-lrs2-wrong-client",
      "Checked by another client",
      lrs2ClientPath,
      { ...cParams, clientId: "bob" },
      J,
      "machine",
    ],
    [
      "airgap-response-lrs2-wrong-nonce",
      "Checked against another request's nonce",
      lrs2Path,
      { ...aParams, nonce: AIR_CLIENT_NONCE },
      J,
      "nonce",
    ],
    [
      "airgap-response-lrs2-wrong-product",
      "Checked by another product's application",
      lrs2Path,
      { ...aParams, productCode: "other-product" },
      J,
      "product",
    ],
    [
      "airgap-response-lrs2-expired",
      "Checked one minute after its expiresAt",
      lrs2Path,
      { ...aParams, now: iso(aExpires + 60_000) },
      J,
      "expired",
    ],
    [
      "airgap-response-lrs2-clock-rolled-back",
      "The clock one day before its issuedAt",
      lrs2Path,
      { ...aParams, now: iso(aIssued - DAY) },
      J,
      "clock",
    ],
    [
      "airgap-response-request-code",
      "A request code (LRQ1) where the response belongs",
      encodeRequestCode({ userKey, machineId: AIR_MACHINE, nonce: AIR_NONCE }),
      aParams,
      J,
      "malformed",
    ],
    [
      "airgap-response-lrs1-wrong-nonce",
      "The LRS1 code checked against another nonce",
      lrs1Path,
      { ...aParams, nonce: AIR_CLIENT_NONCE },
      J,
      "nonce",
    ],
    [
      "airgap-response-lrs1-signature-byte",
      "One byte of the LRS1 code's license file signature changed, the CRC32 recomputed",
      encodeResponseCode(jwsSignatureByte(lrs1Jws)),
      aParams,
      J,
      "signature",
    ],
  ];
  for (const [name, description, content, params, keys, code] of aAltered) {
    const path = content.endsWith(".txt") ? content : file(A(name.slice("airgap-response-".length)), content);
    vector(name, "airgap-response", description, { code: path, ...keys }, params, refused(code));
  }
} finally {
  await worker.dispose();
}

// ---------------------------------------------------------------------------------------------------------------
// Writes the folder: everything but the README is replaced.

for (const entry of readdirSync(OUT))
  if (entry !== "README.md") rmSync(join(OUT, entry), { recursive: true, force: true });
for (const [path, content] of files) {
  mkdirSync(dirname(join(OUT, path)), { recursive: true });
  writeFileSync(join(OUT, path), typeof content === "string" ? content : JSON.stringify(content, null, 2));
}
const kinds = ["jcs", "validation", "update-check", "license-file", "airgap-request", "airgap-response"];
manifest.sort((a, b) => kinds.indexOf(a.kind) - kinds.indexOf(b.kind));
writeFileSync(join(OUT, "manifest.json"), `${JSON.stringify(manifest, null, 2)}\n`);
// Biome formats the JSON files as the tree's lint expects (the vectors' meaning does not depend on layout).
execFileSync(join(root, "node_modules/.bin/biome"), ["format", "--write", "clients/vectors"], {
  cwd: root,
  stdio: "pipe",
});
console.log(`vectors: ${manifest.length} vectors written to clients/vectors/`);
check();
