/**
 * The client address every limit and list is applied to (DESIGN: `CF-Connecting-IP`, which Cloudflare sets, is
 * the only header believed). Two additions (issue 14):
 * - The native gRPC gateway (tools/grpc-gateway) reaches the Worker from its own address, so it passes its peer's
 *   address in GATEWAY_CLIENT_HEADER, signed with IpFiltering:GatewaySecret: `<ip>;<unix seconds>;<hex
 *   HMAC-SHA256(secret, "<ip>;<unix seconds>")>`. A valid, fresh signature makes that address the client's; any
 *   other value of the header (unsigned, forged, stale, or no secret configured) is ignored. A signed loopback
 *   address is the gateway's own host (a same-host proxy the gateway was not told to trust, or a local client), never
 *   the whitelist's 127.0.0.1: it is "unknown", or every client behind that proxy would escape every limit.
 * - A request with neither is "unknown" outside development: its own bucket, never whitelisted (the whitelist
 *   holds addresses, and "unknown" is none). Under Development it is 127.0.0.1, as `wrangler dev` would set.
 */
import { type Config, isDevelopment } from "../kernel/config";
import { parseIp } from "./ip";
import { memo } from "../kernel/memo";

export const GATEWAY_CLIENT_HEADER = "x-licensing-gateway-client";
/** The client of a request that says nothing about its address, outside development. */
export const UNKNOWN_CLIENT = "unknown";
/** How old a gateway signature may be (clock skew between gateway and Worker included). */
export const GATEWAY_SIGNATURE_SECONDS = 300;

const encoder = new TextEncoder();
const keys = memo<string, Promise<CryptoKey>>("gateway-keys", {
  key: "IpFiltering:GatewaySecret",
  max: 5,
  evict: "all",
});

function gatewayKey(secret: string): Promise<CryptoKey> {
  let key = keys.get(secret);
  if (!key) {
    key = keys.keep(
      secret,
      crypto.subtle.importKey("raw", encoder.encode(secret), { name: "HMAC", hash: "SHA-256" }, false, ["verify"]),
    );
  }
  return key;
}

function fromHex(hex: string): Uint8Array | undefined {
  if (!/^(?:[0-9a-f]{2})+$/i.test(hex)) return undefined;
  return Uint8Array.from(hex.match(/../g) ?? [], (h) => parseInt(h, 16));
}

/** The address a gateway signed, when the signature is valid and fresh; undefined otherwise. */
async function gatewayClient(secret: string, value: string, nowSeconds: number): Promise<string | undefined> {
  const [ip, at, signature] = value.split(";");
  if (!ip || !at || !signature || !/^\d{1,12}$/.test(at) || ip.length > 64) return undefined;
  if (Math.abs(nowSeconds - Number(at)) > GATEWAY_SIGNATURE_SECONDS) return undefined;
  const mac = fromHex(signature);
  if (!mac) return undefined;
  // verify() compares in constant time.
  const valid = await crypto.subtle.verify("HMAC", await gatewayKey(secret), mac, encoder.encode(`${ip};${at}`));
  return valid ? ip : undefined;
}

/** 127.0.0.0/8 or ::1 (IPv4-mapped included). */
function isLoopback(ip: string): boolean {
  const bytes = parseIp(ip);
  if (!bytes) return false;
  return bytes.length === 4 ? bytes[0] === 127 : bytes.every((b, i) => b === (i === 15 ? 1 : 0));
}

/** Whether the request carries a valid, fresh gateway signature (tools/grpc-gateway is calling). */
export async function signedByGateway(headers: Headers, config: Config, now: number): Promise<boolean> {
  const signed = headers.get(GATEWAY_CLIENT_HEADER);
  const secret = config["IpFiltering:GatewaySecret"];
  return Boolean(signed && secret && (await gatewayClient(secret, signed, Math.floor(now / 1000))));
}

/**
 * The request's client address (see the file comment); `now` in milliseconds. A promise only when a gateway's
 * signature must be checked: the front door (app/app.ts) asks it on every kept poll.
 */
export function clientAddress(headers: Headers, config: Config, now: number): string | Promise<string> {
  const signed = headers.get(GATEWAY_CLIENT_HEADER);
  const secret = config["IpFiltering:GatewaySecret"];
  if (signed && secret)
    return gatewayClient(secret, signed, Math.floor(now / 1000)).then((ip) =>
      ip ? (isLoopback(ip) ? UNKNOWN_CLIENT : ip) : unsignedAddress(headers, config),
    );
  return unsignedAddress(headers, config);
}

/** The address CF-Connecting-IP names (127.0.0.1 in development without it). */
function unsignedAddress(headers: Headers, config: Config): string {
  const cf = headers.get("cf-connecting-ip");
  if (cf) return cf;
  return isDevelopment(config) ? "127.0.0.1" : UNKNOWN_CLIENT;
}
