/** `npm run grpc-gateway -- --upstream URL [--port 5005] [--host 127.0.0.1]`: native gRPC in front of the Worker. */
import { parseArgs } from "node:util";
import { startGateway } from "./gateway.ts";

const { values } = parseArgs({
  options: {
    upstream: { type: "string", default: process.env.GATEWAY_UPSTREAM ?? "http://127.0.0.1:5000" },
    port: { type: "string", default: process.env.GATEWAY_PORT ?? "5005" },
    host: { type: "string", default: process.env.GATEWAY_HOST ?? "127.0.0.1" },
  },
});
const server = await startGateway({ upstream: values.upstream, port: Number(values.port), host: values.host });
const address = server.address();
console.log(`gRPC gateway on ${typeof address === "object" && address ? `${address.address}:${address.port}` : values.port} -> ${values.upstream} (gRPC-Web)`);
