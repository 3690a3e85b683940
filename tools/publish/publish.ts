/**
 * Publishes build output folders as a release of a product: electron-builder's, Squirrel.Windows', Tauri's, Sparkle's
 * and Velopack's (formats.ts; each read as its tool writes it). Finds the product by code, creates the release when
 * it is missing, and uploads each artifact (one multipart POST up to `singleLimit` bytes, the resumable upload
 * beyond) with the vendor's signature and the SHA1 the tool declared. Safe to run again: an artifact whose size and
 * sha512 already match is skipped (renamed when only its file name changed, its signature updated when only that
 * changed), a different one is deleted and uploaded again.
 */
import { createHash } from "node:crypto";
import { createReadStream } from "node:fs";
import { join } from "node:path";
import { SingleBar } from "cli-progress";
import { type Added, ManagementApi, type RemoteDownload } from "./api.ts";
import { type Artifact, type Channel, type Dist, type Platform, type SparkleFields, serviceChannel } from "./dist.ts";
import { detectFormat, type Format, readFormat } from "./formats.ts";
import { type ReleaseControl, applyReleaseControl, checkReleaseControl, describeControl } from "./release-control.ts";
import { sparkleOrderProblems } from "./sparkle.ts";

export interface PublishOptions {
  /** The product's code. */
  product: string;
  /** The release version; default the update info's. */
  version?: string;
  /**
   * The channel of a new release; default the one the update-info files are named after (dist.ts:
   * UPDATE_CHANNELS: latest -> stable, beta and alpha -> insider), or stable when the folder has none.
   */
  channel?: Channel;
  /** What to tell the reader who must name the channel (default: `pass --channel stable or --channel insider`). */
  channelHint?: string;
  /** The output folder, or several (a release may take a Tauri bundle and a Velopack folder at once). */
  dir: string | string[];
  /** The tool that wrote the folders; default recognised per folder (formats.ts detectFormat). */
  format?: Format;
  /** Sparkle's sign_update output (the line, a bare signature, or a file holding it), for a folder with no appcast. */
  sparkleSignature?: string;
  url: string;
  apiKey: string;
  /** Put every artifact on this platform. */
  platform?: Platform;
  /** Make the release public once every artifact is uploaded. */
  makePublic?: boolean;
  /** Rollout, critical, automatic halt and notes to set on the release before the first upload (release-control.ts). */
  control?: ReleaseControl;
  /** Largest file sent in one request (the Worker takes up to 100 MB per request). */
  singleLimit?: number;
  /** Part size of resumable uploads: every part but the last has it (R2: at least 5 MiB). */
  partSize?: number;
  /** Allow plain http:// to a host other than this machine (the API key crosses the network unencrypted). */
  insecure?: boolean;
  /** PEM certificates to trust besides Node's default authorities (a self-signed service, a private authority). */
  ca?: string;
  /** What a certificate failure tells the reader to do (default: `--ca FILE` or NODE_EXTRA_CA_CERTS). */
  trustHint?: string;
  log?: (line: string) => void;
  /** What disagrees without stopping the publication (`warning: …`); default stderr. */
  warn?: (line: string) => void;
  /** Show a progress bar (bytes, rate, time left) on stderr while uploading. */
  progress?: boolean;
}

/** What a dry run found: the artifacts that would be uploaded, and the files left out. */
export interface PublishPlan {
  dryRun: true;
  product: string;
  version: string;
  channel: string;
  artifacts: {
    format: Format;
    fileName: string;
    platform: string;
    kind: string;
    size: number;
    sha512: string;
    /** Whether the vendor's signature goes with it. */
    signature: boolean;
    /** The SHA1 the tool declared, sent for the service to check. */
    sha1?: string;
  }[];
  skipped: { fileName: string; reason: string }[];
}

export interface PublishResult {
  releaseId: number;
  created: boolean;
  uploaded: string[];
  replaced: string[];
  unchanged: string[];
  /** Artifacts whose bytes were there already and whose signature was updated. */
  resigned: string[];
  /** The release control fields set (those `control` gave that the release did not have yet). */
  controlled?: string[];
}

