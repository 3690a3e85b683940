/**
 * The signing identity of an artifact and the rule it is judged by (CONTRACT section 15), shared by the service's
 * upload check (updates/signer-check.ts) and the publish CLI's dry run (tools/publish), so both name the same signer
 * and give the same verdict:
 *   - Windows (`.exe`, `.msi`, and every `.exe` inside a `.nupkg`): the Authenticode signer's subject common name;
 *   - macOS (a `.zip` of a `darwin-*` platform): the Team ID of the app's main executable.
 * Expected identities are the product's list when it has one, else the identity of the product's newest public
 * release for the platform when that one was signed; an unsigned build is refused wherever a signer is expected.
 */
import { inspectMacZip } from "./macos-zip.ts";
import { inspectMsi } from "./msi.ts";
import { inspectNupkg } from "./nupkg.ts";
import { inspectPe } from "./pe.ts";
import type { ByteSource } from "./source.ts";

/** Which list of the product an identity is judged against. */
export type IdentityKind = "windows" | "mac";

/** What an artifact's bytes say about its signer. */
export interface Identity {
  kind: IdentityKind;
  /** The signer (CN, Team ID) of the file, or of the first executable of a package; null when unsigned. */
  found: string | null;
  /** A Windows signer's full subject ("CN=…, O=…, C=…"), matched against names given as a distinguished name. */
  subject?: string | undefined;
  /** For a `.nupkg`: each `.exe` inside it with its signer (every one is judged). */
  parts?: { entry: string; found: string | null; subject?: string | undefined }[];
}

/** The extension of a file name, lowercase, with its dot (`.exe`), or "" without one. */
function extension(fileName: string): string {
  const dot = fileName.lastIndexOf(".");
  return dot <= 0 ? "" : fileName.slice(dot).toLowerCase();
}

/** Whether the signer of this file is read at upload (its name says it is a Windows or macOS build). */
export function identityKindOf(file: { fileName: string; platform: string }): IdentityKind | undefined {
  const ext = extension(file.fileName);
  if (ext === ".exe" || ext === ".msi" || ext === ".nupkg") return "windows";
  if (ext === ".zip" && file.platform.startsWith("darwin-")) return "mac";
  return undefined;
}

/**
 * Reads the signer of a Windows or macOS build from its bytes; undefined for files that carry none (a blockmap, a
 * Linux package, a Tauri archive) and for a `.nupkg` without executables. Throws MalformedFile (400) when the file
 * is not what its name says, SignatureMismatch (409) when its signature is not over its bytes.
 */
export async function readIdentity(
  file: { fileName: string; platform: string },
  source: ByteSource,
): Promise<Identity | undefined> {
  const kind = identityKindOf(file);
  if (kind === "mac") return { kind, found: (await inspectMacZip(source)).teamId };
  if (kind !== "windows") return undefined;
  const ext = extension(file.fileName);
  if (ext === ".exe" || ext === ".msi") {
    const found = ext === ".exe" ? await inspectPe(source, file.fileName) : await inspectMsi(source);
    return { kind, found: found.signer, subject: found.subject };
  }
  const parts = (await inspectNupkg(source)).map((p: { entry: string; signer: string | null; subject?: string }) => ({
    entry: p.entry,
    found: p.signer,
    subject: p.subject,
  }));
  if (parts.length === 0) return undefined;
  return { kind, found: parts[0]!.found, parts };
}

/** Why an identity is refused: CONTRACT's reasons, with what was expected and found. */
export type IdentityRefusal =
  | { reason: "signerChanged"; expected: string[]; found: string; entry?: string }
  | { reason: "unsigned"; expected: string[]; entry?: string };

/**
 * The verdict on an identity: undefined when accepted, else the refusal. `listed` is the product's list for the
 * kind (empty or null: none), `previous` the signer of the newest public release for the platform (null: unsigned
 * or none). Names are compared exactly, as electron-updater compares publisherName with the certificate's CN.
 */
export function judgeIdentity(
  identity: Identity,
  listed: readonly string[] | null | undefined,
  previous: string | null | undefined,
): IdentityRefusal | undefined {
  const expected = listed && listed.length > 0 ? [...listed] : previous ? [previous] : [];
  if (expected.length === 0) return undefined;
  const parts = identity.parts ?? [{ entry: undefined, found: identity.found, subject: identity.subject }];
  for (const part of parts) {
    const entry = part.entry !== undefined ? { entry: part.entry } : {};
    if (part.found === null) return { reason: "unsigned", expected, ...entry };
    if (!expected.some((name) => nameMatches(name, part.found!, part.subject)))
      return { reason: "signerChanged", expected, found: part.found, ...entry };
  }
  return undefined;
}

/**
 * Whether an expected name matches a signer as electron-updater's publisherName check does: a distinguished name
 * ("CN=Studio Ltd, O=Studio Ltd, C=NO") matches when each of its attributes equals the subject's, a plain name when it
 * equals the common name (or the Team ID).
 */
function nameMatches(name: string, found: string, subject: string | undefined): boolean {
  const wanted = parseDn(name);
  if (wanted.size === 0) return name === found;
  const actual = parseDn(subject ?? `CN=${found}`);
  return [...wanted].every(([key, value]) => actual.get(key) === value);
}

/**
 * The attributes of a distinguished name as builder-util-runtime's parseDn reads them (RFC 2253 with Windows'
 * `, ` separators and "quoted" values): an empty map for a plain name without `=`.
 */
export function parseDn(text: string): Map<string, string> {
  const result = new Map<string, string>();
  let key: string | null = null;
  let token = "";
  let quoted = false;
  const flush = () => {
    if (key !== null) result.set(key.trim(), token.trim());
    key = null;
    token = "";
  };
  for (const ch of text.trim()) {
    if (ch === '"') quoted = !quoted;
    else if (quoted) token += ch;
    else if (ch === "=" && key === null) {
      key = token;
      token = "";
    } else if (ch === "," || ch === ";" || ch === "+") flush();
    else token += ch;
  }
  flush();
  return result;
}

/** The refusal in words, naming the file (and the executable inside a package). */
export function refusalMessage(fileName: string, kind: IdentityKind, refusal: IdentityRefusal): string {
  const what = refusal.entry ? `${fileName} (${refusal.entry})` : fileName;
  const noun = kind === "windows" ? "Authenticode signer" : "Apple Team ID";
  const expected = refusal.expected.map((e) => `"${e}"`).join(" or ");
  const consequence =
    kind === "windows"
      ? "electron-updater refuses to install an update whose publisher changed, so this release would strand every install"
      : "macOS refuses to update an app signed by another team in place";
  if (refusal.reason === "unsigned")
    return `${what} is not signed, and its ${noun} must be ${expected}: ${consequence}. Refused; nothing was stored`;
  return `${what}: its ${noun} is "${refusal.found}", expected ${expected}: ${consequence}. Refused; nothing was stored (an Administrator may send allowSignerChange=true for a deliberate change)`;
}
