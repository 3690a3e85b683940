/**
 * The identities a product's builds are signed with (CONTRACT section 15), set from the publish configuration:
 * `--windows-publisher-name`, `--mac-team-id`, `--tauri-public-key` (electron-builder's publish entry:
 * windowsPublisherNames, macTeamIds, tauriPublicKey). Each value is checked here as the service checks it, before
 * anything is read or sent; publish.ts sets on the product what differs from what it has, before the first upload,
 * so the service judges the run's own uploads against them.
 */
import { readFileSync } from "node:fs";
import { tauriPublicKeyProblem } from "./signing/minisign.ts";

/** The product's identity fields a publication sets; each one left out is left as the product has it. */
export interface SigningIdentities {
  /** Subject common names (CN) of the Authenticode certificates, as electron-builder's publisherName. */
  windowsPublisherNames?: string[];
  /** Apple Team IDs (10 capital letters and digits). */
  macTeamIds?: string[];
  /** tauri.conf.json's `pubkey` (base64 of the minisign public key file). */
  tauriPublicKey?: string;
}

/** The product's fields as GET /v1/products answers them. */
export type ProductIdentities = {
  [K in keyof SigningIdentities]?: SigningIdentities[K] | null;
};

/** The service's limits (src/records/products.ts). */
const MAX_NAMES = 20;
const MAX_NAME = 256;
const TEAM_ID = /^[A-Z0-9]{10}$/;

/** The list without blanks around its items and without repeats; refused when empty or too long. */
function list(values: readonly string[] | string, what: string): string[] {
  // A configuration file may give one value without a list (YAML: `macTeamIds: 7Z6EMTD2C6`), or a number.
  const given: unknown[] = Array.isArray(values) ? values : [values];
  const items = [...new Set(given.map((v) => String(v).trim()))];
  if (items.length === 0) throw new Error(`${what}: give at least one, or leave it out`);
  if (items.length > MAX_NAMES) throw new Error(`${what}: at most ${MAX_NAMES}, not ${items.length}`);
  return items;
}

/** `--windows-publisher-name NAME` (repeatable): the certificate's subject CN, as electron-builder's publisherName. */
export function parsePublisherNames(values: readonly string[] | string, what = "--windows-publisher-name"): string[] {
  const names = list(values, what);
  for (const name of names)
    if (name === "" || name.length > MAX_NAME)
      throw new Error(
        `${what} ${JSON.stringify(name)}: the certificate's subject common name (CN=…), 1 to ${MAX_NAME} characters`,
      );
  return names;
}

/** `--mac-team-id ID` (repeatable): an Apple Team ID, 10 capital letters and digits. */
export function parseTeamIds(values: readonly string[] | string, what = "--mac-team-id"): string[] {
  const ids = list(values, what);
  for (const id of ids)
    if (!TEAM_ID.test(id))
      throw new Error(
        `${what} ${JSON.stringify(id)} is not an Apple Team ID: 10 capital letters and digits, as \`codesign -dv\` prints TeamIdentifier= (e.g. 7Z6EMTD2C6)`,
      );
  return ids;
}

/**
 * `--tauri-public-key KEY`: tauri.conf.json's `pubkey`, or a file holding it (the `.key.pub` that `tauri signer
 * generate` writes beside the private key).
 */
export function readTauriPublicKey(value: string, what = "--tauri-public-key"): string {
  const key = value.trim();
  const problem = tauriPublicKeyProblem(key);
  if (!problem) return key;
  let text: string;
  try {
    text = readFileSync(value, "utf8");
  } catch (e) {
    throw new Error(
      `${what}: neither Tauri's public key (tauri.conf.json's pubkey: ${problem}) nor a file holding it (${e instanceof Error ? e.message : String(e)})`,
    );
  }
  const fromFile = text.replace(/^\uFEFF/, "").trim();
  const fileProblem = tauriPublicKeyProblem(fromFile);
  if (fileProblem) throw new Error(`${what} ${value}: ${fileProblem}`);
  return fromFile;
}