const MiB = 1024 * 1024;
export const DEFAULT_SINGLE_LIMIT = 90 * 1000 * 1000;
export const DEFAULT_PART_SIZE = 64 * MiB;

/** A file's size and hashes in the forms the tools write them: sha512 base64, sha256 and SHA1 hex. */
export interface Digest {
  size: number;
  sha512: string;
  sha256: string;
  sha1: string;
}

/** size and hashes of a file, read once as a stream. */
export async function fileDigest(path: string): Promise<Digest> {
  const hashes = [createHash("sha512"), createHash("sha256"), createHash("sha1")] as const;
  let size = 0;
  for await (const chunk of createReadStream(path)) {
    for (const h of hashes) h.update(chunk as Buffer);
    size += (chunk as Buffer).byteLength;
  }
  return {
    size,
    sha512: hashes[0].digest("base64"),
    sha256: hashes[1].digest("hex"),
    sha1: hashes[2].digest("hex").toUpperCase(),
  };
}

/** A size for people: bytes below 100 KiB, MiB above. */
const megabytes = (n: number) => (n < 100 * 1024 ? `${n} bytes` : `${(n / MiB).toFixed(1)} MiB`);

async function productId(api: ManagementApi, code: string): Promise<number> {
  const filter = encodeURIComponent(`code == ${JSON.stringify(code)}`);
  const { products } = await api.call<{ products: { id: number }[] }>("GET", `/v1/products?filter=${filter}&select=id`);
  if (!products[0])
    throw new Error(`Product ${code} not found: create it first (POST /v1/products with isApplication true)`);
  return products[0].id;
}

/** What the folders say of the release besides its files: name, notes (Markdown and HTML), date. */
type ReleaseNotes = { releaseName?: string; releaseNotes?: string; releaseNotesHtml?: string; releaseDate?: string };

/** A release as the publisher reads it back. */
type RemoteRelease = { id: number; version: string; channel: string } & {
  [K in keyof SparkleFields]?: SparkleFields[K] | null;
};

/**
 * The release's id, created with the update info's name, date, notes and Sparkle fields when it does not exist. An
 * existing release keeps its channel and notes, but takes the Sparkle fields of the build being uploaded (its
 * sparkle:version and system versions are the build's own).
 */
async function ensureRelease(
  api: ManagementApi,
  product: number,
  options: PublishOptions & { version: string; channel: Channel },
  notes: ReleaseNotes,
  sparkle: SparkleFields,
  log: (s: string) => void,
) {
  const filter = encodeURIComponent(`version == ${JSON.stringify(options.version)}`);
  const { productReleases } = await api.call<{ productReleases: RemoteRelease[] }>(
    "GET",
    `/v1/products/${product}/releases?filter=${filter}`,
  );
  const existing = productReleases[0];
  if (existing) {
    if (existing.channel !== options.channel)
      log(`  note: release ${options.version} exists on channel ${existing.channel}; leaving its channel as it is`);
    const changed = Object.fromEntries(
      Object.entries(sparkle).filter(([key, value]) => existing[key as keyof SparkleFields] !== value),
    );
    if (Object.keys(changed).length > 0) {
      await api.call("PUT", `/v1/products/${product}/releases`, { productRelease: { id: existing.id, ...changed } });
      log(`  note: release ${options.version} takes the build's ${Object.keys(changed).join(", ")}`);
    }
    return { id: existing.id, created: false };
  }
  const { productReleaseId } = await api.call<{ productReleaseId: number }>(
    "POST",
    `/v1/products/${product}/releases`,
    {
      productRelease: {
        version: options.version,
        channel: options.channel,
        ...(notes.releaseName ? { name: notes.releaseName } : {}),
        ...(notes.releaseNotes ? { releaseNotes: notes.releaseNotes } : {}),
        ...(notes.releaseNotesHtml ? { releaseNotesHtml: notes.releaseNotesHtml } : {}),
        ...(notes.releaseDate ? { releaseDate: notes.releaseDate } : {}),
        ...sparkle,
      },
    },
  );
  return { id: productReleaseId, created: true };
}

