/**
 * The feeds of the other desktop updaters (CONTRACT section 9), read the way each updater reads them: Tauri's dynamic
 * and static JSON (tauri-plugin-updater's documented shapes: version, notes, pub_date RFC 3339, url, signature;
 * `platforms["<target>-<arch>"]`), Squirrel.Mac's JSON (Electron's update server JSON: url, name, notes, pub_date; 204
 * for no update) and Sparkle's appcast (an XML reader of Sparkle's elements, first run on a fixture laid out as
 * Sparkle's documentation does). For each format: an anonymous public release, a gated release without and with a
 * user key and with a feed token, a revoked license, a rollout at 0 %, a halted release, a platform the license is not
 * entitled to, nothing newer, and bad input; the bytes behind every URL are the uploaded ones.
 */
import { exports } from "cloudflare:workers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bytesOf, hashesOf, newProduct, unique, upload } from "./artifacts-kit";
import { SPARKLE_DOCS_APPCAST } from "./fixtures/sparkle-appcast";
import { BASE, admin, setSetting } from "./helpers";
import { readAppcast } from "./sparkle-reader";

// ---------------------------------------------------------------------------------------------------------------
// Readers, as the updaters read (Sparkle's: test/sparkle-reader.ts)

/** RFC 3339 as Tauri's `pub_date` parser (time's Rfc3339) and Electron read it. */
const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;
/** RFC 822 as Sparkle's date formatter reads `pubDate` ("EEE, dd MMM yyyy HH:mm:ss Z"). */
const RFC822 =
  /^(Mon|Tue|Wed|Thu|Fri|Sat|Sun), \d{2} (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) \d{4} \d{2}:\d{2}:\d{2} [+-]\d{4}$/;

/**
 * tauri-plugin-updater's reading of an update response (its RemoteRelease deserializer): `version` (alias `name`) is
 * SemVer with an optional leading `v`; `notes` and `pub_date` optional, `pub_date` RFC 3339; with `platforms` it is the
 * static manifest (each `{url, signature}`), else the dynamic answer, which must carry `url` (a URL) and `signature`.
 * Throws where the plugin refuses the response.
 */
function tauriRelease(body: unknown): {
  version: string;
  pubDate?: Date;
  platforms?: Record<string, { url: URL; signature: string }>;
  url?: URL;
  signature?: string;
} {
  const b = body as Record<string, unknown>;
  const raw = (b["version"] ?? b["name"]) as string;
  const version = raw.replace(/^v+/, "");
  if (!/^\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$/.test(version)) throw new Error(`version ${raw}`);
  if (b["notes"] !== undefined && typeof b["notes"] !== "string") throw new Error("notes");
  let pubDate: Date | undefined;
  if (b["pub_date"] !== undefined) {
    if (!RFC3339.test(b["pub_date"] as string)) throw new Error(`invalid value for pub_date: ${b["pub_date"]}`);
    pubDate = new Date(b["pub_date"] as string);
  }
  if (b["platforms"] !== undefined) {
    const platforms = Object.fromEntries(
      Object.entries(b["platforms"] as Record<string, { url: string; signature: string }>).map(([k, p]) => {
        if (typeof p.signature !== "string") throw new Error(`signature of ${k}`);
        return [k, { url: new URL(p.url), signature: p.signature }];
      }),
    );
    return { version, ...(pubDate ? { pubDate } : {}), platforms };
  }
  if (typeof b["url"] !== "string") throw new Error("the `url` field was not set on the updater response");
  if (typeof b["signature"] !== "string") throw new Error("the `signature` field was not set on the updater response");
  return { version, ...(pubDate ? { pubDate } : {}), url: new URL(b["url"]), signature: b["signature"] };
}

/** The dynamic answer as tauri-plugin-updater reads it, with exactly these fields, each a string. */
function readTauri(body: unknown): {
  version: string;
  notes: string;
  pub_date: string;
  url: string;
  signature: string;
} {
  expect(tauriRelease(body).url).toBeDefined();
  expect(Object.keys(body as object).sort()).toEqual(["notes", "pub_date", "signature", "url", "version"]);
  const b = body as Record<string, unknown>;
  for (const k of ["version", "notes", "pub_date", "url", "signature"]) expect(typeof b[k], k).toBe("string");
  expect(b["pub_date"]).toMatch(RFC3339);
  return b as never;
}

/**
 * Electron's update server JSON as Squirrel.Mac reads it (SQRLUpdate): `url` the update's zip (required, an absolute
 * URL), `name`, `notes`, and `pub_date` in the ISO 8601 form its date formatter takes ("yyyy-MM-dd'T'HH:mm:ssZZZZZ":
 * no fractional seconds).
 */
function readSquirrelMac(body: unknown): { url: string; name: string; notes: string; pub_date: string } {
  expect(Object.keys(body as object).sort()).toEqual(["name", "notes", "pub_date", "url"]);
  const b = body as Record<string, string>;
  expect(new URL(b["url"]!).protocol).toMatch(/^https?:$/);
  expect(typeof b["name"]).toBe("string");
  expect(typeof b["notes"]).toBe("string");
  expect(b["pub_date"]).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(Z|[+-]\d{2}:\d{2})$/);
  return b as never;
}

// ---------------------------------------------------------------------------------------------------------------
// A product as the formats see it

