/**
 * `LicensingClient`: what a protected application embeds to activate, validate, hold floating seats, send reports and
 * check for signed updates, over REST or gRPC-Web (CONTRACT sections 4, 5 and 7). Credentials are handled here once for
 * both transports: an API key or bearer token is sent as given; a user key alone is exchanged for a bearer token that
 * is reused and renewed before it expires.
 */
import { AuthenticationError, ProtocolError } from "./errors.js";
import { fetchJson } from "./http.js";
import { RestTransport } from "./rest.js";
import { FloatingSeat, type SeatOptions, checkSeatOptions } from "./seat.js";
import {
  type CredentialHeaders,
  type FetchFunction,
  type LicensingTransport,
  type WireFactory,
  registeredTransport,
} from "./transport.js";
import { dateFromIso } from "./timestamps.js";
import type {
  ActivateRequest,
  ActivateResult,
  BorrowRequest,
  BorrowResult,
  CheckoutRequest,
  DeactivateRequest,
  DeactivateResult,
  HeartbeatResult,
  JwkSet,
  LicenseFileAnswer,
  LicenseKeyPayload,
  ReleaseRequest,
  ReleaseResult,
  Report,
  ReturnRequest,
  ReturnResult,
  RequestFloatingRequest,
  SendReportResult,
  UpdateCheckRequest,
  ValidateRequest,
  ValidateResult,
  VerifiedUpdateCheck,
} from "./types.js";
import { jwksFromJson, updateCheckDataFromJson } from "./updates.js";
import {
  type OfflineVerificationOptions,
  findSigningKey,
  verifyDataSignature,
  verifyLicenseOffline,
} from "./verify.js";
import { type JsonObject, num, object, optBool, str } from "./wire.js";

/** How a {@link LicensingClient} reaches the service. */
export interface LicensingClientOptions {
  /** The service's address, e.g. `https://licensing.example.com` (REST routes and gRPC-Web methods hang off it). */
  baseUrl: string;
  /**
   * `http` (REST, the default) or gRPC-Web (binary gRPC-Web on the same endpoint): results and errors are the same.
   * gRPC-Web lives in its own entry point so REST users do not bundle it: pass `grpcWeb` from
   * `@licensing/client/grpc-web` (or the name `"grpc-web"` once that entry point is imported).
   */
  transport?: "http" | "grpc-web" | WireFactory;
  /** An API key, sent in `apiKeyHeader`. Takes precedence over the other credentials. */
  apiKey?: string;
  /** The header the service reads API keys from (`Application:ApiKeyHeaderName`, default `x-api-key`). */
  apiKeyHeader?: string;
  /** A bearer token obtained elsewhere; sent as is and never renewed. */
  bearerToken?: string;
  /**
   * The license's user key: the default `userKey` of every call, and, when neither `apiKey` nor `bearerToken` is given,
   * the credential: the client signs in with it (`POST /v1/auth/login` `{userKey}` or `Authentication/Authenticate`).
   */
  userKey?: string;
  /** The `fetch` to use (default: the platform's). Supply one for proxies, Electron's `net.fetch` or tests. */
  fetch?: FetchFunction;
  /**
   * Keys to verify update checks with, instead of fetching `GET /v1/extensions/keys` from the same service. Pinning
   * them in the application means a compromised or impersonated server cannot sign its own answers.
   */
  trustedKeys?: JwkSet;
  /**
   * This installation's random id (keep one per install: `installId(directory)` from `@licensing/client/node`), sent
   * as `X-Service-Install-Id` on validations and (the default `installId`) update checks: release rollouts admit by
   * it, and a release's adoption counts the install once by it.
   */
  installId?: string;
}

/** A signed-in session: the bearer token from the user key and when to renew it. */
interface Session {
  token: string;
  renewAt: number;
}

/** The licensing service, as a protected application sees it. */
export class LicensingClient {
  /** The transport in use: `http`, `grpc-web`, or the name of a custom one. */
  readonly transport: string;
  /** The service's address without a trailing slash. */
  readonly baseUrl: string;

  private readonly wire: LicensingTransport;
  private readonly fetchFn: FetchFunction;
  private readonly apiKey: string | undefined;
  private readonly apiKeyHeader: string;
  private readonly bearerToken: string | undefined;
  private readonly userKey: string | undefined;
  private readonly trustedKeys: JwkSet | undefined;
  private readonly installId: string | undefined;
  private session: Session | undefined;
  private signingIn: Promise<string> | undefined;
  private keys: Promise<JwkSet> | undefined;

