/**
 * Client tokens (CONTRACT section 3): derived, not stored; an HMAC of the kind, license, machine and client keyed from
 * Application:EncryptionKey.
 */
import { BASE62 } from "../kernel/crypto";
import { deriveKey, requireEncryptionKey } from "../kernel/secrets";
import type { Config } from "../kernel/config";
import { TOKEN_PREFIXES, type TokenKind } from "../records/vocabulary";

/**
 * What a client token's HMAC covers, one text per (kind, license, machine, client). Ids without a line feed keep the
 * original `kind\nlicense\nmachine\nclient` form (exactly three line feeds, so it reads back one way), which keeps
 * the tokens of existing activations; an id holding a line feed would make that form ambiguous (machine `a\nb` with
 * client `c` against machine `a` with client `b\nc`), so such ids are written as a JSON array, which never starts
 * with a digit as the original form does.
 */
function clientTokenInput(kind: TokenKind, licenseRowId: number, machineId: string, clientId: string): string {
  if (!machineId.includes("\n") && !clientId.includes("\n"))
    return `${kind}\n${licenseRowId}\n${machineId}\n${clientId}`;
  return JSON.stringify([kind, licenseRowId, machineId, clientId]);
}

/** The token of a (license, machine, client) for a kind: derived, so a repeat request gets the same token. */
export async function clientToken(
  config: Config,
  kind: TokenKind,
  licenseRowId: number,
  machineId: string,
  clientId: string,
): Promise<string> {
  const key = await deriveKey(
    requireEncryptionKey(config["Application:EncryptionKey"], "client tokens"),
    "licensing/client-token/v1",
    { name: "HMAC", hash: "SHA-256", length: 256 },
    ["sign"],
  );
  const mac = new Uint8Array(
    await crypto.subtle.sign(
      "HMAC",
      key,
      new TextEncoder().encode(clientTokenInput(kind, licenseRowId, machineId, clientId)),
    ),
  );
  const body = [...mac.slice(0, 24)].map((b) => BASE62[b % 62]).join("");
  return `${TOKEN_PREFIXES[kind]}${body}`;
}