const ED25519 = { name: "Ed25519" } as const;
const b64 = (bytes: ArrayBuffer | Uint8Array) => btoa(String.fromCharCode(...new Uint8Array(bytes)));

interface Fixture {
  productId: number;
  code: string;
  releases: Record<string, number>;
  /** The bytes of each uploaded file, by file name. */
  files: Map<string, Uint8Array>;
  keys: CryptoKeyPair;
}

async function sparkleSign(keys: CryptoKeyPair, bytes: Uint8Array): Promise<string> {
  return b64(await crypto.subtle.sign(ED25519, keys.privateKey, bytes));
}

/**
 * A product with, for darwin-arm64 (and win-x64 for Tauri's static file):
 *   1.0.0 (2026-01-10 08:30 UTC) ungated: a signed Tauri archive, a signed zip (Sparkle), a signed Windows installer
 *   1.5.0 (2026-03-01)           ungated: an unsigned zip (Squirrel.Mac's) and Windows installer, which Tauri and
 *                                         Sparkle never offer
 *   2.0.0 (2026-06-01)           gated:   the same signed set as 1.0.0
 */
async function fixture(): Promise<Fixture> {
  const product = await newProduct(true);
  const keys = (await crypto.subtle.generateKey(ED25519, true, ["sign", "verify"])) as CryptoKeyPair;
  const f: Fixture = { productId: product.id, code: product.code, releases: {}, files: new Map(), keys };
  const plan: [string, string, boolean, string, boolean][] = [
    ["1.0.0", "2026-01-10T08:30:00.000Z", false, "First release", true],
    ["1.5.0", "2026-03-01T00:00:00.000Z", false, "Mac zip only", false],
    ["2.0.0", "2026-06-01T12:00:00.000Z", true, "Gated release", true],
  ];
  for (const [version, releaseDate, gated, notes, signed] of plan) {
    const id = await addRelease(f, version, { releaseDate, requiresMaintenance: gated, releaseNotes: notes });
    if (signed) await addSigned(f, version, id);
    else {
      // Unsigned: Squirrel.Mac's zip, and an installer Tauri must never offer.
      await addFile(f, id, { platform: "darwin-arm64", kind: "zip", fileName: `App-${version}-arm64-mac.zip` });
      await addFile(f, id, { platform: "win-x64", kind: "installer", fileName: `App_${version}_x64-setup.exe` });
    }
  }
  return f;
}

async function addRelease(f: Fixture, version: string, extra: Record<string, unknown> = {}): Promise<number> {
  const res = await admin("POST", `/v1/products/${f.productId}/releases`, {
    productRelease: { version, public: true, requiresMaintenance: false, ...extra },
  });
  expect(res.status, res.text).toBe(200);
  f.releases[version] = res.body["productReleaseId"];
  return res.body["productReleaseId"];
}

async function addFile(
  f: Fixture,
  releaseId: number,
  o: { platform: string; kind: string; fileName: string; signature?: string; bytes?: Uint8Array },
): Promise<void> {
  const bytes = o.bytes ?? bytesOf(300 + f.files.size * 7, f.files.size + 3);
  const path = `/v1/products/${f.productId}/releases/${releaseId}/downloads`;
  const res = await upload(path, bytes, { ...o, partName: o.fileName });
  expect(res.status, res.text).toBe(201);
  f.files.set(o.fileName, bytes);
}

/** The signed set of a release: Tauri archive (darwin), signed zip (Sparkle), signed Windows installer (Tauri). */
async function addSigned(f: Fixture, version: string, releaseId: number): Promise<void> {
  await addFile(f, releaseId, {
    platform: "darwin-arm64",
    kind: "archive",
    fileName: `App_${version}_aarch64.app.tar.gz`,
    signature: `dW50cnVzdGVkIGNvbW1lbnQ6IHRhdXJpIHNpZ25hdHVyZSB7${version}`,
  });
  const zip = bytesOf(512, Number(version.replace(/\D/g, "")));
  await addFile(f, releaseId, {
    platform: "darwin-arm64",
    kind: "zip",
    fileName: `App-${version}-arm64-mac.zip`,
    signature: await sparkleSign(f.keys, zip),
    bytes: zip,
  });
  await addFile(f, releaseId, {
    platform: "win-x64",
    kind: "installer",
    fileName: `App_${version}_x64-setup.exe`,
    signature: `dW50cnVzdGVkIGNvbW1lbnQ6IHdpbmRvd3Mgc2lnbmF0dXJl${version}`,
  });
}

async function licenseOf(
  productId: number,
  fields: Record<string, unknown> = {},
): Promise<{ id: number; userKey: string; feedToken: string }> {
  const res = await admin("POST", "/v1/licenses", { license: { productId, edition: "Ultimate", ...fields } });
  expect(res.status, res.text).toBe(200);
  const got = await admin("GET", `/v1/licenses?filter=${encodeURIComponent(`id == ${res.body["id"]}`)}`);
  expect(got.status, got.text).toBe(200);
  const lic = got.body["licenses"][0];
  expect(lic.feedToken, got.text).toMatch(/^[0-9a-z]+\.[A-Za-z0-9_-]{22}$/);
  return { id: lic.id, userKey: lic.userKey, feedToken: lic.feedToken };
}