/** The vendor's signature and the hashes the tool declared (SHA1, SHA256), sent untouched with the artifact when there are any. */
function vendorFields(artifact: Artifact): Record<string, string> {
  return {
    ...(artifact.signature !== undefined ? { signature: artifact.signature } : {}),
    ...(artifact.sha1 !== undefined ? { sha1: artifact.sha1 } : {}),
    ...(artifact.sha256 !== undefined ? { sha256: artifact.sha256 } : {}),
  };
}

/** Uploads one artifact, in one request or resumably by parts; `sent(bytes)` reports progress. */
async function upload(
  api: ManagementApi,
  path: string,
  artifact: Artifact,
  options: PublishOptions,
  log: (s: string) => void,
  sent: (bytes: number) => void,
): Promise<Added> {
  const singleLimit = options.singleLimit ?? DEFAULT_SINGLE_LIMIT;
  if (artifact.size <= singleLimit) {
    const added = await api.uploadForm(path, artifact.path, {
      platform: artifact.platform,
      kind: artifact.kind,
      fileName: artifact.fileName,
      sourceKind: "local",
      ...vendorFields(artifact),
    });
    sent(artifact.size);
    return added;
  }
  const partSize = options.partSize ?? DEFAULT_PART_SIZE;
  const { uploadId } = await api.call<{ uploadId: string }>("POST", `${path}/uploads`, {
    upload: {
      platform: artifact.platform,
      kind: artifact.kind,
      fileName: artifact.fileName,
      ...vendorFields(artifact),
    },
  });
  const parts = Math.ceil(artifact.size / partSize);
  try {
    for (let n = 1; n <= parts; n++) {
      await api.uploadPart(
        `${path}/uploads/${uploadId}/parts/${n}`,
        artifact.path,
        (n - 1) * partSize,
        Math.min(n * partSize, artifact.size),
      );
      sent(Math.min(n * partSize, artifact.size) - (n - 1) * partSize);
      log(
        `    part ${n}/${parts} (${megabytes(Math.min(n * partSize, artifact.size))} of ${megabytes(artifact.size)})`,
      );
    }
    return await api.call<Added>("POST", `${path}/uploads/${uploadId}/complete`);
  } catch (e) {
    // Leave nothing half-uploaded behind; a re-run starts this file again.
    await api.call("DELETE", `${path}/uploads/${uploadId}`).catch(() => undefined);
    throw e;
  }
}

/**
 * The service channel of the folder: the one asked for, else the one its update-info files are named after
 * (electron-builder's channel, mapped by UPDATE_CHANNELS), else stable. A channel name with no service channel is
 * refused unless the channel is asked for.
 */
function channelOf(options: PublishOptions, dist: Dist, log: (s: string) => void): Channel {
  const named = dist.updateChannel;
  const mapped = named === undefined ? undefined : serviceChannel(named);
  const files = (channel: string) =>
    dist.updateInfoFiles
      .filter((f) => f.channel === channel)
      .map((f) => f.name)
      .join(", ");
  if (options.channel) {
    if (named !== undefined && mapped !== options.channel)
      log(
        `  note: ${files(named)} ${mapped ? `would publish on ${mapped}` : `name channel ${named}`}; publishing on ${options.channel} as asked`,
      );
    return options.channel;
  }
  if (named === undefined) return "stable";
  if (!mapped)
    throw new Error(
      `${files(named)}: electron-builder's channel '${named}' has no channel on the service (latest -> stable, beta and alpha -> insider); ${options.channelHint ?? "pass --channel stable or --channel insider"}`,
    );
  const unknown = dist.updateInfoFiles.filter((f) => serviceChannel(f.channel) === undefined);
  if (unknown.length > 0)
    throw new Error(
      `${unknown.map((f) => f.name).join(", ")}: channel '${unknown[0]!.channel}' has no channel on the service (latest -> stable, beta and alpha -> insider); ${options.channelHint ?? "pass --channel stable or --channel insider"}`,
    );
  return mapped;
}

/** An artifact to publish, with the format whose folder it comes from. */
type Planned = Artifact & { format: Format; dir: string };

/** The folders given (--dir, repeatable), each with its format and what its reader found. */
interface Part {
  dir: string;
  format: Format;
  dist: Dist;
}

/**
 * The folders, the version and the channel to publish, checked against each other: each folder is read by its
 * tool's reader (--format, or recognised from the files only that tool writes), every file a tool's metadata lists
 * must be there with the hash it gives, and all folders name one version. A platform and kind found in two folders
 * is published from the first.
 */
