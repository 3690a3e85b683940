/**
 * The gRPC services (CONTRACT section 4, proto/licensing/v1) as one connect-es router: gRPC-Web (binary) and the
 * Connect protocol, every call through the same interceptors, in this order (routes/rpc/interceptors.ts):
 *   errors -> authentication -> fieldLimits -> the service method
 * One file per service: routes/rpc/authentication.ts, routes/rpc/license-server.ts, routes/rpc/report-server.ts. The HTTP mount is
 * routes/rpc/mount.ts.
 */
import { createConnectRouter } from "@connectrpc/connect";
import type { UniversalHandler } from "@connectrpc/connect/protocol";
import { Authentication } from "../../gen/licensing/v1/authentication_pb";
import { LicenseServer } from "../../gen/licensing/v1/license_server_pb";
import { ReportServer } from "../../gen/licensing/v1/report_server_pb";
import { MAX_REPORT_BYTES } from "../../licensing/report-store";
import { anonymousMethods, authentication as authenticationService } from "./authentication";
import { authentication, errors, fieldLimits } from "./interceptors";
import { licenseServer } from "./license-server";
import { reportServer } from "./report-server";

/** Largest request message: a report's content and its other fields. */
export const MAX_MESSAGE_BYTES = MAX_REPORT_BYTES + 64 * 1024;

let handlers: Map<string, UniversalHandler> | undefined;

/** The connect handlers by path (`/licensing.v1.<Service>/<Method>`), built once per isolate (DESIGN). */
export function rpcHandlers(): Map<string, UniversalHandler> {
  if (!handlers) {
    const router = createConnectRouter({
      // Workers cannot send HTTP/2 trailers: plain gRPC is the optional Node gateway's (tools/grpc-gateway).
      grpc: false,
      grpcWeb: true,
      connect: true,
      readMaxBytes: MAX_MESSAGE_BYTES,
      interceptors: [errors, authentication(anonymousMethods), fieldLimits],
    })
      .service(Authentication, authenticationService)
      .service(LicenseServer, licenseServer)
      .service(ReportServer, reportServer);
    handlers = new Map(router.handlers.map((h) => [h.requestPath, h]));
  }
  return handlers;
}