// ---------------------------------------------------------------------------------------------------------------
// Each format: what it offers a caller, read as its updater reads it

interface Caller {
  key?: string;
  feed?: string;
  installId?: string;
}
interface Offer {
  status: number;
  /** The offered version; undefined for the format's "no update". */
  version?: string | undefined;
  url?: string | undefined;
  signature?: string | undefined;
  reason: string | null;
  cacheControl: string | null;
  text: string;
}

async function fetchAs(path: string, who: Caller = {}, origin = BASE) {
  const headers: Record<string, string> = {};
  if (who.key) headers["X-Service-User-Key"] = who.key;
  if (who.installId) headers["X-Service-Install-Id"] = who.installId;
  const url = new URL(`${origin}${path}`);
  if (who.feed) url.searchParams.set("feed", who.feed);
  const res = await exports.default.fetch(url.toString(), { headers: { ...headers, host: url.host } });
  return { res, text: await res.text() };
}

interface Format {
  name: string;
  ask(code: string, current: string, who?: Caller, origin?: string): Promise<Offer>;
}

const formats: Format[] = [
  {
    name: "Tauri (dynamic)",
    async ask(code, current, who, origin) {
      const { res, text } = await fetchAs(`/v1/updates/${code}/tauri/darwin/aarch64/${current}`, who, origin);
      const base = common(res, text);
      if (res.status !== 200) return base;
      const t = readTauri(JSON.parse(text));
      return { ...base, version: t.version, url: t.url, signature: t.signature };
    },
  },
  {
    name: "Tauri (static)",
    async ask(code, current, who, origin) {
      const { res, text } = await fetchAs(`/v1/updates/${code}/tauri.json`, who, origin);
      const base = common(res, text);
      if (res.status !== 200) return base;
      const body = JSON.parse(text) as {
        version: string;
        platforms: Record<string, { url: string; signature: string }>;
      };
      expect(Object.keys(body).sort()).toEqual(["notes", "platforms", "pub_date", "version"]);
      expect(tauriRelease(body).platforms).toBeDefined();
      // The updater's own rule: an update when the version is newer and the platform is listed.
      const platform = body.platforms["darwin-aarch64"];
      if (!platform || compare(body.version, current) <= 0) return base;
      return { ...base, version: body.version, url: platform.url, signature: platform.signature };
    },
  },
  {
    name: "Squirrel.Mac",
    async ask(code, current, who, origin) {
      const { res, text } = await fetchAs(`/v1/updates/${code}/squirrel-mac/darwin-arm64/${current}`, who, origin);
      const base = common(res, text);
      if (res.status !== 200) return base;
      const s = readSquirrelMac(JSON.parse(text));
      const version = /App-(\d+\.\d+\.\d+)-arm64-mac\.zip/.exec(s.url)?.[1];
      expect(s.name).toBe(version);
      return { ...base, version, url: s.url };
    },
  },
  {
    name: "Sparkle",
    async ask(code, current, who, origin) {
      const { res, text } = await fetchAs(`/v1/updates/${code}/appcast.xml?platform=darwin-arm64`, who, origin);
      const base = common(res, text);
      if (res.status !== 200) return base;
      expect(res.headers.get("content-type")).toContain("application/xml");
      const cast = readAppcast(text);
      expect(cast.rssVersion).toBe("2.0");
      const item = cast.items[0];
      // Sparkle's own rule: an update when the item's version is newer than the app's.
      if (!item || compare(item.version!, current) <= 0) return base;
      return { ...base, version: item.version, url: item.enclosure?.url, signature: item.enclosure?.edSignature };
    },
  },
];

function common(res: Response, text: string): Offer {
  if (res.status >= 300 && res.status !== 304) return { status: res.status, reason: null, cacheControl: null, text };
  return {
    status: res.status,
    reason: res.headers.get("X-Service-Reason"),
    cacheControl: res.headers.get("Cache-Control"),
    text,
  };
}

function compare(a: string, b: string): number {
  const x = a.split(".").map(Number);
  const y = b.split(".").map(Number);
  for (let i = 0; i < 3; i++) if (x[i] !== y[i]) return x[i]! - y[i]!;
  return 0;
}

/** The bytes behind an offered URL are the uploaded file's (its name is the URL's last path segment). */
async function expectBytes(f: Fixture, url: string): Promise<void> {
  const name = decodeURIComponent(new URL(url).pathname.split("/").pop()!);
  const expected = f.files.get(name);
  expect(expected, name).toBeDefined();
  const res = await exports.default.fetch(url);
  expect(
    res.status,
    `${url} ${res.status === 200 ? "" : await res.clone().text()} ${res.headers.get("X-Service-Reason")}`,
  ).toBe(200);
  const got = new Uint8Array(await res.arrayBuffer());
  expect((await hashesOf(got)).sha512).toBe((await hashesOf(expected!)).sha512);
}

// ---------------------------------------------------------------------------------------------------------------

beforeAll(async () => {
  // macOS open to every edition unless a test says otherwise (the default asks Ultimate for mac).
  await setSetting("Updates:PlatformEditions", JSON.stringify({ windows: [], mac: [], linux: [] }));
  // Applications whose ungated releases anyone may install (the anonymous answers).
  await setSetting("Updates:AllowPublicApplicationReleases", "true");
});
afterAll(async () => {
  await setSetting("Updates:PlatformEditions", null);
  await setSetting("Updates:AllowPublicApplicationReleases", null);
});

