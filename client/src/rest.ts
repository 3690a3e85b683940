/**
 * The licensing operations over REST: `POST /v1/license/*`, `POST /v1/report` and `POST /v1/auth/login` with a user
 * key (CONTRACT section 4). Bodies are camelCase JSON; answers are read field by field into the typed results.
 */
import { ProtocolError } from "./errors.js";
import { fetchJson } from "./http.js";
import { dateFromIso } from "./timestamps.js";
import type { CredentialHeaders, FetchFunction, LicensingTransport, SignIn, WithResolvedUserKey } from "./transport.js";
import type {
  ActivateRequest,
  ActivateResult,
  DeactivateRequest,
  DeactivateResult,
  FloatingGrant,
  HeartbeatResult,
  License,
  Licensee,
  ReleaseRequest,
  ReleaseResult,
  Report,
  RequestFloatingRequest,
  SendReportResult,
  ValidateRequest,
  ValidateResult,
} from "./types.js";
import {
  type JsonObject,
  licenseStatus,
  licenseType,
  licensingMode,
  num,
  object,
  optNum,
  optStr,
  str,
  strings,
} from "./wire.js";

/** The `license` object of activate, validate and request answers. */
export function licenseFromJson(value: unknown): License {
  const o = object(value, "license");
  const licensee = o["licensee"] === undefined || o["licensee"] === null ? undefined : licenseeFromJson(o["licensee"]);
  return {
    licenseId: str(o, "licenseId", "license"),
    licensingMode: licensingMode(o["licensingMode"], "license.licensingMode"),
    licenseType: licenseType(o["licenseType"], "license.licenseType"),
    edition: optStr(o, "edition", "license"),
    issueDate: dateFromIso(o["issueDate"], "license.issueDate"),
    expireAt: dateFromIso(o["expireAt"], "license.expireAt"),
    supportExpireAt: dateFromIso(o["supportExpireAt"], "license.supportExpireAt"),
    features: strings(o, "features", "license"),
    licensee,
    licenseKey: optStr(o, "licenseKey", "license"),
  };
}

function licenseeFromJson(value: unknown): Licensee | undefined {
  const o = object(value, "license.licensee");
  const licensee: Licensee = {
    name: optStr(o, "name", "license.licensee"),
    email: optStr(o, "email", "license.licensee"),
    company: optStr(o, "company", "license.licensee"),
  };
  // An empty licensee is no licensee, as gRPC's unset message is.
  return licensee.name || licensee.email || licensee.company ? licensee : undefined;
}

function counts(o: JsonObject, what: string): { activeClientCount: number; maxClientCount: number } {
  return { activeClientCount: num(o, "activeClientCount", what), maxClientCount: num(o, "maxClientCount", what) };
}

/** Drops members whose value is `undefined`, so the body says only what the caller said. */
function compact(body: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(body).filter(([, v]) => v !== undefined));
}

/** The licensing operations over REST. */
export class RestTransport implements LicensingTransport {
  constructor(
    private readonly baseUrl: string,
    private readonly fetchFn: FetchFunction,
  ) {}

  /** POSTs a JSON body and returns the envelope of a successful answer. */
  private async post(path: string, body: Record<string, unknown>, headers: CredentialHeaders): Promise<JsonObject> {
    const answer = object(
      await fetchJson(this.fetchFn, `${this.baseUrl}${path}`, {
        method: "POST",
        headers: { ...headers, "content-type": "application/json", accept: "application/json" },
        body: JSON.stringify(compact(body)),
      }),
      path,
    );
    if (answer["success"] === false) throw new ProtocolError(`${path} answered success:false with a 2xx status`);
    return answer;
  }

  async authenticate(userKey: string): Promise<SignIn> {
    const o = await this.post("/v1/auth/login", { userKey }, {});
    return { token: str(o, "token", "login"), expiresIn: num(o, "expiresIn", "login") };
  }

