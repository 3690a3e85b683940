/**
 * Reading the folders to publish, shared by the publication (publish.ts) and the dry run (dry-run.ts): each folder
 * by its tool's reader (formats.ts), the version and channel they name, every listed file checked against the hash
 * its tool's metadata gives, and the sizes and hashes of the files as the tools write them.
 */
import { createHash } from "node:crypto";
import { createReadStream } from "node:fs";
import { join } from "node:path";
import { type Artifact, type Channel, type Dist, serviceChannel } from "./dist.ts";
import { detectFormat, type Format, readFormat } from "./formats.ts";
import type { PublishOptions } from "./publish.ts";

export const MiB = 1024 * 1024;
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
export const megabytes = (n: number) => (n < 100 * 1024 ? `${n} bytes` : `${(n / MiB).toFixed(1)} MiB`);

/** What the folders say of the release besides its files: name, notes (Markdown and HTML), date. */
export type ReleaseNotes = {
  releaseName?: string;
  releaseNotes?: string;
  releaseNotesHtml?: string;
  releaseDate?: string;
};

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
export type Planned = Artifact & { format: Format; dir: string };

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
export async function readFolder(options: PublishOptions, log: (s: string) => void) {
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
export const warner = (options: PublishOptions) =>
  options.warn ?? ((line: string) => console.error(`warning: ${line}`));