describe("the reader of Sparkle's appcasts", () => {
  it("reads the documented layout: items, versions, enclosure, channel, phased, critical and minimum versions", () => {
    const cast = readAppcast(SPARKLE_DOCS_APPCAST);
    expect(cast.rssVersion).toBe("2.0");
    expect(cast.items).toHaveLength(2);
    expect(cast.items[0]).toMatchObject({
      title: "Version 2.1",
      pubDate: "Mon, 05 Jan 2026 10:00:00 +0000",
      version: "2.1.0",
      shortVersionString: "2.1",
      channel: "beta",
      phasedRolloutInterval: "86400",
      criticalUpdate: { version: "2.0.0" },
      minimumAutoupdateVersion: "1.5.0",
      description: "<ul><li>Faster start</li></ul>",
      enclosure: {
        url: "https://example.com/downloads/Example%202.1.zip",
        length: "107758",
        type: "application/octet-stream",
      },
    });
    expect(cast.items[0]!.pubDate).toMatch(RFC822);
    // The older layout: the versions as the enclosure's attributes.
    expect(cast.items[1]).toMatchObject({ version: "2.0.0", shortVersionString: "2.0" });
    // Strict: a malformed appcast is refused, as Sparkle refuses it.
    expect(() => readAppcast("<rss><channel><item></channel></rss>")).toThrow();
  });
});

