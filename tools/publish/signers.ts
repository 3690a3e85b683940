/**
 * What the dry run says of each file's signer (CONTRACT section 15), with the service's own inspectors (signing/ is
 * src/updates/signing, compiled into this package), so it names the signer the service will find: the Authenticode
 * signer of a Windows build, the Team ID of a macOS app zip, whether a Tauri `.sig` verifies. With an API key it reads
 * the product's identities and the previous public release's signer (GETs only: the dry run changes nothing) and
 * gives the service's verdict by the same rule (judgeIdentity); without one it says the verdict needs them. Identities
 * given on the command line (identities.ts) take the place of the product's: they will be its own by the time the
 * upload happens, so they give a verdict without the service too.
 */
import { createReadStream } from "node:fs";
import { open } from "node:fs/promises";
import { Readable } from "node:stream";
import { type ConnectionOptions, ConnectionFailure, ManagementApi, type RemoteDownload } from "./api.ts";
import type { Artifact } from "./dist.ts";
import type { SigningIdentities } from "./identities.ts";
import { compareSemver } from "./read-kit.ts";
import {
  type Identity,
  type IdentityKind,
  identityKindOf,
  judgeIdentity,
  readIdentity,
  refusalMessage,
} from "./signing/identity.ts";
import { isTauriSignature, verifyTauriSignature } from "./signing/minisign.ts";
import { SignatureMismatch } from "./signing/mismatch.ts";
import { type ByteSource, MalformedFile } from "./signing/source.ts";

/** What the dry run found of a file's signing, as `--json` reports it. */
export interface SigningReport {
  /** The Authenticode signer's subject CN (Windows); null: unsigned. */
  signer?: string | null;
  /** The Apple Team ID of the app (macOS); null: unsigned. */
  teamId?: string | null;
  /** Why the file is not what its name says (the service answers 400 when it checks its signer). */
  malformed?: string;
  /** Whether its Tauri signature verifies with the product's tauriPublicKey. */
  signatureVerified?: boolean;
  /** The service's verdict, when the product's identities are known (or the file is refused whatever they are). */
  verdict?: { accepted: true } | { accepted: false; reason: string; message: string };
  /** What the report says, in words: `signed by X; the service will accept it`. */
  text: string;
}

/** A local file as the inspectors read it: ranges by FileHandle.read, spans as a web stream of the file. */
export async function fileSource(path: string): Promise<ByteSource & { close(): Promise<void> }> {
  const handle = await open(path, "r");
  const { size } = await handle.stat();
  return {
    size,
    async read(offset, length) {
      const bytes = new Uint8Array(length);
      for (let done = 0; done < length; ) {
        const { bytesRead } = await handle.read(bytes, done, length - done, offset + done);
        if (bytesRead === 0) throw new MalformedFile(`the file ends at byte ${offset + done} of ${size}`);
        done += bytesRead;
      }
      return bytes;
    },
    async stream(offset = 0, length = size - offset) {
      if (length <= 0) return new ReadableStream<Uint8Array>({ start: (controller) => controller.close() });
      const bytes = createReadStream(path, { start: offset, end: offset + length - 1 });
      return Readable.toWeb(bytes) as unknown as ReadableStream<Uint8Array>;
    },
    close: () => handle.close(),
  };
}

/** The product's identities, as the service judges an upload against them. */
interface Identities {
  id: number;
  windowsPublisherNames?: string[] | null;
  macTeamIds?: string[] | null;
  tauriPublicKey?: string | null;
}

/** What the dry run asks the service, once per product and per platform's previous release. */
export interface SigningLookup {
  /** The product's identities, or why they are unknown. */
  product: Identities | { unknown: string };
  /** The identity of the newest public release's build of the platform (other than `version`); null: none. */
  previous(platform: string, kind: IdentityKind): Promise<string | null>;
  /** The identities the run sets on the product before uploading: they take the place of the product's. */
  given?: SigningIdentities | undefined;
}

const NEEDS_KEY = "set LICENSING_API_KEY to ask the service (read only)";

/**
 * The lookup of the product's identities (GETs only, one attempt each: a dry run does not wait for an unreachable
 * service); without an API key, the identities are unknown and the service is not contacted.
 */
