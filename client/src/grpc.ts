/**
 * The licensing operations over gRPC-Web (`/licensing.v1.<Service>/<Method>` on the main endpoint, binary format),
 * with the generated messages of `gen/`. Answers are mapped to the same typed results as REST: Timestamps become
 * `Date`s, the status enum its name, protobuf defaults (`""`, unset messages) `undefined`.
 */
import { type Client, createClient } from "@connectrpc/connect";
import { createGrpcWebTransport } from "@connectrpc/connect-web";
import { ProtocolError, errorFromGrpc, networkError } from "./errors.js";
import { Authentication } from "./gen/licensing/v1/authentication_pb.js";
import {
  type License as PbLicense,
  LicenseServer,
  LicenseStatus as PbLicenseStatus,
} from "./gen/licensing/v1/license_server_pb.js";
import { ReportServer } from "./gen/licensing/v1/report_server_pb.js";
import { dateFromTimestamp, timestampFromDateValue } from "./timestamps.js";
import type { CredentialHeaders, FetchFunction, LicensingTransport, SignIn, WithResolvedUserKey } from "./transport.js";
import type {
  ActivateRequest,
  ActivateResult,
  DeactivateRequest,
  DeactivateResult,
  FloatingGrant,
  HeartbeatResult,
  License,
  LicenseStatus,
  ReleaseRequest,
  ReleaseResult,
  Report,
  RequestFloatingRequest,
  SendReportResult,
  ValidateRequest,
  ValidateResult,
} from "./types.js";
import { licenseType, licensingMode } from "./wire.js";

/** proto3 writes an unset string as `""`; results say `undefined`. */
function opt(value: string | undefined): string | undefined {
  return value === undefined || value === "" ? undefined : value;
}

/** The name of a `LicenseStatus` enum value. */
export function statusFromProto(status: PbLicenseStatus): LicenseStatus {
  switch (status) {
    case PbLicenseStatus.ACTIVATED:
      return "Activated";
    case PbLicenseStatus.NOT_ACTIVATED:
      return "NotActivated";
    case PbLicenseStatus.EXPIRED:
      return "Expired";
    case PbLicenseStatus.REVOKED:
      return "Revoked";
    case PbLicenseStatus.TAMPERED:
      return "Tampered";
    default:
      throw new ProtocolError(`ValidateLicenseResponse.status has no known value: ${String(status)}`);
  }
}

/** The typed license of a `License` message. */
export function licenseFromProto(license: PbLicense | undefined): License {
  if (!license) throw new ProtocolError("The answer has no license");
  if (!license.licenseId) throw new ProtocolError("License.license_id is empty");
  const licensee = license.licensee
    ? { name: opt(license.licensee.name), email: opt(license.licensee.email), company: opt(license.licensee.company) }
    : undefined;
  return {
    licenseId: license.licenseId,
    licensingMode: licensingMode(license.licensingMode, "License.licensing_mode"),
    licenseType: licenseType(license.licenseType, "License.license_type"),
    edition: opt(license.edition),
    issueDate: dateFromTimestamp(license.issueDate),
    expireAt: dateFromTimestamp(license.expireAt),
    supportExpireAt: dateFromTimestamp(license.supportExpireAt),
    features: [...license.features],
    licensee: licensee && (licensee.name || licensee.email || licensee.company) ? licensee : undefined,
    licenseKey: opt(license.licenseKey),
  };
}

/** The licensing operations over gRPC-Web. */
export class GrpcWebTransport implements LicensingTransport {
  private readonly auth: Client<typeof Authentication>;
  private readonly licenses: Client<typeof LicenseServer>;
  private readonly reports: Client<typeof ReportServer>;

  constructor(baseUrl: string, fetchFn: FetchFunction) {
    // Connect wraps whatever fetch throws in a ConnectError; throwing our NetworkError here lets errorFromGrpc hand
    // the caller the same error REST gives for an unreachable service.
    const guardedFetch: FetchFunction = async (input, init) => {
      // Connect asks for `redirect: "error"`, which Cloudflare Workers refuse; "manual" fails a redirect just the same
      // (Connect turns the 3xx, or a browser's opaque redirect, into an error) and works on every platform.
      const portableInit: RequestInit | undefined = init?.redirect === "error" ? { ...init, redirect: "manual" } : init;
      try {
        return await fetchFn(input, portableInit);
      } catch (error) {
        if (init?.signal?.aborted) throw error;
        throw networkError(baseUrl, error);
      }
    };
    const transport = createGrpcWebTransport({ baseUrl, fetch: guardedFetch, useBinaryFormat: true });
    this.auth = createClient(Authentication, transport);
    this.licenses = createClient(LicenseServer, transport);
    this.reports = createClient(ReportServer, transport);
  }

