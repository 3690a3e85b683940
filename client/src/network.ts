/**
 * Why a request never got an answer, in words: the platform's fetch says only `fetch failed` (Node) or
 * `net::ERR_…` (Electron's net), with the reason in a `code` somewhere down the `cause` chain. This names the cause
 * (a self-signed certificate, an expired one, a refused connection…) and what to do about it.
 *
 * It has no imports, so the same file serves the client (client/src/network.ts) and the publish CLI
 * (tools/publish/network.ts), two packages installed apart; test/node/network-errors.test.ts keeps the copies equal.
 */

/** A failure explained: the platform's code (when it gave one), the words, and whether trying again can help. */
export interface NetworkFailure {
  /** The platform's code: `DEPTH_ZERO_SELF_SIGNED_CERT`, `ECONNREFUSED`, `ERR_CERT_AUTHORITY_INVALID`… */
  code: string | undefined;
  /** The cause and its fix, e.g. `self-signed certificate: pass --ca FILE or set NODE_EXTRA_CA_CERTS`. */
  message: string;
  /** Whether the same request may succeed later (a refused or reset connection); never for a certificate. */
  transient: boolean;
}

/** How the reader makes this process trust a certificate: the CLI's `--ca FILE`, the client's `trustingFetch`. */
export type TrustHint = string;

type Fix = "trust" | "clock" | "name" | "server" | "address" | "retry";

/** The known codes: the cause in words and the kind of fix. Node's (OpenSSL's and libuv's), then Electron's. */
export const NETWORK_CAUSES: Readonly<Record<string, { cause: string; fix: Fix; transient?: true }>> = {
  DEPTH_ZERO_SELF_SIGNED_CERT: { cause: "self-signed certificate", fix: "trust" },
  SELF_SIGNED_CERT_IN_CHAIN: {
    cause: "self-signed certificate in the chain (a private certificate authority)",
    fix: "trust",
  },
  UNABLE_TO_VERIFY_LEAF_SIGNATURE: {
    cause:
      "certificate signed by an authority this process does not trust (or the server leaves out its intermediate certificates)",
    fix: "trust",
  },
  UNABLE_TO_GET_ISSUER_CERT_LOCALLY: {
    cause:
      "certificate issued by an authority this process does not trust (a private authority, or a proxy that inspects TLS)",
    fix: "trust",
  },
  UNABLE_TO_GET_ISSUER_CERT: { cause: "certificate whose issuer is unknown here", fix: "trust" },
  CERT_UNTRUSTED: { cause: "untrusted certificate", fix: "trust" },
  CERT_HAS_EXPIRED: { cause: "the service's certificate has expired", fix: "clock" },
  CERT_NOT_YET_VALID: { cause: "the service's certificate is not valid yet", fix: "clock" },
  ERR_TLS_CERT_ALTNAME_INVALID: { cause: "the certificate was issued for another host name", fix: "name" },
  ERR_SSL_WRONG_VERSION_NUMBER: { cause: "the server does not speak TLS at this address", fix: "server" },
  EPROTO: { cause: "the TLS handshake failed", fix: "server" },
  // A refused connection may be a service restarting: worth another try, unlike a certificate.
  ECONNREFUSED: { cause: "connection refused: nothing listens at that address", fix: "address", transient: true },
  ENOTFOUND: { cause: "host name not found", fix: "address" },
  EAI_AGAIN: { cause: "the host name could not be looked up (DNS)", fix: "retry" },
  ECONNRESET: { cause: "the connection was reset", fix: "retry" },
  ETIMEDOUT: { cause: "the connection timed out", fix: "retry" },
  UND_ERR_CONNECT_TIMEOUT: { cause: "connecting timed out", fix: "retry" },
  UND_ERR_SOCKET: { cause: "the connection closed before the answer", fix: "retry" },
  ENETUNREACH: { cause: "network unreachable", fix: "retry" },
  EHOSTUNREACH: { cause: "host unreachable", fix: "retry" },
  ERR_CERT_AUTHORITY_INVALID: { cause: "certificate signed by an authority this process does not trust", fix: "trust" },
  ERR_CERT_DATE_INVALID: { cause: "the service's certificate has expired or is not valid yet", fix: "clock" },
  ERR_CERT_COMMON_NAME_INVALID: { cause: "the certificate was issued for another host name", fix: "name" },
  ERR_CONNECTION_REFUSED: {
    cause: "connection refused: nothing listens at that address",
    fix: "address",
    transient: true,
  },
  ERR_NAME_NOT_RESOLVED: { cause: "host name not found", fix: "address" },
  ERR_INTERNET_DISCONNECTED: { cause: "this machine is offline", fix: "retry" },
  ERR_CONNECTION_RESET: { cause: "the connection was reset", fix: "retry" },
  ERR_TIMED_OUT: { cause: "the connection timed out", fix: "retry" },
};