export async function signingLookup(
  options: { url: string; apiKey: string; product: string; identities?: SigningIdentities } & ConnectionOptions,
  version: string,
): Promise<SigningLookup & { close(): Promise<void> }> {
  const given = options.identities;
  const none = { previous: async () => null, close: async () => undefined, given };
  if (!options.apiKey) return { product: { unknown: NEEDS_KEY }, ...none };
  const api = new ManagementApi(options.url, options.apiKey, () => undefined, { ...options, attempts: 1 });
  let product: Identities | undefined;
  let releases: { id: number; version: string }[] = [];
  try {
    const filter = encodeURIComponent(`code == ${JSON.stringify(options.product)}`);
    const select = "id,windowsPublisherNames,macTeamIds,tauriPublicKey";
    product = (await api.call<{ products: Identities[] }>("GET", `/v1/products?filter=${filter}&select=${select}`))
      .products[0];
    if (product) releases = await publicReleases(api, product.id, version);
  } catch (e) {
    await api.close();
    const why = e instanceof ConnectionFailure ? e.reason : e instanceof Error ? e.message : String(e);
    return { product: { unknown: `the service did not answer: ${why}` }, ...none };
  }
  if (!product) {
    await api.close();
    return { product: { unknown: `product ${options.product} is not on the service yet` }, ...none };
  }
  const found = product;
  const seen = new Map<string, Promise<string | null>>();
  return {
    product,
    given,
    previous: (platform, kind) => {
      const key = `${platform} ${kind}`;
      if (!seen.has(key)) seen.set(key, previousIdentity(api, found.id, releases, platform, kind));
      return seen.get(key)!;
    },
    close: () => api.close(),
  };
}

/** The product's public releases other than `version`, newest version first. */
async function publicReleases(api: ManagementApi, product: number, version: string) {
  const filter = encodeURIComponent("public == true");
  const { productReleases } = await api.call<{ productReleases: { id: number; version: string }[] }>(
    "GET",
    `/v1/products/${product}/releases?filter=${filter}&select=id,version&take=1000`,
  );
  return productReleases.filter((r) => r.version !== version).sort((a, b) => compareSemver(b.version, a.version));
}

/**
 * As the service finds it (updates/signer-check.ts previousIdentity): the newest public release with an uploaded
 * build of the platform whose signer is read; its signer (or Team ID), null when that build was unsigned or there is
 * none. Hosted artifacts name no signer: the service never read their bytes.
 */
async function previousIdentity(
  api: ManagementApi,
  product: number,
  releases: { id: number }[],
  platform: string,
  kind: IdentityKind,
): Promise<string | null> {
  const filter = encodeURIComponent(`platform == ${JSON.stringify(platform)}`);
  for (const release of releases) {
    const { releaseDownloads } = await api.call<{ releaseDownloads: RemoteDownload[] }>(
      "GET",
      `/v1/products/${product}/releases/${release.id}/downloads?filter=${filter}&take=1000`,
    );
    const builds = releaseDownloads.filter((d) => d.sourceKind !== "url" && identityKindOf(d) === kind);
    if (builds.length === 0) continue;
    const found = builds.map((d) => (kind === "windows" ? d.signer : d.teamId) ?? null);
    return found.find((f) => f !== null) ?? null;
  }
  return null;
}

/** What a name says the file is, for `not a PE: …`. */
function expectedForm(fileName: string): string {
  const ext = fileName.slice(fileName.lastIndexOf(".")).toLowerCase();
  return ext === ".exe" ? "a PE" : ext === ".msi" ? "an MSI" : ext === ".nupkg" ? "a NuGet package" : "an app zip";
}

/** The signer in words: `signed by X`, `Team ID X`, `unsigned`; each executable of a package when they differ. */
function describe(identity: Identity): string {
  const one = (found: string | null) =>
    found === null ? "unsigned" : identity.kind === "windows" ? `signed by ${found}` : `Team ID ${found}`;
  const parts = identity.parts ?? [];
  if (new Set(parts.map((p) => p.found)).size > 1) return parts.map((p) => `${p.entry} ${one(p.found)}`).join(", ");
  return one(identity.found);
}

/** A check's result before it is put in words: what was found, and the verdict when it is known. */
type Finding = Omit<SigningReport, "text"> & { found: string };

/** The verdict in words: accepted, refused with the service's message, or unknown without the product. */
function verdictText(verdict: SigningReport["verdict"], unknown: string): string {
  if (!verdict) return `the verdict needs the product's identities: ${unknown}`;
  if (verdict.accepted) return "the service will accept it";
  return `the service will refuse it${verdict.reason === "malformed" ? " (400)" : ""}: ${verdict.message}`;
}