/**
 * Checks identities given by a program rather than the command line (publish() and plan() call it first), as the
 * command line's are checked (a Tauri key may be a file's path, a list a single value). Answers them cleaned (trimmed,
 * no repeats).
 */
export function checkIdentities(identities: SigningIdentities | undefined): SigningIdentities | undefined {
  if (!identities) return undefined;
  const { windowsPublisherNames, macTeamIds, tauriPublicKey } = identities;
  return {
    ...(windowsPublisherNames
      ? { windowsPublisherNames: parsePublisherNames(windowsPublisherNames, "windowsPublisherNames") }
      : {}),
    ...(macTeamIds ? { macTeamIds: parseTeamIds(macTeamIds, "macTeamIds") } : {}),
    ...(tauriPublicKey !== undefined ? { tauriPublicKey: readTauriPublicKey(tauriPublicKey, "tauriPublicKey") } : {}),
  };
}

/** Lists compare as sets: the service judges a build against any of them, in any order. */
const sameList = (a: readonly string[], b: readonly string[]) =>
  a.length === b.length && [...a].sort().join("\n") === [...b].sort().join("\n");

/** The fields to send: those given whose value differs from the product's (`product` as GET answers it). */
export function identityChanges(given: SigningIdentities | undefined, product: ProductIdentities): SigningIdentities {
  const changes: SigningIdentities = {};
  if (given?.windowsPublisherNames && !sameList(given.windowsPublisherNames, product.windowsPublisherNames ?? []))
    changes.windowsPublisherNames = given.windowsPublisherNames;
  if (given?.macTeamIds && !sameList(given.macTeamIds, product.macTeamIds ?? [])) changes.macTeamIds = given.macTeamIds;
  if (given?.tauriPublicKey !== undefined && given.tauriPublicKey !== product.tauriPublicKey)
    changes.tauriPublicKey = given.tauriPublicKey;
  return changes;
}

/** The key's untrusted comment (`minisign public key: 1F2E…`, which names its key id), for the log. */
function keyComment(key: string): string {
  try {
    const comment = atob(key)
      .split("\n")[0]
      ?.replace(/^untrusted comment:\s*/, "")
      .trim();
    return comment ? ` (${comment})` : "";
  } catch {
    return "";
  }
}

/** The fields as words: `Windows publishers "Studio Software Ltd"; Team IDs 7Z6EMTD2C6; Tauri public key (…)`. */
export function describeIdentities(fields: SigningIdentities): string {
  const words: string[] = [];
  if (fields.windowsPublisherNames)
    words.push(`Windows publishers ${fields.windowsPublisherNames.map((n) => JSON.stringify(n)).join(", ")}`);
  if (fields.macTeamIds) words.push(`Team IDs ${fields.macTeamIds.join(", ")}`);
  if (fields.tauriPublicKey !== undefined) words.push(`Tauri public key${keyComment(fields.tauriPublicKey)}`);
  return words.join("; ");
}

/** Whether anything is given. */
export const givesIdentities = (identities: SigningIdentities | undefined): identities is SigningIdentities =>
  identities !== undefined && Object.values(identities).some((v) => v !== undefined);

/** The call the identities need (api.ts ManagementApi). */
interface Caller {
  call<T = Record<string, unknown>>(method: string, path: string, body?: unknown): Promise<T>;
}

/**
 * Sets on the product what `identities` gives and it does not have yet, in one PUT /v1/products (none when it has it
 * all, so a second run changes nothing), before the first upload: the service judges this run's builds by them.
 * `product` is the product as GET /v1/products answered it. Answers the names of the fields set.
 */
export async function applyIdentities(
  api: Caller,
  product: ProductIdentities & { id: number },
  identities: SigningIdentities | undefined,
  log: (line: string) => void,
): Promise<string[]> {
  if (!givesIdentities(identities)) return [];
  const changes = identityChanges(identities, product);
  if (Object.keys(changes).length === 0) {
    log("  signing identities: the product has them already");
    return [];
  }
  await api.call("PUT", "/v1/products", { product: { id: product.id, ...changes } });
  log(`  signing identities set on the product: ${describeIdentities(changes)}`);
  return Object.keys(changes);
}
