/**
 * `@licensing/client/node`: helpers that need Node (Electron's main process, Node services), kept out of the main
 * entry so browser and renderer bundles never see them.
 */
import * as imported from "node-machine-id";

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