/** The service's verdict on a Windows or macOS build, by the rule it applies at upload. */
async function identityFinding(artifact: Artifact, source: ByteSource, lookup: SigningLookup): Promise<Finding> {
  const kind = identityKindOf(artifact)!;
  const known = "unknown" in lookup.product ? undefined : lookup.product;
  const given = kind === "windows" ? lookup.given?.windowsPublisherNames : lookup.given?.macTeamIds;
  const listed = given ?? (kind === "windows" ? known?.windowsPublisherNames : known?.macTeamIds) ?? [];
  const previous = known && listed.length === 0 ? await lookup.previous(artifact.platform, kind) : null;
  // The verdict is known with the product, or without it when the run names the identities to expect.
  const product = known ?? (listed.length > 0 ? {} : undefined);
  let identity: Identity | undefined;
  try {
    identity = await readIdentity(artifact, source);
  } catch (e) {
    if (e instanceof SignatureMismatch) {
      const message = `its signature is not over these bytes (${e.message})`;
      return { found: "signature invalid", verdict: { accepted: false, reason: "signatureInvalid", message } };
    }
    if (!(e instanceof MalformedFile)) throw e;
    // The inspectors' messages often say it already ("… is not a PE file: no MZ header").
    const found = /\bnot an? /.test(e.message) ? e.message : `not ${expectedForm(artifact.fileName)}: ${e.message}`;
    if (!product) return { found, malformed: e.message };
    // Stored unread when nothing names a signer to expect (a placeholder build of a product that never signed).
    if (listed.length === 0 && previous === null) return { found, malformed: e.message, verdict: { accepted: true } };
    const message = `${artifact.fileName} is not what its name says: ${e.message}`;
    return { found, malformed: e.message, verdict: { accepted: false, reason: "malformed", message } };
  }
  if (!identity) return { found: "no executable to sign inside", verdict: { accepted: true } };
  const found = {
    found: describe(identity),
    ...(kind === "windows" ? { signer: identity.found } : { teamId: identity.found }),
  };
  if (!product) return found;
  const refusal = judgeIdentity(identity, listed, previous);
  if (!refusal) return { ...found, verdict: { accepted: true } };
  const message = refusalMessage(artifact.fileName, kind, refusal);
  return { ...found, verdict: { accepted: false, reason: refusal.reason, message } };
}

/** Whether the Tauri `.sig` verifies with the product's key, as the service checks it at upload. */
async function tauriFinding(artifact: Artifact, source: ByteSource, key: string): Promise<Finding> {
  const verdict = await verifyTauriSignature(key, artifact.signature!, await source.stream());
  if (verdict.ok) return { found: "Tauri signature verified", signatureVerified: true, verdict: { accepted: true } };
  return {
    found: `Tauri signature does not verify with the product's key: ${verdict.message}`,
    signatureVerified: false,
    verdict: {
      accepted: false,
      reason: verdict.reason === "malformed" ? "malformed" : "signatureInvalid",
      message: verdict.message,
    },
  };
}

/**
 * The signing report of one file: its signer (Windows, macOS) or its Tauri signature checked with the product's
 * key; undefined for a file whose signing the service does not check.
 */
export async function signingReport(artifact: Artifact, lookup: SigningLookup): Promise<SigningReport | undefined> {
  const product = lookup.product;
  const tauriKey = lookup.given?.tauriPublicKey ?? ("unknown" in product ? undefined : product.tauriPublicKey);
  const tauri = tauriKey && artifact.signature !== undefined && isTauriSignature(artifact.signature);
  if (!identityKindOf(artifact) && !tauri) return undefined;
  const source = await fileSource(artifact.path);
  try {
    const findings = [
      ...(identityKindOf(artifact) ? [await identityFinding(artifact, source, lookup)] : []),
      ...(tauri ? [await tauriFinding(artifact, source, tauriKey)] : []),
    ];
    // A Tauri installer (an .exe with its .sig) is refused when either check refuses it.
    const refused = findings.find((f) => f.verdict?.accepted === false)?.verdict;
    const verdict = refused ?? (findings.every((f) => f.verdict) ? findings[0]!.verdict : undefined);
    const { found, verdict: _, ...fields } = Object.assign({}, ...findings) as Finding;
    const unknown = "unknown" in product ? product.unknown : "";
    const text = `${findings.map((f) => f.found).join("; ")}; ${verdictText(verdict, unknown)}`;
    return { ...fields, ...(verdict ? { verdict } : {}), text };
  } finally {
    await source.close();
  }
}

/**
 * What a real publish prints before it uploads a Windows or macOS build: its signer as the service will read it
 * ("signed by Studio Software Ltd", "Team ID 7Z6EMTD2C6", "unsigned", "not a PE file: …"); undefined for other files.
 * The verdict is the service's to give (a 409 names the expected signer); the dry run predicts it.
 */
export async function signerBeforeUpload(artifact: Artifact): Promise<string | undefined> {
  if (!identityKindOf(artifact)) return undefined;
  const source = await fileSource(artifact.path);
  try {
    const identity = await readIdentity(artifact, source);
    return identity ? describe(identity) : "no executable to sign inside";
  } catch (e) {
    if (e instanceof SignatureMismatch) return `signature invalid: ${e.message}`;
    if (e instanceof MalformedFile) return e.message;
    throw e;
  } finally {
    await source.close();
  }
}
