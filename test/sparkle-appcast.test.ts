/**
 * Issue 37, Sparkle and release notes: what each updater reads, read as it reads it. Sparkle's appcast through
 * test/sparkle-reader.ts (Sparkle's own choice of item: build numbers compared with the app's CFBundleVersion by
 * SUStandardVersionComparator, items skipped by the running macOS, informational and critical items), and the notes
 * of one release in every format: HTML where the updater shows HTML (Sparkle's description, Velopack's NotesHtml),
 * Markdown or text elsewhere (Tauri, Squirrel.Mac, electron-builder, Velopack's NotesMarkdown), never one leaking into
 * the other.
 */
import { exports } from "cloudflare:workers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { bytesOf, newProduct, upload } from "./artifacts-kit";
import { BASE, admin, setSetting } from "./helpers";
import { readAppcast, sparkleFinds } from "./sparkle-reader";

const ED25519 = { name: "Ed25519" } as const;
const b64 = (bytes: ArrayBuffer | Uint8Array) => btoa(String.fromCharCode(...new Uint8Array(bytes)));
let keys: CryptoKeyPair;

beforeAll(async () => {
  keys = (await crypto.subtle.generateKey(ED25519, true, ["sign", "verify"])) as CryptoKeyPair;
  await setSetting("Updates:PlatformEditions", JSON.stringify({ windows: [], mac: [], linux: [] }));
  await setSetting("Updates:AllowPublicApplicationReleases", "true");
});
afterAll(async () => {
  await setSetting("Updates:PlatformEditions", null);
  await setSetting("Updates:AllowPublicApplicationReleases", null);
});

/** A public, ungated release of the product with the fields given; its id. */
async function release(productId: number, fields: Record<string, unknown>): Promise<number> {
  const res = await admin("POST", `/v1/products/${productId}/releases`, {
    productRelease: { public: true, requiresMaintenance: false, ...fields },
  });
  expect(res.status, res.text).toBe(200);
  return res.body["productReleaseId"];
}

async function change(productId: number, id: number, fields: Record<string, unknown>): Promise<void> {
  const res = await admin("PUT", `/v1/products/${productId}/releases`, { productRelease: { id, ...fields } });
  expect(res.status, res.text).toBe(200);
}

/** Uploads a file of the release; a Sparkle zip is signed with the test's EdDSA key, as sign_update does. */
async function file(productId: number, id: number, o: { platform: string; kind: string; fileName: string }) {
  const bytes = bytesOf(700, id);
  const signature =
    o.kind === "zip"
      ? b64(await crypto.subtle.sign(ED25519, keys.privateKey, bytes))
      : o.kind === "archive"
        ? "dW50cnVzdGVkIGNvbW1lbnQ6IHRhdXJpIHNpZ25hdHVyZQ=="
        : undefined;
  const res = await upload(`/v1/products/${productId}/releases/${id}/downloads`, bytes, {
    ...o,
    partName: o.fileName,
    ...(signature ? { signature } : {}),
  });
  expect(res.status, res.text).toBe(201);
}

async function get(path: string): Promise<{ status: number; text: string }> {
  const res = await exports.default.fetch(`${BASE}${path}`);
  return { status: res.status, text: await res.text() };
}