function fixText(fix: Fix, trust: TrustHint): string {
  switch (fix) {
    case "trust":
      return trust;
    case "clock":
      return "renew the service's certificate (or correct this machine's clock)";
    case "name":
      return "use the host name the certificate names in the URL";
    case "server":
      return "check the URL's scheme and port (http:// or https://)";
    case "address":
      return "check the URL's host and port, and that the service runs there";
    case "retry":
      return "try again";
  }
}

function record(value: unknown): Record<string, unknown> | undefined {
  return typeof value === "object" && value !== null ? (value as Record<string, unknown>) : undefined;
}

/** The first known code down the error's `cause` chain (and AggregateError's `errors`), or the first code at all. */
function findCode(error: unknown): { code: string | undefined; detail: string | undefined } {
  let first: string | undefined;
  let detail: string | undefined;
  const seen = new Set<unknown>();
  const queue: unknown[] = [error];
  while (queue.length > 0 && seen.size < 16) {
    const next = queue.shift();
    const e = record(next);
    if (!e || seen.has(next)) continue;
    seen.add(next);
    const message = typeof e["message"] === "string" ? e["message"] : "";
    // Electron's net.fetch: `net::ERR_CERT_AUTHORITY_INVALID`.
    const electron = /\bnet::(ERR_[A-Z_]+)/.exec(message)?.[1];
    const code = typeof e["code"] === "string" ? e["code"] : electron;
    if (code !== undefined && NETWORK_CAUSES[code]) return { code, detail: message };
    if (code !== undefined && first === undefined) {
      first = code;
      detail = message;
    }
    if (next !== error && message && detail === undefined) detail = message;
    queue.push(e["cause"]);
    if (Array.isArray(e["errors"])) queue.push(...(e["errors"] as unknown[]));
  }
  return { code: first, detail };
}

/**
 * Explains why a request failed before any answer. `trust` tells how to make this process trust a certificate
 * (`pass --ca FILE or set NODE_EXTRA_CA_CERTS`). An unknown failure keeps the platform's words and its code.
 */
export function explainNetworkFailure(error: unknown, trust: TrustHint): NetworkFailure {
  const { code, detail } = findCode(error);
  const known = code === undefined ? undefined : NETWORK_CAUSES[code];
  if (known) {
    let cause = known.cause;
    // The host-name mismatch: Node's message names the host and the certificate's names.
    if (known.fix === "name" && detail)
      cause = `${cause} (${detail.replace(/^Hostname\/IP does not match certificate's altnames: /, "")})`;
    return {
      code,
      message: `${cause}: ${fixText(known.fix, trust)}`,
      transient: known.fix === "retry" || known.transient === true,
    };
  }
  const outer = error instanceof Error ? error.message : String(error);
  const words = detail && detail !== outer ? `${outer} (${detail})` : outer;
  return { code, message: code !== undefined && !words.includes(code) ? `${words} [${code}]` : words, transient: true };
}