async function readFolder(options: PublishOptions, log: (s: string) => void) {
  const dirs = Array.isArray(options.dir) ? options.dir : [options.dir];
  const parts: Part[] = [];
  for (const dir of dirs) {
    const format = options.format ?? (await detectFormat(dir));
    const dist = await readFormat(dir, format, {
      ...(options.platform ? { platform: options.platform } : {}),
      ...(options.version ? { version: options.version } : {}),
      ...(options.sparkleSignature !== undefined ? { sparkleSignature: options.sparkleSignature } : {}),
    });
    if (options.version && dist.version && dist.version !== options.version) {
      const source = format === "electron-builder" ? "the folder's update info" : `${dir} (${format})`;
      throw new Error(`--version ${options.version} does not match ${source} (version ${dist.version})`);
    }
    parts.push({ dir, format, dist });
  }
  const named = parts.filter((p) => p.dist.version);
  if (new Set(named.map((p) => p.dist.version)).size > 1)
    throw new Error(
      `the folders name different versions (${named.map((p) => `${p.dir}: ${p.dist.version}`).join(", ")}); publish one version`,
    );
  const version = options.version ?? named[0]?.dist.version;
  if (!version) throw new Error(`No version: pass --version (${dirs.join(", ")} names none)`);
  const artifacts: Planned[] = [];
  const skipped: Dist["skipped"] = [];
  for (const part of parts) {
    skipped.push(...part.dist.skipped);
    for (const a of part.dist.artifacts) {
      const taken = artifacts.find((b) => b.platform === a.platform && b.kind === a.kind);
      if (taken)
        skipped.push({
          fileName: a.fileName,
          reason: `one ${a.kind} per platform: ${taken.fileName} (${taken.format}) is the ${a.platform} ${a.kind}`,
        });
      else artifacts.push({ ...a, format: part.format, dir: part.dir });
    }
  }
  if (artifacts.length === 0) throw new Error(`${dirs.join(", ")} holds no installer, zip or blockmap to publish`);
  const builder = parts.find((p) => p.format === "electron-builder" || p.format === "squirrel-mac");
  const suggested = parts.find((p) => p.dist.suggestedChannel)?.dist.suggestedChannel;
  let channel: Channel;
  if (builder) channel = channelOf(options, builder.dist, log);
  else if (options.channel) channel = options.channel;
  else if (suggested) {
    channel = suggested.channel;
    log(`  note: ${suggested.from}: publishing on ${channel} (--channel chooses another)`);
  } else channel = "stable";
  const digests = new Map<string, Digest>();
  for (const part of parts)
    for (const { fileName, algorithm, digest, listedBy } of part.dist.listed) {
      const path = join(part.dir, fileName);
      if (!digests.has(path)) {
        const found = await fileDigest(path).catch((e: NodeJS.ErrnoException) => {
          if (e.code === "ENOENT")
            throw new Error(
              `${listedBy} lists ${fileName}, which is not in ${part.dir}; publish the whole build output`,
            );
          throw e;
        });
        digests.set(path, found);
      }
      const actual = digests.get(path)![algorithm];
      if (algorithm === "sha512" ? actual !== digest : actual.toLowerCase() !== digest.toLowerCase())
        throw new Error(
          `${fileName}: its ${algorithm} differs from the one ${listedBy} gives; the file changed after the build: rebuild the folder`,
        );
    }
  const notes: ReleaseNotes = {};
  for (const key of ["releaseName", "releaseNotes", "releaseNotesHtml", "releaseDate"] as const) {
    const value = parts.find((p) => p.dist[key])?.dist[key];
    if (value) notes[key] = value;
  }
  const sparkle = parts.find((p) => p.dist.sparkle && Object.keys(p.dist.sparkle).length > 0)?.dist.sparkle ?? {};
  const warnings = parts.flatMap((p) => p.dist.warnings ?? []);
  return { parts, artifacts, skipped, notes, sparkle, warnings, version, channel };
}

/** `warning: …` lines, on stderr unless told otherwise. */
const warner = (options: PublishOptions) => options.warn ?? ((line: string) => console.error(`warning: ${line}`));

