/**
 * `npm run grpc-gateway -- --upstream URL [options]`: native gRPC in front of the Worker (gateway.ts). Each option
 * may come from the environment instead (in brackets):
 *   --upstream URL           the Worker's origin, e.g. https://licensing.example.com (GATEWAY_UPSTREAM)
 *   --port N, --host ADDR    where to listen; 5005 on 127.0.0.1 by default (GATEWAY_PORT, GATEWAY_HOST)
 *   --tls-cert FILE, --tls-key FILE
 *                            PEM certificate (chain) and key: serve TLS; without both, plain HTTP/2 (h2c), said
 *                            aloud at start (GATEWAY_TLS_CERT, GATEWAY_TLS_KEY)
 *   --trusted-proxy LIST     addresses or CIDR ranges of proxies in front of the gateway, whose X-Forwarded-For is
 *                            believed; repeatable or comma-separated; none by default (GATEWAY_TRUSTED_PROXIES)
 *   --max-streams N          concurrent calls per connection (32) (GATEWAY_MAX_STREAMS)
 *   --max-calls N            calls in progress in the whole gateway (64) (GATEWAY_MAX_CALLS)
 *   --call-timeout SECONDS   longest call, upload included (30) (GATEWAY_CALL_TIMEOUT)
 *   --allow-insecure-upstream
 *                            accept a plain-HTTP upstream off this machine (GATEWAY_ALLOW_INSECURE_UPSTREAM=1); refused
 *                            by default, since every credential would cross the network in clear
 * IpFiltering__GatewaySecret (the Worker's IpFiltering:GatewaySecret) is required: it signs each client's address,
 * and it is how the Worker knows the gateway's calls (which pass even with Application:EnableGrpcWeb off).
 */
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import {
  DEFAULT_CALL_TIMEOUT_MS,
  DEFAULT_MAX_CALLS,
  DEFAULT_MAX_STREAMS,
  type GatewayOptions,
  startGateway,
} from "./gateway.ts";

function fail(message: string): never {
  console.error(`grpc-gateway: ${message}`);
  process.exit(2);
}

function positive(name: string, value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) fail(`--${name} must be a whole number above 0, not "${value}"`);
  return n;
}

function port(value: string): number {
  const n = Number(value);
  if (!/^\d+$/.test(value) || n > 65535) fail(`--port must be a port number (0 to 65535), not "${value}"`);
  return n;
}

const env = process.env;
let values: Record<string, string | string[] | boolean | undefined>;
try {
  ({ values } = parseArgs({
    options: {
      upstream: { type: "string", default: env.GATEWAY_UPSTREAM ?? "http://127.0.0.1:5000" },
      port: { type: "string", default: env.GATEWAY_PORT ?? "5005" },
      host: { type: "string", default: env.GATEWAY_HOST ?? "127.0.0.1" },
      "tls-cert": { type: "string", default: env.GATEWAY_TLS_CERT },
      "tls-key": { type: "string", default: env.GATEWAY_TLS_KEY },
      "trusted-proxy": {
        type: "string",
        multiple: true,
        default: env.GATEWAY_TRUSTED_PROXIES ? [env.GATEWAY_TRUSTED_PROXIES] : [],
      },
      "max-streams": { type: "string", default: env.GATEWAY_MAX_STREAMS ?? String(DEFAULT_MAX_STREAMS) },
      "max-calls": { type: "string", default: env.GATEWAY_MAX_CALLS ?? String(DEFAULT_MAX_CALLS) },
      "call-timeout": { type: "string", default: env.GATEWAY_CALL_TIMEOUT ?? String(DEFAULT_CALL_TIMEOUT_MS / 1000) },
      "allow-insecure-upstream": { type: "boolean", default: env.GATEWAY_ALLOW_INSECURE_UPSTREAM === "1" },
    },
  }));
} catch (e) {
  fail((e as Error).message);
}
const text = (name: string) => values[name] as string | undefined;

const secret = env.IpFiltering__GatewaySecret || undefined;
if (!secret)
  fail(
    "IpFiltering__GatewaySecret is not set: give it the Worker's IpFiltering:GatewaySecret, so the Worker limits each client by its own address and knows the gateway's calls",
  );
const certFile = text("tls-cert");
const keyFile = text("tls-key");
if (Boolean(certFile) !== Boolean(keyFile)) fail("--tls-cert and --tls-key go together: give both or neither");
let tls: GatewayOptions["tls"];
try {
  tls = certFile && keyFile ? { cert: readFileSync(certFile), key: readFileSync(keyFile) } : undefined;
} catch (e) {
  fail(`cannot read the TLS certificate or key: ${(e as Error).message}`);
}

const upstream = text("upstream")!;
let server: Awaited<ReturnType<typeof startGateway>>;
try {
  server = await startGateway({
    upstream,
    port: port(text("port")!),
    host: text("host"),
    secret,
    tls,
    trustedProxies: values["trusted-proxy"] as string[],
    maxStreams: positive("max-streams", text("max-streams")!),
    maxCalls: positive("max-calls", text("max-calls")!),
    callTimeoutMs: positive("call-timeout", text("call-timeout")!) * 1000,
    allowInsecureUpstream: values["allow-insecure-upstream"] === true,
  });
} catch (e) {
  fail((e as Error).message);
}
const address = server.address();
const where = typeof address === "object" && address ? `${address.address}:${address.port}` : text("port");
console.log(`gRPC gateway on ${tls ? "https" : "http"}://${where} -> ${upstream} (gRPC-Web)`);
if (!tls)
  console.warn(
    "grpc-gateway: WITHOUT TLS (plain HTTP/2): tokens, API keys and passwords cross the network in clear. Give --tls-cert and --tls-key, or keep it on loopback behind a TLS proxy named in --trusted-proxy.",
  );
const proxies = (values["trusted-proxy"] as string[]).join(",");
if (proxies) console.log(`grpc-gateway: believes X-Forwarded-For from ${proxies}`);