describe.each(formats)("$name", (format) => {
  let f: Fixture;
  beforeAll(async () => {
    f = await fixture();
  });

  it("anonymous: the newest ungated release it can install, cached, with the uploaded bytes behind the URL", async () => {
    const offer = await format.ask(f.code, "0.9.0");
    expect(offer.status, offer.text).toBe(200);
    // Squirrel.Mac installs the unsigned zip of 1.5.0; Tauri and Sparkle only offer signed updates.
    expect(offer.version).toBe(format.name === "Squirrel.Mac" ? "1.5.0" : "1.0.0");
    expect(offer.cacheControl).toMatch(/^public, max-age=\d+$/);
    expect(offer.url).toContain("?artifact=");
    expect(offer.url).not.toContain("token=");
    await expectBytes(f, offer.url!);
    if (format.name.startsWith("Tauri"))
      expect(offer.signature).toBe("dW50cnVzdGVkIGNvbW1lbnQ6IHRhdXJpIHNpZ25hdHVyZSB71.0.0");
    if (format.name === "Sparkle") {
      // The EdDSA signature as uploaded, and it verifies over the bytes the URL serves.
      const bytes = f.files.get("App-1.0.0-arm64-mac.zip")!;
      const sig = Uint8Array.from(atob(offer.signature!), (c) => c.charCodeAt(0));
      expect(await crypto.subtle.verify(ED25519, f.keys.publicKey, sig, bytes)).toBe(true);
    }
    // Asked again: the same answer (from the isolate's memo of anonymous answers).
    const again = await format.ask(f.code, "0.9.0");
    expect(again.text).toBe(offer.text);
  });

  it("gated: not without a key; with the key header or the license's feed token, tokenised URLs of the gated release", async () => {
    const lic = await licenseOf(f.productId);
    for (const who of [{ key: lic.userKey }, { feed: lic.feedToken }]) {
      const offer = await format.ask(f.code, "1.0.0", who);
      expect(offer.status, offer.text).toBe(200);
      expect(offer.version, JSON.stringify(who)).toBe("2.0.0");
      expect(offer.cacheControl).toBe("private, no-store");
      expect(offer.url).toMatch(/\?token=[^&]+/);
      await expectBytes(f, offer.url!);
    }
    // A token of no license, or of another form, names nobody: the ungated release only, and the reason says so.
    const forged = `${lic.id.toString(36)}.AAAAAAAAAAAAAAAAAAAAAA`;
    for (const feed of [forged, "nonsense"]) {
      const offer = await format.ask(f.code, "1.0.0", { feed });
      expect(offer.version ?? "none").not.toBe("2.0.0");
      expect(offer.reason, feed).toBe("licenseNotFound");
      expect(offer.cacheControl).toBe("private, no-store");
    }
  });

  it("a revoked license is refused (403) by key and by feed token; a new key makes the old token name nobody", async () => {
    const lic = await licenseOf(f.productId);
    expect((await admin("PUT", "/v1/licenses", { license: { id: lic.id, revoked: true } })).status).toBe(200);
    for (const who of [{ key: lic.userKey }, { feed: lic.feedToken }]) {
      const offer = await format.ask(f.code, "1.0.0", who);
      expect(offer.status, JSON.stringify(who)).toBe(403);
      expect(offer.text).toContain("License revoked or expired");
    }
    // Deleted: its token names no license any more.
    expect((await admin("DELETE", `/v1/licenses/${lic.id}`)).status).toBe(200);
    const gone = await format.ask(f.code, "1.0.0", { feed: lic.feedToken });
    expect(gone.reason).toBe("licenseNotFound");
    expect(gone.version ?? "none").not.toBe("2.0.0");
  });

  it("a platform the license is not entitled to: no update, with the reason", async () => {
    const lic = await licenseOf(f.productId, { edition: "Standard" });
    await setSetting("Updates:PlatformEditions", JSON.stringify({ windows: [], mac: ["Ultimate"], linux: [] }));
    try {
      const offer = await format.ask(f.code, "0.9.0", { key: lic.userKey });
      expect(offer.version).toBeUndefined();
      expect(offer.reason).toBe("platformRequiresEdition");
      if (format.name === "Sparkle") expect(readAppcast(offer.text).items).toHaveLength(0);
      // The static file still lists Windows (open to every edition), not macOS.
      else if (format.name === "Tauri (static)")
        expect(JSON.parse(offer.text).platforms).not.toHaveProperty("darwin-aarch64");
      else expect(offer.status).toBe(204);
    } finally {
      await setSetting("Updates:PlatformEditions", JSON.stringify({ windows: [], mac: [], linux: [] }));
    }
  });

  it("nothing newer: the format's no-update answer", async () => {
    const lic = await licenseOf(f.productId);
    const offer = await format.ask(f.code, "2.0.0", { key: lic.userKey });
    expect(offer.version).toBeUndefined();
    // Tauri's dynamic server and Squirrel.Mac answer 204; the static file and the appcast name the newest release,
    // which the updater compares with its own version.
    if (format.name === "Tauri (dynamic)" || format.name === "Squirrel.Mac") {
      expect(offer.status).toBe(204);
      expect(offer.reason).toBe("nothingNewer");
    } else expect(offer.status).toBe(200);
  });

  it("a rollout at 0 %: offered to nobody; at 100 % to everyone", async () => {
    const g = await fixture();
    const id = await addRelease(g, "3.0.0", { stagingPercentage: 0, releaseDate: "2026-09-01T00:00:00.000Z" });
    await addSigned(g, "3.0.0", id);
    const lic = await licenseOf(g.productId);
    const expectedAnonymous = format.name === "Squirrel.Mac" ? "1.5.0" : "1.0.0";
    expect((await format.ask(g.code, "0.9.0")).version).toBe(expectedAnonymous);
    expect((await format.ask(g.code, "0.9.0", { installId: `install-${unique()}` })).version).toBe(expectedAnonymous);
    expect((await format.ask(g.code, "0.9.0", { key: lic.userKey })).version).toBe("2.0.0");
    const full = await admin("PUT", `/v1/products/${g.productId}/releases`, {
      productRelease: { id, stagingPercentage: 100 },
    });
    expect(full.status, full.text).toBe(200);
    expect((await format.ask(g.code, "0.9.0")).version).toBe("3.0.0");
    expect((await format.ask(g.code, "0.9.0", { key: lic.userKey })).version).toBe("3.0.0");
  });

  it("an audience: offered to a license it matches, by key and by feed token; not to another license, nor anonymously", async () => {
    const g = await fixture();
    const id = await addRelease(g, "3.0.0", {
      audience: 'edition == "Ultimate"',
      releaseDate: "2026-09-01T00:00:00.000Z",
    });
    await addSigned(g, "3.0.0", id);
    const matching = await licenseOf(g.productId);
    const other = await licenseOf(g.productId, { edition: "Standard" });
    const expectedAnonymous = format.name === "Squirrel.Mac" ? "1.5.0" : "1.0.0";
    // Twice: the first poll may read the releases; the next has them remembered, and its license read carries the
    // audience's verdict as a column (by user key, or by the license id a feed token names).
    for (let poll = 0; poll < 2; poll++) {
      for (const who of [{ key: matching.userKey }, { feed: matching.feedToken }])
        expect((await format.ask(g.code, "0.9.0", who)).version, JSON.stringify(who)).toBe("3.0.0");
      for (const who of [{ key: other.userKey }, { feed: other.feedToken }])
        expect((await format.ask(g.code, "0.9.0", who)).version, JSON.stringify(who)).toBe("2.0.0");
      expect((await format.ask(g.code, "0.9.0")).version).toBe(expectedAnonymous);
    }
  });

  it("a halted release: the previous admissible release instead", async () => {
    const g = await fixture();
    const lic = await licenseOf(g.productId);
    expect((await format.ask(g.code, "0.9.0", { key: lic.userKey })).version).toBe("2.0.0");
    const halt = await admin("POST", `/v1/products/${g.productId}/releases/${g.releases["2.0.0"]}/halt`, {});
    expect(halt.status, halt.text).toBe(200);
    const offer = await format.ask(g.code, "0.9.0", { key: lic.userKey });
    expect(offer.version).toBe(format.name === "Squirrel.Mac" ? "1.5.0" : "1.0.0");
  });
});

