/**
 * `npm run grpc-gateway -- --upstream URL [--port 5005] [--host 127.0.0.1]`: native gRPC in front of the Worker;
 * IpFiltering__GatewaySecret in the environment signs each client's address for the Worker.
 */
import { parseArgs } from "node:util";
import { startGateway } from "./gateway.ts";

const { values } = parseArgs({
  options: {
    upstream: { type: "string", default: process.env.GATEWAY_UPSTREAM ?? "http://127.0.0.1:5000" },
    port: { type: "string", default: process.env.GATEWAY_PORT ?? "5005" },
    host: { type: "string", default: process.env.GATEWAY_HOST ?? "127.0.0.1" },
  },
});
// The Worker's IpFiltering:GatewaySecret (same variable name): without it the Worker sees every client as the gateway.
const secret = process.env.IpFiltering__GatewaySecret || undefined;
if (!secret)
  console.warn(
    "IpFiltering__GatewaySecret is not set: the Worker will count every gRPC client as the gateway's own address",
  );
const server = await startGateway({ upstream: values.upstream, port: Number(values.port), host: values.host, secret });
const address = server.address();
console.log(
  `gRPC gateway on ${typeof address === "object" && address ? `${address.address}:${address.port}` : values.port} -> ${values.upstream} (gRPC-Web)`,
);
