/**
 * Publishes build output folders as a release of a product: electron-builder's, Squirrel.Windows', Tauri's, Sparkle's
 * and Velopack's (formats.ts; each read as its tool writes it). Finds the product by code, creates the release when
 * it is missing, and uploads each artifact (one multipart POST up to `singleLimit` bytes, the resumable upload
 * beyond) with the vendor's signature and the SHA1 the tool declared. Safe to run again: an artifact whose size and
 * sha512 already match is skipped (renamed when only its file name changed, its signature updated when only that
 * changed), a different one is deleted and uploaded again.
 */
import { SingleBar } from "cli-progress";
import { type Added, ManagementApi, type RemoteDownload } from "./api.ts";
import type { Artifact, Channel, Platform, SparkleFields } from "./dist.ts";
import {
  DEFAULT_PART_SIZE,
  DEFAULT_SINGLE_LIMIT,
  MiB,
  type ReleaseNotes,
  fileDigest,
  megabytes,
  readFolder,
  warner,
} from "./folders.ts";
import type { Format } from "./formats.ts";
import {
  type ProductIdentities,
  type SigningIdentities,
  applyIdentities,
  checkIdentities,
  givesIdentities,
} from "./identities.ts";
import { type ReleaseControl, applyReleaseControl, checkReleaseControl } from "./release-control.ts";
import { sparkleOrderProblems } from "./sparkle.ts";
import { signerBeforeUpload } from "./signers.ts";

export { DEFAULT_PART_SIZE, DEFAULT_SINGLE_LIMIT, type Digest, fileDigest } from "./folders.ts";
export { type PublishPlan, plan } from "./dry-run.ts";

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
  /**
   * The identities the product's builds are signed with, set on the product before the first upload when it has
   * others (identities.ts); the dry run judges each build's signer against them.
   */
  identities?: SigningIdentities;
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
  /** The product's signing identity fields set (those `identities` gave that the product did not have yet). */
  identities?: string[];
}

/** The product by its code, with the signing identities it has when the run sets some. */
async function productOf(
  api: ManagementApi,
  code: string,
  identities: boolean,
): Promise<ProductIdentities & { id: number }> {
  const filter = encodeURIComponent(`code == ${JSON.stringify(code)}`);
  const select = identities ? "id,windowsPublisherNames,macTeamIds,tauriPublicKey" : "id";
  const { products } = await api.call<{ products: (ProductIdentities & { id: number })[] }>(
    "GET",
    `/v1/products?filter=${filter}&select=${select}`,
  );
  if (!products[0])
    throw new Error(`Product ${code} not found: create it first (POST /v1/products with isApplication true)`);
  return products[0];
}

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
  const identities = checkIdentities(options.identities);
  const { insecure, ca, trustHint } = options;
  const api = new ManagementApi(options.url, options.apiKey, log, { insecure, ca, trustHint });
  try {
    return await publishWith(api, { ...options, ...(identities ? { identities } : {}) }, log);
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

  const found = await productOf(api, options.product, givesIdentities(options.identities));
  const product = found.id;
  if (parts.some((p) => p.format === "sparkle"))
    await sparkleOrderWarnings(api, product, { version, bundleVersion: sparkle.bundleVersion }, warn);
  const release = await ensureRelease(api, product, { ...options, version, channel }, notes, sparkle, log);
  log(`${options.product} ${version}: release ${release.id} ${release.created ? "created" : "exists"} (${channel})`);
  for (const s of skipped) log(`  skip ${s.fileName}: ${s.reason}`);
  const controlled = await applyReleaseControl(api, product, release.id, options.control, log);
  const identities = await applyIdentities(api, found, options.identities, log);

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
    identities,
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
      const signer = await signerBeforeUpload(artifact);
      if (signer) log(`    ${signer}`);
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
