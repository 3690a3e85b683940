/**
 * The upload's signing check (CONTRACT section 15): before an uploaded artifact is published, the signer its bytes
 * name is judged against the product's identities, or the previous public release's signer, and the vendor's Tauri or
 * Sparkle signature is verified over the bytes, so that no release can strand the installs that trust the old signer.
 * The staged bytes are read by ranges (signing/source.ts): headers, directories and the certificate table are read,
 * the rest is only hashed as it streams, so a file of any size is checked in bounded memory. A refusal throws before
 * the row exists, and commitStaged (artifacts.ts) then removes the staged bytes: nothing is stored.
 */
import { and, eq, ne, sql } from "drizzle-orm";
import { type SignerChange, productReleases, products, releaseDownloads } from "../db/schema";
import type { Db } from "../db/client";
import type { ServiceContext } from "../http/context";
import { Roles } from "../auth/guard";
import { nowIso } from "../kernel/clock";
import { ApiError, notFound400 } from "../kernel/errors";
import type { Row } from "../http/repository";
import { type ReleaseDownloadRow, readArtifact } from "./storage";
import { compareVersions } from "../records/versions";
import { SignatureMismatch } from "./signing/mismatch";
import {
  type Identity,
  type IdentityKind,
  identityKindOf,
  judgeIdentity,
  readIdentity,
  refusalMessage,
} from "./signing/identity";
import { inspectPeStream } from "./signing/pe";
import { type ByteSource, MalformedFile } from "./signing/source";
import { refuseUnsignedArchive, verifyVendorSignature } from "./vendor-signatures";

/**
 * Whether an upload asks to accept a refused signer (`allowSignerChange=true`), checked before any byte is stored:
 * an Administrator's decision (CONTRACT section 15); 403 from anyone else, whether or not the upload needs it.
 */
export function signerChangeAllowed(ctx: ServiceContext, requested: boolean): boolean {
  if (requested && !Roles.admin.some((role) => ctx.principal?.roles.includes(role)))
    throw new ApiError(
      403,
      "allowSignerChange=true is an Administrator's decision: accepting another signer is refused",
    );
  return requested;
}

/** The product's identities an upload is judged against (DownloadTarget carries them). */
export interface SigningKeys {
  productId: number;
  releaseId: number;
  windowsPublisherNames: string[] | null;
  macTeamIds: string[] | null;
  tauriPublicKey: string | null;
  sparklePublicKey: string | null;
}

/** The file the check reads. */
export interface SignedFile {
  platform: string;
  kind: string;
  fileName: string;
  signature?: string | null | undefined;
}

/** What the check found, as the artifact's record keeps it, and the accepted change of signer, if any. */
export interface SigningFindings {
  signer: string | null;
  teamId: string | null;
  signatureVerified: boolean | null;
  change?: SignerChange;
}

/**
 * Checks a staged upload; `allowSignerChange` (an Administrator's, checked by the route) accepts a signer that the
 * rule refuses and returns the change to record. Throws 400 for a file that is not what its name says, 409 with
 * `reason` signerChanged (`expected`, `found`), unsigned or signatureInvalid.
 */
export async function checkSigning(
  ctx: ServiceContext,
  keys: SigningKeys,
  file: SignedFile,
  source: ByteSource,
  allowSignerChange: boolean,
  streamed?: StreamedIdentity,
): Promise<SigningFindings> {
  const signatureVerified = await verifyVendorSignature(keys, file, () => source.stream());
  const kind = identityKindOf(file);
  if (!kind) return { signer: null, teamId: null, signatureVerified };
  const listed = (kind === "windows" ? keys.windowsPublisherNames : keys.macTeamIds) ?? [];
  const previous = listed.length > 0 ? null : await previousIdentity(ctx.db, keys, file.platform, kind);
  const identity = await inspected(file.fileName, listed.length > 0 || previous !== null, () =>
    streamed ? streamed.result() : readIdentity(file, source),
  );
  const findings: SigningFindings = {
    signer: identity?.kind === "windows" ? identity.found : null,
    teamId: identity?.kind === "mac" ? identity.found : null,
    signatureVerified,
  };
  const refusal = identity && judgeIdentity(identity, listed, previous);
  if (!identity || !refusal) return findings;
  if (!allowSignerChange)
    throw new ApiError(409, refusalMessage(file.fileName, identity.kind, refusal), {}, refusal.reason, {
      artifact: file.fileName,
      expected: refusal.expected,
      found: refusal.reason === "signerChanged" ? refusal.found : null,
      ...(refusal.entry ? { entry: refusal.entry } : {}),
    });
  return { ...findings, change: changeOf(ctx, file, refusal.expected, identity) };
}