  async activate(request: WithResolvedUserKey<ActivateRequest>, headers: CredentialHeaders): Promise<ActivateResult> {
    const { userKey, machineId, clientId, clientName, productCode, version, nonce } = request;
    const o = await this.post(
      "/v1/license/activate",
      { userKey, machineId, clientId, clientName, productCode, version, nonce },
      headers,
    );
    return {
      licenseToken: str(o, "licenseToken", "activate"),
      tokenExpireAt: dateFromIso(o["tokenExpireAt"], "activate.tokenExpireAt"),
      ...counts(o, "activate"),
      license: licenseFromJson(o["license"]),
    };
  }

  async deactivate(
    request: WithResolvedUserKey<DeactivateRequest>,
    headers: CredentialHeaders,
  ): Promise<DeactivateResult> {
    const { userKey, machineId, clientId, licenseToken } = request;
    const o = await this.post("/v1/license/deactivate", { userKey, machineId, clientId, licenseToken }, headers);
    return { licenseId: str(o, "licenseId", "deactivate"), ...counts(o, "deactivate") };
  }

  async validate(request: WithResolvedUserKey<ValidateRequest>, headers: CredentialHeaders): Promise<ValidateResult> {
    const { userKey, machineId, clientId, licenseToken, productCode, version, nonce } = request;
    const o = await this.post(
      "/v1/license/validate",
      { userKey, machineId, clientId, licenseToken, productCode, version, nonce },
      headers,
    );
    const serverTime = dateFromIso(o["serverTime"], "validate.serverTime");
    if (!serverTime) throw new ProtocolError("validate.serverTime is missing");
    return {
      licenseId: str(o, "licenseId", "validate"),
      status: licenseStatus(o["status"], "validate.status"),
      license: licenseFromJson(o["license"]),
      licenseToken: optStr(o, "licenseToken", "validate"),
      tokenExpireAt: dateFromIso(o["tokenExpireAt"], "validate.tokenExpireAt"),
      serverTime,
      nonce: optStr(o, "nonce", "validate"),
      // A service older than offline grace sends none: no grace.
      offlineGraceDays: optNum(o, "offlineGraceDays", "validate") ?? 0,
    };
  }

  async requestFloating(
    request: WithResolvedUserKey<RequestFloatingRequest>,
    headers: CredentialHeaders,
  ): Promise<FloatingGrant> {
    const { userKey, machineId, clientId, clientName } = request;
    const o = await this.post("/v1/license/request", { userKey, machineId, clientId, clientName }, headers);
    return {
      licenseToken: str(o, "licenseToken", "request"),
      tokenExpireAt: dateFromIso(o["tokenExpireAt"], "request.tokenExpireAt"),
      ...counts(o, "request"),
      license: licenseFromJson(o["license"]),
      heartbeatInterval: num(o, "heartbeatInterval", "request"),
    };
  }

  async heartbeat(licenseToken: string, headers: CredentialHeaders): Promise<HeartbeatResult> {
    const o = await this.post("/v1/license/heartbeat", { licenseToken }, headers);
    return {
      tokenExpireAt: dateFromIso(o["tokenExpireAt"], "heartbeat.tokenExpireAt"),
      heartbeatInterval: num(o, "heartbeatInterval", "heartbeat"),
      ...counts(o, "heartbeat"),
    };
  }

  async release(request: ReleaseRequest, headers: CredentialHeaders): Promise<ReleaseResult> {
    const { licenseToken, userKey } = request;
    const o = await this.post("/v1/license/release", { licenseToken, userKey }, headers);
    return { licenseId: str(o, "licenseId", "release"), ...counts(o, "release") };
  }

  async sendReport(report: Report, headers: CredentialHeaders): Promise<SendReportResult> {
    const { name, uid, version, date, userKey, machineId, clientId, clientName, contentType, content, properties } =
      report;
    const body = {
      name,
      uid,
      version,
      date: date?.toISOString(),
      userKey,
      machineId,
      clientId,
      clientName,
      contentType,
      content,
      properties,
    };
    const o = await this.post("/v1/report", body, headers);
    return { reportId: num(o, "reportId", "report") };
  }
}