/**
 * The release being published against the product's others (its latest 1000): Sparkle offers a build only when its
 * sparkle:version is above the app's, so an order that disagrees with the versions' is a warning (sparkle.ts
 * sparkleOrderProblems). Only for a Sparkle folder.
 */
async function sparkleOrderWarnings(
  api: ManagementApi,
  product: number,
  published: { version: string; bundleVersion?: string | undefined },
  warn: (line: string) => void,
): Promise<void> {
  const { productReleases } = await api.call<{ productReleases: RemoteRelease[] }>(
    "GET",
    `/v1/products/${product}/releases?select=id,version,bundleVersion&sort=-id&take=1000`,
  );
  for (const problem of sparkleOrderProblems(published, productReleases)) warn(problem);
}

/** A dry run: what `publish` would upload, read from the folders alone (the service is not contacted). */
export async function plan(options: PublishOptions): Promise<PublishPlan> {
  const log = options.log ?? ((line: string) => console.log(line));
  checkReleaseControl(options.control);
  const { parts, artifacts: planned, skipped, warnings, version, channel } = await readFolder(options, log);
  for (const w of warnings) warner(options)(w);
  log(`dry run: ${options.product} ${version} (${channel}) to ${options.url}`);
  if (options.control) log(`  would set: ${describeControl(options.control)}`);
  const artifacts: PublishPlan["artifacts"] = [];
  const limit = options.singleLimit ?? DEFAULT_SINGLE_LIMIT;
  for (const part of parts) {
    const mine = planned.filter((a) => a.dir === part.dir);
    log(`${part.format} (${part.dir}): ${mine.length} artifact${mine.length === 1 ? "" : "s"}`);
    for (const s of part.dist.skipped) log(`  skip ${s.fileName}: ${s.reason}`);
    for (const a of mine) {
      const digest = await fileDigest(a.path);
      artifacts.push({
        format: a.format,
        fileName: a.fileName,
        platform: a.platform,
        kind: a.kind,
        size: a.size,
        sha512: digest.sha512,
        signature: a.signature !== undefined,
        ...(a.sha1 ? { sha1: a.sha1 } : {}),
      });
      log(
        `  would upload ${a.platform} ${a.kind} ${a.fileName} (${megabytes(a.size)})${a.size > limit ? " resumably" : ""}; signature: ${a.signature !== undefined ? "yes" : "no"}${a.sha1 ? `; sha1 ${a.sha1}` : ""}`,
      );
    }
  }
  for (const s of skipped.filter((s) => !parts.some((p) => p.dist.skipped.includes(s))))
    log(`  skip ${s.fileName}: ${s.reason}`);
  log(
    `dry run: ${artifacts.length} artifacts, ${megabytes(artifacts.reduce((n, a) => n + a.size, 0))}; nothing was sent`,
  );
  return {
    dryRun: true,
    product: options.product,
    version,
    channel,
    artifacts,
    skipped,
  };
}

/** A progress bar over the bytes to upload, with rate and time left; a no-op when not asked for. */
function progressBar(enabled: boolean | undefined, total: number) {
  if (!enabled || total === 0) return { sent: (_bytes: number) => undefined, stop: () => undefined };
  const bar = new SingleBar({
    format: "  [{bar}] {percentage}% | {sentMiB}/{totalMiB} MiB | {rate} MiB/s | {eta_formatted} left",
    barCompleteChar: "#",
    barIncompleteChar: "-",
    stream: process.stderr,
    hideCursor: true,
  });
  const started = Date.now();
  let done = 0;
  const fields = () => ({
    sentMiB: (done / MiB).toFixed(1),
    totalMiB: (total / MiB).toFixed(1),
    rate: (done / MiB / Math.max((Date.now() - started) / 1000, 0.001)).toFixed(2),
  });
  bar.start(total, 0, fields());
  return {
    sent(bytes: number) {
      done += bytes;
      bar.update(done, fields());
    },
    stop: () => bar.stop(),
  };
}

