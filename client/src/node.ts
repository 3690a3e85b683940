/**
 * `@licensing/client/node`: helpers that need Node (Electron's main process, Node services), kept out of the main
 * entry so browser and renderer bundles never see them.
 */
import { mkdir, readFile, rename, writeFile } from "node:fs/promises";
import * as tls from "node:tls";
import * as imported from "node-machine-id";
import { Agent } from "undici";
import type { LicensingClientOptions } from "./client.js";
import type { ValidationStore } from "./grace.js";
import type { FetchFunction } from "./transport.js";

// node-machine-id is a webpack-built CommonJS module: Node's ES module loader sees only its `default` export, a
// CommonJS require sees the functions themselves.
const nodeMachineId: typeof imported =
  typeof imported.machineId === "function" ? imported : (imported as unknown as { default: typeof imported }).default;

/**
 * A stable id of this machine for `activate({ machineId })`: the operating system's installation id (Windows
 * MachineGuid, macOS IOPlatformUUID, Linux /etc/machine-id, read by node-machine-id, no admin rights needed),
 * hashed with SHA-256 so the raw id never leaves the machine. Pass `salt` (your product code, say) to get an id
 * that other vendors' applications cannot correlate with theirs. 64 lowercase hex characters.
 */
export async function machineId(options: { salt?: string } = {}): Promise<string> {
  if (options.salt === undefined) return nodeMachineId.machineId();
  const raw = await nodeMachineId.machineId(true);
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(`${options.salt}:${raw}`));
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

/** What {@link trustingFetch} trusts besides the usual authorities. */
export interface TrustOptions {
  /**
   * Certificates (PEM text) to trust besides Node's default authorities: a self-signed service certificate, or the
   * certificate of a private authority that issued it. Read the file yourself: `readFileSync("ca.pem", "utf8")`.
   */
  ca: string | readonly string[];
}

/**
 * A `fetch` for {@link LicensingClientOptions.fetch} that also trusts `ca`, for a service behind a private or
 * self-signed certificate: `new LicensingClient({ baseUrl, fetch: trustingFetch({ ca }) })`. Node's fetch with an
 * undici Agent whose TLS roots are Node's defaults (NODE_EXTRA_CA_CERTS included) plus `ca`; certificates are still
 * verified, host names too. `close()` ends its connections.
 */
export function trustingFetch(options: TrustOptions): FetchFunction & { close(): Promise<void> } {
  const extra = typeof options.ca === "string" ? [options.ca] : [...options.ca];
  if (extra.length === 0 || extra.some((pem) => !pem.includes("-----BEGIN CERTIFICATE-----")))
    throw new TypeError("trustingFetch: ca must be PEM certificates (-----BEGIN CERTIFICATE-----)");
  const defaults =
    typeof tls.getCACertificates === "function" ? tls.getCACertificates("default") : [...tls.rootCertificates];
  const dispatcher = new Agent({ connect: { ca: [...defaults, ...extra] } });
  const trusting = (input: Parameters<FetchFunction>[0], init?: Parameters<FetchFunction>[1]) =>
    globalThis.fetch(input, { ...init, dispatcher } as RequestInit);
  return Object.assign(trusting, { close: () => dispatcher.close() });
}

/** The file {@link installId} keeps the id in, inside the directory it is given. */
export const INSTALL_ID_FILE = "licensing-install-id";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

/**
 * This installation's id for release rollouts (`X-Service-Install-Id`): a random UUID generated on first use and kept
 * in `directory`/licensing-install-id (pass Electron's `app.getPath("userData")`), so the service admits the same
 * install to the same rollouts on every poll and after restarts. It is random, not derived from the machine: it
 * identifies nothing outside this service, and a new one comes with a fresh user-data directory (a reinstall that
 * wipes it), as electron-updater's own staging id does. A file that does not hold a UUID is replaced.
 */
export async function installId(directory: string): Promise<string> {
  // A forward slash joins paths on Windows too.
  const file = `${directory.replace(/[\\/]+$/, "")}/${INSTALL_ID_FILE}`;
  const kept = await readId(file);
  if (kept) return kept;
  await mkdir(directory, { recursive: true });
  const id = crypto.randomUUID();
  try {
    // Exclusive create: of two processes starting at once, one id wins and both return it.
    await writeFile(file, `${id}\n`, { flag: "wx" });
    return id;
  } catch (error) {
    if ((error as { code?: string }).code !== "EEXIST") throw error;
  }
  const other = await readId(file);
  if (other) return other;
  await writeFile(file, `${id}\n`); // the file held something else: replace it
  return id;
}

async function readId(file: string): Promise<string | undefined> {
  try {
    const text = (await readFile(file, "utf8")).trim();
    return UUID.test(text) ? text : undefined;
  } catch (error) {
    if ((error as { code?: string }).code === "ENOENT") return undefined;
    throw error;
  }
}

/** The file {@link fileStore} keeps the last validation in, inside the directory it is given. */
export const VALIDATION_FILE = "licensing-validation.json";

/**
 * A {@link ValidationStore} for `OfflineGrace`: the file `directory`/licensing-validation.json (pass Electron's
 * `app.getPath("userData")`), written whole to a temporary file and renamed over the old one, so a crash never leaves
 * half a file.
 */
export function fileStore(directory: string): ValidationStore {
  const dir = directory.replace(/[\\/]+$/, "");
  const file = `${dir}/${VALIDATION_FILE}`;
  return {
    async read() {
      try {
        return await readFile(file, "utf8");
      } catch (error) {
        if ((error as { code?: string }).code === "ENOENT") return undefined;
        throw error;
      }
    },
    async write(text) {
      await mkdir(dir, { recursive: true });
      const temporary = `${file}.${crypto.randomUUID()}.tmp`;
      await writeFile(temporary, text);
      await rename(temporary, file);
    },
  };
}

export {
  MAX_KEPT_SESSIONS,
  type ProcessEvents,
  SESSIONS_FILE,
  type SessionRecord,
  type SessionStatus,
  type SessionTracker,
  type SessionTrackingOptions,
  trackSessions,
} from "./sessions.js";