  /** Runs one call and turns its failure into the client's error. */
  private async call<T>(run: () => Promise<T>): Promise<T> {
    try {
      return await run();
    } catch (error) {
      throw errorFromGrpc(error);
    }
  }

  async authenticate(userKey: string): Promise<SignIn> {
    const answer = await this.call(() => this.auth.authenticate({ userKey }));
    if (!answer.token) throw new ProtocolError("AuthenticateResponse.token is empty");
    return { token: answer.token, expiresIn: answer.expiresIn };
  }

  async activate(request: WithResolvedUserKey<ActivateRequest>, headers: CredentialHeaders): Promise<ActivateResult> {
    const { userKey, machineId, clientId, clientName, productCode, version, nonce } = request;
    const answer = await this.call(() =>
      this.licenses.activateLicense(
        { userKey, machineId, clientId, clientName, productCode, version, nonce },
        { headers },
      ),
    );
    return {
      licenseToken: answer.licenseToken,
      tokenExpireAt: dateFromTimestamp(answer.tokenExpireAt),
      activeClientCount: answer.activeClientCount,
      maxClientCount: answer.maxClientCount,
      license: licenseFromProto(answer.license),
    };
  }

  async deactivate(
    request: WithResolvedUserKey<DeactivateRequest>,
    headers: CredentialHeaders,
  ): Promise<DeactivateResult> {
    const { userKey, machineId, clientId, licenseToken } = request;
    const answer = await this.call(() =>
      this.licenses.deactivateLicense({ userKey, machineId, clientId, licenseToken }, { headers }),
    );
    return {
      licenseId: answer.licenseId,
      activeClientCount: answer.activeClientCount,
      maxClientCount: answer.maxClientCount,
    };
  }

  async validate(request: WithResolvedUserKey<ValidateRequest>, headers: CredentialHeaders): Promise<ValidateResult> {
    const { userKey, machineId, clientId, licenseToken, productCode, version, nonce } = request;
    const answer = await this.call(() =>
      this.licenses.validateLicense(
        { userKey, machineId, clientId, licenseToken, productCode, version, nonce },
        { headers },
      ),
    );
    const serverTime = dateFromTimestamp(answer.serverTime);
    if (!serverTime) throw new ProtocolError("ValidateLicenseResponse.server_time is not set");
    return {
      licenseId: answer.licenseId,
      status: statusFromProto(answer.status),
      license: licenseFromProto(answer.license),
      licenseToken: opt(answer.licenseToken),
      tokenExpireAt: dateFromTimestamp(answer.tokenExpireAt),
      serverTime,
      nonce: opt(answer.nonce),
      offlineGraceDays: answer.offlineGraceDays,
    };
  }

  async requestFloating(
    request: WithResolvedUserKey<RequestFloatingRequest>,
    headers: CredentialHeaders,
  ): Promise<FloatingGrant> {
    const { userKey, machineId, clientId, clientName } = request;
    const answer = await this.call(() =>
      this.licenses.requestFloatingLicense({ userKey, machineId, clientId, clientName }, { headers }),
    );
    return {
      licenseToken: answer.licenseToken,
      tokenExpireAt: dateFromTimestamp(answer.tokenExpireAt),
      activeClientCount: answer.activeClientCount,
      maxClientCount: answer.maxClientCount,
      license: licenseFromProto(answer.license),
      heartbeatInterval: answer.heartbeatInterval,
    };
  }

  async heartbeat(licenseToken: string, headers: CredentialHeaders): Promise<HeartbeatResult> {
    const answer = await this.call(() => this.licenses.heartbeat({ licenseToken }, { headers }));
    return {
      tokenExpireAt: dateFromTimestamp(answer.tokenExpireAt),
      heartbeatInterval: answer.heartbeatInterval,
      activeClientCount: answer.activeClientCount,
      maxClientCount: answer.maxClientCount,
    };
  }

  async release(request: ReleaseRequest, headers: CredentialHeaders): Promise<ReleaseResult> {
    const { licenseToken, userKey } = request;
    const answer = await this.call(() => this.licenses.releaseFloatingLicense({ licenseToken, userKey }, { headers }));
    return {
      licenseId: answer.licenseId,
      activeClientCount: answer.activeClientCount,
      maxClientCount: answer.maxClientCount,
    };
  }

  async sendReport(report: Report, headers: CredentialHeaders): Promise<SendReportResult> {
    const { name, uid, version, date, userKey, machineId, clientId, clientName, contentType, content, properties } =
      report;
    const answer = await this.call(() =>
      this.reports.sendReport(
        {
          name,
          uid,
          version,
          date: timestampFromDateValue(date),
          userKey,
          machineId,
          clientId,
          clientName,
          contentType,
          content,
          properties: (properties ?? []).map(({ name, value }) => ({ name, value })),
        },
        { headers },
      ),
    );
    return { reportId: answer.reportId };
  }
}