/** Publishes the folder; see the file comment. */
export async function publish(options: PublishOptions): Promise<PublishResult> {
  const log = options.log ?? ((line: string) => console.log(line));
  checkReleaseControl(options.control);
  const { insecure, ca, trustHint } = options;
  const api = new ManagementApi(options.url, options.apiKey, log, { insecure, ca, trustHint });
  try {
    return await publishWith(api, options, log);
  } finally {
    await api.close();
  }
}

async function publishWith(
  api: ManagementApi,
  options: PublishOptions,
  log: (line: string) => void,
): Promise<PublishResult> {
  const { parts, artifacts, skipped, notes, sparkle, warnings, version, channel } = await readFolder(options, log);
  const warn = warner(options);
  for (const w of warnings) warn(w);

  const product = await productId(api, options.product);
  if (parts.some((p) => p.format === "sparkle"))
    await sparkleOrderWarnings(api, product, { version, bundleVersion: sparkle.bundleVersion }, warn);
  const release = await ensureRelease(api, product, { ...options, version, channel }, notes, sparkle, log);
  log(`${options.product} ${version}: release ${release.id} ${release.created ? "created" : "exists"} (${channel})`);
  for (const s of skipped) log(`  skip ${s.fileName}: ${s.reason}`);
  const controlled = await applyReleaseControl(api, product, release.id, options.control, log);

  const path = `/v1/products/${product}/releases/${release.id}/downloads`;
  const { releaseDownloads } = await api.call<{ releaseDownloads: RemoteDownload[] }>("GET", `${path}?take=1000`);
  const result: PublishResult = {
    releaseId: release.id,
    created: release.created,
    uploaded: [],
    replaced: [],
    unchanged: [],
    resigned: [],
    controlled,
  };
  const toSend = artifacts.filter((a) => {
    const remote = releaseDownloads.find((d) => d.platform === a.platform && d.kind === a.kind);
    return !(remote && remote.size === a.size);
  });
  const bar = progressBar(
    options.progress,
    toSend.reduce((n, a) => n + a.size, 0),
  );
  try {
    for (const artifact of artifacts) {
      const label = `${artifact.format}: ${artifact.platform} ${artifact.kind} ${artifact.fileName} (${megabytes(artifact.size)})`;
      const local = await fileDigest(artifact.path);
      const remote = releaseDownloads.find((d) => d.platform === artifact.platform && d.kind === artifact.kind);
      if (remote && remote.size === local.size && remote.sha512 === local.sha512) {
        // Same bytes: a new name or a new signature (minisign's carries the signing time) is updated in place.
        const resign = artifact.signature !== undefined && artifact.signature !== remote.signature;
        if (remote.fileName !== artifact.fileName || resign)
          await api.call("PUT", path, {
            releaseDownload: {
              id: remote.id,
              fileName: artifact.fileName,
              ...(resign ? { signature: artifact.signature } : {}),
            },
          });
        log(`  = ${label}: already uploaded${resign ? "; signature updated" : ""}`);
        (resign ? result.resigned : result.unchanged).push(artifact.fileName);
        continue;
      }
      if (remote) {
        log(`  ~ ${label}: differs from download ${remote.id}; replacing it`);
        await api.call("DELETE", `${path}/${remote.id}`);
      } else log(`  + ${label}: uploading`);
      const added = await upload(api, path, artifact, options, log, bar.sent);
      if (
        added.size !== local.size ||
        added.sha512 !== local.sha512 ||
        (added.sha1 && added.sha1.toUpperCase() !== local.sha1)
      ) {
        throw new Error(
          `${artifact.fileName}: the service stored ${added.size} bytes with another sha512; upload it again`,
        );
      }
      log(`    stored as download ${added.releaseDownloadId}, sha512 ${added.sha512.slice(0, 16)}…`);
      (remote ? result.replaced : result.uploaded).push(artifact.fileName);
    }
  } finally {
    bar.stop();
  }
  if (options.makePublic) {
    await api.call("PUT", `/v1/products/${product}/releases`, { productRelease: { id: release.id, public: true } });
    log(`release ${version} is public`);
  }
  log(
    `done: ${result.uploaded.length} uploaded, ${result.replaced.length} replaced, ${result.unchanged.length} unchanged${result.resigned.length > 0 ? `, ${result.resigned.length} re-signed` : ""}`,
  );
  return result;
}
