/**
 * `@licensing/client/grpc-web`: the gRPC-Web transport, in its own entry point so applications that use REST do not
 * bundle Connect and the generated protobuf code. `new LicensingClient({ baseUrl, transport: grpcWeb })`; importing
 * this module also makes `transport: "grpc-web"` work.
 */
import { GrpcWebTransport } from "./grpc.js";
import { type WireFactory, registerTransport } from "./transport.js";

/** The gRPC-Web wire (binary gRPC-Web on the service's main endpoint). */
export const grpcWeb: WireFactory = Object.assign(
  (baseUrl: string, fetch: Parameters<WireFactory>[1]) => new GrpcWebTransport(baseUrl, fetch),
  { transportName: "grpc-web" },
);

registerTransport("grpc-web", grpcWeb);

export { GrpcWebTransport };
