/**
 * What the client needs from a wire: the licensing operations of CONTRACT section 4 and the user-key sign-in. REST
 * (`rest.ts`) and gRPC-Web (`grpc.ts`) implement it and return the same typed results, so everything above this
 * interface (credentials, floating seats, errors) is written once.
 */
import type {
  ActivateRequest,
  ActivateResult,
  DeactivateRequest,
  DeactivateResult,
  FloatingGrant,
  HeartbeatResult,
  ReleaseRequest,
  ReleaseResult,
  Report,
  RequestFloatingRequest,
  SendReportResult,
  ValidateRequest,
  ValidateResult,
} from "./types.js";
import type { Answer } from "./wire-types.js";

/** The `fetch` the client calls: the platform's, or one the application supplies (proxies, tests, Electron's net). */
export type FetchFunction = typeof globalThis.fetch;

/** Request headers carrying the credential (`x-api-key` or `authorization`); gRPC-Web sends them as metadata. */
export type CredentialHeaders = Record<string, string>;

/** A bearer token from signing in with a user key (`POST /v1/auth/login`); `expiresIn` is its lifetime in seconds. */
export interface SignIn extends Answer<"login"> {}

/** A request whose user key the client has filled in. */
export type WithResolvedUserKey<T> = T & { userKey: string };

/** One wire's implementation of the licensing operations. Every method throws the errors of `kernel/errors.ts`. */
export interface LicensingTransport {
  authenticate(userKey: string): Promise<SignIn>;
  activate(request: WithResolvedUserKey<ActivateRequest>, headers: CredentialHeaders): Promise<ActivateResult>;
  deactivate(request: WithResolvedUserKey<DeactivateRequest>, headers: CredentialHeaders): Promise<DeactivateResult>;
  validate(request: WithResolvedUserKey<ValidateRequest>, headers: CredentialHeaders): Promise<ValidateResult>;
  requestFloating(
    request: WithResolvedUserKey<RequestFloatingRequest>,
    headers: CredentialHeaders,
  ): Promise<FloatingGrant>;
  heartbeat(licenseToken: string, headers: CredentialHeaders): Promise<HeartbeatResult>;
  release(request: ReleaseRequest, headers: CredentialHeaders): Promise<ReleaseResult>;
  sendReport(report: Report, headers: CredentialHeaders): Promise<SendReportResult>;
}

/** Makes a wire for a service address and a fetch: how a transport plugs into the client. */
export type WireFactory = ((baseUrl: string, fetch: FetchFunction) => LicensingTransport) & {
  readonly transportName?: string;
};

// Wires registered by their entry points (`@licensing/client/grpc-web`), so the main entry does not load them.
const registered = new Map<string, WireFactory>();

/** Makes a named transport (`transport: "grpc-web"`) available; its entry point calls this when loaded. */
export function registerTransport(name: string, factory: WireFactory): void {
  registered.set(name, factory);
}

/** The factory registered under a name, if its entry point was loaded. */
export function registeredTransport(name: string): WireFactory | undefined {
  return registered.get(name);
}
