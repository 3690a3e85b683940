/**
 * licensing-publish and Sparkle's versions (issue 37): the order Sparkle gives versions (SUStandardVersionComparator,
 * checked against Sparkle's own test vectors), the reader keeping what generate_appcast's item says (the build number
 * as bundleVersion, the system versions, the informational flag, the notes as HTML with their Markdown), warnings on
 * stderr when the appcast disagrees with what is published, and a publication read back from the Worker's appcast as
 * Sparkle reads it (test/sparkle-reader.ts).
 */
import { execFile } from "node:child_process";
import { cpSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readFormat } from "../../tools/publish/formats.ts";
import { compareSparkleVersions } from "../../tools/publish/sparkle-version.ts";
// @ts-expect-error: a plain JavaScript module shared with the benchmark
import { root, startLocalWorker } from "../../scripts/local-worker.mjs";
import type { JsonBody } from "../json-body.ts";
import { readAppcast, sparkleFinds } from "../sparkle-reader.ts";

const KEY = "api_PublishSparkleKey0000000000000000";
const run = promisify(execFile);
const FIXTURE = join(root as string, "test/node/fixtures/publish/sparkle/appcast");
const keys = JSON.parse(readFileSync(join(root as string, "test/node/fixtures/publish/keys.json"), "utf8")) as {
  sparklePublicEdKey: string;
};

const scratch: string[] = [];
afterAll(() => {
  for (const dir of scratch) rmSync(dir, { recursive: true, force: true });
});

/** A copy of generate_appcast's fixture folder with its appcast.xml changed by `edit`. */
function appcastFolder(edit: (xml: string) => string, rename?: [string, string]): string {
  const dir = mkdtempSync(join(tmpdir(), "publish-sparkle-"));
  scratch.push(dir);
  cpSync(FIXTURE, dir, { recursive: true });
  const path = join(dir, "appcast.xml");
  writeFileSync(path, edit(readFileSync(path, "utf8")));
  if (rename) renameSync(join(dir, rename[0]), join(dir, rename[1]));
  return dir;
}

describe("Sparkle's order of versions", () => {
  it("is SUStandardVersionComparator's: Sparkle's own test vectors (Tests/SUVersionComparisonTest.m)", () => {
    const ascending = [
      ["1.0", "1.1"],
      ["0.1", "0.1.2"],
      ["1.5.5-335d3e2", "1.5.6-b252311"],
      ["1.5.5", "1.5.6a1"],
      ["1.1.0b1", "1.1.0b2"],
      ["1.1.1b2", "1.1.2b1"],
      ["1.1.1b2", "1.1.2a1"],
      ["1.0a1", "1.0b1"],
      ["1.0b1", "1.0"],
      ["0.9", "1.0a1"],
      ["1.0b", "1.0b2"],
      ["1.0b10", "1.0b11"],
      ["1.0b9", "1.0b10"],
      ["1.0rc", "1.0"],
      ["1.0b", "1.0"],
      ["1.0pre1", "1.0"],
      ["1.0 (1234)", "1.0 (1235)"],
      ["1.0b1 (1234)", "1.0 (1234)"],
      ["1.0b5 (1234)", "1.0b5 (1235)"],
      ["1.0b5 (1234)", "1.0.1b5 (1234)"],
      ["1.0.1b5 (1234)", "1.0.1b6 (1234)"],
      ["2.0.0.2429", "2.0.0.2430"],
      ["1.1.1.1818", "2.0.0.2430"],
      ["3.3 (5847)", "3.3.1b1 (5902)"],
      ["201210251627", "201211051041"],
      ["2.0", "2.1"],
      ["0.0.1", "0.1"],
      // What build numbers mean for a semantic version: 1.6.0 is below build 150.
      ["1.6.0", "150"],
      ["150", "160"],
    ];
    for (const [a, b] of ascending) {
      expect(compareSparkleVersions(a!, b!), `${a} < ${b}`).toBeLessThan(0);
      expect(compareSparkleVersions(b!, a!), `${b} > ${a}`).toBeGreaterThan(0);
    }
    const equal = [
      ["1.0", "1.0"],
      ["1.0", "1.0.0"],
      ["1.5.5-335d3e2", "1.5.5-a655360"],
      ["1.5-335d3e2", "1.5.0-335d3e2"],
      ["1.0pre1", "1.0.0pre1"],
      ["3.3 (5847)", "3.3.0 (5847)"],
      ["1.1.1.1818", "1.1.1.1818.0"],
      ["3.3b1 (5902)", "3.3.0b1 (5902)"],
      ["201210251627.0", "201210251627"],
      // Everything after a dash is ignored: a prerelease equals its release.
      ["2.0.0-beta.1", "2.0.0"],
    ];
    for (const [a, b] of equal) {
      expect(compareSparkleVersions(a!, b!), `${a} = ${b}`).toBe(0);
      expect(compareSparkleVersions(b!, a!), `${b} = ${a}`).toBe(0);
    }
  });
});

