/**
 * Reading the update check (`GET /v1/updates/{productCode}`) and the key set (`GET /v1/extensions/keys`). The data is
 * read only after its signature verified over the raw JSON, so these readers check shape, not authenticity.
 */
import { ProtocolError } from "./errors.js";
import { updateCheckDataRollbackReasonValues, updateCheckDataWithheldReasonValues } from "./gen/openapi.js";
import type {
  JwkSet,
  PublicJwk,
  RollbackReason,
  UpdateCheckData,
  UpdateDownload,
  UpdateMaintenance,
  UpdateRollout,
  WithheldReason,
} from "./types.js";
import { type JsonObject, num, object, optBool, optNum, optStr, str } from "./wire.js";

/** SPEC's withheldReason values, as the document's UpdateCheckData lists them (generated). */
const WITHHELD_REASONS: readonly WithheldReason[] = updateCheckDataWithheldReasonValues;
/** The rollbackReason values the document lists (generated). */
const ROLLBACK_REASONS: readonly RollbackReason[] = updateCheckDataRollbackReasonValues;

function bool(o: JsonObject, key: string, what: string): boolean {
  const v = optBool(o, key, what);
  if (v === undefined) throw new ProtocolError(`${what}.${key} is missing`);
  return v;
}

function optObject(o: JsonObject, key: string, what: string): JsonObject | undefined {
  const v = o[key];
  return v === undefined || v === null ? undefined : object(v, `${what}.${key}`);
}

function download(o: JsonObject): UpdateDownload {
  const what = "data.download";
  return {
    fileName: str(o, "fileName", what),
    kind: str(o, "kind", what),
    size: num(o, "size", what),
    sha256: str(o, "sha256", what),
    sha512: str(o, "sha512", what),
    url: str(o, "url", what),
  };
}

function maintenance(o: JsonObject): UpdateMaintenance {
  const what = "data.maintenance";
  return {
    until: optStr(o, "until", what),
    expired: optBool(o, "expired", what),
    expiresInDays: optNum(o, "expiresInDays", what),
    noticeDays: optNum(o, "noticeDays", what),
    renewalUrl: optStr(o, "renewalUrl", what),
    supportEmail: optStr(o, "supportEmail", what),
    licenseId: optStr(o, "licenseId", what),
    licensee: optStr(o, "licensee", what),
  };
}

function rollout(o: JsonObject): UpdateRollout {
  return { percentage: num(o, "percentage", "data.rollout"), admitted: bool(o, "admitted", "data.rollout") };
}

/** The typed update-check data (SPEC "Update check data"); members the service omitted stay `undefined`. */
export function updateCheckDataFromJson(value: unknown): UpdateCheckData {
  const o = object(value, "data");
  const product = object(o["product"], "data.product");
  const release = optObject(o, "release", "data");
  const withheld = optStr(o, "withheldReason", "data");
  if (withheld !== undefined && !WITHHELD_REASONS.includes(withheld as WithheldReason)) {
    throw new ProtocolError(`data.withheldReason has an unknown value: ${withheld}`);
  }
  const downloadObject = optObject(o, "download", "data");
  const maintenanceObject = optObject(o, "maintenance", "data");
  const rolloutObject = optObject(o, "rollout", "data");
  const rollbackReason = optStr(o, "rollbackReason", "data");
  return {
    format: num(o, "format", "data"),
    product: { code: str(product, "code", "data.product"), name: str(product, "name", "data.product") },
    channel: str(o, "channel", "data"),
    platform: str(o, "platform", "data"),
    current: str(o, "current", "data"),
    latest: optStr(o, "latest", "data"),
    release: release && {
      version: str(release, "version", "data.release"),
      publishedAt: str(release, "publishedAt", "data.release"),
      name: optStr(release, "name", "data.release"),
    },
    updateAvailable: bool(o, "updateAvailable", "data"),
    installable: bool(o, "installable", "data"),
    withheldReason: withheld as WithheldReason | undefined,
    purchaseUrl: optStr(o, "purchaseUrl", "data"),
    download: downloadObject && download(downloadObject),
    latestInstallable: optStr(o, "latestInstallable", "data"),
    requiredEdition: optStr(o, "requiredEdition", "data"),
    maintenance: maintenanceObject && maintenance(maintenanceObject),
    rollout: rolloutObject && rollout(rolloutObject),
    // A service without release control sends neither: nothing is required, nothing rolled back.
    required: optBool(o, "required", "data") ?? false,
    rollback: optBool(o, "rollback", "data") ?? false,
    // A reason this client does not know yet is left out, not refused: the rollback itself still applies.
    rollbackReason: ROLLBACK_REASONS.includes(rollbackReason as RollbackReason)
      ? (rollbackReason as RollbackReason)
      : undefined,
  };
}

/** A JWK Set from `GET /v1/extensions/keys`; keys of other types are kept (they are simply never matched). */
export function jwksFromJson(value: unknown): JwkSet {
  const o = object(value, "key set");
  const keys = o["keys"];
  if (!Array.isArray(keys)) throw new ProtocolError("key set.keys is not an array");
  return {
    keys: keys.map((k, i): PublicJwk => {
      const key = object(k, `keys[${i}]`);
      const jwk: PublicJwk = { kty: str(key, "kty", `keys[${i}]`) };
      // Only members the key has: JOSE libraries treat a present-but-undefined member differently from an absent one.
      for (const member of ["crv", "x", "y", "kid", "alg", "use"] as const) {
        const v = optStr(key, member, `keys[${i}]`);
        if (v !== undefined) jwk[member] = v;
      }
      return jwk;
    }),
  };
}