  constructor(options: LicensingClientOptions) {
    // Fail at construction on a typo rather than at the first licensing call in the field.
    const url = new URL(options.baseUrl);
    this.baseUrl = url.href.replace(/\/+$/, "");
    const chosen = options.transport ?? "http";
    const factory: WireFactory | undefined =
      typeof chosen === "function"
        ? chosen
        : chosen === "http"
          ? (base, f) => new RestTransport(base, f)
          : registeredTransport(String(chosen));
    if (!factory) {
      throw new TypeError(
        chosen === "grpc-web"
          ? 'gRPC-Web has its own entry point: import { grpcWeb } from "@licensing/client/grpc-web" and pass transport: grpcWeb'
          : `Unknown transport: ${String(chosen)}`,
      );
    }
    this.transport = typeof chosen === "function" ? (chosen.transportName ?? "custom") : chosen;
    const given = options.fetch;
    // Called through a closure: browsers refuse a detached `fetch` ("Illegal invocation"), and a fetch polyfilled after
    // construction is still picked up.
    this.fetchFn = given ?? ((input, init) => globalThis.fetch(input, init));
    this.apiKey = options.apiKey;
    this.apiKeyHeader = options.apiKeyHeader ?? "x-api-key";
    this.bearerToken = options.bearerToken;
    this.userKey = options.userKey;
    this.trustedKeys = options.trustedKeys;
    this.installId = options.installId;
    this.wire = factory(this.baseUrl, this.fetchFn);
  }

  /** The user key of a call: the one given, else the client's. */
  private resolveUserKey(given: string | undefined): string {
    const userKey = given ?? this.userKey;
    if (!userKey) throw new TypeError("A user key is required: pass userKey to the call or to the LicensingClient");
    return userKey;
  }

  /** The bearer token from the user key, signing in when there is none or it is about to expire. */
  private sessionToken(renew: boolean): Promise<string> {
    const userKey = this.userKey;
    if (userKey === undefined) throw new TypeError("No user key to sign in with");
    if (!renew && this.session && Date.now() < this.session.renewAt) return Promise.resolve(this.session.token);
    // Concurrent calls share one sign-in instead of each spending a login (and a rate-limit slot).
    this.signingIn ??= this.wire
      .authenticate(userKey)
      .then(({ token, expiresIn }) => {
        const lifetime = Math.max(0, expiresIn) * 1000;
        // Renew a tenth of the lifetime early (at most a minute) so no request carries a token that expires in flight.
        this.session = { token, renewAt: Date.now() + lifetime - Math.min(60_000, lifetime / 10) };
        return token;
      })
      .finally(() => {
        this.signingIn = undefined;
      });
    return this.signingIn;
  }

  /** The credential headers, and whether they came from the user key (and so can be renewed). */
  private async credentials(): Promise<{ headers: CredentialHeaders; renewable: boolean }> {
    if (this.apiKey !== undefined) return { headers: { [this.apiKeyHeader]: this.apiKey }, renewable: false };
    if (this.bearerToken !== undefined)
      return { headers: { authorization: `Bearer ${this.bearerToken}` }, renewable: false };
    if (this.userKey !== undefined)
      return { headers: { authorization: `Bearer ${await this.sessionToken(false)}` }, renewable: true };
    // No credential: the service answers 401, which becomes an AuthenticationError like any refused credential.
    return { headers: {}, renewable: false };
  }

  /** Runs a call with credentials; a session token the service refuses (expired early, logged out) is renewed once. */
  private async authorized<T>(run: (headers: CredentialHeaders) => Promise<T>): Promise<T> {
    const { headers, renewable } = await this.credentials();
    try {
      return await run(headers);
    } catch (error) {
      if (!renewable || !(error instanceof AuthenticationError)) throw error;
      this.session = undefined;
      return run({ authorization: `Bearer ${await this.sessionToken(true)}` });
    }
  }

  /**
   * Activates the license on a machine (`POST /v1/license/activate`). Idempotent per (license, machine, client): a
   * repeat returns the same token, refreshed. Over the activation limit: {@link LicensingError} 6 (HTTP 526).
   */
  async activate(request: ActivateRequest): Promise<ActivateResult> {
    const userKey = this.resolveUserKey(request.userKey);
    return this.authorized((headers) => this.wire.activate({ ...request, userKey }, headers));
  }

  /** Frees the machine's activation (`POST /v1/license/deactivate`). */
  async deactivate(request: DeactivateRequest): Promise<DeactivateResult> {
    const userKey = this.resolveUserKey(request.userKey);
    return this.authorized((headers) => this.wire.deactivate({ ...request, userKey }, headers));
  }

