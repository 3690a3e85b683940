/**
 * licensing.v1.LicenseServer (CONTRACT section 4): activation, validation and floating seats, through the licensing
 * services REST calls too (routes/licensing/licensing.ts). The credential was checked by the authentication
 * interceptor (routes/rpc/interceptors.ts); errors become gRPC statuses in the errors interceptor.
 */
import type { ServiceImpl } from "@connectrpc/connect";
import { type LicenseServer, LicenseStatus } from "../../gen/licensing/v1/license_server_pb";
import { activate, deactivate } from "../../licensing/activation";
import { heartbeat, releaseSeat, requestSeat } from "../../licensing/floating";
import type { LicenseView } from "../../licensing/license-view";
import { validate } from "../../licensing/validation";
import { LICENSE_TYPES as LicenseType, LICENSING_MODES as LicensingMode } from "../../records/vocabulary";
import { callOf } from "./call";
import { opt, timestamp } from "./wire";

const name = (names: readonly string[], value: number | string) =>
  typeof value === "string" ? value : (names[value] ?? String(value));

function licenseMessage(view: LicenseView) {
  return {
    licenseId: view.licenseId,
    licensingMode: name(LicensingMode, view.licensingMode),
    licenseType: name(LicenseType, view.licenseType),
    edition: view.edition ?? "",
    issueDate: timestamp(view.issueDate),
    expireAt: timestamp(view.expireAt),
    supportExpireAt: timestamp(view.supportExpireAt),
    features: view.features,
    licensee: {
      name: view.licensee.name ?? "",
      email: view.licensee.email ?? "",
      company: view.licensee.company ?? "",
    },
    licenseKey: view.licenseKey ?? "",
  };
}

/** The answer of a call that hands out a license token: an activation or a floating seat. */
function issued(r: {
  licenseToken: string;
  tokenExpireAt?: string | undefined;
  activeClientCount: number;
  maxClientCount: number;
  license: LicenseView;
}) {
  return {
    licenseToken: r.licenseToken,
    tokenExpireAt: timestamp(r.tokenExpireAt),
    activeClientCount: r.activeClientCount,
    maxClientCount: r.maxClientCount,
    license: licenseMessage(r.license),
  };
}

const STATUS: Record<string, LicenseStatus> = {
  Activated: LicenseStatus.ACTIVATED,
  NotActivated: LicenseStatus.NOT_ACTIVATED,
  Expired: LicenseStatus.EXPIRED,
  Revoked: LicenseStatus.REVOKED,
  Tampered: LicenseStatus.TAMPERED,
};

export const licenseServer: ServiceImpl<typeof LicenseServer> = {
  async activateLicense(req, context) {
    const { ctx, client } = callOf(context);
    const r = await activate(
      ctx,
      {
        userKey: req.userKey,
        machineId: req.machineId,
        clientId: opt(req.clientId),
        clientName: opt(req.clientName),
        productCode: opt(req.productCode),
        version: opt(req.version),
        nonce: opt(req.nonce),
      },
      client,
    );
    return issued(r);
  },

  deactivateLicense(req, context) {
    const { ctx, client } = callOf(context);
    return deactivate(
      ctx,
      {
        userKey: req.userKey,
        machineId: req.machineId,
        clientId: opt(req.clientId),
        licenseToken: opt(req.licenseToken),
      },
      client,
    );
  },

  async validateLicense(req, context) {
    const { ctx, client } = callOf(context);
    const r = await validate(
      ctx,
      {
        userKey: req.userKey,
        machineId: opt(req.machineId),
        clientId: opt(req.clientId),
        licenseToken: opt(req.licenseToken),
        productCode: opt(req.productCode),
        version: opt(req.version),
        nonce: req.nonce,
      },
      client,
    );
    return {
      licenseId: r.licenseId,
      status: STATUS[r.status] ?? LicenseStatus.UNSPECIFIED,
      license: licenseMessage(r.license),
      licenseToken: r.licenseToken,
      tokenExpireAt: timestamp(r.tokenExpireAt),
      serverTime: timestamp(r.serverTime),
      nonce: r.nonce,
      offlineGraceDays: r.offlineGraceDays,
    };
  },

  async requestFloatingLicense(req, context) {
    const { ctx, client } = callOf(context);
    const r = await requestSeat(
      ctx,
      { userKey: req.userKey, machineId: req.machineId, clientId: req.clientId, clientName: opt(req.clientName) },
      client,
    );
    return { ...issued(r), heartbeatInterval: r.heartbeatInterval };
  },

  releaseFloatingLicense(req, context) {
    const { ctx, client } = callOf(context);
    return releaseSeat(ctx, { licenseToken: req.licenseToken, userKey: opt(req.userKey) }, client);
  },

  async heartbeat(req, context) {
    const { ctx } = callOf(context);
    const r = await heartbeat(ctx, { licenseToken: req.licenseToken });
    return {
      tokenExpireAt: timestamp(r.tokenExpireAt),
      heartbeatInterval: r.heartbeatInterval,
      activeClientCount: r.activeClientCount,
      maxClientCount: r.maxClientCount,
    };
  },
};