describe("the Sparkle reader keeps what the appcast's item says", () => {
  it("the build number, the system versions, the informational flag and the notes in both forms", async () => {
    const dist = await readFormat(FIXTURE, "sparkle", {});
    expect(dist).toMatchObject({
      version: "1.6.0",
      sparkle: { bundleVersion: "160", minimumSystemVersion: "11.0" },
      releaseNotesHtml: "<ul><li>Faster sync.</li></ul>",
      releaseNotes: "-   Faster sync.",
      warnings: [],
    });
    // The newest item by Sparkle's order, not by the order of the file: build 1000 is above build 160.
    const renumbered = appcastFolder((xml) => xml.replace("<sparkle:version>150<", "<sparkle:version>1000<"));
    expect((await readFormat(renumbered, "sparkle", {})).version).toBe("1.5.0");

    const informational = appcastFolder((xml) =>
      xml
        .replace(
          "<sparkle:minimumSystemVersion>11.0</sparkle:minimumSystemVersion>",
          "<sparkle:maximumSystemVersion>15.0</sparkle:maximumSystemVersion><sparkle:informationalUpdate/>",
        )
        .replace("<description>", '<description sparkle:format="markdown">')
        .replace("<![CDATA[<ul><li>Faster sync.</li></ul>]]>", "- Faster sync."),
    );
    const announced = await readFormat(informational, "sparkle", {});
    expect(announced.sparkle).toEqual({
      bundleVersion: "160",
      maximumSystemVersion: "15.0",
      informationalUpdate: true,
    });
    // Markdown notes (sparkle:format="markdown") are releaseNotes as they are; the service renders the HTML.
    expect(announced.releaseNotes).toBe("- Faster sync.");
    expect(announced.releaseNotesHtml).toBeUndefined();

    // Informational for some versions only: the release's flag is all or nothing, so it is left off, with a warning.
    const some = appcastFolder((xml) =>
      xml.replace(
        "<sparkle:version>160</sparkle:version>",
        "<sparkle:version>160</sparkle:version><sparkle:informationalUpdate><sparkle:version>150</sparkle:version></sparkle:informationalUpdate>",
      ),
    );
    const partly = await readFormat(some, "sparkle", {});
    expect(partly.sparkle).toEqual({ bundleVersion: "160", minimumSystemVersion: "11.0" });
    expect(partly.warnings).toEqual([expect.stringContaining("sparkle:informationalUpdate names versions (150)")]);

    // A system version the service would refuse stops the reader, before anything is sent.
    const bad = appcastFolder((xml) => xml.replace(">11.0<", ">eleven<"));
    await expect(readFormat(bad, "sparkle", {})).rejects.toThrow(
      "Studio-1.6.0.zip: sparkle:minimumSystemVersion 'eleven' is not a macOS version",
    );
  });
});

let worker: { url: URL; dispose(): Promise<void> };
let productId: number;

