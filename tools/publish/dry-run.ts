/**
 * `--dry-run`: what `publish` would upload, read from the folders alone, and what the service will say of each
 * file's signer (signers.ts). Nothing is uploaded or changed: with an API key, the product's identities and the
 * previous public release's signers are read (GETs); without one, the service is not contacted at all. Signing
 * identities given to set on the product are printed (with a key, only those it does not have) and judged by.
 */
import { DEFAULT_SINGLE_LIMIT, fileDigest, megabytes, readFolder, warner } from "./folders.ts";
import type { Format } from "./formats.ts";
import {
  type SigningIdentities,
  checkIdentities,
  describeIdentities,
  givesIdentities,
  identityChanges,
} from "./identities.ts";
import type { PublishOptions } from "./publish.ts";
import { checkReleaseControl, describeControl } from "./release-control.ts";
import { type SigningReport, signingLookup, signingReport } from "./signers.ts";
import { identityKindOf } from "./signing/identity.ts";
import { isTauriSignature } from "./signing/minisign.ts";

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
    /** Its signer (a Windows or macOS build) or Tauri signature, and the service's verdict when it is known. */
    signing?: SigningReport;
  }[];
  skipped: { fileName: string; reason: string }[];
  /** The signing identities the run would set on the product (with a key, those it does not have yet). */
  identities?: SigningIdentities;
}

/** A dry run: what `publish` would upload and whether the service will accept each file's signer. */
export async function plan(options: PublishOptions): Promise<PublishPlan> {
  const log = options.log ?? ((line: string) => console.log(line));
  checkReleaseControl(options.control);
  const identities = checkIdentities(options.identities);
  const { parts, artifacts: planned, skipped, warnings, version, channel } = await readFolder(options, log);
  for (const w of warnings) warner(options)(w);
  log(`dry run: ${options.product} ${version} (${channel}) to ${options.url}`);
  if (options.control) log(`  would set: ${describeControl(options.control)}`);
  // The service is read only when a file's signing is judged or identities are to be set, and only with a key.
  const judged = planned.some(
    (a) => identityKindOf(a) !== undefined || (a.signature !== undefined && isTauriSignature(a.signature)),
  );
  const { insecure, ca, trustHint } = options;
  const lookup =
    judged || givesIdentities(identities)
      ? await signingLookup({ ...options, insecure, ca, trustHint, ...(identities ? { identities } : {}) }, version)
      : undefined;
  let changes: SigningIdentities | undefined;
  if (givesIdentities(identities)) {
    const known = lookup && !("unknown" in lookup.product) ? lookup.product : undefined;
    changes = known ? identityChanges(identities, known) : identities;
    log(
      Object.keys(changes).length > 0
        ? `  would set on the product: ${describeIdentities(changes)}`
        : "  signing identities: the product has them already",
    );
  }
  const artifacts: PublishPlan["artifacts"] = [];
  const limit = options.singleLimit ?? DEFAULT_SINGLE_LIMIT;
  try {
    for (const part of parts) {
      const mine = planned.filter((a) => a.dir === part.dir);
      log(`${part.format} (${part.dir}): ${mine.length} artifact${mine.length === 1 ? "" : "s"}`);
      for (const s of part.dist.skipped) log(`  skip ${s.fileName}: ${s.reason}`);
      for (const a of mine) {
        const digest = await fileDigest(a.path);
        log(
          `  would upload ${a.platform} ${a.kind} ${a.fileName} (${megabytes(a.size)})${a.size > limit ? " resumably" : ""}; signature: ${a.signature !== undefined ? "yes" : "no"}${a.sha1 ? `; sha1 ${a.sha1}` : ""}`,
        );
        const signing = lookup ? await signingReport(a, lookup) : undefined;
        if (signing) log(`    ${signing.text}`);
        artifacts.push({
          format: a.format,
          fileName: a.fileName,
          platform: a.platform,
          kind: a.kind,
          size: a.size,
          sha512: digest.sha512,
          signature: a.signature !== undefined,
          ...(a.sha1 ? { sha1: a.sha1 } : {}),
          ...(signing ? { signing } : {}),
        });
      }
    }
  } finally {
    await lookup?.close();
  }
  for (const s of skipped.filter((s) => !parts.some((p) => p.dist.skipped.includes(s))))
    log(`  skip ${s.fileName}: ${s.reason}`);
  const asked = lookup && !("unknown" in lookup.product);
  log(
    `dry run: ${artifacts.length} artifacts, ${megabytes(artifacts.reduce((n, a) => n + a.size, 0))}; nothing was sent${asked ? " (the product's identities were only read)" : ""}`,
  );
  return {
    dryRun: true,
    product: options.product,
    version,
    channel,
    artifacts,
    skipped,
    ...(changes ? { identities: changes } : {}),
  };
}
