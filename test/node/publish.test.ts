/**
 * tools/publish end to end: the CLI publishes a generated electron-builder folder to the bundled Worker (Windows,
 * macOS arm64 and Linux artifacts, one of them large enough for the resumable upload), a second run skips
 * everything, and a changed file is replaced. The API key goes over plain http:// only to this machine, and never to
 * another origin on a redirect (TLS: test/node/tls.test.ts).
 */
import { execFile } from "node:child_process";
import http from "node:http";
import { createHash, randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { gzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseUpdateInfo } from "../../tools/publish/dist.ts";
import { forward, httpServer } from "./tls-kit.ts";
// @ts-expect-error: a plain JavaScript module shared with the benchmark
import { root, startLocalWorker } from "../../scripts/local-worker.mjs";
import type { JsonBody } from "../json-body.ts";
import { type TestCertificate, UNSIGNED_EXE, makeCertificate, signPe } from "./signing-fixtures.ts";
// @ts-expect-error: a plain JavaScript module shared with the scripts
import { ensureSigningTools } from "../../scripts/ensure-signing-tools.mjs";

const KEY = "api_PublishAdminKey00000000000000000";
const MiB = 1024 * 1024;
const run = promisify(execFile);
let worker: { url: URL; dispose(): Promise<void> };
let dir: string;
let productId: number;

const sha512 = (bytes: Buffer) => createHash("sha512").update(bytes).digest("base64");

/** Writes a file of random bytes into the folder and returns them. */
function artifact(name: string, size: number): Buffer {
  const bytes = randomBytes(size);
  writeFileSync(join(dir, name), bytes);
  return bytes;
}

/** Writes a blockmap as electron-builder does (gzip-compressed JSON; the service checks the shape) and returns it. */
function blockmap(name: string, blocks: number): Buffer {
  const checksums = Array.from({ length: blocks }, () => randomBytes(12).toString("base64"));
  const json = { version: "2", files: [{ name: "file", offset: 0, checksums, sizes: checksums.map(() => 65_536) }] };
  const bytes = gzipSync(JSON.stringify(json));
  writeFileSync(join(dir, name), bytes);
  return bytes;
}

function updateInfo(name: string, version: string, files: [string, Buffer][]): void {
  const lines = [`version: ${version}`, "files:"];
  for (const [file, bytes] of files)
    lines.push(`  - url: ${file}`, `    sha512: ${sha512(bytes)}`, `    size: ${bytes.byteLength}`);
  lines.push(
    `path: ${files[0]![0]}`,
    `sha512: ${sha512(files[0]![1])}`,
    "releaseName: Studio 1.2.3",
    "releaseNotes: |-",
    "  Faster.",
    "  Smaller.",
    "releaseDate: '2026-11-20T10:00:00.000Z'",
  );
  writeFileSync(join(dir, name), `${lines.join("\n")}\n`);
}

async function rest(method: string, path: string, body?: unknown): Promise<JsonBody> {
  const res = await fetch(new URL(path, worker.url), {
    method,
    headers: { "x-api-key": KEY, "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return (await res.json()) as JsonBody;
}

/** Runs the CLI as a user would (`licensing-publish …`), returning its output. */
async function publishCli(...extra: string[]): Promise<string> {
  const args = [
    "tools/publish/main.ts",
    "--product",
    "studio",
    "--version",
    "1.2.3",
    "--channel",
    "stable",
    "--dir",
    dir,
    "--single-limit",
    String(8 * MiB),
    "--part-size",
    String(5 * MiB),
    ...extra,
  ];
  const { stdout } = await run(process.execPath, args, {
    cwd: root,
    env: { ...process.env, LICENSING_API_KEY: KEY, LICENSING_URL: worker.url.toString() },
  });
  return stdout;
}

const files: Record<string, Buffer> = {};
beforeAll(async () => {
  worker = await startLocalWorker({
    bindings: {
      Application__JwtSecret: "publish-test-jwt-secret-0123456789abcdef",
      Application__EncryptionKey: "publish-test-encryption-key",
      Application__AdminUsername: "admin",
      Application__AdminPassword: "Publish-12345",
      Application__AdminApiKey: KEY,
    },
  });
  dir = mkdtempSync(join(tmpdir(), "publish-dist-"));
  files["exe"] = artifact("Studio Setup 1.2.3.exe", 300_000);
  files["exeMap"] = blockmap("Studio Setup 1.2.3.exe.blockmap", 100);
  files["zip"] = artifact("Studio-1.2.3-arm64-mac.zip", 11 * MiB + 123); // over --single-limit: resumable
  files["zipMap"] = blockmap("Studio-1.2.3-arm64-mac.zip.blockmap", 150);
  files["dmg"] = artifact("Studio-1.2.3-arm64.dmg", 200_000);
  blockmap("Studio-1.2.3-arm64.dmg.blockmap", 50);
  files["appImage"] = artifact("Studio-1.2.3.AppImage", 250_000);
  artifact("studio_1.2.3_amd64.deb", 10_000);
  writeFileSync(join(dir, "builder-debug.yml"), "x: 1\n");
  updateInfo("latest.yml", "1.2.3", [["Studio Setup 1.2.3.exe", files["exe"]]]);
  updateInfo("latest-mac.yml", "1.2.3", [
    ["Studio-1.2.3-arm64-mac.zip", files["zip"]],
    ["Studio-1.2.3-arm64.dmg", files["dmg"]],
  ]);
  updateInfo("latest-linux.yml", "1.2.3", [["Studio-1.2.3.AppImage", files["appImage"]]]);
  productId = (
    await rest("POST", "/v1/products", { product: { code: "studio", name: "Studio", isApplication: true } })
  )["productId"];
}, 180_000);
afterAll(async () => {
  await worker?.dispose();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe("licensing-publish", () => {
  it("creates the release and uploads each artifact of the folder, then skips them all on a second run", async () => {
    const first = await publishCli();
    expect(first).toContain("release 1 created");
    expect(first).toMatch(/skip studio_1\.2\.3_amd64\.deb: one installer per platform/);
    expect(first).toMatch(/skip Studio-1\.2\.3-arm64\.dmg\.blockmap: one blockmap per platform/);
    expect(first).toContain("part 3/3");
    expect(first).toContain("done: 6 uploaded, 0 replaced, 0 unchanged");

    const { productReleases } = await rest("GET", `/v1/products/${productId}/releases`);
    expect(productReleases).toMatchObject([
      {
        version: "1.2.3",
        channel: "stable",
        name: "Studio 1.2.3",
        releaseNotes: "Faster.\nSmaller.",
        releaseDate: "2026-11-20T10:00:00.000Z",
      },
    ]);
    const { releaseDownloads } = await rest(
      "GET",
      `/v1/products/${productId}/releases/${productReleases[0].id}/downloads?sort=id`,
    );
    const summary = releaseDownloads.map((d: JsonBody) => [d.platform, d.kind, d.fileName, d.size, d.sha512]);
    expect(summary).toEqual(
      expect.arrayContaining([
        ["win-x64", "installer", "Studio Setup 1.2.3.exe", files["exe"]!.byteLength, sha512(files["exe"]!)],
        [
          "win-x64",
          "blockmap",
          "Studio Setup 1.2.3.exe.blockmap",
          files["exeMap"]!.byteLength,
          sha512(files["exeMap"]!),
        ],
        ["darwin-arm64", "installer", "Studio-1.2.3-arm64.dmg", files["dmg"]!.byteLength, sha512(files["dmg"]!)],
        ["darwin-arm64", "zip", "Studio-1.2.3-arm64-mac.zip", files["zip"]!.byteLength, sha512(files["zip"]!)],
        [
          "darwin-arm64",
          "blockmap",
          "Studio-1.2.3-arm64-mac.zip.blockmap",
          files["zipMap"]!.byteLength,
          sha512(files["zipMap"]!),
        ],
        ["linux-x64", "installer", "Studio-1.2.3.AppImage", files["appImage"]!.byteLength, sha512(files["appImage"]!)],
      ]),
    );
    expect(summary).toHaveLength(6);

    const second = await publishCli();
    expect(second).toContain("release 1 exists");
    expect(second).toContain("done: 0 uploaded, 0 replaced, 6 unchanged");
  });

  it("replaces an artifact whose bytes changed, and publishes the release when asked", async () => {
    files["exe"] = artifact("Studio Setup 1.2.3.exe", 310_000);
    updateInfo("latest.yml", "1.2.3", [["Studio Setup 1.2.3.exe", files["exe"]]]);
    const out = await publishCli("--public");
    expect(out).toContain("Studio Setup 1.2.3.exe (0.3 MiB): differs from download");
    expect(out).toContain("done: 0 uploaded, 1 replaced, 5 unchanged");
    const { productReleases } = await rest("GET", `/v1/products/${productId}/releases`);
    expect(productReleases[0].public).toBe(true);
    const verify = await rest("POST", `/v1/products/${productId}/releases/${productReleases[0].id}/downloads/verify`);
    expect(verify).toMatchObject({ drifted: [], checked: 6 });
  });

  it("refuses a version the folder's update info contradicts, and an unknown product", async () => {
    await expect(publishCli("--version", "9.9.9")).rejects.toThrow(/does not match/);
    await expect(
      run(process.execPath, ["tools/publish/main.ts", "--product", "nope", "--dir", dir], {
        cwd: root,
        env: { ...process.env, LICENSING_API_KEY: KEY, LICENSING_URL: worker.url.toString() },
      }),
    ).rejects.toThrow(/Product nope not found/);
  });
});

describe("parseUpdateInfo", () => {
  it("reads electron-builder's update info: scalars, quoted values, block scalars and the files list", () => {
    const info = parseUpdateInfo(
      "version: 1.0.0\nfiles:\n  - url: A%20B.exe\n    sha512: abc==\n    size: 5\n  - url: 'C.zip'\n    size: 7\npath: A B.exe\nreleaseNotes: |\n  line 1\n\n  line 2\nreleaseDate: \"2026-01-01T00:00:00.000Z\"\n",
    );
    expect(info.scalars).toMatchObject({
      version: "1.0.0",
      path: "A B.exe",
      releaseNotes: "line 1\n\nline 2\n",
      releaseDate: "2026-01-01T00:00:00.000Z",
    });
    expect(info.files).toEqual([
      { url: "A%20B.exe", sha512: "abc==", size: "5" },
      { url: "C.zip", size: "7" },
    ]);
  });
});

/**
 * A folder exactly as electron-builder writes a prerelease (`2.1.0-beta.1`, channel detection on and
 * generateUpdatesFilesForAllChannels): beta.yml and beta-mac.yml, their alpha copies, builder-debug.yml, and the
 * installers, zips and blockmaps they list.
 */
function prereleaseFolder(
  version = "2.1.0-beta.1",
  channels = ["beta", "alpha"],
): { dir: string; bytes: Record<string, Buffer> } {
  const folder = mkdtempSync(join(tmpdir(), "publish-prerelease-"));
  const bytes: Record<string, Buffer> = {};
  const put = (name: string, content: Buffer) => {
    bytes[name] = content;
    writeFileSync(join(folder, name), content);
  };
  const map = (n: number) =>
    gzipSync(
      JSON.stringify({
        version: "2",
        files: [{ name: "file", offset: 0, checksums: Array(n).fill("AAAA"), sizes: Array(n).fill(65_536) }],
      }),
    );
  put(`Studio Setup ${version}.exe`, randomBytes(120_000));
  put(`Studio Setup ${version}.exe.blockmap`, map(2));
  put(`Studio-${version}-arm64-mac.zip`, randomBytes(90_000));
  put(`Studio-${version}-arm64-mac.zip.blockmap`, map(2));
  put(`Studio-${version}-arm64.dmg`, randomBytes(80_000));
  writeFileSync(join(folder, "builder-debug.yml"), "arm64:\n  firstOrDefaultFilePatterns:\n    - '!**/node_modules'\n");
  const info = (listed: string[]) =>
    [
      `version: ${version}`,
      "files:",
      ...listed.flatMap((f) => [
        `  - url: ${f}`,
        `    sha512: ${sha512(bytes[f]!)}`,
        `    size: ${bytes[f]!.byteLength}`,
      ]),
      `path: ${listed[0]}`,
      `sha512: ${sha512(bytes[listed[0]!]!)}`,
      "releaseDate: '2026-11-24T09:30:00.000Z'",
      "",
    ].join("\n");
  for (const channel of channels) {
    writeFileSync(join(folder, `${channel}.yml`), info([`Studio Setup ${version}.exe`]));
    writeFileSync(
      join(folder, `${channel}-mac.yml`),
      info([`Studio-${version}-arm64-mac.zip`, `Studio-${version}-arm64.dmg`]),
    );
  }
  return { dir: folder, bytes };
}

describe("licensing-publish reads electron-builder's channel files", () => {
  it("publishes 2.1.0-beta.1 from beta.yml and beta-mac.yml without --version, on insider, with the file's date", async () => {
    const { dir: folder, bytes } = prereleaseFolder();
    try {
      const out = await cli(["--product", "studio", "--dir", folder, "--public"], {
        LICENSING_API_KEY: KEY,
        LICENSING_URL: worker.url.toString(),
      });
      expect(out.code, out.stderr).toBe(0);
      expect(out.stdout).toMatch(/studio 2\.1\.0-beta\.1: release \d+ created \(insider\)/);
      expect(out.stdout).toContain("done: 5 uploaded");
      const filter = encodeURIComponent('version == "2.1.0-beta.1"');
      const { productReleases } = await rest("GET", `/v1/products/${productId}/releases?filter=${filter}`);
      expect(productReleases).toMatchObject([
        { version: "2.1.0-beta.1", channel: "insider", public: true, releaseDate: "2026-11-24T09:30:00.000Z" },
      ]);
      const { releaseDownloads } = await rest(
        "GET",
        `/v1/products/${productId}/releases/${productReleases[0].id}/downloads?sort=id`,
      );
      expect(releaseDownloads.map((d: JsonBody) => [d.platform, d.kind, d.fileName, d.sha512]).sort()).toEqual(
        [
          ["darwin-arm64", "blockmap", "Studio-2.1.0-beta.1-arm64-mac.zip.blockmap"],
          ["darwin-arm64", "installer", "Studio-2.1.0-beta.1-arm64.dmg"],
          ["darwin-arm64", "zip", "Studio-2.1.0-beta.1-arm64-mac.zip"],
          ["win-x64", "blockmap", "Studio Setup 2.1.0-beta.1.exe.blockmap"],
          ["win-x64", "installer", "Studio Setup 2.1.0-beta.1.exe"],
        ]
          .map(([p, k, f]) => [p, k, f, sha512(bytes[f!]!)])
          .sort(),
      );
      // The insider feed offers it to a license (what electron-updater on a beta build reads); stable does not.
      const created = await rest("POST", "/v1/licenses", { license: { productId, issueDate: "2026-11-01T00:00:00Z" } });
      const licenseFilter = encodeURIComponent(`id == ${created["id"]}`);
      const userKey = (await rest("GET", `/v1/licenses?filter=${licenseFilter}&select=userKey`))["licenses"][0].userKey;
      const feed = (channel: string) =>
        fetch(new URL(`/v1/updates/studio/feed/${channel}/win-x64/latest.yml`, worker.url), {
          headers: { "X-Service-User-Key": userKey },
        });
      const insider = await feed("insider");
      expect(insider.status).toBe(200);
      expect(await insider.text()).toMatch(/version: ["']?2\.1\.0-beta\.1["']?\n/);
      expect(await (await feed("stable")).text()).not.toContain("2.1.0-beta.1");
    } finally {
      rmSync(folder, { recursive: true, force: true });
    }
  });

  it("refuses a file whose bytes differ from the sha512 its update info gives, naming both, and a listed file that is missing", async () => {
    const { dir: folder, bytes } = prereleaseFolder("2.1.0-beta.2");
    try {
      const dmg = "Studio-2.1.0-beta.2-arm64.dmg";
      const changed = Buffer.from(bytes[dmg]!);
      changed[100] = changed[100]! ^ 1;
      writeFileSync(join(folder, dmg), changed);
      const env = { LICENSING_API_KEY: KEY, LICENSING_URL: worker.url.toString() };
      const refused = await cli(["--product", "studio", "--dir", folder], env);
      expect(refused.code).toBe(1);
      expect(refused.stderr).toMatch(
        /Studio-2\.1\.0-beta\.2-arm64\.dmg: its sha512 differs from the one (alpha|beta)-mac\.yml gives/,
      );
      // --dry-run reads the folder the same way.
      const dry = await cli(["--dry-run", "--url", "http://127.0.0.1:9", "--product", "studio", "--dir", folder]);
      expect(dry.code).toBe(1);
      expect(dry.stderr).toContain("its sha512 differs");
      rmSync(join(folder, dmg));
      const missing = await cli(["--product", "studio", "--dir", folder], env);
      expect(missing.code).toBe(1);
      expect(missing.stderr).toMatch(/(alpha|beta)-mac\.yml lists Studio-2\.1\.0-beta\.2-arm64\.dmg, which is not in/);
      const filter = encodeURIComponent('version == "2.1.0-beta.2"');
      expect((await rest("GET", `/v1/products/${productId}/releases?filter=${filter}`))["productReleases"]).toEqual([]);
    } finally {
      rmSync(folder, { recursive: true, force: true });
    }
  });

  it("maps latest to stable, refuses a channel the service does not have unless --channel names one, and a mixed folder", async () => {
    const dry = (folder: string, ...extra: string[]) =>
      cli(["--dry-run", "--json", "--url", "http://127.0.0.1:9", "--product", "studio", "--dir", folder, ...extra]);
    // A stable build with generateUpdatesFilesForAllChannels writes latest, beta and alpha files: it is stable.
    const stable = prereleaseFolder("2.2.0", ["latest", "beta", "alpha"]);
    const rc = prereleaseFolder("2.2.0-rc.1", ["rc"]);
    try {
      const out = await dry(stable.dir);
      expect(out.code, out.stderr).toBe(0);
      expect(JSON.parse(out.stdout)).toMatchObject({ version: "2.2.0", channel: "stable" });
      const refused = await dry(rc.dir);
      expect(refused.code).toBe(1);
      expect(refused.stderr).toMatch(
        /rc-mac\.yml, rc\.yml: electron-builder's channel 'rc' has no channel on the service \(latest -> stable, beta and alpha -> insider\); pass --channel/,
      );
      const asked = await dry(rc.dir, "--channel", "insider");
      expect(asked.code, asked.stderr).toBe(0);
      expect(JSON.parse(asked.stdout)).toMatchObject({ version: "2.2.0-rc.1", channel: "insider" });
      // Two builds' update info in one folder: which version would be published is not the tool's to guess.
      writeFileSync(join(rc.dir, "beta.yml"), "version: 2.1.0-beta.9\nfiles:\n  - url: x.exe\n    sha512: AA==\n");
      const mixed = await dry(rc.dir, "--channel", "insider");
      expect(mixed.code).toBe(1);
      expect(mixed.stderr).toMatch(
        /mixes builds: beta\.yml is version 2\.1\.0-beta\.9, rc-mac\.yml is version 2\.2\.0-rc\.1/,
      );
    } finally {
      rmSync(stable.dir, { recursive: true, force: true });
      rmSync(rc.dir, { recursive: true, force: true });
    }
  });
});

/** Runs the CLI with arguments of its own; exit code, stdout and stderr. */
async function cli(
  args: string[],
  env: Record<string, string> = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, ["tools/publish/main.ts", ...args], {
      cwd: root,
      env: { ...process.env, LICENSING_URL: "", LICENSING_API_KEY: "", ...env },
    });
    return { code: 0, stdout, stderr };
  } catch (e) {
    const failure = e as { code: number; stdout: string; stderr: string };
    return { code: failure.code, stdout: failure.stdout, stderr: failure.stderr };
  }
}

describe("licensing-publish as a command", () => {
  it("prints its usage with -h and --help, and answers usage errors with exit 2 and no stack trace", async () => {
    for (const flag of ["-h", "--help"]) {
      const help = await cli([flag]);
      expect(help.code).toBe(0);
      expect(help.stdout).toContain("Usage: licensing-publish --url BASE --product CODE --dir DIR");
    }
    const cases: [string[], RegExp][] = [
      [["--product", "studio", "--dir", dir], /--url \(or LICENSING_URL\) is required/],
      [["--url", "ftp://x", "--product", "studio", "--dir", dir], /--url must be an http\(s\) URL/],
      [["--bogus"], /Unknown option '--bogus'/],
      [["--url", "http://127.0.0.1:9", "--product", "studio", "--dir", dir], /LICENSING_API_KEY/],
      [["--url", "http://127.0.0.1:9", "--product", "studio", "--dir", dir, "--part-size", "100"], /at least 5 MiB/],
      [["--url", "http://127.0.0.1:9", "--product", "studio", "--dir", dir, "--format", "nsis"], /--format is one of/],
      [
        ["--url", "http://127.0.0.1:9", "--product", "studio", "--dir", dir, "--mac-team-id", "7z6emtd2c6"],
        /--mac-team-id "7z6emtd2c6" is not an Apple Team ID: 10 capital letters and digits/,
      ],
    ];
    for (const [args, message] of cases) {
      const out = await cli(args);
      expect(out.code, args.join(" ")).toBe(2);
      expect(out.stderr).toMatch(message);
      expect(out.stderr).toContain("Usage:");
      expect(out.stderr).not.toMatch(/\n\s+at /);
    }
  });

  it("--dry-run prints what it would upload without contacting the service, and --json gives it as JSON", async () => {
    // Port 9 (discard) is not a licensing service: a dry run must not need one, nor an API key.
    const dry = await cli([
      "--dry-run",
      "--url",
      "http://127.0.0.1:9",
      "--product",
      "studio",
      "--dir",
      dir,
      "--single-limit",
      String(8 * MiB),
    ]);
    expect(dry.code, dry.stderr).toBe(0);
    expect(dry.stdout).toContain("would upload darwin-arm64 zip Studio-1.2.3-arm64-mac.zip (11.0 MiB) resumably");
    expect(dry.stdout).toContain("nothing was sent");
    const json = await cli(["--dry-run", "--json", "--url", "http://127.0.0.1:9", "--product", "studio", "--dir", dir]);
    const result = JSON.parse(json.stdout) as {
      dryRun: boolean;
      version: string;
      artifacts: { fileName: string; sha512: string }[];
    };
    expect(result).toMatchObject({ dryRun: true, version: "1.2.3" });
    expect(result.artifacts.map((a) => a.fileName)).toContain("Studio-1.2.3.AppImage");
    expect(result.artifacts.find((a) => a.fileName === "Studio-1.2.3.AppImage")?.sha512).toBe(
      sha512(files["appImage"]!),
    );
  });

  it("retries 503 answers and failed parts with backoff, and reports the result as JSON", async () => {
    // A proxy in front of the service that fails the first attempt of every part and of the first list call.
    const failed = new Set<string>();
    const proxy = http.createServer(async (req, res) => {
      const key = `${req.method} ${req.url}`;
      if ((/\/parts\/\d+$/.test(req.url ?? "") || req.url?.includes("/downloads?take")) && !failed.has(key)) {
        failed.add(key);
        req.resume();
        res
          .writeHead(503, { "content-type": "application/json" })
          .end('{"success":false,"code":503,"message":"try later"}');
        return;
      }
      const chunks: Buffer[] = [];
      for await (const chunk of req) chunks.push(chunk as Buffer);
      const headers = Object.fromEntries(
        Object.entries(req.headers).filter(([k]) => k !== "host" && k !== "content-length" && k !== "connection"),
      ) as Record<string, string>;
      const answer = await fetch(new URL(req.url!, worker.url), {
        method: req.method,
        headers,
        ...(chunks.length ? { body: Buffer.concat(chunks) } : {}),
      });
      const back = Object.fromEntries(
        [...answer.headers].filter(
          ([k]) => !["content-encoding", "content-length", "transfer-encoding", "connection"].includes(k),
        ),
      );
      res.writeHead(answer.status, back).end(Buffer.from(await answer.arrayBuffer()));
    });
    await new Promise<void>((resolve) => proxy.listen(0, "127.0.0.1", resolve));
    try {
      const url = `http://127.0.0.1:${(proxy.address() as { port: number }).port}`;
      const product = `retry${Date.now()}`;
      await rest("POST", "/v1/products", { product: { code: product, name: "Retry", isApplication: true } });
      const out = await cli(
        [
          "--json",
          "--url",
          url,
          "--product",
          product,
          "--dir",
          dir,
          "--single-limit",
          String(8 * MiB),
          "--part-size",
          String(5 * MiB),
        ],
        { LICENSING_API_KEY: KEY, LICENSING_PUBLISH_RETRY_MS: "20" },
      );
      expect(out.code, out.stderr).toBe(0);
      expect(out.stderr).toMatch(/parts\/1: 503; trying again in/);
      expect(out.stderr).toMatch(/parts\/3: 503; trying again in/);
      expect(JSON.parse(out.stdout)).toMatchObject({ created: true, replaced: [], unchanged: [] });
      expect((JSON.parse(out.stdout) as { uploaded: string[] }).uploaded).toHaveLength(6);
    } finally {
      proxy.close();
    }
  });
});

describe("licensing-publish keeps the API key where it belongs", () => {
  const args = (url: string, product = "studio") => ["--url", url, "--product", product, "--dir", dir];
  const notTheService = (_req: unknown, res: import("node:http").ServerResponse) => {
    res
      .writeHead(404, { "content-type": "application/json" })
      .end('{"success":false,"code":404,"message":"not the service"}');
  };

  it("refuses plain http:// to a host other than this machine before connecting, unless --insecure", async () => {
    const listener = await httpServer(notTheService);
    try {
      // 0.0.0.0 reaches this machine's listener but is not a loopback address: the refusal must come first.
      const url = `http://0.0.0.0:${listener.port}`;
      for (const out of [
        await cli(args(url), { LICENSING_API_KEY: KEY }),
        await cli(["--product", "studio", "--dir", dir], { LICENSING_API_KEY: KEY, LICENSING_URL: url }),
      ]) {
        expect(out.code, out.stderr).toBe(2);
        expect(out.stderr).toContain(
          `refusing to send the API key over plain http:// to 0.0.0.0:${listener.port}: use https://, or pass --insecure`,
        );
      }
      expect(listener.seen).toEqual([]);

      const insecure = await cli([...args(url), "--insecure"], { LICENSING_API_KEY: KEY });
      expect(insecure.code, insecure.stderr).toBe(1);
      expect(insecure.stderr).toContain("404 not the service");
      expect(listener.seen[0]?.headers["x-api-key"]).toBe(KEY);
    } finally {
      await listener.close();
    }
  });

  it("allows http:// to loopback only: 127.0.0.0/8, ::1 and localhost (checked by dry runs, which send nothing)", async () => {
    for (const url of ["http://127.0.0.1:1", "http://127.200.3.4:1", "http://localhost:1", "http://[::1]:1"]) {
      const out = await cli(["--dry-run", ...args(url)]);
      expect(out.code, `${url}: ${out.stderr}`).toBe(0);
    }
    for (const url of [
      "http://128.0.0.1",
      "http://10.0.0.1:8787",
      "http://[::2]",
      "http://localhost.example.com",
      "http://127.0.0.1.example.com",
    ]) {
      const out = await cli(["--dry-run", ...args(url)]);
      expect(out.code, url).toBe(2);
      expect(out.stderr).toContain("refusing to send the API key over plain http://");
    }
  });

  it("never sends the key to another origin on a redirect, and names the target", async () => {
    const elsewhere = await httpServer((_req, res) => {
      res.writeHead(200, { "content-type": "application/json" }).end('{"products":[{"id":1}]}');
    });
    const redirecting = await httpServer((req, res) => {
      res.writeHead(307, { location: `${elsewhere.url}${req.url}` }).end();
    });
    try {
      const out = await cli(args(redirecting.url), { LICENSING_API_KEY: KEY, LICENSING_PUBLISH_RETRY_MS: "10" });
      // The other origin received nothing: no request, so no key.
      expect(elsewhere.seen.map((s) => s.headers["x-api-key"] ?? "(no key)")).toEqual([]);
      expect(out.code, out.stderr).toBe(1);
      expect(out.stderr).toContain(
        `: 307 redirected to ${elsewhere.url}/v1/products?filter=code%20%3D%3D%20%22studio%22&select=id, another origin than ${redirecting.url}: the API key is not sent there`,
      );
      // Refused once, not retried.
      expect(redirecting.seen).toHaveLength(1);
    } finally {
      await redirecting.close();
      await elsewhere.close();
    }
  });

  it("follows redirects within the service's origin, and refuses one that would turn a write into a GET", async () => {
    // Every address moved under /moved/ on the same origin (308: method and body kept).
    const moved = await httpServer((req, res) => {
      if (req.url?.startsWith("/moved/")) return forward(req, res, worker.url, req.url.slice("/moved".length));
      res.writeHead(308, { location: `/moved${req.url}` }).end();
    });
    // GETs served; writes answered 302, which would make them GETs without their bodies.
    const rewriting = await httpServer((req, res) => {
      if (req.method === "GET") return forward(req, res, worker.url);
      res.writeHead(302, { location: `/v2${req.url}` }).end();
    });
    try {
      const product = `moved${Date.now()}`;
      await rest("POST", "/v1/products", { product: { code: product, name: "Moved", isApplication: true } });
      const out = await cli([...args(moved.url, product), "--single-limit", String(8 * MiB), "--json"], {
        LICENSING_API_KEY: KEY,
      });
      expect(out.code, out.stderr).toBe(0);
      expect((JSON.parse(out.stdout) as { uploaded: string[] }).uploaded).toHaveLength(6);
      const direct = moved.seen.filter((s) => !s.url.startsWith("/moved/"));
      expect(direct.length).toBeGreaterThan(6);
      expect(moved.seen.filter((s) => s.url.startsWith("/moved/"))).toHaveLength(direct.length);
      expect(moved.seen.some((s) => s.method === "POST" && s.url.startsWith("/moved/"))).toBe(true);

      const other = `rewrite${Date.now()}`;
      await rest("POST", "/v1/products", { product: { code: other, name: "Rewrite", isApplication: true } });
      const refused = await cli(args(rewriting.url, other), { LICENSING_API_KEY: KEY });
      expect(refused.code, refused.stderr).toBe(1);
      expect(refused.stderr).toMatch(
        /POST \/v1\/products\/\d+\/releases: 302 redirected to http:\/\/127\.0\.0\.1:\d+\/v2\/v1\/products\/\d+\/releases with 302, which would turn the POST into a GET/,
      );
      expect(rewriting.seen.filter((s) => s.url.startsWith("/v2"))).toEqual([]);
    } finally {
      await moved.close();
      await rewriting.close();
    }
  });
});

describe("licensing-publish names each build's signer and the service's verdict (CONTRACT section 15)", () => {
  let signing: string;
  let ltd: TestCertificate;
  let gmbh: TestCertificate;
  /** An electron-builder folder whose installer is rcedit-x64.exe signed by `cert`, as version `version`. */
  const signedFolder = (version: string, cert: TestCertificate): string => {
    const out = mkdtempSync(join(signing, "dist-"));
    const name = `Studio Setup ${version}.exe`;
    signPe(UNSIGNED_EXE, join(out, name), cert);
    const exe = readFileSync(join(out, name));
    const lines = [`version: ${version}`, "files:", `  - url: ${name}`, `    sha512: ${sha512(exe)}`];
    lines.push(`    size: ${exe.byteLength}`, `path: ${name}`, `sha512: ${sha512(exe)}`);
    writeFileSync(join(out, "latest.yml"), `${lines.join("\n")}\n`);
    return out;
  };
  beforeAll(() => {
    ensureSigningTools();
    signing = mkdtempSync(join(tmpdir(), "publish-signing-"));
    ltd = makeCertificate("Studio Software Ltd", signing);
    gmbh = makeCertificate("Studio GmbH", signing);
  });
  afterAll(() => {
    if (signing) rmSync(signing, { recursive: true, force: true });
  });

  it("--dry-run names the signer, and with the key says whether the service will refuse it; a refused upload prints why", async () => {
    const product = `signed${Date.now() % 100_000}`;
    const first = signedFolder("1.3.0", ltd);
    const url = worker.url.toString();
    const dry = (folder: string, env: Record<string, string> = { LICENSING_API_KEY: KEY }) =>
      cli(["--dry-run", "--url", url, "--product", product, "--dir", folder], env);

    // Without a key: the signer, and that the verdict needs the product's identities; the service is not asked.
    const offline = await dry(first, {});
    expect(offline.code, offline.stderr).toBe(0);
    expect(offline.stdout).toContain(
      "  would upload win-x64 installer Studio Setup 1.3.0.exe (1.3 MiB); signature: no\n    signed by Studio Software Ltd; the verdict needs the product's identities: set LICENSING_API_KEY to ask the service (read only)\n",
    );

    // 1.3.0 is published signed by Studio Software Ltd; a build of 1.4.0 signed by Studio GmbH is judged against it.
    const id = (
      await rest("POST", "/v1/products", { product: { code: product, name: "Signed", isApplication: true } })
    )["productId"];
    const published = await cli(["--url", url, "--product", product, "--dir", first, "--public"], {
      LICENSING_API_KEY: KEY,
    });
    expect(published.code, published.stderr).toBe(0);
    const second = signedFolder("1.4.0", gmbh);
    const refusal =
      'Studio Setup 1.4.0.exe: its Authenticode signer is "Studio GmbH", expected "Studio Software Ltd": electron-updater refuses';
    const byPrevious = await dry(second);
    expect(byPrevious.stdout).toContain(`    signed by Studio GmbH; the service will refuse it: ${refusal}`);

    // The product names its publisher: the first certificate is accepted, the second refused, by name.
    await rest("PUT", "/v1/products", { product: { id, windowsPublisherNames: ["Studio Software Ltd"] } });
    expect((await dry(first)).stdout).toContain("    signed by Studio Software Ltd; the service will accept it\n");
    const byName = await dry(second, { LICENSING_API_KEY: KEY });
    expect(byName.code, byName.stderr).toBe(0);
    expect(byName.stdout).toContain(`    signed by Studio GmbH; the service will refuse it: ${refusal}`);
    expect(byName.stdout).toContain("nothing was sent (the product's identities were only read)");
    const json = await cli(["--dry-run", "--json", "--url", url, "--product", product, "--dir", second], {
      LICENSING_API_KEY: KEY,
    });
    expect(JSON.parse(json.stdout).artifacts[0].signing).toMatchObject({
      signer: "Studio GmbH",
      verdict: { accepted: false, reason: "signerChanged" },
    });
    const releases = (await rest("GET", `/v1/products/${id}/releases`)).productReleases as JsonBody[];
    expect(releases.map((r) => r["version"])).toEqual(["1.3.0"]);

    // Publishing it anyway: the service's 409, its reason, what it expected and found; exit 1, nothing stored.
    const refused = await cli(["--url", url, "--product", product, "--dir", second], { LICENSING_API_KEY: KEY });
    expect(refused.code, refused.stdout).toBe(1);
    expect(refused.stderr).toContain(`409 ${refusal}`);
    expect(refused.stderr).toContain(
      '\n  reason: signerChanged\n  expected: "Studio Software Ltd"\n  found: "Studio GmbH"\n',
    );
    expect(refused.stderr).not.toMatch(/\n\s+at /);
  });

  it("--windows-publisher-name sets the product's publisher before the first upload, once; the service then refuses another signer", async () => {
    const product = `named${Date.now() % 100_000}`;
    const url = worker.url.toString();
    const id = (await rest("POST", "/v1/products", { product: { code: product, name: "Named", isApplication: true } }))[
      "productId"
    ];
    const productOf = async () => {
      const filter = encodeURIComponent(`code == ${JSON.stringify(product)}`);
      return (await rest("GET", `/v1/products?filter=${filter}`)).products[0] as JsonBody;
    };
    const named = ["--url", url, "--product", product, "--windows-publisher-name", "Studio Software Ltd"];
    const env = { LICENSING_API_KEY: KEY };
    const ltdBuild = signedFolder("2.0.0", ltd);
    const gmbhBuild = signedFolder("2.1.0", gmbh);

    // The dry run judges by the name given (the product has none, and no public release) and sends nothing.
    const dry = await cli([...named, "--dry-run", "--dir", gmbhBuild], env);
    expect(dry.code, dry.stderr).toBe(0);
    expect(dry.stdout).toContain('  would set on the product: Windows publishers "Studio Software Ltd"\n');
    expect(dry.stdout).toContain(
      '    signed by Studio GmbH; the service will refuse it: Studio Setup 2.1.0.exe: its Authenticode signer is "Studio GmbH", expected "Studio Software Ltd"',
    );
    const before = await productOf();
    expect(before["windowsPublisherNames"] ?? null).toBeNull();

    // A publication sets it before its first upload.
    const first = await cli([...named, "--json", "--dir", ltdBuild], env);
    expect(first.code, first.stderr).toBe(0);
    expect(JSON.parse(first.stdout)).toMatchObject({
      identities: ["windowsPublisherNames"],
      uploaded: ["Studio Setup 2.0.0.exe"],
    });
    const lines = first.stderr.split("\n");
    const set = lines.findIndex((l) =>
      l.includes('signing identities set on the product: Windows publishers "Studio Software Ltd"'),
    );
    expect(set, first.stderr).toBeGreaterThan(-1);
    const uploading = lines.findIndex((l) => l.includes(": uploading"));
    expect(set, "set before the first upload").toBeLessThan(uploading);
    // What the service will find is printed before the bytes go.
    expect(lines[uploading + 1], first.stderr).toBe("    signed by Studio Software Ltd");
    const after = await productOf();
    expect(after).toMatchObject({ id, windowsPublisherNames: ["Studio Software Ltd"] });
    expect(after["updatedAt"]).not.toBe(before["updatedAt"]);

    // The same run again with a build signed by another certificate: nothing sent to the product (it has the name;
    // updatedAt unchanged), and the upload refused by that name (2.0.0 is not public: no previous signer to judge by).
    const second = await cli([...named, "--dir", gmbhBuild], env);
    expect(second.code, second.stdout).toBe(1);
    expect(second.stdout).toContain("  signing identities: the product has them already\n");
    expect(second.stdout).not.toContain("signing identities set");
    expect(second.stderr).toContain(
      '409 Studio Setup 2.1.0.exe: its Authenticode signer is "Studio GmbH", expected "Studio Software Ltd"',
    );
    expect(second.stderr).toContain(
      '\n  reason: signerChanged\n  expected: "Studio Software Ltd"\n  found: "Studio GmbH"\n',
    );
    expect((await productOf())["updatedAt"]).toBe(after["updatedAt"]);
  });
});