describe("Sparkle's appcast with build numbers and system versions, read as Sparkle reads it", () => {
  it("sparkle:version is the build number, shortVersionString the version; the running macOS decides", async () => {
    const product = await newProduct(true);
    const url = await admin("PUT", "/v1/products", {
      product: { id: product.id, url: "https://studio.example.com/", minimumVersion: "1.5.0" },
    });
    expect(url.status, url.text).toBe(200);
    const older = await release(product.id, { version: "1.5.0", bundleVersion: "150", minimumSystemVersion: "11.0" });
    await file(product.id, older, { platform: "darwin-arm64", kind: "zip", fileName: "Studio-1.5.0.zip" });
    const newer = await release(product.id, {
      version: "1.6.0",
      bundleVersion: "160",
      minimumSystemVersion: "12.0",
      releaseDate: "2026-11-20T10:00:00.000Z",
    });
    await file(product.id, newer, { platform: "darwin-arm64", kind: "zip", fileName: "Studio-1.6.0.zip" });

    const appcast = async () => {
      const res = await get(`/v1/updates/${product.code}/appcast.xml`);
      expect(res.status, res.text).toBe(200);
      return res.text;
    };
    let xml = await appcast();
    expect(readAppcast(xml).items).toEqual([
      expect.objectContaining({
        link: "https://studio.example.com/",
        version: "160",
        shortVersionString: "1.6.0",
        minimumSystemVersion: "12.0",
        // The product's minimumVersion, as the build number Sparkle compares with CFBundleVersion.
        minimumAutoupdateVersion: "150",
      }),
    ]);
    expect(readAppcast(xml).items[0]!.maximumSystemVersion).toBeUndefined();
    expect(readAppcast(xml).items[0]!.informationalUpdate).toBeUndefined();

    // Sparkle on 1.5.0 (CFBundleVersion 150) finds 1.6.0 on macOS 12 and later, not on macOS 11.
    const onVentura = sparkleFinds(xml, { bundleVersion: "150", osVersion: "13.4.1" });
    expect(onVentura).toMatchObject({ item: { version: "160" }, informational: false, critical: false });
    expect(sparkleFinds(xml, { bundleVersion: "150", osVersion: "12.0" })?.item.version).toBe("160");
    expect(sparkleFinds(xml, { bundleVersion: "150", osVersion: "11.7.10" })).toBeUndefined();
    // On 1.6.0 there is nothing newer; an app numbered past it is not offered it either.
    expect(sparkleFinds(xml, { bundleVersion: "160", osVersion: "13.4.1" })).toBeUndefined();
    expect(sparkleFinds(xml, { bundleVersion: "1600", osVersion: "13.4.1" })).toBeUndefined();

    // A newest macOS it runs on, an announcement only, and critical below itself: as build numbers.
    await change(product.id, newer, { maximumSystemVersion: "14.9", informationalUpdate: true, critical: true });
    xml = await appcast();
    expect(readAppcast(xml).items[0]).toMatchObject({
      maximumSystemVersion: "14.9",
      informationalUpdate: [],
      criticalUpdate: { version: "160" },
    });
    expect(sparkleFinds(xml, { bundleVersion: "150", osVersion: "15.1" })).toBeUndefined();
    expect(sparkleFinds(xml, { bundleVersion: "150", osVersion: "14.9" })).toMatchObject({
      item: { version: "160" },
      informational: true,
      critical: true,
    });

    // Without a product url the announcement links to the download: Sparkle reads it as informational only so.
    await admin("PUT", "/v1/products", { product: { id: product.id, url: null } });
    await change(product.id, newer, { releaseNotes: "Links to the download" });
    xml = await appcast();
    const found = sparkleFinds(xml, { bundleVersion: "150", osVersion: "13.0" });
    expect(found?.informational).toBe(true);
    expect(found?.item.link).toBe(found?.item.enclosure?.url);

    // A release without a build number: its version is Sparkle's version, as before.
    await change(product.id, newer, { bundleVersion: null, informationalUpdate: false, maximumSystemVersion: null });
    xml = await appcast();
    expect(readAppcast(xml).items[0]).toMatchObject({ version: "1.6.0", shortVersionString: "1.6.0" });
    expect(readAppcast(xml).items[0]!.link).toBeUndefined();
    expect(sparkleFinds(xml, { bundleVersion: "1.5.0", osVersion: "13.0" })?.informational).toBe(false);
  });
});