function changeOf(ctx: ServiceContext, file: SignedFile, from: string[], identity: Identity): SignerChange {
  const by = ctx.principal?.userName ?? ctx.principal?.keyName ?? "an Administrator";
  return { platform: file.platform, fileName: file.fileName, from, to: identity.found, by, at: nowIso() };
}

/**
 * Runs an inspector, turning what it finds wrong into the answers of CONTRACT section 15. A file that is not what
 * its name says is refused (400) when its signer is judged (`judged`: the product names identities of its kind, or
 * the previous release was signed); otherwise it is stored as before the check existed, its signer unknown (null),
 * so placeholder builds of a product that never signed keep working. A signature over other bytes is always refused.
 */
async function inspected<T>(fileName: string, judged: boolean, inspect: () => Promise<T>): Promise<T | undefined> {
  try {
    return await inspect();
  } catch (e) {
    if (e instanceof MalformedFile) {
      if (!judged) return undefined;
      throw new ApiError(400, `${fileName} is not what its name says: ${e.message}. Refused; nothing was stored`);
    }
    if (e instanceof SignatureMismatch)
      throw new ApiError(
        409,
        `${fileName}: its signature is not over these bytes (${e.message}); Windows and macOS would refuse it. Refused; nothing was stored`,
        {},
        "signatureInvalid",
        { artifact: fileName },
      );
    throw e;
  }
}

/**
 * The identity of the product's newest public release (other than the one uploaded to) with a checked build for
 * the platform: null when that build was unsigned, or when there is none (artifacts added before the check existed,
 * or hosted ones, whose bytes the service never read, name no signer).
 */
async function previousIdentity(
  db: Db,
  keys: SigningKeys,
  platform: string,
  kind: IdentityKind,
): Promise<string | null> {
  const rows = await db
    .select({
      version: productReleases.version,
      fileName: releaseDownloads.fileName,
      signer: releaseDownloads.signer,
      teamId: releaseDownloads.teamId,
    })
    .from(releaseDownloads)
    .innerJoin(productReleases, eq(productReleases.id, releaseDownloads.releaseId))
    .where(
      and(
        eq(productReleases.productId, keys.productId),
        eq(productReleases.public, true),
        ne(productReleases.id, keys.releaseId),
        eq(releaseDownloads.platform, platform),
        ne(releaseDownloads.sourceKind, "url"),
      ),
    );
  const builds = rows.filter((r) => identityKindOf({ fileName: r.fileName, platform }) === kind);
  if (builds.length === 0) return null;
  const newest = builds.reduce((a, b) => (compareVersions(b.version, a.version) > 0 ? b : a)).version;
  const found = builds.filter((r) => r.version === newest).map((r) => (kind === "windows" ? r.signer : r.teamId));
  return found.find((f) => f !== null) ?? null;
}

/**
 * After the artifact's row is written: the accepted change goes on the release (appended in one statement, so
 * changes accepted at once all stay) and into the audit trail.
 */
export async function recordSignerChange(ctx: ServiceContext, releaseId: number, change: SignerChange): Promise<void> {
  await ctx.db
    .update(productReleases)
    .set({
      signerChanges: sql`json_insert(coalesce(${productReleases.signerChanges}, '[]'), '$[#]', json(${JSON.stringify(change)}))`,
    })
    .where(eq(productReleases.id, releaseId));
  ctx.log?.audit(
    "SignerChanged",
    `Release ${releaseId}: ${change.fileName} (${change.platform}) is signed by ${change.to ?? "nobody"} instead of ${change.from.join(" or ")}; accepted by ${change.by}`,
    ctx,
    { releaseId, ...change },
  );
}

/**
 * The staged bytes as the inspectors read them: `read(span)` answers a stream of the inclusive byte span (an R2
 * ranged get, or the D1 chunks that hold it).
 */