async function rest(method: string, path: string, body?: unknown): Promise<JsonBody> {
  const res = await fetch(new URL(path, worker.url), {
    method,
    headers: { "x-api-key": KEY, "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return (await res.json()) as JsonBody;
}

/** Runs the CLI as a user would; never throws: the exit code, stdout and stderr. */
async function cli(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, ["tools/publish/main.ts", "--product", "studio", ...args], {
      cwd: root,
      env: { ...process.env, LICENSING_API_KEY: KEY, LICENSING_URL: worker.url.toString() },
    });
    return { code: 0, stdout, stderr };
  } catch (e) {
    const failure = e as { code: number; stdout: string; stderr: string };
    return { code: failure.code, stdout: failure.stdout, stderr: failure.stderr };
  }
}

async function releaseOf(version: string): Promise<JsonBody> {
  const filter = encodeURIComponent(`version == "${version}"`);
  return (await rest("GET", `/v1/products/${productId}/releases?filter=${filter}`)).productReleases[0];
}

async function appcast(): Promise<string> {
  const res = await fetch(new URL("/v1/updates/studio/appcast.xml?platform=darwin-arm64", worker.url));
  const xml = await res.text();
  expect(res.status, xml).toBe(200);
  return xml;
}

describe("licensing-publish with build numbers, against the Worker", () => {
  beforeAll(async () => {
    worker = await startLocalWorker({
      bindings: {
        Application__JwtSecret: "publish-sparkle-jwt-secret-0123456789abcdef",
        Application__EncryptionKey: "publish-sparkle-encryption-key",
        Application__AdminUsername: "admin",
        Application__AdminPassword: "Publish-12345",
        Application__AdminApiKey: KEY,
        Updates__AllowPublicApplicationReleases: "true",
        Updates__EnforcePlatformEditions: "false",
      },
    });
    productId = (
      await rest("POST", "/v1/products", {
        product: { code: "studio", name: "Studio", isApplication: true, sparklePublicKey: keys.sparklePublicEdKey },
      })
    )["productId"];
  }, 180_000);
  afterAll(async () => {
    await worker?.dispose();
  });

  it("keeps the build number and minimum macOS; Sparkle on the Mac then finds the update by CFBundleVersion", async () => {
    const older = await cli("--dir", FIXTURE, "--version", "1.5.0", "--public");
    expect(older.code, older.stderr).toBe(0);
    const newer = await cli("--dir", FIXTURE, "--public");
    expect(newer.code, newer.stderr).toBe(0);
    // Nothing disagrees: no warning.
    expect(`${older.stderr}${newer.stderr}`).not.toContain("warning:");
    expect(await releaseOf("1.5.0")).toMatchObject({ bundleVersion: "150", minimumSystemVersion: "11.0" });
    expect(await releaseOf("1.6.0")).toMatchObject({
      bundleVersion: "160",
      minimumSystemVersion: "11.0",
      releaseNotesHtml: "<ul><li>Faster sync.</li></ul>",
      releaseNotes: "-   Faster sync.",
    });
    for (const version of ["1.5.0", "1.6.0"])
      await rest("PUT", `/v1/products/${productId}/releases`, {
        productRelease: { id: (await releaseOf(version)).id, requiresMaintenance: false },
      });

    const xml = await appcast();
    expect(readAppcast(xml).items).toEqual([
      expect.objectContaining({
        version: "160",
        shortVersionString: "1.6.0",
        minimumSystemVersion: "11.0",
        description: "<ul><li>Faster sync.</li></ul>",
      }),
    ]);
    // The app of 1.5.0 (CFBundleVersion 150) on macOS 14 is offered 1.6.0; on macOS 10.15 nothing; 1.6.0 is current.
    expect(sparkleFinds(xml, { bundleVersion: "150", osVersion: "14.2" })?.item.shortVersionString).toBe("1.6.0");
    expect(sparkleFinds(xml, { bundleVersion: "150", osVersion: "10.15.7" })).toBeUndefined();
    expect(sparkleFinds(xml, { bundleVersion: "160", osVersion: "14.2" })).toBeUndefined();

    // Published again from a rebuilt folder: the release takes the build's new Sparkle fields, and keeps its notes.
    const rebuilt = appcastFolder((xml) => xml.replace(">11.0<", ">12.0<"));
    const again = await cli("--dir", rebuilt);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toContain("release 1.6.0 takes the build's minimumSystemVersion");
    expect(await releaseOf("1.6.0")).toMatchObject({ minimumSystemVersion: "12.0", releaseNotes: "-   Faster sync." });
  });

  it("warns on stderr, and still publishes, when the appcast disagrees with what is published", async () => {
    // 1.7.0 numbered 155, below 1.6.0's 160: Sparkle on 1.6.0 would never offer it.
    const lower = appcastFolder(
      (xml) =>
        xml
          .replace("<sparkle:version>160<", "<sparkle:version>155<")
          .replace("<sparkle:shortVersionString>1.6.0<", "<sparkle:shortVersionString>1.7.0<")
          .replace("studio/Studio-1.6.0.zip", "studio/Studio-1.7.0.zip"),
      ["Studio-1.6.0.zip", "Studio-1.7.0.zip"],
    );
    const published = await cli("--dir", lower, "--public");
    expect(published.code, published.stderr).toBe(0);
    expect(published.stderr).toContain(
      "warning: sparkle:version 155 of 1.7.0 is not above 160, the sparkle:version of 1.6.0: Sparkle on 1.6.0 never offers 1.7.0",
    );
    expect(await releaseOf("1.7.0")).toMatchObject({ bundleVersion: "155" });
    await rest("PUT", `/v1/products/${productId}/releases`, {
      productRelease: { id: (await releaseOf("1.7.0")).id, requiresMaintenance: false },
    });
    // The warning was right: the appcast offers 1.7.0, and Sparkle on 1.6.0 does not take it.
    const xml = await appcast();
    expect(readAppcast(xml).items[0]).toMatchObject({ version: "155", shortVersionString: "1.7.0" });
    expect(sparkleFinds(xml, { bundleVersion: "160", osVersion: "14.2" })).toBeUndefined();

    // shortVersionString 1.8 published as --version 1.8.0: the service's appcast says 1.8.0.
    const short = appcastFolder(
      (xml) =>
        xml
          .replace("<sparkle:version>160<", "<sparkle:version>180<")
          .replace("<sparkle:shortVersionString>1.6.0<", "<sparkle:shortVersionString>1.8<"),
      undefined,
    );
    const dry = await cli("--dir", short, "--version", "1.8.0", "--dry-run");
    expect(dry.code, dry.stderr).toBe(0);
    expect(dry.stderr).toContain(
      "warning: appcast.xml's sparkle:shortVersionString is 1.8, but 1.8.0 is published: the service's appcast shows 1.8.0",
    );
    const shortPublished = await cli("--dir", short, "--version", "1.8.0");
    expect(shortPublished.code, shortPublished.stderr).toBe(0);
    expect(shortPublished.stderr).toContain("warning: appcast.xml's sparkle:shortVersionString is 1.8");
    expect(await releaseOf("1.8.0")).toMatchObject({ bundleVersion: "180" });
  });
});
