/**
 * The Authenticode signers inside a Squirrel/Velopack `.nupkg` (CONTRACT section 15): the package is a zip whose
 * executables are what an update installs, so each `.exe` in it must keep the product's publisher. Each one is
 * inflated as a stream and read forward-only (pe.ts), never held whole.
 */
import { inspectPeStream } from "./pe.ts";
import type { ByteSource } from "./source.ts";
import { entryStream, zipEntries } from "./zip.ts";

/**
 * Every `.exe` of the package (by name, case-insensitive), in archive order, with its signer (null: unsigned); an
 * empty list when there is none. Throws MalformedFile for a broken archive or executable, SignatureMismatch for an
 * executable changed after signing.
 */
export async function inspectNupkg(source: ByteSource): Promise<{ entry: string; signer: string | null }[]> {
  const found: { entry: string; signer: string | null }[] = [];
  for (const entry of await zipEntries(source)) {
    if (!entry.name.toLowerCase().endsWith(".exe")) continue;
    const signature = await inspectPeStream(await entryStream(source, entry), entry.size, entry.name);
    found.push({ entry: entry.name, signer: signature.signer });
  }
  return found;
}
