/**
 * Client tokens (CONTRACT section 3): derived, not stored; an HMAC of the kind, license, machine and client keyed from
 * Application:EncryptionKey.
 */
import { BASE62, timingSafeEqualText } from "../kernel/crypto";
import { GrpcCode } from "../kernel/errors";
import { deriveKey, requireEncryptionKey } from "../kernel/secrets";
import type { Config } from "../kernel/config";
import { TOKEN_PREFIXES, TokenKind } from "../records/vocabulary";
import { Messages, fail } from "./license-lookup";

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

/**
 * 535 `The license token has been tampered` for an activation token of the service's shape (`actk_` and 24 base62
 * characters) that no token of the license holds and that is not the token the named machine and client derive: an
 * altered token. A token of another shape, or the machine's own whose activation is gone, is merely not found, and
 * the caller answers that (a token the license holds for another machine is the caller's to judge).
 */
export async function refuseTamperedToken(
  config: Config,
  licenseRowId: number,
  machineId: string,
  clientId: string,
  given: string,
): Promise<void> {
  if (!ACTIVATION_TOKEN.test(given)) return;
  const own = await clientToken(config, TokenKind.Activation, licenseRowId, machineId, clientId);
  if (!timingSafeEqualText(own, given)) throw fail(GrpcCode.DataLoss, Messages.tokenTampered);
}

/** An activation token as the service makes them (clientToken): the prefix and 24 base62 characters. */
const ACTIVATION_TOKEN = new RegExp(`^${TOKEN_PREFIXES[TokenKind.Activation]}[0-9A-Za-z]{24}$`);

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