describe("release notes: each format takes its own form", () => {
  /** A release with every format's file, and a reader of what each format says of its notes. */
  async function everyFormat(fields: Record<string, unknown>) {
    const product = await newProduct(true);
    const id = await release(product.id, { version: "2.0.0", ...fields });
    await file(product.id, id, { platform: "darwin-arm64", kind: "zip", fileName: "Studio-2.0.0-arm64-mac.zip" });
    await file(product.id, id, { platform: "darwin-arm64", kind: "archive", fileName: "Studio.app.tar.gz" });
    await file(product.id, id, { platform: "win-x64", kind: "package", fileName: "Studio-2.0.0-full.nupkg" });
    const read = async () => {
      const answers = await Promise.all(
        [
          `/v1/updates/${product.code}/appcast.xml`,
          `/v1/updates/${product.code}/tauri/darwin/aarch64/1.0.0`,
          `/v1/updates/${product.code}/squirrel-mac/darwin-arm64/1.0.0`,
          `/v1/updates/${product.code}/latest-mac.yml`,
          `/v1/updates/${product.code}/velopack/win-x64/releases.stable.json`,
        ].map(get),
      );
      for (const a of answers) expect(a.status, a.text).toBe(200);
      const [appcast, tauri, squirrelMac, electron, velopack] = answers.map((a) => a.text) as string[];
      const asset = JSON.parse(velopack!).Assets[0];
      return {
        sparkle: readAppcast(appcast!).items[0]!.description,
        velopackHtml: asset.NotesHtml as string,
        text: {
          tauri: JSON.parse(tauri!).notes as string,
          squirrelMac: JSON.parse(squirrelMac!).notes as string,
          electronBuilder: parse(electron!).releaseNotes as string,
          velopack: asset.NotesMarkdown as string,
        },
      };
    };
    return { product, id, read };
  }
  const TAG = /<\/?[a-z][^>]*>/i;

  it("HTML notes (as a Sparkle appcast gives them): HTML in the appcast and NotesHtml, no markup in the text feeds", async () => {
    const html = "<h2>What is new</h2><ul><li>Faster &amp; smaller</li><li>A <b>bold</b> fix</li></ul>";
    const { read } = await everyFormat({ releaseNotesHtml: html });
    const notes = await read();
    expect(notes.sparkle).toBe(html);
    expect(notes.velopackHtml).toBe(html);
    for (const [format, text] of Object.entries(notes.text)) {
      expect(text, format).not.toMatch(TAG);
      expect(text, format).toBe("What is new\n\n- Faster & smaller\n- A bold fix");
    }
  });

  it("Markdown notes: rendered to HTML for the appcast and NotesHtml, as written in the text feeds", async () => {
    const markdown = "## What is new\n\n- Faster *and* smaller\n- See [the guide](https://studio.example.com/guide)";
    const { product, id, read } = await everyFormat({ releaseNotes: markdown });
    let notes = await read();
    const rendered =
      '<h2>What is new</h2>\n<ul>\n<li>Faster <em>and</em> smaller</li>\n<li>See <a href="https://studio.example.com/guide">the guide</a></li>\n</ul>';
    expect(notes.sparkle).toBe(rendered);
    expect(notes.velopackHtml).toBe(rendered);
    for (const [format, text] of Object.entries(notes.text)) expect(text, format).toBe(markdown);

    // Markup belongs in releaseNotesHtml: raw HTML in the Markdown is shown as the text it is.
    await change(product.id, id, { releaseNotes: "Faster <script>alert(1)</script> & <b>smaller</b>" });
    notes = await read();
    expect(notes.sparkle).toBe("<p>Faster &lt;script&gt;alert(1)&lt;/script&gt; &amp; &lt;b&gt;smaller&lt;/b&gt;</p>");
    expect(notes.velopackHtml).toBe(notes.sparkle);
    await change(product.id, id, { releaseNotes: markdown });

    // Both given (the publish CLI sends both for a Sparkle appcast): each format takes its own, untouched.
    const html = "<p>Faster &amp; smaller, in <i>HTML</i></p>";
    await change(product.id, id, { releaseNotesHtml: html });
    notes = await read();
    expect([notes.sparkle, notes.velopackHtml]).toEqual([html, html]);
    for (const [format, text] of Object.entries(notes.text)) expect(text, format).toBe(markdown);
  });
});