export function spanSource(
  size: number,
  read: (span?: { start: number; end: number }) => Promise<ReadableStream<Uint8Array> | undefined>,
): ByteSource {
  const stream = async (offset = 0, length = size - offset) => {
    const body = length > 0 ? await read({ start: offset, end: offset + length - 1 }) : undefined;
    if (!body) throw new Error("the staged artifact's bytes are missing");
    return body;
  };
  return {
    size,
    stream,
    read: async (offset, length) =>
      length === 0 ? new Uint8Array(0) : new Uint8Array(await new Response(await stream(offset, length)).arrayBuffer()),
  };
}

/** An `.exe`'s signer read while its bytes stream into storage: `feed` each piece, then `result`. */
export interface StreamedIdentity {
  feed(piece: Uint8Array): Promise<void>;
  result(): Promise<Identity>;
}

/**
 * For an `.exe`, the inspection that rides along the upload's own pass over the bytes (artifact-writer.ts
 * `observe`): the headers are kept, the image digest hashed as the bytes pass and the certificate table captured, so
 * no second read of the stored file is needed. Other files are read back by ranges (undefined here). A piece is fed
 * with backpressure until the inspector is done; once it has its answer (or has found the file malformed), later
 * pieces are not fed, and the answer waits for `result`.
 */
export function streamedIdentity(file: { fileName: string; platform: string }): StreamedIdentity | undefined {
  if (identityKindOf(file) !== "windows" || !file.fileName.toLowerCase().endsWith(".exe")) return undefined;
  const pipe = new TransformStream<Uint8Array, Uint8Array>();
  const writer = pipe.writable.getWriter();
  let done = false;
  const answer = inspectPeStream(pipe.readable, undefined, file.fileName).finally(() => {
    done = true;
  });
  const settled = answer.then(
    () => undefined,
    () => undefined,
  );
  return {
    feed: async (piece) => {
      if (!done) await Promise.race([writer.write(piece).catch(() => undefined), settled]);
    },
    result: async () => {
      if (!done) await Promise.race([writer.close().catch(() => undefined), settled]);
      const found = await answer;
      return { kind: "windows", found: found.signer, subject: found.subject };
    },
  };
}

/**
 * A PUT changing an artifact's signature, platform, kind or file name: the rules of an upload hold for the result.
 * An archive keeps a signature; a Tauri or Sparkle signature verifies over the stored bytes under the product's key;
 * and bytes relabelled onto another platform, or into a Windows or macOS build (`Setup.AppImage` renamed
 * `Setup.exe`), have their signer judged as an upload's (signer-check.ts), so a relabel never publishes a build the
 * upload would have refused. Hosted bytes are not the service's to read.
 */
export async function checkResigned(ctx: ServiceContext, values: Row, existing: Row): Promise<Row> {
  const fields = ["signature", "platform", "kind", "fileName"] as const;
  if (fields.every((name) => values[name] === undefined)) return values;
  const merged = { ...existing, ...values } as ReleaseDownloadRow;
  refuseUnsignedArchive(merged);
  if (merged.sourceKind === "url") return values;
  const stored = existing as ReleaseDownloadRow;
  const read = (span?: { start: number; end: number }) => readArtifact(ctx.env, ctx.db, stored, span);
  const keys = await signingKeysOf(ctx.db, merged.releaseId);
  const relabelled = merged.platform !== stored.platform || identityKindOf(merged) !== identityKindOf(stored);
  if (relabelled && identityKindOf(merged)) {
    const found = await checkSigning(ctx, keys, merged, spanSource(stored.size, read), false);
    return { ...values, signer: found.signer, teamId: found.teamId, signatureVerified: found.signatureVerified };
  }
  if (!merged.signature) return { ...values, signatureVerified: null };
  return { ...values, signatureVerified: await verifyVendorSignature(keys, merged, () => read()) };
}

/** The signing identities and keys of a release's product, as an upload to it is judged. */
async function signingKeysOf(db: Db, releaseId: number): Promise<SigningKeys> {
  const row = await db
    .select({
      productId: products.id,
      windowsPublisherNames: products.windowsPublisherNames,
      macTeamIds: products.macTeamIds,
      tauriPublicKey: products.tauriPublicKey,
      sparklePublicKey: products.sparklePublicKey,
    })
    .from(productReleases)
    .innerJoin(products, eq(products.id, productReleases.productId))
    .where(eq(productReleases.id, releaseId))
    .get();
  if (!row) throw notFound400("ProductRelease", releaseId);
  return { ...row, releaseId };
}