  /**
   * Validates the license online (`POST /v1/license/validate`). Answers only for a usable license; revoked, expired or
   * tampered licenses throw their {@link LicensingError}.
   */
  async validate(request: ValidateRequest = {}): Promise<ValidateResult> {
    const userKey = this.resolveUserKey(request.userKey);
    // The install id (REST header, gRPC-Web metadata): the service counts this install as running `version` by it.
    const install: CredentialHeaders = this.installId ? { "x-service-install-id": this.installId } : {};
    return this.authorized((headers) => this.wire.validate({ ...request, userKey }, { ...headers, ...install }));
  }

  /**
   * Requests a floating seat (`POST /v1/license/request`) and returns it as a {@link FloatingSeat} that sends
   * heartbeats every `heartbeatInterval` seconds until `seat.release()` (or {@link LicensingClient.release}). All seats
   * taken: {@link LicensingError} 8 (HTTP 528). Heartbeat failures go to `options.onError`.
   */
  async requestFloating(request: RequestFloatingRequest, options: SeatOptions = {}): Promise<FloatingSeat> {
    checkSeatOptions(options);
    const userKey = this.resolveUserKey(request.userKey);
    const grant = await this.authorized((headers) => this.wire.requestFloating({ ...request, userKey }, headers));
    return new FloatingSeat(
      grant,
      {
        heartbeat: (licenseToken) => this.heartbeat(licenseToken),
        release: (licenseToken) => this.releaseToken({ licenseToken, userKey }),
      },
      options,
    );
  }

  /** One heartbeat for a floating seat's token (`POST /v1/license/heartbeat`); seats from `requestFloating` beat on their own. */
  async heartbeat(licenseToken: string): Promise<HeartbeatResult> {
    return this.authorized((headers) => this.wire.heartbeat(licenseToken, headers));
  }

  private async releaseToken(request: ReleaseRequest): Promise<ReleaseResult> {
    return this.authorized((headers) => this.wire.release(request, headers));
  }

  /**
   * Gives a floating seat back (`POST /v1/license/release`): a {@link FloatingSeat} (its heartbeats stop), or the token
   * of a seat this process no longer holds a handle for (e.g. saved before a crash). An unknown token throws
   * {@link LicensingError} 5 (HTTP 525).
   */
  async release(seat: FloatingSeat | string | ReleaseRequest): Promise<ReleaseResult> {
    if (seat instanceof FloatingSeat) return seat.release();
    const request = typeof seat === "string" ? { licenseToken: seat } : seat;
    const userKey = request.userKey ?? this.userKey;
    return this.releaseToken(
      userKey === undefined ? { licenseToken: request.licenseToken } : { licenseToken: request.licenseToken, userKey },
    );
  }

  /** Sends an exception, license or custom report (`POST /v1/report`); `userKey` defaults to the client's. */
  async sendReport(report: Report): Promise<SendReportResult> {
    const userKey = report.userKey ?? this.userKey;
    return this.authorized((headers) =>
      this.wire.sendReport(userKey === undefined ? report : { ...report, userKey }, headers),
    );
  }

  /** A REST-only licensing call (both transports): the user key added, credentials as for every call. */
  private async restCall(path: string, body: Record<string, unknown>): Promise<JsonObject> {
    const sent = JSON.stringify(Object.fromEntries(Object.entries(body).filter(([, v]) => v !== undefined)));
    return this.authorized(async (headers) =>
      object(
        await fetchJson(this.fetchFn, `${this.baseUrl}${path}`, {
          method: "POST",
          headers: { ...headers, "content-type": "application/json", accept: "application/json" },
          body: sent,
        }),
        path,
      ),
    );
  }

  /**
   * Checks out a license file for a machine (`POST /v1/license/checkout`, REST on either transport), to run offline
   * until its `expiresAt`: File mode always, Activation mode for an activated machine, Floating for a seat's holder.
   * Save `licenseFile` and check it with {@link verifyLicenseFile}; `encrypt: true` seals it for this machine.
   */
  async checkout(request: CheckoutRequest): Promise<LicenseFileAnswer> {
    const userKey = this.resolveUserKey(request.userKey);
    const o = await this.restCall("/v1/license/checkout", { ...request, userKey });
    return fileAnswer(o, "checkout");
  }

  /**
   * Borrows a floating seat for `hours` (`POST /v1/license/borrow`): it stays held with no heartbeats until then, and
   * the answer carries a license file that ends with it. All seats taken: {@link LicensingError} 8 (HTTP 528).
   */
  async borrow(request: BorrowRequest): Promise<BorrowResult> {
    const userKey = this.resolveUserKey(request.userKey);
    const o = await this.restCall("/v1/license/borrow", { ...request, userKey });
    const borrowUntil = dateFromIso(o["borrowUntil"], "borrow.borrowUntil");
    if (!borrowUntil) throw new ProtocolError("borrow.borrowUntil is missing");
    return {
      ...fileAnswer(o, "borrow"),
      licenseToken: str(o, "licenseToken", "borrow"),
      borrowUntil,
      activeClientCount: num(o, "activeClientCount", "borrow"),
      maxClientCount: num(o, "maxClientCount", "borrow"),
    };
  }