describe("bad input", () => {
  const f = { code: "" };
  beforeAll(async () => {
    f.code = (await newProduct(true)).code;
  });

  it("answers 404 or 400 with a message, never 500", async () => {
    const cases: [string, number, string][] = [
      [`/v1/updates/${f.code}/tauri/haiku/x86_64/1.0.0`, 404, "Unknown Tauri target 'haiku'"],
      [`/v1/updates/${f.code}/tauri/linux/sparc/1.0.0`, 404, "Unknown Tauri arch 'sparc'"],
      [`/v1/updates/${f.code}/tauri/windows/i686/1.0.0`, 404, "No updates for windows i686"],
      [`/v1/updates/${f.code}/tauri/darwin/aarch64/1.0`, 400, "Unknown version '1.0'"],
      [`/v1/updates/${f.code}/tauri/darwin/aarch64/1.0.0?channel=beta`, 400, "Unknown channel 'beta'"],
      [`/v1/updates/${f.code}/tauri.json?channel=nightly`, 400, "Unknown channel 'nightly'"],
      [`/v1/updates/nope-${unique()}/tauri.json`, 404, "Unknown product"],
      [`/v1/updates/${f.code}/squirrel-mac/win32/1.0.0`, 404, "Unknown Squirrel.Mac platform 'win32'"],
      [`/v1/updates/${f.code}/squirrel-mac/darwin/latest`, 400, "Unknown version 'latest'"],
      [`/v1/updates/${f.code}/appcast.xml?platform=win-x64`, 400, "Unknown Sparkle platform 'win-x64'"],
      [`/v1/updates/${f.code}/appcast.xml?channel=beta`, 400, "Unknown channel 'beta'"],
    ];
    for (const [path, status, message] of cases) {
      const res = await exports.default.fetch(`${BASE}${path}`);
      const text = await res.text();
      expect(res.status, path).toBe(status);
      expect(text, path).toContain(message);
    }
  });

  it("nothing published: 204 for Tauri and Squirrel.Mac, an appcast without items for Sparkle", async () => {
    for (const format of formats) {
      const offer = await format.ask(f.code, "1.0.0");
      expect(offer.version, format.name).toBeUndefined();
      expect(offer.reason, format.name).toBe("noRelease");
      if (format.name === "Sparkle") expect(readAppcast(offer.text).items).toEqual([]);
      else expect(offer.status, format.name).toBe(204);
    }
  });
});

describe("Sparkle's appcast, field by field", () => {
  it("RSS 2.0 in Sparkle's namespace; dates, versions, channel, phased rollout, critical and minimum versions", async () => {
    const f = await fixture();
    const lic = await licenseOf(f.productId);
    // Insider: a release of its own channel, staged at 30 %, critical, and the product's minimum version.
    const insider = await addRelease(f, "2.1.0", {
      channel: "insider",
      stagingPercentage: 30,
      critical: true,
      releaseDate: "2026-07-04T16:05:09.000Z",
      name: "Two point one & more",
    });
    await addSigned(f, "2.1.0", insider);
    const minimum = await admin("PUT", "/v1/products", { product: { id: f.productId, minimumVersion: "1.2.0" } });
    expect(minimum.status, minimum.text).toBe(200);

    const res = await exports.default.fetch(
      `${BASE}/v1/updates/${f.code}/appcast.xml?channel=insider&platform=darwin-arm64`,
    );
    const xml = await res.text();
    expect(res.status, xml).toBe(200);
    expect(xml.startsWith('<?xml version="1.0" encoding="utf-8"?>')).toBe(true);
    const cast = readAppcast(xml);
    expect(cast.items).toHaveLength(1);
    const zip = f.files.get("App-2.1.0-arm64-mac.zip")!;
    expect(cast.items[0]).toEqual({
      title: "Two point one & more",
      pubDate: "Sat, 04 Jul 2026 16:05:09 +0000",
      version: "2.1.0",
      shortVersionString: "2.1.0",
      channel: "insider",
      // Anonymous, no install id: Sparkle phases the staged release in by itself.
      phasedRolloutInterval: "86400",
      criticalUpdate: { version: "2.1.0" },
      minimumAutoupdateVersion: "1.2.0",
      enclosure: {
        url: expect.stringContaining("/App-2.1.0-arm64-mac.zip?artifact="),
        length: String(zip.byteLength),
        type: "application/octet-stream",
        edSignature: await sparkleSign(f.keys, zip),
      },
    });
    expect(cast.items[0]!.pubDate).toMatch(RFC822);
    // The stable appcast: no channel tag; a licensed caller (a cohort) gets no phased interval.
    const stable = readAppcast((await fetchAs(`/v1/updates/${f.code}/appcast.xml`, { key: lic.userKey })).text)
      .items[0]!;
    expect(stable.version).toBe("2.0.0");
    expect(stable.channel).toBeUndefined();
    expect(stable.phasedRolloutInterval).toBeUndefined();
    expect(stable.criticalUpdate).toEqual({ version: "1.2.0" });
    // The release's Markdown notes, as HTML (notes.ts).
    expect(stable.description).toBe("<p>Gated release</p>");
  });
});

