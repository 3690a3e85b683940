/**
 * What a gRPC call carries from the HTTP mount (routes/rpc/mount.ts) to the interceptors and the services: the request's
 * Hono context, and once the authentication interceptor has run, the call's service context and client.
 */
import { Code, ConnectError, type ContextValues, type HandlerContext, createContextKey } from "@connectrpc/connect";
import type { Context } from "hono";
import type { AppEnv } from "../../http/app-env";
import type { ClientInfo, ServiceContext } from "../../http/context";

/** A call as the services see it: the service context (its principal set) and who is calling. */
export interface Call {
  ctx: ServiceContext;
  client: ClientInfo;
}

/** The request's Hono context, set by the mount. */
export const requestKey = createContextKey<Context<AppEnv> | undefined>(undefined);
/** The call, set by the authentication interceptor (routes/rpc/interceptors.ts) before any service runs. */
export const callKey = createContextKey<Call | undefined>(undefined);

/** The request's Hono context. */
export function requestOf(values: ContextValues): Context<AppEnv> {
  const c = values.get(requestKey);
  if (!c) throw new ConnectError("no request context", Code.Internal);
  return c;
}

/** The call of a service method: its context and client, the credential already checked. */
export function callOf(context: HandlerContext): Call {
  const call = context.values.get(callKey);
  if (!call) throw new ConnectError("no call context", Code.Internal);
  return call;
}