  /** Returns a borrowed seat early (`POST /v1/license/return`), by its token or by the machine and client. */
  async returnSeat(request: ReturnRequest): Promise<ReturnResult> {
    const userKey = this.resolveUserKey(request.userKey);
    const o = await this.restCall("/v1/license/return", { ...request, userKey });
    return {
      licenseId: str(o, "licenseId", "return"),
      activeClientCount: num(o, "activeClientCount", "return"),
      maxClientCount: num(o, "maxClientCount", "return"),
    };
  }

  /**
   * The JWK Set of the service's signing keys (`GET /v1/extensions/keys`), cached by the client; `refresh` fetches it
   * again. Store it with the application to verify license keys offline.
   */
  getSigningKeys(refresh = false): Promise<JwkSet> {
    if (refresh || !this.keys) {
      const keys = fetchJson(this.fetchFn, `${this.baseUrl}/v1/extensions/keys`, {
        method: "GET",
        headers: { accept: "application/json" },
      }).then(jwksFromJson);
      // A failed fetch is not cached: the next call tries again.
      keys.catch(() => {
        if (this.keys === keys) this.keys = undefined;
      });
      this.keys = keys;
    }
    return this.keys;
  }

  /**
   * Checks for an update (`GET /v1/updates/{productCode}`, REST on either transport: it has no gRPC method) and
   * verifies the answer's signature before returning it: ES256 over the RFC 8785 canonical JSON of `data`, by the key
   * `keyId` of {@link LicensingClientOptions.trustedKeys} or of `GET /v1/extensions/keys` (fetched again once when the
   * key is unknown, for a rotation). A signature that does not verify throws {@link VerificationError}; the service's
   * refusals (400, 403 `License revoked or expired`, 404) throw {@link ServiceError}.
   */
  async checkForUpdate(request: UpdateCheckRequest): Promise<VerifiedUpdateCheck> {
    const query = new URLSearchParams({ platform: request.platform, version: request.version });
    if (request.channel !== undefined) query.set("channel", request.channel);
    const userKey = request.userKey ?? this.userKey;
    const headers: Record<string, string> = { accept: "application/json" };
    // The header rather than the query parameter: SPEC prefers it because it keeps the key out of access logs.
    if (userKey !== undefined) headers["x-service-user-key"] = userKey;
    const installId = request.installId ?? this.installId;
    if (installId !== undefined) headers["x-service-install-id"] = installId;
    const url = `${this.baseUrl}/v1/updates/${encodeURIComponent(request.productCode)}?${query}`;
    const answer = object(await fetchJson(this.fetchFn, url, { method: "GET", headers }), "update check");
    if (answer["data"] === undefined) throw new ProtocolError("The update check has no data");
    const signature = str(answer, "signature", "update check");
    const keyId = str(answer, "keyId", "update check");
    await this.verifySigned(answer["data"], signature, keyId);
    return { data: updateCheckDataFromJson(answer["data"]), signature, keyId };
  }

  private async verifySigned(data: unknown, signature: string, keyId: string): Promise<void> {
    if (this.trustedKeys) return verifyDataSignature(data, signature, keyId, this.trustedKeys);
    let keys = await this.getSigningKeys();
    if (!findSigningKey(keys, keyId)) keys = await this.getSigningKeys(true);
    return verifyDataSignature(data, signature, keyId, keys);
  }

  /**
   * Verifies a license key offline (no call to the service): see the standalone {@link verifyLicenseOffline}. `jwks`
   * is the key set the application stored (from {@link LicensingClient.getSigningKeys} or shipped with it).
   */
  verifyLicenseOffline(
    licenseKey: string,
    jwks: JwkSet,
    options?: OfflineVerificationOptions,
  ): Promise<LicenseKeyPayload> {
    return verifyLicenseOffline(licenseKey, jwks, options);
  }
}

/** The license file members of a checkout or borrow answer. */
function fileAnswer(o: JsonObject, what: string): LicenseFileAnswer {
  const issuedAt = dateFromIso(o["issuedAt"], `${what}.issuedAt`);
  const expiresAt = dateFromIso(o["expiresAt"], `${what}.expiresAt`);
  if (!issuedAt || !expiresAt) throw new ProtocolError(`${what}.issuedAt or expiresAt is missing`);
  return {
    licenseFile: str(o, "licenseFile", what),
    issuedAt,
    expiresAt,
    encrypted: optBool(o, "encrypted", what) ?? false,
  };
}