describe("Tauri's JSON, field by field", () => {
  it("dynamic and static: version, notes, pub_date (RFC 3339, UTC), url and the .sig text as uploaded", async () => {
    const f = await fixture();
    const dynamic = await fetchAs(`/v1/updates/${f.code}/tauri/windows/x86_64/0.1.0`);
    expect(dynamic.res.headers.get("content-type")).toContain("application/json");
    const t = readTauri(JSON.parse(dynamic.text));
    expect(t).toEqual({
      version: "1.0.0",
      notes: "First release",
      pub_date: "2026-01-10T08:30:00Z",
      url: expect.stringMatching(/\/download\/win-x64\/1\.0\.0\/App_1\.0\.0_x64-setup\.exe\?artifact=\d+$/),
      signature: "dW50cnVzdGVkIGNvbW1lbnQ6IHdpbmRvd3Mgc2lnbmF0dXJl1.0.0",
    });
    const stat = JSON.parse((await fetchAs(`/v1/updates/${f.code}/tauri.json`)).text);
    expect(stat).toEqual({
      version: "1.0.0",
      notes: "First release",
      pub_date: "2026-01-10T08:30:00Z",
      platforms: {
        "darwin-aarch64": {
          url: expect.stringContaining("/download/darwin-arm64/1.0.0/App_1.0.0_aarch64.app.tar.gz?artifact="),
          signature: "dW50cnVzdGVkIGNvbW1lbnQ6IHRhdXJpIHNpZ25hdHVyZSB71.0.0",
        },
        "windows-x86_64": {
          url: expect.stringContaining("/download/win-x64/1.0.0/App_1.0.0_x64-setup.exe?artifact="),
          signature: "dW50cnVzdGVkIGNvbW1lbnQ6IHdpbmRvd3Mgc2lnbmF0dXJl1.0.0",
        },
      },
    });
  });
});

describe("Squirrel.Mac's JSON, field by field", () => {
  it("url, name, notes and pub_date of the zip; the platform aliases of Electron's update servers", async () => {
    const f = await fixture();
    for (const platform of ["darwin-arm64", "darwin_arm64"]) {
      const { res, text } = await fetchAs(`/v1/updates/${f.code}/squirrel-mac/${platform}/1.0.0`);
      expect(res.status, text).toBe(200);
      expect(readSquirrelMac(JSON.parse(text))).toEqual({
        url: expect.stringContaining("/download/darwin-arm64/1.5.0/App-1.5.0-arm64-mac.zip?artifact="),
        name: "1.5.0",
        notes: "Mac zip only",
        pub_date: "2026-03-01T00:00:00Z",
      });
    }
    // darwin (Intel): nothing uploaded for it.
    expect((await fetchAs(`/v1/updates/${f.code}/squirrel-mac/darwin/1.0.0`)).res.status).toBe(204);
  });
});

describe("the edge cache of the formats' anonymous answers", () => {
  it("is keyed by the answer's origin: another Host never sees the first one's URLs", async () => {
    const f = await fixture();
    const first = "https://first.licensing.test";
    const second = "https://second.licensing.test";
    for (const format of formats) {
      for (let i = 0; i < 2; i++) {
        const a = await format.ask(f.code, "0.9.0", {}, first);
        expect(a.url, format.name).toMatch(new RegExp(`^${first}/v1/updates/`));
      }
      const b = await format.ask(f.code, "0.9.0", {}, second);
      expect(b.url, format.name).toMatch(new RegExp(`^${second}/v1/updates/`));
      expect(b.text).not.toContain("first.licensing.test");
    }
  });

  it("a new release reaches the cached anonymous answers at once (the release generation keys them)", async () => {
    const f = await fixture();
    for (const format of formats) expect((await format.ask(f.code, "0.9.0")).version).not.toBe("4.0.0");
    const id = await addRelease(f, "4.0.0", { releaseDate: "2026-10-01T00:00:00.000Z" });
    await addSigned(f, "4.0.0", id);
    for (const format of formats) expect((await format.ask(f.code, "0.9.0")).version, format.name).toBe("4.0.0");
  });
});

describe("uploads for Tauri and Sparkle: the vendor's signature", () => {
  it("an archive without its signature is refused, multipart, hosted or resumable, before anything is stored", async () => {
    const f = await fixture();
    const id = await addRelease(f, "5.0.0");
    const path = `/v1/products/${f.productId}/releases/${id}/downloads`;
    const before = await countDownloads(id);
    const multipart = await upload(path, bytesOf(64, 9), {
      platform: "darwin-arm64",
      kind: "archive",
      partName: "App.app.tar.gz",
    });
    expect(multipart.status, multipart.text).toBe(400);
    expect(multipart.text).toContain("needs its signature");
    const hosted = await admin("POST", path, {
      releaseDownload: {
        platform: "darwin-arm64",
        kind: "archive",
        fileName: "App.app.tar.gz",
        url: "https://cdn.example.com/App.app.tar.gz",
        size: 64,
        sha256: "a".repeat(64),
        sha512: `${"A".repeat(86)}==`,
      },
    });
    expect(hosted.status, hosted.text).toBe(400);
    expect(hosted.text).toContain("needs its signature");
    const resumable = await admin("POST", `${path}/uploads`, {
      upload: { platform: "darwin-arm64", kind: "archive", fileName: "App.app.tar.gz" },
    });
    expect(resumable.status, resumable.text).toBe(400);
    expect(resumable.text).toContain("needs its signature");
    expect(await countDownloads(id)).toBe(before);
  });

  it("with a product sparklePublicKey, a macOS upload's EdDSA signature must verify over its bytes", async () => {
    const f = await fixture();
    const publicKey = b64((await crypto.subtle.exportKey("raw", f.keys.publicKey)) as ArrayBuffer);
    const bad = await admin("PUT", "/v1/products", { product: { id: f.productId, sparklePublicKey: "not-a-key" } });
    expect(bad.status, bad.text).toBe(400);
    const set = await admin("PUT", "/v1/products", { product: { id: f.productId, sparklePublicKey: publicKey } });
    expect(set.status, set.text).toBe(200);
    const id = await addRelease(f, "6.0.0");
    const path = `/v1/products/${f.productId}/releases/${id}/downloads`;
    // 3 MiB: the signature is checked as the stored bytes stream (several chunks), against WebCrypto's own signature.
    const big = bytesOf(3 * 1024 * 1024 + 17, 42);
    const other = bytesOf(1000, 43);
    for (const [name, signature, kind] of [
      ["signed for other bytes", await sparkleSign(f.keys, other), "zip"],
      ["not an EdDSA signature", "dW50cnVzdGVkIGNvbW1lbnQ6IG1pbmlzaWdu", "zip"],
      ["a .dmg signed for other bytes", await sparkleSign(f.keys, other), "installer"],
      ["a Sparkle archive signed for other bytes", await sparkleSign(f.keys, other), "archive"],
    ] as const) {
      for (const sourceKind of ["local", "resource"]) {
        const res = await upload(path, big, {
          platform: "darwin-arm64",
          kind,
          sourceKind,
          signature,
          partName: "App-6.0.0.zip",
        });
        // CONTRACT section 15: a signature that does not verify is 409 signatureInvalid, nothing stored.
        expect(res.status, `${name} ${sourceKind}: ${res.text}`).toBe(409);
        expect(res.body["reason"]).toBe("signatureInvalid");
        expect(res.text).toContain("sparklePublicKey");
      }
    }
    expect(await countDownloads(id)).toBe(0);
    const good = await upload(path, big, {
      platform: "darwin-arm64",
      kind: "zip",
      signature: await sparkleSign(f.keys, big),
      partName: "App-6.0.0.zip",
    });
    expect(good.status, good.text).toBe(201);
    // A Tauri archive's minisign text is not Sparkle's: it passes through unchecked.
    const tauri = await upload(path, bytesOf(64, 7), {
      platform: "darwin-arm64",
      kind: "archive",
      signature: "dW50cnVzdGVkIGNvbW1lbnQ6IHNpZ25hdHVyZSBmcm9tIHRhdXJpIHNlY3JldCBrZXkKUlVUVGVzdA==",
      partName: "App.app.tar.gz",
    });
    expect(tauri.status, tauri.text).toBe(201);
    // A later change of the signature is held to the same rules: a wrong one, or none on an archive, is refused.
    const listed = await admin("GET", `${path}?select=id,kind`);
    const zipId = listed.body["releaseDownloads"].find((d: { kind: string }) => d.kind === "zip").id;
    const archiveId = listed.body["releaseDownloads"].find((d: { kind: string }) => d.kind === "archive").id;
    const resigned = await admin("PUT", path, {
      releaseDownload: { id: zipId, signature: await sparkleSign(f.keys, other) },
    });
    expect(resigned.status, resigned.text).toBe(409);
    expect(resigned.text).toContain("sparklePublicKey");
    const unsignedArchive = await admin("PUT", path, { releaseDownload: { id: archiveId, signature: null } });
    expect(unsignedArchive.status, unsignedArchive.text).toBe(400);
    expect(unsignedArchive.text).toContain("needs its signature");
    // Windows and unsigned zips (Squirrel.Mac's) are not Sparkle's either.
    const unsigned = await upload(path, bytesOf(64, 8), { platform: "darwin-x64", kind: "zip", partName: "x.zip" });
    expect(unsigned.status, unsigned.text).toBe(201);
    // The appcast serves the verified zip, the Tauri feed the archive.
    const cast = readAppcast((await fetchAs(`/v1/updates/${f.code}/appcast.xml`)).text);
    expect(cast.items[0]?.version).toBe("6.0.0");
    expect(cast.items[0]?.enclosure?.url).toContain("App-6.0.0.zip");
    const tauriOffer = readTauri(JSON.parse((await fetchAs(`/v1/updates/${f.code}/tauri/darwin/aarch64/1.0.0`)).text));
    expect(tauriOffer.url).toContain("App.app.tar.gz");
  });
});

async function countDownloads(releaseId: number): Promise<number> {
  const { env } = await import("cloudflare:workers");
  const row = await env.DB.prepare("SELECT count(*) AS n FROM release_downloads WHERE release_id = ?")
    .bind(releaseId)
    .first<{ n: number }>();
  return row?.n ?? 0;
}

describe("the feed token on electron-builder's feed", () => {
  it("names the license as its user key does: the gated release with tokenised URLs, private; refused once revoked", async () => {
    const f = await fixture();
    const lic = await licenseOf(f.productId);
    const feed = (who: Caller) => fetchAs(`/v1/updates/${f.code}/latest-mac.yml?platform=darwin-arm64`, who);
    const anonymous = await feed({});
    expect(anonymous.text).toContain('version: "1.5.0"');
    for (const who of [{ key: lic.userKey }, { feed: lic.feedToken }]) {
      const { res, text } = await feed(who);
      expect(res.status, text).toBe(200);
      expect(text).toContain('version: "2.0.0"');
      expect(text).toMatch(/App-2\.0\.0-arm64-mac\.zip\?token=/);
      expect(res.headers.get("Cache-Control")).toBe("private, no-store");
    }
    expect((await admin("PUT", "/v1/licenses", { license: { id: lic.id, revoked: true } })).status).toBe(200);
    expect((await feed({ feed: lic.feedToken })).res.status).toBe(403);
  });
});
